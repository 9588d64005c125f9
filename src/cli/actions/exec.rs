//! The executor runner behind `propose --exec` and `recover`, as the CLI
//! sees it: the run itself is [`crate::ops::run`]; this wraps it with the
//! terminal's conventions (where output goes, exit codes, one-line errors)
//! and follows a run another executor won.

use std::time::Duration;

use super::{FOREVER, shown};
use crate::cli::{Ctx, exit, fail};
use crate::ops::run::{Echo, ExecReport};
use crate::ops::{Ops, Until};
use crate::store::actions::{Action, Status};

/// Claim `action` and run `argv`, echoing its output to the terminal;
/// `claimed: false` if another executor won.
pub(crate) async fn run_claimed(
    ops: &Ops,
    ctx: &Ctx,
    action: &Action,
    argv: &[String],
    lease: Duration,
) -> anyhow::Result<ExecReport> {
    let echo = if ctx.json {
        Echo::Stderr
    } else {
        Echo::Terminal
    };
    let report = crate::ops::run::run_claimed(ops, action, argv, lease, "exec", echo).await?;
    if let Some(msg) = &report.spawn_error {
        return Err(fail(exit::INTERNAL, msg.clone()));
    }
    if report.lost_claim {
        eprintln!(
            "handoff: {} finished, but its claim was lost meanwhile (now {}); the result was not recorded",
            crate::store::short_id(&report.action_id),
            report.status
        );
    }
    Ok(report)
}

/// After approval: run the command if this process wins the claim,
/// otherwise follow whoever did and report their outcome. Returns the exit
/// code: the command's own, or 0/1 for a followed run.
pub(crate) async fn run_or_follow(
    ops: &Ops,
    ctx: &Ctx,
    action: &Action,
    argv: &[String],
    lease: Duration,
) -> anyhow::Result<u8> {
    if action.status == Status::Approved {
        let report = run_claimed(ops, ctx, action, argv, lease).await?;
        if report.claimed {
            let a = ops.get_action(&action.id).await?;
            // stdout is the command's own: handoff's summary goes to
            // stderr, or to stdout as the one JSON document with --json.
            if ctx.json {
                ctx.print(&shown(&report, &a), String::new);
            } else {
                eprint!("{}", super::render::action(&a, ops.now()));
            }
            return Ok(match report.exit_code {
                Some(c) => u8::try_from(c).unwrap_or(exit::INTERNAL),
                None if report.status == Status::Executed => exit::OK,
                None => exit::INTERNAL,
            });
        }
    }
    if !ctx.json {
        eprintln!(
            "handoff: {} is being executed elsewhere; waiting for its result",
            crate::store::short_id(&action.id)
        );
    }
    let settled = ops.wait_action(&action.id, FOREVER, Until::Settled).await?;
    let a = settled.action();
    ctx.show("action", &a.redacted(), || {
        super::render::action(a, ops.now())
    });
    Ok(if a.status == Status::Executed {
        exit::OK
    } else {
        exit::INTERNAL
    })
}
