//! Inbound wakes: an outside system (CI, GitHub, a script) wakes a session.
//!
//! [`Store::record_wake`] records one delivery as a `session.wake` event,
//! deduplicated by `(source, delivery_id)` through a UNIQUE index, so a
//! replayed delivery is recognised and never recorded twice. `handoff wait`
//! and `resume` pick wakes up from the event log. This module does not
//! authenticate requests (the HTTP endpoint does) nor run wake targets.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use std::sync::Arc;

use sqlx::Row;

use super::postgres;
use crate::store::writer::one_call;
use crate::store::{Result, Store, events, new_id};

/// What [`Store::record_wake`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
        let payload = json!({"source": source, "delivery_id": delivery_id, "body": payload});
        events::check_depth(&payload)?;
        let input = Arc::new((
            session_id.to_string(),
            source.to_string(),
            delivery_id,
            payload.to_string(),
        ));
        self.write_split(
            input,
            move |turn, input, now| {
            Box::pin(async move {
                let (session, source, delivery, payload) = &*input;
                // One call, all or nothing. Why ON CONFLICT DO NOTHING: the
                // UNIQUE(source, delivery_id) index decides whether this
                // delivery is new; a replay inserts nothing, so no event
                // (`changes()` right after it) and no seq to stamp (the
                // stamp wants the row's 0), and the read-back gives the
                // first delivery's seq. `changes()` there is the stamp's:
                // 1 only for a new delivery.
                let sql = one_call(
                    "INSERT INTO session_wakes (source, delivery_id, session_id, at) VALUES (?1, ?2, ?3, ?4)
                       ON CONFLICT(source, delivery_id) DO NOTHING;
                     INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
                       SELECT ?4, 'session.wake', 'session', ?3, ?1, 'webhook',
                              COALESCE((SELECT project FROM agent_sessions WHERE session_id = ?3), ''), ?3, ?5
                       WHERE changes() = 1;
                     UPDATE session_wakes SET event_seq = last_insert_rowid()
                       WHERE source = ?1 AND delivery_id = ?2 AND event_seq = 0;
                     SELECT event_seq, changes() = 1 AS new FROM session_wakes
                       WHERE source = ?1 AND delivery_id = ?2",
                );
                let q = sqlx::query(sql)
                    .bind(source)
                    .bind(delivery)
                    .bind(session)
                    .bind(now)
                    .bind(payload);
                let rows = turn.savepoint_call(q).await?;
                let row = rows.last().ok_or_else(|| {
                    crate::store::Error::Corrupt("a recorded wake vanished".into())
                })?;
                Ok(WakeRecorded {
                    new: row.try_get("new")?,
                    seq: row.try_get("event_seq")?,
                })
            })
            },
            postgres::record_wake).await
    }
}
