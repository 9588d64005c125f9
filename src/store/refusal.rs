//! One vocabulary for the store's refusals: every door (the HTTP API, the
//! local and remote operations behind the CLI and MCP, chat) says the same
//! `reason` for the same refusal, and maps the same [`Class`] to its own
//! code (404/422/409, exit 4/2/3).
//!
//! A refusal's `reason` is its serialized `refused` tag, so the name an API
//! client reads in `reason` and in `detail.refused` is one name.

use serde::Serialize;
use serde_json::Value;

/// What kind of "no" a refusal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The item does not exist (or is not the caller's to see).
    NotFound,
    /// The input breaks a rule of its own, whatever is stored (a blank text).
    Invalid,
    /// What is stored now refuses the write: stale, already decided, …
    Conflict,
}

/// A refusal the doors can explain without knowing its type.
pub trait Refused: std::fmt::Display + Serialize {
    /// The machine-readable name, snake_case (the serialized `refused` tag).
    fn reason(&self) -> &'static str;

    /// What kind of refusal it is.
    fn class(&self) -> Class;

    /// The refusal as data: its serialization, `refused` tag included.
    fn detail(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Refused for super::questions::Refusal {
    fn reason(&self) -> &'static str {
        use super::questions::Refusal as R;
        match self {
            R::Empty => "empty",
            R::NotFound => "not_found",
            R::NotOpen { .. } => "not_open",
            R::UnreadAnswer { .. } => "unread_answer",
            R::Stale { .. } => "stale",
            R::AlreadyPickedUp { .. } => "already_picked_up",
        }
    }

    fn class(&self) -> Class {
        use super::questions::Refusal as R;
        match self {
            R::Empty => Class::Invalid,
            R::NotFound => Class::NotFound,
            _ => Class::Conflict,
        }
    }
}

impl Refused for super::boards::Refusal {
    fn reason(&self) -> &'static str {
        use super::boards::Refusal as R;
        match self {
            R::Stale { .. } => "stale",
            R::NotFound { .. } => "not_found",
            R::Empty => "empty",
            R::UnreadAnswer { .. } => "unread_answer",
            R::NotBlocked { .. } => "not_blocked",
            R::Archived => "archived",
            R::AlreadyDelivered => "already_delivered",
            R::OutcomeRequired { .. } => "outcome_required",
            R::UnreadResponse { .. } => "unread_response",
        }
    }

    fn class(&self) -> Class {
        use super::boards::Refusal as R;
        match self {
            R::Empty => Class::Invalid,
            R::NotFound { .. } => Class::NotFound,
            _ => Class::Conflict,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::boards::{self, RowStatus};
    use crate::store::questions::{self, Channel, ReplyKind, Status};

    fn tag_is_reason<R: Refused>(r: &R) {
        assert_eq!(r.detail()["refused"], r.reason(), "{r}");
    }

    #[test]
    fn every_reason_is_the_serialized_tag() {
        use questions::Refusal as Q;
        for r in [
            Q::Empty,
            Q::NotFound,
            Q::NotOpen {
                status: Status::Resolved,
            },
            Q::UnreadAnswer {
                reply: "x".into(),
                kind: ReplyKind::Answer,
                source: Channel::Inbox,
                by: "a".into(),
            },
            Q::Stale {
                current_revision: 2,
            },
            Q::AlreadyPickedUp { reply: "x".into() },
        ] {
            tag_is_reason(&r);
        }
        use boards::Refusal as B;
        for r in [
            B::Stale {
                board_version: 1,
                rows: Vec::new(),
            },
            B::NotFound { what: "row".into() },
            B::Empty,
            B::UnreadAnswer {
                annotation: "x".into(),
                kind: None,
                source: None,
                by: None,
            },
            B::NotBlocked {
                status: RowStatus::Done,
            },
            B::Archived,
            B::AlreadyDelivered,
            B::OutcomeRequired { label: "l".into() },
            B::UnreadResponse { label: "l".into() },
        ] {
            tag_is_reason(&r);
        }
    }

    #[test]
    fn blank_text_is_invalid_and_a_missing_item_not_found() {
        assert_eq!(questions::Refusal::Empty.class(), Class::Invalid);
        assert_eq!(questions::Refusal::NotFound.class(), Class::NotFound);
        assert_eq!(
            boards::Refusal::NotFound { what: "x".into() }.class(),
            Class::NotFound
        );
        assert_eq!(boards::Refusal::Archived.class(), Class::Conflict);
    }
}
