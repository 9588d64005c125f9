//! Inbound wakes: an outside system (CI, GitHub, a script) wakes a session.
//!
//! [`Store::record_wake`] records one delivery as a `session.wake` event,
//! deduplicated by `(source, delivery_id)` through a UNIQUE index, so a
//! replayed delivery is recognised and never recorded twice. `handoff wait`
//! and `resume` pick wakes up from the event log. This module does not
//! authenticate requests (the HTTP endpoint does) nor run wake targets.

use serde::Serialize;
use serde_json::{Value, json};

use crate::store::Channel;
use crate::store::{NewEvent, Result, Store, events, new_id};

/// What [`Store::record_wake`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WakeRecorded {
    /// False when this `(source, delivery_id)` was recorded before: nothing
    /// was written and `seq` is the event of the first delivery.
    pub new: bool,
    /// The `seq` of the `session.wake` event.
    pub seq: i64,
}

impl Store {
    /// Record an inbound wake for `session_id` from `source` as a
    /// `session.wake` event whose payload is
    /// `{"source", "delivery_id", "body": payload}`. A `delivery_id` seen
    /// before from the same `source` is a no-op returning the first event's
    /// seq (`new: false`); an empty `delivery_id` gets a fresh one (no dedupe).
    /// The session need not be registered: wakes are kept for a session that
    /// registers or waits later.
    pub async fn record_wake(
        &self,
        session_id: &str,
        source: &str,
        delivery_id: &str,
        payload: Value,
    ) -> Result<WakeRecorded> {
        let session_id = super::check_id(session_id)?;
        let delivery_id = match delivery_id.trim() {
            "" => new_id(),
            d => d.to_string(),
        };
        self.retry(|| self.record_wake_once(session_id, source, &delivery_id, &payload))
            .await
    }

    async fn record_wake_once(
        &self,
        session_id: &str,
        source: &str,
        delivery_id: &str,
        payload: &Value,
    ) -> Result<WakeRecorded> {
        let now = self.now();
        let mut tx = self.begin_write().await?;
        // Why ON CONFLICT DO NOTHING: the UNIQUE(source, delivery_id) index
        // decides whether this delivery is new; a replay inserts nothing.
        let inserted = sqlx::query(
            "INSERT INTO session_wakes (source, delivery_id, session_id, at) VALUES (?, ?, ?, ?)
             ON CONFLICT(source, delivery_id) DO NOTHING",
        )
        .bind(source)
        .bind(delivery_id)
        .bind(session_id)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 0 {
            let seq: i64 = sqlx::query_scalar(
                "SELECT event_seq FROM session_wakes WHERE source = ? AND delivery_id = ?",
            )
            .bind(source)
            .bind(delivery_id)
            .fetch_one(&mut *tx)
            .await?;
            return Ok(WakeRecorded { new: false, seq });
        }
        let project: String = sqlx::query_scalar(
            "SELECT COALESCE((SELECT project FROM agent_sessions WHERE session_id = ?), '')",
        )
        .bind(session_id)
        .fetch_one(&mut *tx)
        .await?;
        let seq = events::append(
            &mut tx,
            now,
            &NewEvent {
                kind: "session.wake",
                entity_kind: "session",
                entity_id: session_id,
                actor: source,
                channel: Channel::Webhook,
                project: &project,
                session: session_id,
                payload: json!({"source": source, "delivery_id": delivery_id, "body": payload}),
            },
        )
        .await?;
        // Why unguarded: the row was inserted by this very transaction.
        sqlx::query("UPDATE session_wakes SET event_seq = ? WHERE source = ? AND delivery_id = ?")
            .bind(seq)
            .bind(source)
            .bind(delivery_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(WakeRecorded { new: true, seq })
    }
}
