//! The crash harness (issue 7): the real daemon (`handoff serve`) killed
//! with -9 at random moments and restarted, again and again, while 8 agent
//! processes loop (`ask --wait`, `propose --exec` — some killed -9
//! mid-command — and `wait --session`), two chat users tap buttons on a
//! fake Bot API (double taps, two approvers racing) and an Inbox user
//! replies and approves. Then everything stops, the daemon restarts one
//! last time and settles, and the invariants are checked and printed:
//! no committed answer lost, no action executed twice, every interrupted
//! execution `unknown`, every item in chat, no gap in the event log,
//! audit and status agreeing, every wake-up delivered.
//!
//! `HANDOFF_CHAOS_KILLS` (default 30) sets how many times the daemon is
//! killed; `HANDOFF_CHAOS_SEED` pins the random choices. `.ci/chaos` runs
//! it with hundreds of kills in release mode.

mod chaos_support;
mod common;

use std::sync::atomic::Ordering;
use std::time::Instant;

use chaos_support::{Ctx, Rng, agents, humans, invariants};
use common::TempDb;
use common::daemon::Daemon;
use common::fake_telegram::FakeTelegram;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_the_daemon_under_load_and_every_invariant_holds() {
    let kills = env_u64("HANDOFF_CHAOS_KILLS", 30);
    let seed = env_u64(
        "HANDOFF_CHAOS_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    );
    println!(
        "chaos: {kills} daemon kills, seed {seed} (HANDOFF_CHAOS_SEED={seed} to replay the choices)"
    );
    let mut rng = Rng::new(seed);
    let started = Instant::now();

    let db = TempDb::new();
    let store = db.open().await;
    let pool = common::raw_pool(&db.path).await;
    let fake = FakeTelegram::start().await;
    let ctx = Ctx::new(&db.path, db.dir.path());
    let cfg = chaos_support::write_config(&ctx, &fake.url);
    let mut daemon = Daemon::start(&db.path, &cfg);

    // 8 agents: 3 askers (sessions s0-s2), 3 proposers (s3-s5), 2 waiters.
    // Each session registers first, as a SessionStart hook does: `wait`
    // refuses a session nothing ever happened under.
    for k in 0..6 {
        store
            .register_session(&handoff::store::sessions::NewSession {
                session_id: format!("s{k}"),
                agent: format!("agent-{k}"),
                ..Default::default()
            })
            .await
            .expect("register session");
    }
    let mut tasks = Vec::new();
    for k in 0..3 {
        tasks.push(tokio::spawn(agents::asker(ctx.clone(), k, rng.fork())));
    }
    for k in 3..6 {
        tasks.push(tokio::spawn(agents::proposer(ctx.clone(), k, rng.fork())));
    }
    tasks.push(tokio::spawn(agents::waiter(ctx.clone(), 6, [0, 3])));
    tasks.push(tokio::spawn(agents::waiter(ctx.clone(), 7, [1, 4])));
    // The humans.
    tasks.push(tokio::spawn(humans::tapper(
        ctx.clone(),
        fake.clone(),
        rng.fork(),
    )));
    tasks.push(tokio::spawn(humans::inbox(
        ctx.clone(),
        store.clone(),
        rng.fork(),
    )));

    // The storm: kill -9 the daemon at a random moment, restart it.
    for _ in 0..kills {
        tokio::time::sleep(rng.ms(200, 1500)).await;
        daemon.kill9();
        if rng.chance(0.3) {
            // Down for a while: taps and writes pile up meanwhile.
            tokio::time::sleep(rng.ms(100, 800)).await;
        }
        daemon = Daemon::start(&db.path, &cfg);
    }
    let storm = started.elapsed();

    // Stop the agents and humans (each finishes the process it runs), kill
    // the daemon one last time and let a fresh one settle everything.
    ctx.stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("a harness task panicked");
    }
    daemon.kill9();
    let _daemon = Daemon::start(&db.path, &cfg);
    invariants::settle(&store, &pool, &fake, &ctx).await;
    // The final recovery pass, from this process.
    store.recover().await.expect("final recover");

    let violations = invariants::check(&store, &pool, &fake, &ctx).await;
    if !violations.is_empty() {
        invariants::explain(&violations, &pool, &_daemon.log()).await;
        if std::env::var_os("HANDOFF_CHAOS_KEEP").is_some() {
            let kept = db.dir.keep();
            println!("chaos: kept {}", kept.display());
        }
    }
    println!(
        "chaos: storm {:.1}s, total {:.1}s, {kills} daemon kills",
        storm.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        violations.is_empty(),
        "{} invariant violations:\n{}",
        violations.len(),
        violations.join("\n")
    );
}
