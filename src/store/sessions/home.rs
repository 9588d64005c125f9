//! A session belongs to one project: its **home**. Without this, a second
//! project's agent could register (or name) another project's session id
//! and be handed that project's answers by `wait` and `resume`, which
//! deliver by session.
//!
//! A session's home is the project it is registered in, or — registered
//! without a project, or not registered at all — the project of the first
//! item or event that named it with one ([`HOME`]). It never changes once
//! set. A write that names a session of another home is refused
//! ([`Store::session_home`]); one that names no project is filed in the
//! session's home. `wait` and `resume` hand a session only its home's items
//! (`wait.rs`, `resume.rs`), so even two first writes racing from two
//! projects (both read "no home yet") cannot carry one project's items to
//! the other's agent: the earlier event decides the home, and the later
//! project's items are never delivered through the session.
//!
//! The check is a read (one indexed statement) before the write, not a
//! second write. A registered home is remembered by the [`Store`] handle
//! (it cannot change), so a registered session's writes cost no read and a
//! winning write stays one call; registration itself decides in its own
//! statement.

use crate::store::engine::Stmt;
use crate::store::{Error, Result, Store};

/// The home of session `$1`: its registered project (first column), and
/// the project of the earliest event naming it with one (second), each
/// `''` for none. The same text on both engines. `session <> ''` is what
/// lets the partial `events_session` serve the second read: without it
/// SQLite cannot tell the index holds every row the read wants, and
/// scans the log.
const HOME: &str = "SELECT
        COALESCE((SELECT project FROM agent_sessions WHERE session_id = $1 AND project <> ''), ''),
        COALESCE((SELECT project FROM events
                  WHERE session = $1 AND session <> '' AND project <> ''
                  ORDER BY seq LIMIT 1), '')";

/// Where a write naming a session with home `home` (`''`: none yet) and
/// project `given` is filed, or why it is refused.
pub(crate) fn file_in(session: &str, given: &str, home: &str) -> Result<String> {
    if home.is_empty() || home == given {
        return Ok(given.to_string());
    }
    if given.is_empty() {
        return Ok(home.to_string());
    }
    Err(Error::SessionElsewhere {
        session: session.to_string(),
        project: home.to_string(),
    })
}

impl Store {
    /// The project a write of `project` naming session `session` is filed
    /// in: `project`, or the session's home when `project` is empty. An
    /// empty `session` names none (`project` as given). A session whose
    /// home is another project is [`Error::SessionElsewhere`]: the caller
    /// writes nothing.
    pub async fn session_home(&self, session: &str, project: &str) -> Result<String> {
        let session = session.trim();
        if session.is_empty() {
            return Ok(project.to_string());
        }
        let home = self.home_of(session).await?;
        file_in(session, project, &home)
    }

    /// The home of `session` (`''`: none yet). A registered project is
    /// remembered (registration keeps it for good); one read from the
    /// events is not, since a registration racing the first items may
    /// still decide otherwise.
    pub(super) async fn home_of(&self, session: &str) -> Result<String> {
        if let Some(home) = self.homes.get(session) {
            return Ok(home.clone());
        }
        let (registered, named): (String, String) = self
            .row(Stmt::new(HOME).text(session))
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        if registered.is_empty() {
            return Ok(named);
        }
        self.known_home(session, &registered);
        Ok(registered)
    }

    /// Remember `project` as session `id`'s home, as a registration stored
    /// it (a registered project is the home, and never changes).
    pub(super) fn known_home(&self, id: &str, project: &str) {
        if !project.is_empty() {
            self.homes.insert(id.to_string(), project.to_string());
        }
    }

    /// The project whose items session `id` is handed by `wait` and
    /// `resume`: its home. `None` for a session with no home yet.
    pub(super) async fn delivery_project(&self, id: &str) -> Result<Option<String>> {
        Ok(Some(self.home_of(id).await?).filter(|p| !p.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_files_items_in_its_home_only() {
        let filed = |given, home| file_in("s1", given, home).ok();
        assert_eq!(filed("a", "a").as_deref(), Some("a"));
        assert_eq!(filed("", "a").as_deref(), Some("a"));
        assert_eq!(filed("a", "").as_deref(), Some("a"));
        assert_eq!(filed("", "").as_deref(), Some(""));
        match file_in("s1", "b", "a") {
            Err(Error::SessionElsewhere { session, project }) => {
                assert_eq!((session.as_str(), project.as_str()), ("s1", "a"));
            }
            other => panic!("{other:?}"),
        }
    }
}
