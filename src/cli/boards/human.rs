//! The human's board commands, the Inbox door from a terminal: `board
//! annotate` (answer a row) and `board handled` (mark your part done).
//! A human's write always wins over the agent's fields; `--revision`
//! refuses it if the row moved since it was read.

use clap::Args;

use super::decided;
use super::render::row_text;
use crate::cli::{Ctx, one, person};
use crate::store::boards::{Annotate, AnnotationKind, Channel, Handled, RowChange};

/// `{"row": …, "board_version", "changed"}`: a human's write to one row.
fn row_change(c: &RowChange) -> serde_json::Value {
    one(
        "row",
        &c.row,
        serde_json::json!({"board_version": c.board_version, "changed": c.changed}),
    )
}

/// The row a human's write is for, and who writes it: what `board
/// annotate` and `board handled` share.
#[derive(Debug, Args)]
pub(crate) struct RowAt {
    /// Board id, short id or title.
    board: String,
    /// Row label (unique within the board).
    label: String,
    /// Project, to find the board by title.
    #[arg(long)]
    project: Option<String>,
    /// Who writes [default: $USER, else cli].
    #[arg(long)]
    by: Option<String>,
    /// The row revision you saw (refused if it moved).
    #[arg(long)]
    revision: Option<i64>,
    /// Channel (inbox or chat); chat is for tests and scripts.
    #[arg(long, default_value = "inbox", hide = true, value_parser = super::parse_via)]
    via: Channel,
}

/// Arguments of `board annotate`.
#[derive(Debug, Args)]
pub(crate) struct AnnotateArgs {
    #[command(flatten)]
    at: RowAt,
    /// The answer ('' clears an answer no agent has received yet).
    text: String,
    /// answer, clarify or decline.
    #[arg(long, default_value = "answer")]
    kind: AnnotationKind,
}

impl AnnotateArgs {
    pub(super) async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let ops = ctx.ops().await?;
        let at = self.at;
        let a = Annotate {
            board: at.board,
            project: at.project,
            label: at.label,
            text: self.text,
            kind: self.kind,
            source: at.via,
            by: ctx.actor(at.by, person),
            expected_revision: at.revision,
            action_version: None,
        };
        let c = decided(ops.annotate_row(&a).await?)?;
        ctx.print(&row_change(&c), || {
            let what = if c.row.response.annotation.is_some() {
                "annotated"
            } else if c.changed {
                "cleared"
            } else {
                "nothing to clear on"
            };
            format!(
                "{what} `{}` (board version {})\n{}",
                c.row.label,
                c.board_version,
                row_text(&c.row)
            )
        });
        Ok(())
    }
}

/// Arguments of `board handled`.
#[derive(Debug, Args)]
pub(crate) struct HandledArgs {
    #[command(flatten)]
    at: RowAt,
    /// Take the mark back (only before an agent received it).
    #[arg(long)]
    clear: bool,
}

impl HandledArgs {
    pub(super) async fn run(self, ctx: &Ctx) -> anyhow::Result<()> {
        let ops = ctx.ops().await?;
        let at = self.at;
        let h = Handled {
            board: at.board,
            project: at.project,
            label: at.label,
            source: at.via,
            by: ctx.actor(at.by, person),
            expected_revision: at.revision,
        };
        let c = decided(ops.mark_handled(&h, self.clear).await?)?;
        ctx.print(&row_change(&c), || {
            format!(
                "{} `{}` (board version {}; the row stays blocked until the agent stores an outcome)\n{}",
                if self.clear { "unmarked" } else { "marked handled" },
                c.row.label,
                c.board_version,
                row_text(&c.row)
            )
        });
        Ok(())
    }
}
