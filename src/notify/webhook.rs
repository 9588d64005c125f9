//! The `webhook` wake target: POST the wake-up as JSON, signed per the
//! Standard Webhooks spec. 2xx = delivered; 410 Gone disables the target;
//! 429, 5xx and anything else = retry, honouring `Retry-After` (seconds).
//! Redirects are not followed (a signed body must go where it was sent).

use std::time::Duration;

use reqwest::StatusCode;

use super::{Outcome, Wake};
use crate::sign;

/// How long one POST may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The longest `Retry-After` honoured (a receiver cannot park a delivery forever).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// A client for webhook targets.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("handoff/", env!("CARGO_PKG_VERSION")))
        .build()
        // Invariant: a builder with only these options cannot fail
        // (rustls is compiled in).
        .expect("reqwest client with static options")
}

/// POST `wake` to `url`, signed with `secret` at `now_ms`.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    secret: &str,
    wake: &Wake<'_>,
    now_ms: i64,
) -> Outcome {
    let Some(key) = sign::decode_whsec(secret) else {
        return Outcome::Dead {
            error: "the webhook secret is not a `whsec_<base64>` secret".into(),
        };
    };
    let body = wake.body_bytes();
    let ts = now_ms.div_euclid(1000);
    let signature = sign::sign(&key, &wake.event_id, ts, &body);
    let res = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &wake.event_id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await;
    let res = match res {
        Ok(r) => r,
        Err(e) => {
            return Outcome::Retry {
                error: format!("POST {url} failed: {e}"),
                after: None,
            };
        }
    };
    let status = res.status();
    if status.is_success() {
        return Outcome::Delivered;
    }
    if status == StatusCode::GONE {
        return Outcome::Disable {
            error: format!("{url} answered 410 Gone: target disabled"),
        };
    }
    let after = res
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
    Outcome::Retry {
        error: format!("{url} answered {status}"),
        after,
    }
}
