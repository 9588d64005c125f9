//! Reading boards and rows inside a transaction, on either engine:
//! decoding rows, loading a board with its rows, and resolving full or
//! short ids, titles and labels (the order the one-call's `call::BOARD_REF`
//! and `call::row_ref` resolve them in).

use crate::store::cols::{Cols, rows_by};
use std::sync::LazyLock;

use super::validate::parse_opt;
use super::{Board, BoardFull, Progress, Response, Row, Steps, not_found};
use crate::store::engine::{Stmt, Tx};
use crate::store::{Error, Result};

/// A stored row, of either engine (their columns are text and 64-bit
/// integers on both).
pub(super) fn row_from(r: &impl Cols) -> Result<Row> {
    let corrupt = |e: Error| Error::Corrupt(e.to_string());
    let options: String = r.try_get("options")?;
    let history: String = r.try_get("history")?;
    Ok(Row {
        id: r.try_get("id")?,
        board_id: r.try_get("board_id")?,
        label: r.try_get("label")?,
        status: r.try_get::<String>("status")?.parse().map_err(corrupt)?,
        note: r.try_get("note")?,
        next_step: r.try_get("next_step")?,
        owner: r.try_get::<String>("owner")?.parse().map_err(corrupt)?,
        impact: r.try_get("impact")?,
        options: serde_json::from_str(&options)
            .map_err(|e| Error::Corrupt(format!("row options: {e}")))?,
        context: r.try_get("context")?,
        outcome: r.try_get("outcome")?,
        outcome_at: r.try_get("outcome_at")?,
        revision: r.try_get("revision")?,
        action_version: r.try_get("action_version")?,
        action_started_at: r.try_get("action_started_at")?,
        history: serde_json::from_str(&history)
            .map_err(|e| Error::Corrupt(format!("row history: {e}")))?,
        response: Response {
            annotation: r.try_get("annotation")?,
            annotation_kind: parse_opt(r.try_get("annotation_kind")?)?,
            annotation_source: parse_opt(r.try_get("annotation_source")?)?,
            annotated_by: r.try_get("annotated_by")?,
            annotated_at: r.try_get("annotated_at")?,
            annotation_seen_at: r.try_get("annotation_seen_at")?,
            handled_at: r.try_get("handled_at")?,
            handled_by: r.try_get("handled_by")?,
        },
        handled_seen_at: r.try_get("handled_seen_at")?,
        position: r.try_get("position")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// The board columns plus progress aggregated over its rows.
pub(super) const BOARD_SELECT: &str = "SELECT b.*,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id) AS n_rows,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id AND r.status <> 'na') AS n_counted,
    (SELECT COALESCE(SUM(CASE r.status WHEN 'done' THEN 2 WHEN 'partial' THEN 1 ELSE 0 END), 0)
       FROM board_rows r WHERE r.board_id = b.id) AS halves,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id AND r.status = 'blocked') AS n_blocked
  FROM boards b";

/// A stored board with its progress columns ([`BOARD_SELECT`]), of
/// either engine.
pub(super) fn board_from(r: &impl Cols) -> Result<Board> {
    let rows: i64 = r.try_get("n_rows")?;
    let counted: i64 = r.try_get("n_counted")?;
    let halves: i64 = r.try_get("halves")?;
    let score = halves as f64 / 2.0;
    Ok(Board {
        id: r.try_get("id")?,
        project: r.try_get("project")?,
        title: r.try_get("title")?,
        board_version: r.try_get("revision")?,
        archived_at: r.try_get("archived_at")?,
        auto_archived: r.try_get::<i64>("auto_archived")? != 0,
        agent: r.try_get("agent")?,
        session: r.try_get("session")?,
        progress: Progress {
            rows,
            counted,
            score,
            blocked: r.try_get("n_blocked")?,
            percent: (counted > 0).then(|| score * 100.0 / counted as f64),
        },
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

// A stored row, on either engine.
rows_by!(Row, row_from);

// A stored board with its progress columns ([`BOARD_SELECT`]), on either
// engine.
rows_by!(Board, board_from);

/// One board by id, with its progress.
static BOARD_BY_ID: LazyLock<String> = LazyLock::new(|| format!("{BOARD_SELECT} WHERE b.id = $1"));

/// The board `id` (an id this transaction resolved or wrote, so a
/// missing board is a corrupt database, not a refusal).
pub(super) async fn load_board(tx: &mut Tx<'_>, id: &str) -> Result<Board> {
    tx.row(&Stmt::new(BOARD_BY_ID.as_str()).text(id))
        .await?
        .ok_or_else(|| Error::Corrupt(format!("board {id} vanished")))
}

/// The rows of board `board_id` in board order.
pub(super) fn rows_of(board_id: &str) -> Stmt<'_> {
    // `COLLATE "C"`: SQLite's byte order for ids whatever PostgreSQL's collation.
    Stmt::spelled(
        "SELECT * FROM board_rows WHERE board_id = $1 ORDER BY position, id",
        "SELECT * FROM board_rows WHERE board_id = $1 ORDER BY position, id COLLATE \"C\"",
    )
    .text(board_id)
}

/// The rows of board `board_id` in board order.
pub(super) async fn load_rows(tx: &mut Tx<'_>, board_id: &str) -> Result<Vec<Row>> {
    tx.rows(&rows_of(board_id)).await
}

/// The board `id` with its rows (missing: corrupt, as for [`load_board`]).
pub(super) async fn load_full(tx: &mut Tx<'_>, id: &str) -> Result<BoardFull> {
    let board = load_board(tx, id).await?;
    let rows = load_rows(tx, id).await?;
    Ok(BoardFull { board, rows })
}

/// The row `row_id` (missing: corrupt; rows are never deleted).
pub(super) async fn load_row(tx: &mut Tx<'_>, row_id: &str) -> Result<Row> {
    tx.row(&Stmt::new("SELECT * FROM board_rows WHERE id = $1").text(row_id))
        .await?
        .ok_or_else(|| Error::Corrupt(format!("row {row_id} vanished")))
}

/// The ids `s` yields.
async fn ids(tx: &mut Tx<'_>, s: Stmt<'_>) -> Result<Vec<String>> {
    Ok(tx
        .rows::<(String,)>(&s)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect())
}

/// Find a board by full id, by title in `project`, by a unique id
/// suffix (the short id), or by a title unique across projects.
pub(super) async fn resolve_board(
    tx: &mut Tx<'_>,
    reference: &str,
    project: Option<&str>,
) -> Steps<String> {
    let reference = reference.trim();
    if reference.is_empty() {
        return Err(Error::Invalid("no board given: pass its id, short id or title".into()).into());
    }
    let by_id = Stmt::new("SELECT id FROM boards WHERE id = $1").text(reference);
    if let Some((id,)) = tx.row::<(String,)>(&by_id).await? {
        return Ok(id);
    }
    if let Some(p) = project {
        let by_title = Stmt::new("SELECT id FROM boards WHERE project = $1 AND title = $2")
            .text(p)
            .text(reference);
        if let Some((id,)) = tx.row::<(String,)>(&by_title).await? {
            return Ok(id);
        }
    }
    let lower = reference.to_ascii_lowercase();
    let by_suffix = if is_short_id(reference) {
        let like = Stmt::spelled(
            "SELECT id FROM boards WHERE id LIKE '%' || $1 AND ($2 IS NULL OR project = $2)",
            "SELECT id FROM boards WHERE id LIKE '%' || $1 AND ($2::TEXT IS NULL OR project = $2)",
        )
        .text(lower.as_str())
        .text(project);
        ids(tx, like).await?
    } else {
        Vec::new()
    };
    let found = if by_suffix.is_empty() && project.is_none() {
        ids(
            tx,
            Stmt::new("SELECT id FROM boards WHERE title = $1").text(reference),
        )
        .await?
    } else {
        by_suffix
    };
    let missing = match project {
        Some(p) => format!("board `{reference}` in project `{p}`"),
        None => format!("board `{reference}`"),
    };
    single(found, missing, |n| {
        format!("`{reference}` matches {n} boards: use the full id, or the title with --project")
    })
}

/// Find a row of `board_id` by label, else by full id or unique id suffix.
pub(super) async fn resolve_row(tx: &mut Tx<'_>, board_id: &str, reference: &str) -> Steps<String> {
    let by_label = Stmt::new("SELECT id FROM board_rows WHERE board_id = $1 AND label = $2")
        .text(board_id)
        .text(reference);
    if let Some((id,)) = tx.row::<(String,)>(&by_label).await? {
        return Ok(id);
    }
    let lower = reference.to_ascii_lowercase();
    let found = if is_short_id(reference) {
        let like = Stmt::new("SELECT id FROM board_rows WHERE board_id = $1 AND id LIKE '%' || $2")
            .text(board_id)
            .text(lower.as_str());
        ids(tx, like).await?
    } else {
        Vec::new()
    };
    single(found, format!("row `{reference}`"), |n| {
        format!("`{reference}` matches {n} rows: use the label or the full id")
    })
}

/// Whether `s` can be a short id: at least four hex digits (the end of a full id).
pub(super) fn is_short_id(s: &str) -> bool {
    s.len() >= 4 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The one id a lookup found; none is a refusal naming `missing`, more
/// than one an error (`ambiguous` says how to be exact).
fn single(
    found: Vec<String>,
    missing: String,
    ambiguous: impl FnOnce(usize) -> String,
) -> Steps<String> {
    let n = found.len();
    let mut found = found.into_iter();
    match (found.next(), n) {
        (None, _) => Err(not_found(missing).into()),
        (Some(id), 1) => Ok(id),
        (Some(_), n) => Err(Error::Ambiguous(ambiguous(n)).into()),
    }
}
