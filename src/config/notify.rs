//! `[[notify]]`: the global wake-up rules, each waking an `exec` command or
//! a webhook on the events that match every filter it sets.

use serde::Deserialize;

use super::Secret;

/// `[[notify]]`: wake `exec` or `webhook` on events matching every filter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyRule {
    /// A name for logs and delivery records (default `#<index>`).
    #[serde(default)]
    pub name: Option<String>,
    /// Event types that fire the rule (see `store::events::WAKE_EVENTS`).
    pub events: Vec<String>,
    /// Only events of this project.
    #[serde(default)]
    pub project: Option<String>,
    /// Only events of sessions of this agent.
    #[serde(default)]
    pub agent: Option<String>,
    /// Run this program (argv, no shell).
    #[serde(default)]
    pub exec: Option<Vec<String>>,
    /// Kill the exec target's process group after this many seconds.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// POST to this URL, signed per the Standard Webhooks spec.
    #[serde(default)]
    pub webhook: Option<String>,
    /// The webhook's `whsec_…` signing secret.
    #[serde(default)]
    pub secret: Secret,
}

impl NotifyRule {
    /// The rule's target (validated: exactly one of exec / webhook).
    pub fn target(&self) -> crate::store::sessions::WakeTarget {
        use crate::store::sessions::WakeTarget;
        match (&self.exec, &self.webhook) {
            (Some(argv), _) => WakeTarget::Exec {
                argv: argv.clone(),
                timeout_secs: self.timeout_secs,
            },
            (None, Some(url)) => WakeTarget::Webhook {
                url: url.clone(),
                secret: self.secret.expose().to_string(),
            },
            // validate() refuses a rule with neither.
            (None, None) => WakeTarget::Exec {
                argv: Vec::new(),
                timeout_secs: None,
            },
        }
    }

    pub(super) fn check(&self) -> Result<(), String> {
        if self.events.is_empty() {
            return Err("list the event types that fire it in `events`".into());
        }
        for e in &self.events {
            if !crate::store::events::WAKE_EVENTS.contains(&e.as_str()) {
                return Err(format!(
                    "`{e}` is not a wake-up event; use one of {}",
                    crate::store::events::WAKE_EVENTS.join(", ")
                ));
            }
        }
        match (&self.exec, &self.webhook) {
            (Some(_), Some(_)) => return Err("give either `exec` or `webhook`, not both".into()),
            (None, None) => {
                return Err("give a target: `exec = [..]` or `webhook = \"https://…\"`".into());
            }
            (None, Some(_)) if self.timeout_secs.is_some() => {
                return Err("`timeout_secs` applies to `exec` targets only".into());
            }
            (Some(_), None) if !self.secret.is_empty() => {
                return Err("`secret` applies to `webhook` targets only".into());
            }
            _ => {}
        }
        if self.timeout_secs == Some(0) {
            return Err("`timeout_secs` must be at least 1".into());
        }
        self.target().check().map_err(|e| e.to_string())
    }
}
