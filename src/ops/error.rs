//! The one mapping from the store's errors and typed refusals to
//! [`Error`]: every door reads a store failure through it (the CLI and
//! MCP directly, the HTTP API by turning the [`Error`] into a status), so
//! a refusal has one reason and one wording wherever it is met
//! (docs/design.md, "Layers").

use serde_json::Value;

use super::Error;
use crate::store;
use crate::store::refusal::{Class, Refused};

/// By reference too: the CLI reads a store error it finds in an error's
/// chain through this same mapping.
impl From<&store::Error> for Error {
    fn from(e: &store::Error) -> Self {
        match e {
            store::Error::Invalid(m) => Error::invalid(m.clone()),
            // Which items a short reference matches depends on what is
            // stored now: a conflict with the state (409 over HTTP), and
            // "not found as named" for the CLI's exit status.
            store::Error::Ambiguous(message) => Error::Ambiguous {
                message: message.clone(),
            },
            store::Error::Busy => Error::Busy {
                message: "the database is busy: other handoff processes kept it locked; try again"
                    .into(),
            },
            // Not the other project's name: a caller scoped to one project
            // must not learn it, and the host can list sessions.
            store::Error::SessionElsewhere { session, .. } => Error::Refused {
                reason: "session_in_other_project".into(),
                message: format!(
                    "session `{session}` belongs to another project: every item of a session is \
                     filed in the session's project; use a session id of this project \
                     (`handoff session list` shows each session's project)"
                ),
                detail: Value::Null,
            },
            // Not logged here: the CLI prints this one line and exits, the
            // MCP server and the HTTP API log internal errors at their edge.
            other => Error::Internal {
                message: other.describe(),
            },
        }
    }
}

impl From<store::Error> for Error {
    fn from(e: store::Error) -> Self {
        Error::from(&e)
    }
}

impl From<&store::actions::Error> for Error {
    fn from(e: &store::actions::Error) -> Self {
        match e {
            store::actions::Error::Store(s) => s.into(),
            store::actions::Error::NotFound(_) => Error::not_found(e.to_string()),
            store::actions::Error::Ambiguous(_) => Error::Ambiguous {
                message: e.to_string(),
            },
            store::actions::Error::DedupConflict { .. } => {
                let d = dedup_conflict_detail(e).unwrap_or_default();
                Error::refused("dedup_conflict", e.to_string(), d)
            }
        }
    }
}

impl From<store::actions::Error> for Error {
    fn from(e: store::actions::Error) -> Self {
        Error::from(&e)
    }
}

/// The `detail` of a `dedup_conflict` refusal (every door sends the same
/// one); `None` for any other error.
fn dedup_conflict_detail(e: &store::actions::Error) -> Option<Value> {
    let store::actions::Error::DedupConflict {
        key,
        existing_id,
        existing_fingerprint,
        new_fingerprint,
    } = e
    else {
        return None;
    };
    Some(serde_json::json!({
        "dedup_key": key,
        "existing_id": existing_id,
        "existing_fingerprint": existing_fingerprint,
        "new_fingerprint": new_fingerprint,
    }))
}

/// A store refusal: its class picks the kind of error, the store names the
/// reason (the same name every door uses) and the refusal is the detail.
fn refused<R: Refused>(r: &R, message: String) -> Error {
    match r.class() {
        Class::NotFound => Error::not_found(message),
        Class::Invalid => Error::invalid(message),
        Class::Conflict => Error::refused(r.reason(), message, r.detail()),
    }
}

impl From<store::questions::Refusal> for Error {
    fn from(r: store::questions::Refusal) -> Self {
        let message = match r.class() {
            // Name the listing command, as every not-found error does.
            Class::NotFound => format!("{r}; list yours with `pending`"),
            _ => r.to_string(),
        };
        refused(&r, message)
    }
}

impl From<store::boards::Refusal> for Error {
    fn from(r: store::boards::Refusal) -> Self {
        let message = match &r {
            // The store's text names the CLI; an agent re-reads with board_get.
            store::boards::Refusal::Stale { .. } => {
                r.to_string().replace("`handoff board get`", "board_get")
            }
            _ => r.to_string(),
        };
        refused(&r, message)
    }
}
