//! `[telegram]`, `[[telegram.chats]]` and `[[route]]`: the bot, its chats and
//! who may do what in them, and which chat an item goes to; with their
//! checks.

use std::collections::HashSet;

use serde::Deserialize;

use super::QuietHours;

use super::{Bad, Config, Secret, Seg};

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
    /// Chat names are unique and non-empty; every route names one of them.
    pub(super) fn check_chats(&self) -> Result<(), Bad> {
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

    /// Telegram's limits and mode, and the HTTP listener's.
    pub(super) fn check_telegram_and_http(&self) -> Result<(), Bad> {
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
