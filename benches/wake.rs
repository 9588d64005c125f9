//! Wake-up latency: from a chat answer committed (`Store::reply_chat`
//! returned) to the session's exec wake target starting, through the real
//! notify worker (event-log follower → durable delivery → claim → spawn) on
//! a real SQLite file, with the daemon's default tick.
//!
//! The target is `/bin/sh -c 'date +%s%N > DIR/$HANDOFF_EVENT_ID'`, so the
//! figure includes starting `sh` and `date` (about a millisecond or two).
//! Answers go one at a time (each waits for its wake-up), so this measures
//! latency, not throughput. Two rows:
//! - `polled`: nobody nudges the follower; it sees the event on its next
//!   poll (`daemon::follower::POLL`, 25 ms) — a write from another process, or from the chat
//!   bridge today, which does not nudge.
//! - `nudged`: the writer notifies the daemon's nudge after committing, as
//!   an in-process writer can.
//!
//! Run: `cargo bench --bench wake`. Smoke run: `HANDOFF_BENCH_QUICK=1`.
//! `HANDOFF_BENCH_N=<answers per row>` overrides the size (default 500).
//! This is a measurement, not a test: nothing here asserts a speed.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use handoff::config::Config;
use handoff::store::Store;
use handoff::store::questions::{NewQuestion, NewReply};
use handoff::store::sessions::{NewSession, WakeTarget};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as i128
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn row(n: usize, nudged: bool) -> Vec<f64> {
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
        if nudged {
            nudge.notify_waiters();
        }
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

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let quick = std::env::var_os("HANDOFF_BENCH_QUICK").is_some_and(|v| v != "0" && !v.is_empty())
        || std::env::args().any(|a| a == "--quick");
    let n = std::env::var("HANDOFF_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 20 } else { 500 });
    println!("wake latency: chat answer committed -> exec target started, {n} answers per row");
    println!(
        "{:<8} {:>9} {:>9} {:>9} {:>9}",
        "row", "p50 ms", "p99 ms", "max ms", "mean ms"
    );
    for (name, nudged) in [("polled", false), ("nudged", true)] {
        let mut lat = row(n, nudged).await;
        lat.sort_by(|a, b| a.total_cmp(b));
        let mean = lat.iter().sum::<f64>() / lat.len() as f64;
        println!(
            "{name:<8} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            pct(&lat, 0.5),
            pct(&lat, 0.99),
            lat[lat.len() - 1],
            mean
        );
    }
}
