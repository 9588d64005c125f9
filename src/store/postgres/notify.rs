//! What the cross-process wake-ups on PostgreSQL need from the database
//! — the channel the `events_notify` trigger
//! (migrations/postgres/…530_notify.sql) notifies on, a listening session
//! on it ([`Listener`], [`Subscription`]), and the newest seq, read by the
//! fallback poll.
//!
//! It decides nothing: when to reconnect, how long to pause and whom to
//! nudge is `follow::listen`'s. It lives here because sqlx does.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};

use super::super::Result;

/// A pool of PostgreSQL connections, as the store holds one (sqlx's
/// `PgPool`): what the listener takes its server, credentials and TLS from.
pub type PgPool = sqlx::postgres::PgPool;

/// The channel every committed INSERT on `events` notifies.
pub const CHANNEL: &str = "handoff_events";

/// How long opening the connection and LISTENing may take before the
/// attempt counts as failed (a server that does not answer at all).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where listening sessions come from: at most one connection at a time,
/// to the server a store's pool connects to, never one of that pool's.
pub struct Listener {
    pool: PgPool,
}

/// One listening session: LISTEN is in place on its connection.
pub struct Subscription {
    listener: PgListener,
}

/// What a [`Subscription`] received.
#[derive(Debug, PartialEq)]
pub enum Received {
    /// A notification on [`CHANNEL`]: the seq it announces (the highest its
    /// INSERT appended), or None for a payload the trigger never sends.
    Notified(Option<i64>),
    /// The session is over (the connection closed or failed), in words:
    /// notifications are lost until a new one listens.
    Lost(String),
}

impl Listener {
    /// Sessions to the server `pool` connects to, with its options.
    pub fn new(pool: &PgPool) -> Listener {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(CONNECT_TIMEOUT)
            .idle_timeout(None)
            .max_lifetime(None)
            .test_before_acquire(false)
            // Never reused once given back: a session that ended is
            // closed, and the next one starts on a fresh connection (no
            // ping of a dead socket, no stale notification buffer).
            .after_release(|_, _| Box::pin(async { Ok(false) }))
            .connect_lazy_with((*pool.connect_options()).clone());
        Listener { pool }
    }

    /// A new session, LISTENing on [`CHANNEL`], or why not in one line.
    pub async fn subscribe(&self) -> std::result::Result<Subscription, String> {
        let open = async {
            let mut listener = PgListener::connect_with(&self.pool).await?;
            // A lost connection is the caller's to open again (after a
            // pause, then a nudge), not the library's on the next receive.
            listener.eager_reconnect(false);
            listener.ignore_pool_close_event(true);
            listener.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, open).await {
            Ok(Ok(listener)) => Ok(Subscription { listener }),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "the server did not answer within {CONNECT_TIMEOUT:?}"
            )),
        }
    }

    /// Close the connection of an ended session; bounded, as shutdown must
    /// not hang on a server that does not answer.
    pub async fn close(&self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.pool.close()).await;
    }
}

impl Subscription {
    /// The next notification, or the end of the session. Drop it
    /// half-way only to stop listening (at shutdown): a wait dropped
    /// mid-message is not promised to lose nothing.
    pub async fn next(&mut self) -> Received {
        match self.listener.try_recv().await {
            Ok(Some(n)) => Received::Notified(notified_seq(n.payload())),
            Ok(None) => Received::Lost("the connection was closed".into()),
            Err(e) => Received::Lost(e.to_string()),
        }
    }
}

/// The seq a notification's payload announces.
fn notified_seq(payload: &str) -> Option<i64> {
    payload.trim().parse().ok()
}

/// The newest seq in the event log, 0 when it is empty.
pub async fn last_event_seq(pool: &PgPool) -> Result<i64> {
    // max() on the primary key: one index probe, however long the log.
    Ok(
        sqlx::query_scalar("SELECT COALESCE(max(seq), 0)::BIGINT FROM events")
            .fetch_one(pool)
            .await?,
    )
}

#[cfg(test)]
mod tests {
    use super::notified_seq;

    #[test]
    fn payloads() {
        for (payload, seq) in [
            ("42", Some(42)),
            (" 7\n", Some(7)),
            ("9223372036854775807", Some(i64::MAX)),
            ("", None),
            ("x", None),
            ("1.5", None),
        ] {
            assert_eq!(notified_seq(payload), seq, "{payload:?}");
        }
    }
}
