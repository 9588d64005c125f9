//! `handoff hook claude`: answer one Claude Code hook event through handoff,
//! and `handoff grants` to list and revoke what "for this session" and
//! "always" taps saved.
//!
//! The hook reads one event (JSON) on stdin and prints one answer (JSON) on
//! stdout in Claude Code's hook output format, exit 0. It fails closed: a
//! daemon it cannot reach, a database it cannot open, a timeout or any other
//! error is a deny that says why. Only stdin that is not a hook event at all
//! exits 1 without an answer (Claude Code then shows its own dialog; it never
//! allows on its own because of it). Stopped by a signal while waiting (the
//! person answered at the terminal), it settles the action as answered there.
//! AskUserQuestion calls and the session's later events (PostToolUse, Stop,
//! UserPromptSubmit, …) are handled in `hook/ask.rs`.

mod ask;
mod codex;
pub(crate) mod doctor;
mod install;

use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::{Ctx, exit, fail, store_failure};
use crate::ops::claude::{Agent, Decision, HookEvent, Prompted};
use crate::ops::{Ops, Policy};
use crate::store::Channel;
use crate::store::grants::Grant;

/// The most stdin a hook event may be (an Edit's strings included).
pub(crate) const MAX_EVENT: u64 = 4 << 20;

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Claude Code: turn a PermissionRequest (or PreToolUse) into an action and answer with the decision.
    Claude(ClaudeArgs),
    /// Codex CLI (0.122 or later): turn a PermissionRequest (or PreToolUse) into an action and answer with the decision.
    Codex(codex::CodexArgs),
    /// Print the settings entries that run these hooks, or merge them into the file with --write.
    Install(install::InstallArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ClaudeArgs {
    /// How long to wait for a decision before denying (keep it below the hook's own `timeout` in settings.json) [default: the config's [[kinds]] timeout_secs for the tool's kind, else 9m].
    #[arg(long, env = "HANDOFF_HOOK_TIMEOUT", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// The project the prompt belongs to [default: $HANDOFF_PROJECT, else the folder name of $CLAUDE_PROJECT_DIR, else of the event's cwd].
    #[arg(long)]
    project: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum GrantsCmd {
    /// Revoke a grant: later prompts it covered ask again.
    Revoke {
        /// The grant's id or short id.
        id: String,
        /// Who revokes (default $HANDOFF_USER, else $USER).
        #[arg(long = "as", value_name = "NAME")]
        as_: Option<String>,
    },
}

pub(super) fn parse_timeout(s: &str) -> Result<Duration, String> {
    let ms = crate::clock::parse_duration_ms(s)?;
    if ms <= 0 {
        return Err(format!("`{s}` must be positive"));
    }
    Ok(Duration::from_millis(ms as u64))
}

/// The hook's wait when neither `--timeout` nor `HANDOFF_HOOK_TIMEOUT` nor
/// `[[kinds]] timeout_secs` says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(9 * 60);

/// How long a prompt of `agent`'s `ev` waits: the flag (or its variable)
/// when given, else the config's `[[kinds]]` timeout for the kind the
/// action gets, else [`DEFAULT_TIMEOUT`]. Either way the hook denies when
/// it runs out (fail closed).
pub(super) fn timeout_of(
    ctx: &Ctx,
    given: Option<Duration>,
    agent: Agent,
    ev: &HookEvent,
) -> Duration {
    given
        .or_else(|| {
            let kind = format!("{}.{}", agent.name(), ev.tool_name);
            // An unreadable config fails the hook later, where it opens
            // the store; the wait itself falls back to the default.
            ctx.config().ok()?.0.kind_timeout(&kind)
        })
        .unwrap_or(DEFAULT_TIMEOUT)
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Claude(args) => claude(ctx, args).await,
        Cmd::Codex(args) => codex::run(ctx, args).await,
        Cmd::Install(args) => install::run(ctx, args),
    }
}

/// The project of a prompt: the flag, else `$HANDOFF_PROJECT`, else the
/// folder name of `$CLAUDE_PROJECT_DIR`, else of the event's cwd.
fn project_of(given: Option<String>, ev: &HookEvent) -> String {
    project_in(given, ev, Some("CLAUDE_PROJECT_DIR"))
}

/// The project of a prompt: the flag, else `$HANDOFF_PROJECT`, else the
/// folder name of the agent's project folder variable `dir_var`, else of
/// the event's cwd.
pub(super) fn project_in(given: Option<String>, ev: &HookEvent, dir_var: Option<&str>) -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let base = |p: String| {
        std::path::Path::new(&p)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(p)
    };
    given
        .filter(|p| !p.trim().is_empty())
        .or_else(|| env("HANDOFF_PROJECT"))
        .or_else(|| dir_var.and_then(env).map(base))
        .or_else(|| (!ev.cwd.is_empty()).then(|| base(ev.cwd.clone())))
        .unwrap_or_default()
}

/// The hook event on stdin (at most [`MAX_EVENT`] bytes), or why it is not one.
///
/// Why a blocking read in an async fn: it is the command's first step, with
/// no other task to starve, and tokio's stdin would hand every read to a
/// thread of its blocking pool, started for just this.
pub(super) async fn read_event() -> Result<HookEvent, String> {
    use std::io::Read;
    let mut raw = String::new();
    std::io::stdin()
        .lock()
        .take(MAX_EVENT)
        .read_to_string(&mut raw)
        .map_err(|e| e.to_string())?;
    serde_json::from_str::<HookEvent>(&raw).map_err(|e| e.to_string())
}

async fn claude(ctx: &Ctx, args: ClaudeArgs) -> anyhow::Result<u8> {
    let ev = match read_event().await {
        Ok(ev) => ev,
        Err(e) => {
            eprintln!(
                "handoff hook claude: stdin is not a Claude Code hook event ({e}); handoff decided nothing, so Claude Code asks in its own dialog"
            );
            return Ok(exit::INTERNAL);
        }
    };
    if let Some(what) = crate::ops::claude::settle::later(&ev) {
        return ask::later(ctx, &ev, what).await;
    }
    let Some(kind) = ev.kind() else {
        eprintln!(
            "handoff hook claude: {} is not a permission prompt (only PermissionRequest and PreToolUse are answered); nothing to do",
            ev.hook_event_name
        );
        return Ok(exit::OK);
    };
    let project = project_of(args.project, &ev);
    let timeout = timeout_of(ctx, args.timeout, Agent::Claude, &ev);
    if ev.tool_name == crate::ops::claude::ask::TOOL {
        return ask::ask(ctx, &ev, kind, &project, timeout).await;
    }
    let decision = match decide(ctx, Agent::Claude, &ev, &project, timeout).await {
        Some(d) => d,
        // Stopped by a signal: Claude Code gave up on this hook.
        None => return Ok(exit::INTERNAL),
    };
    let answer = decision.to_output(kind);
    super::out(&answer.to_string());
    Ok(exit::OK)
}

/// The decision for `ev`; `None` when the hook was stopped (the terminal
/// answered), after settling the action as answered there.
pub(super) async fn decide(
    ctx: &Ctx,
    agent: Agent,
    ev: &HookEvent,
    project: &str,
    timeout: Duration,
) -> Option<Decision> {
    // Why before proposing: from the moment the action exists, a signal
    // must settle it, not kill the process with its default action.
    let mut signals = Signals::install();
    let ops = match ops(ctx).await {
        Ok(o) => o,
        Err(e) => return Some(Decision::fail_closed(format!("{e:#}"))),
    };
    let prompted =
        tokio::time::timeout(timeout, ops.agent_prompt(agent, ev, project, timeout)).await;
    let action = match prompted {
        Err(_) => {
            return Some(Decision::fail_closed(format!(
                "could not even propose it within {}s",
                timeout.as_secs()
            )));
        }
        Ok(Err(e)) => return Some(Decision::fail_closed(e)),
        Ok(Ok(Prompted::Decided(d))) => return Some(d),
        Ok(Ok(Prompted::Pending(a))) => a,
    };
    eprintln!(
        "handoff: {} waits for a decision in chat or the Inbox (or `handoff approve {}`) for up to {}s",
        action.short_id(),
        action.short_id(),
        timeout.as_secs()
    );
    let input = match &ev.tool_input {
        Value::Null => Value::Object(Default::default()),
        other => other.clone(),
    };
    tokio::select! {
        d = ops.claude_await(&action, &input, timeout) => {
            Some(d.unwrap_or_else(Decision::fail_closed))
        }
        _ = signals.recv() => {
            // Why settle it: nobody waits for this decision any more, and a
            // tap on a live button would approve nothing.
            if let Err(e) = ops.claude_abandon(&action.id).await {
                eprintln!("handoff: could not mark {} answered at the terminal: {e}", action.short_id());
            }
            None
        }
    }
}

/// The operations for a hook: the daemon at `HANDOFF_URL`, else the local
/// store with the config's rules.
async fn ops(ctx: &Ctx) -> anyhow::Result<Ops> {
    let policy = if ctx.remote() {
        Policy::default()
    } else {
        ctx.policy(None)?
    };
    ctx.ops_with(policy).await
}

/// The signals that ask this process to stop (SIGTERM, SIGINT, SIGHUP):
/// Claude Code stops a hook whose prompt was answered at the terminal.
struct Signals(Vec<tokio::signal::unix::Signal>);

impl Signals {
    /// Take over the signals' default action (dying) from now on.
    fn install() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            SignalKind::terminate(),
            SignalKind::interrupt(),
            SignalKind::hangup(),
        ];
        let mut sigs = Vec::new();
        for k in kinds {
            match signal(k) {
                Ok(s) => sigs.push(s),
                Err(e) => tracing::warn!(error = %e, "cannot watch a signal"),
            }
        }
        Signals(sigs)
    }

    /// Resolves when one of them arrives (never, if none could be watched).
    async fn recv(&mut self) {
        if self.0.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.0.iter_mut().map(|s| Box::pin(s.recv()));
        futures_util::future::select_all(waits).await;
    }
}

fn grant_line(g: &Grant) -> String {
    let whose = match g.scope {
        crate::store::grants::Scope::Session => format!("session {}", g.session),
        crate::store::grants::Scope::Always => "always".to_string(),
    };
    let state = if g.revoked_at.is_some() {
        format!(
            "  revoked by {}",
            g.revoked_by.as_deref().unwrap_or("someone")
        )
    } else if g.confirmed_at.is_none() {
        "  (inert: its approval did not win)".to_string()
    } else {
        String::new()
    };
    format!(
        "{}  {:<28} {:<10} {}  by {}{state}",
        g.short_id(),
        g.rule,
        g.project,
        whose,
        g.created_by
    )
}

/// `handoff grants [--all]` and `handoff grants revoke ID`.
pub(crate) async fn grants(ctx: &Ctx, cmd: Option<GrantsCmd>, all: bool) -> anyhow::Result<u8> {
    let store = ctx.host_store("grants").await?;
    match cmd {
        None => {
            let list = store.grant_list(all).await.map_err(|e| store_failure(&e))?;
            ctx.list("grants", &list, || {
                if list.is_empty() {
                    return "no grants (a \"for this session\" or \"always\" approval of a Claude Code prompt saves one)".into();
                }
                list.iter().map(grant_line).collect::<Vec<_>>().join("\n")
            });
            Ok(exit::OK)
        }
        Some(GrantsCmd::Revoke { id, as_ }) => {
            let by = ctx.actor(as_.filter(|s| !s.trim().is_empty()), super::person);
            let by = if by.is_empty() { super::person() } else { by };
            match store
                .grant_revoke(&id, &by, Channel::Cli)
                .await
                .map_err(|e| store_failure(&e))?
            {
                Some(g) => {
                    ctx.show("grant", &g, || {
                        format!(
                            "revoked {}: later prompts it covered ask again\n{}",
                            g.short_id(),
                            grant_line(&g)
                        )
                    });
                    Ok(exit::OK)
                }
                None => Err(fail(
                    exit::NOT_FOUND,
                    format!("no grant `{id}`; list them with `handoff grants --all`"),
                )),
            }
        }
    }
}
