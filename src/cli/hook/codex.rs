//! `handoff hook codex`: answer one Codex CLI hook event (PermissionRequest,
//! or PreToolUse for `codex exec` runs) through handoff.
//!
//! The event on stdin becomes a `codex.<tool_name>` action exactly as a
//! Claude Code prompt becomes a `claude.<Tool>` one (same grants, rules,
//! previews, timeout and signal handling: `cli/hook.rs`); only the answer's
//! format differs (`ops/codex.rs`), and an "always" approval of a command
//! prefix is also appended to Codex's own rules file. It fails closed: a
//! decision it cannot reach is a deny that says why, and stdin that is not
//! a hook event exits 2 with the reason on stderr, which Codex reads as a
//! deny for both events (a PreToolUse hook that merely fails lets the call
//! run, so exit 1 would be a silent allow there).

use std::time::Duration;

use clap::Args;

use super::{decide, parse_timeout, project_in, read_event, timeout_of};
use crate::cli::{Ctx, exit};
use crate::ops::claude::Agent;

#[derive(Debug, Args)]
pub(crate) struct CodexArgs {
    /// How long to wait for a decision before denying (keep it below the hook's own `timeout` in hooks.json) [default: the config's [[kinds]] timeout_secs for the tool's kind, else 9m].
    #[arg(long, env = "HANDOFF_HOOK_TIMEOUT", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// The project the prompt belongs to [default: $HANDOFF_PROJECT, else the folder name of the event's cwd].
    #[arg(long)]
    project: Option<String>,
}

/// Deny through the exit code: Codex reads stderr as the reason.
fn refuse(why: &str) -> u8 {
    eprintln!("handoff hook codex: {why}; handoff denied it (fail closed)");
    exit::INVALID
}

pub(crate) async fn run(ctx: &Ctx, args: CodexArgs) -> anyhow::Result<u8> {
    let ev = match read_event().await {
        Ok(ev) => ev,
        Err(e) => {
            return Ok(refuse(&format!(
                "stdin is not a Codex hook event ({e}); check the hook's command in hooks.json"
            )));
        }
    };
    let Some(kind) = ev.kind() else {
        eprintln!(
            "handoff hook codex: {} is not a permission prompt (only PermissionRequest and PreToolUse are answered); nothing to do",
            ev.hook_event_name
        );
        return Ok(exit::OK);
    };
    let project = project_in(args.project, &ev, None);
    let timeout = timeout_of(ctx, args.timeout, Agent::Codex, &ev);
    let Some(decision) = decide(ctx, Agent::Codex, &ev, &project, timeout).await else {
        // Stopped by a signal: the action is settled; whoever still reads
        // the answer gets a deny, never a silent go-ahead.
        return Ok(refuse("stopped before anyone decided"));
    };
    // An "always" of a command prefix: also in Codex's own allow-list, so
    // Codex stops asking even without handoff. A failure to write leaves
    // the grant in handoff, and the decision stands.
    if let Some(rule) = crate::ops::codex::always_rule(&decision) {
        match crate::ops::codex::rules_path() {
            Some(path) => {
                if let Err(e) = crate::ops::codex::write_rule(&path, &rule) {
                    eprintln!(
                        "handoff hook codex: could not add `{rule}` to {}: {e}; the grant holds in handoff only",
                        path.display()
                    );
                }
            }
            None => eprintln!(
                "handoff hook codex: neither CODEX_HOME nor HOME is set, so `{rule}` was not added to Codex's rules file; the grant holds in handoff only"
            ),
        }
    }
    if let Some(answer) = crate::ops::codex::output(&decision, kind) {
        crate::cli::out(&answer.to_string());
    }
    Ok(exit::OK)
}
