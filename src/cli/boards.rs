//! `handoff board …`: boards and rows from the command line.
//!
//! Agent-side commands (upsert, row, advance, outcome, pending) and the
//! human's Inbox channel (annotate, handled). Every write passes the versions
//! it read; a stale one exits 3 with the current versions and nothing
//! written. Everything goes through [`crate::ops::Ops`] (the local store or
//! the daemon at `HANDOFF_URL`).

use clap::{Args, Subcommand};

mod render;

use render::{board_line, full_text, pending_text, row_text};

use super::{Ctx, exit, fail_as, refusal};
use crate::store::boards::{
    Advance, Annotate, AnnotationKind, BoardUpsert, Decided, Handled, NextStep, OutcomeWrite,
    Refusal, RowChange, RowInput, RowOption, RowOwner, RowStatus, RowWrite, Source,
};

/// Board subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Create or update a board and some of its rows, all or nothing.
    ///
    /// Rows are a JSON array: [{"label":"db","status":"blocked","next_step":"pick one",
    /// "revision":3}, …]. An existing row needs the `revision` you read; an
    /// existing board needs --version.
    Upsert {
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
    },
    /// Write one row (create it, or change it with --revision).
    Row(Box<RowArgs>),
    /// Archive a row's current step (with its response and outcome) and install the next, blocked.
    Advance(Box<AdvanceArgs>),
    /// Show boards (a summary), or one board in full.
    Get {
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
    },
    /// Archive a board (a later agent write reactivates it).
    Archive {
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
    },
    /// Answer a row as a human through the Inbox (always wins; blank clears an unpicked answer).
    Annotate {
        /// Board id, short id or title.
        board: String,
        /// Row label.
        label: String,
        /// The answer ('' clears an answer no agent has received yet).
        text: String,
        /// Project, to find the board by title.
        #[arg(long)]
        project: Option<String>,
        /// answer, clarify or decline.
        #[arg(long, default_value = "answer")]
        kind: AnnotationKind,
        /// Who answers [default: $USER, else cli].
        #[arg(long)]
        by: Option<String>,
        /// The row revision you saw (refused if it moved).
        #[arg(long)]
        revision: Option<i64>,
        /// Channel (inbox or chat); chat is for tests and scripts.
        #[arg(long, default_value = "inbox", hide = true)]
        via: Source,
    },
    /// Mark your part of a blocked row done (the row stays blocked until the agent's outcome).
    Handled {
        /// Board id, short id or title.
        board: String,
        /// Row label.
        label: String,
        /// Project, to find the board by title.
        #[arg(long)]
        project: Option<String>,
        /// Take the mark back (only before an agent received it).
        #[arg(long)]
        clear: bool,
        /// Who [default: $USER, else cli].
        #[arg(long)]
        by: Option<String>,
        /// The row revision you saw.
        #[arg(long)]
        revision: Option<i64>,
        /// Channel (inbox or chat).
        #[arg(long, default_value = "inbox", hide = true)]
        via: Source,
    },
    /// Rows with a human response waiting for an agent (marks them delivered).
    Pending {
        /// Only this project [default: $HANDOFF_PROJECT when no session is known].
        #[arg(long)]
        project: Option<String>,
        /// Only boards of this session [default: $HANDOFF_SESSION].
        #[arg(long)]
        session: Option<String>,
        /// Every session's and project's rows, ignoring $HANDOFF_SESSION and
        /// $HANDOFF_PROJECT.
        #[arg(long)]
        all: bool,
        /// Who is reading (recorded with the delivery) [default: cli].
        #[arg(long)]
        reader: Option<String>,
        /// Read without marking anything delivered.
        #[arg(long)]
        peek: bool,
    },
    /// Store the outcome of a row's step and move it out of blocked (to done by default).
    Outcome {
        /// Board id, short id or title.
        board: String,
        /// Row label.
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
    },
    /// Rows a human marked handled whose outcome no agent has stored yet.
    Handoffs {
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
    },
}

/// Arguments of `board row`.
#[derive(Debug, Args)]
pub(crate) struct RowArgs {
    /// Board id, short id or title.
    board: String,
    /// Row label.
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
    /// Note.
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
    /// Long context.
    #[arg(long)]
    context: Option<String>,
    /// Outcome of the current step.
    #[arg(long)]
    outcome: Option<String>,
    /// Who writes [default: cli].
    #[arg(long)]
    by: Option<String>,
}

/// Arguments of `board advance`.
#[derive(Debug, Args)]
pub(crate) struct AdvanceArgs {
    /// Board id, short id or title.
    board: String,
    /// Row label.
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
    /// Note.
    #[arg(long, default_value = "")]
    note: String,
    /// decision, task or approval.
    #[arg(long, default_value = "")]
    owner: RowOwner,
    /// What depends on it.
    #[arg(long, default_value = "")]
    impact: String,
    /// Options as JSON.
    #[arg(long)]
    options: Option<String>,
    /// Long context.
    #[arg(long, default_value = "")]
    context: String,
    /// Outcome of the finished step.
    #[arg(long)]
    outcome: Option<String>,
    /// Who advances [default: cli].
    #[arg(long)]
    by: Option<String>,
}

/// Read `--rows`: inline JSON, `@file`, or `-` / `@-` for stdin.
fn read_rows(arg: &str) -> anyhow::Result<Vec<RowInput>> {
    let text = super::arg_text("rows", arg)?;
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

/// `{"row": …, "board_version", "changed"}`: a human's write to one row.
fn row_change(c: &RowChange) -> serde_json::Value {
    super::one(
        "row",
        &c.row,
        serde_json::json!({"board_version": c.board_version, "changed": c.changed}),
    )
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

/// `cli`, the default actor of board commands.
fn cli() -> String {
    "cli".into()
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Upsert {
            project,
            title,
            rows,
            version,
            agent,
            session,
        } => {
            let rows = read_rows(&rows)?;
            let ops = ctx.ops().await?;
            let up = BoardUpsert {
                project,
                title,
                board_version: version,
                agent,
                session,
                rows,
            };
            let full = decided(ops.upsert_board(&up).await?)?;
            ctx.show("board", &full, || full_text(&full));
        }
        Cmd::Row(args) => {
            let RowArgs {
                board,
                label,
                project,
                revision,
                version,
                status,
                note,
                next_step,
                owner,
                impact,
                options,
                context,
                outcome,
                by,
            } = *args;
            let options = read_options(options.as_deref())?;
            let ops = ctx.ops().await?;
            let w = RowWrite {
                board,
                project,
                board_version: version,
                row: RowInput {
                    label,
                    revision,
                    status,
                    note,
                    next_step,
                    owner,
                    impact,
                    options,
                    context,
                    outcome,
                },
                by: ctx.actor(by, cli),
            };
            let full = decided(ops.write_row(&w).await?)?;
            ctx.show("board", &full, || full_text(&full));
        }
        Cmd::Advance(args) => {
            let AdvanceArgs {
                board,
                label,
                project,
                revision,
                version,
                next_step,
                note,
                owner,
                impact,
                options,
                context,
                outcome,
                by,
            } = *args;
            let options = read_options(options.as_deref())?.unwrap_or_default();
            let ops = ctx.ops().await?;
            let a = Advance {
                board,
                project,
                label,
                expected_revision: revision,
                board_version: version,
                outcome,
                next: NextStep {
                    next_step,
                    note,
                    owner,
                    impact,
                    options,
                    context,
                },
                by: ctx.actor(by, cli),
            };
            let full = decided(ops.advance_row(&a).await?)?;
            ctx.show("board", &full, || full_text(&full));
        }
        Cmd::Get {
            board,
            project,
            full,
            all,
        } => {
            let ops = ctx.ops().await?;
            if let Some(board) = board {
                let f = decided(ops.read_board(&board, project.as_deref()).await?)?;
                ctx.show("board", &f, || full_text(&f));
            } else if full {
                let mut out = Vec::new();
                for b in ops.list_boards(project.as_deref(), all).await? {
                    out.push(decided(ops.read_board(&b.id, None).await?)?);
                }
                ctx.list("boards", &out, || out.iter().map(full_text).collect());
            } else {
                let boards = ops.list_boards(project.as_deref(), all).await?;
                ctx.list("boards", &boards, || {
                    if boards.is_empty() {
                        "no boards\n".into()
                    } else {
                        boards.iter().map(board_line).collect()
                    }
                });
            }
        }
        Cmd::Archive {
            board,
            project,
            version,
            by,
        } => {
            let ops = ctx.ops().await?;
            let by = ctx.actor(by, cli);
            let b = decided(
                ops.archive_board(&board, project.as_deref(), version, &by)
                    .await?,
            )?;
            ctx.show("board", &b, || format!("archived {}", board_line(&b)));
        }
        Cmd::Annotate {
            board,
            label,
            text,
            project,
            kind,
            by,
            revision,
            via,
        } => {
            let ops = ctx.ops().await?;
            let a = Annotate {
                board,
                project,
                label,
                text,
                kind,
                source: via,
                by: ctx.actor(by, super::person),
                expected_revision: revision,
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
        }
        Cmd::Handled {
            board,
            label,
            project,
            clear,
            by,
            revision,
            via,
        } => {
            let ops = ctx.ops().await?;
            let h = Handled {
                board,
                project,
                label,
                source: via,
                by: ctx.actor(by, super::person),
                expected_revision: revision,
            };
            let c = decided(ops.mark_handled(&h, clear).await?)?;
            ctx.print(&row_change(&c), || {
                format!(
                    "{} `{}` (board version {}; the row stays blocked until the agent stores an outcome)\n{}",
                    if clear { "unmarked" } else { "marked handled" },
                    c.row.label,
                    c.board_version,
                    row_text(&c.row)
                )
            });
        }
        Cmd::Pending {
            project,
            session,
            all,
            reader,
            peek,
        } => {
            let (project, session) = crate::cli::caller_scope(project, session, all);
            let ops = ctx.ops().await?;
            let reader = ctx.actor(reader, cli);
            let rows = ops
                .pending_rows(project.as_deref(), session.as_deref(), &reader, peek)
                .await?;
            ctx.list("rows", &rows, || pending_text(&rows));
        }
        Cmd::Outcome {
            board,
            label,
            text,
            project,
            revision,
            status,
            by,
        } => {
            let ops = ctx.ops().await?;
            let w = OutcomeWrite {
                board,
                project,
                label,
                expected_revision: revision,
                outcome: text,
                status,
                by: ctx.actor(by, cli),
            };
            let full = decided(ops.store_outcome(&w).await?)?;
            ctx.show("board", &full, || full_text(&full));
        }
        Cmd::Handoffs { project } => {
            let rows = ctx.ops().await?.handoffs(project.as_deref()).await?;
            ctx.list("rows", &rows, || pending_text(&rows));
        }
    }
    Ok(exit::OK)
}
