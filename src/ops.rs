//! The operations every door uses, one interface: the CLI and the MCP
//! server call [`Ops`] instead of the store directly, and `Ops` runs them
//! either against a store on this machine ([`Local`]) or against a daemon's
//! HTTP API ([`Remote`], when `HANDOFF_URL` is set). Nothing above this
//! layer knows which.
//!
//! Two levels. The *primitives* (`backend`) mirror the store: they take the
//! store's input values and return the store's own results, typed refusals
//! included (`Outcome`, `Decided`, `ApproveOutcome`, …), so the CLI prints
//! the same thing whichever backend ran them. The *agent operations* (ask,
//! pending, answer, resolve, boards, actions, checkpoint, ledger, resume —
//! the MCP tools) are written once on top of the primitives: each takes a
//! request value from [`requests`] (JSON-friendly, `deny_unknown_fields`)
//! and returns a serializable result; refusals come back as
//! [`Error::Refused`] with a machine-readable `reason`, a message for people
//! and the store's refusal as `detail`, the same vocabulary as the HTTP
//! API's error body.
//!
//! Layout: `backend` (the primitives by area: each one's argument type and
//! the [`Ops`] method that runs it, the `Run` trait every backend
//! implements once per primitive, and two small value types),
//! `local` (the store-backed implementation and its error mapping),
//! `remote` (the HTTP client and its error mapping), `daemon` (the local
//! daemon's socket, the file as the fallback), `questions`,
//! `boards`, `actions`, `sessions` (the agent operations by area),
//! [`requests`] and [`results`] (the values), `wait` (the waits written
//! once over the primitives: a reply's pickup, deadlines), [`run`] (running
//! an approved action's command). This module does not parse
//! command lines, speak MCP, serve HTTP or print anything.

mod actions;
mod backend;
mod boards;
pub mod claude;
mod daemon;
mod error;
mod local;
mod questions;
mod remote;
pub mod requests;
pub mod results;
pub mod run;
mod sessions;
pub(crate) mod wait;

// Codex's hook answers; the prompt engine they share is `claude`'s.
pub mod codex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use backend::{Awaited, Until};
pub use daemon::Daemon;
pub use local::{Local, Policy};
pub use remote::Remote;

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
    /// Something only the daemon's host may do, asked of a remote daemon
    /// (refused before any request; shown as `invalid`). Typed, so the
    /// local daemon's socket backend knows to run the call on the file.
    #[error("{message}")]
    HostOnly {
        /// What must run on the host, and how.
        message: String,
    },
    /// No such question, board, row, action or session.
    #[error("{message}")]
    NotFound {
        /// What was not found.
        message: String,
    },
    /// A short id or title matches several items: give more of it. Not
    /// found as named (the CLI's exit status), a conflict with what is
    /// stored now over HTTP (409 `ambiguous`).
    #[error("{message}")]
    Ambiguous {
        /// What matched several, and what to give instead.
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
    /// The daemon refused the caller: no or a bad token, the wrong role,
    /// the wrong project (remote only).
    #[error("{message}")]
    Denied {
        /// `unauthorized`, `wrong_role` or `wrong_project`.
        reason: String,
        /// What to do.
        message: String,
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
        /// What failed, on one line (the log has the details).
        message: String,
    },
}

impl Error {
    /// The machine-readable reason (`invalid`, `not_found`, `busy`,
    /// `internal`, or the refusal's own reason).
    pub fn reason(&self) -> &str {
        match self {
            Error::Invalid { .. } | Error::HostOnly { .. } => "invalid",
            Error::NotFound { .. } => "not_found",
            Error::Ambiguous { .. } => "ambiguous",
            Error::Refused { reason, .. } | Error::Denied { reason, .. } => reason,
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

/// This machine's name (what a session registered from here records as
/// its host), or empty when it cannot be read: `HANDOFF_HOST` if set
/// (containers often have a random hostname), else the kernel's.
pub fn this_host() -> String {
    let named = std::env::var("HANDOFF_HOST").ok();
    named
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Results of operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The operations, against a local store or a remote daemon. Cheap to clone.
#[derive(Clone)]
pub enum Ops {
    /// Against a SQLite store on this machine.
    Local(Local),
    /// Against a daemon's HTTP API (`HANDOFF_URL`).
    Remote(Remote),
    /// Through the local daemon's socket, the file as the fallback.
    Daemon(Daemon),
}

impl Ops {
    /// The current time in ms: the store's clock locally, this machine's
    /// clock remotely (for rendering "expired" and similar).
    pub fn now(&self) -> i64 {
        match self {
            Ops::Local(l) => l.store.now(),
            Ops::Remote(_) | Ops::Daemon(_) => {
                crate::clock::Clock::now_ms(&crate::clock::SystemClock)
            }
        }
    }

    /// True when the operations go to a remote daemon.
    pub fn is_remote(&self) -> bool {
        matches!(self, Ops::Remote(_))
    }

    /// The database file's operations when this host has it (locally, or
    /// behind the local daemon), for what only the host may do.
    pub async fn host(&self) -> Result<Option<Local>> {
        match self {
            Ops::Local(l) => Ok(Some(l.clone())),
            Ops::Remote(_) => Ok(None),
            Ops::Daemon(d) => Ok(Some(d.local().await?.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::requests::*;
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
        assert_eq!(questions::wait_for(None).unwrap(), None);
        assert_eq!(questions::wait_for(Some(0)).unwrap(), None);
        assert_eq!(
            questions::wait_for(Some(600)).unwrap(),
            Some(Duration::from_secs(600))
        );
        assert!(matches!(
            questions::wait_for(Some(601)),
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
