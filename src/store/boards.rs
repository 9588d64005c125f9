//! Boards and rows: a project's named checklists whose `blocked`
//! rows wait on a person.
//!
//! The agent owns the step fields of a row (status, note, next step, owner,
//! impact, options, context, outcome) and writes them with CAS on the board's
//! `board_version` and the row's `revision`. A human owns the response
//! fields ([`Response`]): an `annotation` (answer / clarify / decline, through the Inbox or
//! chat, with the asymmetric rule of §2) and `handled_at` ("I did my part").
//! Delivery to an agent is recorded in `annotation_seen_at` /
//! `handled_seen_at`; it is *not* an acknowledgement — a blocked row with a
//! response keeps coming back in [`Store::pending_rows`] until the agent
//! changes its status.
//!
//! Layout: this file holds the public types; `validate` the input checks;
//! `load` decoding, loading and resolving boards and rows; `record` what
//! every write records (the board's lock, version bump, events,
//! auto-archive); `write` the agent's row writes (upsert, row); `step`
//! advance, outcome and archive; `human` the human's writes (annotate,
//! handled); `read` the reads (chat's row lookups included) and delivery
//! (pending, unprocessed handoffs). Those run on both engines, written once
//! through the engine seam (`store::engine`). `call` is the one-call shape
//! every winning write takes on SQLite, `call_many` the row writes in it
//! (upsert, row, outcome) and `call_one` the writes on one named row
//! (advance, annotate, handled); PostgreSQL has no such call, and there
//! (as on SQLite when a call did not win) the older transactions of
//! `write`, `step` and `human` run. It does not push anything to chat:
//! followers of the event log do.

mod call;
mod call_many;
mod call_one;
mod human;
mod input;
mod load;
mod plan;
mod read;
mod record;
mod refusal;
mod step;
mod validate;
mod write;

use load::row_from;
use record::Who;
use validate::*;

use serde::{Deserialize, Serialize};

use super::{Error, Result};

pub use human::{Annotate, Handled, RowChange};
pub use input::RowInput;
pub use read::PendingRow;
pub(crate) use refusal::Steps;
pub use refusal::{Decided, Refusal};
use refusal::{decided, not_found};
pub use step::{Advance, Archived, NextStep, OutcomeWrite};
pub use write::{BoardUpsert, RowWrite};

/// Longest board title or row label, in characters.
pub const MAX_TITLE: usize = 120;
/// Longest note, next step, impact, annotation or outcome, in characters.
pub const MAX_TEXT: usize = 4000;
/// Longest context, in characters.
pub const MAX_CONTEXT: usize = 20_000;
/// Most options a row may offer.
pub const MAX_OPTIONS: usize = 4;
/// Most rows one upsert may write.
pub const MAX_ROWS: usize = 500;

/// A row's status. `blocked` means a human must act.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RowStatus {
    /// Known and followed, nothing done yet.
    #[default]
    Tracked,
    /// Half done (counts 0.5 in progress).
    Partial,
    /// Missing: should exist and does not.
    Missing,
    /// Not applicable (left out of progress).
    Na,
    /// Done (counts 1 in progress).
    Done,
    /// Waiting on a human.
    Blocked,
}

/// Who must act on a blocked row: nobody named (`""`), a decision, a task, an approval.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RowOwner {
    /// Not said.
    #[default]
    #[serde(rename = "")]
    None,
    /// A human must decide between options.
    Decision,
    /// A human must do something (create an account, record a demo).
    Task,
    /// A human must approve.
    Approval,
}

/// What a human's annotation means.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationKind {
    /// An answer to the step.
    #[default]
    Answer,
    /// A correction: the earlier answer is corrected or the step needs rewording.
    Clarify,
    /// The human declines the step.
    Decline,
}

/// A reply's kind, said of a row (an answer in chat means the same on both).
impl From<crate::store::questions::ReplyKind> for AnnotationKind {
    fn from(k: crate::store::questions::ReplyKind) -> Self {
        use crate::store::questions::ReplyKind;
        match k {
            ReplyKind::Answer => AnnotationKind::Answer,
            ReplyKind::Clarify => AnnotationKind::Clarify,
            ReplyKind::Decline => AnnotationKind::Decline,
        }
    }
}

/// `as_str` (the stored spelling) and `FromStr` for a stored enum: each
/// variant with its spelling, then the refusal's hint. `alias` adds a
/// spelling read but never written.
macro_rules! spelled {
    ($t:ident, $what:literal, $hint:literal, $($v:ident = $s:literal),+ $(; alias $a:literal = $av:ident)?) => {
        impl $t {
            /// The stored spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($t::$v => $s,)+
                }
            }
        }

        impl std::str::FromStr for $t {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                match s {
                    $($s => Ok($t::$v),)+
                    $($a => Ok($t::$av),)?
                    _ => Err(Error::Invalid(format!(
                        concat!("`{}` is not ", $what, ": use ", $hint),
                        s
                    ))),
                }
            }
        }
    };
}

spelled!(
    RowStatus,
    "a row status",
    "tracked, partial, missing, na, done or blocked",
    Tracked = "tracked",
    Partial = "partial",
    Missing = "missing",
    Na = "na",
    Done = "done",
    Blocked = "blocked"
);
spelled!(
    RowOwner,
    "a row owner",
    "decision, task or approval",
    None = "",
    Decision = "decision",
    Task = "task",
    Approval = "approval";
    alias "none" = None
);
spelled!(
    AnnotationKind,
    "an annotation kind",
    "answer, clarify or decline",
    Answer = "answer",
    Clarify = "clarify",
    Decline = "decline"
);

/// Through which door a human responded (the store's one [`Channel`]).
pub use super::channel::Channel;

/// One labelled choice a blocked row offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowOption {
    /// The choice, short.
    pub label: String,
    /// The trade-off shown beside it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The agent recommends this one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recommended: bool,
}

/// Progress of a board: done = 1, partial = 0.5, `na` left out.
#[derive(
    Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize, Default, schemars::JsonSchema,
)]
pub struct Progress {
    /// How many rows the board has.
    pub rows: i64,
    /// Rows that count (all but `na`).
    pub counted: i64,
    /// done + partial / 2.
    pub score: f64,
    /// How many rows are blocked (wait on a human).
    pub blocked: i64,
    /// score / counted in percent; `None` when no row counts (empty or all `na`).
    pub percent: Option<f64>,
}

impl Progress {
    /// Every counted row is done (and at least one counts).
    pub fn complete(&self) -> bool {
        self.counted > 0 && self.score >= self.counted as f64
    }
}

/// A board without its rows.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Board {
    /// The full id (its last characters are the short id).
    pub id: String,
    /// The project it belongs to.
    pub project: String,
    /// Title, unique in the project.
    pub title: String,
    /// The board's CAS token; pass it back on writes.
    pub board_version: i64,
    /// When it was archived; `None` while active.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub archived_at: Option<i64>,
    /// Archived because progress reached 100 % (a later lowering write reactivates it).
    pub auto_archived: bool,
    /// The agent that owns it (set on creation, changed when a write names another).
    pub agent: String,
    /// The agent session that owns it (likewise).
    pub session: String,
    /// How far its rows are done.
    pub progress: Progress,
    /// When it was created.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// When it last changed (any write, its own or a row's).
    #[serde(with = "crate::clock::Timestamp")]
    pub updated_at: i64,
}

/// A board with all its rows, read from the database.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct BoardFull {
    /// The board's own fields.
    #[serde(flatten)]
    pub board: Board,
    /// Its rows in board order.
    pub rows: Vec<Row>,
}

impl BoardFull {
    /// The row labelled `label`.
    pub fn row(&self, label: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.label == label)
    }
}

/// A human's response to one step of a row: an annotation and a
/// "handled" mark, each with who and when. The same fields in a [`Row`]
/// (its current step) and a [`Step`] (an archived one), flattened into
/// both on the wire.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Response {
    /// The text the human wrote, if any.
    pub annotation: Option<String>,
    /// Answer, clarify or decline.
    pub annotation_kind: Option<AnnotationKind>,
    /// The door the annotation came through.
    pub annotation_source: Option<Channel>,
    /// Who wrote the annotation.
    pub annotated_by: Option<String>,
    /// When the annotation was written.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub annotated_at: Option<i64>,
    /// When an agent first received the annotation (delivery, not
    /// acknowledgement).
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub annotation_seen_at: Option<i64>,
    /// When the human marked their part done.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub handled_at: Option<i64>,
    /// Who marked it.
    pub handled_by: Option<String>,
}

/// One archived step of a row, kept in its `history` by `board_advance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    /// The row's `action_version` while this step was current.
    pub action_version: i64,
    /// The row's status when the step ended.
    pub status: RowStatus,
    /// The agent's note on the step.
    pub note: String,
    /// What the step asked of the human.
    pub next_step: String,
    /// Who had to act.
    pub owner: RowOwner,
    /// What depended on it.
    pub impact: String,
    /// The choices it offered.
    pub options: Vec<RowOption>,
    /// The longer background it carried.
    pub context: String,
    /// What the human answered on this step.
    #[serde(flatten)]
    pub response: Response,
    /// What the agent recorded as the result.
    pub outcome: String,
    /// When the step started.
    #[serde(with = "crate::clock::Timestamp")]
    pub started_at: i64,
    /// When it was archived.
    #[serde(with = "crate::clock::Timestamp")]
    pub ended_at: i64,
}

/// One row of a board, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Row {
    /// The full id (its last characters are the short id).
    pub id: String,
    /// The id of the board it belongs to.
    pub board_id: String,
    /// Its name, unique in the board.
    pub label: String,
    /// Where it stands; `blocked` waits on a human.
    pub status: RowStatus,
    /// The agent's note.
    pub note: String,
    /// What is asked of the human next.
    pub next_step: String,
    /// Who must act.
    pub owner: RowOwner,
    /// What depends on it.
    pub impact: String,
    /// The choices offered to the human (at most 4).
    pub options: Vec<RowOption>,
    /// Longer background for the human.
    pub context: String,
    /// The agent's recorded result of the current step.
    pub outcome: String,
    /// When the outcome was stored.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub outcome_at: Option<i64>,
    /// The row's CAS token.
    pub revision: i64,
    /// Which step (bumped by advance).
    pub action_version: i64,
    /// When the current step started.
    #[serde(with = "crate::clock::Timestamp")]
    pub action_started_at: i64,
    /// Archived steps, oldest first.
    pub history: Vec<Step>,
    /// What the human answered on the current step.
    #[serde(flatten)]
    pub response: Response,
    /// When an agent first received the handled mark.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub handled_seen_at: Option<i64>,
    /// Its place in the board's order (gaps allowed).
    pub position: i64,
    /// When it was created.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// When it last changed.
    #[serde(with = "crate::clock::Timestamp")]
    pub updated_at: i64,
}

impl Row {
    /// True when a person's annotation or handled mark waits that no agent
    /// has received yet.
    pub fn has_undelivered_response(&self) -> bool {
        self.has_unread_annotation()
            || (self.response.handled_at.is_some() && self.handled_seen_at.is_none())
    }

    /// True when a person's annotation waits that no agent has received
    /// yet. (A handled mark is resolved by the outcome the agent must store
    /// to leave `blocked`; an annotation's words would be lost unread.)
    pub fn has_unread_annotation(&self) -> bool {
        self.response.annotation.is_some() && self.response.annotation_seen_at.is_none()
    }
}

/// The current revision of a row that did not match (`None`: no such row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct StaleRow {
    /// The label of the row that did not match.
    pub label: String,
    /// Its current revision, or `None` if the row does not exist.
    pub revision: Option<i64>,
}

#[cfg(test)]
mod tests;
