//! What every board write records with its change, on either engine: the
//! board's lock, the version bump, auto-archive of a settled board, and
//! the events (a row event's payload, a board event's).
//!
//! Event payload text is the one-call's (`call_one.rs`, `call_many.rs`)
//! byte for byte: a row event is its own members (compact, keys sorted,
//! as serde writes them) followed by the members every row event carries,
//! in the order SQLite's `json_set` appends them; an auto-archive's
//! progress is written as SQLite's `printf('%!.17g')` writes it ([`g17`]).

use serde_json::{Value, json};

use super::load::{load_board, resolve_board};
use super::{Board, Row, Steps};
use crate::store::Channel;
use crate::store::engine::{Stmt, Tx};
use crate::store::events::check_depth;
use crate::store::{Error, Result};

/// Check a row UPDATE whose `revision = $N` guard the caller already
/// checked under the same lock (SQLite's write turn, PostgreSQL's board
/// lock): it cannot lose, only confirm, so anything but one row written is
/// a corrupt database or a bug.
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

/// Resolve the board named and lock it until the write ends. Why: every
/// board write bumps the board's version, so on PostgreSQL each takes
/// this lock first and the writes on one board run one at a time, as
/// SQLite's write turn runs them (there the read locks nothing: the turn
/// already holds the database): what a write reads after it is what it
/// writes on.
pub(super) async fn open_board(
    tx: &mut Tx<'_>,
    board: &str,
    project: Option<&str>,
) -> Steps<String> {
    let id = resolve_board(tx, board, project).await?;
    let lock = Stmt::spelled(
        "SELECT id FROM boards WHERE id = $1",
        "SELECT id FROM boards WHERE id = $1 FOR UPDATE",
    )
    .text(id.as_str());
    tx.rows::<(String,)>(&lock).await?;
    Ok(id)
}

/// Record that the board changed: bump its version and read it back.
/// Called inside the write that already decided the change.
pub(super) async fn bump_version(tx: &mut Tx<'_>, now: i64, board_id: &str) -> Result<Board> {
    let bump =
        Stmt::new("UPDATE boards SET revision = revision + 1, updated_at = $1 WHERE id = $2")
            .int(now)
            .text(board_id);
    tx.change(&bump).await?;
    load_board(tx, board_id).await
}

/// After an agent's write: auto-archive the board at 100 % or reactivate an
/// archived board that is no longer complete, appending `board.archived` /
/// `board.reactivated`. A board archived by hand is reactivated too: the
/// agent wrote to it again. Empty and all-`na` boards never complete.
pub(super) async fn settle(tx: &mut Tx<'_>, now: i64, board: Board, who: Who<'_>) -> Result<()> {
    let complete = board.progress.complete();
    let kind = if complete && board.archived_at.is_none() {
        // Why guarded: only an active board auto-archives, and not while a
        // person's response on one of its rows is still open (undelivered,
        // or delivered and not yet resolved): archiving would hide it.
        let archive = Stmt::new(
            "UPDATE boards SET archived_at = $1, auto_archived = 1
             WHERE id = $2 AND archived_at IS NULL AND NOT EXISTS (
                 SELECT 1 FROM board_rows r WHERE r.board_id = boards.id AND r.response_open = 1
                   AND (r.annotation IS NOT NULL OR r.handled_at IS NOT NULL))",
        )
        .int(now)
        .text(board.id.as_str());
        if tx.change(&archive).await? == 0 {
            return Ok(());
        }
        "board.archived"
    } else if !complete && board.archived_at.is_some() {
        // Why guarded: reactivate only what is archived now.
        let reactivate = Stmt::new(
            "UPDATE boards SET archived_at = NULL, auto_archived = 0
             WHERE id = $1 AND archived_at IS NOT NULL",
        )
        .text(board.id.as_str());
        tx.change(&reactivate).await?;
        "board.reactivated"
    } else {
        return Ok(());
    };
    let progress = board.progress.percent.map_or("null".to_string(), g17);
    let text = format!(
        "{{\"auto\":true,\"board_version\":{},\"progress\":{progress},\"title\":{}}}",
        board.board_version,
        json!(board.title)
    );
    append(tx, now, kind, ("board", &board.id), &board, who, &text).await
}

/// Append an event about `board` with `payload` (a JSON object).
pub(super) async fn board_event(
    tx: &mut Tx<'_>,
    now: i64,
    kind: &str,
    board: &Board,
    who: Who<'_>,
    payload: &Value,
) -> Result<()> {
    check_depth(payload)?;
    let text = payload.to_string();
    append(tx, now, kind, ("board", &board.id), board, who, &text).await
}

/// Append an event about `row` of `board`: `own` (a JSON object), then the
/// members every row event carries.
pub(super) async fn row_event(
    tx: &mut Tx<'_>,
    now: i64,
    kind: &str,
    board: &Board,
    row: &Row,
    who: Who<'_>,
    own: &Value,
) -> Result<()> {
    check_depth(own)?;
    let text = row_payload(own, board, row);
    append(tx, now, kind, ("row", &row.id), board, who, &text).await
}

/// Append an event about `entity` (kind and id) filed under `board`'s
/// project and session, its payload text given (see the module docs).
/// Called after the write's other statements: PostgreSQL's event counter
/// stays locked from the first append until commit.
async fn append(
    tx: &mut Tx<'_>,
    now: i64,
    kind: &str,
    (entity_kind, entity_id): (&str, &str),
    board: &Board,
    who: Who<'_>,
    payload: &str,
) -> Result<()> {
    let event = Stmt::new(
        "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .int(now)
    .text(kind)
    .text(entity_kind)
    .text(entity_id)
    .text(who.actor)
    .text(who.channel.as_str())
    .text(board.project.as_str())
    .text(board.session.as_str())
    .text(payload);
    tx.change(&event).await?;
    Ok(())
}

/// A row event's payload text, as SQLite's `json_set(own, '$.board_id', …)`
/// writes it: `own`'s members, then the ones it lacks, in this order.
fn row_payload(own: &Value, board: &Board, row: &Row) -> String {
    let mut text = own.to_string();
    text.pop(); // its closing brace
    let members = [
        ("board_id", json!(board.id)),
        ("board_title", json!(board.title)),
        ("board_version", json!(board.board_version)),
        ("label", json!(row.label)),
        ("status", json!(row.status)),
        ("revision", json!(row.revision)),
        ("action_version", json!(row.action_version)),
    ];
    for (key, value) in members {
        if own.get(key).is_some() {
            continue;
        }
        if text.len() > 1 {
            text.push(',');
        }
        text.push_str(&format!("{}:{value}", json!(key)));
    }
    text.push('}');
    text
}

/// `x` as SQLite's `printf('%!.17g', x)` writes it, for the numbers an
/// auto-archive's progress can be (0 to 100): 17 significant digits,
/// correctly rounded, trailing zeros dropped but one digit kept after the
/// point. Outside that range, serde's spelling.
fn g17(x: f64) -> String {
    let sci = format!("{x:.16e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return json!(x).to_string();
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return json!(x).to_string();
    };
    if !(-4..17).contains(&exp) || x.is_sign_negative() {
        return json!(x).to_string();
    }
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let (int, frac) = if exp >= 0 {
        let cut = (exp as usize + 1).min(digits.len());
        (digits[..cut].to_string(), digits[cut..].to_string())
    } else {
        ("0".to_string(), "0".repeat((-exp - 1) as usize) + &digits)
    };
    let frac = frac.trim_end_matches('0');
    let frac = if frac.is_empty() { "0" } else { frac };
    format!("{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::g17;

    #[test]
    fn progress_is_spelled_as_sqlite_printf_spells_it() {
        for (x, text) in [
            (0.0, "0.0"),
            (100.0, "100.0"),
            (50.0, "50.0"),
            (87.5, "87.5"),
            (200.0 / 3.0, "66.666666666666671"),
            (100.0 / 3.0, "33.333333333333336"),
            (0.1, "0.10000000000000001"),
        ] {
            assert_eq!(g17(x), text, "{x}");
        }
    }
}
