//! Wake-ups. `run`: from a chat answer committed (`Store::reply_chat`
//! returned) to the session's exec wake target starting, through the real
//! notify worker (event-log follower → durable delivery → claim → spawn) on
//! a real SQLite file. The target is `/bin/sh -c 'date +%s%N > FILE'`, so
//! the figure includes starting `sh` and `date`. Answers go one at a time,
//! and the writer nudges the worker after committing (an in-process writer:
//! the API, the Inbox, the chat bridge). A write by another process, which
//! the daemon sees through the database files, is timed against a real
//! `handoff serve` in `daemon.rs`.
//!
//! `wait_no_daemon`: from a chat answer committed to a real `handoff wait
//! --session …` process returning, with no daemon (it polls the store every
//! 200 ms).

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use handoff::config::Config;
use handoff::store::Store;
use handoff::store::questions::{NewQuestion, NewReply};
use handoff::store::sessions::{NewSession, WakeTarget};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::{Table, ms, pct};

pub(crate) fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as i128
}

pub async fn run(quick: bool, t: &mut Table) {
    let n = if quick { 20 } else { 500 };
    let mut lat = row(n).await;
    lat.sort_by(f64::total_cmp);
    t.row(
        "wake",
        format!("answer committed → exec wake target started, nudged: written inside the daemon ({n} answers), p50 / p99"),
        format!("{:.1} / {:.1} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}

pub async fn wait_no_daemon(quick: bool, t: &mut Table) {
    let n = if quick { 10 } else { 100 };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("handoff.db");
    let store = Store::open(&db).await.expect("open store");
    let sorted = wait_rounds(&store, &db.display().to_string(), n).await;
    t.row(
        "wake",
        format!("answer committed → `handoff wait` returned, no daemon (200 ms store polling, {n} rounds), p50 / p99"),
        format!("{:.0} / {:.0} ms", pct(&sorted, 0.5), pct(&sorted, 0.99)),
    );
    // On PostgreSQL the waiting command listens for commits itself.
    let pg = crate::postgres::PgDb::new().await;
    let clock = std::sync::Arc::new(handoff::clock::SystemClock);
    let store = Store::open_postgres(&pg.url, clock)
        .await
        .expect("open the PostgreSQL store");
    let sorted = wait_rounds(&store, &pg.url, n).await;
    t.row(
        "wake",
        format!("answer committed → `handoff wait` returned, no daemon, on PostgreSQL (the command LISTENs; local server on a Unix socket, {n} rounds), p50 / p99"),
        format!("{:.1} / {:.1} ms", pct(&sorted, 0.5), pct(&sorted, 0.99)),
    );
}

/// `n` rounds of: a question under a fresh session, `handoff wait` on it
/// (`HANDOFF_DB=db`), an answer committed once it waits; the time from
/// the commit to the command's exit, sorted, in ms.
async fn wait_rounds(store: &Store, db: &str, n: usize) -> Vec<f64> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let session = format!("bench-{i}");
        let q = store
            .flag(&NewQuestion {
                project: "bench".into(),
                session: session.clone(),
                title: format!("question {i}"),
                ..NewQuestion::default()
            })
            .await
            .expect("flag")
            .question;
        let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
            .args(["wait", "--session", &session, "--timeout", "60s"])
            .env("HANDOFF_DB", db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn handoff wait");
        // Let it open the store and enter its poll loop; vary the phase so
        // the answer lands at every point of the poll interval.
        tokio::time::sleep(Duration::from_millis(300 + (i as u64 * 37) % 200)).await;
        store
            .reply_chat(
                &q.id,
                &NewReply {
                    text: "yes".into(),
                    by: "bench".into(),
                    ..NewReply::default()
                },
            )
            .await
            .expect("reply")
            .expect("chat reply accepted");
        let committed = Instant::now();
        let status = tokio::task::spawn_blocking(move || child.wait().expect("wait"))
            .await
            .unwrap();
        samples.push(committed.elapsed());
        assert!(status.success(), "handoff wait failed: {status}");
    }
    samples.sort();
    samples.iter().map(|d| ms(*d)).collect()
}

async fn row(n: usize) -> Vec<f64> {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("bench.db"))
        .await
        .expect("open store");
    let out = dir.path().join("woken");
    std::fs::create_dir(&out).expect("out dir");
    let script = format!("date +%s%N > {}/$HANDOFF_EVENT_ID", out.display());
    store
        .register_session(&NewSession {
            session_id: "bench".into(),
            agent: "bench".into(),
            project: "bench".into(),
            cwd: "/tmp".into(),
            wake_target: Some(WakeTarget::Exec {
                argv: vec!["/bin/sh".into(), "-c".into(), script],
                timeout_secs: Some(10),
            }),
        })
        .await
        .expect("register");
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let f = store
            .flag(&NewQuestion {
                project: "bench".into(),
                agent: "bench".into(),
                session: "bench".into(),
                title: format!("question {i}"),
                ..Default::default()
            })
            .await
            .expect("flag");
        ids.push(f.question.id);
    }
    let config = Arc::new(Config::default());
    let nudge = Arc::new(Notify::new());
    let tracker = TaskTracker::new();
    let cancel = CancellationToken::new();
    handoff::notify::spawn(
        store.clone(),
        config.clone(),
        handoff::notify::Options::from_config(&config),
        nudge.clone(),
        &tracker,
        cancel.clone(),
    )
    .await
    .expect("spawn worker");

    let mut lat = Vec::with_capacity(n);
    for id in &ids {
        let reply = NewReply {
            text: "yes".into(),
            by: "bench".into(),
            ..Default::default()
        };
        store
            .reply_chat(id, &reply)
            .await
            .expect("reply")
            .expect("accepted");
        let committed = now_ns();
        nudge.notify_waiters();
        let seq = store.last_event_seq().await.expect("seq");
        let file = out.join(format!("evt_{seq}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        let started: i128 = loop {
            if let Ok(t) = std::fs::read_to_string(&file)
                && let Ok(ns) = t.trim().parse::<i128>()
            {
                break ns;
            }
            assert!(Instant::now() < deadline, "no wake-up for evt_{seq}");
            tokio::time::sleep(Duration::from_micros(500)).await;
        };
        lat.push((started - committed) as f64 / 1e6);
    }
    cancel.cancel();
    tracker.close();
    tracker.wait().await;
    store.close().await;
    lat
}
