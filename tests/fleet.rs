//! The fleet view outside the browser: `GET /v1/fleet` on both engines
//! (each session's state through asking, answering, proposing and ending;
//! its host, wake target kind and last delivery; no secret shown; an agent
//! token sees its own project only), `/sessions` in chat against the fake
//! Bot API (and `handoff sessions` through the daemon beside it), and
//! `handoff sessions --watch` as a process redrawing after an event and
//! ending cleanly on Ctrl-C.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::engine::Db;
use common::fake_telegram::FakeTelegram;
use handoff::store::deliveries::NewDelivery;
use handoff::store::sessions::WakeTarget;
use handoff::store::tokens::Role;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// `method uri` as `token` on `app`: status and JSON body.
async fn call(
    app: &axum::Router,
    method: &str,
    uri: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"));
    let req = match body {
        Some(b) => req
            .header("content-type", "application/json")
            .body(Body::from(b.to_string())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The session `id` in a fleet answer.
fn session<'a>(fleet: &'a Value, id: &str) -> &'a Value {
    fleet["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .unwrap_or_else(|| panic!("no session {id} in {fleet}"))
}

async fn fleet_route_follows_each_session_and_scopes_by_token(db: Db) {
    let store = db.open().await;
    let shared = handoff::shared::Shared::new(
        store.clone(),
        handoff::config::Config::default(),
        tokio_util::sync::CancellationToken::new(),
    );
    let app = handoff::api::router(shared);
    let admin = store
        .token_create("root", Role::Admin, None)
        .await
        .unwrap()
        .secret;
    let human = store
        .token_create("alice", Role::Human, None)
        .await
        .unwrap()
        .secret;
    let agent = store
        .token_create("web-agent", Role::Agent, Some("web"))
        .await
        .unwrap()
        .secret;
    let secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    let webhook = WakeTarget::Webhook {
        url: "https://agents.example.com/wake".into(),
        secret: secret.into(),
    };
    for (id, project, host, wake) in [
        ("s-web", "web", "box-1", Some(&webhook)),
        ("s-api", "api", "box-2", None),
    ] {
        let (st, v) = call(
            &app,
            "POST",
            "/v1/sessions",
            &admin,
            Some(
                json!({"session_id": id, "agent": "claude", "project": project,
                        "host": host, "wake_target": wake}),
            ),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["host"], host, "{v}");
    }
    let (st, f) = call(&app, "GET", "/v1/fleet", &admin, None).await;
    assert_eq!(st, StatusCode::OK, "{f}");
    let order: Vec<&str> = f["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["project"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["api", "web"], "grouped by project");
    let web = session(&f, "s-web");
    assert_eq!(web["state"], "working", "{web}");
    assert_eq!(web["host"], "box-1");
    assert_eq!(web["wake"], "webhook");
    assert_eq!(web["last_delivery"], Value::Null);
    assert!(
        !f.to_string().contains(secret),
        "a webhook secret leaked: {f}"
    );

    // Asked: waiting on the question, since it was asked.
    let (st, q) = call(
        &app,
        "POST",
        "/v1/questions",
        &agent,
        Some(json!({"title": "Which region?", "session": "s-web"})),
    )
    .await;
    assert!(st.is_success(), "{st} {q}");
    let qid = q["question"]["id"].as_str().unwrap().to_string();
    let (_, f) = call(&app, "GET", "/v1/fleet", &admin, None).await;
    let web = session(&f, "s-web");
    assert_eq!(web["state"], "waiting_question", "{web}");
    assert_eq!(web["since"], q["question"]["created_at"]);
    assert_eq!(web["pending"][0]["kind"], "question");
    assert_eq!(web["pending"][0]["id"], qid.as_str());
    assert_eq!(web["pending"][0]["title"], "Which region?");

    // Proposed: the other session waits on an approval.
    let (st, a) = call(
        &app,
        "POST",
        "/v1/actions",
        &admin,
        Some(
            json!({"kind": "deploy", "summary": "Deploy api", "args": {},
                    "project": "api", "session": "s-api"}),
        ),
    )
    .await;
    assert!(st.is_success(), "{st} {a}");
    let (_, f) = call(&app, "GET", "/v1/fleet", &admin, None).await;
    let api = session(&f, "s-api");
    assert_eq!(api["state"], "waiting_approval", "{api}");
    assert_eq!(api["pending"][0]["kind"], "action");
    assert_eq!(api["pending"][0]["title"], "Deploy api");

    // Answered: working again; the wake's delivery failing once shows.
    let (st, v) = call(
        &app,
        "POST",
        &format!("/v1/questions/{qid}/reply"),
        &human,
        Some(json!({"text": "eu-west"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let seq = store.last_event_seq().await.unwrap();
    let target = NewDelivery {
        target_key: "webhook:test".into(),
        origin: "session".into(),
        target: webhook.clone(),
        lease_ms: 30_000,
    };
    assert_eq!(
        store.enqueue_deliveries(seq, &[target], 0).await.unwrap(),
        1
    );
    let claimed = store.claim_deliveries(-1).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let later = store.now() + 60_000;
    assert!(
        store
            .delivery_retry(&claimed[0], later, "connection refused")
            .await
            .unwrap()
    );
    let (_, f) = call(&app, "GET", "/v1/fleet", &admin, None).await;
    let web = session(&f, "s-web");
    assert_eq!(web["state"], "working", "{web}");
    assert_eq!(web["pending"], json!([]));
    assert_eq!(web["last_delivery"]["status"], "pending", "{web}");
    assert_eq!(web["last_delivery"]["attempts"], 1);
    assert_eq!(web["last_delivery"]["last_error"], "connection refused");

    // Ended: ended, whatever it still waits on.
    let (st, v) = call(
        &app,
        "POST",
        "/v1/sessions/s-api/end",
        &admin,
        Some(json!({})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let (_, f) = call(&app, "GET", "/v1/fleet", &admin, None).await;
    assert_eq!(session(&f, "s-api")["state"], "ended");

    // An agent token sees its own project only, and may not ask for another.
    let (st, mine) = call(&app, "GET", "/v1/fleet", &agent, None).await;
    assert_eq!(st, StatusCode::OK, "{mine}");
    let ids: Vec<&str> = mine["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["s-web"], "{mine}");
    let (st, v) = call(&app, "GET", "/v1/fleet?project=api", &agent, None).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
    let (st, v) = call(&app, "GET", "/v1/fleet?project=api", &admin, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["sessions"].as_array().unwrap().len(), 1, "{v}");
    store.close().await;
}

both_engines!(fleet_route_follows_each_session_and_scopes_by_token);

const ME: i64 = 111;

/// `/sessions` in a chat: the sessions of the projects routed to it, with
/// their state and the #code of what they wait on; none of another
/// chat's projects.
#[tokio::test]
async fn chat_sessions_lists_this_chats_sessions() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("me", ME, &[ME], &[]), ("other", 222, &[222], &[])],
        "\n[[route]]\nproject = \"ops\"\nchat = \"other\"\n",
    );
    let _d = Daemon::start(&db.path, &cfg);
    for (id, project) in [("s-shop", "shop"), ("s-ops", "ops")] {
        let out = db.cli(&[
            "session",
            "register",
            "--session",
            id,
            "--agent",
            "codex",
            "--project",
            project,
        ]);
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["--json", "ask", "Refund order 7?", "--project", "shop"])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_SESSION", "s-shop")
        .env_remove("HANDOFF_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let q = common::json(&out);
    let short = q["question"]["short_id"].as_str().unwrap();
    fake.send_text(ME, ME, "/sessions", None);
    let text = fake
        .until(30, "the /sessions answer", |f| {
            f.sent_texts(ME)
                .into_iter()
                .find(|t| t.contains("Sessions ("))
        })
        .await;
    assert!(text.contains("s-shop"), "{text}");
    assert!(text.contains("waiting on a question"), "{text}");
    assert!(
        text.contains(&format!("#{short} Refund order 7?")),
        "{text}"
    );
    assert!(!text.contains("s-ops"), "another chat's session: {text}");

    // The CLI beside a running daemon reads the same view through it
    // (`GET /v1/fleet` on its socket), with the host the CLI registered.
    let v = common::json(&db.cli(&["--json", "sessions", "--project", "shop"]));
    let list = v["sessions"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{v}");
    assert_eq!(list[0]["state"], "waiting_question", "{v}");
    assert_eq!(list[0]["pending"][0]["short_id"], short, "{v}");
    assert!(!list[0]["host"].as_str().unwrap().is_empty(), "{v}");
}

/// Read lines from `r` until one satisfies `pred`, for at most `secs`.
fn read_until(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    secs: u64,
    what: &str,
    seen: &mut Vec<String>,
    pred: impl Fn(&str) -> bool,
) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        match lines.next() {
            Some(Ok(l)) => {
                let hit = pred(&l);
                seen.push(l);
                if hit {
                    return;
                }
            }
            _ => break,
        }
    }
    panic!("{what}: not printed; got:\n{}", seen.join("\n"));
}

/// `handoff sessions --watch` as a process: a first frame, a new frame
/// after an event (the session now waiting), and exit 0 on Ctrl-C.
#[test]
fn sessions_watch_redraws_after_an_event_and_stops_on_ctrl_c() {
    let db = TempDb::new();
    let out = db.cli(&[
        "session",
        "register",
        "--session",
        "s-watch",
        "--agent",
        "claude",
        "--project",
        "web",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let mut watch = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["sessions", "--watch"])
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut lines = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(30)).ok());
    let mut seen = Vec::new();
    read_until(&mut lines, 30, "the first frame", &mut seen, |l| {
        l.contains("s-watch working")
    });
    let frames = |seen: &[String]| {
        seen.iter()
            .filter(|l| l.starts_with("handoff sessions"))
            .count()
    };
    assert_eq!(frames(&seen), 1, "{seen:?}");

    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["ask", "Keep the old API?", "--project", "web"])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_SESSION", "s-watch")
        .env_remove("HANDOFF_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    read_until(
        &mut lines,
        30,
        "a redraw after the question",
        &mut seen,
        |l| l.contains("Keep the old API?"),
    );
    assert_eq!(frames(&seen), 2, "one redraw: {seen:?}");
    assert!(
        seen.iter()
            .any(|l| l.contains("s-watch waiting on a question")),
        "{seen:?}"
    );

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(watch.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = watch.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "still running after Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0), "Ctrl-C ends the watch cleanly");
}
