//! Reading boards and rows inside a transaction: decoding rows, loading a
//! board with its rows, and resolving full or short ids, titles and labels.

use sqlx::SqliteConnection;

use super::validate::parse_opt;
use super::{Board, Decided, Progress, Response, Row, not_found};
use crate::store::{Error, Result, Store, WriteTx};

/// A stored row, of either engine (their columns are text and 64-bit
/// integers on both).
pub(crate) fn row_from<'r, R>(r: &'r R) -> Result<Row>
where
    R: sqlx::Row,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let corrupt = |e: Error| Error::Corrupt(e.to_string());
    let options: String = r.try_get("options")?;
    let history: String = r.try_get("history")?;
    Ok(Row {
        id: r.try_get("id")?,
        board_id: r.try_get("board_id")?,
        label: r.try_get("label")?,
        status: r.try_get::<String, _>("status")?.parse().map_err(corrupt)?,
        note: r.try_get("note")?,
        next_step: r.try_get("next_step")?,
        owner: r.try_get::<String, _>("owner")?.parse().map_err(corrupt)?,
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
pub(crate) const BOARD_SELECT: &str = "SELECT b.*,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id) AS n_rows,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id AND r.status <> 'na') AS n_counted,
    (SELECT COALESCE(SUM(CASE r.status WHEN 'done' THEN 2 WHEN 'partial' THEN 1 ELSE 0 END), 0)
       FROM board_rows r WHERE r.board_id = b.id) AS halves,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id AND r.status = 'blocked') AS n_blocked
  FROM boards b";

/// A stored board with its progress columns ([`BOARD_SELECT`]), of
/// either engine.
pub(crate) fn board_from<'r, R>(r: &'r R) -> Result<Board>
where
    R: sqlx::Row,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
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
        auto_archived: r.try_get::<i64, _>("auto_archived")? != 0,
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

/// The loads and the id resolutions of boards and rows, on `$conn` (one
/// engine's connection type), defined in the module that invokes it.
/// Why a macro: the two connection types differ, the Rust around the
/// statements does not, and most statement texts are the same on both
/// engines (`$N` placeholders, which SQLite takes too). The two that are
/// not come in: `rows` (the rows of a board in board order: PostgreSQL
/// orders ids with `COLLATE "C"`, SQLite's byte order) and
/// `board_by_suffix` (`$1` an id suffix, `$2` an optional project).
macro_rules! board_loads {
    ($conn:ty, rows: $rows:expr, board_by_suffix: $by_suffix:expr $(,)?) => {
        /// The board `id` (an id this transaction resolved or wrote, so a
        /// missing board is a corrupt database, not a refusal).
        pub(super) async fn load_board(
            conn: &mut $conn,
            id: &str,
        ) -> $crate::store::Result<$crate::store::boards::Board> {
            let sql = format!("{} WHERE b.id = $1", $crate::store::boards::BOARD_SELECT);
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .fetch_optional(conn)
                .await?;
            row.as_ref()
                .map($crate::store::boards::board_from)
                .transpose()?
                .ok_or_else(|| $crate::store::Error::Corrupt(format!("board {id} vanished")))
        }

        /// The rows of board `board_id` in board order.
        pub(super) async fn load_rows(
            conn: &mut $conn,
            board_id: &str,
        ) -> $crate::store::Result<Vec<$crate::store::boards::Row>> {
            let rows = sqlx::query($rows).bind(board_id).fetch_all(conn).await?;
            rows.iter().map($crate::store::boards::row_from).collect()
        }

        /// The board `id` with its rows (missing: corrupt, as for [`load_board`]).
        pub(super) async fn load_full(
            conn: &mut $conn,
            id: &str,
        ) -> $crate::store::Result<$crate::store::boards::BoardFull> {
            let board = load_board(conn, id).await?;
            let rows = load_rows(conn, id).await?;
            Ok($crate::store::boards::BoardFull { board, rows })
        }

        /// The row `row_id` (missing: corrupt; rows are never deleted).
        pub(super) async fn load_row(
            conn: &mut $conn,
            row_id: &str,
        ) -> $crate::store::Result<$crate::store::boards::Row> {
            let row = sqlx::query("SELECT * FROM board_rows WHERE id = $1")
                .bind(row_id)
                .fetch_optional(conn)
                .await?;
            row.as_ref()
                .map($crate::store::boards::row_from)
                .transpose()?
                .ok_or_else(|| $crate::store::Error::Corrupt(format!("row {row_id} vanished")))
        }

        /// Find a board by full id, by title in `project`, by a unique id
        /// suffix (the short id), or by a title unique across projects.
        pub(super) async fn resolve_board(
            conn: &mut $conn,
            reference: &str,
            project: Option<&str>,
        ) -> $crate::store::Result<$crate::store::boards::Decided<String>> {
            let reference = reference.trim();
            if reference.is_empty() {
                return Err($crate::store::Error::Invalid(
                    "no board given: pass its id, short id or title".into(),
                ));
            }
            if let Some(id) = sqlx::query_scalar::<_, String>("SELECT id FROM boards WHERE id = $1")
                .bind(reference)
                .fetch_optional(&mut *conn)
                .await?
            {
                return Ok(Ok(id));
            }
            if let Some(p) = project
                && let Some(id) = sqlx::query_scalar::<_, String>(
                    "SELECT id FROM boards WHERE project = $1 AND title = $2",
                )
                .bind(p)
                .bind(reference)
                .fetch_optional(&mut *conn)
                .await?
            {
                return Ok(Ok(id));
            }
            let by_suffix: Vec<String> = if $crate::store::boards::is_short_id(reference) {
                sqlx::query_scalar($by_suffix)
                    .bind(reference.to_ascii_lowercase())
                    .bind(project)
                    .fetch_all(&mut *conn)
                    .await?
            } else {
                Vec::new()
            };
            let found = if by_suffix.is_empty() && project.is_none() {
                sqlx::query_scalar("SELECT id FROM boards WHERE title = $1")
                    .bind(reference)
                    .fetch_all(&mut *conn)
                    .await?
            } else {
                by_suffix
            };
            let missing = match project {
                Some(p) => format!("board `{reference}` in project `{p}`"),
                None => format!("board `{reference}`"),
            };
            $crate::store::boards::single(found, missing, |n| {
                format!(
                    "`{reference}` matches {n} boards: use the full id, or the title with --project"
                )
            })
        }

        /// Find a row of `board_id` by label, else by full id or unique id suffix.
        pub(super) async fn resolve_row(
            conn: &mut $conn,
            board_id: &str,
            reference: &str,
        ) -> $crate::store::Result<$crate::store::boards::Decided<String>> {
            if let Some(id) = sqlx::query_scalar::<_, String>(
                "SELECT id FROM board_rows WHERE board_id = $1 AND label = $2",
            )
            .bind(board_id)
            .bind(reference)
            .fetch_optional(&mut *conn)
            .await?
            {
                return Ok(Ok(id));
            }
            let found: Vec<String> = if $crate::store::boards::is_short_id(reference) {
                sqlx::query_scalar(
                    "SELECT id FROM board_rows WHERE board_id = $1 AND id LIKE '%' || $2",
                )
                .bind(board_id)
                .bind(reference.to_ascii_lowercase())
                .fetch_all(&mut *conn)
                .await?
            } else {
                Vec::new()
            };
            $crate::store::boards::single(found, format!("row `{reference}`"), |n| {
                format!("`{reference}` matches {n} rows: use the label or the full id")
            })
        }
    };
}
pub(crate) use board_loads;

board_loads!(
    SqliteConnection,
    rows: "SELECT * FROM board_rows WHERE board_id = $1 ORDER BY position, id",
    board_by_suffix: "SELECT id FROM boards WHERE id LIKE '%' || $1 AND ($2 IS NULL OR project = $2)",
);

/// A write on one row, opened: its transaction, the time it writes, the
/// board and the row's id.
pub(super) type Opened = (WriteTx, i64, Board, String);

impl Store {
    /// The opening of every write on one row: take the write lock, read the
    /// clock, resolve the board and row named and load the board. Refused
    /// when either is not found.
    pub(super) async fn open_row(
        &self,
        board: &str,
        project: Option<&str>,
        label: &str,
    ) -> Result<Decided<Opened>> {
        let mut tx = self.begin_write().await?;
        let now = self.now();
        let (board, row_id) = decided!(locate(&mut tx, board, project, label).await?);
        Ok(Ok((tx, now, board, row_id)))
    }
}

/// Whether `s` can be a short id: at least four hex digits (the end of a full id).
pub(crate) fn is_short_id(s: &str) -> bool {
    s.len() >= 4 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The one id a lookup found; none is a refusal naming `missing`, more
/// than one an error (`ambiguous` says how to be exact).
pub(crate) fn single(
    found: Vec<String>,
    missing: String,
    ambiguous: impl FnOnce(usize) -> String,
) -> Result<Decided<String>> {
    let n = found.len();
    let mut found = found.into_iter();
    match (found.next(), n) {
        (None, _) => Ok(Err(not_found(missing))),
        (Some(id), 1) => Ok(Ok(id)),
        (Some(_), n) => Err(Error::Ambiguous(ambiguous(n))),
    }
}

/// Resolve the board and row named, and load the board.
pub(super) async fn locate(
    conn: &mut SqliteConnection,
    board: &str,
    project: Option<&str>,
    label: &str,
) -> Result<Decided<(Board, String)>> {
    let board_id = decided!(resolve_board(conn, board, project).await?);
    let row_id = decided!(resolve_row(conn, &board_id, label).await?);
    Ok(Ok((load_board(conn, &board_id).await?, row_id)))
}
