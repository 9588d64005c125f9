//! One error type for every HTTP handler: user mistakes and refusals become
//! 4xx with a machine-readable `reason` and a human `message` (plus the
//! refusal's details when the store gave some); internal failures are
//! logged once here and answered with a generic 500.
//!
//! Status codes: 400 malformed JSON, 401 no or bad token, 403 wrong role or
//! project, 404 not found, 409 refused by the store (stale, already
//! answered, not open, dedup conflict…), 413 body over 1 MiB, 415 not JSON,
//! 422 invalid input, 503 database busy.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::ops;
use crate::store;
use crate::store::{actions, boards, questions};

/// An API failure, rendered as `{"reason", "message", "detail"?}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// The response status: 4xx for the caller's mistakes and refusals, 5xx otherwise.
    pub status: StatusCode,
    /// Machine-readable reason, snake_case.
    pub reason: String,
    /// What went wrong and what to do, for people.
    pub message: String,
    /// The refusal's data (the waiting answer, the current versions…).
    pub detail: Option<Value>,
}

impl ApiError {
    /// A failure with `status`, `reason` and `message`.
    pub fn new(status: StatusCode, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            reason: reason.into(),
            message: message.into(),
            detail: None,
        }
    }

    /// Attach the refusal's data.
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// 401: no token, a malformed header, or an unknown or revoked token.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403: the token's role or project does not allow this.
    pub fn forbidden(reason: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, reason, message)
    }

    /// 404 for `what` (also what a foreign project's item looks like).
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{} not found", what.into()),
        )
    }

    /// 422: the input breaks a documented rule.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }

    /// 409: the store refused the write; nothing changed.
    pub fn conflict(reason: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, reason, message)
    }

    /// 500: logged here, once; the client gets no internals.
    pub fn internal(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "API request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the daemon log has the details",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"reason": self.reason, "message": self.message});
        if let Some(d) = self.detail {
            body["detail"] = d;
        }
        let mut resp = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

impl From<ops::Error> for ApiError {
    fn from(e: ops::Error) -> Self {
        let status = match &e {
            ops::Error::Invalid { .. } | ops::Error::HostOnly { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ops::Error::NotFound { .. } => StatusCode::NOT_FOUND,
            ops::Error::Ambiguous { .. } | ops::Error::Refused { .. } => StatusCode::CONFLICT,
            ops::Error::Denied { reason, .. } if reason == "unauthorized" => {
                StatusCode::UNAUTHORIZED
            }
            ops::Error::Denied { .. } => StatusCode::FORBIDDEN,
            ops::Error::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ops::Error::Internal { message } => return ApiError::internal(message),
        };
        let detail = match &e {
            ops::Error::Refused { detail, .. } if !detail.is_null() => Some(detail.clone()),
            _ => None,
        };
        ApiError {
            status,
            reason: e.reason().to_string(),
            message: e.to_string(),
            detail,
        }
    }
}

/// The store's errors and refusals, read through the operations' one
/// mapping ([`ops::Error`]) for a handler that still calls the store.
macro_rules! through_ops {
    ($($t:ty),*) => {$(
        impl From<$t> for ApiError {
            fn from(e: $t) -> Self {
                ops::Error::from(e).into()
            }
        }
    )*};
}

through_ops!(
    store::Error,
    actions::Error,
    questions::Refusal,
    boards::Refusal
);

/// Handler results.
pub(crate) type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_map_to_409_with_reason_and_detail() {
        let e: ApiError = questions::Refusal::Stale {
            current_revision: 3,
        }
        .into();
        assert_eq!(e.status, StatusCode::CONFLICT);
        assert_eq!(e.reason, "stale");
        assert_eq!(e.detail.unwrap()["current_revision"], 3);
        let e: ApiError = boards::Refusal::NotFound {
            what: "board `x`".into(),
        }
        .into();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        let e: ApiError = store::Error::Invalid("title too long".into()).into();
        assert_eq!(
            (e.status, e.reason.as_str(), e.message.as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "title too long"
            )
        );
    }
}
