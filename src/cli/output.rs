//! The one JSON contract of `--json` and the one exit-code rule.
//!
//! Success prints one object whose top-level key names the entity:
//! `{"question": …}`, `{"action": …}`, `{"board": …}`, `{"session": …}`,
//! `{"token": …}`, … (additive fields such as `created` sit next to it), or
//! a list as `{"questions": […], "next": <cursor or null>}`. Every entity
//! carries `id` and `short_id`. Any failure prints
//! `{"error": {"reason", "message", "detail"}}` instead, built in one
//! place ([`error_object`]) from the error chain, with the exit code of
//! [`super::exit`]. `reason` uses the HTTP API's vocabulary where one
//! exists (`invalid`, `not_found`, `stale`, `not_open`, `dedup_conflict`,
//! `malformed_json`, …). This module does not decide what a command does;
//! it only says how its result is printed and how it exits.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::exit;
use crate::ops;

/// A failure with its own exit code, reason, message and detail.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The process's exit code (one of [`exit`]'s).
    pub code: u8,
    /// Machine-readable reason, snake_case.
    pub reason: String,
    /// One line for people.
    pub message: String,
    /// What the failure is about (the refusal, the current entity…).
    pub detail: Option<Value>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// An error that exits with `code`, with that code's default reason.
pub(crate) fn fail(code: u8, message: impl Into<String>) -> anyhow::Error {
    fail_as(code, exit::reason(code), message)
}

/// An error that exits with `code` and says `reason`.
pub(crate) fn fail_as(code: u8, reason: &str, message: impl Into<String>) -> anyhow::Error {
    Failure {
        code,
        reason: reason.into(),
        message: message.into(),
        detail: None,
    }
    .into()
}

/// A refusal with its detail: `detail` is serialized as the error's
/// `detail`, and its own `refused` or `outcome` tag (the store's reason,
/// e.g. `stale`, `already_decided`) becomes the `reason`, unless the code
/// is a timeout (`timed_out`).
pub(crate) fn refusal<T: Serialize>(code: u8, detail: &T, message: String) -> anyhow::Error {
    let detail = serde_json::to_value(detail).unwrap_or(Value::Null);
    let tag = ["refused", "outcome"]
        .iter()
        .find_map(|k| detail.get(k).and_then(Value::as_str));
    let reason = match tag {
        Some(t) if code != exit::TIMEOUT => t.to_string(),
        _ => exit::reason(code).to_string(),
    };
    Failure {
        code,
        reason,
        message,
        detail: Some(detail),
    }
    .into()
}

/// `value` as the entity named `key`: its JSON with `short_id` added from
/// `id`. A session (`session`, `sessions`) has no `id` column: its
/// `session_id` is given as `id`; a ledger entry's `event_id` likewise.
/// Board rows (`rows`, `row`) get a `short_id` too.
pub(crate) fn entity<T: Serialize>(key: &str, value: &T) -> Value {
    let alias = match key {
        "session" | "sessions" | "resume" => Some("session_id"),
        "ledger_entry" | "ledger_entries" => Some("event_id"),
        _ => None,
    };
    let mut v = serde_json::to_value(value).unwrap_or(Value::Null);
    ids(&mut v, alias);
    if let Some(Value::Array(rows)) = v.get_mut("rows") {
        rows.iter_mut().for_each(|r| ids(r, None));
    }
    if let Some(row) = v.get_mut("row") {
        ids(row, None);
    }
    v
}

fn ids(v: &mut Value, alias: Option<&str>) {
    let Value::Object(m) = v else { return };
    if !m.contains_key("id")
        && let Some(Value::String(s)) = alias.and_then(|a| m.get(a))
    {
        let s = s.clone();
        m.insert("id".into(), Value::String(s));
    }
    if !m.contains_key("short_id")
        && let Some(Value::String(id)) = m.get("id")
    {
        let short = crate::store::short_id(id).to_string();
        m.insert("short_id".into(), Value::String(short));
    }
}

/// `{key: entity(value)}` plus the fields of `extra` (an object).
pub(crate) fn one<T: Serialize>(key: &str, value: &T, extra: Value) -> Value {
    let mut m = Map::new();
    if let Value::Object(e) = extra {
        m.extend(e);
    }
    m.insert(key.into(), entity(key, value));
    Value::Object(m)
}

/// `{key: [entity…], "next": next}`.
pub(crate) fn list<T: Serialize>(key: &str, items: &[T], next: Option<i64>) -> Value {
    json!({key: items.iter().map(|i| entity(key, i)).collect::<Vec<_>>(), "next": next})
}

/// The exit code and `{"reason", "message", "detail"}` of an error, from
/// the first link of its chain that says what went wrong.
pub(crate) fn error_object(e: &anyhow::Error) -> (u8, Value) {
    let message = format!("{e:#}");
    let (code, reason, detail): (u8, String, Option<Value>) = classify(e);
    let body = json!({"reason": reason, "message": message, "detail": detail});
    (code, body)
}

fn classify(e: &anyhow::Error) -> (u8, String, Option<Value>) {
    for cause in e.chain() {
        if let Some(f) = cause.downcast_ref::<Failure>() {
            return (f.code, f.reason.clone(), f.detail.clone());
        }
        if let Some(o) = cause.downcast_ref::<ops::Error>() {
            return ops_error(o);
        }
        // A host-only command's store error reads through the one mapping
        // (`ops/error.rs`), as every door's does.
        if let Some(a) = cause.downcast_ref::<crate::store::actions::Error>() {
            return ops_error(&a.into());
        }
        if let Some(s) = cause.downcast_ref::<crate::store::Error>() {
            return ops_error(&s.into());
        }
        if cause.downcast_ref::<crate::config::Error>().is_some() {
            return (exit::INVALID, "invalid".into(), None);
        }
    }
    (exit::INTERNAL, "internal".into(), None)
}

/// An operation's error as an exit code, its reason and its detail.
fn ops_error(o: &ops::Error) -> (u8, String, Option<Value>) {
    let code = match o {
        ops::Error::Invalid { .. } | ops::Error::HostOnly { .. } => exit::INVALID,
        ops::Error::NotFound { .. } | ops::Error::Ambiguous { .. } => exit::NOT_FOUND,
        ops::Error::Refused { reason, .. } if reason == "not_found" => exit::NOT_FOUND,
        ops::Error::Refused { reason, .. }
            if matches!(reason.as_str(), "invalid" | "empty" | "malformed_json") =>
        {
            exit::INVALID
        }
        ops::Error::Refused { .. } | ops::Error::Denied { .. } => exit::REFUSED,
        ops::Error::Busy { .. } | ops::Error::Internal { .. } => exit::INTERNAL,
    };
    let detail = match o {
        ops::Error::Refused { detail, .. } if !detail.is_null() => Some(detail.clone()),
        _ => None,
    };
    (code, o.reason().to_string(), detail)
}

/// A store error as a failure with its own code and reason (read through
/// `ops::Error`), said in one line (sqlx's source would repeat it under
/// `{:#}`).
pub(crate) fn store_failure(s: &crate::store::Error) -> anyhow::Error {
    let (code, reason, detail) = ops_error(&s.into());
    Failure {
        code,
        reason,
        message: s.describe(),
        detail,
    }
    .into()
}

/// True when the command line asks for JSON (`--json` before any `--`),
/// for errors clap reports before the arguments are parsed.
pub(crate) fn wants_json(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    args.into_iter()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_get_id_and_short_id() {
        let v = entity(
            "session",
            &json!({"session_id": "agent-session-1234567890"}),
        );
        assert_eq!(v["id"], "agent-session-1234567890");
        assert_eq!(v["short_id"], "34567890");
        let v = entity(
            "ledger_entry",
            &json!({"session_id": "s", "event_id": "e-1"}),
        );
        assert_eq!(
            (v["id"].as_str(), v["short_id"].as_str()),
            (Some("e-1"), Some("e-1"))
        );
        let v = entity("question", &json!({"session_id": "s"}));
        assert!(
            v.get("id").is_none(),
            "only a session's session_id is its id"
        );
        let b = json!({"id": "0123456789abcdef", "rows": [{"id": "row0000011112222"}]});
        let v = entity("board", &b);
        assert_eq!(v["short_id"], "89abcdef");
        assert_eq!(v["rows"][0]["short_id"], "11112222");
        let v = entity("question", &json!({"id": "x", "short_id": "kept"}));
        assert_eq!(v["short_id"], "kept");
    }

    #[test]
    fn errors_map_to_one_code_and_reason() {
        let cases: Vec<(anyhow::Error, u8, &str)> = vec![
            (ops::Error::invalid("too many options").into(), 2, "invalid"),
            (ops::Error::not_found("no question").into(), 4, "not_found"),
            (
                ops::Error::refused("stale", "re-read", json!({"current_revision": 2})).into(),
                3,
                "stale",
            ),
            (fail(exit::TIMEOUT, "nothing yet"), 5, "timed_out"),
            (
                refusal(
                    exit::REFUSED,
                    &json!({"outcome": "already_decided"}),
                    "m".into(),
                ),
                3,
                "already_decided",
            ),
            (
                refusal(
                    exit::TIMEOUT,
                    &json!({"outcome": "still_pending"}),
                    "m".into(),
                ),
                5,
                "timed_out",
            ),
            (crate::store::Error::Busy.into(), 1, "busy"),
            (anyhow::anyhow!("disk on fire"), 1, "internal"),
        ];
        for (e, code, reason) in cases {
            let (c, body) = error_object(&e);
            assert_eq!(
                (c, body["reason"].as_str().unwrap()),
                (code, reason),
                "{e:#}"
            );
            assert_eq!(body["message"], format!("{e:#}"));
            assert!(body.get("detail").is_some(), "detail is always present");
        }
    }

    #[test]
    fn json_is_wanted_only_before_the_command_separator() {
        let a = |v: &[&str]| wants_json(v.iter().map(std::ffi::OsString::from));
        assert!(a(&["handoff", "--json", "ask", "x"]));
        assert!(a(&["handoff", "ask", "x", "--json"]));
        assert!(!a(&[
            "handoff", "propose", "--exec", "--", "tool", "--json"
        ]));
        assert!(!a(&["--json"]));
    }
}
