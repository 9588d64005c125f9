//! A session belongs to one project. A question, board or action that names
//! a session is filed in the session's project: the write claims the
//! session for its project first ([`Store::claim_session`]), and a session
//! registered in another project refuses it. Without this, a second
//! project's agent could register (or name) the same id and be handed the
//! first project's answers by `wait` and `resume`, which deliver by session.
//!
//! The claim is one guarded upsert, so two projects claiming one unseen id
//! at once cannot both win: the primary key decides, the loser reads the
//! winner's project and is refused. It runs before the item's own write, in
//! a call of its own and outside the caller's request id (it is idempotent
//! by the session id, and made only when needed: see `request::unscoped`).
//! A session registered with no project (`''`) is not yet anyone's: the
//! first item of a named project claims it.

use std::sync::Arc;

use crate::store::postgres::sessions as pg;
use crate::store::writer::one_call;
use crate::store::{Engine, Error, Result, Store, request};

/// What a claim found: the project the session is registered in now,
/// `None` for a session that is not registered.
pub(crate) fn decide(session: &str, given: &str, stored: Option<&str>) -> Decision {
    match stored {
        None => Decision::Write,
        Some(p) if p == given || given.is_empty() => Decision::Filed(p.to_string()),
        Some("") => Decision::Write,
        Some(p) => Decision::Refused(Error::SessionElsewhere {
            session: session.to_string(),
            project: p.to_string(),
        }),
    }
}

/// The outcome of [`decide`].
#[derive(Debug)]
pub(crate) enum Decision {
    /// The item is filed in this project (the session's).
    Filed(String),
    /// The session must be claimed by a write first.
    Write,
    /// The session is another project's.
    Refused(Error),
}

impl Store {
    /// Claim session `session` for `project` before an item naming it is
    /// written, and return the project the item is filed in: `project`, or
    /// the session's own when `project` is empty. An empty `session` names
    /// none (`project` as given). A session not yet registered is registered
    /// here, bare (`agent`, `project`, no wake target), with its
    /// `session.registered` event; one registered without a project takes
    /// `project`. A session of another project is
    /// [`Error::SessionElsewhere`], and nothing is written.
    pub async fn claim_session(&self, session: &str, project: &str, agent: &str) -> Result<String> {
        if session.is_empty() {
            return Ok(project.to_string());
        }
        let id = super::check_id(session)?;
        let stored = self.session_project(id).await?;
        match decide(id, project, stored.as_deref()) {
            Decision::Filed(p) => return Ok(p),
            Decision::Refused(e) => return Err(e),
            Decision::Write => {}
        }
        let input = Arc::new((id.to_string(), agent.to_string(), project.to_string()));
        request::unscoped(self.claim_write(input)).await?;
        // Whoever won the row (this write or a racing one), it now says.
        let stored = self.session_project(id).await?;
        match decide(id, project, stored.as_deref()) {
            Decision::Filed(p) => Ok(p),
            Decision::Refused(e) => Err(e),
            Decision::Write => Err(Error::Corrupt(format!(
                "session `{id}` could not be claimed for project `{project}`"
            ))),
        }
    }

    /// The project session `id` is registered in, if it is.
    pub(super) async fn session_project(&self, id: &str) -> Result<Option<String>> {
        if let Engine::Postgres(p) = self.engine() {
            return pg::project_of(p, id).await;
        }
        Ok(
            sqlx::query_scalar("SELECT project FROM agent_sessions WHERE session_id = ?")
                .bind(id)
                .fetch_optional(self.pool()?)
                .await?,
        )
    }

    /// The project whose items session `id` is handed by `wait` and
    /// `resume`: its own, once it has one. `None` (every item naming it)
    /// for a session never registered or registered without a project,
    /// which only an unscoped caller reaches.
    pub(super) async fn delivery_project(&self, id: &str) -> Result<Option<String>> {
        Ok(self.session_project(id).await?.filter(|p| !p.is_empty()))
    }

    /// The claim's write: insert the bare session, or give an unclaimed
    /// one (no project) `project`; anything else is left as it is.
    async fn claim_write(&self, input: Arc<(String, String, String)>) -> Result<bool> {
        if let Engine::Postgres(p) = self.engine() {
            return pg::claim(self, p, input).await;
        }
        self.write_retried(input, move |turn, input, now| {
            Box::pin(async move {
                let (id, agent, project) = &*input;
                // Why guarded: this is the decision between two projects
                // naming one new id. Only a missing row or one without a
                // project is taken; the event rides in the same call,
                // written only when the row changed.
                let sql = one_call(
                    "INSERT INTO agent_sessions (session_id, agent, project, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?4)
                     ON CONFLICT(session_id) DO UPDATE SET project = excluded.project,
                        updated_at = excluded.updated_at
                     WHERE agent_sessions.project = '' AND excluded.project <> ''
                     RETURNING session_id;
                     INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
                     SELECT ?4, 'session.registered', 'session', ?1, ?2, 'agent', project, ?1,
                            json_object('wake', json_extract(wake_target, '$.type'))
                     FROM agent_sessions WHERE session_id = ?1 AND changes() = 1",
                );
                let q = sqlx::query(sql)
                    .bind(id)
                    .bind(agent)
                    .bind(project)
                    .bind(now);
                Ok(!turn.savepoint_call(q).await?.is_empty())
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_files_items_in_its_own_project_only() {
        let filed = |given, stored| match decide("s1", given, stored) {
            Decision::Filed(p) => Some(p),
            _ => None,
        };
        assert_eq!(filed("a", Some("a")).as_deref(), Some("a"));
        assert_eq!(filed("", Some("a")).as_deref(), Some("a"));
        assert_eq!(filed("", Some("")).as_deref(), Some(""));
        assert!(matches!(decide("s1", "a", None), Decision::Write));
        assert!(matches!(decide("s1", "", None), Decision::Write));
        assert!(matches!(decide("s1", "a", Some("")), Decision::Write));
        match decide("s1", "b", Some("a")) {
            Decision::Refused(Error::SessionElsewhere { session, project }) => {
                assert_eq!((session.as_str(), project.as_str()), ("s1", "a"));
            }
            other => panic!("{other:?}"),
        }
    }
}
