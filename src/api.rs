//! The daemon's HTTP surface (`fn router(state) -> Router`): health for now;
//! inbound wakes (`POST /v1/sessions/{id}/wake`, in [`wake`]); the
//! authenticated `/v1` API and web Inbox grow here.

pub mod wake;

use axum::Router;
use axum::routing::get;

use crate::daemon::Shared;

/// The daemon's routes.
pub fn router(shared: Shared) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .merge(wake::routes())
        .with_state(shared)
}

async fn healthz(
    axum::extract::State(s): axum::extract::State<Shared>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match s.store.last_event_seq().await {
        Ok(seq) => axum::Json(serde_json::json!({"ok": true, "last_seq": seq})).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "health check cannot read the store");
            (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(serde_json::json!({"ok": false, "error": "store unavailable"})),
            )
                .into_response()
        }
    }
}
