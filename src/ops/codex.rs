//! Codex CLI permission prompts — the answer `handoff hook codex`
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
//!   so handoff never sends them there: an edited approval cannot be run by
//!   Codex from a PermissionRequest hook and is denied with the edited
//!   command in the message (PreToolUse can run it: below). Exit
//!   2 with a reason on stderr is a deny; any other failure leaves Codex to
//!   its own prompt.
//! - Codex's own "don't ask again" list is its execpolicy rules files: at
//!   start it reads every `rules/*.rules` of each config folder, the user's
//!   being `$CODEX_HOME` (`~/.codex`); its TUI appends an approved prefix
//!   to `$CODEX_HOME/rules/default.rules` as
//!   `prefix_rule(pattern=["npm", "test"], decision="allow")`, one line,
//!   only if that exact line is not there yet (`codex-rs/core/src/exec_policy.rs`
//!   `append_amendment_and_update` / `default_policy_path`, and
//!   `codex-rs/execpolicy/src/amend.rs` `blocking_append_allow_prefix_rule`,
//!   read 2026-12-01). So an "always" grant of a Bash command prefix is
//!   also written there, by the hook (it runs as the agent's user, on the
//!   agent's machine), in the same spelling: [`write_rule`]. Other grants
//!   (an exact command, `apply_patch`) hold in handoff only.
//! - `apply_patch` prompts carry the patch as `tool_input.command`, in
//!   Codex's `*** Begin Patch` format (`HookToolName::apply_patch()` in
//!   `codex-rs/core/src/tools/hook_names.rs`, and the apply_patch runtime's
//!   `permission_request_payload`); the chat shows it as a unified diff
//!   (`ops/claude/preview.rs`).
//! - `PreToolUse` (every tool call, also in `codex exec` runs where no prompt
//!   appears) blocks with `{"hookSpecificOutput": {"hookEventName":
//!   "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason":
//!   …}}`; `permissionDecision: "allow"` without `updatedInput` is refused
//!   as invalid, so an allow is an empty stdout. A failed PreToolUse hook
//!   does *not* block, which is why malformed stdin exits 2 (a deny) here.
//!
//! This module reads no stdin and prints nothing: the CLI does
//! (`cli/hook/codex.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

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
        // PreToolUse runs the edited input in place of the original.
        Decision::Allow {
            by,
            input: Some(edited),
            ..
        } if kind == Kind::PreToolUse => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": format!("approved in handoff by {by}, with a change"),
                "updatedInput": edited,
            }
        })),
        // Why deny: Codex cannot run an edited input from a
        // PermissionRequest hook, and the original is not what the
        // approver allowed.
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

/// Codex's own rules file that "don't ask again" appends to:
/// `$CODEX_HOME/rules/default.rules`, `~/.codex/rules/default.rules` when
/// `CODEX_HOME` is unset; `None` without either.
pub fn rules_path() -> Option<PathBuf> {
    let home = match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?).join(".codex"),
    };
    Some(home.join("rules").join("default.rules"))
}

/// The rule line an "always" decision adds to Codex's rules file, if its
/// grant is a Bash command prefix (see
/// [`crate::store::grants::pattern::codex_prefix_rule`]).
pub fn always_rule(decision: &Decision) -> Option<String> {
    match decision {
        // An edited approval is denied to Codex: nothing to remember.
        Decision::Allow {
            input: None,
            always: Some((tool, content)),
            ..
        } => crate::store::grants::pattern::codex_prefix_rule(tool, content),
        _ => None,
    }
}

/// Add `rule` as a line of the rules file at `path` unless that exact line
/// is there already; true when it wrote. The folder and file are created
/// if missing; the new file is written beside the old one and renamed over
/// it, so Codex never reads half a file, and it keeps the old file's
/// permissions.
pub fn write_rule(path: &Path, rule: &str) -> std::io::Result<bool> {
    // A rules file kept as a symlink (dotfiles) stays one: write its target.
    let real = std::fs::canonicalize(path).ok();
    let path = real.as_deref().unwrap_or(path);
    let dir = path.parent().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the rules file has no folder",
        )
    })?;
    std::fs::create_dir_all(dir)?;
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    if old.lines().any(|l| l == rule) {
        return Ok(false);
    }
    let mut text = old;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(rule);
    text.push('\n');
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.handoff-{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| true)
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
        let o = output(&edited, Kind::PermissionRequest)
            .unwrap()
            .to_string();
        assert!(
            o.contains("deny")
                && o.contains("npm publish --dry-run")
                && !o.contains("updatedInput"),
            "{o}"
        );
        let o = output(&edited, Kind::PreToolUse).unwrap();
        assert_eq!(o["hookSpecificOutput"]["permissionDecision"], "allow");
        assert_eq!(
            o["hookSpecificOutput"]["updatedInput"],
            json!({"command": "npm publish --dry-run"})
        );
    }

    #[test]
    fn a_symlinked_rules_file_stays_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("dotfiles.rules");
        std::fs::write(
            &target,
            "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n",
        )
        .unwrap();
        let rules = dir.path().join("rules").join("default.rules");
        std::fs::create_dir_all(rules.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&target, &rules).unwrap();
        let line = r#"prefix_rule(pattern=["npm", "test"], decision="allow")"#;
        assert!(write_rule(&rules, line).unwrap());
        assert!(!write_rule(&rules, line).unwrap(), "never twice");
        assert!(
            std::fs::symlink_metadata(&rules)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            std::fs::read_to_string(&target)
                .unwrap()
                .ends_with(&format!("\n{line}\n"))
        );
    }
}
