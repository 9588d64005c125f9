//! The agent-side operations, one interface for every door: the MCP server
//! (and later the CLI) call [`Ops`] instead of the store directly, so that a
//! remote implementation over HTTP can stand in for the local one.
//!
//! Each operation takes a request value from [`requests`] (JSON-friendly,
//! `deny_unknown_fields`) and returns a serializable result (the store's own
//! types, or the small wrappers in [`results`]). Refusals that are normal
//! outcomes of the store (stale version, already answered, not claimable…)
//! come back as [`Error::Refused`] with a machine-readable `reason`, a message
//! for people and the store's refusal as `detail` (current values included),
//! the same vocabulary as the HTTP API's error body.
//!
//! Layout: `local` (the local-store implementation and its error mapping),
//! `questions`, `boards`, `actions`, `sessions` (its operations by area),
//! [`requests`] and [`results`] (the values). This module does not parse
//! command lines, speak MCP or HTTP, or print anything.

mod actions;
mod boards;
mod local;
mod questions;
pub mod requests;
pub mod results;
mod sessions;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::actions::Action;
use crate::store::boards::BoardFull;
use crate::store::questions::Question;
use crate::store::sessions::{Resume, Session};

pub use local::{Local, Policy};
use requests::*;
use results::*;

/// Why an operation did not do what was asked. Serializable as
/// `{"error": kind, "reason", "message", "detail"?}` so it can cross HTTP.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum Error {
    /// The input breaks a documented rule; nothing was written.
    #[error("{message}")]
    Invalid {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// No such question, board, row, action or session.
    #[error("{message}")]
    NotFound {
        /// What was not found.
        message: String,
    },
    /// The store refused the write (a normal outcome); nothing changed.
    #[error("{message}")]
    Refused {
        /// Machine-readable reason, snake_case (`stale`, `unread_answer`, …).
        reason: String,
        /// What happened and what to do next.
        message: String,
        /// The store's refusal: current versions, the waiting answer, the action…
        detail: Value,
    },
    /// The database stayed locked by other processes; try again.
    #[error("{message}")]
    Busy {
        /// What to do.
        message: String,
    },
    /// Anything else (a database failure); the log has details.
    #[error("{message}")]
    Internal {
        /// One line.
        message: String,
    },
}

impl Error {
    /// The machine-readable reason (`invalid`, `not_found`, `busy`,
    /// `internal`, or the refusal's own reason).
    pub fn reason(&self) -> &str {
        match self {
            Error::Invalid { .. } => "invalid",
            Error::NotFound { .. } => "not_found",
            Error::Refused { reason, .. } => reason,
            Error::Busy { .. } => "busy",
            Error::Internal { .. } => "internal",
        }
    }

    /// `{"reason", "message", "detail"?}` — the API's error body.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::json!({"reason": self.reason(), "message": self.to_string()});
        if let Error::Refused { detail, .. } = self {
            v["detail"] = detail.clone();
        }
        v
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::Invalid {
            message: message.into(),
        }
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Error::NotFound {
            message: message.into(),
        }
    }

    pub(crate) fn refused(reason: &str, message: impl Into<String>, detail: Value) -> Self {
        Error::Refused {
            reason: reason.into(),
            message: message.into(),
            detail,
        }
    }
}

/// Results of operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The agent-side operations. `Local` runs them against a store on this
/// machine; a `Remote` variant (an HTTP client) comes later and takes the
/// same requests and returns the same values.
#[derive(Clone)]
pub enum Ops {
    /// Against a local SQLite store.
    Local(Local),
}

macro_rules! dispatch {
    ($(#[$doc:meta])* $name:ident($req:ty) -> $out:ty) => {
        $(#[$doc])*
        pub async fn $name(&self, req: $req) -> Result<$out> {
            match self {
                Ops::Local(l) => l.$name(req).await,
            }
        }
    };
}

impl Ops {
    dispatch!(
        /// Flag a question (re-flagging the same `key` updates it in place);
        /// optionally wait (bounded) for a reply and pick it up.
        ask(AskRequest) -> Asked
    );
    dispatch!(
        /// Replies on open questions and responses on board rows waiting for
        /// the agent; new ones are marked picked up.
        pending(PendingRequest) -> Pending
    );
    dispatch!(
        /// Record an answer the human gave the agent directly.
        answer(AnswerRequest) -> Question
    );
    dispatch!(
        /// Close a question with its outcome.
        resolve(ResolveRequest) -> Question
    );
    dispatch!(
        /// Create or update a board and rows, CAS on versions.
        board_upsert(BoardUpsertRequest) -> BoardFull
    );
    dispatch!(
        /// Write one row, CAS on its revision.
        board_row(BoardRowRequest) -> BoardFull
    );
    dispatch!(
        /// Archive a row's step and install the next (blocked) one.
        board_advance(BoardAdvanceRequest) -> BoardFull
    );
    dispatch!(
        /// A board with its rows, from the source of truth.
        board_get(BoardGetRequest) -> BoardFull
    );
    dispatch!(
        /// Propose an action; configured rules may decide it at once.
        propose_action(ProposeRequest) -> Proposal
    );
    dispatch!(
        /// An action's status, optionally after a bounded wait.
        action_status(ActionStatusRequest) -> ActionState
    );
    dispatch!(
        /// Claim an approved action for execution (returns the real arguments).
        claim_action(ClaimRequest) -> Action
    );
    dispatch!(
        /// Record how a claimed action's run ended.
        complete_action(CompleteRequest) -> Action
    );
    dispatch!(
        /// Save the session's state, CAS on its revision.
        checkpoint(CheckpointRequest) -> Session
    );
    dispatch!(
        /// Append a tool call's start or end to the execution ledger.
        ledger_record(LedgerRecordRequest) -> Ledgered
    );
    dispatch!(
        /// Everything a woken session needs, in one read.
        resume(ResumeRequest) -> Resume
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_cross_the_wire_and_keep_their_reason() {
        let cases = [
            Error::invalid("title too long"),
            Error::not_found("no question `x`"),
            Error::refused("stale", "re-read", serde_json::json!({"board_version": 3})),
            Error::Busy {
                message: "busy".into(),
            },
        ];
        for e in cases {
            let wire = serde_json::to_string(&e).unwrap();
            let back: Error = serde_json::from_str(&wire).unwrap();
            assert_eq!(back, e, "{wire}");
            assert_eq!(e.to_json()["reason"], e.reason());
            assert_eq!(e.to_json()["message"], e.to_string());
        }
        let stale = Error::refused("stale", "m", serde_json::json!({"board_version": 3}));
        assert_eq!(stale.to_json()["detail"]["board_version"], 3);
        assert!(Error::invalid("x").to_json().get("detail").is_none());
    }

    #[test]
    fn waits_are_bounded() {
        use std::time::Duration;
        assert_eq!(local::wait_for(None).unwrap(), None);
        assert_eq!(local::wait_for(Some(0)).unwrap(), None);
        assert_eq!(
            local::wait_for(Some(600)).unwrap(),
            Some(Duration::from_secs(600))
        );
        assert!(matches!(
            local::wait_for(Some(601)),
            Err(Error::Invalid { .. })
        ));
    }

    #[test]
    fn requests_refuse_unknown_fields() {
        let e =
            serde_json::from_value::<AskRequest>(serde_json::json!({"title": "t", "titel": "x"}))
                .unwrap_err();
        assert!(e.to_string().contains("unknown field `titel`"));
        let r: BoardAdvanceRequest = serde_json::from_value(serde_json::json!({
            "board": "b", "label": "l", "revision": 2, "board_version": 5, "next_step": "n"
        }))
        .unwrap();
        let back: BoardAdvanceRequest =
            serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(
            back, r,
            "requests round-trip, so an HTTP client can send them"
        );
    }
}
