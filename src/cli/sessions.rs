//! CLI commands for agent sessions, the execution ledger and `wait`.
//!
//! `handoff session …` registers a session (with its wake target),
//! checkpoints its state with CAS, ends it and prints `resume`;
//! `handoff ledger …` records tool calls before and after they run;
//! `handoff wait` blocks until something arrives for a session;
//! `handoff sessions` shows every session at a glance (`--watch`: live).
//! Everything
//! goes through [`crate::ops::Ops`]: the local store, or the daemon at
//! `HANDOFF_URL`.
//!
//! Layout: `session` (session subcommands), `ledger`, `wait`, `fleet`
//! (`handoff sessions`), `render`
//! (human text).

mod fleet;
mod ledger;
mod render;
mod session;
mod wait;

use clap::Subcommand;

use super::Ctx;

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Agent sessions: register (with a wake target), checkpoint, resume, end.
    Session {
        #[command(subcommand)]
        cmd: session::Cmd,
    },
    /// The execution ledger: record a tool call before and after it runs.
    Ledger {
        #[command(subcommand)]
        cmd: ledger::Cmd,
    },
    /// Block until something arrives for a session (an answer, a row
    /// response, an action decision, an inbound wake), print it, mark it
    /// picked up and exit with --exit-code. Timeout: exit 5 (no arrivals printed).
    Wait(wait::Args),
    /// Every session by project: waiting on a question or an approval,
    /// working, idle or ended, for how long, its host, wake target and
    /// last delivery, and what it waits on. --watch redraws as events
    /// arrive, until Ctrl-C.
    Sessions(fleet::Args),
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Session { cmd } => session::run(cmd, ctx).await,
        Cmd::Ledger { cmd } => ledger::run(cmd, ctx).await,
        Cmd::Wait(args) => wait::run(args, ctx).await,
        Cmd::Sessions(args) => fleet::run(args, ctx).await,
    }
}

/// Read a JSON argument: inline text, `@file`, or `-` / `@-` for stdin,
/// parsed and checked to be JSON.
fn read_json(what: &str, arg: &str) -> anyhow::Result<serde_json::Value> {
    let text = super::arg_text(what, arg)?;
    serde_json::from_str(&text).map_err(|e| {
        super::fail_as(
            super::exit::INVALID,
            "malformed_json",
            format!("{what} is not valid JSON ({e}); pass JSON text, @file, or - for stdin"),
        )
    })
}

/// The full id of a registered session named by `id` or a unique suffix;
/// `None` if no registered session matches.
async fn resolve(ops: &crate::ops::Ops, id: &str) -> anyhow::Result<Option<String>> {
    Ok(ops.resolve_session_id(id).await?)
}

/// The full id of the registered session `id` names, else `id` itself
/// (trimmed): the ledger and `resume` answer for sessions never registered.
async fn resolve_or_given(ops: &crate::ops::Ops, id: &str) -> anyhow::Result<String> {
    Ok(resolve(ops, id)
        .await?
        .unwrap_or_else(|| id.trim().to_string()))
}

/// Like [`resolve`], but a missing session is a not-found failure.
async fn resolve_existing(ops: &crate::ops::Ops, id: &str) -> anyhow::Result<String> {
    resolve(ops, id).await?.ok_or_else(|| {
        super::fail(
            super::exit::NOT_FOUND,
            format!(
                "no session `{}` is registered; register it with `handoff session register --session ID`",
                id.trim()
            ),
        )
    })
}
