//! The agent's board commands: `board upsert`, `row`, `advance`,
//! `outcome` and `pending`. Each writes with the versions the agent read
//! (a stale one is refused by the store) and prints the board as it now
//! stands; `pending` hands over the rows a human responded to.

use clap::Args;

use super::render::{full_text, pending_text};
use super::{cli, decided};
use crate::cli::{Ctx, exit, fail_as};
use crate::store::boards::{
    Advance, BoardUpsert, NextStep, OutcomeWrite, RowInput, RowOption, RowOwner, RowStatus,
    RowWrite,
};

/// Read `--rows`: inline JSON, `@file`, or `-` / `@-` for stdin.
fn read_rows(arg: &str) -> anyhow::Result<Vec<RowInput>> {
    let text = crate::cli::arg_text("rows", arg)?;
    serde_json::from_str(&text).map_err(|e| {
        fail_as(
            exit::INVALID,
            "malformed_json",
            format!(
                "--rows is not a valid JSON array of rows ({e}); pass e.g. \
                 '[{{\"label\":\"db\",\"status\":\"blocked\",\"next_step\":\"pick one\"}}]'"
            ),
        )
    })
}

/// Parse `--options`, a JSON array of row options.
fn read_options(arg: Option<&str>) -> anyhow::Result<Option<Vec<RowOption>>> {
    arg.map(|s| {
        serde_json::from_str(s).map_err(|e| {
            fail_as(
                exit::INVALID,
                "malformed_json",
                format!(
                    "--options is not a valid JSON array ({e}); pass e.g. \
                     '[{{\"label\":\"Postgres\",\"recommended\":true}},{{\"label\":\"SQLite\"}}]'"
                ),
            )
        })
    })
    .transpose()
}

/// Arguments of `board upsert`.
#[derive(Debug, Args)]
pub(crate) struct UpsertArgs {
    /// Project the board belongs to.
    project: String,
    /// Board title (unique in the project).
    title: String,
    /// Rows as JSON, @FILE, or - (or @-) for stdin.
    #[arg(long, default_value = "[]")]
    rows: String,
    /// The board_version you read (omit only to create a new board).
    #[arg(long)]
    version: Option<i64>,
    /// Owning agent.
    #[arg(long, default_value = "")]
    agent: String,
    /// Owning session (woken when a human responds).
    #[arg(long, default_value = "", env = "HANDOFF_SESSION")]
    session: String,
}

impl UpsertArgs {
    pub(super) async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let rows = read_rows(&self.rows)?;
        let ops = ctx.ops().await?;
        let up = BoardUpsert {
            project: self.project,
            title: self.title,
            board_version: self.version,
            agent: self.agent,
            session: self.session,
            rows,
        };
        let full = decided(ops.upsert_board(&up).await?)?;
        ctx.show("board", &full, || full_text(&full));
        Ok(())
    }
}

/// Arguments of `board row`.
#[derive(Debug, Args)]
pub(crate) struct RowArgs {
    /// Board id, short id or title.
    board: String,
    /// Row label (unique within the board).
    label: String,
    /// Project, to find the board by title.
    #[arg(long)]
    project: Option<String>,
    /// The row revision you read (required for an existing row).
    #[arg(long)]
    revision: Option<i64>,
    /// The board_version you read (optional here).
    #[arg(long)]
    version: Option<i64>,
    /// tracked, partial, missing, na, done or blocked.
    #[arg(long)]
    status: Option<RowStatus>,
    /// A short note, shown after the row's label.
    #[arg(long)]
    note: Option<String>,
    /// What is asked next.
    #[arg(long)]
    next_step: Option<String>,
    /// decision, task or approval.
    #[arg(long)]
    owner: Option<RowOwner>,
    /// What depends on it.
    #[arg(long)]
    impact: Option<String>,
    /// Options as JSON: [{"label":"Postgres","recommended":true},…].
    #[arg(long)]
    options: Option<String>,
    /// Longer background for the human (up to 20,000 characters).
    #[arg(long)]
    context: Option<String>,
    /// Outcome of the current step.
    #[arg(long)]
    outcome: Option<String>,
    /// Who writes [default: cli].
    #[arg(long)]
    by: Option<String>,
}

impl RowArgs {
    pub(super) async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let options = read_options(self.options.as_deref())?;
        let ops = ctx.ops().await?;
        let w = RowWrite {
            board: self.board,
            project: self.project,
            board_version: self.version,
            row: RowInput {
                label: self.label,
                revision: self.revision,
                status: self.status,
                note: self.note,
                next_step: self.next_step,
                owner: self.owner,
                impact: self.impact,
                options,
                context: self.context,
                outcome: self.outcome,
            },
            by: ctx.actor(self.by, cli),
        };
        let full = decided(ops.write_row(&w).await?)?;
        ctx.show("board", &full, || full_text(&full));
        Ok(())
    }
}

/// Arguments of `board advance`.
#[derive(Debug, Args)]
pub(crate) struct AdvanceArgs {
    /// Board id, short id or title.
    board: String,
    /// Row label (unique within the board).
    label: String,
    /// Project, to find the board by title.
    #[arg(long)]
    project: Option<String>,
    /// The row revision you read.
    #[arg(long)]
    revision: i64,
    /// The board_version you read.
    #[arg(long)]
    version: i64,
    /// What is asked of the human now.
    #[arg(long)]
    next_step: String,
    /// A short note, shown after the row's label.
    #[arg(long, default_value = "")]
    note: String,
    /// decision, task or approval.
    #[arg(long, default_value = "")]
    owner: RowOwner,
    /// What depends on it.
    #[arg(long, default_value = "")]
    impact: String,
    /// Options as JSON: [{"label":"Postgres","recommended":true},…].
    #[arg(long)]
    options: Option<String>,
    /// Longer background for the human (up to 20,000 characters).
    #[arg(long, default_value = "")]
    context: String,
    /// Outcome of the finished step.
    #[arg(long)]
    outcome: Option<String>,
    /// Who advances [default: cli].
    #[arg(long)]
    by: Option<String>,
}

impl AdvanceArgs {
    pub(super) async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let options = read_options(self.options.as_deref())?.unwrap_or_default();
        let ops = ctx.ops().await?;
        let a = Advance {
            board: self.board,
            project: self.project,
            label: self.label,
            expected_revision: self.revision,
            board_version: self.version,
            outcome: self.outcome,
            next: NextStep {
                next_step: self.next_step,
                note: self.note,
                owner: self.owner,
                impact: self.impact,
                options,
                context: self.context,
            },
            by: ctx.actor(self.by, cli),
        };
        let full = decided(ops.advance_row(&a).await?)?;
        ctx.show("board", &full, || full_text(&full));
        Ok(())
    }
}

/// Arguments of `board outcome`.
#[derive(Debug, Args)]
pub(crate) struct OutcomeArgs {
    /// Board id, short id or title.
    board: String,
    /// Row label (unique within the board).
    label: String,
    /// What happened.
    text: String,
    /// Project, to find the board by title.
    #[arg(long)]
    project: Option<String>,
    /// The row revision you read.
    #[arg(long)]
    revision: i64,
    /// Status to move to (default done).
    #[arg(long)]
    status: Option<RowStatus>,
    /// Who writes [default: cli].
    #[arg(long)]
    by: Option<String>,
}

impl OutcomeArgs {
    pub(super) async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let ops = ctx.ops().await?;
        let w = OutcomeWrite {
            board: self.board,
            project: self.project,
            label: self.label,
            expected_revision: self.revision,
            outcome: self.text,
            status: self.status,
            by: ctx.actor(self.by, cli),
        };
        let full = decided(ops.store_outcome(&w).await?)?;
        ctx.show("board", &full, || full_text(&full));
        Ok(())
    }
}

/// Arguments of `board pending`.
#[derive(Debug, Args)]
pub(crate) struct PendingArgs {
    #[command(flatten)]
    scope: crate::cli::PickupScope,
    /// Who is reading (recorded with the delivery) [default: cli].
    #[arg(long)]
    reader: Option<String>,
    /// Read without marking anything delivered.
    #[arg(long)]
    peek: bool,
}

impl PendingArgs {
    pub(super) async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let (project, session) = self.scope.resolve();
        let ops = ctx.ops().await?;
        let reader = ctx.actor(self.reader, cli);
        let rows = ops
            .pending_rows(project.as_deref(), session.as_deref(), &reader, self.peek)
            .await?;
        ctx.list("rows", &rows, || pending_text(&rows));
        Ok(())
    }
}
