//! The agent's row writes: `board_upsert` (many rows, all or nothing) and
//! `board_row` (one row), and the shared row-merge logic `step` reuses.
//!
//! A write that wins on SQLite is one database call (`call_many`). The
//! transactions here are what runs when that call did not win, and every
//! such write on PostgreSQL: each is one transaction (`Store::transact`)
//! that re-decides with the reads it always made, so a refusal (or an
//! unchanged board) is explained exactly as before. Because the board is
//! locked from the first statements (SQLite's write turn; PostgreSQL's
//! row lock, `record::open_board`), versions read inside the transaction
//! are the versions the writes land on; every refusal is decided before
//! anything is written (a typed refusal commits), and every row UPDATE
//! still carries its `revision = $N` guard, so a bug here can only refuse,
//! never overwrite. Events are appended after the writes.
//! Human fields (annotation, handled) are never written here, except that a
//! *fresh* block (a row that was not blocked and now is) starts from nothing.

use std::sync::Arc;

use serde_json::json;

use super::input::RowInput;
use super::load::{load_board, load_full, load_row, load_rows, resolve_row};
use super::plan::{Pending, apply, mismatches, plan_rows};
use super::record::{Who, board_event, bump_version, open_board, row_event, settle};
use super::{BoardFull, Decided, MAX_ROWS, Refusal, Row, Steps, check_name, decided, not_found};
use crate::store::Channel;
use crate::store::engine::{Stmt, Tx};
use crate::store::{Error, Result, Store, new_id};

/// A whole-board write (`board_upsert`).
#[derive(Debug, Clone, Default)]
pub struct BoardUpsert {
    /// The project the board belongs to.
    pub project: String,
    /// Title, unique in the project.
    pub title: String,
    /// The `board_version` read; `None` only to create a new board.
    pub board_version: Option<i64>,
    /// Owning agent (recorded on creation; updated when given).
    pub agent: String,
    /// Owning session (recorded on creation; updated when given).
    pub session: String,
    /// Rows to create or change; rows not named are left alone.
    pub rows: Vec<RowInput>,
}

/// A single-row write (`board_row`).
#[derive(Debug, Clone, Default)]
pub struct RowWrite {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title.
    pub project: Option<String>,
    /// The `board_version` read; `None` checks only the row's revision.
    pub board_version: Option<i64>,
    /// The row (its `revision` is the CAS token).
    pub row: RowInput,
    /// The agent writing (recorded on the event).
    pub by: String,
}

/// Bump the board, append `on_board` (`board.upserted`, if any) and the row
/// events, settle auto-archive (not for a board this write `created`: one
/// created with every row done stays in the list until a later write leaves
/// it complete, rather than vanishing into the archive the moment it
/// appears), and read the board back.
pub(super) async fn finish(
    tx: &mut Tx<'_>,
    now: i64,
    board_id: &str,
    on_board: Option<serde_json::Value>,
    events: Vec<Pending>,
    who: Who<'_>,
    created: bool,
) -> Result<BoardFull> {
    let board = bump_version(tx, now, board_id).await?;
    if let Some(payload) = on_board {
        board_event(tx, now, "board.upserted", &board, who, &payload).await?;
    }
    for ev in events {
        let row = load_row(tx, &ev.row_id).await?;
        row_event(tx, now, ev.kind, &board, &row, who, &ev.extra).await?;
    }
    if !created {
        settle(tx, now, board, who).await?;
    }
    load_full(tx, board_id).await
}

/// The board an upsert writes to, locked and checked against the versions
/// read, or created when no version is given: its id, whether this write
/// created it, and its stored rows.
async fn open_upsert(
    tx: &mut Tx<'_>,
    now: i64,
    up: &BoardUpsert,
) -> Steps<(String, bool, Vec<Row>)> {
    let existing = match named(tx, up).await? {
        Some(found) => found,
        None => {
            if up.board_version.is_some() {
                return Err(not_found(format!(
                    "board `{}` in project `{}` (a new board is written without a version)",
                    up.title, up.project
                ))
                .into());
            }
            let stale = mismatches(&[], &up.rows);
            if !stale.is_empty() {
                return Err(Refusal::Stale {
                    board_version: 0,
                    rows: stale,
                }
                .into());
            }
            // Why ON CONFLICT: two creators at once on PostgreSQL; the
            // second waits for the first's insert, writes nothing, and then
            // finds the board (and is refused as stale: it read no version).
            let id = new_id();
            let insert = Stmt::new(
                "INSERT INTO boards (id, project, title, revision, agent, session, created_at, updated_at)
                 VALUES ($1, $2, $3, 0, $4, $5, $6, $6) ON CONFLICT (project, title) DO NOTHING",
            )
            .text(id.as_str())
            .text(up.project.as_str())
            .text(up.title.as_str())
            .text(up.agent.as_str())
            .text(up.session.as_str())
            .int(now);
            if tx.change(&insert).await? == 1 {
                return Ok((id, true, Vec::new()));
            }
            named(tx, up)
                .await?
                .ok_or_else(|| Error::Corrupt(format!("board `{}` vanished", up.title)))?
        }
    };
    let (id, current) = existing;
    let stored = load_rows(tx, &id).await?;
    let stale = mismatches(&stored, &up.rows);
    if up.board_version != Some(current) || !stale.is_empty() {
        return Err(Refusal::Stale {
            board_version: current,
            rows: stale,
        }
        .into());
    }
    Ok((id, false, stored))
}

/// The board an upsert names (project and title), locked (see
/// `record::open_board`), with its version.
async fn named(tx: &mut Tx<'_>, up: &BoardUpsert) -> Result<Option<(String, i64)>> {
    let named = Stmt::spelled(
        "SELECT id, revision FROM boards WHERE project = $1 AND title = $2",
        "SELECT id, revision FROM boards WHERE project = $1 AND title = $2 FOR UPDATE",
    )
    .text(up.project.as_str())
    .text(up.title.as_str());
    tx.row(&named).await
}

/// `board_upsert` as one transaction of several statements.
async fn upsert_in(tx: &mut Tx<'_>, up: &BoardUpsert, now: i64) -> Steps<BoardFull> {
    let (board_id, created, stored) = open_upsert(tx, now, up).await?;
    let (plans, events) = plan_rows(&stored, &up.rows)?;
    if !created && events.is_empty() {
        // Nothing changed: no version bump, no event (an idempotent refresh).
        return Ok(load_full(tx, &board_id).await?);
    }
    if !created && (!up.agent.is_empty() || !up.session.is_empty()) {
        let owner = Stmt::new(
            "UPDATE boards SET agent = CASE WHEN $1 = '' THEN agent ELSE $1 END,
                session = CASE WHEN $2 = '' THEN session ELSE $2 END WHERE id = $3",
        )
        .text(up.agent.as_str())
        .text(up.session.as_str())
        .text(board_id.as_str());
        tx.change(&owner).await?;
    }
    apply(tx, now, &board_id, &plans).await?;
    let labels: Vec<&str> = up.rows.iter().map(|r| r.label.as_str()).collect();
    let who = Who {
        actor: &up.agent,
        channel: Channel::Agent,
    };
    let on_board = json!({"title": up.title, "created": created, "rows": labels});
    Ok(finish(tx, now, &board_id, Some(on_board), events, who, created).await?)
}

/// `board_row` (`by_ref`: the write of `board_outcome`, its row named by
/// label or id) as one transaction of several statements.
pub(super) async fn row_in(
    tx: &mut Tx<'_>,
    w: &RowWrite,
    by_ref: bool,
    now: i64,
) -> Steps<BoardFull> {
    let board_id = open_board(tx, &w.board, w.project.as_deref()).await?;
    let named;
    let w = if by_ref {
        // The row may be named by id: the write names it by its label.
        let row_id = resolve_row(tx, &board_id, &w.row.label).await?;
        let mut by_label = w.clone();
        by_label.row.label = load_row(tx, &row_id).await?.label;
        named = by_label;
        &named
    } else {
        w
    };
    let board = load_board(tx, &board_id).await?;
    let stored = load_rows(tx, &board_id).await?;
    let rows = std::slice::from_ref(&w.row);
    let stale = mismatches(&stored, rows);
    let board_stale = w.board_version.is_some_and(|v| v != board.board_version);
    if board_stale || !stale.is_empty() {
        return Err(Refusal::Stale {
            board_version: board.board_version,
            rows: stale,
        }
        .into());
    }
    let (plans, events) = plan_rows(&stored, rows)?;
    if events.is_empty() {
        return Ok(load_full(tx, &board_id).await?);
    }
    apply(tx, now, &board_id, &plans).await?;
    let who = Who {
        actor: &w.by,
        channel: Channel::Agent,
    };
    Ok(finish(tx, now, &board_id, None, events, who, false).await?)
}

fn check_inputs(rows: &[RowInput]) -> Result<()> {
    if rows.len() > MAX_ROWS {
        return Err(Error::Invalid(format!(
            "{} rows given; one write takes at most {MAX_ROWS}",
            rows.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for r in rows {
        r.validate()?;
        if !seen.insert(r.label.as_str()) {
            return Err(Error::Invalid(format!(
                "row `{}` appears twice in one write",
                r.label
            )));
        }
    }
    Ok(())
}

impl Store {
    /// Create or update a board and some of its rows, all or nothing.
    ///
    /// An existing board needs its current `board_version`, and every
    /// existing row named needs its current `revision` (a new row none). Any
    /// mismatch refuses the whole write with [`Refusal::Stale`] carrying the
    /// current board version and the current revision of every mismatched
    /// row. Rows not named are left alone; a write that changes nothing
    /// changes no version and appends no event.
    pub async fn board_upsert(&self, up: &BoardUpsert) -> Result<Decided<BoardFull>> {
        check_name("the project", &up.project)?;
        check_name("the board title", &up.title)?;
        check_inputs(&up.rows)?;
        // Filed in its session's project (see `sessions/home.rs`).
        let project = self.session_home(&up.session, &up.project).await?;
        let claimed;
        let up = if project == up.project {
            up
        } else {
            claimed = BoardUpsert {
                project,
                ..up.clone()
            };
            &claimed
        };
        if let Some(full) = self.board_upsert_call(up).await? {
            return Ok(Ok(full));
        }
        // The one call did not win (on PostgreSQL there is none): the write
        // as one transaction of several statements, so a refusal is
        // explained (or an unchanged board returned) by the same reads and
        // words as ever.
        self.transact(Arc::new(up.clone()), |mut tx, up, now| {
            Box::pin(async move { decided(upsert_in(&mut tx, &up, now).await) })
        })
        .await
    }

    /// Write one row (create it, or change it with its `revision`), checking
    /// the board version too when given.
    pub async fn board_row(&self, w: &RowWrite) -> Result<Decided<BoardFull>> {
        w.row.validate()?;
        if let Some(full) = self.board_row_call(w, false).await? {
            return Ok(Ok(full));
        }
        self.board_row_once(w, false).await
    }

    /// `board_row` (`by_ref`: `board_outcome`'s write) as one transaction
    /// of several statements: when the one call (`call_many`) did not win,
    /// and on PostgreSQL.
    pub(super) async fn board_row_once(
        &self,
        w: &RowWrite,
        by_ref: bool,
    ) -> Result<Decided<BoardFull>> {
        self.transact(Arc::new(w.clone()), move |mut tx, w, now| {
            Box::pin(async move { decided(row_in(&mut tx, &w, by_ref, now).await) })
        })
        .await
    }
}
