//! `handoff propose`: the action policy (local `--rules` and config, or the
//! daemon's own remotely), the proposal, the wait for a decision and, with
//! `--exec`, the run (see [`super::exec`]), whose report is worded here
//! with [`super::render`].

use std::time::Duration;

use serde_json::json;

use super::{FOREVER, ProposeArgs, exec, read_json_arg, render, shown, split_commands, who};
use crate::cli::{Ctx, exit, fail, one, refusal};
use crate::ops::{Ops, Policy, Until};
use crate::store::Channel;
use crate::store::actions::{Action, NewAction, Proposed, Settled, Status};

/// The action policy for `propose`: `--rules`, else the config's
/// `[[rule]]`s, and the config's `[redact]` keys. Remotely the daemon's
/// own policy applies, and `--rules` is refused.
fn policy(ctx: &Ctx, rules: Option<&std::path::Path>) -> anyhow::Result<Policy> {
    if ctx.remote() {
        if rules.is_some() {
            return Err(fail(
                exit::INVALID,
                "--rules/HANDOFF_RULES apply on the daemon's host: against HANDOFF_URL the daemon's own [[rule]]s decide",
            ));
        }
        return Ok(Policy::default());
    }
    // --rules, else the config file's [[rule]] entries; the config's
    // [redact] keys either way (one reading, shared with `handoff mcp`).
    ctx.policy(rules)
}

/// A command's words: the program, then its arguments.
type Argv = Vec<String>;

/// The words after `--` as the executor and the verifier argv, or a
/// usage failure when they do not fit `--exec` / `--verify`.
fn commands(p: &mut ProposeArgs) -> anyhow::Result<(Option<Argv>, Option<Argv>)> {
    if !p.exec && !p.verify && !p.command.is_empty() {
        return Err(fail(
            exit::INVALID,
            "a command after `--` needs --exec (or --verify)",
        ));
    }
    let (exec_cmd, verify_cmd) = split_commands(p.exec, std::mem::take(&mut p.command));
    if p.exec && exec_cmd.is_none() {
        return Err(fail(
            exit::INVALID,
            "--exec needs a command after `--`, e.g. --exec -- ./send.sh",
        ));
    }
    Ok((exec_cmd, verify_cmd))
}

pub(super) async fn propose(ctx: &Ctx, mut p: ProposeArgs) -> anyhow::Result<u8> {
    let (exec_cmd, verify_cmd) = commands(&mut p)?;
    // Read everything that can fail before writing anything.
    let policy = policy(ctx, p.rules.as_deref())?;
    let args = read_json_arg("--args", &p.args)?;
    let (wait, timeout, lease) = (p.wait, p.timeout, p.lease);
    let mut new = NewAction {
        kind: p.kind,
        summary: p.summary,
        args,
        dedup_key: p.dedup_key,
        ttl_ms: p.ttl,
        approvals_required: p.approvals,
        on_expire: p.on_expire,
        proposer: who(ctx, p.as_),
        channel: Channel::Cli,
        project: String::new(),
        session: p.session,
        exec: exec_cmd.clone(),
        verify: verify_cmd,
        redact_keys: policy.redact_keys.clone(),
        not_by_proposer: false,
        escalation: Vec::new(),
    };
    let ops = ctx.ops_with(policy).await?;
    new.project = crate::cli::filing_project(&ops, p.project, &new.session).await?;
    let proposal = ops.propose(&new).await?;
    let rule = proposal.rule.clone();
    let rule_json = match (&proposal.rule, proposal.decision) {
        (Some(r), Some(d)) => json!({"rule": r, "decision": d}),
        _ => serde_json::Value::Null,
    };
    let proposed = Proposed {
        action: proposal.action,
        created: proposal.created,
    };
    let shown = |p: &Proposed, a: &Action| {
        let mut v = shown(p, a);
        // Present only when a rule decided, as over HTTP and MCP.
        if !rule_json.is_null() {
            v["rule"] = rule_json.clone();
        }
        v
    };
    let action = &proposed.action;
    let waiting = wait || exec_cmd.is_some();
    if waiting && !proposed.created && action.status == Status::Unknown {
        // An unknown outcome may already have happened: never wait on it
        // or run it again from a retried proposal; a person settles it.
        let mut v = shown(&proposed, action);
        v["outcome"] = json!("unknown_duplicate");
        return Err(refusal(
            exit::REFUSED,
            &v,
            render::unknown_duplicate(action),
        ));
    }
    if !waiting {
        ctx.print(&shown(&proposed, action), || {
            render::proposed(&proposed, action, rule.as_deref())
        });
        return Ok(exit::OK);
    }
    if !ctx.json {
        eprintln!(
            "{}",
            render::proposed(&proposed, action, rule.as_deref()).trim_end()
        );
    }
    let action = await_decision(&ops, action, timeout).await?;
    match exec_cmd {
        None => {
            ctx.show("action", &action.redacted(), || {
                render::action(&action, ops.now())
            });
            Ok(exit::OK)
        }
        Some(argv) => run_or_follow(&ops, ctx, &action, &argv, lease).await,
    }
}

/// Say what is awaited (the wait may be long, and silence looks hung),
/// then wait for the decision: the approved action, or the refusal that
/// ends `propose` (still pending after `--timeout`: exit 5; rejected or
/// expired: exit 3).
async fn await_decision(
    ops: &Ops,
    action: &Action,
    timeout: Option<Duration>,
) -> anyhow::Result<Action> {
    let how_long = match (timeout, action.expires_at) {
        (Some(t), _) => format!("for up to {}s", t.as_secs()),
        (None, Some(_)) => "until it is decided or expires".to_string(),
        (None, None) => "until someone decides (no --ttl: it never expires)".to_string(),
    };
    eprintln!(
        "handoff: waiting for a decision on {id} {how_long}; it is in the chat and the Inbox \
         (or `handoff approve {id}` / `handoff reject {id}`). Ctrl-C stops waiting; the proposal stays.",
        id = action.short_id()
    );
    let decided = ops
        .wait_action(&action.id, timeout.unwrap_or(FOREVER), Until::Decided)
        .await?;
    let action = match decided {
        Settled::StillRunning { action } => {
            let v = one(
                "action",
                &action.redacted(),
                json!({"outcome": "still_pending"}),
            );
            return Err(refusal(
                exit::TIMEOUT,
                &v,
                format!("{} is still pending after the timeout", action.short_id()),
            ));
        }
        Settled::Done { action } => action,
    };
    if matches!(action.status, Status::Rejected | Status::Expired) {
        let v = one(
            "action",
            &action.redacted(),
            json!({"outcome": action.status}),
        );
        let why = action.reason.clone().unwrap_or_default();
        return Err(refusal(
            exit::REFUSED,
            &v,
            format!(
                "{} was {} by {}: {why}",
                action.short_id(),
                action.status,
                action.decided_by.as_deref().unwrap_or("?")
            ),
        ));
    }
    Ok(action)
}

/// After approval: run the command if this process wins the claim,
/// otherwise follow whoever did and report their outcome — and when the
/// followed run comes back approved for a re-run (its executor died and
/// a verifier found nothing done), claim it again. Returns the exit code:
/// the command's own, or 0/1 for a followed run.
async fn run_or_follow(
    ops: &Ops,
    ctx: &Ctx,
    action: &Action,
    argv: &[String],
    lease: Duration,
) -> anyhow::Result<u8> {
    let mut action = action.clone();
    let mut said = false;
    loop {
        if action.status == Status::Approved {
            let report = exec::run_claimed(ops, ctx.json, &action, argv, lease).await?;
            if let Some(line) = render::lost_claim(&report) {
                eprintln!("{line}");
            }
            if report.claimed {
                let a = ops.get_action(&action.id).await?;
                // stdout is the command's own: handoff's summary goes to
                // stderr, or to stdout as the one JSON document with --json.
                if ctx.json {
                    ctx.print(&shown(&report, &a), String::new);
                } else {
                    eprint!("{}", render::action(&a, ops.now()));
                }
                return Ok(exec::ran_exit(&report));
            }
        }
        if !ctx.json && !said {
            eprintln!("{}", render::executing_elsewhere(&action));
            said = true;
        }
        action = exec::follow(ops, &action).await?;
        if action.status != Status::Approved {
            ctx.show("action", &action.redacted(), || {
                render::action(&action, ops.now())
            });
            return Ok(exec::followed_exit(&action));
        }
    }
}
