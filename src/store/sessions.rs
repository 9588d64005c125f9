//! Agent sessions: who asked, and how to wake them.
//!
//! A session is registered by the agent (or its hook) with a client-chosen
//! id, an agent name, project, working directory and an optional
//! [`WakeTarget`]. Questions, rows and actions carry the session id; when a
//! human responds, the notify worker wakes that session's target. This
//! module records; it does not run targets. `fleet` reads every session
//! at a glance: what it is doing now, since when, and what it waits on.

use crate::store::cols::{Cols, rows_by};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::engine::Stmt;
use super::writer::{Turn, one_call};
use super::{Error, Result, Store};

mod fleet;
mod home;
pub(crate) mod ledger;
mod lifecycle;
mod postgres;
mod resume;
mod wait;
mod wake;

pub use fleet::{FleetDelivery, FleetItem, FleetSession, FleetState};
pub use ledger::{Begin, Complete, LedgerEntry, NewCall};
pub use lifecycle::{Checkpointed, Ended};
pub use resume::{DEFAULT_LEDGER_TAIL, Interrupted, Resume};
pub use wait::{Arrival, DECISION_EVENTS};
pub use wake::WakeRecorded;

/// The trimmed session id, or a clear refusal when it is empty or too long.
pub(crate) fn check_id(id: &str) -> Result<&str> {
    let id = id.trim();
    if id.is_empty() || id.chars().count() > 200 {
        return Err(Error::Invalid(
            "a session id is 1 to 200 characters (pass --session ID or set HANDOFF_SESSION)".into(),
        ));
    }
    Ok(id)
}

/// How to wake a session. Stored as JSON with a `type` tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum WakeTarget {
    /// Run a program (argv, no shell) with the event as JSON on stdin.
    Exec {
        /// Program and arguments.
        argv: Vec<String>,
        /// Kill the process group after this many seconds (default 30).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
    },
    /// POST the event, signed per the Standard Webhooks spec.
    Webhook {
        /// Where to POST (must also be allowed by the config).
        url: String,
        /// `whsec_…` signing secret.
        secret: String,
    },
    /// Type a short notice into a tmux pane, if it still runs the agent.
    Tmux {
        /// The pane id (`%3`) or target (`main:1.0`).
        pane: String,
        /// The agent's command name the pane must still be running (e.g. `claude`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
    },
}

impl WakeTarget {
    /// Check the target makes sense before it is stored.
    pub fn check(&self) -> Result<()> {
        match self {
            WakeTarget::Exec { argv, .. } if argv.is_empty() || argv[0].trim().is_empty() => {
                Err(Error::Invalid("an exec wake target needs a program".into()))
            }
            WakeTarget::Webhook { url, .. }
                if !(url.starts_with("http://") || url.starts_with("https://")) =>
            {
                Err(Error::Invalid(format!(
                    "webhook wake target `{url}` is not an http(s) URL"
                )))
            }
            WakeTarget::Webhook { secret, .. } if !secret.starts_with("whsec_") => Err(
                Error::Invalid("a webhook wake target needs a `whsec_…` secret".into()),
            ),
            WakeTarget::Tmux { pane, .. } if pane.trim().is_empty() => {
                Err(Error::Invalid("a tmux wake target needs a pane".into()))
            }
            _ => Ok(()),
        }
    }
}

/// A registered session.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Session {
    /// Client-chosen id.
    pub session_id: String,
    /// The agent running the session.
    pub agent: String,
    /// The project it works on (its questions and boards are scoped to it).
    pub project: String,
    /// Working directory.
    pub cwd: String,
    /// The machine it runs on, as the registering process named it (empty
    /// when it did not say).
    #[serde(default)]
    pub host: String,
    /// How to wake it.
    pub wake_target: Option<WakeTarget>,
    /// The last checkpointed state (opaque).
    pub state_blob: Option<String>,
    /// `active`, `idle` or `ended`.
    pub status: String,
    /// Checkpoint CAS token.
    pub revision: i64,
    /// The event `seq` up to which `wait` has picked up decisions and wakes.
    pub last_wait_seq: i64,
    /// When it was ended, if it was.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub ended_at: Option<i64>,
    /// When it was first registered.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Last changed.
    #[serde(with = "crate::clock::Timestamp")]
    pub updated_at: i64,
}

/// What registering says about the session.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Client-chosen id (required).
    pub session_id: String,
    /// The agent running the session.
    pub agent: String,
    /// The project it works on.
    pub project: String,
    /// Working directory.
    pub cwd: String,
    /// How to wake it (None keeps the stored one on re-register).
    pub wake_target: Option<WakeTarget>,
}

// A stored session, on either engine.
rows_by!(Session, session_from);

/// Map an `agent_sessions` row, of either engine (its columns are text and
/// 64-bit integers on both).
fn session_from(r: &impl Cols) -> Result<Session> {
    let wake: Option<String> = r.try_get("wake_target")?;
    Ok(Session {
        session_id: r.try_get("session_id")?,
        agent: r.try_get("agent")?,
        project: r.try_get("project")?,
        cwd: r.try_get("cwd")?,
        host: r.try_get("host")?,
        wake_target: wake
            .map(|w| serde_json::from_str(&w))
            .transpose()
            .map_err(|e| Error::Corrupt(format!("session wake target: {e}")))?,
        state_blob: r.try_get("state_blob")?,
        status: r.try_get("status")?,
        revision: r.try_get("revision")?,
        last_wait_seq: r.try_get("last_wait_seq")?,
        ended_at: r.try_get("ended_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

impl Store {
    /// Register a session, or update its agent/project/cwd/wake target if it
    /// exists (the checkpoint and revision are kept). One statement. A
    /// session keeps its home (see `home.rs`): registered again without a
    /// project it stays in its own; in another project it is refused
    /// ([`Error::SessionElsewhere`]), as when another project's items
    /// already name it — decided in the same statement, read to explain.
    pub async fn register_session(&self, s: &NewSession) -> Result<Session> {
        self.register_session_on(s, "").await
    }

    /// [`Store::register_session`] from a process on `host` (its
    /// hostname): recorded on the session; empty keeps the one stored.
    pub async fn register_session_on(&self, s: &NewSession, host: &str) -> Result<Session> {
        let id = check_id(&s.session_id)?;
        if let Some(w) = &s.wake_target {
            w.check()?;
        }
        let project = s.project.clone();
        let wake = s
            .wake_target
            .as_ref()
            .map(|w| serde_json::to_string(w).unwrap_or_default());
        let s = Arc::new((
            id.to_string(),
            s.agent.clone(),
            project,
            s.cwd.clone(),
            wake,
            host.trim().to_string(),
        ));
        let registered = self
            .write_split(s.clone(), register_in_one_call, postgres::register)
            .await?;
        match registered {
            Some(r) => {
                self.known_home(&r.session_id, &r.project);
                Ok(r)
            }
            None => {
                let home = self.home_of(id).await?;
                Err(home::file_in(id, &s.2, &home).err().unwrap_or_else(|| {
                    Error::Corrupt(format!("session `{id}` was neither registered nor refused"))
                }))
            }
        }
    }

    /// A session by id.
    pub async fn get_session(&self, id: &str) -> Result<Option<Session>> {
        self.row(Stmt::new("SELECT * FROM agent_sessions WHERE session_id = $1").text(id))
            .await
    }
}

/// The upsert that registers a session, the same on both engines
/// (`RETURNING *`: no row when its home is another project). Nothing is
/// written when another project's items name the session (the SELECT's
/// WHERE) or it is registered in another project (the upsert's); a
/// project left empty keeps the one it has. A macro only so that SQLite's
/// one call can append its event statement to the same literal.
macro_rules! register_upsert {
    () => {
        "INSERT INTO agent_sessions (session_id, agent, project, cwd, wake_target, created_at, updated_at, host)
         SELECT $1, $2, $3, $4, $5, $6, $6, $7
         WHERE $3 = '' OR NOT EXISTS (SELECT 1 FROM events
                                      WHERE session = $1 AND project <> '' AND project <> $3)
         ON CONFLICT (session_id) DO UPDATE SET
            agent = excluded.agent, cwd = excluded.cwd,
            project = CASE WHEN excluded.project = '' THEN agent_sessions.project
                           ELSE excluded.project END,
            wake_target = COALESCE(excluded.wake_target, agent_sessions.wake_target),
            host = CASE WHEN excluded.host = '' THEN agent_sessions.host ELSE excluded.host END,
            status = 'active', ended_at = NULL, updated_at = excluded.updated_at
         WHERE excluded.project = '' OR agent_sessions.project IN ('', excluded.project)
         RETURNING *"
    };
}
pub(super) use register_upsert;

/// [`Store::register_session`] on SQLite: one call, the upsert and its
/// `session.registered` event.
fn register_in_one_call(
    turn: &mut Turn,
    s: postgres::Registration,
    now: i64,
) -> BoxFuture<'_, Result<Option<Session>>> {
    Box::pin(async move {
        let (id, agent, project, cwd, wake, host) = &*s;
        // One call: the upsert and its `session.registered` event (the
        // wake target's kind read from the row as stored), written only
        // when the upsert wrote a row.
        let sql = one_call(concat!(
            register_upsert!(),
            ";
             INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
             SELECT $6, 'session.registered', 'session', $1, $2, 'agent', project, $1,
                    json_object('wake', json_extract(wake_target, '$.type'))
             FROM agent_sessions WHERE session_id = $1 AND changes() = 1"
        ));
        let q = sqlx::query(sql)
            .bind(id)
            .bind(agent)
            .bind(project)
            .bind(cwd)
            .bind(wake)
            .bind(now)
            .bind(host);
        let rows = turn.savepoint_call(q).await?;
        rows.first().map(session_from).transpose()
    })
}

/// The tag of a target (`exec`, `webhook`, `tmux`), for events and logs.
pub fn target_kind(t: &WakeTarget) -> &'static str {
    match t {
        WakeTarget::Exec { .. } => "exec",
        WakeTarget::Webhook { .. } => "webhook",
        WakeTarget::Tmux { .. } => "tmux",
    }
}
