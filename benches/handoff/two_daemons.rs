//! Approve → wake across two daemons (part of the `wake` section):
//! two real `handoff serve` processes on one database, an agent's long poll
//! (`GET /v1/actions/{id}?wait=approved`) held on daemon B, the approval
//! sent to daemon A (`POST /v1/actions/{id}/approve`, a `human` token). The
//! clock runs from sending the approval to B's long poll answering: A's
//! request and commit, B learning of the commit (on PostgreSQL LISTEN/NOTIFY,
//! on an SQLite file the file watcher), B's read, its answer.
//!
//! Run on PostgreSQL (a throw-away local server on a Unix socket, as the
//! tests start theirs: `fsync` off) and, in the same run, on one SQLite file
//! shared by the two daemons, for comparison. The actions are proposed by
//! this process on its own store handle before the daemons start (untimed).

use std::ffi::OsString;
use std::sync::Arc;
use std::time::{Duration, Instant};

use handoff::store::Store;
use handoff::store::actions::NewAction;
use handoff::store::tokens::Role;
use serde_json::{Value, json};

use crate::daemon::Serve;
use crate::{Table, ms, pct};

/// A long poll held on B this long before the approval goes to A, so the
/// sample is a wake-up, not B's first read finding the action decided.
const SETTLE: Duration = Duration::from_millis(60);

pub async fn approve_to_wake(quick: bool, t: &mut Table) {
    let n = if quick { 20 } else { 200 };
    let pg = crate::postgres::PgDb::new().await;
    let store = Store::open_postgres(&pg.url, Arc::new(handoff::clock::SystemClock))
        .await
        .expect("open the PostgreSQL store");
    let lat = run(&store, OsString::from(&pg.url), n).await;
    t.row(
        "wake",
        format!("approve sent to daemon A → agent's long poll on daemon B answered, two `handoff serve` on one database ({n} actions), p50 / p99 — PostgreSQL (local, Unix socket)"),
        format!("{:.1} / {:.1} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("two.db");
    let store = Store::open(&file).await.expect("open the SQLite store");
    let lat = run(&store, file.into_os_string(), n).await;
    t.row(
        "wake",
        format!("approve sent to daemon A → agent's long poll on daemon B answered, two `handoff serve` on one SQLite file ({n} actions), p50 / p99"),
        format!("{:.1} / {:.1} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}

/// `n` samples (ms, ascending) on the database `store` opened, which the
/// daemons reach through `db` (a file path or a `postgres://` URL).
async fn run(store: &Store, db: OsString, n: usize) -> Vec<f64> {
    let agent = store
        .token_create("bench-agent", Role::Agent, None)
        .await
        .expect("agent token")
        .secret;
    let human = store
        .token_create("bench-human", Role::Human, None)
        .await
        .expect("human token")
        .secret;
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let new = NewAction {
            kind: "bench".into(),
            summary: format!("deploy {i}"),
            args: format!(r#"{{"i":{i}}}"#),
            proposer: "bench-agent".into(),
            approvals_required: 1,
            ..Default::default()
        };
        ids.push(store.propose(&new).await.expect("propose").action.id);
    }
    store.close().await;

    let cfg_dir = tempfile::tempdir().expect("temp dir");
    let cfg = cfg_dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").expect("write config");
    let a = Serve::start_on(&db, &cfg);
    let b = Serve::start_on(&db, &cfg);
    let http = reqwest::Client::new();
    let mut lat = Vec::with_capacity(n);
    for (i, id) in ids.iter().enumerate() {
        let poll = {
            let req = http
                .get(format!(
                    "http://{}/v1/actions/{id}?wait=approved&timeout=60s",
                    b.addr
                ))
                .bearer_auth(&agent);
            tokio::spawn(async move {
                let res = req.send().await.expect("daemon B answers");
                let answered = Instant::now();
                let status = res.status().as_u16();
                let body: Value = res.json().await.unwrap_or(Value::Null);
                (answered, status, body)
            })
        };
        // Vary the phase, so approvals land at every point of any poll cycle.
        tokio::time::sleep(SETTLE + Duration::from_millis((i as u64 * 7) % 31)).await;
        let sent = Instant::now();
        let res = http
            .post(format!("http://{}/v1/actions/{id}/approve", a.addr))
            .bearer_auth(&human)
            .json(&json!({"by": "bench-human"}))
            .send()
            .await
            .expect("daemon A answers");
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 200, "approve through daemon A: {body}");
        assert_eq!(body["outcome"], "approved", "{body}");
        let (answered, status, body) = tokio::time::timeout(Duration::from_secs(30), poll)
            .await
            .unwrap_or_else(|_| panic!("daemon B's long poll for {id} never answered"))
            .expect("long poll task");
        assert_eq!(status, 200, "long poll on daemon B: {body}");
        assert_eq!(body["outcome"], "done", "{body}");
        assert_eq!(body["action"]["status"], "approved", "{body}");
        lat.push(ms(answered - sent));
    }
    lat.sort_by(f64::total_cmp);
    lat
}
