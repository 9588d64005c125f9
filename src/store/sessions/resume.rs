//! `resume(session)`: everything a woken agent needs, in one read.
//!
//! The last checkpoint, the ledger tail, the calls begun and never finished
//! (each marked replayable only if its tool was declared replay-safe, else
//! `unknown`), every answer and row response the agent has not resolved
//! (delivered or not, marked which), and every decision and wake that was
//! not picked up yet. A read: nothing is marked delivered — `handoff wait`
//! and `pending` do that.

use serde::Serialize;
use serde_json::Value;

use super::{LedgerEntry, Session};
use crate::store::boards::PendingRow;
use crate::store::questions::Question;
use crate::store::{Event, Result, Store};

/// How many ledger rows `resume` returns by default.
pub const DEFAULT_LEDGER_TAIL: i64 = 20;

/// A call that was begun and never completed nor failed.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Interrupted {
    /// Its `started` row.
    #[serde(flatten)]
    pub entry: LedgerEntry,
    /// True only when the tool was declared replay-safe: run it again.
    pub replay: bool,
    /// `replay` or `unknown` (it may or may not have taken effect: check
    /// before doing anything, or ask a person).
    pub disposition: String,
}

/// What [`Store::resume`] returns.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Resume {
    /// The session id asked about.
    pub session_id: String,
    /// The registered session (None if it never registered).
    pub session: Option<Session>,
    /// The checkpoint revision to pass to the next `checkpoint`.
    pub revision: Option<i64>,
    /// The last checkpointed state: parsed JSON when it is JSON, else the text.
    pub state: Option<Value>,
    /// The newest ledger rows, oldest first.
    pub ledger_tail: Vec<LedgerEntry>,
    /// Calls begun and never finished.
    pub interrupted: Vec<Interrupted>,
    /// Open questions of the session with a reply, until the agent resolves
    /// them; `reply.seen_at` marks one delivered before.
    pub answers: Vec<Question>,
    /// Rows of the session's boards with a person's response the agent has
    /// not resolved (`new: false` marks one delivered before).
    pub rows: Vec<PendingRow>,
    /// Decisions on the session's actions after its wait cursor.
    pub decisions: Vec<Event>,
    /// Inbound wakes after its wait cursor.
    pub wakes: Vec<Event>,
}

impl Resume {
    /// True when nothing is waiting for the agent (no interrupted call, no
    /// answer, row, decision or wake).
    pub fn is_quiet(&self) -> bool {
        self.interrupted.is_empty()
            && self.answers.is_empty()
            && self.rows.is_empty()
            && self.decisions.is_empty()
            && self.wakes.is_empty()
    }
}

impl Store {
    /// Everything session `session_id` needs to pick up where it stopped,
    /// with the newest `ledger_tail` ledger rows. Marks nothing. On
    /// PostgreSQL it runs once board rows do (it reads the session's rows
    /// with [`Store::pending_rows_peek`]); until then it is refused as
    /// boards are.
    pub async fn resume(&self, session_id: &str, ledger_tail: i64) -> Result<Resume> {
        let id = super::check_id(session_id)?;
        let session = self.get_session(id).await?;
        let state = session
            .as_ref()
            .and_then(|s| s.state_blob.as_deref())
            .map(|b| {
                serde_json::from_str::<Value>(b).unwrap_or_else(|_| Value::String(b.to_string()))
            });
        let interrupted = self
            .ledger_interrupted(id)
            .await?
            .into_iter()
            .map(|entry| Interrupted {
                replay: entry.replay_safe,
                disposition: if entry.replay_safe {
                    "replay"
                } else {
                    "unknown"
                }
                .to_string(),
                entry,
            })
            .collect();
        // Every reply on an open question, delivered or not: an agent that
        // crashed right after pickup finds it here again (`reply.seen_at`
        // says it was delivered before).
        // Of the session's own project only, as `wait` hands them.
        let project = self.delivery_project(id).await?;
        let answers = self
            .read_pending(project.as_deref(), Some(id), true)
            .await?;
        let rows = self.pending_rows_peek(project.as_deref(), Some(id)).await?;
        let (_, evs) = self.unclaimed_events(id).await?;
        let (wakes, decisions) = evs.into_iter().partition(|e| e.kind == "session.wake");
        Ok(Resume {
            session_id: id.to_string(),
            revision: session.as_ref().map(|s| s.revision),
            session,
            state,
            ledger_tail: self.ledger_list(id, Some(ledger_tail.max(0))).await?,
            interrupted,
            answers,
            rows,
            decisions,
            wakes,
        })
    }
}
