//! Three real `handoff serve` processes on one PostgreSQL database (issue
//! 12, items 4 and 5; its Proof): the jobs only one may do are held by one
//! daemon at a time and move when it dies; a write through one daemon wakes
//! a long poll held by another (LISTEN/NOTIFY); 64 deciders spread over the
//! three make exactly one decision and one execution per action.

mod common;

use std::path::Path;
use std::time::Duration;

use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use common::postgres::PgDb;
use common::wait_for;
use serde_json::{Value, json};

const ME: i64 = 111;

/// Three daemons on `pg`, chat against `fake`, open on loopback.
fn three(dir: &Path, pg: &PgDb, fake: &FakeTelegram) -> Vec<Daemon> {
    let cfg = write_config(
        dir,
        &fake.url,
        &[("me", ME, &[ME], &[ME])],
        "\n[http]\nopen = true\n",
    );
    let env = [("HANDOFF_LEASE_MS", "1500")];
    (0..3)
        .map(|_| Daemon::start_with(Path::new(&pg.url), &cfg, &env))
        .collect()
}

async fn health(addr: &str) -> Value {
    reqwest::get(format!("http://{addr}/healthz"))
        .await
        .expect("healthz answers")
        .json()
        .await
        .expect("healthz JSON")
}

/// Which of `addrs` holds `role`, once exactly one does.
async fn holder_of(addrs: &[String], role: &'static str) -> usize {
    wait_for(30, role, || async move {
        let mut holding = Vec::new();
        for (i, a) in addrs.iter().enumerate() {
            if health(a).await["roles"]
                .as_array()
                .is_some_and(|r| r.iter().any(|x| x == role))
            {
                holding.push(i);
            }
        }
        assert!(holding.len() < 2, "two daemons hold {role}: {holding:?}");
        holding.first().copied()
    })
    .await
}

async fn call(
    http: &reqwest::Client,
    addr: &str,
    method: &str,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let req = match method {
        "GET" => http.get(format!("http://{addr}{path}")),
        _ => http.post(format!("http://{addr}{path}")).json(&body),
    };
    let res = req.send().await.expect("daemon answers");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn three_daemons_share_one_database_and_each_job_runs_once() {
    let pg = PgDb::new().await;
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut daemons = three(dir.path(), &pg, &fake);
    let addrs: Vec<String> = daemons.iter().map(|d| d.addr.clone()).collect();
    let poller = holder_of(&addrs, "telegram.poll").await;
    let sender = holder_of(&addrs, "chat.send").await;
    let http = reqwest::Client::new();

    // A question flagged through daemon 0, long-polled on daemon 1,
    // answered through daemon 2.
    let (st, v) = call(
        &http,
        &addrs[0],
        "POST",
        "/v1/questions",
        json!({"project": "p", "title": "Ship v2?", "options": [{"label": "yes"}, {"label": "no"}]}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let id = v["question"]["id"].as_str().expect("id").to_string();
    let poll = {
        let (http, addr, id) = (http.clone(), addrs[1].clone(), id.clone());
        tokio::spawn(async move {
            call(
                &http,
                &addr,
                "GET",
                &format!("/v1/questions/{id}?wait=reply&timeout=60s"),
                Value::Null,
            )
            .await
        })
    };
    // Pushed once, by the one sender.
    let msg = fake
        .until(30, "the question in chat", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Ship v2?"))
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (st, v) = call(
        &http,
        &addrs[2],
        "POST",
        &format!("/v1/questions/{id}/reply"),
        json!({"text": "yes, after lunch", "by": "alice"}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let (st, v) = poll.await.unwrap();
    assert!((200..300).contains(&st), "{st}: {v}");
    assert_eq!(v["question"]["reply"]["text"], "yes, after lunch", "{v}");
    fake.until(30, "the message to show the answer", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.contains("after lunch"))
            .map(|_| ())
    })
    .await;
    assert_eq!(
        fake.messages(ME)
            .iter()
            .filter(|m| m.text.contains("Ship v2?"))
            .count(),
        1,
        "pushed once"
    );

    // 64 deciders over the three daemons: one decision; three executors:
    // one claim.
    let (st, v) = call(
        &http,
        &addrs[0],
        "POST",
        "/v1/actions",
        json!({"kind": "deploy", "summary": "v2 to prod"}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let action = v["action"]["id"].as_str().expect("action id").to_string();
    let approvals = futures_util::future::join_all((0..64).map(|i| {
        let (http, addr, action) = (http.clone(), addrs[i % 3].clone(), action.clone());
        async move {
            call(
                &http,
                &addr,
                "POST",
                &format!("/v1/actions/{action}/approve"),
                json!({"by": format!("approver{i}")}),
            )
            .await
        }
    }))
    .await;
    let outcomes: Vec<(u16, String)> = approvals
        .iter()
        .map(|(st, v)| (*st, v["outcome"].as_str().unwrap_or("?").to_string()))
        .collect();
    let won = outcomes.iter().filter(|(_, o)| o == "approved").count();
    assert_eq!(won, 1, "one decision: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|(st, o)| *st == 200 && (o == "approved" || o == "already_decided")),
        "{outcomes:?}"
    );
    let claims = futures_util::future::join_all(addrs.iter().map(|addr| {
        let (http, addr, action) = (http.clone(), addr.clone(), action.clone());
        async move {
            call(
                &http,
                &addr,
                "POST",
                &format!("/v1/actions/{action}/claim"),
                json!({"owner": "runner", "lease": "60s"}),
            )
            .await
        }
    }))
    .await;
    let statuses: Vec<u16> = claims.iter().map(|(st, _)| *st).collect();
    assert_eq!(
        statuses.iter().filter(|st| **st == 200).count(),
        1,
        "one execution: {statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|st| **st == 409).count(),
        2,
        "{statuses:?}"
    );
    let (_, audit) = call(
        &http,
        &addrs[1],
        "GET",
        &format!("/v1/actions/{action}/audit"),
        Value::Null,
    )
    .await;
    let text = audit.to_string();
    assert_eq!(text.matches("\"approved\"").count(), 1, "{text}");

    // The daemons holding the roles die: the others take them over and
    // answer taps; the survivors never poll at once.
    daemons[poller].kill9();
    if sender != poller {
        daemons[sender].kill9();
    }
    let left: Vec<String> = (0..3)
        .filter(|i| *i != poller && *i != sender)
        .map(|i| addrs[i].clone())
        .collect();
    holder_of(&left, "telegram.poll").await;
    holder_of(&left, "chat.send").await;
    let (st, v) = call(
        &http,
        &left[0],
        "POST",
        "/v1/questions",
        json!({"project": "p", "title": "Roll back?", "options": [{"label": "yes"}, {"label": "no"}]}),
    )
    .await;
    assert!((200..300).contains(&st), "{st}: {v}");
    let msg = fake
        .until(30, "the second question in chat", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Roll back?"))
        })
        .await;
    let (cb, _) = fake.tap_traced(ME, ME, msg.message_id, &msg.button("no"));
    fake.until(30, "the tap answered", |f| {
        f.answers_to(&cb).first().cloned()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fake.answers_to(&cb).len(), 1, "the tap applied once");
    assert_eq!(fake.conflicts(), 0, "two daemons polled at once");
}

#[tokio::test]
async fn the_cli_works_on_a_postgres_database() {
    let pg = PgDb::new().await;
    let db = Path::new(&pg.url);
    let run = |args: &[&str]| {
        let out = common::cli_at(db, args);
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
        out
    };
    // The first token, before any daemon (a non-loopback daemon needs one).
    let out = run(&[
        "--json", "token", "create", "--name", "ops", "--role", "admin",
    ]);
    assert!(common::json(&out).to_string().contains("hnd_"));
    let out = run(&[
        "--json",
        "ask",
        "Which region?",
        "--option",
        "eu",
        "--option",
        "us",
    ]);
    let id = common::json(&out)["question"]["id"]
        .as_str()
        .expect("question id")
        .to_string();
    run(&["reply", &id, "eu", "--by", "alice"]);
    let out = run(&["--json", "pending"]);
    let text = common::json(&out).to_string();
    assert!(text.contains("\"eu\"") && text.contains("alice"), "{text}");
    // The password never shows, even in an error.
    let at = pg.url.split_once('@').expect("a user in the URL").1;
    let secret = format!("postgres://nobody:hunter2@{at}");
    let out = common::cli_at(Path::new(&secret), &["pending"]);
    let err = common::stderr(&out);
    assert!(!out.status.success() && err.contains("nobody"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

/// A `handoff propose` waiting for its decision with no daemon (the CLI on
/// the server itself) listens for commits instead of only polling: while
/// it waits the server shows its LISTEN session, and an approval made by
/// another process ends the wait with the approved action.
#[tokio::test]
async fn a_cli_wait_on_postgres_listens_for_other_processes_commits() {
    let pg = PgDb::new().await;
    let store = handoff::store::Store::open_postgres(
        &pg.url,
        std::sync::Arc::new(handoff::clock::SystemClock),
    )
    .await
    .expect("open the store");
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "ship it",
        ])
        .args(["--wait", "--timeout", "60s"])
        .env("HANDOFF_DB", &pg.url)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn handoff propose");
    let id = wait_for(30, "the proposal", || {
        let store = store.clone();
        async move {
            let pending = store
                .list_actions(Some(handoff::store::actions::Status::Pending))
                .await
                .expect("list actions");
            pending.first().map(|a| a.id.clone())
        }
    })
    .await;
    let pool = sqlx::PgPool::connect(&pg.url)
        .await
        .expect("a pool of the test's");
    wait_for(30, "the CLI's LISTEN session", || {
        let c = pool.clone();
        async move {
            let listening: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%handoff_events%'",
            )
            .fetch_one(&c)
            .await
            .expect("read pg_stat_activity");
            (listening > 0).then_some(())
        }
    })
    .await;
    let actor = handoff::store::actions::Actor {
        name: "carol",
        channel: handoff::store::Channel::Inbox,
    };
    store.approve(&id, actor, None).await.expect("approve");
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("propose returned after the approval")
        .expect("propose ran");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("propose prints JSON");
    assert_eq!(v["action"]["status"], "approved", "{v}");
}
