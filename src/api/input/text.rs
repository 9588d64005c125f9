//! The text rule of every door of the API, on both engines: no text in a
//! request — a body's strings and object keys at any depth (free-form
//! `args`, `patch`, `state` and `result` included), a path segment, a query
//! parameter — may hold a control character or a bidirectional override.
//! Bodies may hold tab, newline and carriage return (where a field allows
//! several lines: the store's own rules still refuse them in titles and
//! names); ids, path segments and query parameters may not.
//!
//! Why here, before anything is parsed into a request: PostgreSQL cannot
//! store U+0000 in text or JSON at all, so one rule at the door keeps the
//! two engines answering alike (422 naming the field) instead of one of
//! them failing inside a statement; and a bidirectional override (U+202A–
//! U+202E, U+2066–U+2069) makes a title, a step or an action's arguments
//! display differently from what they say to the human deciding on them.
//!
//! What it does not do: length limits and the one-line rule of titles and
//! names stay with the store's validation, which every door shares.

use axum::extract::{FromRequestParts, RawPathParams, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::api::error::{ApiError, ApiResult};

/// Where a text is: a body allows tab, newline and carriage return (the
/// store decides per field whether it may have several lines); an id,
/// path segment or query parameter allows none.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Place {
    Body,
    Line,
}

/// The characters the rule refuses in a body, as a regex class body.
macro_rules! refused_in_body {
    () => {
        r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
    };
}

/// The characters the rule refuses in a line (an id, a path segment, a
/// query parameter, a name), as a regex class body.
macro_rules! refused_in_line {
    () => {
        r"\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
    };
}
pub(crate) use refused_in_line;

/// A schema pattern: body text the rule accepts.
pub(crate) const BODY_TEXT: &str = concat!("^[^", refused_in_body!(), "]*$");

/// A schema pattern: body text the rule accepts that is not blank.
pub(crate) const BODY_TEXT_NOT_BLANK: &str = concat!(
    "^[^",
    refused_in_body!(),
    r"]*[^\s",
    refused_in_line!(),
    "][^",
    refused_in_body!(),
    "]*$"
);

/// A schema pattern: a query value the rule accepts.
pub(crate) const LINE_TEXT: &str = concat!("^[^", refused_in_line!(), "]*$");

/// A schema pattern: a path segment or query value the rule accepts that
/// is not blank.
pub(crate) const LINE_NOT_BLANK: &str = concat!(
    "^[^",
    refused_in_line!(),
    r"]*[^\s",
    refused_in_line!(),
    "][^",
    refused_in_line!(),
    "]*$"
);

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The first character of `s` the rule refuses in `place`.
fn refused(s: &str, place: Place) -> Option<char> {
    s.chars().find(|&c| {
        let line_break = matches!(c, '\t' | '\n' | '\r');
        (c.is_control() && !(place == Place::Body && line_break)) || is_bidi(c)
    })
}

/// The refusal of `field` for holding `c`, in the words the store uses for
/// a name with control characters.
fn refusal(field: &str, c: char) -> ApiError {
    let code = format!("U+{:04X}", c as u32);
    if is_bidi(c) {
        ApiError::invalid(format!(
            "{field} contains a bidirectional override ({code}), which makes text display differently from what it says; use plain text"
        ))
    } else {
        ApiError::invalid(format!(
            "{field} contains control characters ({code}); use plain text"
        ))
    }
}

/// Check one text: 422 naming `field` when the rule refuses it.
pub(crate) fn check(field: &str, s: &str, place: Place) -> ApiResult<()> {
    match refused(s, place) {
        Some(c) => Err(refusal(field, c)),
        None => Ok(()),
    }
}

/// Check every string and object key of a JSON body, naming the first
/// refused one by its path (`title`, `rows[1].next_step`, `args.cmd`).
///
/// The body is first scanned as bytes: a refused character can only appear
/// as a `\u` escape (JSON refuses raw control bytes in strings) or as the
/// raw UTF-8 of DEL, a C1 control or a bidirectional override, so a body
/// with none of those is not parsed twice.
pub(crate) fn check_body(bytes: &[u8]) -> ApiResult<()> {
    if !may_hold_refused(bytes) {
        return Ok(());
    }
    // A body that is not JSON is refused by the parse that follows, in its
    // own words.
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(());
    };
    check_value(&v)
}

/// Check every string and object key of a JSON value, as
/// [`check_body`] does.
pub(crate) fn check_value(v: &Value) -> ApiResult<()> {
    let mut path = String::new();
    walk(v, &mut path)
}

fn walk(v: &Value, path: &mut String) -> ApiResult<()> {
    match v {
        Value::String(s) => check(field_name(path), s, Place::Body),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, item) in map {
                if let Some(c) = refused(k, Place::Body) {
                    let field = match path.is_empty() {
                        true => "a field name".to_string(),
                        false => format!("a key of {path}"),
                    };
                    return Err(refusal(&field, c));
                }
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                walk(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn field_name(path: &str) -> &str {
    if path.is_empty() { "the body" } else { path }
}

/// Whether `bytes` might hold a refused character: a `\u` escape, DEL, or
/// the UTF-8 of a C1 control (C2 80–9F) or a bidirectional override
/// (E2 80 AA–AE, E2 81 A6–A9). False positives only cost a parse.
fn may_hold_refused(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w == b"\\u")
        || bytes.contains(&0x7f)
        || bytes
            .windows(2)
            .any(|w| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1]))
        || bytes.windows(3).any(|w| {
            w[0] == 0xe2
                && ((w[1] == 0x80 && (0xaa..=0xae).contains(&w[2]))
                    || (w[1] == 0x81 && (0xa6..=0xa9).contains(&w[2])))
        })
}

/// Middleware: the rule over a request's path parameters (percent-decoded)
/// and query parameters, before its handler runs; a path parameter that is
/// not UTF-8 once decoded gets the API's JSON refusal (400 `bad_path`)
/// rather than the router's plain-text one.
pub(crate) async fn check_request(req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    if let Err(e) = check_parts(&mut parts).await {
        return e.into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

async fn check_parts(parts: &mut axum::http::request::Parts) -> ApiResult<()> {
    use axum::extract::rejection::RawPathParamsRejection;
    match RawPathParams::from_request_parts(parts, &()).await {
        Ok(params) => {
            for (name, value) in &params {
                check(name, value, Place::Line)?;
            }
        }
        Err(RawPathParamsRejection::InvalidUtf8InPathParam(e)) => {
            let text = e.body_text();
            let name = text.split('`').nth(1).unwrap_or("a path segment");
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_path",
                format!("{name} is not UTF-8 once percent-decoded; send the path as UTF-8"),
            ));
        }
        // A route without parameters.
        Err(_) => {}
    }
    // A query that does not parse is refused by the handler's own
    // extractor, in its words; form decoding replaces bytes that are not
    // UTF-8, so only the rule is left to check here.
    if let Ok(axum::extract::Query(pairs)) =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
    {
        for (k, v) in &pairs {
            if let Some(c) = refused(k, Place::Line) {
                return Err(refusal("a query parameter's name", c));
            }
            check(&format!("query parameter {k}"), v, Place::Line)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(bytes: &str) -> Option<String> {
        check_body(bytes.as_bytes()).err().map(|e| e.message)
    }

    #[test]
    fn body_strings_and_keys_are_named_by_their_path() {
        let table = [
            (
                r#"{"title":"a\u0000b"}"#,
                Some("title contains control characters (U+0000)"),
            ),
            (
                r#"{"rows":[{"label":"x"},{"next_step":"go \u202e back"}]}"#,
                Some("rows[1].next_step contains a bidirectional override (U+202E)"),
            ),
            (
                r#"{"args":{"cmd":{"deep":["ok","\u001b[31m"]}}}"#,
                Some("args.cmd.deep[1] contains control characters (U+001B)"),
            ),
            (
                r#"{"args":{"a\u0000":1}}"#,
                Some("a key of args contains control characters (U+0000)"),
            ),
            (
                r#"{"x\u2066":1}"#,
                Some("a field name contains a bidirectional override (U+2066)"),
            ),
            (
                "{\"t\":\"raw \u{85} next line\"}",
                Some("t contains control characters (U+0085)"),
            ),
            (
                "{\"t\":\"raw \u{2069}\"}",
                Some("t contains a bidirectional override (U+2069)"),
            ),
            (
                "{\"t\":\"del \u{7f}\"}",
                Some("t contains control characters (U+007F)"),
            ),
            (
                r#"{"detail":"two\nlines\tand\r\n tabs","t":"\u00e9\u200f\u2067x"}"#,
                Some("t contains a bidirectional override (U+2067)"),
            ),
            (
                r#"{"detail":"two\nlines\tand\r\n tabs","t":"\u00e9 caf\u00e9 \u200f"}"#,
                None,
            ),
            (r#"{"t":"a \\u0000 written out"}"#, None),
            ("{\"t\":\"ÄÖ ü — ‘quotes’ 中文 \u{2028}\"}", None),
        ];
        for (body, want) in table {
            let got = said(body);
            match (want, &got) {
                (Some(w), Some(g)) => assert!(g.starts_with(w), "{body}: {g}"),
                (None, None) => {}
                _ => panic!("{body}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn lines_allow_no_line_breaks_and_bodies_do() {
        assert!(check("id", "a\tb", Place::Line).is_err());
        assert!(check("id", "a\nb", Place::Line).is_err());
        assert!(check("detail", "a\tb\nc\r", Place::Body).is_ok());
        assert!(check("id", "q-1234", Place::Line).is_ok());
        let e = check("id", "abc\0def", Place::Line).unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(e.reason, "invalid");
    }
}
