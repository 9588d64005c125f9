//! Request input: JSON bodies and query strings whose rejections become
//! [`ApiError`]s (so a malformed body gets the same `{reason, message}` as
//! any other refusal), the handler's context ([`Ctx`]: shared state and
//! caller together), and the long-poll parameters.
//!
//! Bodies are parsed strictly: every request struct carries
//! `#[serde(deny_unknown_fields)]`, bodies over [`BODY_LIMIT`] are refused
//! with 413 before they are parsed, and a body must be a JSON object nested
//! at most [`MAX_BODY_DEPTH`](crate::store::depth::MAX_BODY_DEPTH) levels
//! (422 `not_an_object` / `too_deep`). Every text of a request (body, path,
//! query) follows one rule, [`text`]: no control characters, no
//! bidirectional overrides (422 naming the field).

use std::time::Duration;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::rejection::{ExtensionRejection, JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use crate::shared::Shared;

pub(crate) mod text;

/// Largest request body accepted.
pub(crate) const BODY_LIMIT: usize = 1 << 20;

/// Longest long poll a request may ask for.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(300);

/// Long poll when `wait` is given without `timeout`.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// The schema pattern of a name field (`by`, `agent`, `project`, …): at
/// most 200 characters, none of them a control character or a
/// bidirectional override ([`text`]).
pub(crate) const NAME: &str = concat!("^[^", text::refused_in_line!(), "]{0,200}$");

// A name field of a body (`agent`, `project`, `session`, …): text that
// follows `NAME`, carrying that pattern in its schema; with
// `#[serde(default)]`, empty when left out. (A plain comment: a doc comment
// would become the description of every field of this type.)
#[derive(Debug, Default, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub(crate) struct Name(#[schemars(regex(pattern = NAME))] pub String);

/// The schema pattern of a duration above zero (`30s`, `5m`, `1500ms`,
/// bare seconds), as [`crate::clock::parse_duration_ms`] reads it.
pub(crate) const DURATION: &str =
    r"^[1-9][0-9]{0,8}(ms|s|sec|secs|m|min|mins|h|hr|hrs|d|day|days)?$";

/// The schema pattern of a long poll's `timeout`: a duration, zero allowed.
pub(crate) const TIMEOUT: &str =
    r"^(0|[1-9][0-9]{0,8})(ms|s|sec|secs|m|min|mins|h|hr|hrs|d|day|days)?$";

/// A JSON body parsed strictly: a JSON object (never an array read as a
/// positional struct), nested at most
/// [`MAX_BODY_DEPTH`](crate::store::depth::MAX_BODY_DEPTH) levels, every
/// string and key following the [`text`] rule.
pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(not_json());
        }
        let bytes = match Bytes::from_request(req, state).await {
            Ok(b) => b,
            Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(too_large()),
            Err(r) => return Err(ApiError::new(r.status(), "bad_request", r.body_text())),
        };
        check_shape(&bytes)?;
        text::check_body(&bytes)?;
        match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(r) => Err(json_rejection(r)),
        }
    }
}

/// `application/json` or any `application/…+json`, as axum's `Json` accepts.
fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(ct) = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Refuse, before parsing into `T`, a body nested past the limit and a
/// body that is valid JSON but not an object: serde reads a struct from an
/// array by position, which would accept `["title", …]` silently.
fn check_shape(bytes: &[u8]) -> ApiResult<()> {
    use crate::store::depth::{MAX_BODY_DEPTH, text_depth};
    let depth = text_depth(bytes);
    if depth > MAX_BODY_DEPTH {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "too_deep",
            format!(
                "the body is nested {depth} levels deep; at most {MAX_BODY_DEPTH} are accepted: send a flatter body"
            ),
        ));
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return Ok(());
    }
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            format!("the body is not valid JSON ({e}): send a JSON object"),
        ));
    }
    let what = match first {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        _ => "a number",
    };
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "not_an_object",
        format!(
            "the body is {what}; send a JSON object with named fields, e.g. {{\"title\": \"…\"}}"
        ),
    ))
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!("the body is over {} bytes", BODY_LIMIT),
    )
}

fn not_json() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "send the body as JSON with `Content-Type: application/json`",
    )
}

fn json_rejection(r: JsonRejection) -> ApiError {
    let text = r.body_text();
    match r.status() {
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => not_json(),
        StatusCode::UNPROCESSABLE_ENTITY => ApiError::invalid(text),
        StatusCode::BAD_REQUEST if matches!(r, JsonRejection::JsonSyntaxError(_)) => {
            ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", text)
        }
        other => ApiError::new(other, "bad_request", text),
    }
}

/// What every `/v1` handler starts from: the daemon's shared state and the
/// caller the auth layer identified (a missing caller is axum's own
/// missing-extension refusal, as with `Extension<Caller>`).
pub(crate) struct Ctx {
    pub s: Shared,
    pub c: Caller,
}

impl FromRequestParts<Shared> for Ctx {
    type Rejection = ExtensionRejection;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Shared,
    ) -> Result<Self, Self::Rejection> {
        let Extension(c) = Extension::<Caller>::from_request_parts(parts, state).await?;
        Ok(Ctx {
            s: state.clone(),
            c,
        })
    }
}

/// A query string parsed strictly.
pub(crate) struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Params(v)),
            Err(r) => Err(query_rejection(r)),
        }
    }
}

fn query_rejection(r: QueryRejection) -> ApiError {
    ApiError::invalid(r.body_text())
}

/// The long-poll duration of `timeout` (`30s`, `2m`, `500ms`, bare seconds),
/// [`DEFAULT_WAIT`] when absent, cut to [`MAX_WAIT`]: a longer wait ends
/// as a timeout after that, and the caller polls again, as with any long poll.
pub(crate) fn wait_timeout(timeout: Option<&str>) -> ApiResult<Duration> {
    let Some(t) = timeout else {
        return Ok(DEFAULT_WAIT);
    };
    let ms = crate::clock::parse_duration_ms(t).map_err(ApiError::invalid)?;
    Ok(Duration::from_millis(ms.max(0) as u64).min(MAX_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_default_and_cap() {
        assert_eq!(wait_timeout(None).unwrap(), DEFAULT_WAIT);
        assert_eq!(wait_timeout(Some("2s")).unwrap(), Duration::from_secs(2));
        assert_eq!(
            wait_timeout(Some("250ms")).unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(wait_timeout(Some("1h")).unwrap(), MAX_WAIT);
        assert!(wait_timeout(Some("soon")).is_err());
    }
}
