//! Reads of boards and rows (for every door, chat's lookups included) and
//! the delivery of human responses to agents.
//!
//! Every read goes to the database (there is no cache, so `full` is always
//! the source of truth). [`Store::pending_rows`] is at-least-once: a blocked
//! row with a response comes back on every call until the agent changes its
//! status; a response on a row that is not blocked comes back until the
//! agent writes that row after receiving it (`response_open`), even once the
//! board is archived. Delivery stamps only the exact response read, so a
//! response the human rewrote between the read and the stamp stays queued.

use serde::Serialize;
use serde_json::json;
use sqlx::SqliteConnection;

use super::{
    BOARD_SELECT, Board, BoardFull, Decided, Row, board_from, is_short_id, load_full,
    resolve_board, row_from,
};
use crate::store::Channel;
use crate::store::{Engine, Result, Store, postgres};

/// A row waiting for an agent, with its board.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct PendingRow {
    /// The id of the row's board.
    pub board_id: String,
    /// The board's title.
    pub board_title: String,
    /// The board's version when read (pass it back on a write).
    pub board_version: i64,
    /// The board's project.
    pub project: String,
    /// The board's session.
    pub session: String,
    /// The board's agent.
    pub agent: String,
    /// True when some part of the response had not been delivered before
    /// this read (false: a re-delivery of a blocked row).
    pub new: bool,
    /// The row as read.
    pub row: Row,
}

/// The delivery stamps of one row, defined as `stamp_delivered(conn, now,
/// r)` on `$conn` (one engine's connection type) in the module that
/// invokes it: stamp the parts of `r`'s response no agent had received as
/// delivered, each only if it is still exactly what was read; whether
/// every part read was still current, and the parts stamped. Why a macro:
/// the two connection types differ, the Rust does not; the statements
/// differ only in how they compare a nullable value (SQLite's `IS`,
/// PostgreSQL's `IS NOT DISTINCT FROM`), so they are passed in:
/// `annotation` (`$1` now, `$2` the row id, `$3` the annotation and `$4`
/// its time, as read) and `handled` (`$1` now, `$2` the row id, `$3` the
/// handled time read).
macro_rules! delivery_stamps {
    ($conn:ty, annotation: $annotation:expr, handled: $handled:expr $(,)?) => {
        async fn stamp_delivered(
            conn: &mut $conn,
            now: i64,
            r: &$crate::store::boards::Row,
        ) -> $crate::store::Result<(bool, Vec<&'static str>)> {
            let mut ok = true;
            let mut marked = Vec::new();
            if r.response.annotation.is_some() && r.response.annotation_seen_at.is_none() {
                // Why guarded: stamp only the exact annotation read; if the
                // human rewrote it since, it stays unseen and queued.
                let n = sqlx::query($annotation)
                    .bind(now)
                    .bind(&r.id)
                    .bind(&r.response.annotation)
                    .bind(r.response.annotated_at)
                    .execute(&mut *conn)
                    .await?
                    .rows_affected();
                ok &= n == 1;
                marked.extend((n == 1).then_some("annotation"));
            }
            if r.response.handled_at.is_some() && r.handled_seen_at.is_none() {
                // Why guarded: the same for the handled mark.
                let n = sqlx::query($handled)
                    .bind(now)
                    .bind(&r.id)
                    .bind(r.response.handled_at)
                    .execute(&mut *conn)
                    .await?
                    .rows_affected();
                ok &= n == 1;
                marked.extend((n == 1).then_some("handled"));
            }
            Ok((ok, marked))
        }
    };
}
pub(crate) use delivery_stamps;

delivery_stamps!(
    SqliteConnection,
    annotation: "UPDATE board_rows SET annotation_seen_at = $1
         WHERE id = $2 AND annotation_seen_at IS NULL AND annotation IS $3 AND annotated_at IS $4",
    handled: "UPDATE board_rows SET handled_seen_at = $1
         WHERE id = $2 AND handled_seen_at IS NULL AND handled_at IS $3",
);

/// A row of a pending read (the row's columns and its board's, aliased
/// `board_*`), of either engine.
pub(crate) fn pending_from<'r, R>(r: &'r R) -> Result<PendingRow>
where
    R: sqlx::Row,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let row = row_from(r)?;
    let new = row.has_undelivered_response();
    Ok(PendingRow {
        board_id: row.board_id.clone(),
        board_title: r.try_get("board_title")?,
        board_version: r.try_get("board_version")?,
        project: r.try_get("board_project")?,
        session: r.try_get("board_session")?,
        agent: r.try_get("board_agent")?,
        new,
        row,
    })
}

impl Store {
    /// Boards of `project` (all projects when `None`), active only unless
    /// `archived`, with their progress, newest first.
    pub async fn board_list(&self, project: Option<&str>, archived: bool) -> Result<Vec<Board>> {
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::boards::list(pg, project, archived).await;
        }
        let sql = format!(
            "{BOARD_SELECT} WHERE (? IS NULL OR b.project = ?) AND (? OR b.archived_at IS NULL)
             ORDER BY b.updated_at DESC, b.id"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(project)
            .bind(project)
            .bind(archived)
            .fetch_all(self.pool()?)
            .await?;
        rows.iter().map(board_from).collect()
    }

    /// One board with all its rows, read from the database (never a cache).
    pub async fn board_get(
        &self,
        board: &str,
        project: Option<&str>,
    ) -> Result<Decided<BoardFull>> {
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::boards::get(pg, board, project).await;
        }
        let mut conn = self.pool()?.acquire().await?;
        let id = decided!(resolve_board(&mut conn, board, project).await?);
        Ok(Ok(load_full(&mut conn, &id).await?))
    }

    /// Read the rows waiting for an agent without marking anything
    /// delivered. See [`Store::pending_rows`].
    pub async fn pending_rows_peek(
        &self,
        project: Option<&str>,
        session: Option<&str>,
    ) -> Result<Vec<PendingRow>> {
        // Why `response_open` on archived boards: a response the agent has
        // not resolved must not vanish into the archive.
        self.pending_select(
            "(b.archived_at IS NULL OR r.response_open = 1)
               AND (r.annotation IS NOT NULL OR r.handled_at IS NOT NULL)
               AND (r.status = 'blocked' OR r.response_open = 1
                    OR r.annotation_seen_at IS NULL AND r.annotation IS NOT NULL
                    OR r.handled_seen_at IS NULL AND r.handled_at IS NOT NULL)",
            "COALESCE(r.annotated_at, r.handled_at), r.id",
            project,
            session,
        )
        .await
    }

    /// Record that `rows` (as read by [`Store::pending_rows_peek`]) were
    /// handed to `reader`. Each stamp is pinned to the exact response read;
    /// returns, per row, whether everything read is still current (false:
    /// the human changed it meanwhile and the newer response stays queued).
    pub async fn mark_rows_delivered(
        &self,
        rows: &[PendingRow],
        reader: &str,
    ) -> Result<Vec<bool>> {
        if !rows.iter().any(|p| p.new) {
            return Ok(vec![true; rows.len()]);
        }
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::boards::mark_delivered(self, pg, rows.to_vec(), reader.to_string())
                .await;
        }
        self.retry(|| self.mark_rows_delivered_once(rows, reader))
            .await
    }

    async fn mark_rows_delivered_once(
        &self,
        rows: &[PendingRow],
        reader: &str,
    ) -> Result<Vec<bool>> {
        let mut tx = self.begin_write().await?;
        let now = self.now();
        let mut current = Vec::with_capacity(rows.len());
        for p in rows {
            let r = &p.row;
            let (ok, marked) = stamp_delivered(&mut tx, now, r).await?;
            if !marked.is_empty() {
                crate::store::events::append(
                    &mut tx,
                    now,
                    &crate::store::NewEvent {
                        kind: "row.delivered",
                        entity_kind: "row",
                        entity_id: &r.id,
                        actor: reader,
                        channel: Channel::Agent,
                        project: &p.project,
                        session: &p.session,
                        payload: json!({
                            "board_id": p.board_id,
                            "label": r.label,
                            "action_version": r.action_version,
                            "delivered": marked,
                        }),
                    },
                )
                .await?;
            }
            current.push(ok);
        }
        tx.commit().await?;
        Ok(current)
    }

    /// Rows waiting for an agent in `project` / `session` (each `None` = any):
    /// blocked rows with a response (annotation or handled mark), every time
    /// until their status changes, and responses on rows that are not
    /// blocked, once. Marks what it hands over delivered (see
    /// [`Store::mark_rows_delivered`]); a response rewritten meanwhile is
    /// left out of the result and stays queued.
    pub async fn pending_rows(
        &self,
        project: Option<&str>,
        session: Option<&str>,
        reader: &str,
    ) -> Result<Vec<PendingRow>> {
        let rows = self.pending_rows_peek(project, session).await?;
        let current = self.mark_rows_delivered(&rows, reader).await?;
        Ok(rows
            .into_iter()
            .zip(current)
            .filter_map(|(r, ok)| ok.then_some(r))
            .collect())
    }

    /// Rows a human marked handled whose outcome the agent has not stored
    /// yet (`handled_at IS NOT NULL AND outcome = ''`).
    pub async fn unprocessed_handoffs(&self, project: Option<&str>) -> Result<Vec<PendingRow>> {
        self.pending_select(
            "r.handled_at IS NOT NULL AND r.outcome = ''",
            "r.handled_at, r.id",
            project,
            None,
        )
        .await
    }

    /// Rows of `project` / `session` (each `None` = any) that pass
    /// `filter`, with their board, in `order`. Both are SQL fragments
    /// written in this file, never user input.
    async fn pending_select(
        &self,
        filter: &str,
        order: &str,
        project: Option<&str>,
        session: Option<&str>,
    ) -> Result<Vec<PendingRow>> {
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::boards::pending_select(pg, filter, order, project, session).await;
        }
        let sql = format!(
            "SELECT r.*, b.title AS board_title, b.revision AS board_version, b.project AS board_project,
                    b.session AS board_session, b.agent AS board_agent
             FROM board_rows r JOIN boards b ON b.id = r.board_id
             WHERE (? IS NULL OR b.project = ?) AND (? IS NULL OR b.session = ?) AND {filter}
             ORDER BY {order}"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(project)
            .bind(project)
            .bind(session)
            .bind(session)
            .fetch_all(self.pool()?)
            .await?;
        rows.iter().map(pending_from).collect()
    }

    /// The board id and label of the row `id` (for chat rendering and taps).
    pub async fn row_locator(&self, id: &str) -> Result<Option<(String, String)>> {
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::boards::row_locator(pg, id).await;
        }
        Ok(
            sqlx::query_as("SELECT board_id, label FROM board_rows WHERE id = ?")
                .bind(id)
                .fetch_optional(self.pool()?)
                .await?,
        )
    }

    /// A row id from its full id or a unique short id (suffix); `None` when
    /// nothing (or more than one row) matches.
    pub async fn find_row_id(&self, id_or_short: &str) -> Result<Option<String>> {
        let s = id_or_short.trim().to_lowercase();
        if !is_short_id(&s) {
            return Ok(None);
        }
        let ids: Vec<String> = match self.engine() {
            Engine::Postgres(pg) => postgres::boards::row_ids_like(pg, &s).await?,
            Engine::Sqlite(_) => {
                sqlx::query_scalar(
                    "SELECT id FROM board_rows WHERE id = ?1 OR id LIKE '%' || ?1 LIMIT 2",
                )
                .bind(&s)
                .fetch_all(self.pool()?)
                .await?
            }
        };
        let mut ids = ids.into_iter();
        Ok(ids.next().filter(|_| ids.next().is_none()))
    }

    /// Ids of blocked rows on active boards (for `/list`).
    pub async fn blocked_row_ids(&self) -> Result<Vec<String>> {
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::boards::blocked_row_ids(pg).await;
        }
        Ok(sqlx::query_scalar(
            "SELECT r.id FROM board_rows r JOIN boards b ON b.id = r.board_id
             WHERE r.status = 'blocked' AND b.archived_at IS NULL ORDER BY r.updated_at DESC LIMIT 200",
        )
        .fetch_all(self.pool()?)
        .await?)
    }
}
