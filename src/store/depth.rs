//! How deep JSON may nest. serde_json refuses to read past [`READ_LIMIT`]
//! levels, so anything stored deeper could never be read back (a stored
//! event that cannot be read would stop every follower of the log). Each
//! door checks a smaller limit than the reader's, leaving room for the
//! envelopes handoff wraps around what it accepted: an event payload, an
//! API page of events, a webhook body.
//!
//! Depth counts nested arrays and objects: a scalar is 0, `{}` is 1,
//! `{"a":[1]}` is 2.

use serde_json::Value;

/// The deepest JSON serde_json reads: its recursion limit is 128, and the
/// 128th nested array or object fails.
pub const READ_LIMIT: usize = 127;

/// The deepest event payload [`append`](super::events) stores: 27 levels
/// below [`READ_LIMIT`] for the envelopes around a payload (an API page
/// adds 3, a webhook body 2).
pub const MAX_PAYLOAD_DEPTH: usize = 100;

/// The deepest request body accepted (API bodies, inbound wakes): a write
/// wraps a body a few levels deep inside its event payload, which must stay
/// within [`MAX_PAYLOAD_DEPTH`].
pub const MAX_BODY_DEPTH: usize = 64;

/// Nesting depth of a value. Iterative: a value built in memory may be
/// deeper than any parser would allow.
pub fn value_depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                deepest = deepest.max(d + 1);
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(d + 1);
                stack.extend(map.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// Nesting depth of JSON text, by scanning brackets outside strings; text
/// that is not JSON gives a meaningless but finite number. Linear, no
/// parsing, so a body can be measured before serde_json sees it.
pub fn text_depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn depths_of_values_and_text_agree() {
        for (text, d) in [
            ("1", 0),
            ("{}", 1),
            (r#"{"a":[1,{"b":"[[[{{"}]}"#, 3),
            (r#"["\"[", [[]]]"#, 3),
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                (value_depth(&v), text_depth(text.as_bytes())),
                (d, d),
                "{text}"
            );
        }
    }

    #[test]
    fn read_limit_is_serde_jsons() {
        assert!(serde_json::from_str::<Value>(&nested(READ_LIMIT)).is_ok());
        assert!(serde_json::from_str::<Value>(&nested(READ_LIMIT + 1)).is_err());
        const { assert!(MAX_BODY_DEPTH + 4 <= MAX_PAYLOAD_DEPTH && MAX_PAYLOAD_DEPTH + 8 <= READ_LIMIT) };
    }
}
