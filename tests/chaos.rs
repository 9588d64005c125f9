//! The crash harness: the real daemon (`handoff serve`) killed
//! with -9 at random moments and restarted, again and again, while 8 agent
//! processes loop (`ask --wait`, `propose --exec` — some killed -9
//! mid-command — and `wait --session`; their calls go through the daemon's
//! socket while it answers, so a kill lands mid-call), two chat users tap buttons on a
//! fake Bot API (double taps, two approvers racing) and an Inbox user
//! replies and approves. Then everything stops, the daemon restarts one
//! last time and settles, and the invariants are checked and printed:
//! no committed answer lost, no action executed twice, every interrupted
//! execution `unknown`, every item in chat once and in its final state,
//! every change with its event, audit and status agreeing (quorum
//! counted), every wake-up delivered once per daemon. Two more agents
//! race the proposers for every claim (`handoff recover` in a loop), a
//! third of the proposals carry a verifier, and the fake Bot API answers
//! with 429 bursts, 5xx and slow answers now and then. The harness never
//! recovers anything itself, and every count the invariants rest on has a
//! floor: a round that exercised nothing fails. `tests/chaos_faults.rs`
//! shows each invariant failing on the bug it exists for.
//!
//! A second round does the same under bursts (see its test): the chat's
//! digest rule on, items filed six to nine at once to a private chat and
//! to forum topics, each to be shown exactly once — a card or a digest.
//!
//! A third round runs Slack beside Telegram (see its test): every item
//! also posted to a Slack channel, two people tapping there too, Slack
//! redelivering what the daemon did not acknowledge; every item must
//! have exactly one Slack message, even when a daemon dies mid-post.
//!
//! `HANDOFF_CHAOS_KILLS` (default 30) sets how many times the daemon is
//! killed; `HANDOFF_CHAOS_SEED` pins the random choices. `.ci/chaos` runs
//! it with hundreds of kills in release mode.

mod chaos_support;
mod common;

use chaos_support::{Plan, round};

/// One round at a time: each is a daemon and its agents.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_the_daemon_under_load_and_every_invariant_holds() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (kills, seed) = chaos_support::kills_and_seed();
    println!(
        "chaos: {kills} daemon kills, seed {seed} (HANDOFF_CHAOS_SEED={seed} to replay the choices)"
    );
    let found = round::run(Plan::single(kills, seed)).await;
    found.assert_none();
}

/// The burst round: the digest rule at its default (more than 5 items
/// within 3 s per chat and topic become one digest), burst agents filing
/// 6 to 9 questions at once to a private chat and to two topics of a
/// forum group while the daemon is killed -9 and restarted, the humans
/// tapping, replying and dismissing; every item must be shown once in its
/// chat and topic — its own card or one digest listing it, never both —
/// and at least one item of each chat must have gone each way.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_the_daemon_under_bursts_and_every_item_is_shown_once() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (kills, seed) = chaos_support::kills_and_seed();
    println!(
        "chaos: {kills} daemon kills under bursts, seed {seed} (HANDOFF_CHAOS_SEED={seed} to replay the choices)"
    );
    let found = round::run(Plan::bursts(kills, seed)).await;
    found.assert_none();
}

/// The Slack round: Telegram and Slack both on, every item posted to one
/// Slack channel as well as the Telegram group, two Slack users tapping
/// options, Approve and Run now beside the two Telegram users, Slack
/// redelivering every envelope the daemon did not acknowledge and
/// answering with 429s, 5xx, slow answers and a closed websocket now and
/// then, while the daemon is killed -9 and restarted. Besides the usual
/// invariants: every Slack tap acknowledged and every "Recorded" note
/// backed by its answer, and exactly one Slack message per item — none
/// posted twice across a kill between Slack's answer and the saved `ts`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_the_daemon_with_telegram_and_slack_and_every_item_has_one_message_per_network() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (kills, seed) = chaos_support::kills_and_seed();
    println!(
        "chaos: {kills} daemon kills, Telegram and Slack, seed {seed} (HANDOFF_CHAOS_SEED={seed} to replay the choices)"
    );
    let found = round::run(Plan::with_slack(kills, seed)).await;
    found.assert_none();
}
