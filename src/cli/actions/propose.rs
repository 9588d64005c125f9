//! `handoff propose`: the action policy (local `--rules` and config, or the
//! daemon's own remotely), the proposal, the wait for a decision and, with
//! `--exec`, the run (see [`super::exec`]).

use serde_json::json;

use super::{FOREVER, ProposeArgs, exec, read_json_arg, render, shown, split_commands, who};
use crate::cli::{Ctx, exit, fail, one, refusal};
use crate::ops::{Policy, Until};
use crate::store::actions::{NewAction, Proposed, Settled, Status};

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

pub(super) async fn propose(ctx: &Ctx, p: ProposeArgs) -> anyhow::Result<u8> {
    if !p.exec && !p.verify && !p.command.is_empty() {
        return Err(fail(
            exit::INVALID,
            "a command after `--` needs --exec (or --verify)",
        ));
    }
    let (exec_cmd, verify_cmd) = split_commands(p.exec, p.command);
    if p.exec && exec_cmd.is_none() {
        return Err(fail(
            exit::INVALID,
            "--exec needs a command after `--`, e.g. --exec -- ./send.sh",
        ));
    }
    // Read everything that can fail before writing anything.
    let policy = policy(ctx, p.rules.as_deref())?;
    let args = read_json_arg("--args", &p.args)?;
    let new = NewAction {
        kind: p.kind,
        summary: p.summary,
        args,
        dedup_key: p.dedup_key,
        ttl_ms: p.ttl,
        approvals_required: p.approvals,
        on_expire: p.on_expire,
        proposer: who(ctx, p.as_),
        channel: "cli".into(),
        project: p.project,
        session: p.session,
        exec: exec_cmd.clone(),
        verify: verify_cmd,
        redact_keys: policy.redact_keys.clone(),
    };
    let ops = ctx.ops_with(policy).await?;
    let proposal = ops.propose(&new).await?;
    let action = proposal.action.clone();
    let proposed = Proposed {
        action: action.clone(),
        created: proposal.created,
    };
    let waiting = p.wait || exec_cmd.is_some();
    if waiting && !proposed.created && action.status == Status::Unknown {
        // An unknown outcome may already have happened: never wait on it
        // or run it again from a retried proposal; a person settles it.
        let mut v = shown(&proposed, &action);
        v["outcome"] = json!("unknown_duplicate");
        return Err(refusal(
            exit::REFUSED,
            &v,
            render::unknown_duplicate(&action),
        ));
    }
    if !waiting {
        ctx.print(&shown(&proposed, &action), || {
            render::proposed(&proposed, &action)
        });
        return Ok(exit::OK);
    }
    if !ctx.json {
        eprintln!("{}", render::proposed(&proposed, &action).trim_end());
    }
    // Say what happens now: the wait may be long, and silence looks hung.
    let how_long = match (p.timeout, action.expires_at) {
        (Some(t), _) => format!("for up to {}s", t.as_secs()),
        (None, Some(_)) => "until it is decided or expires".to_string(),
        (None, None) => "until someone decides (no --ttl: it never expires)".to_string(),
    };
    eprintln!(
        "handoff: waiting for a decision on {id} {how_long}; it is in the chat and the Inbox \
         (or `handoff approve {id}` / `handoff reject {id}`). Ctrl-C stops waiting; the proposal stays.",
        id = action.short_id()
    );
    let timeout = p.timeout.unwrap_or(FOREVER);
    let decided = ops.wait_action(&action.id, timeout, Until::Decided).await?;
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
    match exec_cmd {
        None => {
            ctx.show("action", &action.redacted(), || {
                render::action(&action, ops.now())
            });
            Ok(exit::OK)
        }
        Some(argv) => exec::run_or_follow(&ops, ctx, &action, &argv, p.lease).await,
    }
}
