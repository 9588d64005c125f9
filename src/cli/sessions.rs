//! CLI commands for sessions, the execution ledger and `wait` (placeholder
//! until the sessions work lands).

use clap::Subcommand;

use super::Ctx;

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    #[command(hide = true, name = "__sessions_placeholder")]
    Placeholder,
}

pub(crate) async fn run(_cmd: Cmd, _ctx: &Ctx) -> anyhow::Result<u8> {
    Err(super::fail(super::exit::ERROR, "not built yet"))
}
