//! Step transitions an agent makes on one row or board: `board_advance`
//! (archive the current step into `history`, install the next blocked
//! one), `board_outcome` (store the result and leave `blocked`) and
//! `board_archive`. Each checks CAS on the versions the caller read. A
//! winning advance or outcome on SQLite is one database call (`call_one`,
//! `call_many`); the transactions here run when it did not win, to explain
//! the refusal, and for every such write on PostgreSQL. An archive is
//! always such a transaction.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::load::{load_board, load_row, resolve_row};
use super::plan::Pending;
use super::record::{Who, board_event, confirm_one, open_board};
use super::write::finish;
use super::{
    Board, BoardFull, Decided, MAX_TEXT, Refusal, Row, RowInput, RowOption, RowOwner, RowStatus,
    RowWrite, StaleRow, Step, Steps, check_len, check_name, decided,
};
use crate::store::Channel;
use crate::store::engine::{Stmt, Tx};
use crate::store::{Error, Result, Store};

/// The next step `board_advance` installs (always `blocked`).
#[derive(Debug, Clone, Default, serde::Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextStep {
    /// What is asked of the human now (required).
    pub next_step: String,
    /// The agent's note.
    #[serde(default)]
    pub note: String,
    /// Who must act.
    #[serde(default)]
    pub owner: RowOwner,
    /// What depends on it.
    #[serde(default)]
    pub impact: String,
    /// The choices offered to the human.
    #[serde(default)]
    pub options: Vec<RowOption>,
    /// Longer background for the human.
    #[serde(default)]
    pub context: String,
}

/// `board_advance`: archive the current step of a row and install the next.
#[derive(Debug, Clone, Default)]
pub struct Advance {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title.
    pub project: Option<String>,
    /// Row label or id.
    pub label: String,
    /// The row revision read.
    pub expected_revision: i64,
    /// The board version read.
    pub board_version: i64,
    /// Outcome of the finished step, archived with it (else the stored one).
    pub outcome: Option<String>,
    /// The step to install.
    pub next: NextStep,
    /// The agent advancing (recorded on the events).
    pub by: String,
}

/// Store the outcome of a row's step, which ends the step.
#[derive(Debug, Clone, Default)]
pub struct OutcomeWrite {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title.
    pub project: Option<String>,
    /// Row label or id.
    pub label: String,
    /// The row revision read.
    pub expected_revision: i64,
    /// The outcome (non-empty).
    pub outcome: String,
    /// Status to move to (default `done`; never `blocked`).
    pub status: Option<RowStatus>,
    /// The agent writing (recorded on the events).
    pub by: String,
}

/// The result of an archive.
pub type Archived = Board;

impl Store {
    /// Finish a row's current step and install the next one, blocked, in one
    /// transaction: the step (with its response and outcome) goes into the
    /// row's `history`, the human fields reset, `action_version`, `revision`
    /// and the board version are bumped. Stale versions are refused with the
    /// current ones.
    pub async fn board_advance(&self, a: &Advance) -> Result<Decided<BoardFull>> {
        check_name("the next step", &a.next.next_step).map_err(|_| {
            Error::Invalid(
                "the next step must say what is asked (1–120 characters); pass --next-step".into(),
            )
        })?;
        let probe = RowInput {
            label: a.label.clone(),
            note: Some(a.next.note.clone()),
            impact: Some(a.next.impact.clone()),
            options: Some(a.next.options.clone()),
            context: Some(a.next.context.clone()),
            outcome: a.outcome.clone(),
            ..RowInput::default()
        };
        probe.validate()?;
        if let Some(full) = self.board_advance_call(a).await? {
            return Ok(Ok(full));
        }
        // The one call did not win (on PostgreSQL there is none): the
        // advance as one transaction of several statements, so a refusal
        // is explained by the same reads and words as ever.
        self.transact(Arc::new(a.clone()), |mut tx, a, now| {
            Box::pin(async move { decided(advance_in(&mut tx, &a, now).await) })
        })
        .await
    }

    /// Store the outcome of a row's step and move it out of `blocked`
    /// (to `done` unless told otherwise). This is how an agent acknowledges a
    /// row a human marked handled.
    pub async fn board_outcome(&self, w: &OutcomeWrite) -> Result<Decided<BoardFull>> {
        if w.status == Some(RowStatus::Blocked) {
            return Err(Error::Invalid(
                "an outcome ends the step: choose a status other than blocked (or use advance)"
                    .into(),
            ));
        }
        check_len("the outcome", &w.outcome, MAX_TEXT)?;
        if w.outcome.trim().is_empty() {
            return Ok(Err(Refusal::Empty));
        }
        let write = RowWrite {
            board: w.board.clone(),
            project: w.project.clone(),
            board_version: None,
            row: RowInput {
                label: w.label.clone(),
                revision: Some(w.expected_revision),
                status: Some(w.status.unwrap_or(RowStatus::Done)),
                outcome: Some(w.outcome.trim().to_owned()),
                ..RowInput::default()
            },
            by: w.by.clone(),
        };
        if let Some(full) = self.board_row_call(&write, true).await? {
            return Ok(Ok(full));
        }
        self.board_row_once(&write, true).await
    }

    /// Archive a board by hand (CAS on `board_version`). A later agent write
    /// reactivates it.
    pub async fn board_archive(
        &self,
        board: &str,
        project: Option<&str>,
        board_version: i64,
        by: &str,
    ) -> Result<Decided<Archived>> {
        let input = Arc::new((
            board.to_string(),
            project.map(str::to_string),
            by.to_string(),
        ));
        self.transact(input, move |mut tx, input, now| {
            Box::pin(async move {
                let (board, project, by) = &*input;
                decided(
                    archive_in(&mut tx, now, board, project.as_deref(), board_version, by).await,
                )
            })
        })
        .await
    }
}

/// The advance: archive the row's step into its history and install the
/// next one, blocked.
async fn advance_in(tx: &mut Tx<'_>, a: &Advance, now: i64) -> Steps<BoardFull> {
    let board_id = open_board(tx, &a.board, a.project.as_deref()).await?;
    let row_id = resolve_row(tx, &board_id, &a.label).await?;
    let board = load_board(tx, &board_id).await?;
    let row = load_row(tx, &row_id).await?;
    let outcome = advance_checked(&board, &row, a)?;
    let done = tx
        .change(&install_next(now, &row, &outcome, &a.next)?.stmt())
        .await?;
    confirm_one(done, &row.id)?;
    let events = advance_events(&row, row_id, &outcome);
    let who = Who {
        actor: &a.by,
        channel: Channel::Agent,
    };
    Ok(finish(tx, now, &board_id, None, events, who, false).await?)
}

/// Archive the board named by hand, at `board_version`.
async fn archive_in(
    tx: &mut Tx<'_>,
    now: i64,
    board: &str,
    project: Option<&str>,
    board_version: i64,
    by: &str,
) -> Steps<Archived> {
    let board_id = open_board(tx, board, project).await?;
    // Why guarded: the version is the CAS token and only an active board
    // can be archived; the rows it changed decide.
    let archive = Stmt::new(
        "UPDATE boards SET archived_at = $1, auto_archived = 0, revision = revision + 1,
            updated_at = $1
         WHERE id = $2 AND revision = $3 AND archived_at IS NULL",
    )
    .int(now)
    .text(board_id.as_str())
    .int(board_version);
    let done = tx.change(&archive).await?;
    let current = load_board(tx, &board_id).await?;
    if done == 0 {
        return Err(if current.board_version != board_version {
            Refusal::Stale {
                board_version: current.board_version,
                rows: Vec::new(),
            }
        } else {
            Refusal::Archived
        }
        .into());
    }
    let who = Who {
        actor: by,
        channel: Channel::Cli,
    };
    let payload = json!({
        "title": current.title,
        "board_version": current.board_version,
        "auto": false,
    });
    board_event(tx, now, "board.archived", &current, who, &payload).await?;
    Ok(current)
}

/// The step `row` is on, as archived into its history with `outcome`.
fn archived_step(row: &Row, outcome: &str, now: i64) -> Step {
    Step {
        action_version: row.action_version,
        status: row.status,
        note: row.note.clone(),
        next_step: row.next_step.clone(),
        owner: row.owner,
        impact: row.impact.clone(),
        options: row.options.clone(),
        context: row.context.clone(),
        response: row.response.clone(),
        outcome: outcome.to_owned(),
        started_at: row.action_started_at,
        ended_at: now,
    }
}

/// An advance's checks on the board and row it read (the caller holds
/// the write lock or the board's lock): the outcome to archive the step
/// with, or why the advance is refused. Shared by both engines.
fn advance_checked(board: &Board, row: &Row, a: &Advance) -> Decided<String> {
    if board.board_version != a.board_version || row.revision != a.expected_revision {
        return Err(Refusal::Stale {
            board_version: board.board_version,
            rows: vec![StaleRow {
                label: row.label.clone(),
                revision: Some(row.revision),
            }],
        });
    }
    let outcome = a
        .outcome
        .as_deref()
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map_or_else(|| row.outcome.clone(), str::to_owned);
    if row.response.handled_at.is_some() && outcome.is_empty() {
        return Err(Refusal::OutcomeRequired {
            label: row.label.clone(),
        });
    }
    if row.has_unread_annotation() {
        return Err(Refusal::UnreadResponse {
            label: row.label.clone(),
        });
    }
    Ok(outcome)
}

/// The events of a winning advance of `row` (`row_id`), in their order.
fn advance_events(row: &Row, row_id: String, outcome: &str) -> Vec<Pending> {
    vec![
        Pending {
            kind: "row.advanced",
            row_id: row_id.clone(),
            extra: json!({
                "from_action_version": row.action_version,
                "from_status": row.status,
                "outcome": outcome,
            }),
        },
        Pending {
            kind: "row.blocked",
            row_id,
            extra: json!({"fresh": true}),
        },
    ]
}

/// The next step installed on a row, its step archived into its history.
struct Install<'a> {
    row: &'a Row,
    next: &'a NextStep,
    history: String,
    options: String,
    now: i64,
}

/// Archive `row`'s step with `outcome` into its history and install `next`.
fn install_next<'a>(
    now: i64,
    row: &'a Row,
    outcome: &str,
    next: &'a NextStep,
) -> Result<Install<'a>> {
    let mut history = row.history.clone();
    history.push(archived_step(row, outcome, now));
    let history = serde_json::to_string(&history)
        .map_err(|e| Error::Corrupt(format!("cannot encode history: {e}")))?;
    let options = serde_json::to_string(&next.options).unwrap_or_else(|_| "[]".into());
    Ok(Install {
        row,
        next,
        history,
        options,
        now,
    })
}

impl Install<'_> {
    /// The guarded UPDATE: the human fields reset, the versions bumped.
    /// Why guarded: `revision = $10` is the row's CAS token, checked by
    /// the caller under the same lock (SQLite's write turn, PostgreSQL's
    /// board lock), so this cannot lose, only confirm.
    fn stmt(&self) -> Stmt<'_> {
        let next = self.next;
        Stmt::new(
            "UPDATE board_rows SET status = 'blocked', note = $1, next_step = $2, owner = $3, impact = $4,
                options = $5, context = $6, outcome = '', outcome_at = NULL,
                annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
                annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
                handled_at = NULL, handled_by = NULL, handled_seen_at = NULL, response_open = 0,
                history = $7, action_version = action_version + 1, action_started_at = $8,
                revision = revision + 1, updated_at = $8
             WHERE id = $9 AND revision = $10",
        )
        .text(next.note.as_str())
        .text(next.next_step.as_str())
        .text(next.owner.as_str())
        .text(next.impact.as_str())
        .text(self.options.as_str())
        .text(next.context.as_str())
        .text(self.history.as_str())
        .int(self.now)
        .text(self.row.id.as_str())
        .int(self.row.revision)
    }
}
