//! Boards on PostgreSQL: loading and resolving boards and rows, the reads
//! (lists, pending rows, chat's lookups), delivery stamps, and what every
//! board write records (version bump, events, auto-archive). The writes
//! themselves are in `board_writes.rs`.
//!
//! The statements are SQLite's (`store/boards/`) in PostgreSQL's spelling:
//! `$N` placeholders, `IS NOT DISTINCT FROM` for SQLite's `IS`, a typed
//! `$N::TEXT IS NULL` for an optional filter, `COLLATE "C"` where an id
//! breaks a tie (SQLite's byte order whatever the database's collation).
//!
//! Event payload text is SQLite's byte for byte: a row event is its own
//! members (compact, keys sorted, as serde writes them) followed by the
//! members every row event carries, in the order SQLite's `json_set`
//! appends them (`store/boards/call_one.rs`); an auto-archive's progress is
//! written as SQLite's `printf('%!.17g')` writes it ([`g17`]).

use serde_json::{Value, json};
use sqlx::PgConnection;

use super::Pg;

/// The `?` of a refusal, as in `store/boards.rs`.
macro_rules! decided {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(refusal) => return Ok(Err(refusal)),
        }
    };
}
use crate::store::boards::{
    BOARD_SELECT, Board, BoardFull, Decided, PendingRow, Row, board_from, board_loads,
    board_records, delivery_stamps, pending_from,
};
use crate::store::events::check_depth;
use crate::store::{Channel, Result, Store};

board_loads!(
    PgConnection,
    // `COLLATE "C"`: SQLite's byte order for ids whatever the database's collation.
    rows: "SELECT * FROM board_rows WHERE board_id = $1 ORDER BY position, id COLLATE \"C\"",
    board_by_suffix: "SELECT id FROM boards WHERE id LIKE '%' || $1 AND ($2::TEXT IS NULL OR project = $2)",
);

/// Lock the board `id` until the transaction ends. Why: every board write
/// bumps the board's version, so each takes this lock first and the
/// writes on one board run one at a time, as SQLite's write lock runs
/// them: what a write reads after it is what it writes on.
pub(super) async fn lock_board(conn: &mut PgConnection, id: &str) -> Result<()> {
    sqlx::query("SELECT id FROM boards WHERE id = $1 FOR UPDATE")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Resolve the board named and lock it (see [`lock_board`]).
pub(super) async fn open_board(
    conn: &mut PgConnection,
    board: &str,
    project: Option<&str>,
) -> Result<Decided<String>> {
    let id = decided!(resolve_board(conn, board, project).await?);
    lock_board(conn, &id).await?;
    Ok(Ok(id))
}

/// Who caused a change and through which door, for events.
#[derive(Clone, Copy, Debug)]
pub(super) struct By<'a> {
    pub(super) actor: &'a str,
    pub(super) channel: Channel,
}

/// Append an event about `entity` filed under `board`, its payload text
/// given (see the module docs).
async fn append(
    conn: &mut PgConnection,
    now: i64,
    kind: &str,
    (entity_kind, entity_id): (&str, &str),
    board: &Board,
    by: By<'_>,
    payload: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(now)
    .bind(kind)
    .bind(entity_kind)
    .bind(entity_id)
    .bind(by.actor)
    .bind(by.channel.as_str())
    .bind(&board.project)
    .bind(&board.session)
    .bind(payload)
    .execute(conn)
    .await?;
    Ok(())
}

/// Append an event about `board` with `payload` (a JSON object).
pub(super) async fn board_event(
    conn: &mut PgConnection,
    now: i64,
    kind: &str,
    board: &Board,
    by: By<'_>,
    payload: &Value,
) -> Result<()> {
    check_depth(payload)?;
    let text = payload.to_string();
    append(conn, now, kind, ("board", &board.id), board, by, &text).await
}

/// Append an event about `row` of `board`: `own` (a JSON object), then the
/// members every row event carries.
pub(super) async fn row_event(
    conn: &mut PgConnection,
    now: i64,
    kind: &str,
    board: &Board,
    row: &Row,
    by: By<'_>,
    own: &Value,
) -> Result<()> {
    check_depth(own)?;
    let text = row_payload(own, board, row);
    append(conn, now, kind, ("row", &row.id), board, by, &text).await
}

/// A row event's payload text, as SQLite's `json_set(own, '$.board_id', …)`
/// writes it: `own`'s members, then the ones it lacks, in this order.
pub(crate) fn row_payload(own: &Value, board: &Board, row: &Row) -> String {
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
pub(crate) fn g17(x: f64) -> String {
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

board_records!(PgConnection);

/// After an agent's write: auto-archive at 100 % or reactivate, as
/// `store/boards/record.rs` does, with its event.
pub(super) async fn settle(
    conn: &mut PgConnection,
    now: i64,
    board: Board,
    by: By<'_>,
) -> Result<()> {
    let Some(kind) = settle_move(conn, now, &board).await? else {
        return Ok(());
    };
    let progress = board.progress.percent.map_or("null".to_string(), g17);
    let text = format!(
        "{{\"auto\":true,\"board_version\":{},\"progress\":{progress},\"title\":{}}}",
        board.board_version,
        json!(board.title)
    );
    append(conn, now, kind, ("board", &board.id), &board, by, &text).await
}

/// Boards of `project` (all when `None`), active only unless `archived`,
/// newest first.
pub(crate) async fn list(pg: &Pg, project: Option<&str>, archived: bool) -> Result<Vec<Board>> {
    let sql = format!(
        "{BOARD_SELECT} WHERE ($1::TEXT IS NULL OR b.project = $1) AND ($2 OR b.archived_at IS NULL)
         ORDER BY b.updated_at DESC, b.id COLLATE \"C\""
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(project)
        .bind(archived)
        .fetch_all(pg.pool())
        .await?;
    rows.iter().map(board_from).collect()
}

/// One board with its rows.
pub(crate) async fn get(pg: &Pg, board: &str, project: Option<&str>) -> Result<Decided<BoardFull>> {
    let mut conn = pg.pool().acquire().await?;
    let id = decided!(resolve_board(&mut conn, board, project).await?);
    Ok(Ok(load_full(&mut conn, &id).await?))
}

/// Rows of `project` / `session` passing `filter`, in `order` (SQL
/// fragments of `store/boards/read.rs`, never user input).
pub(crate) async fn pending_select(
    pg: &Pg,
    filter: &str,
    order: &str,
    project: Option<&str>,
    session: Option<&str>,
) -> Result<Vec<PendingRow>> {
    let order = order.replace("r.id", "r.id COLLATE \"C\"");
    let sql = format!(
        "SELECT r.*, b.title AS board_title, b.revision AS board_version, b.project AS board_project,
                b.session AS board_session, b.agent AS board_agent
         FROM board_rows r JOIN boards b ON b.id = r.board_id
         WHERE ($1::TEXT IS NULL OR b.project = $1) AND ($2::TEXT IS NULL OR b.session = $2)
           AND {filter}
         ORDER BY {order}"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(project)
        .bind(session)
        .fetch_all(pg.pool())
        .await?;
    rows.iter().map(pending_from).collect()
}

/// Stamp what `rows` hand over as delivered (each stamp pinned to the
/// exact response read), then append their `row.delivered` events (last:
/// see `write.rs`). Per row, whether everything read was still current.
pub(crate) async fn mark_delivered(
    s: &Store,
    pg: &Pg,
    rows: Vec<PendingRow>,
    reader: String,
) -> Result<Vec<bool>> {
    let input = std::sync::Arc::new((rows, reader));
    s.pg_write(pg, input, |conn, input, now| {
        Box::pin(async move {
            let (rows, reader) = &*input;
            let mut current = Vec::with_capacity(rows.len());
            let mut stamped = Vec::new();
            for p in rows {
                let (ok, marked) = stamp_delivered(conn, now, &p.row).await?;
                if !marked.is_empty() {
                    stamped.push((p, marked));
                }
                current.push(ok);
            }
            for (p, marked) in stamped {
                let r = &p.row;
                let payload = json!({
                    "board_id": p.board_id,
                    "label": r.label,
                    "action_version": r.action_version,
                    "delivered": marked,
                });
                sqlx::query(
                    "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
                     VALUES ($1, 'row.delivered', 'row', $2, $3, $4, $5, $6, $7)",
                )
                .bind(now)
                .bind(&r.id)
                .bind(reader)
                .bind(Channel::Agent.as_str())
                .bind(&p.project)
                .bind(&p.session)
                .bind(payload.to_string())
                .execute(&mut *conn)
                .await?;
            }
            Ok(current)
        })
    })
    .await
}

// One row's delivery stamps (see `store/boards/read.rs`).
delivery_stamps!(
    PgConnection,
    annotation: "UPDATE board_rows SET annotation_seen_at = $1
         WHERE id = $2 AND annotation_seen_at IS NULL
           AND annotation IS NOT DISTINCT FROM $3 AND annotated_at IS NOT DISTINCT FROM $4",
    handled: "UPDATE board_rows SET handled_seen_at = $1
         WHERE id = $2 AND handled_seen_at IS NULL AND handled_at IS NOT DISTINCT FROM $3",
);

/// The board id and label of the row `id`.
pub(crate) async fn row_locator(pg: &Pg, id: &str) -> Result<Option<(String, String)>> {
    Ok(
        sqlx::query_as("SELECT board_id, label FROM board_rows WHERE id = $1")
            .bind(id)
            .fetch_optional(pg.pool())
            .await?,
    )
}

/// Up to two row ids equal to `s` or ending with it.
pub(crate) async fn row_ids_like(pg: &Pg, s: &str) -> Result<Vec<String>> {
    Ok(
        sqlx::query_scalar("SELECT id FROM board_rows WHERE id = $1 OR id LIKE '%' || $1 LIMIT 2")
            .bind(s)
            .fetch_all(pg.pool())
            .await?,
    )
}

/// Ids of blocked rows on active boards, newest change first.
pub(crate) async fn blocked_row_ids(pg: &Pg) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT r.id FROM board_rows r JOIN boards b ON b.id = r.board_id
         WHERE r.status = 'blocked' AND b.archived_at IS NULL ORDER BY r.updated_at DESC LIMIT 200",
    )
    .fetch_all(pg.pool())
    .await?)
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
