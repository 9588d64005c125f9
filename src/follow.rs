//! Following the event log by `seq`.
//!
//! Any process may append events (the CLI, an MCP server, another daemon).
//! A follower reads the log when nudged — by a write inside this process
//! (`Shared::wrote`) or by [`watch`], which notices other processes' writes
//! to the database files (on PostgreSQL: [`listen`], through LISTEN/NOTIFY)
//! — and otherwise only every [`watch::fallback`]
//! (2 s), so an idle daemon does not poll. The chat follower keeps a
//! durable cursor; the waiter follower starts at the log's end (its waiters
//! live only in memory).
//!
//! A batch is read with its payloads as stored text; each event's payload
//! becomes a tree only as that event is applied, and only for a follower
//! that looks at it ([`Apply::reads_payload`]): a tree weighs many times
//! its text, and a batch of megabyte payloads (action arguments) read as
//! trees at once weighed over a hundred megabytes.
//!
//! A stored event that does not decode arrives as
//! [`UNREADABLE`](crate::store::events::UNREADABLE): it is skipped with a
//! warning naming its seq and the error, and counted in
//! [`skipped`] (`handoff_events_skipped_total` in `/metrics`), so one bad
//! row never stops a follower.

pub mod listen;
pub mod waiters;
pub mod watch;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::store::events::UNREADABLE;
use crate::store::{Event, Store};
pub use listen::listen;
pub use waiters::Waiters;
pub use watch::watch;

/// Unreadable events skipped, per follower name. A std Mutex: no `.await`
/// happens while it is held.
static SKIPPED: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

/// Unreadable events skipped so far in this process, per follower.
pub fn skipped() -> BTreeMap<&'static str, u64> {
    SKIPPED.lock().map(|m| m.clone()).unwrap_or_default()
}

/// Events fetched per read.
const BATCH: i64 = 256;

/// A consumer of the event log.
pub trait Apply: Send {
    /// The follower's name in logs and metrics (`chat`, `notify`, `waiters`).
    const NAME: &'static str;
    /// Whether applying an event of type `kind` looks at its payload; when
    /// not, [`Apply::apply`] gets the event with a `null` payload.
    fn reads_payload(&self, _kind: &str) -> bool {
        true
    }
    /// Apply one event. False means "not done, retry this event later"
    /// (e.g. Telegram unreachable); the cursor then stays put.
    fn apply(&mut self, ev: &Event) -> impl Future<Output = bool> + Send;
    /// Called with the new position after each applied batch.
    fn save(&mut self, seq: i64) -> impl Future<Output = ()> + Send;
}

/// Follow the log from `start` (exclusive), applying each event in order,
/// until `cancel`.
pub async fn follow<A: Apply>(
    store: Store,
    start: i64,
    nudge: &Notify,
    cancel: CancellationToken,
    mut consumer: A,
) {
    let mut cursor = start;
    let mut failures = 0u32;
    while !cancel.is_cancelled() {
        // Registered before the read, so a nudge that comes while reading
        // or applying is not lost (tokio keeps it for an enabled waiter).
        let nudged = nudge.notified();
        tokio::pin!(nudged);
        nudged.as_mut().enable();
        let batch = match store.events_after_raw(cursor, BATCH).await {
            Ok(b) => {
                if b.is_empty() {
                    failures = 0; // nothing waits to be retried
                }
                b
            }
            Err(e) => {
                // Backed off like a failed apply: a store that keeps
                // failing is not asked (and logged) in a tight loop.
                failures += 1;
                tracing::warn!(error = %e, after = cursor, "cannot read the event log; retrying");
                Vec::new()
            }
        };
        let mut moved = false;
        let full = batch.len() as i64 == BATCH;
        for ev in batch {
            if cancel.is_cancelled() {
                break;
            }
            let with_payload = ev.kind == UNREADABLE || consumer.reads_payload(&ev.kind);
            let ev = ev.decoded(with_payload);
            if ev.kind == UNREADABLE {
                skip(A::NAME, &ev);
                cursor = ev.seq;
                moved = true;
                continue;
            }
            if consumer.apply(&ev).await {
                cursor = ev.seq;
                moved = true;
                failures = 0;
            } else {
                failures += 1;
                break;
            }
        }
        if moved {
            consumer.save(cursor).await;
        }
        if full && failures == 0 {
            continue; // more to read right away
        }
        let pause = if failures > 0 {
            Duration::from_millis(200u64 << failures.min(6))
        } else {
            watch::fallback()
        };
        // Why select: shutdown must not wait out a pause, and a write
        // (nudge) should be seen without waiting either.
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
            _ = &mut nudged => {}
        }
    }
}

/// Log and count an event that cannot be applied because it cannot be read.
fn skip(follower: &'static str, ev: &Event) {
    tracing::warn!(
        follower,
        seq = ev.seq,
        stored_type = %ev.payload["type"].as_str().unwrap_or_default(),
        error = %ev.payload["error"].as_str().unwrap_or_default(),
        "skipping an event that cannot be read: nothing is delivered for it"
    );
    if let Ok(mut m) = SKIPPED.lock() {
        *m.entry(follower).or_default() += 1;
    }
}
