//! What every board write records with its change: the row payload of its
//! event, the version bump, auto-archive of a settled board, the row event.

use serde_json::Value;
use sqlx::SqliteConnection;

use super::load::load_board;
use super::{Board, Row};
use crate::store::Channel;
use crate::store::{Error, Result};

/// Event payload common to row events.
pub(super) fn row_payload(board: &Board, row: &Row, extra: Value) -> Value {
    let mut v = serde_json::json!({
        "board_id": board.id,
        "board_title": board.title,
        "board_version": board.board_version,
        "label": row.label,
        "status": row.status,
        "revision": row.revision,
        "action_version": row.action_version,
    });
    if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), extra) {
        obj.extend(extra);
    }
    v
}

/// Check a row UPDATE whose `revision = ?` guard the caller already
/// checked under the same write lock: it cannot lose, only confirm, so
/// anything but one row written is a corrupt database or a bug.
pub(super) fn confirm_one(written: u64, row_id: &str) -> Result<()> {
    if written != 1 {
        return Err(Error::Corrupt(format!(
            "row {row_id} changed under a held write lock"
        )));
    }
    Ok(())
}

/// Who caused a change and through which door, for events.
#[derive(Debug, Clone, Copy)]
pub(super) struct Who<'a> {
    pub(super) actor: &'a str,
    pub(super) channel: Channel,
}

/// The version bump every board write records, and the move of a settled
/// board into or out of the archive, defined on `$conn` (one engine's
/// connection type) in the module that invokes it, beside its
/// `load_board`. Why a macro: the two connection types differ, the
/// statements (`$N` placeholders, which SQLite takes too) and the Rust
/// around them do not. The event that follows a move is each engine's.
macro_rules! board_records {
    ($conn:ty) => {
        /// Record that the board changed: bump its version and read it
        /// back. Called inside the transaction that already decided the
        /// write.
        pub(super) async fn bump_version(
            conn: &mut $conn,
            now: i64,
            board_id: &str,
        ) -> $crate::store::Result<$crate::store::boards::Board> {
            sqlx::query("UPDATE boards SET revision = revision + 1, updated_at = $1 WHERE id = $2")
                .bind(now)
                .bind(board_id)
                .execute(&mut *conn)
                .await?;
            load_board(conn, board_id).await
        }

        /// After an agent's write: auto-archive `board` at 100 % or
        /// reactivate it when archived and no longer complete. The kind of
        /// the event to append when it moved (`board.archived`,
        /// `board.reactivated`), else `None`.
        async fn settle_move(
            conn: &mut $conn,
            now: i64,
            board: &$crate::store::boards::Board,
        ) -> $crate::store::Result<Option<&'static str>> {
            let complete = board.progress.complete();
            if complete && board.archived_at.is_none() {
                // Why guarded: only an active board auto-archives, and not
                // while a person's response on one of its rows is still open
                // (undelivered, or delivered and not yet resolved):
                // archiving would hide it.
                let archived = sqlx::query(
                    "UPDATE boards SET archived_at = $1, auto_archived = 1
                     WHERE id = $2 AND archived_at IS NULL AND NOT EXISTS (
                         SELECT 1 FROM board_rows r WHERE r.board_id = boards.id AND r.response_open = 1
                           AND (r.annotation IS NOT NULL OR r.handled_at IS NOT NULL))",
                )
                .bind(now)
                .bind(&board.id)
                .execute(&mut *conn)
                .await?;
                Ok((archived.rows_affected() != 0).then_some("board.archived"))
            } else if !complete && board.archived_at.is_some() {
                // Why guarded: reactivate only what is archived now.
                sqlx::query(
                    "UPDATE boards SET archived_at = NULL, auto_archived = 0
                     WHERE id = $1 AND archived_at IS NOT NULL",
                )
                .bind(&board.id)
                .execute(&mut *conn)
                .await?;
                Ok(Some("board.reactivated"))
            } else {
                Ok(None)
            }
        }
    };
}
pub(crate) use board_records;

board_records!(SqliteConnection);

/// After an agent's write: auto-archive the board at 100 % or reactivate an
/// archived board that is no longer complete, appending `board.archived` /
/// `board.reactivated`. A board archived by hand is reactivated too: the
/// agent wrote to it again. Empty and all-`na` boards never complete.
pub(super) async fn settle(
    conn: &mut SqliteConnection,
    now: i64,
    board: Board,
    who: Who<'_>,
) -> Result<Board> {
    let Some(kind) = settle_move(conn, now, &board).await? else {
        return Ok(board);
    };
    let payload = serde_json::json!({
        "title": board.title,
        "board_version": board.board_version,
        "auto": true,
        "progress": board.progress.percent,
    });
    board_event(conn, now, kind, &board, who, payload).await?;
    load_board(conn, &board.id).await
}

/// Append an event about `board`.
pub(super) async fn board_event(
    conn: &mut SqliteConnection,
    now: i64,
    kind: &str,
    board: &Board,
    who: Who<'_>,
    payload: Value,
) -> Result<i64> {
    event(conn, now, kind, ("board", &board.id), board, who, payload).await
}

/// Append an event about `row` of `board`.
pub(super) async fn row_event(
    conn: &mut SqliteConnection,
    now: i64,
    kind: &str,
    board: &Board,
    row: &Row,
    who: Who<'_>,
    extra: Value,
) -> Result<i64> {
    let payload = row_payload(board, row, extra);
    event(conn, now, kind, ("row", &row.id), board, who, payload).await
}

/// Append an event about `entity` (kind and id), filed under `board`'s
/// project and session.
async fn event(
    conn: &mut SqliteConnection,
    now: i64,
    kind: &str,
    (entity_kind, entity_id): (&str, &str),
    board: &Board,
    who: Who<'_>,
    payload: Value,
) -> Result<i64> {
    crate::store::events::append(
        conn,
        now,
        &crate::store::NewEvent {
            kind,
            entity_kind,
            entity_id,
            actor: who.actor,
            channel: who.channel,
            project: &board.project,
            session: &board.session,
            payload,
        },
    )
    .await
}
