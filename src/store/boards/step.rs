//! Step transitions an agent makes on one row or board: `board_advance`
//! (archive the current step into `history`, install the next blocked
//! one), `board_outcome` (store the result and leave `blocked`) and
//! `board_archive`. Each is one `BEGIN IMMEDIATE` transaction with CAS on
//! the versions the caller read.

use serde::Deserialize;
use serde_json::json;

use super::write::{Pending, finish};
use super::{
    Board, BoardFull, Decided, MAX_TEXT, Refusal, RowInput, RowOption, RowOwner, RowStatus,
    RowWrite, StaleRow, Step, Who, check_len, check_name, load_board, load_row, not_found, resolve,
    resolve_board,
};
use crate::store::{Error, Result, Store};

/// The next step `board_advance` installs (always `blocked`).
#[derive(Debug, Clone, Default, serde::Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextStep {
    /// What is asked of the human now (required).
    pub next_step: String,
    /// Note.
    #[serde(default)]
    pub note: String,
    /// Who must act.
    #[serde(default)]
    pub owner: RowOwner,
    /// What depends on it.
    #[serde(default)]
    pub impact: String,
    /// Choices offered.
    #[serde(default)]
    pub options: Vec<RowOption>,
    /// Long context.
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
    /// Who advances.
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
    /// Who writes.
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
        self.retry(|| self.board_advance_once(a)).await
    }

    async fn board_advance_once(&self, a: &Advance) -> Result<Decided<BoardFull>> {
        let mut tx = self.begin_write().await?;
        let now = self.now();
        let (board_id, row_id) =
            match resolve(&mut tx, &a.board, a.project.as_deref(), &a.label).await? {
                Ok(ids) => ids,
                Err(r) => return Ok(Err(r)),
            };
        let board = load_board(&mut tx, &board_id)
            .await?
            .ok_or_else(|| Error::Corrupt("board vanished".into()))?;
        let row = load_row(&mut tx, &row_id)
            .await?
            .ok_or_else(|| Error::Corrupt("row vanished".into()))?;
        if board.board_version != a.board_version || row.revision != a.expected_revision {
            return Ok(Err(Refusal::Stale {
                board_version: board.board_version,
                rows: vec![StaleRow {
                    label: row.label.clone(),
                    revision: Some(row.revision),
                }],
            }));
        }
        let outcome = a
            .outcome
            .as_deref()
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map_or_else(|| row.outcome.clone(), str::to_owned);
        if row.handled_at.is_some() && outcome.is_empty() {
            return Ok(Err(Refusal::OutcomeRequired { label: row.label }));
        }
        if row.has_unread_annotation() {
            return Ok(Err(Refusal::UnreadResponse { label: row.label }));
        }
        let mut history = row.history.clone();
        history.push(Step {
            action_version: row.action_version,
            status: row.status,
            note: row.note.clone(),
            next_step: row.next_step.clone(),
            owner: row.owner,
            impact: row.impact.clone(),
            options: row.options.clone(),
            context: row.context.clone(),
            annotation: row.annotation.clone(),
            annotation_kind: row.annotation_kind,
            annotation_source: row.annotation_source,
            annotated_by: row.annotated_by.clone(),
            annotated_at: row.annotated_at,
            annotation_seen_at: row.annotation_seen_at,
            handled_at: row.handled_at,
            handled_by: row.handled_by.clone(),
            outcome: outcome.clone(),
            started_at: row.action_started_at,
            ended_at: now,
        });
        let history = serde_json::to_string(&history)
            .map_err(|e| Error::Corrupt(format!("cannot encode history: {e}")))?;
        let next = &a.next;
        // Why guarded: `revision = ?` is the row's CAS token; checked above
        // under the same write lock, so this cannot lose, only confirm.
        let done = sqlx::query(
            "UPDATE board_rows SET status = 'blocked', note = ?, next_step = ?, owner = ?, impact = ?,
                options = ?, context = ?, outcome = '', outcome_at = NULL,
                annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
                annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
                handled_at = NULL, handled_by = NULL, handled_seen_at = NULL, response_open = 0,
                history = ?, action_version = action_version + 1, action_started_at = ?,
                revision = revision + 1, updated_at = ?
             WHERE id = ? AND revision = ?",
        )
        .bind(&next.note)
        .bind(&next.next_step)
        .bind(next.owner.as_str())
        .bind(&next.impact)
        .bind(serde_json::to_string(&next.options).unwrap_or_else(|_| "[]".into()))
        .bind(&next.context)
        .bind(history)
        .bind(now)
        .bind(now)
        .bind(&row_id)
        .bind(row.revision)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Err(Error::Corrupt(format!(
                "row {row_id} changed under a held write lock"
            )));
        }
        let events = vec![
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
        ];
        let who = Who {
            actor: &a.by,
            channel: "agent",
        };
        let full = finish(&mut tx, now, &board_id, None, events, who).await?;
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
        self.retry(|| self.board_outcome_once(&write)).await
    }

    async fn board_outcome_once(&self, w: &RowWrite) -> Result<Decided<BoardFull>> {
        // The row may be named by id: look its label up first. This read
        // decides nothing; the write below re-checks the revision under the
        // write lock.
        let mut conn = self.pool().acquire().await?;
        let (_, row_id) =
            match resolve(&mut conn, &w.board, w.project.as_deref(), &w.row.label).await? {
                Ok(ids) => ids,
                Err(r) => return Ok(Err(r)),
            };
        let Some(row) = load_row(&mut conn, &row_id).await? else {
            return Ok(Err(not_found(format!("row `{}`", w.row.label))));
        };
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
        let board_id = match resolve_board(&mut tx, board, project).await? {
            Ok(id) => id,
            Err(r) => return Ok(Err(r)),
        };
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
        let current = load_board(&mut tx, &board_id)
            .await?
            .ok_or_else(|| Error::Corrupt("board vanished".into()))?;
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
        crate::store::events::append(
            &mut tx,
            now,
            &crate::store::NewEvent {
                kind: "board.archived",
                entity_kind: "board",
                entity_id: &board_id,
                actor: by,
                channel: "cli",
                project: &current.project,
                session: &current.session,
                payload: json!({
                    "title": current.title,
                    "board_version": current.board_version,
                    "auto": false,
                }),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(Ok(current))
    }
}
