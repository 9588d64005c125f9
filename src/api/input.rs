//! Request input: JSON bodies and query strings whose rejections become
//! [`ApiError`]s (so a malformed body gets the same `{reason, message}` as
//! any other refusal), and the long-poll parameters.
//!
//! Bodies are parsed strictly: every request struct carries
//! `#[serde(deny_unknown_fields)]`, and bodies over [`BODY_LIMIT`] are
//! refused with 413 before they are parsed.

use std::time::Duration;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::{ApiError, ApiResult};

/// Largest request body accepted.
pub(crate) const BODY_LIMIT: usize = 1 << 20;

/// Longest long poll a request may ask for.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(300);

/// Long poll when `wait` is given without `timeout`.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// A JSON body parsed strictly.
pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(r) => Err(json_rejection(r)),
        }
    }
}

fn json_rejection(r: JsonRejection) -> ApiError {
    let text = r.body_text();
    match r.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the body is over {} bytes", BODY_LIMIT),
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON with `Content-Type: application/json`",
        ),
        StatusCode::UNPROCESSABLE_ENTITY => ApiError::invalid(text),
        StatusCode::BAD_REQUEST if matches!(r, JsonRejection::JsonSyntaxError(_)) => {
            ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", text)
        }
        other => ApiError::new(other, "bad_request", text),
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
/// [`DEFAULT_WAIT`] when absent, at most [`MAX_WAIT`].
pub(crate) fn wait_timeout(timeout: Option<&str>) -> ApiResult<Duration> {
    let Some(t) = timeout else {
        return Ok(DEFAULT_WAIT);
    };
    let ms = crate::clock::parse_duration_ms(t).map_err(ApiError::invalid)?;
    let d = Duration::from_millis(ms.max(0) as u64);
    if d > MAX_WAIT {
        return Err(ApiError::invalid(format!(
            "timeout `{t}` is too long: at most {}s",
            MAX_WAIT.as_secs()
        )));
    }
    Ok(d)
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
        assert!(wait_timeout(Some("1h")).is_err());
        assert!(wait_timeout(Some("soon")).is_err());
    }
}
