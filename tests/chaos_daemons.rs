//! The crash harness in its several-daemons mode: three
//! real daemons (`handoff serve`) on one throw-away PostgreSQL database,
//! one of them killed with -9 at random moments and restarted, again and
//! again, while the same agents, humans and Telegram weather as
//! `tests/chaos.rs` run against all of them: the CLI writes to the
//! server itself, the Inbox user's calls go to each daemon in turn, and
//! the taps reach whichever daemon holds `telegram.poll` at the moment.
//! Then every daemon is killed, three fresh ones settle, and the same
//! invariants are checked: no lost answer, no double execution, every
//! interrupted execution `unknown`, every item messaged once per chat by
//! any one daemon process, every change with its event, audit and status
//! agreeing, every wake-up delivered — plus floors that the jobs moved:
//! chat messages sent, taps answered and wake-ups run by more than one
//! daemon process.
//!
//! `HANDOFF_CHAOS_KILLS` (default 30) sets how many kills;
//! `HANDOFF_CHAOS_SEED` pins the random choices. `.ci/chaos` runs it with
//! hundreds of kills in release mode.

mod chaos_support;
mod common;

use chaos_support::{Plan, round};

/// One round at a time: each is three daemons, 8 agents and 2 racers.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_any_of_three_daemons_on_postgres_and_every_invariant_holds() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (kills, seed) = chaos_support::kills_and_seed();
    println!(
        "chaos: {kills} kills of one of 3 daemons on PostgreSQL, seed {seed} (HANDOFF_CHAOS_SEED={seed} to replay the choices)"
    );
    let found = round::run(Plan {
        daemons: 3,
        postgres: true,
        ..Plan::single(kills, seed)
    })
    .await;
    found.assert_none();
}

/// The same in webhook mode: every daemon serves the webhook behind one
/// URL (no secret configured: they derive the same one), and the
/// harness's postman stands in for Telegram, delivering each tap to the
/// daemons in turn and again until one answers 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_any_of_three_daemons_behind_one_webhook_url_and_every_invariant_holds() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (kills, seed) = chaos_support::kills_and_seed();
    println!(
        "chaos: {kills} kills of one of 3 daemons on PostgreSQL, Telegram webhook, seed {seed} (HANDOFF_CHAOS_SEED={seed} to replay the choices)"
    );
    let found = round::run(Plan {
        daemons: 3,
        postgres: true,
        webhook: true,
        ..Plan::single(kills, seed)
    })
    .await;
    found.assert_none();
}
