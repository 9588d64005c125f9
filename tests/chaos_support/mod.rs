//! The crash harness's parts: a seeded RNG, what the harness saw (the
//! record the invariants are checked against), the daemon's config, and
//! the agents, humans and invariant checks in the submodules.
#![allow(dead_code)]

pub mod agents;
pub mod humans;
pub mod invariants;
pub mod raw;
pub mod round;
pub mod slack;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `HANDOFF_CHAOS_KILLS` (default 30) and `HANDOFF_CHAOS_SEED` (default:
/// the clock), as the long runs set them.
pub fn kills_and_seed() -> (u64, u64) {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    (
        var("HANDOFF_CHAOS_KILLS").unwrap_or(30),
        var("HANDOFF_CHAOS_SEED").unwrap_or(now),
    )
}

/// The chat the daemon talks to (a group: two approvers race in it).
pub const CHAT: i64 = -1001;
/// Two humans allowed to answer and approve.
pub const ALICE: i64 = 111;
pub const BOB: i64 = 222;
/// A burst round's private chat with Alice (a private chat's id is its
/// user's id).
pub const DM: i64 = ALICE;
/// A burst round's forum group: one topic per project.
pub const FORUM: i64 = -1002;
/// A burst round's projects and the chat each is routed to: one to the
/// private chat, two to topics of their own in the forum group.
pub const BURST_PROJECTS: &[(&str, i64)] =
    &[("burst-dm", DM), ("burst-a", FORUM), ("burst-b", FORUM)];

/// Event types the harness's `[[notify]]` rule fires on.
pub const RULE_EVENTS: &[&str] = &[
    "question.answered",
    "question.dismissed",
    "action.approved",
    "action.rejected",
    "action.expired",
    "action.executed",
    "action.failed",
    "action.unknown",
];

/// A small seeded xorshift RNG (no extra crate; runs are reproducible from
/// the printed seed as far as timing allows).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }

    pub fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.range(lo, hi))
    }

    /// A child RNG for another task.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next())
    }
}

/// One chat tap the harness made, as Telegram would carry it.
#[derive(Debug, Clone)]
pub struct Tap {
    /// The chat it was tapped in.
    pub chat: i64,
    /// The callback query id (what answerCallbackQuery names).
    pub callback: String,
    /// The update that carried it.
    pub update: i64,
    pub message: i64,
    pub user: i64,
    /// The callback data.
    pub data: String,
    /// The question or action it is about.
    pub item: String,
    /// For an option: its label (what a "Recorded" toast must name).
    pub label: Option<String>,
}

/// What `propose --exec` printed and how it ended.
#[derive(Debug, Clone)]
pub struct Proposed {
    /// The `handoff propose` process (the parent of a command it ran).
    pub pid: u32,
    pub exit: Option<i32>,
    pub id: String,
    /// Whether it says it won the claim and ran the command itself.
    pub claimed: bool,
    pub status: String,
}

/// What the harness was told while it ran: the commitments the invariants
/// hold the store to.
#[derive(Debug, Default)]
pub struct Log {
    /// Inbox replies the daemon answered as accepted: (question id, text).
    pub inbox_committed: Vec<(String, String)>,
    /// Inbox replies whose answer never came (the daemon was down or
    /// killed mid-request): they may or may not have landed.
    pub inbox_uncertain: u64,
    /// Inbox replies the daemon refused (the question closed meanwhile).
    pub inbox_refused: u64,
    /// What `wait --session` printed: (session, each arrival).
    pub arrived: Vec<(String, serde_json::Value)>,
    /// Replies `ask --wait` printed: (question id, reply_seq, text).
    pub agent_got: Vec<(String, i64, String)>,
    /// Executors killed with -9 while their action was executing:
    /// (action id, the killed process's pid, whole process group).
    pub executor_kills: Vec<(String, u32, bool)>,
    /// Every tap, in order.
    pub taps: Vec<Tap>,
    /// Every `propose --exec` that was not killed.
    pub proposed: Vec<Proposed>,
    /// The quorum the harness asked for, by the proposal's summary (each
    /// summary is unique): what the audit is replayed against, rather
    /// than the quorum the store says it was given.
    pub quorum_asked: std::collections::HashMap<String, i64>,
    /// Approvals the Inbox user made that the store counted: (action id,
    /// approver).
    pub inbox_approved: Vec<(String, String)>,
    /// Bursts the burst agents filed, and the questions in them.
    pub bursts: u64,
    pub burst_items: u64,
    /// Runs `handoff recover` reported: (recover's pid, action id, claimed).
    pub recover_ran: Vec<(u32, String, bool)>,
    /// Agent processes that ended in a way no run should (an error exit).
    pub unexpected: Vec<String>,
    pub asks: u64,
    pub proposals: u64,
    pub verified_proposals: u64,
    pub waits: u64,
    pub recovers: u64,
    pub inbox_approvals: u64,
    /// The actions the settling person tapped Run now on, once per tap:
    /// approved, nobody left to run them (see `humans::Settler`).
    pub settle_runs: Vec<String>,
    /// Telegram misbehaviours the weather task injected.
    pub weather: u64,
    /// Every Slack tap, in order, and how Slack delivered it (a round
    /// with Slack on).
    pub slack_taps: Vec<slack::SlackTap>,
    /// Slack misbehaviours its weather task injected.
    pub slack_weather: u64,
    /// Each daemon process killed, by its epoch (see `round::Daemons`):
    /// the moment just before its SIGKILL.
    pub killed: std::collections::HashMap<u64, std::time::Instant>,
}

/// How a round runs: how many daemon kills, which fault switch (if any)
/// every process gets, how long the last daemon may take to settle, and
/// whether the floors (every count above zero) apply.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kills: u64,
    pub seed: u64,
    pub fault: Option<&'static str>,
    pub settle_secs: u64,
    pub floors: bool,
    /// Chance that a `propose --exec` is killed -9 mid-command (half of
    /// it for a `recover` racer).
    pub exec_kill_chance: f64,
    /// Every how many proposals one needs 2 approvals.
    pub quorum_two_every: u64,
    /// Daemons alive at once, all on the one database: 1, or 3 (each kill
    /// takes one of them, picked at random).
    pub daemons: usize,
    /// Run on a throw-away PostgreSQL server instead of a SQLite file.
    pub postgres: bool,
    /// Telegram in webhook mode: every daemon serves the webhook, and the
    /// harness's postman delivers each update to one daemon after another
    /// until one answers 200, as Telegram retries.
    pub webhook: bool,
    /// A burst round: the digest rule at its default (more than 5 items
    /// within 3 s per chat and topic), and instead of the usual agents,
    /// burst agents filing 6 to 9 questions at once to a private chat and
    /// to two forum topics (see `agents::burster`).
    pub bursts: bool,
    /// Slack on beside Telegram: every item also posted to one channel,
    /// two people tapping there, Slack redelivering unacknowledged
    /// envelopes and misbehaving now and then (see `slack`).
    pub slack: bool,
}

impl Plan {
    /// One daemon on a SQLite file, 30 kills unless `kills` says more:
    /// the bounded round `cargo test` runs.
    pub fn single(kills: u64, seed: u64) -> Plan {
        Plan {
            kills,
            seed,
            fault: None,
            settle_secs: 120,
            floors: true,
            exec_kill_chance: 0.35,
            quorum_two_every: 3,
            daemons: 1,
            postgres: false,
            webhook: false,
            bursts: false,
            slack: false,
        }
    }

    /// One daemon on a SQLite file with Slack on beside Telegram.
    pub fn with_slack(kills: u64, seed: u64) -> Plan {
        Plan {
            slack: true,
            ..Plan::single(kills, seed)
        }
    }

    /// A burst round on one daemon and a SQLite file: the floors are the
    /// burst round's own (digests and cards in the private chat and in a
    /// topic), not the usual agents'.
    pub fn bursts(kills: u64, seed: u64) -> Plan {
        Plan {
            bursts: true,
            ..Plan::single(kills, seed)
        }
    }
}

/// Everything the harness's tasks share.
#[derive(Clone)]
pub struct Ctx {
    /// The database every process is given (`HANDOFF_DB`): a SQLite
    /// file's path or a `postgres://` URL.
    pub db: String,
    /// The fault switch every process the harness starts gets (`HANDOFF_FAULT`).
    pub fault: Option<&'static str>,
    pub exec_kill_chance: f64,
    pub quorum_two_every: u64,
    /// Telegram in webhook mode (see [`Plan::webhook`]).
    pub webhook: bool,
    /// A burst round (see [`Plan::bursts`]).
    pub bursts: bool,
    pub dir: PathBuf,
    pub log: Arc<Mutex<Log>>,
    pub stop: Arc<AtomicBool>,
    /// Each daemon's base URL (None while it is down).
    pub daemons: Arc<Mutex<Vec<Option<String>>>>,
    /// Which daemon the next Inbox call goes to.
    turn: Arc<AtomicUsize>,
    /// A `human` API token named `alice`, for the Inbox user.
    pub token: Arc<Mutex<String>>,
    /// The fake Slack, in a round with Slack on.
    pub slack: Option<crate::common::fake_slack::FakeSlack>,
}

impl Ctx {
    pub fn new(db: &str, dir: &Path, plan: &Plan) -> Ctx {
        Ctx {
            db: db.to_string(),
            fault: plan.fault,
            exec_kill_chance: plan.exec_kill_chance,
            quorum_two_every: plan.quorum_two_every,
            webhook: plan.webhook,
            bursts: plan.bursts,
            dir: dir.to_path_buf(),
            log: Arc::new(Mutex::new(Log::default())),
            stop: Arc::new(AtomicBool::new(false)),
            daemons: Arc::new(Mutex::new(vec![None; plan.daemons])),
            turn: Arc::new(AtomicUsize::new(0)),
            token: Arc::new(Mutex::new(String::new())),
            slack: None,
        }
    }

    /// The base URL of the next daemon alive, in turn.
    pub fn next_daemon(&self) -> Option<String> {
        let daemons = self.daemons.lock().unwrap();
        let start = self.turn.fetch_add(1, Ordering::Relaxed);
        (0..daemons.len())
            .map(|k| &daemons[(start + k) % daemons.len()])
            .find_map(Clone::clone)
    }

    /// The chats of the round and who taps in each: the group, and in a
    /// burst round the private chat and the forum group too.
    pub fn chats(&self) -> Vec<(i64, Vec<i64>)> {
        let mut chats = vec![(CHAT, vec![ALICE, BOB])];
        if self.bursts {
            chats.push((DM, vec![ALICE]));
            chats.push((FORUM, vec![ALICE, BOB]));
        }
        chats
    }

    /// Whether the daemons share a PostgreSQL database.
    pub fn postgres(&self) -> bool {
        self.db.starts_with("postgres")
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap()
    }

    /// The environment every process the harness starts gets: with a fault
    /// switch, the test-only opt-in too, without which `serve` refuses it.
    pub fn env(&self) -> Vec<(&'static str, &'static str)> {
        match self.fault {
            Some(f) => vec![("HANDOFF_FAULT", f), ("HANDOFF_TEST_FAULTS_OK", "1")],
            None => Vec::new(),
        }
    }

    /// The file `propose --exec` commands append "action-id executor-pid" to.
    pub fn side_effects(&self) -> PathBuf {
        self.dir.join("side-effects.txt")
    }

    /// The file the `[[notify]]` rule appends "event-id daemon-pid" to.
    pub fn wakes(&self) -> PathBuf {
        self.dir.join("wakes.txt")
    }
}

/// The daemon's config: one group chat with two answerers/approvers,
/// generous Telegram limits, no digests (in a burst round: the default
/// digest rule, a private chat and a forum group with a topic per
/// project, each burst project routed to one of them), short polls, a
/// fast retry schedule and an exec `[[notify]]` rule writing event ids to
/// a file.
pub fn write_config(ctx: &Ctx, api_url: &str) -> PathBuf {
    let events: Vec<String> = RULE_EVENTS.iter().map(|e| format!("\"{e}\"")).collect();
    // No webhook_secret: the daemons derive one from the bot token.
    let mode = if ctx.webhook {
        "mode = \"webhook\"\nwebhook_url = \"https://chaos.example.invalid/telegram\"\n"
    } else {
        ""
    };
    let digest = if ctx.bursts {
        "digest_threshold = 5\ndigest_window_secs = 3\n"
    } else {
        "digest_threshold = 100000\n"
    };
    let mut bursts = String::new();
    if ctx.bursts {
        bursts.push_str(&format!(
            r#"
[[telegram.chats]]
name = "dm"
chat_id = {DM}
answer = [{ALICE}]
approve = [{ALICE}]

[[telegram.chats]]
name = "forum"
chat_id = {FORUM}
topics = "project"
answer = [{ALICE}, {BOB}]
approve = [{ALICE}, {BOB}]
"#
        ));
        for (project, chat) in BURST_PROJECTS {
            let name = if *chat == DM { "dm" } else { "forum" };
            bursts.push_str(&format!(
                "\n[[route]]\nproject = \"{project}\"\nchat = \"{name}\"\n"
            ));
        }
    }
    let text = format!(
        r#"[telegram]
token = "123:TEST"
api_url = "{api_url}"
poll_timeout_secs = 1
{digest}{mode}
[telegram.limits]
per_chat_per_sec = 1000
per_chat_per_min = 60000
per_group_per_min = 60000
overall_per_sec = 1000

[[telegram.chats]]
name = "team"
chat_id = {CHAT}
answer = [{ALICE}, {BOB}]
approve = [{ALICE}, {BOB}]
{bursts}
[wake]
retry_schedule_ms = [0, 100, 250, 500, 1000, 1000, 2000, 2000, 3000, 3000, 5000, 5000, 5000, 5000]

[[notify]]
name = "chaos"
events = [{events}]
exec = ["/bin/sh", "-c", "echo \"$HANDOFF_EVENT_ID $PPID\" >> '{wakes}'"]
timeout_secs = 2
"#,
        events = events.join(", "),
        wakes = ctx.wakes().display(),
    );
    let text = match &ctx.slack {
        Some(fake) => text + &slack::config(&fake.url),
        None => text,
    };
    let p = ctx.dir.join("handoff.toml");
    std::fs::write(&p, text).unwrap();
    p
}
