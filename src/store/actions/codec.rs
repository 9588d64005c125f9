//! Strict JSON for action arguments: parsing, the canonical form and its
//! fingerprint, argument patches, and secret redaction.
//!
//! The person approving must see exactly what will run, so arguments are
//! plain JSON objects (no NaN or Infinity, no lone UTF-16 surrogates, at most
//! [`MAX_ARGS_BYTES`]) stored in one canonical spelling. No I/O here.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Largest accepted arguments or patch, in bytes of JSON text.
pub const MAX_ARGS_BYTES: usize = 1024 * 1024;

/// Key patterns redacted when none are configured.
pub const DEFAULT_REDACT_KEYS: [&str; 5] =
    ["token", "secret", "password", "authorization", "api_key"];

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// Parse `text` as a strict JSON object: `what` names it in errors
/// ("args", "patch").
pub fn parse_object(what: &str, text: &str) -> Result<Map<String, Value>, String> {
    if text.len() > MAX_ARGS_BYTES {
        return Err(format!(
            "{what}: {} bytes; the limit is {MAX_ARGS_BYTES} bytes (1 MiB)",
            text.len()
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!("{what}: not valid JSON ({e}); NaN, Infinity and comments are not JSON")
    })?;
    match value {
        Value::Object(m) => Ok(m),
        other => Err(format!(
            "{what} must be a JSON object like {{\"to\": \"a@b.c\"}}, not {}",
            type_name(&other)
        )),
    }
}

/// The JSON type of `v`, in words.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The canonical spelling: compact, object keys sorted at every level.
/// Written by hand so that it does not depend on serde_json's map order
/// (which a `preserve_order` feature elsewhere in the build would change).
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// SHA-256 hex of the canonical `{kind, summary, args}`: what dedup compares.
/// The summary is included because it is what the person reads on the button.
pub fn fingerprint(kind: &str, summary: &str, args: &Value) -> String {
    let payload = serde_json::json!({"kind": kind, "summary": summary, "args": args});
    let digest = Sha256::digest(canonical(&payload).as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Validate `patch_text` against `current` (the arguments it edits) and
/// return `(patch, patched arguments)`. Only keys already present may change,
/// each to a value of the same JSON type, and the result must stay within
/// the size limit. Pure: callers run it before touching any state.
pub fn apply_patch(current: &Value, patch_text: &str) -> Result<(Value, Value), String> {
    let patch = parse_object("patch", patch_text)?;
    let Value::Object(cur) = current else {
        return Err("the action's arguments are not an object; it cannot be patched".into());
    };
    if patch.is_empty() {
        return Err("the patch is empty: give at least one key to change".into());
    }
    let mut out = cur.clone();
    for (k, v) in &patch {
        let Some(old) = cur.get(k) else {
            let mut known: Vec<&String> = cur.keys().collect();
            known.sort();
            return Err(format!(
                "the patch changes `{k}`, which the action does not have; known keys: {}",
                known
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if std::mem::discriminant(old) != std::mem::discriminant(v) {
            return Err(format!(
                "the patch makes `{k}` {}, but it is {}; keep the same JSON type",
                type_name(v),
                type_name(old)
            ));
        }
        out.insert(k.clone(), v.clone());
    }
    let out = Value::Object(out);
    let len = canonical(&out).len();
    if len > MAX_ARGS_BYTES {
        return Err(format!(
            "the patched arguments would be {len} bytes; the limit is {MAX_ARGS_BYTES} bytes"
        ));
    }
    Ok((Value::Object(patch), out))
}

/// Replaces the values of secret-looking keys. A key is secret when it
/// contains one of the patterns, case-insensitively, at any depth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redactor {
    patterns: Vec<String>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(DEFAULT_REDACT_KEYS.iter().map(|s| s.to_string()))
    }
}

impl Redactor {
    /// A redactor for these key patterns (blank ones are ignored).
    pub fn new(patterns: impl IntoIterator<Item = String>) -> Self {
        Redactor {
            patterns: patterns
                .into_iter()
                .map(|p| p.trim().to_lowercase())
                .filter(|p| !p.is_empty())
                .collect(),
        }
    }

    /// The patterns, lower-cased.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether `key` names a secret.
    pub fn is_secret(&self, key: &str) -> bool {
        let key = key.to_lowercase();
        self.patterns.iter().any(|p| key.contains(p.as_str()))
    }

    /// A copy of `v` with every secret value replaced by [`REDACTED`].
    pub fn redact(&self, v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| {
                        let x = if self.is_secret(k) {
                            Value::String(REDACTED.into())
                        } else {
                            self.redact(x)
                        };
                        (k.clone(), x)
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.redact(x)).collect()),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_parsing() {
        assert!(parse_object("args", r#"{"a":1}"#).is_ok());
        assert!(parse_object("args", r#"{"e":"\ud83d\ude00"}"#).is_ok());
        assert!(
            parse_object("args", r#"{"p":"\\ud800"}"#).is_ok(),
            "escaped backslash"
        );
        for bad in [
            r#"{"a":NaN}"#,
            r#"{"a":Infinity}"#,
            r#"{"a":-Infinity}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\udc00x"}"#,
            r#"{"a":"\ud800\u0041"}"#,
            r#"{"a":1e400}"#,
            "[1,2]",
            "\"s\"",
            "{",
            "",
        ] {
            assert!(parse_object("args", bad).is_err(), "{bad}");
        }
        // A high surrogate followed by another escape, or by text that only
        // looks like a low surrogate, is alone: serde_json refuses it, and
        // the message says where.
        for alone in [r#"{"a":"\ud800\n"}"#, r#"{"a":"\ud800abdc00"}"#] {
            let e = parse_object("args", alone).unwrap_err();
            assert!(
                e.contains("not valid JSON") && e.contains("column"),
                "{alone}: {e}"
            );
        }
        // Anything but an object is refused with its type in words.
        for (json, words) in [
            ("[1,2]", "not an array"),
            ("\"s\"", "not a string"),
            ("7", "not a number"),
            ("true", "not a boolean"),
            ("null", "not null"),
        ] {
            let e = parse_object("args", json).unwrap_err();
            assert!(
                e.contains("must be a JSON object") && e.contains(words),
                "{json}: {e}"
            );
        }
        let big = format!(r#"{{"a":"{}"}}"#, "x".repeat(MAX_ARGS_BYTES));
        assert!(parse_object("args", &big).unwrap_err().contains("limit"));
    }

    #[test]
    fn a_patch_may_grow_the_arguments_to_exactly_one_mebibyte() {
        // `{"a":"…","b":""}` is 15 bytes around the filler; the patch text
        // itself stays under the limit, so only the patched size decides.
        let current = json!({"a": "", "b": ""});
        let fill = |n: usize| format!(r#"{{"a":"{}"}}"#, "x".repeat(n));
        let (_, out) = apply_patch(&current, &fill(MAX_ARGS_BYTES - 15)).unwrap();
        assert_eq!(canonical(&out).len(), MAX_ARGS_BYTES);
        let e = apply_patch(&current, &fill(MAX_ARGS_BYTES - 14)).unwrap_err();
        assert!(
            e.contains(&format!("would be {} bytes", MAX_ARGS_BYTES + 1)),
            "{e}"
        );
    }

    #[test]
    fn canonical_sorts_and_fingerprints_ignore_spelling() {
        let a: Value = serde_json::from_str(r#"{"b":[1,{"z":1,"y":2}],"a":"x"}"#).unwrap();
        assert_eq!(canonical(&a), r#"{"a":"x","b":[1,{"y":2,"z":1}]}"#);
        let b: Value = serde_json::from_str(r#"{ "a" : "x", "b" : [1, {"y":2, "z":1}] }"#).unwrap();
        assert_eq!(fingerprint("k", "s", &a), fingerprint("k", "s", &b));
        assert_ne!(fingerprint("k", "s", &a), fingerprint("k", "t", &a));
        assert_eq!(fingerprint("k", "s", &a).len(), 64);
    }

    #[test]
    fn patches() {
        let cur = json!({"to": "a@b", "n": 1, "tags": ["x"]});
        let (p, out) = apply_patch(&cur, r#"{"to":"c@d","n":2.5}"#).unwrap();
        assert_eq!(p, json!({"to":"c@d","n":2.5}));
        assert_eq!(out, json!({"to":"c@d","n":2.5,"tags":["x"]}));
        assert!(
            apply_patch(&cur, r#"{"cc":"x"}"#)
                .unwrap_err()
                .contains("known keys")
        );
        assert!(
            apply_patch(&cur, r#"{"n":"2"}"#)
                .unwrap_err()
                .contains("same JSON type")
        );
        assert!(apply_patch(&cur, r#"{"tags":{}}"#).is_err());
        assert!(apply_patch(&cur, "{}").is_err());
        assert!(apply_patch(&cur, "[1]").is_err());
    }

    #[test]
    fn redaction_is_recursive_and_case_insensitive() {
        let r = Redactor::default();
        let v = json!({"API_KEY": "k", "x": {"GitHubToken": "t", "list": [{"Password": "p", "ok": 1}]},
                       "authorization_header": "Bearer z", "user": "bob"});
        let out = r.redact(&v);
        assert_eq!(
            out,
            json!({"API_KEY": REDACTED, "x": {"GitHubToken": REDACTED, "list": [{"Password": REDACTED, "ok": 1}]},
                   "authorization_header": REDACTED, "user": "bob"})
        );
        let custom = Redactor::new(["pin".to_string()]);
        assert_eq!(
            custom.redact(&json!({"PIN": 1, "token": 2})),
            json!({"PIN": REDACTED, "token": 2})
        );
    }
}
