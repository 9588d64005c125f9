//! Inbound wakes: `POST /v1/sessions/{id}/wake` lets an outside system (CI,
//! GitHub) wake a session. Authenticated per `[[wake.sources]]` by a bearer
//! token, a Standard Webhooks signature, or GitHub's `X-Hub-Signature-256`;
//! deduplicated by `webhook-id` / `X-GitHub-Delivery`; recorded as a
//! `session.wake` event, which the notify worker delivers to the session's
//! wake target. Checks run in this order: the path's text (400 not UTF-8,
//! 422 a control character: the API's text rule), size (413),
//! authentication (401, nothing stored), session (404), nesting (422,
//! deeper than [`MAX_BODY_DEPTH`](crate::store::depth::MAX_BODY_DEPTH)),
//! the payload's text (422, the same rule). It does not run any target
//! itself.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::config::{WakeSource, WakeSourceKind};
use crate::shared::Shared;
use crate::sign;

/// The largest body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// Where inbound wakes are posted.
pub(crate) const PATH: &str = "/v1/sessions/{id}/wake";

/// The inbound wake route.
pub(crate) fn routes() -> Router<Shared> {
    Router::new().route(PATH, post(wake).layer(DefaultBodyLimit::max(MAX_BODY)))
}

/// Why a wake was refused.
#[derive(Debug, thiserror::Error)]
enum WakeError {
    /// No configured source accepts these credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// No such session.
    #[error("no session `{0}`")]
    NotFound(String),
    /// The body nests deeper than handoff stores.
    #[error(
        "the body is nested {0} levels deep; at most {max} are accepted: send a flatter body",
        max = crate::store::depth::MAX_BODY_DEPTH
    )]
    TooDeep(usize),
    /// The payload holds a control character or a bidirectional override.
    #[error("{0}")]
    Text(String),
    /// The store failed.
    #[error("store unavailable")]
    Store(#[from] crate::ops::Error),
}

impl IntoResponse for WakeError {
    fn into_response(self) -> Response {
        let (status, reason) = match &self {
            WakeError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            WakeError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            WakeError::TooDeep(_) => (StatusCode::UNPROCESSABLE_ENTITY, "too_deep"),
            WakeError::Text(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            WakeError::Store(e) => {
                tracing::error!(error = %e, "inbound wake cannot reach the store");
                (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable")
            }
        };
        // The API's error shape (`reason`, `message`), plus `ok` and
        // `error` as wake senders have read them since the first release.
        let text = self.to_string();
        let body = json!({"ok": false, "reason": reason, "message": text, "error": text});
        (status, axum::Json(body)).into_response()
    }
}

/// The wake route's answer.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Woke {
    /// Always true in a 2xx.
    ok: bool,
    /// First delivery of this id: recorded now.
    new: bool,
    /// A delivery already recorded: nothing new.
    duplicate: bool,
    /// The wake event's sequence number.
    seq: i64,
    /// The delivery id it is deduplicated by.
    delivery_id: String,
}

async fn wake(
    State(s): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, WakeError> {
    let now_secs = s.ops.now().div_euclid(1000);
    let (source, delivery_id) = authenticate(&s.config.wake.sources, &headers, &body, now_secs)?;
    let ops = crate::ops::Ops::Local(s.ops.clone());
    if ops.get_session(&id).await?.is_none() {
        return Err(WakeError::NotFound(id));
    }
    let delivery_id = delivery_id.unwrap_or_else(crate::store::new_id);
    // The body as JSON (text if it is not JSON); record_wake adds the
    // source and delivery id around it.
    let payload: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    // Why: the body is stored one level deeper inside the event payload;
    // past the reader's limit it would be an event nobody can read.
    let depth = crate::store::depth::value_depth(&payload);
    if depth > crate::store::depth::MAX_BODY_DEPTH {
        return Err(WakeError::TooDeep(depth));
    }
    // Why here and not in the route's layer: only an authenticated
    // sender's payload is read.
    if let Err(e) = crate::api::input::text::check_value(&payload) {
        return Err(WakeError::Text(e.message));
    }
    let rec = match s
        .ops
        .record_wake(&id, &source.name, &delivery_id, payload)
        .await
    {
        Ok(r) => r,
        // The session vanished between the check and the write.
        Err(crate::ops::Error::Invalid { .. }) => return Err(WakeError::NotFound(id)),
        Err(e) => return Err(e.into()),
    };
    if rec.new {
        s.wrote();
        tracing::info!(session = %id, source = %source.name, seq = rec.seq, "inbound wake recorded");
    }
    let status = if rec.new {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    let out = Woke {
        ok: true,
        new: rec.new,
        duplicate: !rec.new,
        seq: rec.seq,
        delivery_id,
    };
    Ok((status, axum::Json(out)).into_response())
}

fn header<'h>(h: &'h HeaderMap, name: &str) -> Option<&'h str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The source whose credentials the request carries, and the delivery id
/// to dedupe by (None: the caller gave none, every post is new).
fn authenticate<'c>(
    sources: &'c [WakeSource],
    h: &HeaderMap,
    body: &[u8],
    now_secs: i64,
) -> Result<(&'c WakeSource, Option<String>), WakeError> {
    let of = |k: WakeSourceKind| sources.iter().filter(move |s| s.kind == k);
    if sources.is_empty() {
        return Err(WakeError::Unauthorized(
            "inbound wakes are off: no [[wake.sources]] configured".into(),
        ));
    }
    if let Some(sig) = header(h, "x-hub-signature-256") {
        let src = of(WakeSourceKind::Github)
            .find(|s| sign::verify_github(s.secret.expose().as_bytes(), sig, body).is_ok())
            .ok_or_else(|| WakeError::Unauthorized("X-Hub-Signature-256 does not match".into()))?;
        return Ok((src, header(h, "x-github-delivery").map(String::from)));
    }
    if let Some(sig) = header(h, "webhook-signature") {
        let (Some(id), Some(ts)) = (header(h, "webhook-id"), header(h, "webhook-timestamp")) else {
            return Err(WakeError::Unauthorized(
                "webhook-id and webhook-timestamp are required with webhook-signature".into(),
            ));
        };
        let mut why = sign::Refused::BadSignature;
        for s in of(WakeSourceKind::Standard) {
            let Some(key) = sign::decode_whsec(s.secret.expose()) else {
                continue;
            };
            match sign::verify_standard(&key, id, ts, sig, body, now_secs) {
                Ok(()) => return Ok((s, Some(id.to_string()))),
                Err(e) => why = e,
            }
        }
        return Err(WakeError::Unauthorized(why.to_string()));
    }
    if let Some(token) = header(h, "authorization").and_then(|a| a.strip_prefix("Bearer ")) {
        let src = of(WakeSourceKind::Bearer)
            .find(|s| sign::constant_time_eq(s.secret.expose().as_bytes(), token.trim().as_bytes()))
            .ok_or_else(|| WakeError::Unauthorized("wrong bearer token".into()))?;
        let id = header(h, "idempotency-key").or(header(h, "webhook-id"));
        return Ok((src, id.map(String::from)));
    }
    Err(WakeError::Unauthorized(
        "missing credentials: send a bearer token, a webhook-signature or X-Hub-Signature-256"
            .into(),
    ))
}
