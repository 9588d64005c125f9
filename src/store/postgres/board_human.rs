//! A human's board writes on PostgreSQL: annotations (Inbox and chat, with
//! the asymmetric rule, and the blank Inbox one that clears)
//! and the "handled" mark, each one transaction of its own (`write.rs`).
//! The board and then the row are locked first (see `board_writes.rs`), so
//! a guarded UPDATE that changed nothing is explained by the state that
//! refused it, in `store/boards/human.rs`'s words.

use std::sync::Arc;

use serde_json::json;
use sqlx::PgConnection;

use super::Pg;
use super::boards::{By, bump_version, load_board, load_row, open_board, resolve_row, row_event};
use crate::store::boards::{
    Annotate, Board, Decided, Handled, Refusal, RowChange, stale_of, unchanged,
};
use crate::store::{Channel, Result, Store};

/// The `?` of a refusal, as in `store/boards.rs`.
macro_rules! decided {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(refusal) => return Ok(Err(refusal)),
        }
    };
}

/// The opening of a human's write: the board named (locked) and active,
/// the row named (locked too, so a refusal is explained by the state that
/// refused).
async fn open_human(
    conn: &mut PgConnection,
    board: &str,
    project: Option<&str>,
    label: &str,
) -> Result<Decided<(Board, String)>> {
    let board_id = decided!(open_board(conn, board, project).await?);
    let row_id = decided!(resolve_row(conn, &board_id, label).await?);
    let board = load_board(conn, &board_id).await?;
    if board.archived_at.is_some() {
        return Ok(Err(Refusal::Archived));
    }
    sqlx::query("SELECT id FROM board_rows WHERE id = $1 FOR UPDATE")
        .bind(&row_id)
        .execute(&mut *conn)
        .await?;
    Ok(Ok((board, row_id)))
}

/// Bump the board, read the row back and append the human's event.
async fn finish_human(
    conn: &mut PgConnection,
    now: i64,
    board_id: &str,
    row_id: &str,
    kind: &str,
    by: By<'_>,
    own: serde_json::Value,
) -> Result<RowChange> {
    let board = bump_version(conn, now, board_id).await?;
    let row = load_row(conn, row_id).await?;
    row_event(conn, now, kind, &board, &row, by, &own).await?;
    Ok(RowChange {
        board_version: board.board_version,
        changed: true,
        row,
    })
}

/// A human's annotation, with the asymmetric rule (see
/// [`Store::annotate`]).
pub(crate) async fn annotate(s: &Store, pg: &Pg, a: &Annotate) -> Result<Decided<RowChange>> {
    s.pg_write(pg, Arc::new(a.clone()), |conn, a, now| {
        Box::pin(async move { annotate_in(conn, &a, now).await })
    })
    .await
}

async fn annotate_in(
    conn: &mut PgConnection,
    a: &Annotate,
    now: i64,
) -> Result<Decided<RowChange>> {
    let (board, row_id) =
        decided!(open_human(conn, &a.board, a.project.as_deref(), &a.label).await?);
    let text = a.text.trim();
    let clear = text.is_empty();
    const SEEN: &str =
        "($3::BIGINT IS NULL OR revision = $3) AND ($4::BIGINT IS NULL OR action_version = $4)";
    let done = if clear {
        // Why guarded: a blank clears only an annotation no agent has
        // received; erasing one it may have acted on would lie to the human.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE board_rows SET annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
                annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
                revision = revision + 1, updated_at = $1
             WHERE id = $2 AND annotation IS NOT NULL AND annotation_seen_at IS NULL AND {SEEN}"
        )))
        .bind(now)
        .bind(&row_id)
        .bind(a.expected_revision)
        .bind(a.action_version)
    } else {
        // Inbox: unconditional but for the versions seen (the Inbox always
        // wins). Chat: only while no unclaimed annotation waits, or to
        // clarify an unclaimed chat one.
        let (source, guard) = if a.source == Channel::Inbox {
            ("inbox", "")
        } else {
            (
                "chat",
                "AND (annotation IS NULL OR annotation_seen_at IS NOT NULL
                      OR ($6 = 'clarify' AND annotation_source = 'chat'))",
            )
        };
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE board_rows SET annotation = $5, annotation_kind = $6, annotation_source = '{source}',
                annotated_by = $7, annotated_at = $1, annotation_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND {SEEN} {guard}"
        )))
        .bind(now)
        .bind(&row_id)
        .bind(a.expected_revision)
        .bind(a.action_version)
        .bind(text)
        .bind(a.kind.as_str())
        .bind(&a.by)
    }
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        let row = load_row(conn, &row_id).await?;
        if let Some(stale) = stale_of(
            &row,
            board.board_version,
            a.expected_revision,
            a.action_version,
        ) {
            return Ok(Err(stale));
        }
        if clear {
            if row.response.annotation.is_none() {
                return Ok(unchanged(&board, row));
            }
            return Ok(Err(Refusal::AlreadyDelivered));
        }
        return Ok(Err(Refusal::UnreadAnswer {
            annotation: row.response.annotation.unwrap_or_default(),
            kind: row.response.annotation_kind,
            source: row.response.annotation_source,
            by: row.response.annotated_by,
        }));
    }
    let logged = (!clear).then_some(text);
    // Kept in the row's annotation log, under the step it was written on.
    sqlx::query(
        "INSERT INTO board_row_annotations (row_id, board_id, action_version, annotation, kind, source, \"by\", at)
         SELECT id, $2, action_version, $3, $4, $5, $6, $7 FROM board_rows WHERE id = $1",
    )
    .bind(&row_id)
    .bind(&board.id)
    .bind(logged)
    .bind(logged.map(|_| a.kind.as_str()))
    .bind(a.source.as_str())
    .bind(&a.by)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    let by = By {
        actor: &a.by,
        channel: a.source,
    };
    let own = json!({
        "kind": (!clear).then_some(a.kind),
        "text": logged,
        "source": a.source,
        "by": a.by,
        "cleared": clear,
    });
    let change = finish_human(conn, now, &board.id, &row_id, "row.annotated", by, own).await?;
    Ok(Ok(change))
}

/// A handled mark (`clear`: its clearing, only while undelivered).
pub(crate) async fn handled(
    s: &Store,
    pg: &Pg,
    h: &Handled,
    clear: bool,
) -> Result<Decided<RowChange>> {
    s.pg_write(pg, Arc::new(h.clone()), move |conn, h, now| {
        Box::pin(async move { handled_in(conn, &h, clear, now).await })
    })
    .await
}

async fn handled_in(
    conn: &mut PgConnection,
    h: &Handled,
    clear: bool,
    now: i64,
) -> Result<Decided<RowChange>> {
    let (board, row_id) =
        decided!(open_human(conn, &h.board, h.project.as_deref(), &h.label).await?);
    let done = if clear {
        // Why guarded: once an agent received the mark, un-marking cannot
        // un-tell it.
        sqlx::query(
            "UPDATE board_rows SET handled_at = NULL, handled_by = NULL, handled_seen_at = NULL,
                revision = revision + 1, updated_at = $1
             WHERE id = $2 AND handled_at IS NOT NULL AND handled_seen_at IS NULL
               AND ($3::BIGINT IS NULL OR revision = $3)",
        )
        .bind(now)
        .bind(&row_id)
        .bind(h.expected_revision)
    } else {
        // Why guarded: only a blocked row waits on a human; a new mark
        // resets its delivery so the agent is told again.
        sqlx::query(
            "UPDATE board_rows SET handled_at = $1, handled_by = $4, handled_seen_at = NULL,
                response_open = 1, revision = revision + 1, updated_at = $1
             WHERE id = $2 AND status = 'blocked' AND ($3::BIGINT IS NULL OR revision = $3)",
        )
        .bind(now)
        .bind(&row_id)
        .bind(h.expected_revision)
        .bind(&h.by)
    }
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        let row = load_row(conn, &row_id).await?;
        if let Some(stale) = stale_of(&row, board.board_version, h.expected_revision, None) {
            return Ok(Err(stale));
        }
        if !clear {
            return Ok(Err(Refusal::NotBlocked { status: row.status }));
        }
        if row.response.handled_at.is_none() {
            return Ok(unchanged(&board, row));
        }
        return Ok(Err(Refusal::AlreadyDelivered));
    }
    let by = By {
        actor: &h.by,
        channel: h.source,
    };
    let kind = if clear {
        "row.handled_cleared"
    } else {
        "row.handled"
    };
    let own = json!({"by": h.by, "source": h.source});
    let change = finish_human(conn, now, &board.id, &row_id, kind, by, own).await?;
    Ok(Ok(change))
}
