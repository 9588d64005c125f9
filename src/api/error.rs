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

use crate::store;
use crate::store::refusal::{Class, Refused};
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

impl From<store::Error> for ApiError {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::Invalid(m) => ApiError::invalid(m),
            // Which items a short reference matches depends on what is
            // stored now: a conflict with the state, as for actions.
            store::Error::Ambiguous(m) => ApiError::new(StatusCode::CONFLICT, "ambiguous", m),
            // Not the other project's name: a scoped caller must not learn it.
            store::Error::SessionElsewhere { session, .. } => ApiError::conflict(
                "session_in_other_project",
                format!(
                    "session `{session}` belongs to another project: every item of a session is \
                     filed in the session's project; use a session id of this project"
                ),
            ),
            store::Error::Busy => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "the database is busy: other handoff processes kept it locked; try again",
            ),
            other => ApiError::internal(other),
        }
    }
}

impl From<actions::Error> for ApiError {
    fn from(e: actions::Error) -> Self {
        match e {
            actions::Error::Store(s) => s.into(),
            actions::Error::NotFound(id) => ApiError::not_found(format!("action `{id}`")),
            actions::Error::Ambiguous(_) => {
                // Which items a short id matches depends on what is stored
                // now: a conflict with the state, like a stale revision.
                ApiError::new(StatusCode::CONFLICT, "ambiguous", e.to_string())
            }
            actions::Error::DedupConflict { .. } => {
                let detail = crate::ops::dedup_conflict_detail(&e).unwrap_or_default();
                ApiError::conflict("dedup_conflict", e.to_string()).with_detail(detail)
            }
        }
    }
}

/// A store refusal: its class sets the status, the store names the reason
/// (the same name every door uses) and the refusal is the detail.
fn refused<R: Refused>(r: &R) -> ApiError {
    let status = match r.class() {
        Class::NotFound => StatusCode::NOT_FOUND,
        Class::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        Class::Conflict => StatusCode::CONFLICT,
    };
    ApiError::new(status, r.reason(), r.to_string()).with_detail(r.detail())
}

impl From<questions::Refusal> for ApiError {
    fn from(r: questions::Refusal) -> Self {
        refused(&r)
    }
}

impl From<boards::Refusal> for ApiError {
    fn from(r: boards::Refusal) -> Self {
        refused(&r)
    }
}

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
