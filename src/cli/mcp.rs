//! `handoff mcp`: run the stdio MCP server for an agent.
//!
//! Opens the store (`--db`, `HANDOFF_DB`, the config's `[store] path`, like
//! every command) with the action policy (the same config's `[[rule]]` and
//! `[redact]`, or `--rules`) — or, with
//! `HANDOFF_URL` set, talks to that daemon instead (which applies its own
//! rules). Reads the caller's identity from `HANDOFF_PROJECT` /
//! `HANDOFF_AGENT` / `HANDOFF_SESSION` and serves until the client
//! disconnects. Prints nothing on stdout itself: stdout belongs to the
//! protocol.

use std::path::PathBuf;

use clap::Args;

use super::{Ctx, exit};
use crate::mcp::{Defaults, serve_stdio};

/// Arguments of `handoff mcp` (the config file is the global `--config`).
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Auto-decision rules for proposed actions (TOML with [[rule]] entries), instead of the config's.
    #[arg(long, env = "HANDOFF_RULES", value_name = "FILE")]
    rules: Option<PathBuf>,
}

pub(crate) async fn run(args: McpArgs, ctx: &Ctx) -> anyhow::Result<u8> {
    let mut defaults = Defaults::from_env();
    let ops = if ctx.remote() {
        if args.rules.is_some() {
            return Err(super::fail(
                exit::INVALID,
                "--rules/HANDOFF_RULES apply on the host: against HANDOFF_URL the daemon's own [[rule]]s decide",
            ));
        }
        // The token's name is the actor of writes that name none.
        defaults.actor = ctx.actor(None, || defaults.agent.clone());
        ctx.ops().await?
    } else {
        let policy = ctx.policy(args.rules.as_deref())?;
        ctx.ops_with(policy).await?
    };
    serve_stdio(ops, defaults).await?;
    Ok(exit::OK)
}
