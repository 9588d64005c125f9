//! CLI commands for pending actions: propose (optionally waiting and
//! executing), approve, reject, list, show, audit, expire, recover,
//! resolve-unknown and purge.
//!
//! Every rendering for people goes through [`Action::redacted`] /
//! [`Action::display_args`]: secrets never reach the terminal, even with
//! `--json`. Only the executor (see [`exec`]) receives the real values.
//!
//! Everything goes through [`Ops`] (the local store, or the daemon at
//! `HANDOFF_URL`, whose own `[[rule]]`s then decide proposals); `recover`
//! and `purge` work on the database file and run on the host only.

mod audit_log;
mod exec;
mod propose;
mod render;
mod upkeep;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::{Ctx, exit, refusal};
use crate::clock;
use crate::ops::{Ops, Until};
use crate::store::actions::{
    Action, Actor, ApproveOutcome, OnExpire, RejectOutcome, Settled, Status,
};
use upkeep::{purge, recover, resolve_unknown};

/// Waiting "forever" (until the action's own expiry settles it).
const FOREVER: Duration = Duration::from_secs(10 * 365 * 86_400);

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Propose an action that must be approved before it runs.
    ///
    /// With `--exec -- CMD ARGS…` handoff waits for the decision, claims the
    /// action, runs CMD (effective arguments as JSON on stdin and in
    /// HANDOFF_ARGS, the action id in HANDOFF_ACTION_ID), renews the lease
    /// while it runs, records the outcome and exits with CMD's status.
    /// A verifier for interrupted runs follows as `--verify -- CHECK ARGS…`
    /// after the command. Rejected or expired: exit 3.
    Propose(Box<ProposeArgs>),
    /// Approve a pending action (optionally patching its arguments).
    Approve {
        /// Action id or short id.
        id: String,
        /// JSON object of argument changes (known keys, same types), or @file.
        #[arg(long)]
        patch: Option<String>,
        /// Approver name [default: $HANDOFF_USER, else $USER].
        #[arg(long = "as", value_name = "NAME")]
        as_: Option<String>,
        /// Then wait for the execution result.
        #[arg(long)]
        wait: bool,
        /// How long --wait waits, e.g. 30s, 5m.
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Reject a pending action.
    Reject {
        /// Action id or short id.
        id: String,
        /// Why (shown to the proposer and kept in the audit).
        #[arg(long)]
        reason: String,
        /// Rejecter name [default: $HANDOFF_USER, else $USER].
        #[arg(long = "as", value_name = "NAME")]
        as_: Option<String>,
    },
    /// List actions (expired ones show as expired even before `expire` runs).
    Actions {
        /// Only this status: pending, approved, executing, executed, failed, unknown, rejected, expired, or all [default: all].
        #[arg(long, value_parser = parse_status_filter)]
        status: Option<StatusOrAll>,
    },
    /// Show one action.
    Action {
        /// Action id or short id.
        id: String,
    },
    /// Show the audit trail of one action; `audit export` / `audit verify`:
    /// the whole log as a tamper-evident file, and its offline check.
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Audit {
        #[command(subcommand)]
        log: Option<audit_log::AuditCmd>,
        /// Action id or short id.
        #[arg(required = true)]
        id: Option<String>,
    },
    /// Settle every pending action whose expiry has passed.
    Expire,
    /// Recover after a crash: executions whose lease lapsed become unknown
    /// (or whatever their verifier says); approved actions proposed with
    /// --exec are executed now (unless --no-run).
    Recover {
        /// Only report; do not execute approved actions.
        #[arg(long)]
        no_run: bool,
        /// Lease held while running recovered executions.
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        lease: Duration,
    },
    /// Settle an action whose outcome is unknown.
    ResolveUnknown {
        /// Action id or short id.
        id: String,
        #[command(flatten)]
        how: ResolveHow,
        /// Your name [default: $HANDOFF_USER, else $USER].
        #[arg(long = "as", value_name = "NAME")]
        as_: Option<String>,
    },
    /// Delete settled actions last changed before DATE, with their audit rows.
    Purge {
        /// RFC 3339 date or time, e.g. 2026-01-01.
        #[arg(long, value_parser = parse_date)]
        before: i64,
    },
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct ResolveHow {
    /// It did happen.
    #[arg(long)]
    executed: bool,
    /// It did not happen; do not retry.
    #[arg(long)]
    failed: bool,
    /// Run it again (a conscious at-least-once choice): back to approved.
    #[arg(long)]
    retry: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ProposeArgs {
    /// Action kind, e.g. email.send.
    #[arg(long)]
    kind: String,
    /// One line for the person deciding.
    #[arg(long)]
    summary: String,
    /// Arguments: a JSON object, @FILE, or - (or @-) for stdin.
    #[arg(long, default_value = "{}")]
    args: String,
    /// Live actions with the same key are the same action.
    #[arg(long)]
    dedup_key: Option<String>,
    /// Decisions are refused after this long, e.g. 24h.
    #[arg(long, value_parser = clock::parse_duration_ms)]
    ttl: Option<i64>,
    /// Distinct approvals needed.
    #[arg(long, default_value_t = 1)]
    approvals: i64,
    /// What expiry turns it into: expire or reject.
    #[arg(long, default_value = "expire", value_parser = parse_on_expire)]
    on_expire: OnExpire,
    /// Project of the proposer (routes and rules match on it) [default: the
    /// registered session's project, else the current folder's name, as `ask`].
    #[arg(long, env = "HANDOFF_PROJECT")]
    project: Option<String>,
    /// Agent session of the proposer.
    #[arg(long, default_value = "", env = "HANDOFF_SESSION")]
    session: String,
    /// Proposer name [default: $HANDOFF_USER, else $USER].
    #[arg(long = "as", value_name = "NAME")]
    as_: Option<String>,
    /// Auto-decision rules (TOML with [[rule]] entries).
    #[arg(long, env = "HANDOFF_RULES", value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Wait for the decision (exit 0 approved, 3 rejected/expired, 5 timeout).
    #[arg(long)]
    wait: bool,
    /// How long to wait for the decision [default: until it expires].
    #[arg(long, value_parser = parse_duration)]
    timeout: Option<Duration>,
    /// Executor lease, renewed while the command runs.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    lease: Duration,
    /// Run the command after `--` once approved.
    #[arg(long)]
    exec: bool,
    /// The words after `--` are a verifier for interrupted runs (without --exec).
    #[arg(long)]
    verify: bool,
    /// The command (after `--`), optionally followed by `--verify -- CHECK ARGS…`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let ms = clock::parse_duration_ms(s)?;
    if ms <= 0 {
        return Err(format!("`{s}` must be positive"));
    }
    Ok(Duration::from_millis(ms as u64))
}

fn parse_date(s: &str) -> Result<i64, String> {
    clock::parse_rfc3339(s)
}

fn parse_status(s: &str) -> Result<Status, String> {
    Status::parse(s).ok_or_else(|| {
        format!(
            "`{s}` is not a status; use one of: {}",
            Status::ALL.map(|s| s.as_str()).join(", ")
        )
    })
}

/// `--status` of `actions`: one status, or `all` (`None`), as
/// `questions --status all`.
#[derive(Clone, Debug)]
pub(crate) struct StatusOrAll(Option<Status>);

fn parse_status_filter(s: &str) -> Result<StatusOrAll, String> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(StatusOrAll(None));
    }
    parse_status(s)
        .map(|st| StatusOrAll(Some(st)))
        .map_err(|e| format!("{e}, all"))
}

fn parse_on_expire(s: &str) -> Result<OnExpire, String> {
    match s {
        "expire" => Ok(OnExpire::Expire),
        "reject" => Ok(OnExpire::Reject),
        _ => Err(format!("`{s}` is not expire or reject")),
    }
}

/// The acting person's name: `--as`, else $HANDOFF_USER, else $USER
/// (against a daemon with a token: `--as`, else the token's own name).
fn who(ctx: &Ctx, as_: Option<String>) -> String {
    let as_ = as_.filter(|s| !s.trim().is_empty());
    ctx.actor(as_, super::person)
}

/// JSON text from an argument: inline, `@file`, or `-` / `@-` (stdin).
fn read_json_arg(what: &str, v: &str) -> anyhow::Result<String> {
    super::arg_text(what, v)
}

/// Split the words after `--` into the executor and the verifier argv.
fn split_commands(exec: bool, words: Vec<String>) -> (Option<Vec<String>>, Option<Vec<String>>) {
    let mut exec_cmd = Vec::new();
    let mut verify_cmd = Vec::new();
    let mut in_verify = !exec;
    let mut it = words.into_iter().peekable();
    while let Some(w) = it.next() {
        if w == "--verify" || w == "--exec" {
            in_verify = w == "--verify";
            if it.peek().map(String::as_str) == Some("--") {
                it.next();
            }
            continue;
        }
        if in_verify {
            verify_cmd.push(w);
        } else {
            exec_cmd.push(w);
        }
    }
    let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
    (some(exec_cmd), some(verify_cmd))
}

/// A serialized outcome whose `action` is redacted for people and carries
/// its `short_id`: `{"action": …, "outcome": …, …}`.
fn shown<T: serde::Serialize>(v: &T, action: &Action) -> Value {
    let mut j = serde_json::to_value(v).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut j {
        m.insert("action".into(), super::entity("action", &action.redacted()));
    }
    j
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Propose(p) => propose::propose(ctx, *p).await,
        Cmd::Approve {
            id,
            patch,
            as_,
            wait,
            timeout,
        } => approve(ctx, &id, patch, as_, wait.then_some(timeout)).await,
        Cmd::Reject { id, reason, as_ } => reject(ctx, &id, &reason, as_).await,
        Cmd::Actions { status } => list(ctx, status.and_then(|s| s.0)).await,
        Cmd::Action { id } => show(ctx, &id).await,
        Cmd::Audit { log: Some(cmd), .. } => audit_log::run(ctx, cmd).await,
        Cmd::Audit { id, .. } => audit(ctx, id.as_deref().unwrap_or_default()).await,
        Cmd::Expire => expire(ctx).await,
        Cmd::Recover { no_run, lease } => {
            let store = ctx.host_store("recover").await?;
            recover(&store, ctx, no_run, lease).await
        }
        Cmd::ResolveUnknown { id, how, as_ } => resolve_unknown(ctx, &id, how, as_).await,
        Cmd::Purge { before } => purge(ctx, before).await,
    }
}

/// `handoff approve`, and with `--wait` (`wait` is its timeout) the run
/// that follows.
async fn approve(
    ctx: &Ctx,
    id: &str,
    patch: Option<String>,
    as_: Option<String>,
    wait: Option<Duration>,
) -> anyhow::Result<u8> {
    let patch = patch.map(|p| read_json_arg("--patch", &p)).transpose()?;
    // Malformed JSON is bad input (exit 2), found before the store
    // weighs the patch (a well-formed patch it refuses is exit 3).
    if let Some(Err(e)) = patch.as_deref().map(serde_json::from_str::<Value>) {
        return Err(super::fail_as(
            exit::INVALID,
            "malformed_json",
            format!("--patch: not valid JSON ({e}); pass a JSON object, @FILE, or - for stdin"),
        ));
    }
    let name = who(ctx, as_);
    let ops = ctx.ops().await?;
    let out = ops.approve(id, Actor::cli(&name), patch.as_deref()).await?;
    // Only a decision this call recorded is a success; already
    // decided (by anyone), expired or a refused patch is exit 3,
    // like every other deciding command. With --wait, an approval
    // that lost to an earlier one still follows the run (as its
    // message suggests) and then exits 3 with the result.
    let recorded = matches!(
        out,
        ApproveOutcome::Approved { .. } | ApproveOutcome::ApprovalAdded { .. }
    );
    let action = out.action();
    // Only an approved or executing action has a run to wait for.
    let runs = matches!(action.status, Status::Approved | Status::Executing);
    let follows = wait.is_some() && runs && matches!(out, ApproveOutcome::AlreadyDecided { .. });
    let message = render::approve(&out).replace("\n  ", "; ");
    if !recorded && !follows {
        return Err(refusal(exit::REFUSED, &shown(&out, action), message));
    }
    match wait.filter(|_| runs) {
        None => {
            ctx.print(&shown(&out, action), || render::approve(&out));
            Ok(exit::OK)
        }
        Some(timeout) => follow_approved(ctx, &ops, &out, recorded, timeout).await,
    }
}

/// `approve --wait`: wait up to `timeout` for the run of the action `out`
/// approved (or found approved) and report how it ended; exit 3 when this
/// approval was not the one `recorded`.
async fn follow_approved(
    ctx: &Ctx,
    ops: &Ops,
    out: &ApproveOutcome,
    recorded: bool,
    timeout: Duration,
) -> anyhow::Result<u8> {
    if !ctx.json {
        eprintln!("{}", render::approve(out));
    }
    let settled = ops
        .wait_action(&out.action().id, timeout, Until::Settled)
        .await?;
    // One document: the approval, with the action as it ended.
    let v = shown(out, settled.action());
    if let Settled::StillRunning { action } = &settled {
        return Err(refusal(
            exit::TIMEOUT,
            &v,
            format!(
                "{} is still {} after --timeout; check later with `handoff action {}`",
                action.short_id(),
                action.status,
                action.short_id()
            ),
        ));
    }
    if !recorded {
        let a = settled.action();
        return Err(refusal(
            exit::REFUSED,
            &v,
            format!(
                "{} was already approved by {}; this approval changed nothing; its run ended {}",
                a.short_id(),
                a.decided_by.as_deref().unwrap_or("?"),
                a.status
            ),
        ));
    }
    ctx.print(&v, || render::settled(&settled));
    Ok(exit::OK)
}

/// `handoff reject`.
async fn reject(ctx: &Ctx, id: &str, reason: &str, as_: Option<String>) -> anyhow::Result<u8> {
    let name = who(ctx, as_);
    let ops = ctx.ops().await?;
    let out = ops.reject(id, Actor::cli(&name), reason).await?;
    if !matches!(out, RejectOutcome::Rejected { .. }) {
        return Err(refusal(
            exit::REFUSED,
            &shown(&out, out.action()),
            render::reject(&out),
        ));
    }
    ctx.print(&shown(&out, out.action()), || render::reject(&out));
    Ok(exit::OK)
}

/// `handoff actions`.
async fn list(ctx: &Ctx, status: Option<Status>) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let list = ops.list_actions(status).await?;
    let shown_list: Vec<Action> = list.iter().map(Action::redacted).collect();
    ctx.list("actions", &shown_list, || render::list(&list, ops.now()));
    Ok(exit::OK)
}

/// `handoff action`.
async fn show(ctx: &Ctx, id: &str) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let a = ops.get_action(id).await?;
    let now = ops.now();
    let mut r = a.redacted();
    r.status = a.effective_status(now);
    ctx.show("action", &r, || render::action(&a, now));
    Ok(exit::OK)
}

/// `handoff audit`.
async fn audit(ctx: &Ctx, id: &str) -> anyhow::Result<u8> {
    let trail = ctx.ops().await?.action_audit(id).await?;
    ctx.list("audit", &trail, || render::audit(&trail));
    Ok(exit::OK)
}

/// `handoff expire`.
async fn expire(ctx: &Ctx) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let done = ops.expire_due().await?;
    let shown_list: Vec<Action> = done.iter().map(Action::redacted).collect();
    ctx.list("actions", &shown_list, || {
        format!(
            "{} action(s) settled by expiry\n{}",
            done.len(),
            render::list(&done, ops.now())
        )
    });
    Ok(exit::OK)
}
