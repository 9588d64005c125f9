//! Codex CLI permission prompts (issue 13): the answer `handoff hook codex`
//! prints, in Codex's own hook output format. Proposing, grants, rules and
//! waiting are the same as for Claude Code (`ops/claude.rs`, with
//! [`Agent::Codex`]): a prompt is a `codex.<tool_name>` action.
//!
//! What this relies on, read in openai/codex (`codex-rs/hooks`, the
//! `PermissionRequest` event added by PR #17563, merge commit
//! 8494e5bd7bb9fda5df56e232d7ef890108a3d8d4, 2026-04-17; files read at
//! commit 0082977cebb9fbd524046914dbc4305e5b8e0b95:
//! `src/events/permission_request.rs`, `src/events/pre_tool_use.rs`,
//! `src/engine/output_parser.rs`, and
//! `schema/generated/permission-request.command.{input,output}.schema.json`):
//!
//! - `PermissionRequest` runs before Codex shows its approval prompt, with
//!   `session_id`, `turn_id`, `cwd`, `tool_name` (`Bash`, `NetworkAccess`;
//!   later releases add `apply_patch` and MCP tools) and `tool_input`
//!   (`command`, optional `description`). Its answer is
//!   `{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
//!   "decision": {"behavior": "allow" | "deny", "message": …}}}`. An answer
//!   carrying `updatedInput` or `updatedPermissions` is treated as invalid,
//!   so handoff never sends them: an edited approval cannot be run by Codex
//!   from a hook and is denied with the edited command in the message, and an
//!   "always" grant lives in handoff only. Exit 2 with a reason on stderr is
//!   a deny; any other failure leaves Codex to its own prompt.
//! - `PreToolUse` (every tool call, also in `codex exec` runs where no prompt
//!   appears) blocks with `{"hookSpecificOutput": {"hookEventName":
//!   "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason":
//!   …}}`; `permissionDecision: "allow"` without `updatedInput` is refused
//!   as invalid, so an allow is an empty stdout. A failed PreToolUse hook
//!   does *not* block, which is why malformed stdin exits 2 (a deny) here.
//!
//! This module reads no stdin and prints nothing: the CLI does
//! (`cli/hook_codex.rs`).

use serde_json::{Value, json};

use super::claude::{Decision, Kind};

pub use super::claude::Agent;

/// Codex's answer to a decided prompt of `kind`; `None` means print nothing
/// (how a `PreToolUse` hook lets the call go ahead).
pub fn output(decision: &Decision, kind: Kind) -> Option<Value> {
    let deny = |reason: &str| match kind {
        Kind::PermissionRequest => json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        }),
        Kind::PreToolUse => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }),
    };
    match decision {
        // Why deny: Codex cannot run an edited input from a hook, and the
        // original is not what the approver allowed.
        Decision::Allow {
            by,
            input: Some(edited),
            ..
        } => Some(deny(&edited_denial(by, edited))),
        Decision::Allow { .. } => match kind {
            Kind::PermissionRequest => Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": {"behavior": "allow"},
                }
            })),
            Kind::PreToolUse => None,
        },
        Decision::Deny { reason } => Some(deny(reason)),
    }
}

/// The model's reading of an approval that changed the input.
fn edited_denial(by: &str, edited: &Value) -> String {
    let who = if by.is_empty() { "someone" } else { by };
    let what = match edited.get("command").and_then(Value::as_str) {
        Some(cmd) => cmd.to_string(),
        None => edited.to_string(),
    };
    format!(
        "not run as asked: {who} approved it in handoff only with a change, which Codex cannot apply from a hook. The approved version is: {what}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_follow_codex_output_parser() {
        let allow = Decision::Allow {
            by: "alice".into(),
            input: None,
            always: Some(("Bash".into(), "npm test:*".into())),
        };
        // Never updatedPermissions: Codex treats the answer as invalid.
        assert_eq!(
            output(&allow, Kind::PermissionRequest).unwrap().to_string(),
            r#"{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}"#
        );
        assert_eq!(output(&allow, Kind::PreToolUse), None);
        let deny = Decision::Deny {
            reason: "no".into(),
        };
        assert_eq!(
            output(&deny, Kind::PreToolUse).unwrap().to_string(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
        let edited = Decision::Allow {
            by: "alice".into(),
            input: Some(json!({"command": "npm publish --dry-run"})),
            always: None,
        };
        for kind in [Kind::PermissionRequest, Kind::PreToolUse] {
            let o = output(&edited, kind).unwrap().to_string();
            assert!(
                o.contains("deny")
                    && o.contains("npm publish --dry-run")
                    && !o.contains("updatedInput"),
                "{o}"
            );
        }
    }
}
