//! Noticing writes made by other processes on PostgreSQL (issue 12 item 4):
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
//! cannot be set up at all (said once, at info). An idle listener waits on
//! its socket and that one slow timer: no busy loop.
//!
//! It reads no events and decides nothing: the followers do.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::fallback;
use crate::store::postgres::notify::{CHANNEL, last_event_seq, notified_seq};

/// The first pause before opening a lost connection again; it doubles on
/// each failure up to [`RETRY_MAX`]. Why not zero: a server that accepts a
/// connection and drops it at once must not be hammered.
const RETRY_FIRST: Duration = Duration::from_millis(50);

/// The longest pause between attempts. Writes by other processes are seen
/// within [`fallback`] meanwhile.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// How long opening the connection and LISTENing may take before the
/// attempt counts as failed (a server that does not answer at all).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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
    // The newest seq announced or polled: shared by the two halves below,
    // which run in this one task (an atomic only because a `Cell` would
    // make the task's future not `Send`).
    let start = tokio::select! {
        _ = cancel.cancelled() => return,
        seq = last_event_seq(&pool) => seq.unwrap_or(0),
    };
    let seen = AtomicI64::new(start);
    let options = (*pool.connect_options()).clone();
    // Why join, not one select loop: PgListener's receive is only ever
    // dropped at shutdown, never half-way through a message by the poll.
    tokio::join!(
        notifications(options, &nudge, &seen, &cancel, every),
        poll(&pool, &nudge, &seen, &cancel, every),
    );
}

/// LISTEN, nudge on every notification, open the connection again when it
/// drops; until `cancel`.
async fn notifications(
    options: PgConnectOptions,
    nudge: &Notify,
    seen: &AtomicI64,
    cancel: &CancellationToken,
    every: Duration,
) {
    // One connection at a time, never reused once given back: a listening
    // session that ended is closed, and the next one starts fresh (no ping
    // of a dead socket, no stale notification buffer).
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .acquire_timeout(CONNECT_TIMEOUT)
        .idle_timeout(None)
        .max_lifetime(None)
        .test_before_acquire(false)
        .after_release(|_, _| Box::pin(async { Ok(false) }))
        .connect_lazy_with(options);
    let mut pause = RETRY_FIRST;
    // Whether "cannot listen" was said at info for the current outage.
    let mut said = false;
    'sessions: loop {
        let opened = tokio::select! {
            _ = cancel.cancelled() => break,
            r = subscribe(&pool) => r,
        };
        match opened {
            Ok(mut listener) => {
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
                let why = loop {
                    // Why select: shutdown must not wait for a notification.
                    let got = tokio::select! {
                        _ = cancel.cancelled() => break 'sessions,
                        got = listener.try_recv() => got,
                    };
                    match got {
                        Ok(Some(n)) => {
                            if let Some(seq) = notified_seq(n.payload()) {
                                seen.fetch_max(seq, Ordering::Relaxed);
                            }
                            nudge.notify_waiters();
                        }
                        Ok(None) => break "the connection was closed".to_string(),
                        Err(e) => break e.to_string(),
                    }
                };
                drop(listener);
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
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(RETRY_MAX);
    }
    // Say goodbye to the server (the session ends now, not at its next
    // write to a dead socket); bounded, as shutdown must not hang on it.
    let _ = tokio::time::timeout(Duration::from_secs(1), pool.close()).await;
}

/// A new listening session on `pool`'s one connection.
async fn subscribe(pool: &PgPool) -> Result<PgListener, String> {
    let open = async {
        let mut listener = PgListener::connect_with(pool).await?;
        // A lost connection is ours to open again (after a pause, then a
        // nudge), not the library's on the next receive.
        listener.eager_reconnect(false);
        listener.ignore_pool_close_event(true);
        listener.listen(CHANNEL).await?;
        Ok::<_, sqlx::Error>(listener)
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, open).await {
        Ok(Ok(listener)) => Ok(listener),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "the server did not answer within {CONNECT_TIMEOUT:?}"
        )),
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
