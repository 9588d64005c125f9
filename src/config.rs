//! The configuration file: `handoff serve --config FILE`.
//!
//! TOML, parsed with `deny_unknown_fields` everywhere so a typo is an error,
//! not a silently ignored setting. Secrets may come from the environment
//! (`HANDOFF_TELEGRAM_TOKEN`, `HANDOFF_TELEGRAM_WEBHOOK_SECRET`), which wins
//! over the file. This module only parses and validates; it starts nothing.

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Errors reading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file cannot be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown or mistyped keys.
    #[error("config {path} is invalid: {message}")]
    Parse {
        /// The file.
        path: String,
        /// toml's message, which names the key and line.
        message: String,
    },
    /// The values parse but do not make sense together.
    #[error("config {path}: {message}")]
    Invalid {
        /// The file.
        path: String,
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
    /// The Telegram bridge.
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
}

/// `[[notify]]`: wake `exec` or `webhook` on events matching every filter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyRule {
    /// A name for logs and delivery records (default `#<index>`).
    #[serde(default)]
    pub name: Option<String>,
    /// Event types that fire the rule (see `notify::WAKE_EVENTS`).
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

    fn check(&self) -> Result<(), String> {
        if self.events.is_empty() {
            return Err("list the event types that fire it in `events`".into());
        }
        for e in &self.events {
            if !crate::notify::WAKE_EVENTS.contains(&e.as_str()) {
                return Err(format!(
                    "`{e}` is not a wake-up event; use one of {}",
                    crate::notify::WAKE_EVENTS.join(", ")
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

/// `[store]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Database file; `$HANDOFF_DB` wins; `~` expands to `$HOME`.
    pub path: Option<String>,
}

/// `[http]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Address to listen on.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Serve the `/v1` API without tokens. Only honoured on a loopback
    /// address, and only when set explicitly; by default every `/v1` route
    /// needs `Authorization: Bearer hnd_…` (see `handoff token create`).
    #[serde(default)]
    pub open: bool,
    /// The URL people and proxies reach the daemon at (`https://…` behind a
    /// TLS proxy). With `https`, the Inbox cookie is marked `Secure`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// Seconds a connection may take to send a request's headers, counted
    /// from when it opens or finishes its previous request: also how long
    /// an idle keep-alive connection is kept.
    #[serde(default = "default_header_timeout")]
    pub header_timeout_secs: u64,
    /// Seconds a request's whole body may take to arrive.
    #[serde(default = "default_body_timeout")]
    pub body_timeout_secs: u64,
    /// Connections served at once; one more is answered 503 and closed.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: default_listen(),
            open: false,
            public_url: None,
            header_timeout_secs: default_header_timeout(),
            body_timeout_secs: default_body_timeout(),
            max_connections: default_max_connections(),
        }
    }
}

impl HttpConfig {
    /// Whether people reach the daemon over HTTPS (`public_url`).
    pub fn is_https(&self) -> bool {
        self.public_url
            .as_deref()
            .is_some_and(|u| u.trim().to_ascii_lowercase().starts_with("https://"))
    }

    fn check(&self) -> Result<(), String> {
        if let Some(u) = &self.public_url {
            let ok = url::Url::parse(u.trim())
                .is_ok_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some());
            if !ok {
                return Err(format!(
                    "http.public_url `{u}` is not an http:// or https:// URL (e.g. \"https://handoff.example.com\")"
                ));
            }
        }
        for (key, v) in [
            ("header_timeout_secs", self.header_timeout_secs),
            ("body_timeout_secs", self.body_timeout_secs),
        ] {
            if !(1..=3600).contains(&v) {
                return Err(format!("http.{key} must be 1 to 3600 seconds, not {v}"));
            }
        }
        if self.max_connections == 0 {
            return Err("http.max_connections must be at least 1".into());
        }
        Ok(())
    }
}

fn default_header_timeout() -> u64 {
    10
}

fn default_body_timeout() -> u64 {
    30
}

fn default_max_connections() -> usize {
    512
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8642))
}

/// How the bot receives updates.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TelegramMode {
    /// Long polling: no public URL needed.
    #[default]
    Polling,
    /// Telegram posts updates to `webhook_url`, served on the daemon's listener.
    Webhook,
}

/// `[telegram]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// Bot token; `$HANDOFF_TELEGRAM_TOKEN` wins. Empty: chat is off.
    #[serde(default)]
    pub token: Secret,
    /// Bot API server (self-hosted servers, tests).
    #[serde(default = "default_api_url")]
    pub api_url: String,
    /// `polling` (default) or `webhook`.
    #[serde(default)]
    pub mode: TelegramMode,
    /// Public URL Telegram posts to (webhook mode).
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// Secret Telegram echoes in `X-Telegram-Bot-Api-Secret-Token`
    /// (webhook mode); `$HANDOFF_TELEGRAM_WEBHOOK_SECRET` wins.
    #[serde(default)]
    pub webhook_secret: Secret,
    /// More new items than this for one chat within `digest_window_secs`
    /// are sent as one digest message.
    #[serde(default = "default_digest_threshold")]
    pub digest_threshold: usize,
    /// The window for counting a burst, in seconds.
    #[serde(default = "default_digest_window")]
    pub digest_window_secs: u64,
    /// Long-polling timeout in seconds (below the client's 17 s).
    #[serde(default = "default_poll_timeout")]
    pub poll_timeout_secs: u32,
    /// Flood-control limits (Telegram's published limits by default).
    #[serde(default)]
    pub limits: Limits,
    /// The chats the bot talks to.
    #[serde(default)]
    pub chats: Vec<ChatConfig>,
}

/// `[telegram.limits]`: how fast the bot may send.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Messages per second in one chat.
    #[serde(default = "one")]
    pub per_chat_per_sec: u32,
    /// Messages per minute in one chat.
    #[serde(default = "twenty")]
    pub per_chat_per_min: u32,
    /// Messages per minute in one group or channel.
    #[serde(default = "twenty")]
    pub per_group_per_min: u32,
    /// Messages per second overall.
    #[serde(default = "thirty")]
    pub overall_per_sec: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_chat_per_sec: one(),
            per_chat_per_min: twenty(),
            per_group_per_min: twenty(),
            overall_per_sec: thirty(),
        }
    }
}

fn one() -> u32 {
    1
}
fn twenty() -> u32 {
    20
}
fn thirty() -> u32 {
    30
}

impl Default for TelegramConfig {
    fn default() -> Self {
        TelegramConfig {
            token: Secret::default(),
            api_url: default_api_url(),
            mode: TelegramMode::default(),
            webhook_url: None,
            webhook_secret: Secret::default(),
            digest_threshold: default_digest_threshold(),
            digest_window_secs: default_digest_window(),
            poll_timeout_secs: default_poll_timeout(),
            limits: Limits::default(),
            chats: Vec::new(),
        }
    }
}

fn default_api_url() -> String {
    "https://api.telegram.org".into()
}
fn default_digest_threshold() -> usize {
    5
}
fn default_digest_window() -> u64 {
    3
}
fn default_poll_timeout() -> u32 {
    10
}

/// `[[telegram.chats]]`: one chat and who may do what in it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatConfig {
    /// Name used by routes.
    pub name: String,
    /// Telegram chat id (negative for groups).
    pub chat_id: i64,
    /// Forum topic (message thread) id, if any.
    #[serde(default)]
    pub topic: Option<i32>,
    /// Telegram user ids allowed to answer questions and rows.
    #[serde(default)]
    pub answer: Vec<u64>,
    /// Telegram user ids allowed to decide actions.
    #[serde(default)]
    pub approve: Vec<u64>,
}

/// `[[route]]`: items matching every given filter go to `chat`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Match this project.
    #[serde(default)]
    pub project: Option<String>,
    /// Match this agent.
    #[serde(default)]
    pub agent: Option<String>,
    /// Match this action kind (actions only).
    #[serde(default)]
    pub kind: Option<String>,
    /// The chat's `name`.
    pub chat: String,
    /// Override the chat's forum topic.
    #[serde(default)]
    pub topic: Option<i32>,
}

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

/// Where a chat item goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The chat's config name.
    pub chat: String,
    /// Telegram chat id.
    pub chat_id: i64,
    /// Forum topic, if any.
    pub topic: Option<i32>,
}

impl Config {
    /// Parse `text` (read from `path`, for messages) and validate it. Does
    /// not apply environment overrides.
    pub fn parse(text: &str, path: &Path) -> Result<Config, Error> {
        let shown = path.display().to_string();
        let cfg: Config = toml::from_str(text).map_err(|e| Error::Parse {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        cfg.validate().map_err(|message| Error::Invalid {
            path: shown,
            message,
        })?;
        Ok(cfg)
    }

    /// Load the config: `explicit` if given (must exist), else
    /// `config/handoff.toml` in the working directory, else
    /// `~/.config/handoff/handoff.toml`, else defaults. Then apply the
    /// environment overrides.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), Error> {
        let candidates: Vec<PathBuf> = match explicit {
            Some(p) => vec![p.to_path_buf()],
            None => {
                let mut v = vec![PathBuf::from("config/handoff.toml")];
                if let Some(home) = std::env::var_os("HOME") {
                    v.push(PathBuf::from(home).join(".config/handoff/handoff.toml"));
                }
                v
            }
        };
        let mut found = None;
        for p in candidates {
            if explicit.is_some() || p.exists() {
                let text = std::fs::read_to_string(&p).map_err(|source| Error::Read {
                    path: p.display().to_string(),
                    source,
                })?;
                found = Some((Config::parse(&text, &p)?, p));
                break;
            }
        }
        let (mut cfg, path) = match found {
            Some((c, p)) => (c, Some(p)),
            None => (Config::default(), None),
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
    }

    /// The database path: `$HANDOFF_DB`, else `[store] path`, else the default.
    pub fn db_path(&self) -> Result<PathBuf, crate::store::Error> {
        if std::env::var_os("HANDOFF_DB").is_some_and(|p| !p.is_empty()) {
            return crate::store::default_path();
        }
        match &self.store.path {
            Some(p) => Ok(expand_home(p)),
            None => crate::store::default_path(),
        }
    }

    fn validate(&self) -> Result<(), String> {
        let mut names = HashSet::new();
        for c in &self.telegram.chats {
            if c.name.trim().is_empty() {
                return Err("a [[telegram.chats]] entry has an empty name".into());
            }
            if !names.insert(c.name.as_str()) {
                return Err(format!("two [[telegram.chats]] are named `{}`", c.name));
            }
        }
        for r in &self.routes {
            if !names.contains(r.chat.as_str()) {
                return Err(format!(
                    "[[route]] names chat `{}`, but no [[telegram.chats]] has that name",
                    r.chat
                ));
            }
        }
        for r in &self.rules {
            r.check()
                .map_err(|e| format!("[[rule]] `{}`: {e}", r.name))?;
        }
        for (i, n) in self.notify.iter().enumerate() {
            let name = n.name.clone().unwrap_or_else(|| format!("#{}", i + 1));
            n.check().map_err(|e| format!("[[notify]] `{name}`: {e}"))?;
        }
        for p in &self.wake.allowed_webhook_urls {
            if !(p.starts_with("http://") || p.starts_with("https://")) {
                return Err(format!(
                    "wake.allowed_webhook_urls: `{p}` is not an http(s) URL prefix"
                ));
            }
        }
        if self
            .wake
            .retry_schedule_ms
            .as_ref()
            .is_some_and(|s| s.is_empty())
        {
            return Err(
                "wake.retry_schedule_ms needs at least one delay (the first attempt's)".into(),
            );
        }
        let mut sources = HashSet::new();
        for s in &self.wake.sources {
            if s.name.trim().is_empty() {
                return Err("a [[wake.sources]] entry has an empty name".into());
            }
            if !sources.insert(s.name.as_str()) {
                return Err(format!("two [[wake.sources]] are named `{}`", s.name));
            }
            if s.secret.expose().len() < 16 {
                return Err(format!(
                    "[[wake.sources]] `{}`: the secret must be at least 16 characters",
                    s.name
                ));
            }
            if s.kind == WakeSourceKind::Standard
                && crate::notify::sign::decode_whsec(s.secret.expose()).is_none()
            {
                return Err(format!(
                    "[[wake.sources]] `{}`: a standard source needs a `whsec_<base64>` secret",
                    s.name
                ));
            }
        }
        if self.telegram.digest_threshold == 0 {
            return Err("telegram.digest_threshold must be at least 1".into());
        }
        if self.telegram.poll_timeout_secs > 15 {
            return Err("telegram.poll_timeout_secs must be at most 15".into());
        }
        self.http.check()?;
        if self.http.open && !self.http.listen.ip().is_loopback() {
            return Err(format!(
                "http.open = true serves the API without tokens, which is allowed only on a loopback address, not {}",
                self.http.listen
            ));
        }
        if self.telegram.mode == TelegramMode::Webhook && self.telegram.webhook_url.is_none() {
            return Err("telegram.mode = \"webhook\" needs telegram.webhook_url".into());
        }
        Ok(())
    }

    /// The chat an item goes to: the first route whose filters all match,
    /// else the first chat; `None` when no chat is configured. `kind` is the
    /// action kind (None for questions and rows).
    pub fn route(&self, project: &str, agent: &str, kind: Option<&str>) -> Option<Target> {
        let chat_of = |name: &str| self.telegram.chats.iter().find(|c| c.name == name);
        for r in &self.routes {
            let ok = r.project.as_deref().is_none_or(|p| p == project)
                && r.agent.as_deref().is_none_or(|a| a == agent)
                && r.kind.as_deref().is_none_or(|k| Some(k) == kind);
            if ok && let Some(c) = chat_of(&r.chat) {
                return Some(Target {
                    chat: c.name.clone(),
                    chat_id: c.chat_id,
                    topic: r.topic.or(c.topic),
                });
            }
        }
        self.telegram.chats.first().map(|c| Target {
            chat: c.name.clone(),
            chat_id: c.chat_id,
            topic: c.topic,
        })
    }

    /// The configured chat with this Telegram id.
    pub fn chat_by_id(&self, chat_id: i64) -> Option<&ChatConfig> {
        self.telegram.chats.iter().find(|c| c.chat_id == chat_id)
    }
}

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, Error> {
        Config::parse(s, Path::new("test.toml"))
    }

    #[test]
    fn empty_config_is_all_defaults() {
        let c = parse("").unwrap();
        assert!(c.telegram.token.is_empty());
        assert_eq!(c.http.listen.port(), 8642);
        assert!(
            !c.http.open,
            "the API needs tokens unless opened explicitly"
        );
        assert_eq!(c.telegram.digest_threshold, 5);
        assert_eq!(c.route("p", "a", None), None);
    }

    #[test]
    fn unknown_keys_are_errors() {
        for bad in [
            "colour = 1",
            "[telegram]\ntokn = \"x\"",
            "[[telegram.chats]]\nname=\"a\"\nchat_id=1\nanswr=[1]",
            "[[route]]\nchat=\"a\"\nprojekt=\"x\"",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("unknown field"), "{bad}: {e}");
        }
    }

    #[test]
    fn routes_first_match_then_first_chat() {
        let c = parse(
            r#"
            [[telegram.chats]]
            name = "me"
            chat_id = 1
            [[telegram.chats]]
            name = "ops"
            chat_id = -100
            topic = 7
            [[route]]
            project = "infra"
            kind = "deploy"
            chat = "ops"
            [[route]]
            agent = "reviewer"
            chat = "ops"
            topic = 9
            "#,
        )
        .unwrap();
        assert_eq!(c.route("infra", "x", Some("deploy")).unwrap().chat_id, -100);
        assert_eq!(
            c.route("infra", "x", Some("deploy")).unwrap().topic,
            Some(7)
        );
        assert_eq!(c.route("infra", "x", None).unwrap().chat, "me");
        assert_eq!(c.route("web", "reviewer", None).unwrap().topic, Some(9));
        assert_eq!(c.route("web", "coder", None).unwrap().chat, "me");
    }

    #[test]
    fn invalid_combinations_are_explained() {
        let e = parse("[[route]]\nchat = \"nowhere\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no [[telegram.chats]]"), "{e}");
        let e = parse(
            "[[telegram.chats]]\nname=\"a\"\nchat_id=1\n[[telegram.chats]]\nname=\"a\"\nchat_id=2",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("two"), "{e}");
        let e = parse("[telegram]\nmode = \"webhook\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("webhook_url"), "{e}");
    }

    #[test]
    fn secrets_do_not_leak_through_debug() {
        let c = parse("[telegram]\ntoken = \"123:abc\"").unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("123:abc"), "{shown}");
        assert_eq!(c.telegram.token.expose(), "123:abc");
    }
}

#[cfg(test)]
mod example {
    /// The example file in `config/` must always parse.
    #[test]
    fn the_example_config_parses() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/handoff.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let c = super::Config::parse(&text, &path).unwrap();
        assert_eq!(c.telegram.chats.len(), 2);
        assert_eq!(c.rules.len(), 2);
        assert_eq!(c.route("infra", "x", Some("deploy")).unwrap().chat, "ops");
    }
}

#[cfg(test)]
mod wake_example {
    /// The commented wake-up examples in the example file parse once uncommented.
    #[test]
    fn the_commented_wake_examples_parse() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/handoff.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let tail = &text[text.find("# Wake-ups:").expect("wake section")..];
        let uncommented: String = tail
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .map(|l| format!("{l}\n"))
            .collect();
        let c = super::Config::parse(&uncommented, &path).unwrap();
        assert_eq!(c.notify.len(), 2);
        assert_eq!(c.wake.sources.len(), 3);
        assert!(c.wake.webhook_allowed("https://ci.example.com/x"));
        assert!(!c.wake.webhook_allowed("https://ci.example.com.evil/x"));
    }
}
