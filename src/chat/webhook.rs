//! Webhook mode: the route Telegram posts updates to, merged into the
//! daemon's router. Every daemon behind one URL serves it.
//!
//! Why not teloxide's webhook listener: it answers Telegram's POST with 200
//! as soon as the update is queued in memory, so a daemon killed right after
//! loses the update for good (Telegram never sends an acknowledged update
//! again). Here the POST is answered only once the update is handled and
//! marked done in the database: a daemon that dies mid-update leaves
//! Telegram without an answer, Telegram sends the update again (to any
//! daemon behind the URL), and the unfinished claim is taken over
//! (`Bridge::take_update`). Updates are handled one at a time per daemon,
//! in the order they arrive, as the polling loop does.
//!
//! The secret token: the configured `webhook_secret`, or, when none is set,
//! one derived from the bot token, so that several daemons with the same
//! config register the same secret (a random one per daemon, as teloxide
//! makes, would leave all but the last daemon refusing every update).

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use teloxide::prelude::*;
use teloxide::types::{Update, UpdateKind};
use tokio_util::sync::CancellationToken;

use super::{Bridge, Error, Take};

/// The header Telegram sends the secret token in.
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

#[derive(Clone)]
struct Hook {
    bridge: Arc<Bridge>,
    secret: Arc<String>,
    /// One update at a time, in arrival order.
    turn: Arc<tokio::sync::Mutex<()>>,
    cancel: CancellationToken,
}

/// Register `url` (with the secret) with Telegram and return the route
/// that takes its updates, at the URL's path.
pub(super) async fn route(
    bridge: Arc<Bridge>,
    url: &str,
    configured_secret: &str,
    cancel: CancellationToken,
) -> Result<Router, Error> {
    let url = url::Url::parse(url).map_err(|_| Error::Webhook(format!("`{url}` is not a URL")))?;
    let secret = if configured_secret.is_empty() {
        derived_secret(bridge.config.telegram.token.expose())
    } else {
        configured_secret.to_string()
    };
    // Every daemon sets the same URL and secret: idempotent.
    bridge
        .bot
        .set_webhook(url.clone())
        .secret_token(secret.clone())
        .drop_pending_updates(false)
        .await
        .map_err(|e| Error::Webhook(crate::one_line(&e)))?;
    let hook = Hook {
        bridge,
        secret: Arc::new(secret),
        turn: Arc::default(),
        cancel,
    };
    Ok(Router::new().route(url.path(), post(take)).with_state(hook))
}

/// A secret token for the bot `token`: HMAC-SHA256 of a fixed label, hex
/// (Telegram allows `A-Z a-z 0-9 _ -`, up to 256 characters).
fn derived_secret(token: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(token.as_bytes()).expect("HMAC takes a key of any size");
    mac.update(b"handoff telegram webhook secret");
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Take one update: 401 without the secret; 503 while shutting down or
/// while another daemon holds the update unfinished (so Telegram sends it
/// again, to this or another daemon); 200 once handled, or handled before.
async fn take(State(hook): State<Hook>, headers: HeaderMap, body: String) -> StatusCode {
    let given = headers
        .get(SECRET_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !crate::sign::constant_time_eq(given, hook.secret.as_bytes()) {
        return StatusCode::UNAUTHORIZED;
    }
    if hook.cancel.is_cancelled() {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let mut update = match serde_json::from_str::<Update>(&body) {
        Ok(update) => update,
        Err(e) => {
            // Not an update at all: sending it again cannot help.
            tracing::warn!(error = %e, "a webhook POST that is not a Telegram update; ignored");
            return StatusCode::OK;
        }
    };
    // A kind this build cannot read comes as `Error` with teloxide's
    // placeholder: give the handler the raw JSON, as polling does.
    if let UpdateKind::Error(value) = &mut update.kind {
        *value = serde_json::from_str(&body).unwrap_or_default();
    }
    let _turn = hook.turn.lock().await;
    let bridge = &hook.bridge;
    match bridge.take_update(&update).await {
        Take::Mine => bridge.handle_taken(update).await,
        Take::Done => {}
        // Another daemon is at it, or died at it moments ago: Telegram
        // sends it again later, by when it is done or stale.
        Take::Busy => return StatusCode::SERVICE_UNAVAILABLE,
    }
    StatusCode::OK
}

#[cfg(test)]
mod tests {
    use super::derived_secret;

    #[test]
    fn the_derived_secret_is_stable_per_token_and_in_telegrams_alphabet() {
        let a = derived_secret("123:TEST");
        assert_eq!(a, derived_secret("123:TEST"));
        assert_ne!(a, derived_secret("123:OTHER"));
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
