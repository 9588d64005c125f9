//! `handoff mcp`: run the stdio MCP server for an agent.
//!
//! Opens the store (HANDOFF_DB / --db like every command), loads the action
//! policy (the config's `[[rule]]` and `[redact]`, or `--rules`), reads the
//! caller's identity from `HANDOFF_PROJECT` / `HANDOFF_AGENT` /
//! `HANDOFF_SESSION` and serves until the client disconnects. Prints nothing
//! on stdout itself: stdout belongs to the protocol.

use std::path::PathBuf;

use clap::Args;

use super::{Ctx, exit};
use crate::mcp::{Defaults, serve_stdio};
use crate::ops::{Local, Ops, Policy};

/// Arguments of `handoff mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Config file for action rules and redaction [default: config/handoff.toml, else ~/.config/handoff/handoff.toml].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Auto-decision rules for proposed actions (TOML with [[rule]] entries), instead of the config's.
    #[arg(long, env = "HANDOFF_RULES", value_name = "FILE")]
    rules: Option<PathBuf>,
}

pub(crate) async fn run(args: McpArgs, ctx: &Ctx) -> anyhow::Result<u8> {
    let policy = Policy::load(args.config.as_deref(), args.rules.as_deref())?;
    let store = ctx.store().await?;
    let ops = Ops::Local(Local::new(store, policy));
    serve_stdio(ops, Defaults::from_env()).await?;
    Ok(exit::OK)
}
