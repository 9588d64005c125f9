//! Latency from a chat answer committed to `handoff wait` returning, with no
//! daemon (the waiter polls the store every 200 ms).
//!
//! Each round flags a question for a fresh session, starts a real
//! `handoff wait --session …` process, lets it settle into its poll loop,
//! commits a chat reply through the store, and measures from the commit to
//! the waiter's exit (which includes the pickup mark, printing and process
//! exit). Expect roughly the poll interval: p50 ≈ half of it, p99 ≈ all of
//! it, plus a few milliseconds.
//!
//! Run: `cargo bench --bench wait`. `HANDOFF_BENCH_N=<rounds>` (default
//! 100; `HANDOFF_BENCH_QUICK=1` or `-- --quick`: 10). A measurement, not a
//! test: nothing here asserts a speed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use handoff::store::Store;
use handoff::store::questions::{NewQuestion, NewReply};

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let quick = std::env::var_os("HANDOFF_BENCH_QUICK").is_some_and(|v| v != "0" && !v.is_empty())
        || std::env::args().any(|a| a == "--quick");
    let n: usize = std::env::var("HANDOFF_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 10 } else { 100 });
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("handoff.db");
    let store = Store::open(&db).await.expect("open store");
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
            .env("HANDOFF_DB", &db)
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
    let pct =
        |p: f64| samples[((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "chat answer committed → `handoff wait` returned (no daemon, 200 ms polling), {n} rounds:\n  \
         p50 {:.1} ms   p90 {:.1} ms   p99 {:.1} ms   min {:.1} ms   max {:.1} ms",
        ms(pct(0.50)),
        ms(pct(0.90)),
        ms(pct(0.99)),
        ms(samples[0]),
        ms(samples[samples.len() - 1])
    );
}
