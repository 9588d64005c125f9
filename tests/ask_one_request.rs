//! `handoff ask --wait` against a running daemon is one HTTP request end to
//! end when the reply comes within the poll: the daemon flags, waits and
//! marks the reply picked up in that request. A counting proxy on loopback
//! between the real CLI and the real daemon sees every request the CLI
//! makes. At least once still holds: the reply picked up that way is
//! delivered again by `pending` until the agent resolves the question.

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use common::daemon::Daemon;
use common::{TempDb, json, stderr, wait_for};
use handoff::store::questions::{NewReply, ReplyKind};

/// What the proxy saw: `METHOD /path?query`, one line per request.
type Seen = Arc<Mutex<Vec<String>>>;

#[derive(Clone)]
struct Proxy {
    to: String,
    seen: Seen,
    http: reqwest::Client,
}

/// Forward one request to the daemon as it came, and its answer back.
async fn forward(
    State(p): State<Proxy>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, Bytes) {
    let path = uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_string();
    p.seen.lock().unwrap().push(format!("{method} {path}"));
    let mut req = p.http.request(method, format!("http://{}{path}", p.to));
    for (k, v) in &headers {
        if k != "host" && k != "content-length" {
            req = req.header(k, v);
        }
    }
    let resp = req.body(body).send().await.expect("the daemon answers");
    let status = resp.status();
    let mut back = HeaderMap::new();
    for (k, v) in resp.headers() {
        if k != "content-length" && k != "transfer-encoding" && k != "connection" {
            back.insert(k.clone(), v.clone());
        }
    }
    (status, back, resp.bytes().await.expect("the daemon's body"))
}

/// A counting proxy on loopback to the daemon at `to`; its address.
async fn proxy(to: &str) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let state = Proxy {
        to: to.to_string(),
        seen: seen.clone(),
        http: reqwest::Client::new(),
    };
    let app = axum::Router::new().fallback(forward).with_state(state);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (addr, seen)
}

/// `handoff --json ask … --wait` through `HANDOFF_URL=url`, in the background.
fn ask(url: &str, title: &str, timeout: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "ask",
            title,
            "--project",
            "shop",
            "--agent",
            "bot",
        ])
        .args(["--wait", "--timeout", timeout])
        .env("HANDOFF_URL", format!("http://{url}"))
        .env_remove("HANDOFF_TOKEN")
        .env_remove("HANDOFF_DB")
        .env_remove("HANDOFF_SESSION")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn handoff ask")
}

async fn finish(child: Child) -> Output {
    tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait for handoff"))
        .await
        .unwrap()
}

fn daemon(db: &TempDb) -> Daemon {
    let cfg = db.dir.path().join("handoff.toml");
    // An open daemon on loopback: the CLI needs no token.
    std::fs::write(&cfg, "[http]\nopen = true\n").unwrap();
    Daemon::start(&db.path, &cfg)
}

#[tokio::test]
async fn ask_wait_through_a_daemon_is_one_request_and_the_reply_stays_deliverable() {
    let db = TempDb::new();
    let d = daemon(&db);
    let (url, seen) = proxy(&d.addr).await;
    let child = ask(&url, "Which database?", "60s");

    // The human replies once the question is there (straight into the
    // file: the daemon follows it, and the proxy sees only the CLI).
    let store = db.open().await;
    let id = wait_for(20, "the question", || async {
        let open = store.list_questions(&Default::default()).await.ok()?;
        open.into_iter().next().map(|q| q.id)
    })
    .await;
    let reply = NewReply {
        text: "Postgres".into(),
        kind: ReplyKind::Answer,
        context: None,
        by: "ann".into(),
        expected_revision: None,
    };
    store.reply_inbox(&id, &reply).await.unwrap().unwrap();

    let out = finish(child).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["answered"], true, "{v}");
    assert_eq!(v["question"]["reply"]["text"], "Postgres");
    assert!(v["question"]["reply"]["seen_at"].is_string(), "{v}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "one request end to end: {seen:#?}");
    assert!(
        seen[0].starts_with("POST /v1/questions?") && seen[0].contains("wait=reply"),
        "{seen:?}"
    );

    // Picked up in the daemon, in bot's name, in that same request …
    let q = store.get_question(&id).await.unwrap().unwrap();
    assert!(!q.has_unseen_reply(), "the reply is marked picked up");
    // … and delivered again until the agent resolves the question.
    let again = store
        .pending(Some("shop"), None, true, "bot")
        .await
        .unwrap();
    assert_eq!(again.len(), 1, "{again:?}");
    store
        .resolve_question(&id, "done", "bot")
        .await
        .unwrap()
        .unwrap();
    let after = store
        .pending(Some("shop"), None, true, "bot")
        .await
        .unwrap();
    assert!(after.is_empty(), "{after:?}");
}

#[tokio::test]
async fn ask_wait_that_times_out_within_the_poll_is_one_request_too() {
    let db = TempDb::new();
    let d = daemon(&db);
    let (url, seen) = proxy(&d.addr).await;
    let out = finish(ask(&url, "Anyone?", "500ms")).await;
    assert_eq!(out.status.code(), Some(5), "stderr: {}", stderr(&out));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let store = db.open().await;
    let open = store.list_questions(&Default::default()).await.unwrap();
    assert_eq!(open.len(), 1, "the question stays open");
}
