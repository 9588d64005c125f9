//! The human's writes on a row: annotations (Inbox and chat, with the
//! asymmetric rule) and the "handled" mark.
//!
//! A write that wins on SQLite is one database call (`call_one`): the
//! guarded write, the board's version bump, the annotation log and the
//! event. When it did not win, and on PostgreSQL, the older form here runs:
//! one guarded UPDATE inside a transaction (`Store::transact`), the board
//! and the row locked first (`record::open_board`), that also bumps the
//! board version and appends the event; when the UPDATE touches no row the
//! current state is read only to explain the refusal. Marking handled
//! never unblocks a row: only the agent's outcome or status change does.

use std::sync::Arc;

use serde::Serialize;
use serde_json::json;

use super::load::{load_board, load_row, resolve_row};
use super::record::{Who, bump_version, open_board, row_event};
use super::{
    AnnotationKind, Board, Channel, Decided, MAX_TEXT, Refusal, Row, RowStatus, StaleRow, Steps,
    check_len, decided,
};
use crate::store::engine::{Stmt, Tx};
use crate::store::{Result, Store};

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
fn stale_of(
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

/// Clearing what is already clear: a success that changed nothing.
fn unchanged(board: &Board, row: Row) -> RowChange {
    RowChange {
        board_version: board.board_version,
        changed: false,
        row,
    }
}

/// The opening of a human's write: the board named (locked) and active,
/// the row named (on PostgreSQL locked too, so a refusal is explained by
/// the state that refused).
async fn open_human(
    tx: &mut Tx<'_>,
    board: &str,
    project: Option<&str>,
    label: &str,
) -> Steps<(Board, String)> {
    let board_id = open_board(tx, board, project).await?;
    let row_id = resolve_row(tx, &board_id, label).await?;
    let board = load_board(tx, &board_id).await?;
    if board.archived_at.is_some() {
        return Err(Refusal::Archived.into());
    }
    let lock = Stmt::spelled(
        "SELECT id FROM board_rows WHERE id = $1",
        "SELECT id FROM board_rows WHERE id = $1 FOR UPDATE",
    )
    .text(row_id.as_str());
    tx.rows::<(String,)>(&lock).await?;
    Ok((board, row_id))
}

/// Bump the board, read the row back and append the human's event.
async fn finish(
    tx: &mut Tx<'_>,
    now: i64,
    board_id: &str,
    row_id: &str,
    kind: &str,
    who: Who<'_>,
    own: serde_json::Value,
) -> Result<RowChange> {
    let board = bump_version(tx, now, board_id).await?;
    let row = load_row(tx, row_id).await?;
    row_event(tx, now, kind, &board, &row, who, &own).await?;
    Ok(RowChange {
        board_version: board.board_version,
        changed: true,
        row,
    })
}

/// The versions a human saw, as an annotation's guards test them (`$3`
/// the revision, `$4` the step; NULL: not tracked).
macro_rules! seen {
    () => {
        "($3 IS NULL OR revision = $3) AND ($4 IS NULL OR action_version = $4)"
    };
    (pg) => {
        "($3::BIGINT IS NULL OR revision = $3) AND ($4::BIGINT IS NULL OR action_version = $4)"
    };
}

/// An annotation (`a.text` trimmed; blank clears), with the asymmetric
/// rule (see [`Store::annotate`]).
async fn annotate_in(tx: &mut Tx<'_>, a: &Annotate, now: i64) -> Steps<RowChange> {
    let (board, row_id) = open_human(tx, &a.board, a.project.as_deref(), &a.label).await?;
    let text = a.text.trim();
    let clear = text.is_empty();
    let write = annotation_write(clear, a.source);
    let write = write
        .int(now)
        .text(row_id.as_str())
        .int(a.expected_revision)
        .int(a.action_version);
    // A clear has no `$5`–`$7` (PostgreSQL takes no value a statement lacks).
    let write = if clear {
        write
    } else {
        write.text(text).text(a.kind.as_str()).text(a.by.as_str())
    };
    if tx.change(&write).await? == 0 {
        // Refused: the row (locked) says why.
        return annotation_refused(tx, &board, &row_id, a, clear).await;
    }
    let logged = (!clear).then_some(text);
    // Kept in the row's annotation log, under the step it was written on.
    let log = Stmt::new(
        "INSERT INTO board_row_annotations (row_id, board_id, action_version, annotation, kind, source, \"by\", at)
         SELECT id, $2, action_version, $3, $4, $5, $6, $7 FROM board_rows WHERE id = $1",
    )
    .text(row_id.as_str())
    .text(board.id.as_str())
    .text(logged)
    .text(logged.map(|_| a.kind.as_str()))
    .text(a.source.as_str())
    .text(a.by.as_str())
    .int(now);
    tx.change(&log).await?;
    let who = Who {
        actor: &a.by,
        channel: a.source,
    };
    // The answer itself travels with the event (for wake-up receivers).
    let own = json!({
        "kind": (!clear).then_some(a.kind),
        "text": logged,
        "source": a.source,
        "by": a.by,
        "cleared": clear,
    });
    Ok(finish(tx, now, &board.id, &row_id, "row.annotated", who, own).await?)
}

/// The guarded UPDATE of an annotation: a clear, the Inbox's (always wins)
/// or chat's (only while no unclaimed answer waits).
fn annotation_write<'q>(clear: bool, source: Channel) -> Stmt<'q> {
    if clear {
        // Why guarded: a blank clears only an annotation no agent has
        // received; erasing one it may have acted on would lie to the human.
        Stmt::spelled(
        concat!(
            "UPDATE board_rows SET annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
                annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
                revision = revision + 1, updated_at = $1
             WHERE id = $2 AND annotation IS NOT NULL AND annotation_seen_at IS NULL AND ",
            seen!()
        ),
        concat!(
            "UPDATE board_rows SET annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
                annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
                revision = revision + 1, updated_at = $1
             WHERE id = $2 AND annotation IS NOT NULL AND annotation_seen_at IS NULL AND ",
            seen!(pg)
        ),
    )
    } else if source == Channel::Inbox {
        // Why unconditional (but for the versions seen): the Inbox always
        // wins, and resetting annotation_seen_at makes the agent pick the
        // new text up.
        Stmt::spelled(
        concat!(
            "UPDATE board_rows SET annotation = $5, annotation_kind = $6, annotation_source = 'inbox',
                annotated_by = $7, annotated_at = $1, annotation_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND ",
            seen!()
        ),
        concat!(
            "UPDATE board_rows SET annotation = $5, annotation_kind = $6, annotation_source = 'inbox',
                annotated_by = $7, annotated_at = $1, annotation_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND ",
            seen!(pg)
        ),
    )
    } else {
        // Why guarded: chat may write only while no unclaimed annotation
        // waits, so an unread Inbox answer always beats a later chat one;
        // a chat `clarify` may also correct an unclaimed *chat* answer.
        Stmt::spelled(
        concat!(
            "UPDATE board_rows SET annotation = $5, annotation_kind = $6, annotation_source = 'chat',
                annotated_by = $7, annotated_at = $1, annotation_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND ",
            seen!(),
            " AND (annotation IS NULL OR annotation_seen_at IS NOT NULL
                  OR ($6 = 'clarify' AND annotation_source = 'chat'))"
        ),
        concat!(
            "UPDATE board_rows SET annotation = $5, annotation_kind = $6, annotation_source = 'chat',
                annotated_by = $7, annotated_at = $1, annotation_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND ",
            seen!(pg),
            " AND (annotation IS NULL OR annotation_seen_at IS NOT NULL
                  OR ($6 = 'clarify' AND annotation_source = 'chat'))"
        ),
    )
    }
}

/// Why an annotation's guarded write changed nothing, read from the row.
async fn annotation_refused(
    tx: &mut Tx<'_>,
    board: &Board,
    row_id: &str,
    a: &Annotate,
    clear: bool,
) -> Steps<RowChange> {
    let row = load_row(tx, row_id).await?;
    if let Some(stale) = stale_of(
        &row,
        board.board_version,
        a.expected_revision,
        a.action_version,
    ) {
        return Err(stale.into());
    }
    if clear {
        if row.response.annotation.is_none() {
            return Ok(unchanged(board, row));
        }
        return Err(Refusal::AlreadyDelivered.into());
    }
    Err(Refusal::UnreadAnswer {
        annotation: row.response.annotation.unwrap_or_default(),
        kind: row.response.annotation_kind,
        source: row.response.annotation_source,
        by: row.response.annotated_by,
    }
    .into())
}

/// A handled mark (`clear`: its clearing, only while undelivered).
async fn handled_in(tx: &mut Tx<'_>, h: &Handled, clear: bool, now: i64) -> Steps<RowChange> {
    let (board, row_id) = open_human(tx, &h.board, h.project.as_deref(), &h.label).await?;
    let write = if clear {
        // Why guarded: once an agent received the mark, un-marking cannot
        // un-tell it; refuse instead of pretending.
        Stmt::spelled(
            "UPDATE board_rows SET handled_at = NULL, handled_by = NULL, handled_seen_at = NULL,
                revision = revision + 1, updated_at = $1
             WHERE id = $2 AND handled_at IS NOT NULL AND handled_seen_at IS NULL
               AND ($3 IS NULL OR revision = $3)",
            "UPDATE board_rows SET handled_at = NULL, handled_by = NULL, handled_seen_at = NULL,
                revision = revision + 1, updated_at = $1
             WHERE id = $2 AND handled_at IS NOT NULL AND handled_seen_at IS NULL
               AND ($3::BIGINT IS NULL OR revision = $3)",
        )
    } else {
        // Why guarded: only a blocked row waits on a human; a new mark
        // resets its delivery so the agent is told again.
        Stmt::spelled(
            "UPDATE board_rows SET handled_at = $1, handled_by = $4, handled_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND status = 'blocked' AND ($3 IS NULL OR revision = $3)",
            "UPDATE board_rows SET handled_at = $1, handled_by = $4, handled_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND status = 'blocked' AND ($3::BIGINT IS NULL OR revision = $3)",
        )
    };
    let write = write
        .int(now)
        .text(row_id.as_str())
        .int(h.expected_revision);
    // A clear has no `$4` (PostgreSQL takes no value a statement lacks).
    let write = if clear {
        write
    } else {
        write.text(h.by.as_str())
    };
    if tx.change(&write).await? == 0 {
        // Refused: the row (locked) says why.
        let row = load_row(tx, &row_id).await?;
        if let Some(stale) = stale_of(&row, board.board_version, h.expected_revision, None) {
            return Err(stale.into());
        }
        if !clear {
            return Err(Refusal::NotBlocked { status: row.status }.into());
        }
        if row.response.handled_at.is_none() {
            return Ok(unchanged(&board, row));
        }
        return Err(Refusal::AlreadyDelivered.into());
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
    let own = json!({"by": h.by, "source": h.source});
    let change = finish(tx, now, &board.id, &row_id, kind, who, own).await?;
    debug_assert!(clear || change.row.status == RowStatus::Blocked);
    Ok(change)
}

impl Store {
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
        if let Some(change) = self.annotate_call(a).await? {
            return Ok(Ok(change));
        }
        // The one call did not win (on PostgreSQL there is none): the
        // older transaction of several statements, so a refusal (or
        // clearing what is clear) is explained by the same reads and words
        // as ever.
        self.transact(Arc::new(a.clone()), |mut tx, a, now| {
            Box::pin(async move { decided(annotate_in(&mut tx, &a, now).await) })
        })
        .await
    }

    /// A human marks their part of a blocked row done. The row stays
    /// `blocked` until the agent stores an outcome; a re-mark is a new mark
    /// (delivered again).
    pub async fn mark_handled(&self, h: &Handled) -> Result<Decided<RowChange>> {
        self.handled(h, false).await
    }

    /// Take the "handled" mark back, only while no agent has received it.
    /// Clearing an already clear row succeeds without a change.
    pub async fn clear_handled(&self, h: &Handled) -> Result<Decided<RowChange>> {
        self.handled(h, true).await
    }

    async fn handled(&self, h: &Handled, clear: bool) -> Result<Decided<RowChange>> {
        if let Some(change) = self.handled_call(h, clear).await? {
            return Ok(Ok(change));
        }
        // As for an annotation.
        self.transact(Arc::new(h.clone()), move |mut tx, h, now| {
            Box::pin(async move { decided(handled_in(&mut tx, &h, clear, now).await) })
        })
        .await
    }
}
