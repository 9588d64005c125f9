//! Following the event log by `seq`.
//!
//! Any process may append events (the CLI, an MCP server, another daemon);
//! the daemon sees them by polling the indexed `seq` every
//! [`POLL`] — a single cheap query, not a busy spin — and immediately when a
//! write inside this process nudges it. The chat follower keeps a durable
//! cursor; the waiter follower starts at the log's end (its waiters live
//! only in memory).

use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::store::{Event, Store};

/// How often the log is polled for events written by other processes.
pub const POLL: Duration = Duration::from_millis(25);

/// Events fetched per read.
const BATCH: i64 = 256;

/// A consumer of the event log.
pub trait Apply: Send {
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
        let batch = match store.events_after(cursor, BATCH).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the event log; retrying");
                Vec::new()
            }
        };
        let mut moved = false;
        for ev in &batch {
            if cancel.is_cancelled() {
                break;
            }
            if consumer.apply(ev).await {
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
        if batch.len() as i64 == BATCH && failures == 0 {
            continue; // more to read right away
        }
        let pause = if failures > 0 {
            Duration::from_millis(200u64 << failures.min(6))
        } else {
            POLL
        };
        // Why select: shutdown must not wait out a poll interval, and a
        // write in this process should be seen without waiting either.
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
            _ = nudge.notified() => {}
        }
    }
}
