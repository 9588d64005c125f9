//! Why a board write or read was refused, and how the steps of a write end:
//! a value, a refusal (nothing changed), or an error.

use serde::Serialize;

use super::{AnnotationKind, Channel, RowStatus, StaleRow};
use crate::store::{Error, Result};

/// Why a board write was refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "refused", rename_all = "snake_case")]
pub enum Refusal {
    /// A version did not match: re-read and retry. Carries the current values.
    Stale {
        /// The board's current version (0 if the board does not exist).
        board_version: i64,
        /// Every mismatched row with its current revision.
        rows: Vec<StaleRow>,
    },
    /// No such board or row.
    NotFound {
        /// What was looked for, in words.
        what: String,
    },
    /// A blank text where one is required.
    Empty,
    /// A chat annotation while an unclaimed one waits: here is the waiting one.
    UnreadAnswer {
        /// The text that waits.
        annotation: String,
        /// Answer, clarify or decline.
        kind: Option<AnnotationKind>,
        /// The door it came through.
        source: Option<Channel>,
        /// Who wrote it.
        by: Option<String>,
    },
    /// The row is not blocked, so there is nothing to mark handled.
    NotBlocked {
        /// Its current status.
        status: RowStatus,
    },
    /// The board is archived.
    Archived,
    /// An agent already received this response; it cannot be taken back.
    AlreadyDelivered,
    /// A human marked the row handled: leaving `blocked` needs a non-empty outcome.
    OutcomeRequired {
        /// The row's label.
        label: String,
    },
    /// The write would take the row out of the human's queue (leave
    /// `blocked`, or advance) while an annotation no agent has received
    /// waits on it: pick it up first.
    UnreadResponse {
        /// The row's label.
        label: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Stale {
                board_version,
                rows,
            } => {
                write!(f, "stale: the board is at version {board_version}")?;
                for r in rows {
                    match r.revision {
                        Some(rev) => write!(f, ", row `{}` at revision {rev}", r.label)?,
                        None => write!(f, ", row `{}` does not exist", r.label)?,
                    }
                }
                write!(f, "; re-read with `handoff board get` and retry")
            }
            Refusal::NotFound { what } => write!(f, "{what} not found"),
            Refusal::Empty => write!(f, "the text is empty"),
            Refusal::UnreadAnswer {
                annotation, source, ..
            } => write!(
                f,
                "already answered in the {} and not yet picked up: {annotation}",
                source.map_or("inbox", Channel::as_str)
            ),
            Refusal::NotBlocked { status } => {
                write!(f, "the row is {}, not blocked", status.as_str())
            }
            Refusal::Archived => write!(f, "the board is archived"),
            Refusal::AlreadyDelivered => write!(
                f,
                "an agent already received this response; it can no longer be taken back"
            ),
            Refusal::OutcomeRequired { label } => write!(
                f,
                "row `{label}` was marked handled: store a non-empty outcome to move it out of blocked"
            ),
            Refusal::UnreadResponse { label } => write!(
                f,
                "row `{label}` has a person's answer no agent has read yet: pick it up with \
                 `handoff board pending` (or `handoff pending`), then retry"
            ),
        }
    }
}

/// A store result that may be a typed refusal.
pub type Decided<T> = std::result::Result<T, Refusal>;

/// Why a write's steps stopped early: refused (a normal outcome) or
/// failed. `?` ends a step with either.
pub(crate) enum Stop {
    /// Refused: nothing more is written, and the refusal is the answer.
    Refused(Refusal),
    /// Failed: the write is undone.
    Failed(Error),
}

impl From<Refusal> for Stop {
    fn from(r: Refusal) -> Stop {
        Stop::Refused(r)
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Failed(e)
    }
}

impl From<sqlx::Error> for Stop {
    fn from(e: sqlx::Error) -> Stop {
        Stop::Failed(e.into())
    }
}

/// The steps of a write (or a read that may be refused), ended by a [`Stop`].
pub(crate) type Steps<T> = std::result::Result<T, Stop>;

/// `steps` as the store answers: a value, a refusal, or an error.
pub(super) fn decided<T>(steps: Steps<T>) -> Result<Decided<T>> {
    match steps {
        Ok(v) => Ok(Ok(v)),
        Err(Stop::Refused(r)) => Ok(Err(r)),
        Err(Stop::Failed(e)) => Err(e),
    }
}

pub(super) fn not_found(what: impl Into<String>) -> Refusal {
    Refusal::NotFound { what: what.into() }
}
