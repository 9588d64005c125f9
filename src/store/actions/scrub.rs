//! Secrets out of free text: an action's `error`, its result's strings (the
//! executor's stdout/stderr tails) and people's reasons are written by
//! programs and people, not as JSON keys, so key redaction alone misses a
//! command that echoes its token. Two passes, both before anything is
//! stored, shown or audited: every known secret value (the string values of
//! the action's secret-looking argument keys) is replaced, then every
//! `<secret key>[:=] value` written in the text (`token=…`,
//! `"password": "…"`, `Authorization: Bearer …`). This module only rewrites
//! text; it decides nothing about which keys are secret ([`Redactor`] does).

use serde_json::Value;

use super::codec::{REDACTED, Redactor};

/// Values shorter than this are not scrubbed by value: replacing every `1`
/// or `no` in a text would destroy it and protect nothing.
const MIN_SECRET_LEN: usize = 4;

/// The string values under secret-looking keys in `v`, at any depth.
pub(crate) fn secret_values(r: &Redactor, v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if r.is_secret(k) {
                    collect_strings(x, out);
                } else {
                    secret_values(r, x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| secret_values(r, x, out)),
        _ => {}
    }
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if s.len() >= MIN_SECRET_LEN => out.push(s.clone()),
        Value::Number(n) if n.to_string().len() >= MIN_SECRET_LEN => out.push(n.to_string()),
        Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// `text` with every known secret value and every value written after a
/// secret-looking key replaced by [`REDACTED`].
pub(crate) fn text(r: &Redactor, values: &[String], text: &str) -> String {
    let mut out = text.to_string();
    let mut values: Vec<&String> = values.iter().collect();
    // Longest first, so a secret containing another is replaced whole.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    for v in values {
        if out.contains(v.as_str()) {
            out = out.replace(v.as_str(), REDACTED);
        }
    }
    key_values(r, &out)
}

/// A JSON value with secret keys redacted and every string scrubbed.
pub(crate) fn value(r: &Redactor, values: &[String], v: &Value) -> Value {
    match r.redact(v) {
        Value::String(s) => Value::String(text(r, values, &s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| value(r, values, x)).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| (k, value(r, values, &x)))
                .collect(),
        ),
        other => other,
    }
}

/// Replace the value after each `<key containing a pattern>` followed by
/// `:` or `=` (quotes and spaces allowed around them).
fn key_values(r: &Redactor, text: &str) -> String {
    // ASCII lower-casing keeps every byte offset, so offsets found in
    // `lower` cut `text` at the same places.
    let lower = text.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        let hit = if text.is_char_boundary(i) {
            r.patterns()
                .iter()
                .find(|p| lower[i..].starts_with(p.as_str()))
        } else {
            None
        };
        let Some(p) = hit else {
            i += 1;
            continue;
        };
        match value_span(b, i + p.len()) {
            Some((start, end)) if &text[start..end] != REDACTED => {
                out.push_str(&text[last..start]);
                out.push_str(REDACTED);
                last = end;
                i = end;
            }
            _ => i += p.len(),
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Where the value of a key that ends somewhere after `at` lies: the rest
/// of the key name, an optional closing quote, `:` or `=`, an optional
/// opening quote and an optional auth scheme (`Bearer …`), then the value
/// up to a space, quote or separator.
fn value_span(b: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let skip = |at: &mut usize, ok: &dyn Fn(u8) -> bool| {
        while *at < b.len() && ok(b[*at]) {
            *at += 1;
        }
    };
    skip(&mut at, &|c| {
        c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
    });
    skip(&mut at, &|c| c == b'"' || c == b'\'');
    skip(&mut at, &|c| c == b' ' || c == b'\t');
    if at >= b.len() || (b[at] != b':' && b[at] != b'=') {
        return None;
    }
    at += 1;
    skip(&mut at, &|c| {
        c == b' ' || c == b'\t' || c == b'"' || c == b'\''
    });
    for scheme in [&b"bearer "[..], b"basic ", b"token "] {
        if b[at..].starts_with(scheme) {
            at += scheme.len();
            skip(&mut at, &|c| c == b' ');
        }
    }
    let start = at;
    let stop = |c: u8| c.is_ascii_whitespace() || b"\"',;&)}]".contains(&c);
    skip(&mut at, &|c| !stop(c));
    (at > start).then_some((start, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r() -> Redactor {
        Redactor::default()
    }

    #[test]
    fn known_values_and_written_keys_are_scrubbed() {
        let values = vec!["s3cr3t-value".to_string()];
        for (input, want) in [
            ("echo s3cr3t-value done", "echo [redacted] done"),
            ("token=abc123 next", "token=[redacted] next"),
            ("API_KEY: xyz789", "API_KEY: [redacted]"),
            (
                r#"{"password": "hunter22", "n": 1}"#,
                r#"{"password": "[redacted]", "n": 1}"#,
            ),
            (
                "Authorization: Bearer eyJabc.def",
                "Authorization: Bearer [redacted]",
            ),
            (
                "curl -H 'x-auth-token=q1w2e3r4'",
                "curl -H 'x-auth-token=[redacted]'",
            ),
            (
                "no secrets here: tokens are fine",
                "no secrets here: tokens are fine",
            ),
            ("token= ", "token= "),
            ("é token=ü1234 à", "é token=[redacted] à"),
        ] {
            assert_eq!(text(&r(), &values, input), want, "{input}");
        }
    }

    #[test]
    fn short_values_are_left_alone_and_values_collected_at_depth() {
        let mut out = Vec::new();
        secret_values(
            &r(),
            &json!({"api_token": "abcd1234", "pin": {"secret": "1"}, "to": "bob",
                    "nested": [{"password": ["longpassword", 12345]}]}),
            &mut out,
        );
        out.sort();
        assert_eq!(out, ["12345", "abcd1234", "longpassword"]);
    }

    #[test]
    fn values_scrub_keys_and_strings() {
        let v = value(
            &r(),
            &["abcd1234".to_string()],
            &json!({"stdout_tail": "sent with abcd1234", "token": "x", "n": [ "password=p4ss" ]}),
        );
        assert_eq!(
            v,
            json!({"stdout_tail": "sent with [redacted]", "token": "[redacted]", "n": ["password=[redacted]"]})
        );
    }
}
