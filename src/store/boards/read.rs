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

use crate::store::cols::{Cols, rows_by};
use std::sync::{Arc, LazyLock};

use serde::Serialize;
use serde_json::json;

use super::load::{BOARD_SELECT, is_short_id, load_full, resolve_board, row_from};
use super::{Board, BoardFull, Decided, Row, decided};
use crate::store::Channel;
use crate::store::engine::{Stmt, Tx};
use crate::store::{Result, Store};

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

/// Stamp the parts of `r`'s response no agent had received as delivered,
/// each only if it is still exactly what was read; whether every part
/// read was still current, and the parts stamped. SQLite compares a
/// nullable value with `IS`, PostgreSQL with `IS NOT DISTINCT FROM`.
async fn stamp_delivered(tx: &mut Tx<'_>, now: i64, r: &Row) -> Result<(bool, Vec<&'static str>)> {
    let mut ok = true;
    let mut marked = Vec::new();
    if r.response.annotation.is_some() && r.response.annotation_seen_at.is_none() {
        // Why guarded: stamp only the exact annotation read; if the
        // human rewrote it since, it stays unseen and queued.
        let stamp = Stmt::spelled(
            "UPDATE board_rows SET annotation_seen_at = $1
             WHERE id = $2 AND annotation_seen_at IS NULL AND annotation IS $3 AND annotated_at IS $4",
            "UPDATE board_rows SET annotation_seen_at = $1
             WHERE id = $2 AND annotation_seen_at IS NULL
               AND annotation IS NOT DISTINCT FROM $3 AND annotated_at IS NOT DISTINCT FROM $4",
        )
        .int(now)
        .text(r.id.as_str())
        .text(r.response.annotation.as_deref())
        .int(r.response.annotated_at);
        let n = tx.change(&stamp).await?;
        ok &= n == 1;
        marked.extend((n == 1).then_some("annotation"));
    }
    if r.response.handled_at.is_some() && r.handled_seen_at.is_none() {
        // Why guarded: the same for the handled mark.
        let stamp = Stmt::spelled(
            "UPDATE board_rows SET handled_seen_at = $1
             WHERE id = $2 AND handled_seen_at IS NULL AND handled_at IS $3",
            "UPDATE board_rows SET handled_seen_at = $1
             WHERE id = $2 AND handled_seen_at IS NULL AND handled_at IS NOT DISTINCT FROM $3",
        )
        .int(now)
        .text(r.id.as_str())
        .int(r.response.handled_at);
        let n = tx.change(&stamp).await?;
        ok &= n == 1;
        marked.extend((n == 1).then_some("handled"));
    }
    Ok((ok, marked))
}

/// A row of a pending read (the row's columns and its board's, aliased
/// `board_*`), of either engine.
fn pending_from(r: &impl Cols) -> Result<PendingRow> {
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

// A row of a pending read, on either engine.
rows_by!(PendingRow, pending_from);

/// The boards of a project (`$1`, NULL: all), active only unless `$2`,
/// newest first (PostgreSQL breaking ties in SQLite's byte order).
static LIST: LazyLock<[String; 2]> = LazyLock::new(|| {
    [
        format!(
            "{BOARD_SELECT} WHERE ($1 IS NULL OR b.project = $1) AND ($2 OR b.archived_at IS NULL)
             ORDER BY b.updated_at DESC, b.id"
        ),
        format!(
            "{BOARD_SELECT} WHERE ($1::TEXT IS NULL OR b.project = $1) AND ($2 OR b.archived_at IS NULL)
             ORDER BY b.updated_at DESC, b.id COLLATE \"C\""
        ),
    ]
});

/// The rows of a pending read and their boards, passing `{filter}` in
/// `{order}` (each the caller's SQL fragment).
const PENDING_SELECT: [&str; 2] = [
    "SELECT r.*, b.title AS board_title, b.revision AS board_version, b.project AS board_project,
            b.session AS board_session, b.agent AS board_agent
     FROM board_rows r JOIN boards b ON b.id = r.board_id
     WHERE ($1 IS NULL OR b.project = $1) AND ($2 IS NULL OR b.session = $2) AND {filter}
     ORDER BY {order}",
    "SELECT r.*, b.title AS board_title, b.revision AS board_version, b.project AS board_project,
            b.session AS board_session, b.agent AS board_agent
     FROM board_rows r JOIN boards b ON b.id = r.board_id
     WHERE ($1::TEXT IS NULL OR b.project = $1) AND ($2::TEXT IS NULL OR b.session = $2)
       AND {filter}
     ORDER BY {order}",
];

/// What a pending read selects: each spelling's text.
struct Pending {
    filter: &'static str,
    order: &'static str,
}

/// The texts of [`Store::pending_rows_peek`] and
/// [`Store::unprocessed_handoffs`], made once.
static PENDING: LazyLock<[[String; 2]; 2]> = LazyLock::new(|| {
    let spell = |p: Pending| {
        let [lite, pg] = PENDING_SELECT;
        [
            lite.replace("{filter}", p.filter)
                .replace("{order}", p.order),
            pg.replace("{filter}", p.filter)
                .replace("{order}", &p.order.replace("r.id", "r.id COLLATE \"C\"")),
        ]
    };
    [
        // Why `response_open` on archived boards: a response the agent has
        // not resolved must not vanish into the archive.
        spell(Pending {
            filter: "(b.archived_at IS NULL OR r.response_open = 1)
               AND (r.annotation IS NOT NULL OR r.handled_at IS NOT NULL)
               AND (r.status = 'blocked' OR r.response_open = 1
                    OR r.annotation_seen_at IS NULL AND r.annotation IS NOT NULL
                    OR r.handled_seen_at IS NULL AND r.handled_at IS NOT NULL)",
            order: "COALESCE(r.annotated_at, r.handled_at), r.id",
        }),
        spell(Pending {
            filter: "r.handled_at IS NOT NULL AND r.outcome = ''",
            order: "r.handled_at, r.id",
        }),
    ]
});

impl Store {
    /// Boards of `project` (all projects when `None`), active only unless
    /// `archived`, with their progress, newest first.
    pub async fn board_list(&self, project: Option<&str>, archived: bool) -> Result<Vec<Board>> {
        let [lite, pg] = &*LIST;
        self.rows(Stmt::spelled(lite, pg).text(project).bool(archived))
            .await
    }

    /// One board with all its rows, read from the database (never a cache).
    pub async fn board_get(
        &self,
        board: &str,
        project: Option<&str>,
    ) -> Result<Decided<BoardFull>> {
        let mut snapshot = self.snapshot().await?;
        let mut tx = snapshot.tx();
        let full = match resolve_board(&mut tx, board, project).await {
            Ok(id) => Ok(load_full(&mut tx, &id).await?),
            Err(stop) => Err(stop),
        };
        snapshot.end().await?;
        decided(full)
    }

    /// Read the rows waiting for an agent without marking anything
    /// delivered. See [`Store::pending_rows`].
    pub async fn pending_rows_peek(
        &self,
        project: Option<&str>,
        session: Option<&str>,
    ) -> Result<Vec<PendingRow>> {
        self.pending_select(&PENDING[0], project, session).await
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
        let input = Arc::new((rows.to_vec(), reader.to_string()));
        self.transact(input, |mut tx, input, now| {
            Box::pin(async move {
                let (rows, reader) = &*input;
                let mut current = Vec::with_capacity(rows.len());
                let mut stamped = Vec::new();
                for p in rows {
                    let (ok, marked) = stamp_delivered(&mut tx, now, &p.row).await?;
                    if !marked.is_empty() {
                        stamped.push((p, marked));
                    }
                    current.push(ok);
                }
                // The events last (PostgreSQL's event counter stays locked
                // from the first append until commit).
                for (p, marked) in stamped {
                    let r = &p.row;
                    let delivered = crate::store::NewEvent {
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
                    };
                    tx.append(now, &delivered).await?;
                }
                Ok(current)
            })
        })
        .await
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
        self.pending_select(&PENDING[1], project, None).await
    }

    /// Rows of `project` / `session` (each `None` = any) that pass a
    /// read's filter, with their board, in its order ([`PENDING`]).
    async fn pending_select(
        &self,
        [lite, pg]: &'static [String; 2],
        project: Option<&str>,
        session: Option<&str>,
    ) -> Result<Vec<PendingRow>> {
        self.rows(Stmt::spelled(lite, pg).text(project).text(session))
            .await
    }

    /// The board id and label of the row `id` (for chat rendering and taps).
    pub async fn row_locator(&self, id: &str) -> Result<Option<(String, String)>> {
        self.row(Stmt::new("SELECT board_id, label FROM board_rows WHERE id = $1").text(id))
            .await
    }

    /// A row id from its full id or a unique short id (suffix); `None` when
    /// nothing (or more than one row) matches.
    pub async fn find_row_id(&self, id_or_short: &str) -> Result<Option<String>> {
        let s = id_or_short.trim().to_lowercase();
        if !is_short_id(&s) {
            return Ok(None);
        }
        let like =
            Stmt::new("SELECT id FROM board_rows WHERE id = $1 OR id LIKE '%' || $1 LIMIT 2")
                .text(s.as_str());
        let mut ids = self.rows::<(String,)>(like).await?.into_iter();
        Ok(ids.next().filter(|_| ids.next().is_none()).map(|(id,)| id))
    }

    /// Ids of blocked rows on active boards (for `/list`).
    pub async fn blocked_row_ids(&self) -> Result<Vec<String>> {
        let blocked = Stmt::new(
            "SELECT r.id FROM board_rows r JOIN boards b ON b.id = r.board_id
             WHERE r.status = 'blocked' AND b.archived_at IS NULL ORDER BY r.updated_at DESC LIMIT 200",
        );
        Ok(self
            .rows::<(String,)>(blocked)
            .await?
            .into_iter()
            .map(|(id,)| id)
            .collect())
    }
}
