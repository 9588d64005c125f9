//! What `handoff wait` and `resume` hand a session: unseen replies on its
//! questions, responses on its boards' rows, decisions on its actions and
//! inbound wakes.
//!
//! Replies and row responses carry their own delivery marks (the questions
//! and boards stores stamp only the exact response read). Action decisions
//! and wakes are events; the session's `last_wait_seq` cursor says how far
//! in the log they were picked up, and it only moves forward by
//! compare-and-set, so two waiters on one session never both claim the same
//! event. This module reads and marks; it does not block or print (the CLI
//! polls it).

use std::sync::Arc;

use serde::Serialize;

use super::postgres;
use crate::store::boards::PendingRow;
use crate::store::engine::Stmt;
use crate::store::questions::Question;
use crate::store::writer::one_call;
use crate::store::{Event, Result, Store};

pub use crate::store::events::DECISION_EVENTS;

/// One thing that arrived for a session.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Arrival {
    /// A reply (answer, clarify or decline) on one of its questions.
    Reply {
        /// The question with its reply.
        question: Box<Question>,
    },
    /// An annotation or handled mark on a row of one of its boards.
    Row {
        /// The row and its board.
        row: Box<PendingRow>,
    },
    /// A decision or result on one of its actions (`action.approved`, …;
    /// not the approval of an action its proposer runs with `--exec`,
    /// whose outcome is the one arrival).
    Decision {
        /// The event that ended the wait (a decision or an inbound wake).
        event: Event,
    },
    /// An inbound wake (`session.wake`) from CI, GitHub or a script.
    Wake {
        /// The event; its payload carries the webhook body.
        event: Event,
    },
}

impl Arrival {
    fn from_event(event: Event) -> Arrival {
        if event.kind == "session.wake" {
            Arrival::Wake { event }
        } else {
            Arrival::Decision { event }
        }
    }
}

impl Store {
    /// Whether anything ever happened under session `session_id`: it was
    /// registered, or some item or wake carries it (one indexed read each).
    pub async fn session_known(&self, session_id: &str) -> Result<bool> {
        self.first(
            Stmt::new(
                "SELECT EXISTS(SELECT 1 FROM agent_sessions WHERE session_id = $1)
                     OR EXISTS(SELECT 1 FROM events WHERE session = $1)",
            )
            .text(session_id),
        )
        .await
    }

    /// The newest event `seq` that concerns `session_id` (0 if none): a
    /// cheap change detector for pollers — nothing new can have arrived for
    /// the session while it stays the same.
    pub async fn session_event_mark(&self, session_id: &str) -> Result<i64> {
        let seq: Option<i64> = self
            .first(Stmt::new("SELECT MAX(seq) FROM events WHERE session = $1").text(session_id))
            .await?;
        Ok(seq.unwrap_or(0))
    }

    /// The session's wait cursor and the decision and wake events after it,
    /// oldest first, of the session's own project only (see
    /// `home.rs`). A read: nothing is marked.
    pub async fn unclaimed_events(&self, session_id: &str) -> Result<(i64, Vec<Event>)> {
        let project = self.delivery_project(session_id).await?;
        let project = project.as_deref();
        let cursor: i64 = self
            .first(
                Stmt::new(
                    "SELECT COALESCE((SELECT last_wait_seq FROM agent_sessions
                                       WHERE session_id = $1), 0)",
                )
                .text(session_id),
            )
            .await?;
        // Why reading after the cursor is safe on PostgreSQL too: seqs
        // become visible in commit order, so no lower one can appear later.
        // Why an approval of an `--exec` action is left out: its proposer
        // runs it, so the agent hears once, of the outcome (executed,
        // failed, unknown), not of the approval and then of the outcome.
        let after = Stmt::new(
            "SELECT * FROM events WHERE session = $1 AND seq > $2
               AND type IN ('session.wake', 'action.approved', 'action.rejected', 'action.expired',
                            'action.executed', 'action.failed', 'action.unknown')
               AND NOT (type = 'action.approved' AND EXISTS (
                     SELECT 1 FROM actions a WHERE a.id = events.entity_id AND a.exec IS NOT NULL))
               AND (CAST($3 AS TEXT) IS NULL OR project = $3)
             ORDER BY seq",
        )
        .text(session_id)
        .int(cursor)
        .text(project);
        Ok((cursor, self.rows(after).await?))
    }

    /// Move the session's wait cursor from `from` to `to` (creating a bare
    /// session row if it was never registered). False when another waiter
    /// moved it first: the events between belong to that waiter.
    pub async fn advance_wait_cursor(
        &self,
        session_id: &str,
        from: i64,
        to: i64,
        by: &str,
    ) -> Result<bool> {
        let id = super::check_id(session_id)?;
        let input = Arc::new((id.to_string(), by.to_string()));
        self.write_split(
            input,
            move |turn, input, now| {
            Box::pin(async move {
                let (id, by) = &*input;
                // Why guarded on the old value: this is the claim. Two
                // waiters that read the same cursor race here and exactly
                // one moves it; the loser hands nothing out, so each event
                // is picked up once. The `session.picked_up` event rides
                // in the same call, written only when the cursor moved.
                let sql = one_call(
                    "INSERT INTO agent_sessions (session_id, created_at, updated_at, last_wait_seq)
                     VALUES (?1, ?2, ?2, ?4)
                     ON CONFLICT(session_id) DO UPDATE SET last_wait_seq = excluded.last_wait_seq
                     WHERE agent_sessions.last_wait_seq = ?3
                     RETURNING session_id;
                     INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
                     SELECT ?2, 'session.picked_up', 'session', ?1, ?5, 'agent', project, ?1,
                            json_object('from', ?3, 'to', ?4)
                     FROM agent_sessions WHERE session_id = ?1 AND changes() = 1",
                );
                let q = sqlx::query(sql)
                    .bind(id)
                    .bind(now)
                    .bind(from)
                    .bind(to)
                    .bind(by);
                let rows = turn.savepoint_call(q).await?;
                Ok(!rows.is_empty())
            })
            },
            move |conn, input, now| {
            postgres::advance_cursor(conn, input, (from, to), now)
        })
        .await
    }

    /// Claim everything that arrived for `session_id` and was not picked up
    /// yet: unseen question replies (marked seen, exact reply only), new row
    /// responses (marked delivered), and decision/wake events after the
    /// cursor (claimed by moving it). Returns only what this call claimed;
    /// empty when nothing is waiting or another waiter won. On PostgreSQL
    /// it runs once board rows do (it reads and marks the session's rows);
    /// until then it is refused as boards are.
    pub async fn claim_arrivals(&self, session_id: &str, by: &str) -> Result<Vec<Arrival>> {
        // Only the session's own project's items: an item of another
        // project that names this id (written before sessions were
        // claimed) is never handed to it.
        let project = self.delivery_project(session_id).await?;
        let project = project.as_deref();
        let mut out = Vec::new();
        for d in self.pending(project, Some(session_id), false, by).await? {
            if d.new {
                out.push(Arrival::Reply {
                    question: Box::new(d.question),
                });
            }
        }
        let rows: Vec<PendingRow> = self
            .pending_rows_peek(project, Some(session_id))
            .await?
            .into_iter()
            .filter(|r| r.new)
            .collect();
        if !rows.is_empty() {
            let current = self.mark_rows_delivered(&rows, by).await?;
            for (r, ok) in rows.into_iter().zip(current) {
                if ok {
                    out.push(Arrival::Row { row: Box::new(r) });
                }
            }
        }
        let (cursor, evs) = self.unclaimed_events(session_id).await?;
        if let Some(last) = evs.last().map(|e| e.seq)
            && self
                .advance_wait_cursor(session_id, cursor, last, by)
                .await?
        {
            out.extend(evs.into_iter().map(Arrival::from_event));
        }
        Ok(out)
    }
}
