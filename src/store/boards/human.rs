//! The human's writes on a row: annotations (Inbox and chat, with the
//! asymmetric rule) and the "handled" mark.
//!
//! A write that wins is one database call (`call_one`): the guarded write,
//! the board's version bump, the annotation log and the event. When it did
//! not win, the older form here runs: one guarded UPDATE inside a `BEGIN
//! IMMEDIATE` transaction that also bumps the board version and appends the
//! event; when the UPDATE touches no row the current state is read only to
//! explain the refusal. Marking handled
//! never unblocks a row: only the agent's outcome or status change does.

use serde::Serialize;
use serde_json::json;
use sqlx::SqliteConnection;

use super::{
    AnnotationKind, Board, Channel, Decided, MAX_TEXT, Refusal, Row, RowStatus, StaleRow, Who,
    bump_version, check_len, load_row, row_event,
};
use crate::store::{Engine, Result, Store, postgres};

/// A human's annotation on a row.
#[derive(Debug, Clone, Default)]
pub struct Annotate {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title.
    pub project: Option<String>,
    /// Row label or id.
    pub label: String,
    /// The text; blank clears (Inbox only, and only an unpicked annotation).
    pub text: String,
    /// Answer, clarify or decline.
    pub kind: AnnotationKind,
    /// Inbox (always wins) or chat (only while nothing unclaimed waits).
    pub source: Channel,
    /// The person writing (recorded on the row and the event).
    pub by: String,
    /// The row revision the human saw, if the caller tracks it.
    pub expected_revision: Option<i64>,
    /// The step the human saw (chat buttons carry it), if tracked.
    pub action_version: Option<i64>,
}

/// Mark or clear "handled" on a row.
#[derive(Debug, Clone, Default)]
pub struct Handled {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title.
    pub project: Option<String>,
    /// Row label or id.
    pub label: String,
    /// The door the mark comes through.
    pub source: Channel,
    /// The person marking (recorded on the row and the event).
    pub by: String,
    /// The row revision the human saw, if tracked.
    pub expected_revision: Option<i64>,
}

/// The row after a human's write.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RowChange {
    /// The board version after the write.
    pub board_version: i64,
    /// Whether anything changed (clearing what is already clear does not).
    pub changed: bool,
    /// The row as stored now.
    pub row: Row,
}

/// Explain a guarded UPDATE that touched nothing because of a version guard.
pub(crate) fn stale_of(
    row: &Row,
    board_version: i64,
    revision: Option<i64>,
    action_version: Option<i64>,
) -> Option<Refusal> {
    let stale = revision.is_some_and(|r| r != row.revision)
        || action_version.is_some_and(|v| v != row.action_version);
    stale.then(|| Refusal::Stale {
        board_version,
        rows: vec![StaleRow {
            label: row.label.clone(),
            revision: Some(row.revision),
        }],
    })
}

/// After a guarded UPDATE touched nothing: read the row only to explain
/// why, refusing as stale first when a version the human saw moved.
async fn explain(
    conn: &mut SqliteConnection,
    board: &Board,
    row_id: &str,
    revision: Option<i64>,
    action_version: Option<i64>,
) -> Result<Decided<Row>> {
    let row = load_row(conn, row_id).await?;
    Ok(
        match stale_of(&row, board.board_version, revision, action_version) {
            Some(stale) => Err(stale),
            None => Ok(row),
        },
    )
}

/// Clearing what is already clear: a success that changed nothing.
pub(crate) fn unchanged(board: &Board, row: Row) -> Decided<RowChange> {
    Ok(RowChange {
        board_version: board.board_version,
        changed: false,
        row,
    })
}

/// Bump the board, append the event and read the row back.
async fn finish(
    conn: &mut SqliteConnection,
    now: i64,
    board_id: &str,
    row_id: &str,
    kind: &str,
    who: Who<'_>,
    extra: serde_json::Value,
) -> Result<RowChange> {
    let board = bump_version(conn, now, board_id).await?;
    let row = load_row(conn, row_id).await?;
    row_event(conn, now, kind, &board, &row, who, extra).await?;
    Ok(RowChange {
        board_version: board.board_version,
        changed: true,
        row,
    })
}

/// Binding the optional version guards of an annotation,
/// `(? IS NULL OR revision = ?) AND (? IS NULL OR action_version = ?)`.
trait SeenVersions {
    fn seen_versions(self, a: &Annotate) -> Self;
}

impl SeenVersions for sqlx::query::Query<'_, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    fn seen_versions(self, a: &Annotate) -> Self {
        self.bind(a.expected_revision)
            .bind(a.expected_revision)
            .bind(a.action_version)
            .bind(a.action_version)
    }
}

/// The guarded UPDATE of an annotation (`text` trimmed; blank clears).
/// Returns how many rows it wrote: 0 means refused.
async fn write_annotation(
    conn: &mut SqliteConnection,
    now: i64,
    row_id: &str,
    a: &Annotate,
    text: &str,
) -> Result<u64> {
    let done = if text.is_empty() {
        // Why guarded: a blank clears only an annotation no agent has
        // received; erasing one it may have acted on would lie to the human.
        sqlx::query(
            "UPDATE board_rows SET annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
                annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
                revision = revision + 1, updated_at = ?
             WHERE id = ? AND annotation IS NOT NULL AND annotation_seen_at IS NULL
               AND (? IS NULL OR revision = ?) AND (? IS NULL OR action_version = ?)",
        )
        .bind(now)
        .bind(row_id)
        .seen_versions(a)
        .execute(&mut *conn)
        .await?
    } else if a.source == Channel::Inbox {
        // Why unconditional (but for the optional version guards): the
        // Inbox always wins, and resetting annotation_seen_at makes the
        // agent pick the new text up.
        sqlx::query(
            "UPDATE board_rows SET annotation = ?, annotation_kind = ?, annotation_source = 'inbox',
                annotated_by = ?, annotated_at = ?, annotation_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = ?
             WHERE id = ? AND (? IS NULL OR revision = ?) AND (? IS NULL OR action_version = ?)",
        )
        .bind(text)
        .bind(a.kind.as_str())
        .bind(&a.by)
        .bind(now)
        .bind(now)
        .bind(row_id)
        .seen_versions(a)
        .execute(&mut *conn)
        .await?
    } else {
        // Why guarded: chat may write only while no unclaimed annotation
        // waits, so an unread Inbox answer always beats a later chat one;
        // a chat `clarify` may also correct an unclaimed *chat* answer.
        sqlx::query(
            "UPDATE board_rows SET annotation = ?, annotation_kind = ?, annotation_source = 'chat',
                annotated_by = ?, annotated_at = ?, annotation_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = ?
             WHERE id = ? AND (? IS NULL OR revision = ?) AND (? IS NULL OR action_version = ?)
               AND (annotation IS NULL OR annotation_seen_at IS NOT NULL
                    OR (? = 'clarify' AND annotation_source = 'chat'))",
        )
        .bind(text)
        .bind(a.kind.as_str())
        .bind(&a.by)
        .bind(now)
        .bind(now)
        .bind(row_id)
        .seen_versions(a)
        .bind(a.kind.as_str())
        .execute(&mut *conn)
        .await?
    };
    Ok(done.rows_affected())
}

/// Why an annotation wrote nothing: a moved version, clearing what is
/// clear (a success without change) or already delivered, or (a chat
/// answer) the unclaimed annotation that waits.
async fn annotation_refused(
    conn: &mut SqliteConnection,
    board: &Board,
    row_id: &str,
    a: &Annotate,
    clear: bool,
) -> Result<Decided<RowChange>> {
    let row = decided!(explain(conn, board, row_id, a.expected_revision, a.action_version).await?);
    if clear {
        if row.response.annotation.is_none() {
            return Ok(unchanged(board, row));
        }
        return Ok(Err(Refusal::AlreadyDelivered));
    }
    Ok(Err(Refusal::UnreadAnswer {
        annotation: row.response.annotation.unwrap_or_default(),
        kind: row.response.annotation_kind,
        source: row.response.annotation_source,
        by: row.response.annotated_by,
    }))
}

/// Keep the annotation (or its clearing, with no text) in the row's
/// annotation log, under the step it was written on.
async fn log_annotation(
    conn: &mut SqliteConnection,
    now: i64,
    board_id: &str,
    row_id: &str,
    a: &Annotate,
    text: Option<&str>,
) -> Result<()> {
    let action_version: i64 =
        sqlx::query_scalar("SELECT action_version FROM board_rows WHERE id = ?")
            .bind(row_id)
            .fetch_one(&mut *conn)
            .await?;
    sqlx::query(
        "INSERT INTO board_row_annotations (row_id, board_id, action_version, annotation, kind, source, by, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(row_id)
    .bind(board_id)
    .bind(action_version)
    .bind(text)
    .bind(text.map(|_| a.kind.as_str()))
    .bind(a.source.as_str())
    .bind(&a.by)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The guarded UPDATE of a handled mark (or its clearing). Returns how
/// many rows it wrote: 0 means refused.
async fn write_handled(
    conn: &mut SqliteConnection,
    now: i64,
    row_id: &str,
    h: &Handled,
    clear: bool,
) -> Result<u64> {
    let done = if clear {
        // Why guarded: once an agent received the mark, un-marking
        // cannot un-tell it; refuse instead of pretending.
        sqlx::query(
            "UPDATE board_rows SET handled_at = NULL, handled_by = NULL, handled_seen_at = NULL,
                revision = revision + 1, updated_at = ?
             WHERE id = ? AND handled_at IS NOT NULL AND handled_seen_at IS NULL
               AND (? IS NULL OR revision = ?)",
        )
        .bind(now)
        .bind(row_id)
        .bind(h.expected_revision)
        .bind(h.expected_revision)
        .execute(&mut *conn)
        .await?
    } else {
        // Why guarded: only a blocked row waits on a human; a new mark
        // resets its delivery so the agent is told again.
        sqlx::query(
            "UPDATE board_rows SET handled_at = ?, handled_by = ?, handled_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = ?
             WHERE id = ? AND status = 'blocked' AND (? IS NULL OR revision = ?)",
        )
        .bind(now)
        .bind(&h.by)
        .bind(now)
        .bind(row_id)
        .bind(h.expected_revision)
        .bind(h.expected_revision)
        .execute(&mut *conn)
        .await?
    };
    Ok(done.rows_affected())
}

/// Why a handled mark wrote nothing: a moved revision, a row that is not
/// blocked, clearing what is clear (a success without change) or a mark
/// already delivered.
async fn handled_refused(
    conn: &mut SqliteConnection,
    board: &Board,
    row_id: &str,
    h: &Handled,
    clear: bool,
) -> Result<Decided<RowChange>> {
    let row = decided!(explain(conn, board, row_id, h.expected_revision, None).await?);
    if !clear {
        return Ok(Err(Refusal::NotBlocked { status: row.status }));
    }
    if row.response.handled_at.is_none() {
        return Ok(unchanged(board, row));
    }
    Ok(Err(Refusal::AlreadyDelivered))
}

impl Store {
    /// The opening of a human's write: [`Store::open_row`], refused on an
    /// archived board.
    async fn open_active(
        &self,
        board: &str,
        project: Option<&str>,
        label: &str,
    ) -> Result<Decided<super::Opened>> {
        let opened = decided!(self.open_row(board, project, label).await?);
        if opened.2.archived_at.is_some() {
            return Ok(Err(Refusal::Archived));
        }
        Ok(Ok(opened))
    }

    /// Write a human's annotation on a row.
    ///
    /// Inbox: unconditional; overwrites and sets `annotation_seen_at = NULL`
    /// so the agent picks the new text up. A blank Inbox annotation clears
    /// only one no agent has received yet ([`Refusal::AlreadyDelivered`]
    /// otherwise). Chat: only while no unclaimed annotation waits, else
    /// [`Refusal::UnreadAnswer`] with the waiting one; a chat `clarify` may
    /// also replace an unclaimed *chat* annotation, never an Inbox one.
    pub async fn annotate(&self, a: &Annotate) -> Result<Decided<RowChange>> {
        check_len("the annotation", &a.text, MAX_TEXT)?;
        if a.source == Channel::Chat && a.text.trim().is_empty() {
            return Ok(Err(Refusal::Empty));
        }
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_human::annotate(self, pg, a).await;
        }
        if let Some(change) = self.annotate_call(a).await? {
            return Ok(Ok(change));
        }
        self.retry(|| self.annotate_once(a)).await
    }

    // The `*_once` writers below are the older transactions of several
    // calls: they run when the one call (`call_one`) did not win, so a
    // refusal (or clearing what is clear) is explained by the same reads
    // and words as ever.

    async fn annotate_once(&self, a: &Annotate) -> Result<Decided<RowChange>> {
        let (mut tx, now, board, row_id) = decided!(
            self.open_active(&a.board, a.project.as_deref(), &a.label)
                .await?
        );
        let text = a.text.trim();
        let clear = text.is_empty();
        if write_annotation(&mut tx, now, &row_id, a, text).await? == 0 {
            return annotation_refused(&mut tx, &board, &row_id, a, clear).await;
        }
        let text = (!clear).then_some(text);
        log_annotation(&mut tx, now, &board.id, &row_id, a, text).await?;
        let who = Who {
            actor: &a.by,
            channel: a.source,
        };
        // The answer itself travels with the event (for wake-up receivers).
        let extra = json!({
            "kind": (!clear).then_some(a.kind),
            "text": text,
            "source": a.source,
            "by": a.by,
            "cleared": clear,
        });
        let change = finish(
            &mut tx,
            now,
            &board.id,
            &row_id,
            "row.annotated",
            who,
            extra,
        )
        .await?;
        tx.commit().await?;
        Ok(Ok(change))
    }

    /// A human marks their part of a blocked row done. The row stays
    /// `blocked` until the agent stores an outcome; a re-mark is a new mark
    /// (delivered again).
    pub async fn mark_handled(&self, h: &Handled) -> Result<Decided<RowChange>> {
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_human::handled(self, pg, h, false).await;
        }
        if let Some(change) = self.handled_call(h, false).await? {
            return Ok(Ok(change));
        }
        self.retry(|| self.handled_once(h, false)).await
    }

    /// Take the "handled" mark back, only while no agent has received it.
    /// Clearing an already clear row succeeds without a change.
    pub async fn clear_handled(&self, h: &Handled) -> Result<Decided<RowChange>> {
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_human::handled(self, pg, h, true).await;
        }
        if let Some(change) = self.handled_call(h, true).await? {
            return Ok(Ok(change));
        }
        self.retry(|| self.handled_once(h, true)).await
    }

    async fn handled_once(&self, h: &Handled, clear: bool) -> Result<Decided<RowChange>> {
        let (mut tx, now, board, row_id) = decided!(
            self.open_active(&h.board, h.project.as_deref(), &h.label)
                .await?
        );
        if write_handled(&mut tx, now, &row_id, h, clear).await? == 0 {
            return handled_refused(&mut tx, &board, &row_id, h, clear).await;
        }
        let who = Who {
            actor: &h.by,
            channel: h.source,
        };
        let kind = if clear {
            "row.handled_cleared"
        } else {
            "row.handled"
        };
        let extra = json!({"by": h.by, "source": h.source});
        let change = finish(&mut tx, now, &board.id, &row_id, kind, who, extra).await?;
        debug_assert!(clear || change.row.status == RowStatus::Blocked);
        tx.commit().await?;
        Ok(Ok(change))
    }
}
