//! `handoff ledger begin|complete|list`: record a tool call before it runs
//! and its result after, so a resumed agent knows what already happened.

use clap::Subcommand;
use serde_json::json;

use super::{read_json, render, resolve_or_given};
use crate::cli::{Ctx, exit, one, refusal};
use crate::store::sessions::{Begin, Complete, NewCall};

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Record that a call is about to run (same --event-id + same payload: no-op).
    Begin {
        /// Session making the call.
        #[arg(long, env = "HANDOFF_SESSION")]
        session: String,
        /// Your idempotency key for this call (stable across retries).
        #[arg(long)]
        event_id: String,
        /// Name of the tool the call runs.
        #[arg(long)]
        tool: String,
        /// The call's input: JSON text, @file, or - for stdin.
        #[arg(long, default_value = "{}")]
        payload: String,
        /// The tool may safely run again if this call is interrupted.
        #[arg(long)]
        replay_safe: bool,
    },
    /// Record a begun call's outcome (same outcome + same result: no-op).
    Complete {
        /// Session that began the call.
        #[arg(long, env = "HANDOFF_SESSION")]
        session: String,
        /// The call's idempotency key.
        #[arg(long)]
        event_id: String,
        /// It succeeded.
        #[arg(long, conflicts_with = "failed", required_unless_present = "failed")]
        ok: bool,
        /// It failed.
        #[arg(long)]
        failed: bool,
        /// The result (or error): JSON text, @file, or - for stdin.
        #[arg(long, default_value = "null")]
        result: String,
    },
    /// A session's ledger, oldest first.
    List {
        /// Session whose ledger to list (id, or a unique suffix of a registered one).
        #[arg(long, env = "HANDOFF_SESSION")]
        session: String,
        /// Only the newest N rows.
        #[arg(long)]
        last: Option<i64>,
    },
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Begin {
            session,
            event_id,
            tool,
            payload,
            replay_safe,
        } => begin(ctx, &session, &event_id, &tool, &payload, replay_safe).await,
        Cmd::Complete {
            session,
            event_id,
            ok,
            failed: _,
            result,
        } => complete(ctx, &session, &event_id, ok, &result).await,
        Cmd::List { session, last } => list(ctx, &session, last).await,
    }
}

/// `handoff ledger begin`: record a call before it runs, or say it was
/// begun (and maybe finished) already.
async fn begin(
    ctx: &Ctx,
    session: &str,
    event_id: &str,
    tool: &str,
    payload: &str,
    replay_safe: bool,
) -> anyhow::Result<u8> {
    let payload = read_json("--payload", payload)?;
    let ops = ctx.ops().await?;
    let id = resolve_or_given(&ops, session).await?;
    let out = ops
        .ledger_begin(&NewCall {
            event_id,
            session_id: &id,
            tool,
            payload: &payload,
            replay_safe,
        })
        .await?;
    match &out {
        Begin::Started { entry } => {
            let v = one("ledger_entry", entry, json!({"outcome": "started"}));
            ctx.print(&v, || format!("started {}", render::ledger_line(entry)));
            Ok(exit::OK)
        }
        Begin::Existing { entry, finished } => {
            let v = one(
                "ledger_entry",
                entry,
                json!({"outcome": "existing", "finished": finished
                    .as_ref()
                    .map(|f| crate::cli::entity("ledger_entry", f))}),
            );
            ctx.print(&v, || match finished {
                Some(f) => format!(
                    "already begun and finished: {}\ndo not run it again",
                    render::ledger_line(f)
                ),
                None => format!(
                    "already begun (not finished): {}",
                    render::ledger_line(entry)
                ),
            });
            Ok(exit::OK)
        }
        Begin::Conflict { existing, differs } => Err(refusal(
            exit::REFUSED,
            &out,
            format!(
                "event id {event_id} was already begun with a different {} ({}); \
                 use a new event id for a different call",
                differs.join(", "),
                render::ledger_line(existing)
            ),
        )),
    }
}

/// `handoff ledger complete`: record a begun call's outcome once.
async fn complete(
    ctx: &Ctx,
    session: &str,
    event_id: &str,
    ok: bool,
    result: &str,
) -> anyhow::Result<u8> {
    let result = read_json("--result", result)?;
    let ops = ctx.ops().await?;
    let id = resolve_or_given(&ops, session).await?;
    let out = ops.ledger_complete(&id, event_id, ok, &result).await?;
    match &out {
        Complete::Completed { entry } => {
            let v = one("ledger_entry", entry, json!({"outcome": "completed"}));
            ctx.print(&v, || format!("recorded {}", render::ledger_line(entry)));
            Ok(exit::OK)
        }
        Complete::Existing { entry } => {
            let v = one("ledger_entry", entry, json!({"outcome": "existing"}));
            ctx.print(&v, || {
                format!("already recorded: {}", render::ledger_line(entry))
            });
            Ok(exit::OK)
        }
        Complete::Conflict { existing, differs } => Err(refusal(
            exit::REFUSED,
            &out,
            format!(
                "event id {event_id} already has a different {} recorded ({}); the ledger never changes a recorded outcome",
                differs.join(", "),
                render::ledger_line(existing)
            ),
        )),
        Complete::NotStarted => Err(refusal(
            exit::NOT_FOUND,
            &out,
            format!(
                "no call was begun with event id {event_id} in session {id}; run `handoff ledger begin` first"
            ),
        )),
    }
}

/// `handoff ledger list`.
async fn list(ctx: &Ctx, session: &str, last: Option<i64>) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let id = resolve_or_given(&ops, session).await?;
    let rows = ops.ledger_list(&id, last).await?;
    ctx.list("ledger_entries", &rows, || {
        if rows.is_empty() {
            format!("no ledger rows for session {id}")
        } else {
            rows.iter()
                .map(|e| format!("{}\n", render::ledger_line(e)))
                .collect()
        }
    });
    Ok(exit::OK)
}
