//! The body deadline: a request body read whole within its time and size
//! limits before the handler runs, or refused in the API's error shape.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::MAX_BODY;

/// Middleware: read the whole body within the deadline before any handler
/// runs. A body announced over the limit is refused at once (413), one that
/// does not arrive in time gets 408; both close the connection.
pub(super) async fn read_body(
    State(deadline): State<Duration>,
    req: Request,
    next: Next,
) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY as u64) {
        return refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the body is over {MAX_BODY} bytes; send less"),
        );
    }
    let chunked = req.headers().contains_key(header::TRANSFER_ENCODING);
    if announced.unwrap_or(0) == 0 && !chunked {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if too_large {
                refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    format!("the body is over {MAX_BODY} bytes; send less"),
                )
            } else {
                refusal(
                    StatusCode::BAD_REQUEST,
                    "bad_body",
                    format!("the request body could not be read ({e}); send it again"),
                )
            }
        }
        Err(_) => refusal(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the request body did not arrive within {}s ([http] body_timeout_secs); send it at once",
                deadline.as_secs()
            ),
        ),
    }
}

/// A refusal in the API's `{reason, message}` shape that closes the
/// connection (its unread body must not be taken for the next request).
fn refusal(status: StatusCode, reason: &str, message: String) -> Response {
    let mut resp = (
        status,
        axum::Json(json!({"reason": reason, "message": message})),
    )
        .into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}
