//! An action in chat: its message (kind, summary, arguments, status and
//! outcome), its taps (Approve, Reject, Edit, and the stranded-run buttons),
//! and edits of its arguments sent as a reply.

use super::Bridge;
use super::callback::{Callback, Item, Verb};
use super::dispatch::Prompt;
use super::network::{Ask, Network, Outcome, Tapper};
use crate::store::actions::{Action, Actor, ApproveOutcome, RejectOutcome, Resolution};
use crate::store::grants::{Scope, Terms};
use crate::store::{Result, short_id};
/// How long a "For 1 h" grant holds.
const HOUR_MS: i64 = 3_600_000;

mod message;

pub(crate) use message::{action_meta, action_of, action_revision, action_view};

impl Bridge {
    /// What a tap on an action's button comes to.
    pub(crate) async fn tap_action(&self, cb: &Callback, tapper: Tapper<'_>) -> Outcome {
        let who = tapper.who;
        let action = match action_of(&self.ops, &cb.id).await {
            Ok(Some(a)) => a,
            Ok(None) => return Outcome::only("That action no longer exists."),
            Err(e) => {
                tracing::error!(error = %e, "store failed on an action tap");
                return Outcome::only("Something went wrong on the host; try again.");
            }
        };
        let actor = Actor::chat(who);
        let stale = action_revision(&action) != cb.revision;
        let text = match cb.verb {
            Verb::Approve | Verb::ApproveSession | Verb::ApproveHour | Verb::ApproveAlways
                if stale =>
            {
                "The arguments changed since this message was drawn — see the updated message."
                    .to_string()
            }
            Verb::Approve => match self.calls().approve(&cb.id, actor, None).await {
                Ok(o) => approve_words(&o, who),
                Err(e) => format!("Not approved: {e}"),
            },
            Verb::ApproveSession => {
                self.approve_granting(&action, actor, Terms::scope(Scope::Session))
                    .await
            }
            Verb::ApproveHour => {
                let terms = Terms {
                    scope: Scope::Always,
                    until: Some(self.ops.now() + HOUR_MS),
                    here: true,
                };
                self.approve_granting(&action, actor, terms).await
            }
            Verb::ApproveAlways => {
                let terms = Terms {
                    scope: Scope::Always,
                    until: None,
                    here: true,
                };
                self.approve_granting(&action, actor, terms).await
            }
            Verb::Reject => self.reject_words(&cb.id, actor, tapper.network).await,
            Verb::Edit => {
                let text = format!(
                    "✏️ Edit #{}: reply with a JSON patch like {{\"to\": \"x@example.com\"}} or `key: value` lines. It is checked first, then counts as your approval.",
                    short_id(&cb.id)
                );
                let ask = Ask {
                    text,
                    placeholder: "key: value",
                    prompt: Prompt::ActionEdit { id: cb.id.clone() },
                };
                return Outcome {
                    redraw: true,
                    ..Outcome::asking("Send the changes as a reply.", ask)
                };
            }
            Verb::MarkExecuted | Verb::MarkFailed | Verb::Retry => {
                self.resolve_words(&cb.id, actor, cb.verb).await
            }
            Verb::Run => self.run_stranded(&action, who),
            Verb::DoneByHand | Verb::NotRun => {
                self.settle_by_hand(&action, who, cb.verb == Verb::DoneByHand)
                    .await
            }
            _ => "That button doesn't apply to an action.".to_string(),
        };
        Outcome::said(text)
    }

    /// Approve a permission prompt and save the grant its message showed
    /// (live only if this approval won: see `Local::approve_saving`).
    async fn approve_granting(&self, a: &Action, actor: Actor<'_>, terms: Terms) -> String {
        match self.ops.approve_saving(a, actor, terms).await {
            Ok((_, Some(g))) => match (g.scope, g.expires_at) {
                (Scope::Session, _) => {
                    format!("Approved ✅ and saved {} for this session.", g.rule)
                }
                (Scope::Always, Some(_)) => {
                    format!(
                        "Approved ✅ and saved {} {} for one hour.",
                        g.rule,
                        g.place()
                    )
                }
                (Scope::Always, None) => {
                    format!(
                        "Approved ✅ and saved {} {} until revoked.",
                        g.rule,
                        g.place()
                    )
                }
            },
            Ok((out, None)) => approve_words(&out, actor.name),
            Err(e) => format!("Not approved: {e}"),
        }
    }

    /// Reject from a tap; the toast that says what happened.
    async fn reject_words(&self, id: &str, actor: Actor<'_>, network: Network) -> String {
        let reason = format!("rejected in {} by {}", network.name(), actor.name);
        self.reject_for(id, actor, &reason).await
    }

    /// Reject with `reason` (a tap's default, or one typed in a form);
    /// what to tell the person, on any network.
    pub(crate) async fn reject_for(&self, id: &str, actor: Actor<'_>, reason: &str) -> String {
        match self.calls().reject(id, actor, reason).await {
            Ok(RejectOutcome::Rejected { .. }) => "Rejected 🚫".to_string(),
            Ok(RejectOutcome::AlreadyDecided { action })
                if action.decided_by.as_deref() == Some(crate::ops::claude::TERMINAL) =>
            {
                AT_TERMINAL.to_string()
            }
            Ok(RejectOutcome::AlreadyDecided { action }) => format!(
                "Already {} by {}.",
                action.status,
                action.decided_by.as_deref().unwrap_or("someone")
            ),
            Ok(RejectOutcome::Expired { .. }) => "It expired before your decision.".to_string(),
            Err(e) => format!("Not rejected: {e}"),
        }
    }

    /// Settle an `unknown` action from a tap (Mark executed / Mark failed /
    /// Retry); the toast that says what happened.
    async fn resolve_words(&self, id: &str, actor: Actor<'_>, verb: Verb) -> String {
        let (res, done) = match verb {
            Verb::MarkExecuted => (Resolution::Executed, "Marked executed."),
            Verb::MarkFailed => (Resolution::Failed, "Marked failed."),
            _ => (
                Resolution::Retry,
                "Approved for one more run (at-least-once, your call).",
            ),
        };
        match self.calls().resolve_unknown(id, actor, res).await {
            Ok(Ok(_)) => done.to_string(),
            Ok(Err(a)) => format!("Nothing to resolve: it is {} now.", a.status),
            Err(e) => format!("Not recorded: {e}"),
        }
    }

    pub(crate) async fn edit_action(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        id: &str,
        text: &str,
        who: &str,
    ) {
        let (said, tried) = self.edit_words(id, text, who).await;
        self.say(chat_id, thread, &said).await;
        if tried {
            self.redraw_quiet(Item::Action, id).await;
        }
    }

    /// Apply an edit sent as a reply (a JSON patch or `key: value`
    /// lines), checked before any state change, as the editor's
    /// approval; what to tell them, on any network, and whether the store
    /// was asked (a patch that does not parse never reaches it).
    pub(crate) async fn edit_words(&self, id: &str, text: &str, who: &str) -> (String, bool) {
        let patch = match patch_json(text) {
            Ok(p) => p,
            Err(msg) => return (format!("Not applied: {msg}"), false),
        };
        let actor = Actor::chat(who);
        let said = match self.calls().approve(id, actor, Some(&patch)).await {
            Ok(o) => approve_words(&o, who),
            Err(e) => format!("Not applied, nothing changed: {e}"),
        };
        (said, true)
    }
}

/// A tap on a prompt the person answered at the terminal.
const AT_TERMINAL: &str = "Too late: this prompt was answered at the terminal, so the agent no longer waits for a decision here. Nothing changed.";

pub(super) fn approve_words(o: &ApproveOutcome, who: &str) -> String {
    match o {
        ApproveOutcome::Approved { .. } => "Approved ✅".to_string(),
        ApproveOutcome::ApprovalAdded { action } => format!(
            "Approval recorded: {} of {}.",
            action.approvals, action.approvals_required
        ),
        ApproveOutcome::AlreadyApprovedBy { action } => format!(
            "You ({who}) already approved: {} of {}.",
            action.approvals, action.approvals_required
        ),
        ApproveOutcome::AlreadyDecided { decided_by, .. }
            if decided_by.as_deref() == Some(crate::ops::claude::TERMINAL) =>
        {
            AT_TERMINAL.to_string()
        }
        ApproveOutcome::AlreadyDecided {
            status, decided_by, ..
        } => format!(
            "Already {status} by {}.",
            decided_by.as_deref().unwrap_or("someone")
        ),
        ApproveOutcome::Expired { .. } => "It expired before your approval.".to_string(),
        ApproveOutcome::PatchRefused { reason, .. } => {
            format!("Edit refused, nothing changed: {reason}")
        }
        ApproveOutcome::SelfApproval { action } => format!(
            "Not approved: you ({who}) proposed this, and someone else must approve it. Nothing was counted ({}).",
            crate::store::actions::self_approval_note(action)
        ),
    }
}

/// A patch from chat: a JSON object as is, or `key: value` lines (values
/// parsed as JSON when they parse, else taken as strings).
pub(crate) fn patch_json(text: &str) -> Result<String, String> {
    let t = text.trim();
    if t.starts_with('{') {
        return serde_json::from_str::<serde_json::Value>(t)
            .map(|_| t.to_string())
            .map_err(|e| format!("that is not valid JSON ({e})"));
    }
    let mut map = serde_json::Map::new();
    for line in t.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!("`{line}` is not `key: value`"));
        };
        let v = v.trim();
        let value =
            serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        map.insert(k.trim().to_string(), value);
    }
    if map.is_empty() {
        return Err("the patch is empty".into());
    }
    Ok(serde_json::Value::Object(map).to_string())
}

#[cfg(test)]
mod patch_tests {
    use super::patch_json;

    #[test]
    pub(super) fn patches_from_json_or_lines() {
        assert_eq!(patch_json("{\"a\": 1}").unwrap(), "{\"a\": 1}");
        let p: serde_json::Value =
            serde_json::from_str(&patch_json("to: x@y.z\ncount: 3").unwrap()).unwrap();
        assert_eq!(p["to"], "x@y.z");
        assert_eq!(p["count"], 3);
        assert!(patch_json("no colon here").is_err());
        assert!(patch_json("{broken").is_err());
        assert!(patch_json("  ").is_err());
    }
}
