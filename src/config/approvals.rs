//! `[approvals]`: who may approve. Separation of duties: with
//! `not_by_proposer = true` the actor who proposed an action may not
//! approve it (refused as `self_approval`, audited), so its quorum counts
//! only others. `[[approvals.rule]]` entries set it per action kind and
//! project; the first entry that matches decides, else the section's own
//! value. The policy is fixed on the action when it is proposed, as its
//! quorum is.
//!
//! Escalation chains: `[[approvals.escalate]]` steps say where a pending
//! action goes when nobody decides it in time — a configured chat (its
//! forum topic, or another one) or a signed webhook — each `after` a time
//! since the proposal. The chain ends with the action's TTL, whose outcome
//! fails closed (rejected or expired, never run); a step due at or after the
//! TTL is dropped. A rule's own `escalate` replaces the section's chain
//! (`escalate = []`: none) for the actions it matches.
//!
//! ```toml
//! [approvals]
//! not_by_proposer = true
//!
//! [[approvals.escalate]]
//! after = "10m"             # nobody decided in 10 minutes: the team chat
//! chat = "team"             # a [[telegram.chats]] name
//!
//! [[approvals.escalate]]
//! after = "30m"             # then the pager
//! webhook = "https://pager.example.com/hook"
//! secret = "whsec_…"
//!
//! [[approvals.rule]]
//! kind = "notes.*"          # scratch notes may be approved by their author
//! not_by_proposer = false
//! escalate = []             # and never escalate
//! ```

use serde::Deserialize;

pub use crate::store::actions::Escalation;

/// The places an escalation step may name: `[[telegram.chats]]` names and
/// `[[slack.channels]]` ids.
#[derive(Debug, Default)]
pub(super) struct Places<'a> {
    pub(super) chats: Vec<&'a str>,
    pub(super) slack: Vec<&'a str>,
}

/// Where in `[approvals]` a check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Where {
    /// The section's `[[approvals.escalate]]` step of this index.
    Step(usize),
    /// The `[[approvals.rule]]` of this index.
    Rule(usize),
}

/// The `[approvals]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Refuse an approval by the action's own proposer (default false).
    #[serde(default)]
    pub not_by_proposer: bool,
    /// Per kind / project; the first matching entry that sets a key wins.
    #[serde(default, rename = "rule")]
    pub rules: Vec<ApprovalRule>,
    /// The escalation chain of a pending action, in order of `after`.
    #[serde(default)]
    pub escalate: Vec<EscalateStep>,
}

/// One step of an escalation chain: after `after` without a decision, the
/// action goes to `chat` (and `topic`) or to `webhook`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EscalateStep {
    /// How long after the proposal (`10m`, `2h`).
    pub after: String,
    /// A `[[telegram.chats]]` name to push the action to.
    #[serde(default)]
    pub chat: Option<String>,
    /// The forum topic in that chat (default: the chat's own `topic`).
    #[serde(default)]
    pub topic: Option<i32>,
    /// A `[[slack.channels]]` id to post the action to.
    #[serde(default)]
    pub slack: Option<String>,
    /// A URL to POST the `action.escalated` event to, signed as a
    /// `[[notify]]` webhook is.
    #[serde(default)]
    pub webhook: Option<String>,
    /// The webhook's `whsec_…` signing secret.
    #[serde(default)]
    pub secret: crate::config::Secret,
    /// How the step is shown ("escalated to … at 14:05"; default: `#chat`,
    /// or the webhook's host).
    #[serde(default)]
    pub to: Option<String>,
}

impl EscalateStep {
    /// `after` in ms (checked when the config was read).
    pub fn after_ms(&self) -> i64 {
        crate::clock::parse_duration_ms(self.after.trim()).unwrap_or(i64::MAX)
    }

    /// The name the step is shown by.
    pub fn label(&self) -> String {
        if let Some(t) = self.to.as_deref().filter(|t| !t.trim().is_empty()) {
            return t.trim().to_string();
        }
        match (&self.chat, &self.webhook) {
            (Some(c), _) => format!("#{c}"),
            (None, _) if self.slack.is_some() => {
                format!("Slack {}", self.slack.as_deref().unwrap_or_default())
            }
            (None, Some(url)) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                rest.split(['/', '?']).next().unwrap_or(rest).to_string()
            }
            (None, None) => "?".into(),
        }
    }

    /// What is wrong with the step, in words naming the key.
    fn check(&self, places: &Places) -> Result<(), String> {
        let after = crate::clock::parse_duration_ms(self.after.trim())
            .map_err(|e| format!("escalate `after`: {e}"))?;
        if after <= 0 {
            return Err("escalate `after` must be positive, e.g. 10m".into());
        }
        let named = [
            self.chat.is_some(),
            self.slack.is_some(),
            self.webhook.is_some(),
        ];
        if named.iter().filter(|n| **n).count() != 1 {
            return Err(
                "an escalate step needs exactly one of `chat` (a [[telegram.chats]] name), `slack` (a [[slack.channels]] id) or `webhook`"
                    .into(),
            );
        }
        if let Some(c) = &self.slack
            && !places.slack.contains(&c.as_str())
        {
            return Err(format!(
                "escalate slack = \"{c}\" is not a [[slack.channels]] id; add the channel there (with who may approve in it) or name one that is"
            ));
        }
        let chats = &places.chats;
        match (&self.chat, &self.webhook) {
            (Some(c), None) if !chats.contains(&c.as_str()) => {
                return Err(format!(
                    "escalate chat = \"{c}\" is not a [[telegram.chats]] name"
                ));
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("escalate webhook `{url}` is not an http(s) URL"));
                }
                if crate::sign::decode_whsec(self.secret.expose()).is_none() {
                    return Err(
                        "an escalate webhook needs `secret = \"whsec_<base64>\"` to sign with"
                            .into(),
                    );
                }
            }
            _ => {}
        }
        if self.topic.is_some() && self.chat.is_none() {
            return Err("escalate `topic` needs a `chat`".into());
        }
        Ok(())
    }
}

/// One `[[approvals.rule]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Action kind: exact, or a prefix ending in `*`. None = any.
    #[serde(default)]
    pub kind: Option<String>,
    /// Project. None = any.
    #[serde(default)]
    pub project: Option<String>,
    /// Refuse an approval by the proposer for matching actions (unset:
    /// the next matching rule, else the section, decides).
    #[serde(default)]
    pub not_by_proposer: Option<bool>,
    /// The escalation chain of matching actions, instead of the section's.
    #[serde(default)]
    pub escalate: Option<Vec<EscalateStep>>,
}

impl ApprovalsConfig {
    /// Whether an action of `kind` in `project` refuses its proposer's
    /// approval.
    pub fn not_by_proposer(&self, kind: &str, project: &str) -> bool {
        self.matching(kind, project)
            .find_map(|r| r.not_by_proposer)
            .unwrap_or(self.not_by_proposer)
    }

    /// The escalation chain of an action of `kind` in `project` proposed
    /// at `now` (ms) that expires at `expires_at`: each step's due time and
    /// place, in order, the steps the TTL cuts off left out.
    pub fn escalation(
        &self,
        kind: &str,
        project: &str,
        now: i64,
        expires_at: Option<i64>,
    ) -> Vec<Escalation> {
        let steps = self
            .matching(kind, project)
            .find_map(|r| r.escalate.as_ref())
            .unwrap_or(&self.escalate);
        let mut out: Vec<Escalation> = steps
            .iter()
            .map(|s| Escalation {
                at: now.saturating_add(s.after_ms()),
                to: s.label(),
                chat: s.chat.clone(),
                topic: s.topic,
                slack: s.slack.clone(),
                webhook: s.webhook.clone(),
            })
            .filter(|e| expires_at.is_none_or(|x| e.at < x))
            .collect();
        out.sort_by_key(|e| e.at);
        out
    }

    /// The signing secret of an escalation webhook at `url`.
    pub fn webhook_secret(&self, url: &str) -> Option<&str> {
        self.escalate
            .iter()
            .chain(self.rules.iter().flat_map(|r| r.escalate.iter().flatten()))
            .find(|s| s.webhook.as_deref() == Some(url))
            .map(|s| s.secret.expose())
    }

    fn matching<'a>(
        &'a self,
        kind: &'a str,
        project: &'a str,
    ) -> impl Iterator<Item = &'a ApprovalRule> + 'a {
        self.rules.iter().filter(move |r| {
            r.kind
                .as_deref()
                .is_none_or(|k| crate::store::actions::kind_matches(k, kind.trim()))
                && r.project.as_deref().is_none_or(|p| p == project)
        })
    }

    /// What is wrong with an entry, in words naming the key: `Err` with
    /// where it is (a rule's index, or a section step's) and what.
    pub(super) fn check(&self, places: &Places) -> Result<(), (Where, String)> {
        for (i, s) in self.escalate.iter().enumerate() {
            s.check(places)
                .map_err(|e| (Where::Step(i), format!("[[approvals.escalate]]: {e}")))?;
        }
        for (i, r) in self.rules.iter().enumerate() {
            for s in r.escalate.iter().flatten() {
                s.check(places)
                    .map_err(|e| (Where::Rule(i), format!("[[approvals.rule]]: {e}")))?;
            }
            if let Some(k) = &r.kind
                && (k.trim().is_empty() || k.trim_end_matches('*').contains('*'))
            {
                return Err((
                    Where::Rule(i),
                    format!(
                        "[[approvals.rule]] kind = \"{k}\" must be a kind, or a prefix ending in * (e.g. \"deploy.*\")"
                    ),
                ));
            }
            if r.project.as_deref().is_some_and(|p| p.trim().is_empty()) {
                return Err((
                    Where::Rule(i),
                    "[[approvals.rule]] project is empty: name a project or leave the key out"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_rule_wins_else_the_section() {
        let c: ApprovalsConfig = toml::from_str("not_by_proposer = true").unwrap();
        assert!(c.not_by_proposer("deploy", "shop"));
        let c: ApprovalsConfig = toml::from_str(
            "[[rule]]\nkind = 'notes.*'\nnot_by_proposer = false\n\n[[rule]]\nproject = 'shop'\nnot_by_proposer = true\n",
        )
        .unwrap();
        assert!(!c.not_by_proposer("notes.add", "shop"));
        assert!(c.not_by_proposer("deploy", "shop"));
        assert!(!c.not_by_proposer("deploy", "blog"));
        let c: ApprovalsConfig =
            toml::from_str("not_by_proposer = true\n[[rule]]\nkind = 'deploy'\nescalate = []\n")
                .unwrap();
        assert!(c.not_by_proposer("deploy", "shop"), "a rule not setting it");
        assert!(toml::from_str::<ApprovalsConfig>("not_by_proposr = true").is_err());
        let bad: ApprovalsConfig =
            toml::from_str("[[rule]]\nkind = '*x'\nnot_by_proposer = true\n").unwrap();
        assert!(
            bad.check(&Places::default())
                .unwrap_err()
                .1
                .contains("prefix ending in *")
        );
    }

    fn places() -> Places<'static> {
        Places {
            chats: vec!["team"],
            slack: vec!["C0OPS"],
        }
    }

    #[test]
    fn a_slack_step_names_a_configured_channel() {
        let c: ApprovalsConfig =
            toml::from_str("[[escalate]]\nafter = '10m'\nslack = 'C0OPS'\n").unwrap();
        assert!(c.check(&places()).is_ok());
        let got = c.escalation("deploy", "shop", 0, None);
        assert_eq!(got[0].slack.as_deref(), Some("C0OPS"));
        assert_eq!(got[0].to, "Slack C0OPS");
    }

    #[test]
    fn the_chain_in_order_cut_by_the_ttl_and_per_rule() {
        let c: ApprovalsConfig = toml::from_str(
            "[[escalate]]\nafter = '30m'\nwebhook = 'https://pager.example.com/h?x=1'\nsecret = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD'\n\n[[escalate]]\nafter = '10m'\nchat = 'team'\n\n[[rule]]\nkind = 'notes.*'\nescalate = []\n",
        )
        .unwrap();
        assert!(c.check(&places()).is_ok());
        let got = c.escalation("deploy", "shop", 1_000, None);
        let to: Vec<&str> = got.iter().map(|e| e.to.as_str()).collect();
        assert_eq!(to, ["#team", "pager.example.com"]);
        assert_eq!(got[0].at, 1_000 + 600_000);
        assert_eq!(c.escalation("deploy", "shop", 0, Some(1_800_000)).len(), 1);
        assert!(c.escalation("notes.add", "shop", 0, None).is_empty());
        assert_eq!(
            c.webhook_secret("https://pager.example.com/h?x=1"),
            Some("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD")
        );
        for (bad, want) in [
            (
                "[[escalate]]\nafter = '10m'\nchat = 'nope'\n",
                "not a [[telegram.chats]] name",
            ),
            (
                "[[escalate]]\nafter = 'soon'\nchat = 'team'\n",
                "not a duration",
            ),
            ("[[escalate]]\nafter = '10m'\n", "exactly one of"),
            (
                "[[escalate]]\nafter = '1m'\nwebhook = 'https://x'\n",
                "whsec_",
            ),
            (
                "[[escalate]]\nafter = '1m'\nwebhook = 'ftp://x'\n",
                "http(s)",
            ),
            (
                "[[escalate]]\nafter = '1m'\nslack = 'C0NOPE'\n",
                "slack = \"C0NOPE\" is not a [[slack.channels]] id",
            ),
            (
                "[[escalate]]\nafter = '1m'\nslack = 'C0OPS'\nchat = 'team'\n",
                "exactly one of",
            ),
        ] {
            let c: ApprovalsConfig = toml::from_str(bad).unwrap();
            let e = c.check(&places()).unwrap_err().1;
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
