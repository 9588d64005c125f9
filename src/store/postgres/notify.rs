//! What the cross-process wake-ups on PostgreSQL need from the database
//! (issue 12 item 4): the channel the `events_notify` trigger
//! (migrations/postgres/…530_notify.sql) notifies on, what its payload
//! means, and the newest seq, read by the listener's fallback poll.
//!
//! It neither listens nor nudges: `follow::listen` does, on its own
//! connection. These take a `&PgPool` so that the listener does not depend
//! on how [`super::super::Store`] holds its PostgreSQL connections.

use sqlx::postgres::PgPool;

use super::super::Result;

/// The channel every committed INSERT on `events` notifies.
pub const CHANNEL: &str = "handoff_events";

/// The seq a notification on [`CHANNEL`] announces: the highest seq its
/// INSERT statement appended. None for a payload the trigger never sends
/// (a NOTIFY by hand, or a future trigger that says something else): the
/// listener then just nudges.
pub fn notified_seq(payload: &str) -> Option<i64> {
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
