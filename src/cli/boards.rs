//! `handoff board …`: boards and rows from the command line.
//!
//! Agent-side commands (upsert, row, advance, outcome, pending: [`agent`])
//! and the human's Inbox channel (annotate, handled: [`human`]); reading
//! and archiving boards here. Every write passes the versions it read; a
//! stale one exits 3 with the current versions and nothing written.
//! Everything goes through [`crate::ops::Ops`] (the local store or the
//! daemon at `HANDOFF_URL`).

use clap::{Args, Subcommand};

mod agent;
mod human;
mod render;

use render::{board_line, full_text, pending_text};

use super::{Ctx, exit, refusal};
use crate::store::Channel;
use crate::store::boards::{Decided, Refusal};

/// Board subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Create or update a board and some of its rows, all or nothing.
    ///
    /// Rows are a JSON array: [{"label":"db","status":"blocked","next_step":"pick one",
    /// "revision":3}, …]. An existing row needs the `revision` you read; an
    /// existing board needs --version.
    Upsert(agent::UpsertArgs),
    /// Write one row (create it, or change it with --revision).
    Row(Box<agent::RowArgs>),
    /// Archive a row's current step (with its response and outcome) and install the next, blocked.
    Advance(Box<agent::AdvanceArgs>),
    /// Show boards (a summary), or one board in full.
    Get(GetArgs),
    /// Archive a board (a later agent write reactivates it).
    Archive(ArchiveArgs),
    /// Answer a row as a human through the Inbox (always wins; blank clears an unpicked answer).
    Annotate(human::AnnotateArgs),
    /// Mark your part of a blocked row done (the row stays blocked until the agent's outcome).
    Handled(human::HandledArgs),
    /// Rows with a human response waiting for an agent (marks them delivered).
    Pending(agent::PendingArgs),
    /// Store the outcome of a row's step and move it out of blocked (to done by default).
    Outcome(agent::OutcomeArgs),
    /// Rows a human marked handled whose outcome no agent has stored yet.
    Handoffs {
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
    },
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Upsert(a) => a.run(ctx).await?,
        Cmd::Row(a) => a.run(ctx).await?,
        Cmd::Advance(a) => a.run(ctx).await?,
        Cmd::Get(a) => a.run(ctx).await?,
        Cmd::Archive(a) => a.run(ctx).await?,
        Cmd::Annotate(a) => a.run(ctx).await?,
        Cmd::Handled(a) => a.run(ctx).await?,
        Cmd::Pending(a) => a.run(ctx).await?,
        Cmd::Outcome(a) => a.run(ctx).await?,
        Cmd::Handoffs { project } => {
            let rows = ctx.ops().await?.handoffs(project.as_deref()).await?;
            ctx.list("rows", &rows, || pending_text(&rows));
        }
    }
    Ok(exit::OK)
}

/// Arguments of `board get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// Board id, short id or title; omit for a summary of all boards.
    board: Option<String>,
    /// Only this project.
    #[arg(long)]
    project: Option<String>,
    /// With every board's rows.
    #[arg(long)]
    full: bool,
    /// Include archived boards in the summary.
    #[arg(long)]
    all: bool,
}

impl GetArgs {
    async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let ops = ctx.ops().await?;
        let project = self.project.as_deref();
        if let Some(board) = self.board {
            let f = decided(ops.read_board(&board, project).await?)?;
            ctx.show("board", &f, || full_text(&f));
        } else if self.full {
            let mut out = Vec::new();
            for b in ops.list_boards(project, self.all).await? {
                out.push(decided(ops.read_board(&b.id, None).await?)?);
            }
            ctx.list("boards", &out, || out.iter().map(full_text).collect());
        } else {
            let boards = ops.list_boards(project, self.all).await?;
            ctx.list("boards", &boards, || {
                if boards.is_empty() {
                    "no boards\n".into()
                } else {
                    boards.iter().map(board_line).collect()
                }
            });
        }
        Ok(())
    }
}

/// Arguments of `board archive`.
#[derive(Debug, Args)]
pub(crate) struct ArchiveArgs {
    /// Board id, short id or title.
    board: String,
    /// Project, to find the board by title.
    #[arg(long)]
    project: Option<String>,
    /// The board_version you read.
    #[arg(long)]
    version: i64,
    /// Who archives [default: cli].
    #[arg(long)]
    by: Option<String>,
}

impl ArchiveArgs {
    async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let ops = ctx.ops().await?;
        let by = ctx.actor(self.by, cli);
        let b = decided(
            ops.archive_board(&self.board, self.project.as_deref(), self.version, &by)
                .await?,
        )?;
        ctx.show("board", &b, || format!("archived {}", board_line(&b)));
        Ok(())
    }
}

/// Unwrap a store decision, or report the refusal (exit 4 for not found,
/// 2 for a blank answer, 3 otherwise).
fn decided<T>(d: Decided<T>) -> anyhow::Result<T> {
    d.map_err(|r| {
        let code = match r {
            Refusal::NotFound { .. } => exit::NOT_FOUND,
            Refusal::Empty => exit::INVALID,
            _ => exit::REFUSED,
        };
        let message = match &r {
            Refusal::Stale { .. } | Refusal::NotFound { .. } => r.to_string(),
            _ => format!("refused: {r}"),
        };
        refusal(code, &r, message)
    })
}

/// `--via`: the two doors a human's board write comes through.
fn parse_via(s: &str) -> Result<Channel, String> {
    Channel::one_of(s, &[Channel::Inbox, Channel::Chat])
}

/// `cli`, the default actor of board commands.
fn cli() -> String {
    "cli".into()
}
