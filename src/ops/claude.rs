//! Claude Code permission prompts as actions: what `handoff hook
//! claude` does between reading a hook event and answering it.
//!
//! A `PermissionRequest` (or, for headless `-p` runs where no dialog
//! appears, a `PreToolUse`) becomes a pending action of kind
//! `claude.<ToolName>` whose arguments are the tool input; the session id and
//! project are the action's own, the cwd is in its summary. A live grant of
//! that session (or an always grant of the project) that covers the input
//! approves it at once as `grant:<id>` (on the local store, or on the daemon
//! through `POST /v1/actions/{id}/grant`); the configured rules may decide it at
//! once too; otherwise it waits in chat and the Inbox like any action. The
//! answer is Claude Code's documented hook output: allow (with the approver's
//! edited input when the arguments were patched, and for an "always" grant
//! the permission rule to add to the project's local settings) or deny with
//! the reason, which the model reads.
//!
//! This module reads no stdin and prints nothing: the CLI does (`cli/hook.rs`).

pub mod ask;
pub mod preview;
pub mod settle;

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Error, Ops, Result, Until};
use crate::store::Channel;
use crate::store::actions::{Action, Actor, NewAction, OnExpire, Settled, Status};
use crate::store::grants::{Grant, Scope, pattern};

/// The agent name grants and actions record.
pub const AGENT: &str = crate::store::grants::CLAUDE;

/// Whose permission prompt a hook event is: the same engine answers both,
/// each in its own output format (Codex's is in `ops/codex.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code (`claude.<Tool>` actions).
    Claude,
    /// OpenAI's Codex CLI (`codex.<Tool>` actions).
    Codex,
}

impl Agent {
    /// The name actions and grants record: `claude`, `codex`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => crate::store::grants::CLAUDE,
            Agent::Codex => crate::store::grants::CODEX,
        }
    }

    /// The agent as people call it.
    pub fn label(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        }
    }
}

/// The actor a prompt answered at the terminal is settled by.
pub const TERMINAL: &str = "terminal";

/// One Claude Code hook event, as documented: the common fields and the
/// tool fields of `PermissionRequest` / `PreToolUse`. Fields Claude Code
/// adds later are ignored, so a newer Claude Code still works.
#[derive(Debug, Clone, Deserialize)]
pub struct HookEvent {
    /// `PermissionRequest`, `PreToolUse`, …
    pub hook_event_name: String,
    /// The Claude Code session.
    #[serde(default)]
    pub session_id: String,
    /// The session's working directory.
    #[serde(default)]
    pub cwd: String,
    /// The tool asking: `Bash`, `Edit`, `Write`, `mcp__server__tool`, …
    #[serde(default)]
    pub tool_name: String,
    /// Its input, as the tool will receive it.
    #[serde(default)]
    pub tool_input: Value,
    /// The tool call's id (PreToolUse; recent PermissionRequest too).
    #[serde(default)]
    pub tool_use_id: Option<String>,
}

/// Which answer format the event wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The permission dialog is about to show.
    PermissionRequest,
    /// A tool is about to run (every call; no dialog in `-p` runs).
    PreToolUse,
}

impl HookEvent {
    /// The kind of a prompt handoff answers; `None` for other events.
    pub fn kind(&self) -> Option<Kind> {
        match self.hook_event_name.as_str() {
            "PermissionRequest" => Some(Kind::PermissionRequest),
            "PreToolUse" => Some(Kind::PreToolUse),
            _ => None,
        }
    }
}

/// How a prompt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run the tool, with `input` instead of the original when edited, and
    /// `always` (tool, rule content) written to Claude Code's settings.
    Allow {
        /// Who allowed it (a person, `rule:<name>`, `grant:<id>`).
        by: String,
        /// The edited tool input, when an approver patched it.
        input: Option<Value>,
        /// An "always" grant's rule for Claude Code: (tool, rule content).
        always: Option<(String, String)>,
    },
    /// Do not run it; the model reads `reason`.
    Deny {
        /// Why, in words.
        reason: String,
    },
}

impl Decision {
    /// Fail closed: deny, saying why.
    pub fn fail_closed(why: impl std::fmt::Display) -> Decision {
        Decision::Deny {
            reason: format!("handoff denied this (fail closed): {why}"),
        }
    }

    /// The hook's stdout for an event of `kind`, in Claude Code's documented
    /// format (`hookSpecificOutput`).
    pub fn to_output(&self, kind: Kind) -> Value {
        match (kind, self) {
            (Kind::PermissionRequest, Decision::Allow { input, always, .. }) => {
                let mut d = json!({"behavior": "allow"});
                if let Some(i) = input {
                    d["updatedInput"] = i.clone();
                }
                if let Some((tool, content)) = always {
                    d["updatedPermissions"] = json!([{
                        "type": "addRules",
                        "rules": [{"toolName": tool, "ruleContent": content}],
                        "behavior": "allow",
                        "destination": "localSettings",
                    }]);
                }
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": d}})
            }
            (Kind::PermissionRequest, Decision::Deny { reason }) => json!({
                "hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": {"behavior": "deny", "message": reason},
                }
            }),
            (Kind::PreToolUse, Decision::Allow { by, input, .. }) => {
                let mut o = json!({
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": format!("approved in handoff by {by}"),
                });
                if let Some(i) = input {
                    o["updatedInput"] = i.clone();
                }
                json!({"hookSpecificOutput": o})
            }
            (Kind::PreToolUse, Decision::Deny { reason }) => json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }),
        }
    }
}

/// The grants side of a prompt (`POST /v1/actions/{id}/grant`).
#[derive(Debug, Clone, Deserialize)]
pub struct GrantCheck {
    /// The live grant that just approved the pending prompt, if one covered it.
    pub applied: Option<Grant>,
    /// The grant saved with the approval that decided it, if it still holds.
    pub given: Option<Grant>,
    /// The action as it stands (redacted).
    pub action: Action,
}

/// What proposing a prompt gave.
#[derive(Debug, Clone)]
pub enum Prompted {
    /// Decided at once (a grant or a rule).
    Decided(Decision),
    /// Waiting for a person.
    Pending(Box<Action>),
}

/// The summary of a prompt: what asks, where (the cwd before the command,
/// so a cut never loses it), within the store's 500 bytes.
fn summary(agent: Agent, ev: &HookEvent) -> String {
    let what = match ev.tool_name.as_str() {
        "Bash" => ev.tool_input.get("command").and_then(Value::as_str),
        _ => ev
            .tool_input
            .get("file_path")
            .or_else(|| ev.tool_input.get("notebook_path"))
            .or_else(|| ev.tool_input.get("url"))
            .and_then(Value::as_str),
    };
    let mut s = format!("{} wants to use {}", agent.label(), ev.tool_name);
    if !ev.cwd.is_empty() {
        s.push_str(&format!(" (in {})", ev.cwd));
    }
    if let Some(w) = what {
        s.push_str(&format!(": {}", w.lines().next().unwrap_or_default()));
    }
    cut_bytes(s, 500)
}

/// `s` cut on a character boundary to at most `max` bytes, marked with `…`.
fn cut_bytes(s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max - '…'.len_utf8();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The edited tool input: the original with the approver's patch laid
/// over it (top-level keys, as patches work). A redacted value in the patch
/// keeps the original: the hook holds the real input, a remote read may not.
fn edited_input(original: &Value, a: &Action) -> Option<Value> {
    let Some(Value::Object(patch)) = &a.patch else {
        return None;
    };
    let mut out = original.clone();
    let obj = out.as_object_mut()?;
    for (k, v) in patch {
        if v != "[redacted]" {
            obj.insert(k.clone(), v.clone());
        }
    }
    Some(out)
}

impl Ops {
    /// Propose the Claude Code prompt of `ev` as an action in `project`,
    /// expiring after `ttl`; a grant or a rule may decide it at once.
    pub async fn claude_prompt(
        &self,
        ev: &HookEvent,
        project: &str,
        ttl: Duration,
    ) -> Result<Prompted> {
        self.agent_prompt(Agent::Claude, ev, project, ttl).await
    }

    /// Propose `agent`'s prompt of `ev` as an `<agent>.<Tool>` action in
    /// `project`, expiring after `ttl`; a grant or a rule may decide it at once.
    pub async fn agent_prompt(
        &self,
        agent: Agent,
        ev: &HookEvent,
        project: &str,
        ttl: Duration,
    ) -> Result<Prompted> {
        let name = agent.name();
        if ev.tool_name.trim().is_empty() {
            return Err(Error::invalid("the hook event names no tool_name"));
        }
        let input = match &ev.tool_input {
            Value::Object(_) => ev.tool_input.clone(),
            Value::Null => json!({}),
            _ => {
                return Err(Error::invalid(
                    "the hook event's tool_input is not a JSON object",
                ));
            }
        };
        let new = NewAction {
            kind: format!("{name}.{}", ev.tool_name),
            summary: summary(agent, ev),
            args: input.to_string(),
            // A hook retried for the same tool call is the same prompt.
            dedup_key: ev
                .tool_use_id
                .as_deref()
                .filter(|t| !t.is_empty())
                .map(|t| format!("{name}:{}:{t}", ev.session_id)),
            ttl_ms: Some(ttl.as_millis().min(i64::MAX as u128) as i64),
            approvals_required: 1,
            on_expire: OnExpire::Expire,
            // Against a daemon the token's own name is the proposer.
            proposer: if self.is_remote() {
                String::new()
            } else {
                name.into()
            },
            channel: Channel::Agent,
            project: project.into(),
            session: ev.session_id.clone(),
            exec: None,
            verify: None,
            redact_keys: None,
            not_by_proposer: false,
            escalation: Vec::new(),
        };
        let proposal = self.propose(&new).await?;
        let mut action = proposal.action;
        if action.status == Status::Pending {
            // A live grant covering it decides it at once (on the host).
            action = self.grant_check(&action.id).await?.action;
        }
        match action.status {
            Status::Pending => Ok(Prompted::Pending(Box::new(action))),
            _ => Ok(Prompted::Decided(self.decision_of(&action, &input).await?)),
        }
    }

    /// Wait up to `wait` for a person to decide `action`; still pending
    /// then: reject it as timed out (so a late tap is refused) and deny.
    pub async fn claude_await(
        &self,
        action: &Action,
        input: &Value,
        wait: Duration,
    ) -> Result<Decision> {
        let done = match self.wait_action(&action.id, wait, Until::Decided).await? {
            Settled::Done { action } => action,
            Settled::StillRunning { action } => {
                let why = format!(
                    "nobody decided within {}s; ask again, or answer at the terminal",
                    wait.as_secs()
                );
                let actor = Actor {
                    name: "timeout",
                    channel: Channel::Agent,
                };
                match self.reject(&action.id, actor, &why).await {
                    Ok(out) => out.action().clone(),
                    // An agent token may not reject: the action expires at
                    // its time to live, which is this same timeout.
                    Err(_) => return Ok(Decision::fail_closed(why)),
                }
            }
        };
        self.decision_of(&done, input).await
    }

    /// Settle a prompt the terminal answered first (the hook was stopped):
    /// rejected by `terminal`, so the chat message and the Inbox stop
    /// offering a decision nobody waits for.
    pub async fn claude_abandon(&self, action_id: &str) -> Result<()> {
        let actor = Actor {
            name: TERMINAL,
            channel: Channel::Agent,
        };
        self.reject(action_id, actor, "answered at the terminal")
            .await?;
        Ok(())
    }

    /// The hook's decision for an action no longer pending.
    async fn decision_of(&self, a: &Action, input: &Value) -> Result<Decision> {
        let by = a.decided_by.clone().unwrap_or_default();
        Ok(match a.status {
            Status::Approved | Status::Executing | Status::Executed => {
                let always = match self.grant_check(&a.id).await?.given {
                    Some(g) if g.scope == Scope::Always => Some((
                        pattern::claude_rule_tool(&g.tool).to_string(),
                        pattern::claude_rule_content(&g.tool, &g.pattern),
                    )),
                    _ => None,
                };
                Decision::Allow {
                    by,
                    input: edited_input(input, a),
                    always,
                }
            }
            Status::Expired => Decision::fail_closed("nobody decided in time"),
            _ => Decision::Deny {
                reason: format!(
                    "denied in handoff by {}: {}",
                    if by.is_empty() { "someone" } else { &by },
                    a.reason.as_deref().unwrap_or("no reason given")
                ),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_fits_the_store_and_keeps_the_cwd() {
        let ev: HookEvent = serde_json::from_value(json!({
            "hook_event_name": "PermissionRequest", "session_id": "s", "cwd": "/home/dev/shop",
            "tool_name": "Bash", "tool_input": {"command": "é".repeat(400)}
        }))
        .unwrap();
        let s = summary(Agent::Claude, &ev);
        assert!(s.len() <= 500, "{}", s.len());
        assert!(
            s.starts_with("Claude Code wants to use Bash (in /home/dev/shop): éé"),
            "{s}"
        );
        assert!(s.ends_with('…'));
    }

    #[test]
    fn outputs_follow_the_documented_shapes() {
        let allow = Decision::Allow {
            by: "alice".into(),
            input: Some(json!({"command": "npm test"})),
            always: Some(("Bash".into(), "npm test:*".into())),
        };
        let o = allow.to_output(Kind::PermissionRequest);
        let d = &o["hookSpecificOutput"]["decision"];
        assert_eq!(
            o["hookSpecificOutput"]["hookEventName"],
            "PermissionRequest"
        );
        assert_eq!(d["behavior"], "allow");
        assert_eq!(d["updatedInput"]["command"], "npm test");
        assert_eq!(
            d["updatedPermissions"][0]["rules"][0]["ruleContent"],
            "npm test:*"
        );
        let o = allow.to_output(Kind::PreToolUse);
        assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "allow");
        assert!(o["hookSpecificOutput"].get("updatedPermissions").is_none());
        let deny = Decision::fail_closed("x");
        let o = deny.to_output(Kind::PreToolUse);
        assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "deny");
        let o = deny.to_output(Kind::PermissionRequest);
        assert_eq!(o["hookSpecificOutput"]["decision"]["behavior"], "deny");
        assert!(
            o["hookSpecificOutput"]["decision"]["message"]
                .as_str()
                .unwrap()
                .contains("fail closed")
        );
    }
}
