//! Each crash-harness invariant shown to catch its bug: a short
//! chaos round (tests/chaos.rs's harness, a few daemon kills) with one
//! test-only fault switch on (`HANDOFF_FAULT`, see `src/fault.rs`) in
//! every process the round starts, which must make the matching invariant
//! report a violation. The switches exist only in debug builds, so the
//! rounds do too: under `--release` or `--profile bench` this file holds one
//! test, which fails saying so (`.ci/chaos`'s release run does not build it).

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
use chaos_support::{Plan, round};

/// One round at a time: each is 8 agents, 2 racers and a daemon.
#[cfg(debug_assertions)]
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[cfg(debug_assertions)]
async fn round_with(fault: &'static str, invariant: &str) {
    round_tuned(fault, invariant, 2, false).await;
}

/// Run short rounds with `fault` on until `invariant` reports it, at most
/// three: a round can, by chance, never reach the seeded bug (no two
/// claimants met, no quorum-2 action was approved); three rounds that all
/// miss it fail the test.
/// `several`: three daemons on one PostgreSQL database
/// (tests/chaos_daemons.rs's mode), not one on a SQLite file.
#[cfg(debug_assertions)]
async fn round_tuned(fault: &'static str, invariant: &str, quorum_two_every: u64, several: bool) {
    let _turn = ONE_AT_A_TIME.lock().await;
    for attempt in 1..=3 {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        println!("chaos with {fault}, round {attempt}: seed {seed}");
        let found = round::run(Plan {
            fault: Some(fault),
            settle_secs: 20,
            floors: false,
            exec_kill_chance: 0.5,
            quorum_two_every,
            daemons: if several { 3 } else { 1 },
            postgres: several,
            ..Plan::single(8, seed)
        })
        .await;
        if let Some(first) = found.by_invariant[invariant].first() {
            println!("{invariant} caught {fault}: {first}");
            return;
        }
        println!(
            "round {attempt} did not reach the {fault} fault: {:#?}",
            found.all()
        );
    }
    panic!("{invariant} did not report the {fault} fault in three rounds");
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn skipped_recovery_is_caught_by_interrupted_are_unknown() {
    round_with("skip-recovery", "interrupted_are_unknown").await;
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tap_acknowledged_before_it_is_written_is_caught_by_no_lost_answer() {
    round_with("ack-before-write", "no_lost_answer").await;
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_claimants_running_is_caught_by_no_double_execution() {
    round_with("double-claim", "no_double_execution").await;
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_edit_is_caught_by_chat_message_per_item() {
    round_with("drop-edit", "chat_message_per_item").await;
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_duplicate_wake_is_caught_by_wake_delivered() {
    round_with("duplicate-wake", "wake_delivered").await;
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_skipped_event_is_caught_by_event_per_change() {
    round_with("skip-event", "event_per_change").await;
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approval_short_of_quorum_is_caught_by_audit_status_agree() {
    // Every action needs two approvals: any approval at all shows the bug.
    round_tuned("early-quorum", "audit_status_agree", 1, false).await;
}

#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_daemons_sending_at_once_is_caught_by_chat_message_per_item() {
    // Three daemons on PostgreSQL, each believing it holds every role:
    // each sends every item, while the others are alive.
    round_tuned("shared-roles", "chat_message_per_item", 2, true).await;
}
