//! Step transitions an agent makes on one row or board: `board_advance`
//! (archive the current step into `history`, install the next blocked
//! one), `board_outcome` (store the result and leave `blocked`) and
//! `board_archive`. Each checks CAS on the versions the caller read. A
//! winning advance or outcome is one database call (`call_one`,
//! `call_many`); the `BEGIN IMMEDIATE` transactions here run when it did
//! not win, to explain the refusal. An archive is still such a transaction.

use serde::Deserialize;
use serde_json::json;

use super::write::{Pending, finish};
use super::{
    Board, BoardFull, Decided, MAX_TEXT, Refusal, Row, RowInput, RowOption, RowOwner, RowStatus,
    RowWrite, StaleRow, Step, Who, board_event, check_len, check_name, confirm_one, load_board,
    load_row, locate, resolve_board,
};
use crate::store::Channel;
use crate::store::{Engine, Error, Result, Store, postgres};

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
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_writes::advance(self, pg, a).await;
        }
        if let Some(full) = self.board_advance_call(a).await? {
            return Ok(Ok(full));
        }
        self.retry(|| self.board_advance_once(a)).await
    }

    /// The advance as one transaction of several calls. It runs when the
    /// one call (`call_one`) did not win, so a refusal is explained by the
    /// same reads and words as ever.
    async fn board_advance_once(&self, a: &Advance) -> Result<Decided<BoardFull>> {
        let (mut tx, now, board, row_id) = decided!(
            self.open_row(&a.board, a.project.as_deref(), &a.label)
                .await?
        );
        let row = load_row(&mut tx, &row_id).await?;
        let outcome = decided!(advance_checked(&board, &row, a));
        let done = bind_next(sqlx::query(INSTALL_NEXT), now, &row, &outcome, &a.next)?
            .execute(&mut *tx)
            .await?;
        confirm_one(done.rows_affected(), &row.id)?;
        let events = advance_events(&row, row_id, &outcome);
        let who = Who {
            actor: &a.by,
            channel: Channel::Agent,
        };
        let full = finish(&mut tx, now, &board.id, None, events, who).await?;
        tx.commit().await?;
        Ok(Ok(full))
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
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_writes::row(self, pg, &write, true).await;
        }
        if let Some(full) = self.board_row_call(&write, true).await? {
            return Ok(Ok(full));
        }
        self.retry(|| self.board_outcome_once(&write)).await
    }

    async fn board_outcome_once(&self, w: &RowWrite) -> Result<Decided<BoardFull>> {
        // The row may be named by id: look its label up first. This read
        // decides nothing; the write below re-checks the revision under the
        // write lock.
        let mut conn = self.pool()?.acquire().await?;
        let (_, row_id) =
            decided!(locate(&mut conn, &w.board, w.project.as_deref(), &w.row.label).await?);
        let row = load_row(&mut conn, &row_id).await?;
        drop(conn);
        let mut w = w.clone();
        w.row.label = row.label;
        self.board_row_once(&w).await
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
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_writes::archive(self, pg, board, project, board_version, by)
                .await;
        }
        self.retry(|| self.board_archive_once(board, project, board_version, by))
            .await
    }

    async fn board_archive_once(
        &self,
        board: &str,
        project: Option<&str>,
        board_version: i64,
        by: &str,
    ) -> Result<Decided<Archived>> {
        let mut tx = self.begin_write().await?;
        let now = self.now();
        let board_id = decided!(resolve_board(&mut tx, board, project).await?);
        // Why guarded: the version is the CAS token and only an active board
        // can be archived; rows_affected() decides.
        let done = sqlx::query(
            "UPDATE boards SET archived_at = ?, auto_archived = 0, revision = revision + 1, updated_at = ?
             WHERE id = ? AND revision = ? AND archived_at IS NULL",
        )
        .bind(now)
        .bind(now)
        .bind(&board_id)
        .bind(board_version)
        .execute(&mut *tx)
        .await?;
        let current = load_board(&mut tx, &board_id).await?;
        if done.rows_affected() == 0 {
            return Ok(Err(if current.board_version != board_version {
                Refusal::Stale {
                    board_version: current.board_version,
                    rows: Vec::new(),
                }
            } else {
                Refusal::Archived
            }));
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
        board_event(&mut tx, now, "board.archived", &current, who, payload).await?;
        tx.commit().await?;
        Ok(Ok(current))
    }
}

/// The step `row` is on, as archived into its history with `outcome`.
pub(crate) fn archived_step(row: &Row, outcome: &str, now: i64) -> Step {
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
pub(crate) fn advance_checked(board: &Board, row: &Row, a: &Advance) -> Decided<String> {
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
pub(crate) fn advance_events(row: &Row, row_id: String, outcome: &str) -> Vec<Pending> {
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

/// Archive the step a row is on into its history and install the next,
/// blocked, with the human fields reset; bound by [`bind_next`]. The same
/// text runs on both engines. Why guarded: `revision = $10` is the row's
/// CAS token, checked by the caller under the same lock (SQLite's write
/// lock, PostgreSQL's board lock), so this cannot lose, only confirm.
pub(crate) const INSTALL_NEXT: &str =
    "UPDATE board_rows SET status = 'blocked', note = $1, next_step = $2, owner = $3, impact = $4,
        options = $5, context = $6, outcome = '', outcome_at = NULL,
        annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
        annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
        handled_at = NULL, handled_by = NULL, handled_seen_at = NULL, response_open = 0,
        history = $7, action_version = action_version + 1, action_started_at = $8,
        revision = revision + 1, updated_at = $8
     WHERE id = $9 AND revision = $10";

/// Bind [`INSTALL_NEXT`] for `row`, archiving its step with `outcome`
/// into its history and installing `next`, on either engine.
pub(crate) fn bind_next<'q, DB>(
    query: sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>,
    now: i64,
    row: &Row,
    outcome: &str,
    next: &NextStep,
) -> Result<sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments>>
where
    DB: sqlx::Database,
    for<'t> &'t str: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> String: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> i64: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
{
    let mut history = row.history.clone();
    history.push(archived_step(row, outcome, now));
    let history = serde_json::to_string(&history)
        .map_err(|e| Error::Corrupt(format!("cannot encode history: {e}")))?;
    Ok(query
        .bind(next.note.as_str())
        .bind(next.next_step.as_str())
        .bind(next.owner.as_str())
        .bind(next.impact.as_str())
        .bind(serde_json::to_string(&next.options).unwrap_or_else(|_| "[]".into()))
        .bind(next.context.as_str())
        .bind(history)
        .bind(now)
        .bind(row.id.as_str())
        .bind(row.revision))
}
