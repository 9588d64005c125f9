//! One round of the crash harness: start the daemon, the agents, the
//! humans and the Telegram weather; kill -9 the daemon `plan.kills` times;
//! stop everything; let one last daemon settle; check the invariants.
//! The harness itself never recovers anything: what the invariants see is
//! what the daemon and the agents' processes did.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use std::sync::Arc;

use handoff::clock::SystemClock;
use handoff::store::Store;

use super::raw::Raw;
use super::{Ctx, Plan, Rng, agents, humans, invariants};
use crate::common::TempDb;
use crate::common::daemon::Daemon;
use crate::common::fake_slack::FakeSlack;
use crate::common::fake_telegram::FakeTelegram;
use crate::common::postgres::PgDb;

/// What a round found: violations by invariant name (every invariant has
/// an entry, empty when it held), and everything else that went wrong.
#[derive(Debug, Default)]
pub struct Found {
    pub by_invariant: BTreeMap<&'static str, Vec<String>>,
    /// Unexpected agent exits, settle timeouts, unmet floors.
    pub other: Vec<String>,
}

impl Found {
    /// Fail the test with every violation, if there is any.
    pub fn assert_none(&self) {
        let all = self.all();
        assert!(
            all.is_empty(),
            "{} invariant violations:\n{}",
            all.len(),
            all.join("\n")
        );
    }

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

/// Where a round runs: a SQLite file in a temp dir, or a throw-away
/// PostgreSQL database; the temp dir holds the config and the files the
/// commands write either way.
struct Place {
    dir: TempDb,
    pg: Option<PgDb>,
}

impl Place {
    async fn new(postgres: bool) -> Place {
        let pg = if postgres {
            Some(PgDb::new().await)
        } else {
            None
        };
        Place {
            dir: TempDb::new(),
            pg,
        }
    }

    /// What every process is given as `HANDOFF_DB`.
    fn db(&self) -> String {
        match &self.pg {
            Some(pg) => pg.url.clone(),
            None => self.dir.path.display().to_string(),
        }
    }

    async fn open(&self) -> Store {
        match &self.pg {
            Some(pg) => Store::open_postgres(&pg.url, Arc::new(SystemClock))
                .await
                .expect("open the PostgreSQL store"),
            None => self.dir.open().await,
        }
    }
}

/// The daemons of a round, each slot restarted after its kill. Each
/// process gets a bot token of its own (`123:E<epoch>`, one epoch per
/// process ever started), so the fake Bot API can tell which process sent
/// a message even while several run.
struct Daemons {
    cfg: std::path::PathBuf,
    /// Each slot's daemon and its epoch.
    slots: Vec<Option<(u64, Daemon)>>,
    epoch: u64,
}

impl Daemons {
    fn start(&mut self, k: usize, ctx: &Ctx) {
        self.epoch += 1;
        let token = format!("123:E{}", self.epoch);
        let slack_token = format!("xoxb-E{}", self.epoch);
        let mut env: Vec<(&str, &str)> = ctx.env();
        env.push(("HANDOFF_TELEGRAM_TOKEN", &token));
        if ctx.slack.is_some() {
            env.push(("HANDOFF_SLACK_BOT_TOKEN", &slack_token));
        }
        if self.slots.len() > 1 {
            // Roles move within 1.5 s of a holder's kill, not 6 s: the
            // storm kills one every second or so.
            env.push(("HANDOFF_LEASE_MS", "1500"));
        }
        let d = Daemon::start_with(std::path::Path::new(&ctx.db), &self.cfg, &env);
        ctx.daemons.lock().unwrap()[k] = Some(format!("http://{}", d.addr));
        self.slots[k] = Some((self.epoch, d));
    }

    fn kill9(&mut self, k: usize, ctx: &Ctx) {
        ctx.daemons.lock().unwrap()[k] = None;
        if let Some((epoch, mut d)) = self.slots[k].take() {
            // Before the signal, not after: a message it sent is older
            // than this, one sent by a later holder is younger.
            ctx.log().killed.insert(epoch, Instant::now());
            d.kill9();
        }
    }

    /// Every daemon's log, one after the other.
    fn logs(&self) -> String {
        self.slots.iter().flatten().map(|(_, d)| d.log()).collect()
    }
}

/// Run one round under `plan`.
pub async fn run(plan: Plan) -> Found {
    let mut rng = Rng::new(plan.seed);
    let started = Instant::now();
    let place = Place::new(plan.postgres).await;
    let store = place.open().await;
    let db = place.db();
    let pool = Raw::open(&db).await;
    let fake = FakeTelegram::start().await;
    let mut ctx = Ctx::new(&db, place.dir.dir.path(), &plan);
    if plan.slack {
        ctx.slack = Some(FakeSlack::start().await);
    }
    let mut daemons = Daemons {
        cfg: super::write_config(&ctx, &fake.url),
        slots: (0..plan.daemons).map(|_| None).collect(),
        epoch: 0,
    };
    for k in 0..plan.daemons {
        daemons.start(k, &ctx);
    }

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
        std::path::Path::new(&db),
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
    if plan.bursts {
        // A burst round: a burst agent per burst project instead.
        for (project, _) in super::BURST_PROJECTS {
            tasks.push((
                format!("burster {project}"),
                tokio::spawn(agents::burster(ctx.clone(), project, rng.fork())),
            ));
        }
    } else {
        for k in 0..3 {
            tasks.push((
                format!("asker s{k}"),
                tokio::spawn(agents::asker(ctx.clone(), k, rng.fork())),
            ));
        }
        for k in 3..6 {
            tasks.push((
                format!("proposer s{k}"),
                tokio::spawn(agents::proposer(ctx.clone(), k, rng.fork())),
            ));
        }
        tasks.push((
            "waiter 6 (s0, s3)".to_string(),
            tokio::spawn(agents::waiter(ctx.clone(), 6, [0, 3])),
        ));
        tasks.push((
            "waiter 7 (s1, s4)".to_string(),
            tokio::spawn(agents::waiter(ctx.clone(), 7, [1, 4])),
        ));
        for k in 0..2 {
            tasks.push((
                format!("recover racer {k}"),
                tokio::spawn(agents::recoverer(ctx.clone(), rng.fork())),
            ));
        }
    }
    tasks.push((
        "the chat tapper".to_string(),
        tokio::spawn(humans::tapper(ctx.clone(), fake.clone(), rng.fork())),
    ));
    tasks.push((
        "the Inbox user".to_string(),
        tokio::spawn(humans::inbox(ctx.clone(), store.clone(), rng.fork())),
    ));
    // The postman runs through the settling too: it is Telegram.
    let delivered = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let postman = plan.webhook.then(|| {
        tokio::spawn(humans::postman(
            ctx.clone(),
            fake.clone(),
            delivered.clone(),
        ))
    });
    tasks.push((
        "the weather".to_string(),
        tokio::spawn(humans::weather(ctx.clone(), fake.clone(), rng.fork())),
    ));
    // Slack's postman, like Telegram's, runs through the settling.
    let slack_delivered = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut slack_postman = None;
    if let Some(slack) = &ctx.slack {
        tasks.push((
            "the Slack tapper".to_string(),
            tokio::spawn(super::slack::tapper(ctx.clone(), slack.clone(), rng.fork())),
        ));
        tasks.push((
            "Slack's weather".to_string(),
            tokio::spawn(super::slack::weather(
                ctx.clone(),
                slack.clone(),
                rng.fork(),
            )),
        ));
        slack_postman = Some(tokio::spawn(super::slack::postman(
            ctx.clone(),
            slack.clone(),
            slack_delivered.clone(),
        )));
    }

    // The storm: kill -9 a daemon at a random moment, restart it.
    for _ in 0..plan.kills {
        tokio::time::sleep(rng.ms(200, 1500)).await;
        let k = if plan.daemons > 1 {
            rng.range(0, plan.daemons as u64) as usize
        } else {
            0
        };
        daemons.kill9(k, &ctx);
        if rng.chance(0.3) {
            // Down for a while: taps and writes pile up meanwhile.
            tokio::time::sleep(rng.ms(100, 800)).await;
        }
        daemons.start(k, &ctx);
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
    for (who, t) in tasks {
        let abort = t.abort_handle();
        match tokio::time::timeout_at(deadline, t).await {
            Ok(r) => r.expect("a harness task panicked"),
            Err(_) => {
                abort.abort();
                found.other.push(format!(
                    "an agent process was still waiting {} s after the storm ({who})",
                    plan.settle_secs
                ));
            }
        }
    }
    // A burst round proposes nothing: nothing to leave behind.
    let stranded = if plan.bursts {
        None
    } else {
        agents::strand_one(&ctx, &store).await
    };
    fake.calm();
    if let Some(slack) = &ctx.slack {
        slack.clear_faults();
    }
    for k in 0..plan.daemons {
        daemons.kill9(k, &ctx);
    }
    for k in 0..plan.daemons {
        daemons.start(k, &ctx);
    }
    let epoch = daemons.epoch;
    let settling = Instant::now();
    if let Err(why) = invariants::settle(&store, &pool, &fake, &ctx, plan.settle_secs).await {
        found.other.push(format!("settle: {why}"));
    }
    println!(
        "chaos: the last daemon settled in {:.1}s",
        settling.elapsed().as_secs_f64()
    );
    // Before the check takes the log the postman reads.
    slack_delivered.store(true, Ordering::Relaxed);
    if let Some(p) = slack_postman {
        p.await.expect("Slack's postman panicked");
    }

    let checked = invariants::check(
        &store,
        &pool,
        &fake,
        &ctx,
        epoch,
        plan.floors,
        stranded.as_deref(),
    )
    .await;
    delivered.store(true, Ordering::Relaxed);
    if let Some(p) = postman {
        p.await.expect("the postman panicked");
    }
    found.by_invariant = checked.by_invariant;
    found.other.extend(checked.other);
    if !found.all().is_empty() && plan.fault.is_none() {
        invariants::explain(&found.all(), &pool, &daemons.logs()).await;
        if std::env::var_os("HANDOFF_CHAOS_KEEP").is_some() {
            let kept = place.dir.dir.keep();
            println!("chaos: kept {}", kept.display());
        }
    }
    println!(
        "chaos: storm {:.1}s, total {:.1}s, {} daemon kills ({} daemons on {}{}){}",
        storm.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        plan.kills,
        plan.daemons,
        match (plan.postgres, plan.webhook) {
            (true, true) => "PostgreSQL, Telegram webhook",
            (true, false) => "PostgreSQL",
            (false, true) => "a SQLite file, Telegram webhook",
            (false, false) => "a SQLite file",
        },
        match (plan.bursts, plan.slack) {
            (true, _) => ", bursts",
            (false, true) => ", Telegram and Slack",
            (false, false) => "",
        },
        plan.fault
            .map(|f| format!(", fault {f}"))
            .unwrap_or_default()
    );
    drop(daemons);
    found
}
