//! Test-only fault switches: each seeds the bug one crash-harness
//! invariant exists to catch, so `tests/chaos_faults.rs` can show that the
//! invariant reports it. A switch is on when `HANDOFF_FAULT` (a
//! comma-separated list) names it, and only in builds with debug
//! assertions: the test builds `cargo test` makes. A release build compiles
//! [`on`] to `false`, so no switch can reach a shipped binary.
//!
//! A debug build is still easy to run by mistake (`cargo run -- serve`,
//! `cargo install --debug`), so a switch is never on quietly: every
//! command with `HANDOFF_FAULT` set logs an error naming it ([`warn_if_set`]),
//! and `serve` refuses to start with one unless `HANDOFF_TEST_FAULTS_OK=1`
//! says a test harness set it ([`serve_refusal`]).
//!
//! The switches (each hook in the code is marked `FAULT(<name>)`):
//! `skip-recovery` (recovery leaves lapsed executions alone),
//! `ack-before-write` (a chat tap is toasted "Recorded" and never written),
//! `double-claim` (a claim also takes an action already executing),
//! `drop-edit` (a chat redraw is recorded as drawn but never sent),
//! `duplicate-wake` (an exec wake-up target runs twice per attempt),
//! `skip-event` (`action.claimed` events are not written),
//! `early-quorum` (an action is approved one approval short of its quorum),
//! `shared-roles` (every one of several daemons takes every role, as if
//! the role leases were not exclusive).
//! Four more are crash points, not bugs: `die-after-write` (the daemon
//! aborts after committing a socket or API call's write, before answering
//! it), for the tests of request ids, `die-mid-update` (it aborts after
//! taking a Telegram update, before handling it), for tests/daemons_share.rs,
//! `die-mid-voice-send` (it aborts after a row's voice answer is
//! written, before the note is settled), for tests/chat_voice.rs, and
//! `die-after-slack-post` (it aborts after Slack answered a
//! `chat.postMessage`, before the message's `ts` is saved), for
//! tests/chat_slack_crash.rs.
//! One is a test knob: `no-recheck` (a long poll and a local wait on
//! PostgreSQL re-read only when woken, or at the fallback interval, never
//! on their own short timers), for tests/pg_daemons.rs to show a wake came
//! from another process's write through LISTEN/NOTIFY.
//!
//! It does nothing else: no fault is ever on by default.

/// The variable naming the switches that are on.
pub const VAR: &str = "HANDOFF_FAULT";

/// The variable a test harness sets (to `1`) beside [`VAR`] so that
/// `serve` starts with a switch on.
pub const OPT_IN: &str = "HANDOFF_TEST_FAULTS_OK";

/// Whether the fault switch `name` is on.
#[cfg(debug_assertions)]
pub fn on(name: &str) -> bool {
    std::env::var(VAR).is_ok_and(|v| v.split(',').any(|f| f.trim() == name))
}

/// Whether the fault switch `name` is on: never, in a release build.
#[cfg(not(debug_assertions))]
pub fn on(_name: &str) -> bool {
    false
}

/// The switches `HANDOFF_FAULT` names, if it names any.
fn named() -> Option<String> {
    let v = std::env::var(VAR).ok()?;
    let names: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    (!names.is_empty()).then(|| names.join(","))
}

/// What a switch does in this build.
fn effect() -> &'static str {
    if cfg!(debug_assertions) {
        "this debug build runs with those bugs seeded on purpose, for the crash harness's tests"
    } else {
        "this release build has no fault switches and ignores it"
    }
}

/// Log an error when `HANDOFF_FAULT` names a switch: a process with one on
/// behaves wrongly by design, and nobody should miss that.
pub fn warn_if_set() {
    if let Some(names) = named() {
        tracing::error!(
            faults = %names,
            "{VAR} is set: {}; unset it outside tests",
            effect()
        );
    }
}

/// Why `serve` must not start: `HANDOFF_FAULT` names a switch and
/// `HANDOFF_TEST_FAULTS_OK=1` does not say a test set it. `None` when it
/// may start.
pub fn serve_refusal() -> Option<String> {
    let names = named()?;
    if std::env::var(OPT_IN).is_ok_and(|v| v.trim() == "1") {
        return None;
    }
    Some(format!(
        "{VAR}={names} is set: it seeds bugs for tests, and `serve` does not run with them; unset {VAR} (a test harness sets {OPT_IN}=1 beside it)"
    ))
}
