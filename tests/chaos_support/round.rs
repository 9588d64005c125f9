//! One round of the crash harness: start the daemon, the agents, the
//! humans and the Telegram weather; kill -9 the daemon `plan.kills` times;
//! stop everything; let one last daemon settle; check the invariants.
//! The harness itself never recovers anything: what the invariants see is
//! what the daemon and the agents' processes did.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{Ctx, Plan, Rng, agents, humans, invariants};
use crate::common::TempDb;
use crate::common::daemon::Daemon;
use crate::common::fake_telegram::FakeTelegram;

/// What a round found: violations by invariant name (every invariant has
/// an entry, empty when it held), and everything else that went wrong.
#[derive(Debug, Default)]
pub struct Found {
    pub by_invariant: BTreeMap<&'static str, Vec<String>>,
    /// Unexpected agent exits, settle timeouts, unmet floors.
    pub other: Vec<String>,
}

impl Found {
    pub fn all(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .by_invariant
            .iter()
            .flat_map(|(n, vs)| vs.iter().map(move |v| format!("{n}: {v}")))
            .collect();
        v.extend(self.other.iter().cloned());
        v
    }
}

fn start(db: &TempDb, cfg: &std::path::Path, ctx: &Ctx) -> Daemon {
    let d = Daemon::start_with(&db.path, cfg, &ctx.env());
    *ctx.daemon.lock().unwrap() = Some(format!("http://{}", d.addr));
    d
}

fn kill9(d: &mut Daemon, ctx: &Ctx) {
    *ctx.daemon.lock().unwrap() = None;
    d.kill9();
}

/// Run one round under `plan`.
pub async fn run(plan: Plan) -> Found {
    let mut rng = Rng::new(plan.seed);
    let started = Instant::now();
    let db = TempDb::new();
    let store = db.open().await;
    let pool = crate::common::raw_pool(&db.path).await;
    let fake = FakeTelegram::start().await;
    let ctx = Ctx::new(&db.path, db.dir.path(), &plan);
    let cfg = super::write_config(&ctx, &fake.url);
    let mut epoch = 1;
    fake.set_epoch(epoch);
    let mut daemon = start(&db, &cfg, &ctx);

    // 8 agents: 3 askers (sessions s0-s2), 3 proposers (s3-s5), 2 waiters;
    // and 2 claim racers running `handoff recover`. Each session registers
    // first, as a SessionStart hook does: `wait` refuses a session nothing
    // ever happened under.
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
    let minted = crate::common::cli_at(
        &db.path,
        &[
            "--json", "token", "create", "--name", "alice", "--role", "human",
        ],
    );
    let token = crate::common::json(&minted)["secret"]
        .as_str()
        .expect("token create prints the token")
        .to_string();
    *ctx.token.lock().unwrap() = token;
    let mut tasks = Vec::new();
    for k in 0..3 {
        tasks.push(tokio::spawn(agents::asker(ctx.clone(), k, rng.fork())));
    }
    for k in 3..6 {
        tasks.push(tokio::spawn(agents::proposer(ctx.clone(), k, rng.fork())));
    }
    tasks.push(tokio::spawn(agents::waiter(ctx.clone(), 6, [0, 3])));
    tasks.push(tokio::spawn(agents::waiter(ctx.clone(), 7, [1, 4])));
    for _ in 0..2 {
        tasks.push(tokio::spawn(agents::recoverer(ctx.clone(), rng.fork())));
    }
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
    tasks.push(tokio::spawn(humans::weather(
        ctx.clone(),
        fake.clone(),
        rng.fork(),
    )));

    // The storm: kill -9 the daemon at a random moment, restart it.
    for _ in 0..plan.kills {
        tokio::time::sleep(rng.ms(200, 1500)).await;
        kill9(&mut daemon, &ctx);
        epoch += 1;
        fake.set_epoch(epoch);
        if rng.chance(0.3) {
            // Down for a while: taps and writes pile up meanwhile.
            tokio::time::sleep(rng.ms(100, 800)).await;
        }
        daemon = start(&db, &cfg, &ctx);
    }
    let storm = started.elapsed();

    // Stop the agents and humans (each finishes the process it runs), kill
    // the daemon one last time and let a fresh one settle everything.
    // An agent still running `settle_secs` later waits on something nobody
    // will ever settle (a `propose` following a run left executing): a
    // violation, and its process is killed.
    ctx.stop.store(true, Ordering::Relaxed);
    let mut found = Found::default();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(plan.settle_secs);
    for t in tasks {
        let abort = t.abort_handle();
        match tokio::time::timeout_at(deadline, t).await {
            Ok(r) => r.expect("a harness task panicked"),
            Err(_) => {
                abort.abort();
                found.other.push(format!(
                    "an agent process was still waiting {} s after the storm",
                    plan.settle_secs
                ));
            }
        }
    }
    fake.clear_faults();
    kill9(&mut daemon, &ctx);
    epoch += 1;
    fake.set_epoch(epoch);
    let last = start(&db, &cfg, &ctx);
    let last_pid = last.child.id();
    let settling = Instant::now();
    if let Err(why) = invariants::settle(&store, &pool, &fake, &ctx, plan.settle_secs).await {
        found.other.push(format!("settle: {why}"));
    }
    println!(
        "chaos: the last daemon settled in {:.1}s",
        settling.elapsed().as_secs_f64()
    );

    let checked = invariants::check(&store, &pool, &fake, &ctx, epoch, last_pid, plan.floors).await;
    found.by_invariant = checked.by_invariant;
    found.other.extend(checked.other);
    if !found.all().is_empty() && plan.fault.is_none() {
        invariants::explain(&found.all(), &pool, &last.log()).await;
        if std::env::var_os("HANDOFF_CHAOS_KEEP").is_some() {
            let kept = db.dir.keep();
            println!("chaos: kept {}", kept.display());
        }
    }
    println!(
        "chaos: storm {:.1}s, total {:.1}s, {} daemon kills{}",
        storm.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        plan.kills,
        plan.fault
            .map(|f| format!(", fault {f}"))
            .unwrap_or_default()
    );
    drop(last);
    found
}
