//! `[slack]`: the Slack app's two tokens, the Web API base URL, and the
//! channels items go to, each with the Slack user ids that may answer or
//! approve there. Empty tokens: Slack is off. Only parsed and checked here;
//! the bridge is in `chat::slack`.

use serde::Deserialize;

use super::Secret;

/// `[slack]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// The app-level token (`xapp-…`, scope `connections:write`) that opens
    /// the Socket Mode connection; `$HANDOFF_SLACK_APP_TOKEN` wins.
    #[serde(default)]
    pub app_token: Secret,
    /// The bot token (`xoxb-…`) for the Web API; `$HANDOFF_SLACK_BOT_TOKEN` wins.
    #[serde(default)]
    pub bot_token: Secret,
    /// The Web API base (`https://slack.com/api`; a test fake).
    #[serde(default = "default_api_url")]
    pub api_url: String,
    /// Where items go: the first channel whose `projects` holds an item's
    /// project (or that lists none) gets it.
    #[serde(default)]
    pub channels: Vec<SlackChannel>,
    /// More new items than this for one channel within
    /// `digest_window_secs`: the rest go out as one digest message.
    #[serde(default = "default_digest_threshold")]
    pub digest_threshold: usize,
    /// The window for counting a burst, in seconds.
    #[serde(default = "default_digest_window")]
    pub digest_window_secs: u64,
}

/// `[[slack.channels]]`: one Slack channel and who may act in it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackChannel {
    /// The channel id (`C0123ABCD`), as Slack's channel details show it.
    pub id: String,
    /// The projects whose items go here; empty: every project not routed
    /// to an earlier channel.
    #[serde(default)]
    pub projects: Vec<String>,
    /// Slack user ids (`U0123ABCD`) that may answer questions and rows.
    #[serde(default)]
    pub answer: Vec<String>,
    /// Slack user ids that may also decide actions.
    #[serde(default)]
    pub approve: Vec<String>,
}

fn default_api_url() -> String {
    "https://slack.com/api".into()
}

/// Telegram's defaults: the same digest rule on both networks.
fn default_digest_threshold() -> usize {
    5
}

fn default_digest_window() -> u64 {
    3
}

impl Default for SlackConfig {
    fn default() -> Self {
        SlackConfig {
            app_token: Secret::default(),
            bot_token: Secret::default(),
            api_url: default_api_url(),
            channels: Vec::new(),
            digest_threshold: default_digest_threshold(),
            digest_window_secs: default_digest_window(),
        }
    }
}

impl SlackConfig {
    /// Whether Slack is on: both tokens are set.
    pub fn enabled(&self) -> bool {
        !self.app_token.is_empty() && !self.bot_token.is_empty()
    }

    /// The channel an item of `project` goes to, if any.
    pub fn channel_for(&self, project: &str) -> Option<&SlackChannel> {
        self.channels
            .iter()
            .find(|c| c.projects.is_empty() || c.projects.iter().any(|p| p == project))
    }

    /// The channel with id `id`, if configured.
    pub fn channel(&self, id: &str) -> Option<&SlackChannel> {
        self.channels.iter().find(|c| c.id == id)
    }

    /// Tokens from the environment win over the file.
    pub(super) fn apply_env(&mut self) {
        for (var, slot) in [
            ("HANDOFF_SLACK_APP_TOKEN", &mut self.app_token),
            ("HANDOFF_SLACK_BOT_TOKEN", &mut self.bot_token),
        ] {
            if let Some(t) = std::env::var(var).ok().filter(|t| !t.is_empty()) {
                *slot = Secret::new(t);
            }
        }
    }

    /// What parsing cannot check: token kinds, the URL, channel and user
    /// ids. `Err((channel index, message))`; each message names the key
    /// and says what to do.
    pub(super) fn check(&self) -> Result<(), (Option<usize>, String)> {
        let (app, bot) = (self.app_token.expose(), self.bot_token.expose());
        if !app.is_empty() && !app.starts_with("xapp-") {
            return Err((
                None,
                "[slack] app_token must be an app-level token starting with `xapp-` (Basic Information → App-Level Tokens, scope connections:write)".into(),
            ));
        }
        if !bot.is_empty() && !bot.starts_with("xoxb-") {
            return Err((
                None,
                "[slack] bot_token must be a bot token starting with `xoxb-` (OAuth & Permissions → Bot User OAuth Token)".into(),
            ));
        }
        if app.is_empty() != bot.is_empty() {
            let missing = if app.is_empty() {
                "app_token"
            } else {
                "bot_token"
            };
            return Err((
                None,
                format!(
                    "[slack] needs both tokens: set {missing} too (or remove the other to turn Slack off)"
                ),
            ));
        }
        match url::Url::parse(&self.api_url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => {
                return Err((
                    None,
                    format!(
                        "[slack] api_url `{}` is not an http(s) URL; leave it out for https://slack.com/api",
                        self.api_url
                    ),
                ));
            }
        }
        if self.digest_threshold == 0 {
            return Err((
                None,
                "[slack] digest_threshold must be at least 1 (the items of a burst shown on their own before the digest)".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, c) in self.channels.iter().enumerate() {
            if !is_slack_id(&c.id, &['C', 'G', 'D']) {
                return Err((
                    Some(i),
                    format!(
                        "[[slack.channels]] id `{}` is not a Slack channel id (like C0123ABCD: open the channel's details in Slack and copy the Channel ID at the bottom)",
                        c.id
                    ),
                ));
            }
            if !seen.insert(c.id.as_str()) {
                return Err((
                    Some(i),
                    format!(
                        "[[slack.channels]] id `{}` is listed twice; give each channel one entry",
                        c.id
                    ),
                ));
            }
            for (key, users) in [("answer", &c.answer), ("approve", &c.approve)] {
                if let Some(u) = users.iter().find(|u| !is_slack_id(u, &['U', 'W'])) {
                    return Err((
                        Some(i),
                        format!(
                            "[[slack.channels]] `{}` {key}: `{u}` is not a Slack user id (like U0123ABCD: a person's profile → ⋯ → Copy member ID)",
                            c.id
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether `s` looks like a Slack id: a known prefix letter, then
/// upper-case letters and digits.
fn is_slack_id(s: &str, prefixes: &[char]) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| prefixes.contains(&c))
        && s.len() >= 3
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> SlackConfig {
        toml::from_str(text).expect("parses")
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            (
                "app_token = \"xoxb-1\"\nbot_token = \"xoxb-2\"",
                "app_token must be",
            ),
            (
                "app_token = \"xapp-1\"\nbot_token = \"xapp-2\"",
                "bot_token must be",
            ),
            ("app_token = \"xapp-1\"", "set bot_token too"),
            (
                "digest_threshold = 0",
                "digest_threshold must be at least 1",
            ),
            (
                "app_token = \"xapp-1\"\nbot_token = \"xoxb-2\"\napi_url = \"slack\"",
                "api_url `slack`",
            ),
            (
                "[[channels]]\nid = \"general\"",
                "id `general` is not a Slack channel id",
            ),
            (
                "[[channels]]\nid = \"C1AB\"\n[[channels]]\nid = \"C1AB\"",
                "listed twice",
            ),
            (
                "[[channels]]\nid = \"C1AB\"\napprove = [\"alice\"]",
                "approve: `alice` is not a Slack user id",
            ),
        ];
        for (text, want) in cases {
            let err = parse(text).check().expect_err(text).1;
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn good_values_pass_and_route_by_project() {
        let c = parse(
            "app_token = \"xapp-1\"\nbot_token = \"xoxb-2\"\n[[channels]]\nid = \"C0WEB\"\nprojects = [\"web\"]\napprove = [\"U0A\"]\n[[channels]]\nid = \"C0ALL\"",
        );
        assert_eq!(c.check(), Ok(()));
        assert!(c.enabled());
        assert_eq!(c.channel_for("web").map(|c| c.id.as_str()), Some("C0WEB"));
        assert_eq!(c.channel_for("api").map(|c| c.id.as_str()), Some("C0ALL"));
        assert!(!SlackConfig::default().enabled());
    }
}
