//! Answered elsewhere, told by a later event: Claude
//! Code runs the hook for later events of a session too. When one says the
//! session went on without handoff's answer, the prompts still pending in
//! handoff are settled as answered at the terminal, like a stopped hook's.
//!
//! - `Stop`, `UserPromptSubmit`, `SessionEnd`: the turn ended or the person
//!   typed at the terminal; nothing of the session still waits on a prompt,
//!   so every pending `claude.*` action and open question card of it is
//!   settled.
//! - `PostToolUse`, `PostToolUseFailure`: the tool call ran (or failed), so
//!   its own prompt was answered; only that call's prompt is settled (same
//!   `tool_use_id`, or for a prompt recorded without one the same tool and
//!   input): a prompt of a parallel call of the session still waits.
//!
//! Local store only (settling rejects, which an agent token may not do
//! against a daemon). Prints nothing.

use serde_json::Value;

use super::ask::TOOL as ASK;
use super::{AGENT, HookEvent};
use crate::ops::{Ops, Result};
use crate::store::actions::Status;

/// Which later events settle what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Later {
    /// The session went on: settle all its prompts.
    Session,
    /// One tool call ran: settle its prompt.
    Call,
}

/// What a hook event means for pending prompts; `None` for events that
/// say nothing about them.
pub fn later(ev: &HookEvent) -> Option<Later> {
    match ev.hook_event_name.as_str() {
        "Stop" | "UserPromptSubmit" | "SessionEnd" => Some(Later::Session),
        "PostToolUse" | "PostToolUseFailure" => Some(Later::Call),
        _ => None,
    }
}

/// Whether a pending action (kind, dedup key, arguments) is the prompt of
/// the call `ev` reports.
fn same_call(ev: &HookEvent, kind: &str, dedup_key: Option<&str>, args: &Value) -> bool {
    if let Some(t) = ev.tool_use_id.as_deref().filter(|t| !t.is_empty())
        && dedup_key == Some(format!("{AGENT}:{}:{t}", ev.session_id).as_str())
    {
        return true;
    }
    kind == format!("{AGENT}.{}", ev.tool_name) && dedup_key.is_none() && *args == ev.tool_input
}

impl Ops {
    /// Settle the prompts of `ev`'s session that `ev` shows were answered
    /// elsewhere; how many (actions, question cards).
    pub async fn claude_settle(&self, ev: &HookEvent, what: Later) -> Result<(usize, usize)> {
        // On this host's file (directly, or behind the local daemon).
        let Some(l) = self.host().await? else {
            return Ok((0, 0));
        };
        if ev.session_id.is_empty() {
            return Ok((0, 0));
        }
        let mut actions = 0;
        for a in l.store.list_actions(Some(Status::Pending)).await? {
            let ours = a.session == ev.session_id && a.kind.starts_with(&format!("{AGENT}."));
            let settles = ours
                && match what {
                    Later::Session => true,
                    Later::Call => same_call(ev, &a.kind, a.dedup_key.as_deref(), &a.args),
                };
            // A prompt decided meanwhile is refused by the store: not ours.
            if settles && self.claude_abandon(&a.id).await.is_ok() {
                actions += 1;
            }
        }
        let cards = if what == Later::Session || ev.tool_name == ASK {
            self.claude_ask_abandon(&ev.session_id).await?
        } else {
            0
        };
        Ok((actions, cards))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(name: &str, tool_use_id: Option<&str>) -> HookEvent {
        serde_json::from_value(json!({
            "hook_event_name": name, "session_id": "s-1", "tool_name": "Bash",
            "tool_input": {"command": "npm test"}, "tool_use_id": tool_use_id
        }))
        .unwrap()
    }

    #[test]
    fn later_events_settle_their_call_or_their_session() {
        assert_eq!(later(&ev("Stop", None)), Some(Later::Session));
        assert_eq!(later(&ev("UserPromptSubmit", None)), Some(Later::Session));
        assert_eq!(later(&ev("PostToolUse", None)), Some(Later::Call));
        assert_eq!(later(&ev("PreToolUse", None)), None);
        let post = ev("PostToolUse", Some("toolu_1"));
        let args = json!({"command": "npm test"});
        assert!(same_call(
            &post,
            "claude.Bash",
            Some("claude:s-1:toolu_1"),
            &json!({})
        ));
        assert!(!same_call(
            &post,
            "claude.Bash",
            Some("claude:s-1:toolu_2"),
            &args
        ));
        assert!(same_call(&post, "claude.Bash", None, &args));
        assert!(!same_call(
            &post,
            "claude.Bash",
            None,
            &json!({"command": "ls"})
        ));
        assert!(!same_call(&post, "claude.Edit", None, &args));
    }
}
