//! A session's life after registration: listing, checkpoints (CAS on
//! `revision`) and ending. Registration itself is in the parent module.

use std::sync::Arc;

use serde::Serialize;

use super::{Session, postgres, session_from};
use crate::store::engine::Stmt;
use crate::store::writer::{Turn, one_call};
use crate::store::{Error, Result, Store};

/// The largest checkpoint blob accepted (1 MiB).
pub const MAX_STATE_BYTES: usize = 1024 * 1024;

/// What [`Store::checkpoint`] did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Checkpointed {
    /// Stored; the session now carries `revision + 1`.
    Saved {
        /// The session after the write.
        session: Session,
    },
    /// Refused: the session is at another revision (someone checkpointed in
    /// between). Nothing was written; re-read and retry with `current`.
    Stale {
        /// The revision you passed.
        expected: i64,
        /// The session's revision now.
        current: i64,
    },
    /// Refused: the session was ended (register it again to reopen it).
    Ended {
        /// The session as it stands.
        session: Session,
    },
    /// No such session.
    NotFound,
}

/// What [`Store::end_session`] did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Ended {
    /// Ended now.
    Ended {
        /// The session after the write.
        session: Session,
    },
    /// It was already ended; nothing changed.
    AlreadyEnded {
        /// The session as it stands.
        session: Session,
    },
    /// No such session.
    NotFound,
}

impl Store {
    /// The full id of a registered session: `id` itself if registered, else
    /// the one session whose id ends with `id` (at least 4 characters).
    /// `None` when nothing matches; an ambiguous suffix is an error. With
    /// `project`, only that project's sessions are looked at: another
    /// project's ids neither match nor make a suffix ambiguous, so a
    /// project-scoped caller learns nothing of them.
    pub async fn resolve_session_id(
        &self,
        id: &str,
        project: Option<&str>,
    ) -> Result<Option<String>> {
        let id = super::check_id(id)?;
        let ids: Vec<(String,)> = self
            .rows(
                Stmt::spelled(
                    "WITH mine AS (SELECT session_id FROM agent_sessions
                                   WHERE CAST($2 AS TEXT) IS NULL OR project = $2)
                     SELECT session_id FROM mine
                     WHERE session_id = $1
                        OR (length($1) >= 4 AND substr(session_id, -length($1)) = $1
                            AND NOT EXISTS (SELECT 1 FROM mine WHERE session_id = $1))
                     LIMIT 2",
                    "WITH mine AS (SELECT session_id FROM agent_sessions
                                   WHERE CAST($2 AS TEXT) IS NULL OR project = $2)
                     SELECT session_id FROM mine
                     WHERE session_id = $1
                        OR (length($1) >= 4 AND right(session_id, length($1)) = $1
                            AND NOT EXISTS (SELECT 1 FROM mine WHERE session_id = $1))
                     LIMIT 2",
                )
                .text(id)
                .text(project),
            )
            .await?;
        match ids.as_slice() {
            [] => Ok(None),
            [(one,)] => Ok(Some(one.clone())),
            _ => Err(Error::Invalid(format!(
                "`{id}` matches several sessions; give the full session id"
            ))),
        }
    }

    /// Sessions, most recently changed first, optionally only those with
    /// `status` and/or of `project`.
    pub async fn list_sessions(
        &self,
        status: Option<&str>,
        project: Option<&str>,
    ) -> Result<Vec<Session>> {
        // Ties by id in byte order on both engines.
        self.rows(
            Stmt::spelled(
                "SELECT * FROM agent_sessions
                 WHERE (CAST($1 AS TEXT) IS NULL OR status = $1)
                   AND (CAST($2 AS TEXT) IS NULL OR project = $2)
                 ORDER BY updated_at DESC, session_id",
                "SELECT * FROM agent_sessions
                 WHERE (CAST($1 AS TEXT) IS NULL OR status = $1)
                   AND (CAST($2 AS TEXT) IS NULL OR project = $2)
                 ORDER BY updated_at DESC, session_id COLLATE \"C\"",
            )
            .text(status)
            .text(project),
        )
        .await
    }

    /// Store `state` as the session's checkpoint if its revision is still
    /// `expected_revision`, bumping the revision. A stale revision is a typed
    /// refusal carrying the current one; nothing is written.
    pub async fn checkpoint(
        &self,
        session_id: &str,
        expected_revision: i64,
        state: &str,
    ) -> Result<Checkpointed> {
        if state.len() > MAX_STATE_BYTES {
            return Err(Error::Invalid(format!(
                "the state is {} bytes; a checkpoint holds at most {MAX_STATE_BYTES} (1 MiB)",
                state.len()
            )));
        }
        let id = super::check_id(session_id)?;
        let input = Arc::new((id.to_string(), state.to_string()));
        self.write_split(
            input,
            move |turn, input, now| {
                Box::pin(async move {
                let (id, state) = &*input;
                // Why guarded on revision: two writers holding the same
                // revision (a resumed agent and a stale twin) must not
                // both win; the first bumps it and the second is
                // refused with the current one. The event rides in the
                // same call, written only when the UPDATE changed a row.
                let sql = one_call(
                    "UPDATE agent_sessions SET state_blob = ?1, revision = revision + 1, updated_at = ?2
                     WHERE session_id = ?3 AND revision = ?4 AND status <> 'ended'
                     RETURNING *;
                     INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
                     SELECT ?2, 'session.checkpointed', 'session', ?3, agent, 'agent', project, ?3,
                            json_object('bytes', ?5, 'revision', revision)
                     FROM agent_sessions WHERE session_id = ?3 AND changes() = 1",
                );
                let q = sqlx::query(sql)
                    .bind(state)
                    .bind(now)
                    .bind(id)
                    .bind(expected_revision)
                    .bind(state.len() as i64);
                let rows = turn.savepoint_call(q).await?;
                if let Some(row) = rows.first() {
                    return Ok(Checkpointed::Saved { session: session_from(row)? });
                }
                // Refused: read in the same turn only to say why.
                Ok(match current(turn, id).await? {
                    None => Checkpointed::NotFound,
                    Some(s) if s.status == "ended" => Checkpointed::Ended { session: s },
                    Some(s) => Checkpointed::Stale {
                        expected: expected_revision,
                        current: s.revision,
                    },
                })
                })
            },
            move |conn, input, now| {
            postgres::checkpoint(conn, input, expected_revision, now)
        })
        .await
    }

    /// Mark the session ended. Its checkpoint, ledger and history stay;
    /// registering it again reopens it.
    pub async fn end_session(&self, session_id: &str) -> Result<Ended> {
        let id = super::check_id(session_id)?;
        let input = Arc::new(id.to_string());
        self.write_split(
            input,
            move |turn, id, now| {
                Box::pin(async move {
                    // Why guarded: ending twice is a no-op that says so, not
                    // a second `session.ended` event (written in the same
                    // call, only when the UPDATE changed the row).
                    let sql = one_call(
                        "UPDATE agent_sessions SET status = 'ended', ended_at = ?1, updated_at = ?1
                         WHERE session_id = ?2 AND status <> 'ended' RETURNING *;
                         INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
                         SELECT ?1, 'session.ended', 'session', ?2, agent, 'agent', project, ?2, '{}'
                         FROM agent_sessions WHERE session_id = ?2 AND changes() = 1",
                    );
                    let q = sqlx::query(sql).bind(now).bind(&*id);
                    let rows = turn.savepoint_call(q).await?;
                    if let Some(row) = rows.first() {
                        return Ok(Ended::Ended { session: session_from(row)? });
                    }
                    // Refused: read in the same turn only to say why.
                    Ok(match current(turn, &id).await? {
                        None => Ended::NotFound,
                        Some(session) => Ended::AlreadyEnded { session },
                    })
                })
            },
            postgres::end).await
    }
}

/// The session `id` as it stands, read in the write turn that was refused.
async fn current(turn: &mut Turn, id: &str) -> Result<Option<Session>> {
    let row = sqlx::query("SELECT * FROM agent_sessions WHERE session_id = ?")
        .bind(id)
        .fetch_optional(turn.conn())
        .await?;
    row.as_ref().map(session_from).transpose()
}
