//! Each crash-harness invariant shown to catch its bug, on both engines: a
//! short chaos round (tests/chaos.rs's harness, 8 daemon kills, 20 s to
//! settle, no floors) with one test-only fault switch on (`HANDOFF_FAULT`,
//! see `src/fault.rs`) in every process the round starts, which must make
//! the matching invariant report the violation only that fault causes —
//! its own wording, naming the item, not just "the invariant failed".
//! Each seeded fault runs on one daemon on a SQLite file (`::sqlite`) and
//! on three daemons on one PostgreSQL database (`::postgres`, the mode of
//! tests/chaos_daemons.rs); `shared-roles`, a bug only several daemons can
//! have, runs on three daemons on the SQLite file instead of one.
//!
//! A short round that did not settle reports violations of the same
//! invariants, so a fault test is believed only beside a control: the
//! same plan on the same engine with no fault, run once per engine and
//! test binary (before the first fault round there, shared by all of
//! them; also a test of its own, `control::…`), must report nothing at
//! all. A failed control fails every fault test on its engine.
//!
//! The switches exist only in debug builds, so the rounds do too: under
//! `--release` or `--profile bench` this file holds one test, which fails
//! saying so (`.ci/chaos`'s release run does not build it).

/// Without debug assertions `fault::on` is compiled to `false`: a round
/// would find nothing and prove nothing, so none runs, and this says why
/// rather than the file passing with zero tests.
#[cfg(not(debug_assertions))]
#[test]
fn the_fault_rounds_need_a_build_with_debug_assertions() {
    panic!(
        "tests/chaos_faults.rs needs a build with debug assertions, where the fault switches exist \
         (src/fault.rs): run `cargo test --test chaos_faults`, without --release or --profile bench"
    );
}

#[cfg(debug_assertions)]
mod chaos_support;
#[cfg(debug_assertions)]
mod common;

#[cfg(debug_assertions)]
mod rounds {
    use crate::chaos_support::{Plan, round};

    /// Where a round runs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Engine {
        /// One daemon on a SQLite file.
        Sqlite,
        /// Three daemons on one SQLite file (for `shared-roles`).
        SqliteThree,
        /// Three daemons on one PostgreSQL database.
        Postgres,
    }

    impl Engine {
        fn index(self) -> usize {
            self as usize
        }
    }

    /// One round at a time: each is 8 agents, 2 racers and its daemons.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// Each engine's control round, run once per test binary: `Err` holds
    /// what it found.
    static CONTROLS: [tokio::sync::OnceCell<Result<(), String>>; 3] = [
        tokio::sync::OnceCell::const_new(),
        tokio::sync::OnceCell::const_new(),
        tokio::sync::OnceCell::const_new(),
    ];

    fn seed() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    }

    /// The short plan every round of `engine` runs, fault or not: the same
    /// kills, settling time, kill chance and quorums.
    fn plan(engine: Engine, fault: Option<&'static str>, seed: u64) -> Plan {
        Plan {
            fault,
            settle_secs: 20,
            floors: false,
            exec_kill_chance: 0.5,
            // Every second action needs two approvals: an approval of one
            // shows the early-quorum fault.
            quorum_two_every: 2,
            daemons: if engine == Engine::Sqlite { 1 } else { 3 },
            postgres: engine == Engine::Postgres,
            ..Plan::single(8, seed)
        }
    }

    /// The control round of `engine`: the short plan with no fault must
    /// find nothing — no violation, no settle timeout, no agent failing.
    async fn control_once(engine: Engine) -> Result<(), String> {
        CONTROLS[engine.index()]
            .get_or_init(|| async {
                let seed = seed();
                println!("control round on {engine:?}, no fault: seed {seed}");
                let found = round::run(plan(engine, None, seed)).await;
                let all = found.all();
                if all.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "seed {seed}: {} findings:\n{}",
                        all.len(),
                        all.join("\n")
                    ))
                }
            })
            .await
            .clone()
    }

    /// The control round of `engine`, as a test of its own.
    pub async fn control(engine: Engine) {
        let _turn = ONE_AT_A_TIME.lock().await;
        if let Err(why) = control_once(engine).await {
            panic!("the short plan without a fault on {engine:?} is not clean: {why}");
        }
    }

    /// Run short rounds of `engine` with `fault` on until `invariant`
    /// reports a violation holding `wording` (the fault's own), at most
    /// three: a round can, by chance, never reach the seeded bug (no two
    /// claimants met, no quorum-2 action was approved); three rounds that
    /// all miss it fail the test. First the engine's control must be clean.
    pub async fn fault(engine: Engine, fault: &'static str, invariant: &str, wording: &str) {
        let _turn = ONE_AT_A_TIME.lock().await;
        if let Err(why) = control_once(engine).await {
            panic!(
                "the fault-free control round on {engine:?} is not clean, so a violation with \
                 {fault} on proves nothing: {why}"
            );
        }
        for attempt in 1..=3 {
            let seed = seed();
            println!("chaos with {fault} on {engine:?}, round {attempt}: seed {seed}");
            let found = round::run(plan(engine, Some(fault), seed)).await;
            let seen = &found.by_invariant[invariant];
            if let Some(v) = seen.iter().find(|v| v.contains(wording)) {
                println!("{invariant} caught {fault}: {v}");
                return;
            }
            println!(
                "round {attempt} did not show {fault} as {wording:?} in {invariant} ({} other violations there): {:#?}",
                seen.len(),
                found.all()
            );
        }
        panic!("{invariant} did not report {fault} as {wording:?} in three rounds on {engine:?}");
    }
}

/// `name::sqlite` and `name::postgres`: `fault` caught by `invariant` with
/// a violation holding `wording`, on one daemon on SQLite (or `sqlite =
/// SqliteThree`: three) and on three daemons on PostgreSQL.
#[cfg(debug_assertions)]
macro_rules! on_both_engines {
    ($name:ident, $fault:literal, $invariant:literal, $wording:literal) => {
        on_both_engines!($name, Sqlite, $fault, $invariant, $wording);
    };
    ($name:ident, $sqlite:ident, $fault:literal, $invariant:literal, $wording:literal) => {
        mod $name {
            use crate::rounds::{Engine, fault};

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                fault(Engine::$sqlite, $fault, $invariant, $wording).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                fault(Engine::Postgres, $fault, $invariant, $wording).await;
            }
        }
    };
}

/// The short plan with no fault finds nothing: the rounds below are
/// believed only beside it.
#[cfg(debug_assertions)]
mod control {
    use crate::rounds::{Engine, control};

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite() {
        control(Engine::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_three_daemons() {
        control(Engine::SqliteThree).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres() {
        control(Engine::Postgres).await;
    }
}

// An executor killed mid-command whose lapsed claim nobody recovers.
#[cfg(debug_assertions)]
on_both_engines!(
    skipped_recovery_is_caught_by_interrupted_are_unknown,
    "skip-recovery",
    "interrupted_are_unknown",
    "was killed and the claim was followed by None"
);

// A tap toasted "Recorded" with no history row of its own.
#[cfg(debug_assertions)]
on_both_engines!(
    a_tap_acknowledged_before_it_is_written_is_caught_by_no_lost_answer,
    "ack-before-write",
    "no_lost_answer",
    "but no history row is left for it"
);

// Two side effects of one action.
#[cfg(debug_assertions)]
on_both_engines!(
    two_claimants_running_is_caught_by_no_double_execution,
    "double-claim",
    "no_double_execution",
    "ran more than once"
);

// A card left showing an earlier state of its item.
#[cfg(debug_assertions)]
on_both_engines!(
    a_dropped_edit_is_caught_by_chat_message_per_item,
    "drop-edit",
    "chat_message_per_item",
    " but its message "
);

// One daemon process running one wake-up twice.
#[cfg(debug_assertions)]
on_both_engines!(
    a_duplicate_wake_is_caught_by_wake_delivered,
    "duplicate-wake",
    "wake_delivered",
    "one daemon ran it twice"
);

// A run whose claim left no event, seen through its side effect.
#[cfg(debug_assertions)]
on_both_engines!(
    a_skipped_event_is_caught_by_event_per_change,
    "skip-event",
    "event_per_change",
    "no action.claimed event names that process"
);

// A quorum-2 action approved by its first approver.
#[cfg(debug_assertions)]
on_both_engines!(
    approval_short_of_quorum_is_caught_by_audit_status_agree,
    "early-quorum",
    "audit_status_agree",
    "approved with 1 distinct approval(s) of 2"
);

// Three daemons each believing it holds every role: each sends every
// item, while the others are alive.
#[cfg(debug_assertions)]
on_both_engines!(
    two_daemons_sending_at_once_is_caught_by_chat_message_per_item,
    SqliteThree,
    "shared-roles",
    "chat_message_per_item",
    "while it was alive beside the one recorded"
);
