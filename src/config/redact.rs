//! `[redact]`: which keys are secrets in everything shown to humans.

use serde::Deserialize;

/// `[redact]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redact {
    /// Argument keys containing any of these (case-insensitive) are shown as `***`.
    #[serde(default = "default_redact_keys")]
    pub keys: Vec<String>,
}

impl Default for Redact {
    fn default() -> Self {
        Redact {
            keys: default_redact_keys(),
        }
    }
}

fn default_redact_keys() -> Vec<String> {
    ["token", "secret", "password", "authorization", "api_key"]
        .map(String::from)
        .to_vec()
}
