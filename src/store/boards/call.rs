//! The one-call shape of a board write: what every winning
//! board write sends to SQLite as a single multi-statement call, and the
//! pieces of SQL its writers share.
//!
//! A call is `SAVEPOINT; <decide>; <record>…; <read back>; RELEASE`. The
//! deciding statement carries every guard of the write (the board and row
//! resolved by subquery, the CAS on `board_version` and `revision`, the
//! refusal checks) and, when it wins, bumps the board and stamps it with a
//! token fresh for this call (`boards.write_token`). Every later statement
//! acts only on the board carrying that token: the events (built from the
//! rows as they stand before the row writes, with the values those writes
//! will leave), the history, the row writes, auto-archive and the
//! read-back. A call whose deciding statement matched nothing writes
//! nothing and returns no row; the writer then runs its older transaction,
//! which explains the refusal with the same reads and words as before.
//!
//! Parameters are numbered (`?NNN`), shared by all statements of a call:
//! `?1`–`?4` the board named, `?5`–`?7` the row named, `?8` the time,
//! `?9` the token, `?10` the actor, `?11` the channel; each writer numbers
//! its own from `?12`. Every statement names all of them (see [`args`]).

use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Sqlite, query::Query};

use super::load::{BOARD_SELECT, board_from, is_short_id, row_from};
use super::{BoardFull, Who};
use crate::store::writer::Turn;
use crate::store::{Error, Result, new_id};

/// The board named by reference (`?1`, trimmed) in project `?2`: by full
/// id, by title in the project, by a unique id suffix (`?3`: the reference
/// can be one, `?4`: lower-cased), or by a title unique across projects —
/// the order `resolve_board` tries. None found or several: NULL.
pub(super) const BOARD_REF: &str = "(SELECT COALESCE(
    (SELECT id FROM boards WHERE id = ?1),
    (SELECT id FROM boards WHERE ?2 IS NOT NULL AND project = ?2 AND title = ?1),
    (SELECT CASE WHEN COUNT(*) = 1 THEN MAX(id) END FROM boards
      WHERE ?3 AND id LIKE '%' || ?4 AND (?2 IS NULL OR project = ?2)),
    (SELECT CASE WHEN COUNT(*) = 1 THEN MAX(id) END FROM boards
      WHERE ?2 IS NULL AND title = ?1
        AND NOT (?3 AND EXISTS (SELECT 1 FROM boards WHERE id LIKE '%' || ?4)))))";

/// The board this call won (stamped with its token `?9`).
pub(super) const WON: &str = "(SELECT id FROM boards WHERE write_token = ?9)";

/// The row of board `board` (an SQL expression) named `?5`: by label, else
/// by a unique id suffix (`?6`: it can be one, `?7`: lower-cased) — the
/// order `resolve_row` tries. None found or several: NULL.
pub(super) fn row_ref(board: &str) -> String {
    "(SELECT COALESCE(
        (SELECT id FROM board_rows WHERE board_id = {B} AND label = ?5),
        (SELECT CASE WHEN COUNT(*) = 1 THEN MAX(id) END FROM board_rows
          WHERE ?6 AND board_id = {B} AND id LIKE '%' || ?7)))"
        .replace("{B}", board)
}

/// A common table expression naming every parameter `?1`–`?n`, which each
/// statement of a call starts with. Why: sqlx binds a statement's unnamed
/// slots (the numbers it skips) from a running count across the call's
/// statements, and stops binding once that count passes the arguments —
/// silently leaving later parameters NULL. A statement naming all of them
/// has no such slot.
pub(super) fn args(n: usize) -> String {
    let list: Vec<String> = (1..=n).map(|i| format!("?{i}")).collect();
    format!("args AS (SELECT {})", list.join(", "))
}

/// Whether every counted row of board `b` (an alias) is done and at least
/// one counts: progress 100 %.
const COMPLETE: &str = "(SELECT COUNT(*) > 0
      AND SUM(CASE r.status WHEN 'done' THEN 2 WHEN 'partial' THEN 1 ELSE 0 END) >= 2 * COUNT(*)
    FROM board_rows r WHERE r.board_id = {b}.id AND r.status <> 'na')";

/// Progress of board `b` in percent, as a JSON number exactly as serde
/// writes the `f64` the store computes (17 significant digits read back to
/// the same double), or NULL when no row counts.
const PERCENT: &str = "(SELECT CASE WHEN COUNT(*) > 0 THEN json(printf('%!.17g',
      (SUM(CASE r.status WHEN 'done' THEN 2 WHEN 'partial' THEN 1 ELSE 0 END) / 2.0) * 100.0 / COUNT(*)))
    END FROM board_rows r WHERE r.board_id = b.id AND r.status <> 'na')";

/// Append an event `kind` about the won board (alias `b`) with `payload`
/// (SQL over `b`), only when `only_if` holds.
pub(super) fn board_event(n: usize, kind: &str, payload: &str, only_if: &str) -> String {
    format!(
        "WITH {args} INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
         SELECT ?8, '{kind}', 'board', b.id, ?10, ?11, b.project, b.session, {payload}
         FROM boards b WHERE b.write_token = ?9 AND {only_if};",
        args = args(n)
    )
}

/// Settle auto-archive after an agent's write, as `record::settle` does:
/// archive a board its write completed (unless a person's response on it is
/// still open), reactivate an archived one it left incomplete, each with
/// its event.
pub(super) fn settle(n: usize) -> String {
    let payload = format!(
        "json_object('auto', json('true'), 'board_version', b.revision, 'progress', {PERCENT}, 'title', b.title)"
    );
    let args = args(n);
    let complete = COMPLETE.replace("{b}", "boards");
    format!(
        "WITH {args} UPDATE boards SET archived_at = ?8, auto_archived = 1
         WHERE write_token = ?9 AND archived_at IS NULL AND {complete}
           AND NOT EXISTS (SELECT 1 FROM board_rows r WHERE r.board_id = boards.id
                AND r.response_open = 1 AND (r.annotation IS NOT NULL OR r.handled_at IS NOT NULL));
         {archived}
         WITH {args} UPDATE boards SET archived_at = NULL, auto_archived = 0
         WHERE write_token = ?9 AND archived_at IS NOT NULL AND NOT {complete};
         {reactivated}",
        archived = board_event(n, "board.archived", &payload, "changes() = 1"),
        reactivated = board_event(n, "board.reactivated", &payload, "changes() = 1"),
    )
}

/// The won board and its rows, read back (the call's only result rows).
pub(super) fn read_back(n: usize) -> String {
    read_back_of(&args(n), WON)
}

/// Board `board` (an SQL expression over the common table expressions
/// `ctes`) and its rows, read back; nothing when it is NULL.
pub(super) fn read_back_of(ctes: &str, board: &str) -> String {
    format!(
        "WITH {ctes} {BOARD_SELECT} WHERE b.id = {board};
         WITH {ctes} SELECT * FROM board_rows WHERE board_id = {board} ORDER BY position, id;"
    )
}

/// The parameters every call shares (`?1`–`?11`).
pub(super) struct Head {
    board: String,
    project: Option<String>,
    row: String,
    token: String,
    actor: String,
    channel: &'static str,
}

impl Head {
    /// A call on board `board` (as its statements compare it: trimmed for
    /// [`BOARD_REF`]) of `project`, row `row` (label or id; empty when none
    /// is named), by `who`.
    pub(super) fn new(board: &str, project: Option<&str>, row: &str, who: Who) -> Head {
        Head {
            board: board.to_owned(),
            project: project.map(str::to_owned),
            row: row.to_owned(),
            token: new_id(),
            actor: who.actor.to_owned(),
            channel: who.channel.as_str(),
        }
    }

    /// Bind `?1`–`?11` to `q` (a query with no argument bound yet), the
    /// write's time `now` read under the write turn.
    pub(super) fn bind<'q>(
        &'q self,
        q: Query<'q, Sqlite, SqliteArguments>,
        now: i64,
    ) -> Query<'q, Sqlite, SqliteArguments> {
        q.bind(&self.board)
            .bind(self.project.as_deref())
            .bind(is_short_id(&self.board))
            .bind(self.board.to_ascii_lowercase())
            .bind(&self.row)
            .bind(is_short_id(&self.row))
            .bind(self.row.to_ascii_lowercase())
            .bind(now)
            .bind(&self.token)
            .bind(&self.actor)
            .bind(self.channel)
    }
}

/// Run a call whose last statements are [`read_back`]: the board as the
/// call left it, or `None` when its deciding statement matched nothing.
pub(super) async fn board_call(
    turn: &mut Turn,
    q: Query<'_, Sqlite, SqliteArguments>,
) -> Result<Option<BoardFull>> {
    let rows = turn.savepoint_call(q).await?;
    decode_full(&rows)
}

/// The result rows of [`read_back`]: the board, then its rows.
pub(super) fn decode_full(rows: &[SqliteRow]) -> Result<Option<BoardFull>> {
    let Some((board, rows)) = rows.split_first() else {
        return Ok(None);
    };
    let board = board_from(board)?;
    let rows = rows.iter().map(row_from).collect::<Result<Vec<_>>>()?;
    Ok(Some(BoardFull { board, rows }))
}

/// A row payload's JSON text, checked like every event payload.
pub(super) fn extra(v: &serde_json::Value) -> Result<String> {
    crate::store::events::check_depth(v)?;
    serde_json::to_string(v).map_err(|e| Error::Invalid(format!("event payload: {e}")))
}
