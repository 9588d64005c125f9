//! `[wake]`: wake-up delivery (allowed webhook URLs, the retry schedule) and
//! the inbound wake sources, with their checks.

use std::collections::HashSet;

use serde::Deserialize;

use super::{Bad, Config, Secret, Seg};

/// `[wake]`: wake-up delivery and inbound wake settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WakeConfig {
    /// URL prefixes a *session's* webhook target may post to (rule URLs are
    /// allowed by definition). Empty: sessions' webhook targets are refused.
    #[serde(default)]
    pub allowed_webhook_urls: Vec<String>,
    /// Delay before each attempt, in ms (default 0, 1 s, 5 s, 30 s, 2 min,
    /// 10 min); after the last one the delivery is dead.
    #[serde(default)]
    pub retry_schedule_ms: Option<Vec<u64>>,
    /// Who may wake a session through `POST /v1/sessions/{id}/wake`.
    #[serde(default)]
    pub sources: Vec<WakeSource>,
}

impl WakeConfig {
    /// Whether a session's webhook target may post to `url`.
    pub fn webhook_allowed(&self, url: &str) -> bool {
        self.allowed_webhook_urls
            .iter()
            .any(|p| url.starts_with(p.as_str()))
    }
}

/// How an inbound wake source authenticates.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WakeSourceKind {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// A Standard Webhooks signature (`webhook-id`, `-timestamp`, `-signature`).
    Standard,
    /// GitHub's `X-Hub-Signature-256: sha256=<hex HMAC>`.
    Github,
}

/// `[[wake.sources]]`: one system allowed to wake sessions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WakeSource {
    /// Name recorded as the wake's actor (and its dedupe namespace).
    pub name: String,
    /// How it authenticates.
    pub kind: WakeSourceKind,
    /// The token or signing secret (`whsec_…` for `standard`).
    pub secret: Secret,
}

impl Config {
    /// Wake URL prefixes, the retry schedule, and the inbound wake sources
    /// (unique names, secrets long enough, `whsec_` for standard ones).
    pub(super) fn check_wake(&self) -> Result<(), Bad> {
        let wake = |key| vec![Seg::Key("wake"), Seg::Key(key)];
        for p in &self.wake.allowed_webhook_urls {
            if !(p.starts_with("http://") || p.starts_with("https://")) {
                return Err(Bad::at(
                    wake("allowed_webhook_urls"),
                    format!("wake.allowed_webhook_urls: `{p}` is not an http(s) URL prefix"),
                ));
            }
        }
        if self
            .wake
            .retry_schedule_ms
            .as_ref()
            .is_some_and(|s| s.is_empty())
        {
            return Err(Bad::at(
                wake("retry_schedule_ms"),
                "wake.retry_schedule_ms needs at least one delay (the first attempt's)",
            ));
        }
        let mut sources = HashSet::new();
        for (i, s) in self.wake.sources.iter().enumerate() {
            let at = || vec![Seg::Key("wake"), Seg::Key("sources"), Seg::Index(i)];
            if s.name.trim().is_empty() {
                return Err(Bad::at(at(), "a [[wake.sources]] entry has an empty name"));
            }
            if !sources.insert(s.name.as_str()) {
                return Err(Bad::at(
                    at(),
                    format!("two [[wake.sources]] are named `{}`", s.name),
                ));
            }
            if s.secret.expose().len() < 16 {
                return Err(Bad::at(
                    at(),
                    format!(
                        "[[wake.sources]] `{}`: the secret must be at least 16 characters",
                        s.name
                    ),
                ));
            }
            if s.kind == WakeSourceKind::Standard
                && crate::sign::decode_whsec(s.secret.expose()).is_none()
            {
                return Err(Bad::at(
                    at(),
                    format!(
                        "[[wake.sources]] `{}`: a standard source needs a `whsec_<base64>` secret",
                        s.name
                    ),
                ));
            }
        }
        Ok(())
    }
}
