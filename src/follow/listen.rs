//! Noticing writes made by other processes on PostgreSQL:
//! what [`super::watch`] does with inotify for an SQLite file, done with
//! `LISTEN/NOTIFY`.
//!
//! Every INSERT on `events` notifies [`CHANNEL`] when its transaction
//! commits (migrations/postgres/…530_notify.sql). [`listen`] keeps one
//! connection of its own LISTENing there and nudges the followers on each
//! notification, so a write made through another daemon, the CLI or an MCP
//! server wakes this daemon's long polls, event streams and waiters within
//! a round trip.
//!
//! The unhappy side: notifications sent while the connection is down are
//! lost, not queued. When it drops (a server restart, `pg_terminate_backend`,
//! a network cut) it is opened again with a growing pause, and the followers
//! are nudged once right after every (re)connect, LISTEN in place, so they
//! re-read whatever was committed meanwhile. Besides, the log's newest seq
//! is read every [`fallback`] (2 s) and a change nobody announced nudges too:
//! that covers a connection that dies silently and a server where LISTEN
//! cannot be set up at all (said at info once per outage). An idle listener
//! waits on its socket and that one slow timer: no busy loop.
//!
//! It reads no events and decides nothing: the followers do. The database
//! side (the channel, a listening session, the log's end) is
//! `store::postgres::notify`'s, as sqlx lives only in the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::fallback;
use crate::store::postgres::notify::{
    CHANNEL, Listener, PgPool, Received, Subscription, last_event_seq,
};

/// The first pause before opening a lost connection again; it doubles on
/// each failure up to [`RETRY_MAX`]. Why not zero: a server that accepts a
/// connection and drops it at once must not be hammered.
const RETRY_FIRST: Duration = Duration::from_millis(50);

/// The longest pause between attempts. Writes by other processes are seen
/// within [`fallback`] meanwhile.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Nudge `nudge` whenever any process commits events to the PostgreSQL
/// database that `pool` connects to, until `cancel`. The listening
/// connection is its own (made with `pool`'s options), so it never holds
/// one of `pool`'s; `pool` serves the fallback poll, every [`fallback`].
pub async fn listen(pool: PgPool, nudge: Arc<Notify>, cancel: CancellationToken) {
    listen_every(pool, nudge, cancel, fallback()).await;
}

/// [`listen`] with the fallback poll every `every` instead of
/// [`fallback`]: for tests and benchmarks, which must tell a notification
/// from the poll without a process of their own.
pub async fn listen_every(
    pool: PgPool,
    nudge: Arc<Notify>,
    cancel: CancellationToken,
    every: Duration,
) {
    let start = tokio::select! {
        _ = cancel.cancelled() => return,
        seq = last_event_seq(&pool) => seq.unwrap_or(0),
    };
    // The newest seq announced or polled: shared by the two halves below,
    // which run in this one task (an atomic only because a `Cell` would
    // make the task's future not `Send`).
    let seen = AtomicI64::new(start);
    let listener = Listener::new(&pool);
    // Why join, not one select loop: a session's receive is only ever
    // dropped at shutdown, never half-way through a message by the poll.
    tokio::join!(
        notifications(&listener, &nudge, &seen, &cancel, every),
        poll(&pool, &nudge, &seen, &cancel, every),
    );
    listener.close().await;
}

/// LISTEN, nudge on every notification, open the connection again when it
/// drops; until `cancel`.
async fn notifications(
    listener: &Listener,
    nudge: &Notify,
    seen: &AtomicI64,
    cancel: &CancellationToken,
    every: Duration,
) {
    let mut pause = RETRY_FIRST;
    // Whether "cannot listen" was said at info for the current outage.
    let mut said = false;
    loop {
        let opened = tokio::select! {
            _ = cancel.cancelled() => return,
            r = listener.subscribe() => r,
        };
        match opened {
            Ok(session) => {
                if said {
                    tracing::info!("listening for writes by other processes again");
                    said = false;
                }
                tracing::debug!(channel = CHANNEL, "listening for writes by other processes");
                // LISTEN is in place: anything committed from now on is
                // announced. What was committed before (while the
                // connection was down) was not: the followers re-read now.
                nudge.notify_waiters();
                let since = Instant::now();
                let Some(why) = follow(session, nudge, seen, cancel).await else {
                    return;
                };
                tracing::debug!(reason = %why, "lost the connection listening for writes by other processes; reconnecting");
                // A session that lasted is not part of a failing streak.
                if since.elapsed() >= RETRY_MAX {
                    pause = RETRY_FIRST;
                }
            }
            Err(e) if !said => {
                tracing::info!(
                    reason = %e,
                    "cannot listen for writes by other processes: they are seen within {every:?} until it works"
                );
                said = true;
            }
            Err(e) => {
                tracing::debug!(reason = %e, "still cannot listen for writes by other processes");
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(RETRY_MAX);
    }
}

/// Nudge on each notification of `session` until it is lost (why, in
/// words) or `cancel` (None).
async fn follow(
    mut session: Subscription,
    nudge: &Notify,
    seen: &AtomicI64,
    cancel: &CancellationToken,
) -> Option<String> {
    loop {
        // Why select: shutdown must not wait for a notification.
        let got = tokio::select! {
            _ = cancel.cancelled() => return None,
            got = session.next() => got,
        };
        match got {
            Received::Notified(seq) => {
                if let Some(seq) = seq {
                    seen.fetch_max(seq, Ordering::Relaxed);
                }
                nudge.notify_waiters();
            }
            Received::Lost(why) => return Some(why),
        }
    }
}

/// Every `every`, read the log's newest seq and nudge when it moved past
/// what was announced or seen; until `cancel`.
async fn poll(
    pool: &PgPool,
    nudge: &Notify,
    seen: &AtomicI64,
    cancel: &CancellationToken,
    every: Duration,
) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        match last_event_seq(pool).await {
            // `!=`, not `>`: a database restored from a backup may go back.
            Ok(seq) if seq != seen.load(Ordering::Relaxed) => {
                seen.store(seq, Ordering::Relaxed);
                nudge.notify_waiters();
            }
            Ok(_) => {}
            // The followers read (and report) the log themselves.
            Err(e) => tracing::debug!(error = %e, "cannot read the event log's end"),
        }
    }
}
