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
mod discipline;
pub mod slack;
pub mod tuning;
pub mod voice;

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use approvals::{ApprovalRule, ApprovalsConfig, EscalateStep, Escalation};
pub use discipline::{KindConfig, QuietHours};

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

    fn check(&self) -> Result<(), String> {
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
    /// A PostgreSQL database instead (`postgres://user:pass@host/db`),
    /// shared by several daemons; `$HANDOFF_DB` wins. Not with `path`.
    pub url: Option<String>,
}

/// `[http]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Address to listen on: an IP and port, or a host name and port
    /// resolved when the config is read (`localhost:8642`).
    #[serde(default = "default_listen", deserialize_with = "de_listen")]
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
    /// Seconds a new connection may take to send its first byte (at most
    /// `header_timeout_secs`).
    #[serde(default = "default_first_byte_timeout")]
    pub first_byte_timeout_secs: u64,
    /// Connections served at once. A newcomer beyond them closes the
    /// oldest idle connection that presented no token; when there is none
    /// it is answered 503 and closed.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections one client address may hold that have not presented a
    /// valid token or Inbox session; past it, its own oldest idle one is
    /// closed for the newcomer.
    #[serde(default = "default_max_unauthenticated_per_client")]
    pub max_unauthenticated_per_client: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: default_listen(),
            open: false,
            public_url: None,
            header_timeout_secs: default_header_timeout(),
            body_timeout_secs: default_body_timeout(),
            first_byte_timeout_secs: default_first_byte_timeout(),
            max_connections: default_max_connections(),
            max_unauthenticated_per_client: default_max_unauthenticated_per_client(),
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

    fn check(&self) -> Result<(), Bad> {
        let at = |key| vec![Seg::Key("http"), Seg::Key(key)];
        if let Some(u) = &self.public_url {
            let ok = url::Url::parse(u.trim())
                .is_ok_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some());
            if !ok {
                return Err(Bad::at(
                    at("public_url"),
                    format!(
                        "http.public_url `{u}` is not an http:// or https:// URL (e.g. \"https://handoff.example.com\")"
                    ),
                ));
            }
        }
        for (key, v) in [
            ("header_timeout_secs", self.header_timeout_secs),
            ("body_timeout_secs", self.body_timeout_secs),
            ("first_byte_timeout_secs", self.first_byte_timeout_secs),
        ] {
            if !(1..=3600).contains(&v) {
                return Err(Bad::at(
                    at(key),
                    format!("http.{key} must be 1 to 3600 seconds, not {v}"),
                ));
            }
        }
        for (key, v) in [
            ("max_connections", self.max_connections),
            (
                "max_unauthenticated_per_client",
                self.max_unauthenticated_per_client,
            ),
        ] {
            if v == 0 {
                return Err(Bad::at(at(key), format!("http.{key} must be at least 1")));
            }
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

fn default_first_byte_timeout() -> u64 {
    5
}

fn default_max_connections() -> usize {
    512
}

fn default_max_unauthenticated_per_client() -> usize {
    64
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8642))
}

fn de_listen<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let text = String::deserialize(d)?;
    resolve_listen(&text).map_err(serde::de::Error::custom)
}

/// A listen address: `IP:port`, or `host:port` with the host resolved now
/// (its first IPv4 address, so `localhost` is 127.0.0.1, else its first).
pub fn resolve_listen(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let text = text.trim();
    if let Ok(a) = text.parse() {
        return Ok(a);
    }
    let shape = "give an address and port like 127.0.0.1:8642 or localhost:8642";
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("`{text}` is not a listen address ({e}): {shape}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("`{text}` resolves to no address: {shape}"))
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
    /// In a forum-enabled group: one topic per project or per agent
    /// session, created on first use (instead of one fixed `topic`).
    #[serde(default)]
    pub topics: Option<TopicsBy>,
    /// Telegram user ids allowed to answer questions and rows.
    #[serde(default)]
    pub answer: Vec<u64>,
    /// Telegram user ids allowed to decide actions.
    #[serde(default)]
    pub approve: Vec<u64>,
    /// Nothing is pushed in this daily window (`"22:00-07:00"`); what
    /// waited and is still open goes out as one digest when it ends.
    #[serde(default)]
    pub quiet_hours: Option<String>,
    /// The fixed offset `quiet_hours` is read at (`"+01:00"`; default UTC).
    #[serde(default)]
    pub utc_offset: Option<String>,
}

impl ChatConfig {
    /// The chat's quiet hours, if it has any (checked when the config was
    /// read, so a bad value never gets this far).
    pub fn quiet(&self) -> Option<QuietHours> {
        let hours = self.quiet_hours.as_deref()?;
        QuietHours::parse(hours, self.utc_offset.as_deref()).ok()
    }
}

/// `topics = "project" | "session"`: what gets its own forum topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TopicsBy {
    /// One topic per project.
    Project,
    /// One topic per agent session (items without one: per project).
    Session,
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

    /// Check what parsing cannot: names that must match, limits. An error
    /// says where (`at`, a path of keys and indexes) so it can name a line.
    fn validate(&self) -> Result<(), Bad> {
        self.check_chats()?;
        for (i, r) in self.rules.iter().enumerate() {
            // The rule's own message names it ("rule `x`: …").
            r.check()
                .map_err(|e| Bad::at(vec![Seg::Key("rule"), Seg::Index(i)], e))?;
        }
        for (i, n) in self.notify.iter().enumerate() {
            let name = n.name.clone().unwrap_or_else(|| format!("#{}", i + 1));
            n.check().map_err(|e| {
                Bad::at(
                    vec![Seg::Key("notify"), Seg::Index(i)],
                    format!("[[notify]] `{name}`: {e}"),
                )
            })?;
        }
        for (i, k) in self.kinds.iter().enumerate() {
            k.check()
                .map_err(|e| Bad::at(vec![Seg::Key("kinds"), Seg::Index(i)], e))?;
        }
        let chats: Vec<&str> = self
            .telegram
            .chats
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        self.approvals.check(&chats).map_err(|(i, e)| match i {
            Some(i) => Bad::at(
                vec![Seg::Key("approvals"), Seg::Key("rule"), Seg::Index(i)],
                e,
            ),
            None => Bad::at(vec![Seg::Key("approvals"), Seg::Key("escalate")], e),
        })?;
        self.check_wake()?;
        self.voice
            .check()
            .map_err(|e| Bad::at(vec![Seg::Key("voice")], e))?;
        self.slack.check().map_err(|(i, e)| match i {
            Some(i) => Bad::at(
                vec![Seg::Key("slack"), Seg::Key("channels"), Seg::Index(i)],
                e,
            ),
            None => Bad::at(vec![Seg::Key("slack")], e),
        })?;
        self.check_telegram_and_http()
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

    /// Chat names are unique and non-empty; every route names one of them.
    fn check_chats(&self) -> Result<(), Bad> {
        let mut names = HashSet::new();
        for (i, c) in self.telegram.chats.iter().enumerate() {
            let at = || vec![Seg::Key("telegram"), Seg::Key("chats"), Seg::Index(i)];
            if c.name.trim().is_empty() {
                return Err(Bad::at(
                    at(),
                    "a [[telegram.chats]] entry has an empty name",
                ));
            }
            if c.topics.is_some() && c.topic.is_some() {
                return Err(Bad::at(
                    at(),
                    format!(
                        "chat `{}` sets both `topic` (one fixed topic) and `topics` (a topic per project or session): keep one",
                        c.name
                    ),
                ));
            }
            if c.topics.is_some() && c.chat_id >= 0 {
                return Err(Bad::at(
                    at(),
                    format!(
                        "chat `{}` sets `topics`, which needs a forum-enabled group (a negative chat_id), not {}",
                        c.name, c.chat_id
                    ),
                ));
            }
            let key = |k| {
                let mut p = at();
                p.push(Seg::Key(k));
                p
            };
            if c.utc_offset.is_some() && c.quiet_hours.is_none() {
                return Err(Bad::at(
                    key("utc_offset"),
                    format!(
                        "chat `{}` sets utc_offset, which only applies to quiet_hours: add quiet_hours or remove it",
                        c.name
                    ),
                ));
            }
            if let Some(h) = &c.quiet_hours
                && let Err(e) = QuietHours::parse(h, c.utc_offset.as_deref())
            {
                let which = if e.starts_with("utc_offset") {
                    "utc_offset"
                } else {
                    "quiet_hours"
                };
                return Err(Bad::at(key(which), format!("chat `{}`: {e}", c.name)));
            }
            if !names.insert(c.name.as_str()) {
                return Err(Bad::at(
                    at(),
                    format!("two [[telegram.chats]] are named `{}`", c.name),
                ));
            }
        }
        for (i, r) in self.routes.iter().enumerate() {
            if !names.contains(r.chat.as_str()) {
                return Err(Bad::at(
                    vec![Seg::Key("route"), Seg::Index(i)],
                    format!(
                        "[[route]] names chat `{}`, but no [[telegram.chats]] has that name",
                        r.chat
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Wake URL prefixes, the retry schedule, and the inbound wake sources
    /// (unique names, secrets long enough, `whsec_` for standard ones).
    fn check_wake(&self) -> Result<(), Bad> {
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

    /// Telegram's limits and mode, and the HTTP listener's.
    fn check_telegram_and_http(&self) -> Result<(), Bad> {
        let telegram = |key| vec![Seg::Key("telegram"), Seg::Key(key)];
        if self.telegram.digest_threshold == 0 {
            return Err(Bad::at(
                telegram("digest_threshold"),
                "telegram.digest_threshold must be at least 1",
            ));
        }
        if self.telegram.poll_timeout_secs > 15 {
            return Err(Bad::at(
                telegram("poll_timeout_secs"),
                "telegram.poll_timeout_secs must be at most 15",
            ));
        }
        self.http.check()?;
        if self.http.open && !self.http.listen.ip().is_loopback() {
            return Err(Bad::at(
                vec![Seg::Key("http"), Seg::Key("open")],
                format!(
                    "http.open = true serves the API without tokens, which is allowed only on a loopback address, not {}",
                    self.http.listen
                ),
            ));
        }
        if self.telegram.mode == TelegramMode::Webhook && self.telegram.webhook_url.is_none() {
            return Err(Bad::at(
                telegram("mode"),
                "telegram.mode = \"webhook\" needs telegram.webhook_url",
            ));
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

/// One step of a path into the config: a table key or an array index.
#[derive(Debug, Clone, Copy)]
enum Seg {
    Key(&'static str),
    Index(usize),
}

/// A validation failure and where in the file it is.
#[derive(Debug)]
struct Bad {
    at: Vec<Seg>,
    message: String,
}

impl Bad {
    fn at(at: Vec<Seg>, message: impl Into<String>) -> Bad {
        Bad {
            at,
            message: message.into(),
        }
    }
}

/// toml's error on one line: where, then what (toml's own rendering
/// draws the line with a caret over several lines).
fn parse_message(text: &str, e: &toml::de::Error) -> String {
    let what = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            // The text the error points at, when toml's words leave it out
            // ("duplicate key"): the user then sees which key.
            let at = text.get(span).map(str::trim).unwrap_or_default();
            if at.is_empty() || at.len() > 60 || at.contains('\n') || what.contains(at) {
                format!("line {line}: {what}")
            } else {
                format!("line {line}: {what} (`{at}`)")
            }
        }
        None => what,
    }
}

/// The 1-based line where the entry `at` starts in `text` (the deepest part
/// of the path that the file spells out: a default value has no line).
fn line_of(text: &str, at: &[Seg]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut span = None;
    let mut table = Some(root.get_ref());
    let mut value: Option<&toml::Spanned<DeValue<'_>>> = None;
    for seg in at {
        let next = match (seg, table, value.map(|v| v.get_ref())) {
            (Seg::Key(k), Some(t), _) => {
                t.iter().find(|(key, _)| key.get_ref() == k).map(|(_, v)| v)
            }
            (Seg::Index(i), _, Some(DeValue::Array(a))) => a.get(*i),
            _ => None,
        };
        let Some(v) = next else { break };
        span = Some(v.span().start);
        table = match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
        value = Some(v);
    }
    span.map(|at| text[..at.min(text.len())].matches('\n').count() + 1)
}

/// Where a command's database path came from, for messages and `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbSource {
    /// `--db FILE`.
    Flag,
    /// `$HANDOFF_DB`.
    Env,
    /// `[store] path` of this config file.
    Config(PathBuf),
    /// Nothing named one: the default location.
    Default,
}

impl DbSource {
    /// Whether someone named the file (anything but the default location).
    /// A named file that does not exist is an error, never created quietly.
    pub fn is_named(&self) -> bool {
        !matches!(self, DbSource::Default)
    }
}

impl fmt::Display for DbSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbSource::Flag => f.write_str("--db"),
            DbSource::Env => f.write_str("HANDOFF_DB"),
            DbSource::Config(p) => write!(f, "[store] path in {}", p.display()),
            DbSource::Default => f.write_str("the default location"),
        }
    }
}

/// Where a database is: a file (the embedded default), or a PostgreSQL
/// server (several daemons share one; `init`, `backup` and `status` work on
/// files only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseRef {
    /// An SQLite file.
    File(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

/// The database a command uses: `flag` (`--db`), else `$HANDOFF_DB`, else
/// the config's `[store] path` (`config_path` is the file it came from),
/// else the default location. Every command resolves it this way; the
/// commands that work on a file only call this, the others
/// [`database_ref`], which takes a PostgreSQL URL too.
pub fn database(
    flag: Option<&Path>,
    cfg: &Config,
    config_path: Option<&Path>,
) -> Result<(PathBuf, DbSource), crate::store::Error> {
    match database_ref(flag, cfg, config_path)? {
        (DatabaseRef::File(path), source) => Ok((path, source)),
        (DatabaseRef::Postgres(url), source) => Err(crate::store::Error::Invalid(format!(
            "{source} names the PostgreSQL database {}; this command works on an SQLite file (on PostgreSQL, `handoff migrate` prepares the database and pg_dump backs it up): give a file path",
            crate::store::postgres::shown(&url)
        ))),
    }
}

/// [`database`], with a PostgreSQL URL taken as one. Any other
/// `scheme://` is refused: taken as a path, it would become a folder
/// named `scheme:` holding a fresh SQLite file.
pub fn database_ref(
    flag: Option<&Path>,
    cfg: &Config,
    config_path: Option<&Path>,
) -> Result<(DatabaseRef, DbSource), crate::store::Error> {
    let (path, source) = if let Some(p) = flag {
        (p.to_path_buf(), DbSource::Flag)
    } else if let Some(p) = std::env::var_os("HANDOFF_DB").filter(|p| !p.is_empty()) {
        (PathBuf::from(p), DbSource::Env)
    } else if let Some(u) = cfg.store.url.as_deref().filter(|u| !u.trim().is_empty()) {
        let from = config_path.map_or_else(|| PathBuf::from("the config"), Path::to_path_buf);
        let source = DbSource::Config(from);
        if cfg
            .store
            .path
            .as_deref()
            .is_some_and(|p| !p.trim().is_empty())
        {
            return Err(crate::store::Error::Invalid(format!(
                "{source} sets both [store] path and [store] url: keep the one database handoff should use"
            )));
        }
        if !matches!(
            url_scheme(Path::new(u.trim())),
            Some("postgres" | "postgresql")
        ) {
            return Err(crate::store::Error::Invalid(format!(
                "{source} sets [store] url to something other than a postgres:// URL: write postgres://user:password@host/database, or use [store] path for a file"
            )));
        }
        return Ok((DatabaseRef::Postgres(u.trim().to_string()), source));
    } else if let Some(p) = cfg.store.path.as_deref().filter(|p| !p.trim().is_empty()) {
        let from = config_path.map_or_else(|| PathBuf::from("the config"), Path::to_path_buf);
        (expand_home(p), DbSource::Config(from))
    } else {
        let path = crate::store::default_location()?;
        return Ok((DatabaseRef::File(path), DbSource::Default));
    };
    match url_scheme(&path) {
        None => Ok((DatabaseRef::File(path), source)),
        Some("postgres" | "postgresql") => Ok((
            DatabaseRef::Postgres(path.to_string_lossy().into_owned()),
            source,
        )),
        Some(scheme) => Err(crate::store::Error::Invalid(format!(
            "{source} names `{}`, a {scheme}:// URL: handoff keeps its store in an SQLite file, so give a file path",
            path.display()
        ))),
    }
}

/// The scheme of a `scheme://…` database reference (`postgres`, …), if the
/// path is written as a URL rather than a file path.
fn url_scheme(path: &Path) -> Option<&str> {
    let (scheme, _) = path.to_str()?.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
        .then_some(scheme)
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
    fn discipline_settings_parse_and_bad_ones_name_key_and_line() {
        let c = parse(
            "[[kinds]]\nmatch = 'claude.Bash'\ngrace_secs = 0\n\n[[kinds]]\nmatch = 'claude.*'\ngrace_secs = 5\ntimeout_secs = 600\n\n[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '22:00-07:00'\nutc_offset = '+01:00'\n",
        )
        .unwrap();
        assert_eq!(
            c.grace_ms(Some("claude.Bash")),
            0,
            "the first entry setting it wins"
        );
        assert_eq!(c.grace_ms(Some("claude.Edit")), 5000);
        assert_eq!(c.grace_ms(Some("deploy")), 0);
        assert_eq!(c.grace_ms(None), 0, "questions and rows have no kind");
        assert_eq!(
            c.kind_timeout("claude.Bash"),
            Some(std::time::Duration::from_secs(600)),
            "a later entry sets what the first leaves out"
        );
        assert_eq!(c.kind_timeout("codex.Bash"), None);
        assert!(c.telegram.chats[0].quiet().is_some());
        for (text, line, key) in [
            (
                "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '22-7'\n",
                4,
                "quiet_hours",
            ),
            (
                "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '07:00-07:00'\n",
                4,
                "quiet_hours",
            ),
            (
                "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet_hours = '22:00-07:00'\nutc_offset = 'CET'\n",
                5,
                "utc_offset",
            ),
            (
                "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nutc_offset = '+01:00'\n",
                4,
                "utc_offset",
            ),
            (
                "\n[[kinds]]\nmatch = 'claude.*'\ntimeout_secs = 0\n",
                2,
                "timeout_secs",
            ),
            (
                "\n[[kinds]]\nmatch = 'claude.*'\n",
                2,
                "grace_secs, timeout_secs",
            ),
            ("\n[[kinds]]\nmatch = '*x'\ngrace_secs = 1\n", 2, "match"),
        ] {
            match parse(text) {
                Err(Error::Invalid {
                    line: Some(n),
                    message,
                    ..
                }) => {
                    assert_eq!(n, line, "{text}: {message}");
                    assert!(message.contains(key), "{text}: {message}");
                    assert_eq!(message.lines().count(), 1, "{message}");
                }
                other => panic!("{text}: expected an error with a line, got {other:?}"),
            }
        }
        for bad in [
            "[[kinds]]\nmatch = 'a'\ngrace = 1\n",
            "[[kinds]]\nkind = 'a'\ngrace_secs = 1\n",
            "[[telegram.chats]]\nname = 'a'\nchat_id = 1\nquiet = '22:00-07:00'\n",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("unknown field") || e.contains("missing field"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn parse_errors_are_one_line_naming_line_and_key() {
        for (text, want) in [
            (
                "[http]\nopen = true\nopen = false\n",
                "line 3: duplicate key (`open`)",
            ),
            (
                "\n[[kinds]]\nmatch = 'a'\ngrace = 1\n",
                "line 4: unknown field `grace`",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn errors_found_after_parsing_name_their_line() {
        for (text, line) in [
            (
                "[[rule]]\nname = 'a'\nkind = 'x'\ndecide = 'approve'\n\n[[rule]]\nname = 'b'\nkind = 'x'\ndecide = 'approve'\nwhen = [{ pointer = 'nope', equals = 1 }]\n",
                6,
            ),
            (
                "[telegram]\ndigest_threshold = 5\npoll_timeout_secs = 60\n",
                3,
            ),
            ("\n[http]\nheader_timeout_secs = 0\n", 3),
            (
                "[[telegram.chats]]\nname = 'a'\nchat_id = 1\n\n[[route]]\nchat = 'b'\n",
                5,
            ),
            ("# wake\n[[notify]]\nevents = ['nope']\nexec = ['x']\n", 2),
            ("[telegram]\nmode = 'webhook'\n", 2),
        ] {
            match parse(text) {
                Err(Error::Invalid { line: Some(n), .. }) => assert_eq!(n, line, "{text}"),
                other => panic!("{text}: expected an error with a line, got {other:?}"),
            }
        }
        let e = parse("[http]\nmax_connections = 0\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "config test.toml line 2: http.max_connections must be at least 1"
        );
        // A rule's message names it once.
        let e = parse("[[rule]]\nname = 'r'\nkind = 'x'\ndecide = 'approve'\nwhen = [{ pointer = 'p', equals = 1 }]\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e.matches("`r`").count(), 1, "{e}");
    }

    #[test]
    fn listen_takes_an_address_or_a_host_name() {
        let c = parse("[http]\nlisten = 'localhost:8642'").unwrap();
        assert_eq!(c.http.listen, SocketAddr::from(([127, 0, 0, 1], 8642)));
        let c = parse("[http]\nlisten = '[::1]:9'").unwrap();
        assert_eq!(c.http.listen.port(), 9);
        for bad in ["localhost", "127.0.0.1", ":8642"] {
            let e = parse(&format!("[http]\nlisten = '{bad}'"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("line 2") && e.contains("localhost:8642"),
                "{bad}: {e}"
            );
        }
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
        assert!(c.rules.is_empty(), "a copy decides nothing by itself");
        // Its commented rules parse once uncommented.
        let (head, rest) = text.split_once("Uncomment and adapt:\n").unwrap();
        let (rules, tail) = rest.split_once("\n\n").unwrap();
        let rules: String = rules
            .lines()
            .map(|l| l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#')))
            .collect::<Vec<_>>()
            .join("\n");
        let with = format!("{head}\n{rules}\n\n{tail}");
        let c = super::Config::parse(&with, &path).unwrap();
        assert_eq!(c.rules.len(), 2);
        assert_eq!(c.route("infra", "x", Some("deploy")).unwrap().chat, "ops");
        // The commented notification-discipline examples parse once uncommented.
        let mut on = text.clone();
        for key in [
            "quiet_hours = ",
            "utc_offset = ",
            "[[kinds]]",
            "match = ",
            "grace_secs = ",
            "timeout_secs = 600",
        ] {
            on = on.replacen(&format!("# {key}"), key, 1);
        }
        let c = super::Config::parse(&on, &path).unwrap();
        assert!(c.telegram.chats[0].quiet().is_some());
        assert_eq!(c.grace_ms(Some("claude.Bash")), 5000);
        assert_eq!(
            c.kind_timeout("claude.Bash"),
            Some(std::time::Duration::from_secs(600))
        );
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
