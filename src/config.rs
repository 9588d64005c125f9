//! The configuration file, found the same way by every command (`serve`,
//! `mcp` and the CLI): `--config FILE`, else `$HANDOFF_CONFIG`, else
//! `config/handoff.toml`, else `~/.config/handoff/handoff.toml`.
//!
//! TOML, parsed with `deny_unknown_fields` everywhere so a typo is an error,
//! not a silently ignored setting; an error names the file and line. Secrets
//! may come from the environment (`HANDOFF_TELEGRAM_TOKEN`,
//! `HANDOFF_TELEGRAM_WEBHOOK_SECRET`), which wins over the file. Also here:
//! which database a command uses ([`database`]), and the timing settings
//! taken from the environment ([`tuning`]). This module only parses and
//! validates; it opens nothing and starts nothing.

mod approvals;
mod database;
mod discipline;
mod http;
mod notify;
mod redact;
pub mod slack;
mod telegram;
pub mod tuning;
mod validate;
pub mod voice;
mod wake;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use approvals::{ApprovalRule, ApprovalsConfig, EscalateStep, Escalation};
pub use database::{DatabaseRef, DbSource, StoreConfig, database, database_ref};
pub use discipline::{KindConfig, QuietHours};
pub use http::{HttpConfig, resolve_listen};
pub use notify::NotifyRule;
pub use redact::Redact;
pub use telegram::{ChatConfig, Limits, Route, Target, TelegramConfig, TelegramMode, TopicsBy};
pub use wake::{WakeConfig, WakeSource, WakeSourceKind};

use validate::{Bad, Seg, line_of, parse_message};

/// Errors reading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file cannot be read. Deliberately not a `#[source]`: the message
    /// carries the reason, and a source would print it a second time.
    #[error("cannot read config {path}: {reason}")]
    Read {
        /// The config file that could not be read.
        path: String,
        /// Why, in words.
        reason: String,
    },
    /// The file is not valid TOML or has unknown or mistyped keys.
    #[error("config {path} is invalid: {message}")]
    Parse {
        /// The config file that is not valid TOML.
        path: String,
        /// toml's message, which names the key and line.
        message: String,
    },
    /// The values parse but do not make sense (together).
    #[error("config {path}{}: {message}", line.map(|n| format!(" line {n}")).unwrap_or_default())]
    Invalid {
        /// The config file holding the bad value.
        path: String,
        /// The line of the offending entry, when it can be found.
        line: Option<usize>,
        /// What to fix.
        message: String,
    },
}

/// A secret string whose `Debug` never shows the value.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wrap a value.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The real value, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
    /// Whether the secret is empty (not configured).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "\"\"" } else { "***" })
    }
}

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the database is.
    #[serde(default)]
    pub store: StoreConfig,
    /// The daemon's HTTP listener.
    #[serde(default)]
    pub http: HttpConfig,
    /// The Telegram bridge: bot token, chats, polling or webhook.
    #[serde(default)]
    pub telegram: TelegramConfig,
    /// Routes from project / agent / action kind to a chat; first match wins.
    #[serde(default, rename = "route")]
    pub routes: Vec<Route>,
    /// Secret redaction in everything shown to humans.
    #[serde(default)]
    pub redact: Redact,
    /// Auto-decision rules for proposed actions; first match wins.
    #[serde(default, rename = "rule")]
    pub rules: Vec<crate::store::actions::Rule>,
    /// Global wake-up rules: every matching rule's target is woken.
    #[serde(default, rename = "notify")]
    pub notify: Vec<NotifyRule>,
    /// Wake-up settings: allowed webhook URLs, retries, inbound sources.
    #[serde(default)]
    pub wake: WakeConfig,
    /// Per action kind: a grace period before chat and a hook timeout;
    /// for each setting, the first entry that matches and sets it wins.
    #[serde(default)]
    pub kinds: Vec<KindConfig>,
    /// Voice replies: the transcriber and its limits.
    #[serde(default)]
    pub voice: voice::VoiceConfig,
    /// Who may approve: separation of duties (`not_by_proposer`).
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// The Slack bridge: app and bot tokens, channels per project.
    #[serde(default)]
    pub slack: slack::SlackConfig,
}

impl Config {
    /// Parse `text` (read from `path`, for messages) and validate it. Does
    /// not apply environment overrides.
    pub fn parse(text: &str, path: &Path) -> Result<Config, Error> {
        let shown = path.display().to_string();
        let cfg: Config = toml::from_str(text).map_err(|e| Error::Parse {
            path: shown.clone(),
            message: parse_message(text, &e),
        })?;
        cfg.validate().map_err(|bad| Error::Invalid {
            path: shown,
            line: line_of(text, &bad.at),
            message: bad.message,
        })?;
        Ok(cfg)
    }

    /// Find the config file: `explicit` if given (it must exist), else
    /// `$HANDOFF_CONFIG` (likewise), else `config/handoff.toml` in the
    /// working directory, else `~/.config/handoff/handoff.toml`; `None`
    /// when none of the optional ones exists.
    pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
        if let Some(p) = explicit {
            return Some(p.to_path_buf());
        }
        if let Some(p) = std::env::var_os("HANDOFF_CONFIG").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let local = PathBuf::from("config/handoff.toml");
        if local.exists() {
            return Some(local);
        }
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| PathBuf::from(home).join(".config/handoff/handoff.toml"))
            .filter(|p| p.exists())
    }

    /// Load the config [`locate`](Config::locate) finds, else the defaults,
    /// then apply the environment overrides.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), Error> {
        let path = Config::locate(explicit);
        let mut cfg = match &path {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| Error::Read {
                    path: p.display().to_string(),
                    reason: if e.kind() == std::io::ErrorKind::NotFound {
                        "no such file (check --config / HANDOFF_CONFIG)".into()
                    } else {
                        e.to_string()
                    },
                })?;
                Config::parse(&text, p)?
            }
            None => Config::default(),
        };
        cfg.apply_env();
        Ok((cfg, path))
    }

    /// Secrets and paths from the environment win over the file.
    pub fn apply_env(&mut self) {
        if let Some(t) = std::env::var("HANDOFF_TELEGRAM_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
        {
            self.telegram.token = Secret::new(t);
        }
        if let Some(t) = std::env::var("HANDOFF_TELEGRAM_WEBHOOK_SECRET")
            .ok()
            .filter(|t| !t.is_empty())
        {
            self.telegram.webhook_secret = Secret::new(t);
        }
        if let Some(k) = std::env::var("HANDOFF_VOICE_KEY")
            .ok()
            .filter(|k| !k.is_empty())
        {
            self.voice.key = Secret::new(k);
        }
        self.slack.apply_env();
    }

    /// The grace period of actions of `kind` (ms; 0 for other items).
    pub fn grace_ms(&self, kind: Option<&str>) -> i64 {
        let Some(kind) = kind else { return 0 };
        self.kinds
            .iter()
            .filter(|k| k.matches(kind))
            .find_map(|k| k.grace_secs)
            .map_or(0, |s| s as i64 * 1000)
    }

    /// The hook timeout `[[kinds]]` sets for actions of `kind`, if any.
    pub fn kind_timeout(&self, kind: &str) -> Option<std::time::Duration> {
        self.kinds
            .iter()
            .filter(|k| k.matches(kind))
            .find_map(|k| k.timeout_secs)
            .map(std::time::Duration::from_secs)
    }
}

#[cfg(test)]
mod tests;
