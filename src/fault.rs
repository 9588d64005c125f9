//! Test-only fault switches (issue 18): each seeds the bug one crash-harness
//! invariant exists to catch, so `tests/chaos_faults.rs` can show that the
//! invariant reports it. A switch is on when `HANDOFF_FAULT` (a
//! comma-separated list) names it, and only in builds with debug
//! assertions: the test builds `cargo test` makes. A release build compiles
//! [`on`] to `false`, so no switch can reach a shipped binary.
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
//! Two more are crash points, not bugs: `die-after-write` (the daemon
//! aborts after committing a socket or API call's write, before answering
//! it), for the tests of request ids, and `die-mid-update` (it aborts after
//! taking a Telegram update, before handling it), for tests/daemons_share.rs.
//!
//! It does nothing else: no fault is ever on by default.

/// Whether the fault switch `name` is on.
#[cfg(debug_assertions)]
pub fn on(name: &str) -> bool {
    std::env::var("HANDOFF_FAULT").is_ok_and(|v| v.split(',').any(|f| f.trim() == name))
}

/// Whether the fault switch `name` is on: never, in a release build.
#[cfg(not(debug_assertions))]
pub fn on(_name: &str) -> bool {
    false
}
