//! Board writes on PostgreSQL: the agent's (upsert, row, outcome, advance,
//! archive; the human's, annotate and handled, are in `board_human.rs`),
//! each one transaction of its own (`write.rs`).
//!
//! Each write resolves its board and locks it first (`boards.rs`,
//! `lock_board`): every board write bumps the board's version, so the
//! writes on one board run one at a time, and what a write reads after
//! the lock (versions, rows, responses) is what it writes on, as under
//! SQLite's write lock. So the rules are SQLite's older transactions
//! (`store/boards/write.rs`, `step.rs`, `human.rs`), shared where they are
//! pure Rust ([`plan_rows`]): every refusal is decided before anything is
//! written (a typed refusal commits, so it must leave nothing behind), and
//! every row UPDATE keeps its guard. The one writer that does not take the
//! board lock, delivery, only stamps a response as read; a human's write
//! also locks its row, so a refusal is explained by the state that refused.
//! Events are appended after the writes, in SQLite's order.

use std::sync::Arc;

use serde_json::json;
use sqlx::PgConnection;

use super::Pg;
use super::boards::{
    By, board_event, bump_version, load_board, load_full, load_row, load_rows, open_board,
    resolve_row, row_event, settle,
};
use crate::store::boards::{
    Advance, Archived, BoardFull, BoardUpsert, Decided, INSTALL_NEXT, Pending, Plan, Refusal, Row,
    RowWrite, advance_checked, advance_events, bind_next, mismatches, plan_rows, update_row,
};
use crate::store::{Channel, Error, Result, Store, new_id};

/// The `?` of a refusal, as in `store/boards.rs`.
macro_rules! decided {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(refusal) => return Ok(Err(refusal)),
        }
    };
}

/// `board_upsert`: create or update a board and some of its rows.
pub(crate) async fn upsert(s: &Store, pg: &Pg, up: &BoardUpsert) -> Result<Decided<BoardFull>> {
    s.pg_write(pg, Arc::new(up.clone()), |conn, up, now| {
        Box::pin(async move { upsert_in(conn, &up, now).await })
    })
    .await
}

async fn upsert_in(
    conn: &mut PgConnection,
    up: &BoardUpsert,
    now: i64,
) -> Result<Decided<BoardFull>> {
    let (board_id, created, stored) = decided!(open_upsert(conn, now, up).await?);
    let (plans, events) = decided!(plan_rows(&stored, &up.rows));
    if !created && events.is_empty() {
        // Nothing changed: no version bump, no event (an idempotent refresh).
        return Ok(Ok(load_full(conn, &board_id).await?));
    }
    if !created && (!up.agent.is_empty() || !up.session.is_empty()) {
        sqlx::query(
            "UPDATE boards SET agent = CASE WHEN $1 = '' THEN agent ELSE $1 END,
                session = CASE WHEN $2 = '' THEN session ELSE $2 END WHERE id = $3",
        )
        .bind(&up.agent)
        .bind(&up.session)
        .bind(&board_id)
        .execute(&mut *conn)
        .await?;
    }
    apply(conn, now, &board_id, plans).await?;
    let labels: Vec<&str> = up.rows.iter().map(|r| r.label.as_str()).collect();
    let by = By {
        actor: &up.agent,
        channel: Channel::Agent,
    };
    let on_board = json!({"title": up.title, "created": created, "rows": labels});
    let full = finish(conn, now, &board_id, Some(on_board), events, by, created).await?;
    Ok(Ok(full))
}

/// The board an upsert writes to, locked and checked against the versions
/// read, or created when no version is given: its id, whether this write
/// created it, and its stored rows.
async fn open_upsert(
    conn: &mut PgConnection,
    now: i64,
    up: &BoardUpsert,
) -> Result<Decided<(String, bool, Vec<Row>)>> {
    let existing = match named(conn, up).await? {
        Some(found) => found,
        None => {
            if up.board_version.is_some() {
                return Ok(Err(Refusal::NotFound {
                    what: format!(
                        "board `{}` in project `{}` (a new board is written without a version)",
                        up.title, up.project
                    ),
                }));
            }
            let stale = mismatches(&[], &up.rows);
            if !stale.is_empty() {
                return Ok(Err(Refusal::Stale {
                    board_version: 0,
                    rows: stale,
                }));
            }
            // Why ON CONFLICT: two creators at once; the second waits for
            // the first's insert, writes nothing, and then finds the board
            // (and is refused as stale: it read no version).
            let id = new_id();
            let inserted = sqlx::query(
                "INSERT INTO boards (id, project, title, revision, agent, session, created_at, updated_at)
                 VALUES ($1, $2, $3, 0, $4, $5, $6, $6) ON CONFLICT (project, title) DO NOTHING",
            )
            .bind(&id)
            .bind(&up.project)
            .bind(&up.title)
            .bind(&up.agent)
            .bind(&up.session)
            .bind(now)
            .execute(&mut *conn)
            .await?;
            if inserted.rows_affected() == 1 {
                return Ok(Ok((id, true, Vec::new())));
            }
            named(conn, up)
                .await?
                .ok_or_else(|| Error::Corrupt(format!("board `{}` vanished", up.title)))?
        }
    };
    let (id, current) = existing;
    let stored = load_rows(conn, &id).await?;
    let stale = mismatches(&stored, &up.rows);
    if up.board_version != Some(current) || !stale.is_empty() {
        return Ok(Err(Refusal::Stale {
            board_version: current,
            rows: stale,
        }));
    }
    Ok(Ok((id, false, stored)))
}

/// The board an upsert names (project and title), locked, with its version.
async fn named(conn: &mut PgConnection, up: &BoardUpsert) -> Result<Option<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT id, revision FROM boards WHERE project = $1 AND title = $2 FOR UPDATE",
    )
    .bind(&up.project)
    .bind(&up.title)
    .fetch_optional(&mut *conn)
    .await?)
}

/// PostgreSQL's spelling of [`update_row!`], bound by [`Plan::query`]:
/// `=` where SQLite has `IS` (`IS` takes no value on PostgreSQL).
const UPDATE_ROW: &str = update_row!("=");

/// Write the planned rows (every refusal was decided before).
async fn apply(conn: &mut PgConnection, now: i64, board_id: &str, plans: Vec<Plan>) -> Result<()> {
    for plan in &plans {
        let done = plan
            .query(now, board_id, UPDATE_ROW)
            .execute(&mut *conn)
            .await?;
        if let Plan::Update { old_id, .. } = plan {
            confirm_one(done.rows_affected(), old_id)?;
        }
    }
    Ok(())
}

/// A row UPDATE checked under the board's lock can only confirm.
fn confirm_one(written: u64, row_id: &str) -> Result<()> {
    if written != 1 {
        return Err(Error::Corrupt(format!(
            "row {row_id} changed under a held board lock"
        )));
    }
    Ok(())
}

/// Bump the board, append `on_board` (`board.upserted`) and the row
/// events, settle auto-archive (not for a board this write created, as on
/// SQLite) and read the board back.
async fn finish(
    conn: &mut PgConnection,
    now: i64,
    board_id: &str,
    on_board: Option<serde_json::Value>,
    events: Vec<Pending>,
    by: By<'_>,
    created: bool,
) -> Result<BoardFull> {
    let board = bump_version(conn, now, board_id).await?;
    if let Some(payload) = on_board {
        board_event(conn, now, "board.upserted", &board, by, &payload).await?;
    }
    for ev in events {
        let row = load_row(conn, &ev.row_id).await?;
        row_event(conn, now, ev.kind, &board, &row, by, &ev.extra).await?;
    }
    if !created {
        settle(conn, now, board, by).await?;
    }
    load_full(conn, board_id).await
}

/// `board_row` (`by_ref`: the write of `board_outcome`, its row named by
/// label or id).
pub(crate) async fn row(
    s: &Store,
    pg: &Pg,
    w: &RowWrite,
    by_ref: bool,
) -> Result<Decided<BoardFull>> {
    s.pg_write(pg, Arc::new(w.clone()), move |conn, w, now| {
        Box::pin(async move {
            let board_id = decided!(open_board(conn, &w.board, w.project.as_deref()).await?);
            if !by_ref {
                return row_in(conn, now, &board_id, &w).await;
            }
            let row_id = decided!(resolve_row(conn, &board_id, &w.row.label).await?);
            let mut w = (*w).clone();
            w.row.label = load_row(conn, &row_id).await?.label;
            row_in(conn, now, &board_id, &w).await
        })
    })
    .await
}

async fn row_in(
    conn: &mut PgConnection,
    now: i64,
    board_id: &str,
    w: &RowWrite,
) -> Result<Decided<BoardFull>> {
    let board = load_board(conn, board_id).await?;
    let stored = load_rows(conn, board_id).await?;
    let rows = std::slice::from_ref(&w.row);
    let stale = mismatches(&stored, rows);
    let board_stale = w.board_version.is_some_and(|v| v != board.board_version);
    if board_stale || !stale.is_empty() {
        return Ok(Err(Refusal::Stale {
            board_version: board.board_version,
            rows: stale,
        }));
    }
    let (plans, events) = decided!(plan_rows(&stored, rows));
    if events.is_empty() {
        return Ok(Ok(load_full(conn, board_id).await?));
    }
    apply(conn, now, board_id, plans).await?;
    let by = By {
        actor: &w.by,
        channel: Channel::Agent,
    };
    Ok(Ok(
        finish(conn, now, board_id, None, events, by, false).await?
    ))
}

/// `board_advance`: archive the row's step into its history and install
/// the next one, blocked.
pub(crate) async fn advance(s: &Store, pg: &Pg, a: &Advance) -> Result<Decided<BoardFull>> {
    s.pg_write(pg, Arc::new(a.clone()), |conn, a, now| {
        Box::pin(async move { advance_in(conn, &a, now).await })
    })
    .await
}

async fn advance_in(conn: &mut PgConnection, a: &Advance, now: i64) -> Result<Decided<BoardFull>> {
    let board_id = decided!(open_board(conn, &a.board, a.project.as_deref()).await?);
    let row_id = decided!(resolve_row(conn, &board_id, &a.label).await?);
    let board = load_board(conn, &board_id).await?;
    let row = load_row(conn, &row_id).await?;
    let outcome = decided!(advance_checked(&board, &row, a));
    let done = bind_next(sqlx::query(INSTALL_NEXT), now, &row, &outcome, &a.next)?
        .execute(&mut *conn)
        .await?;
    confirm_one(done.rows_affected(), &row.id)?;
    let events = advance_events(&row, row_id, &outcome);
    let by = By {
        actor: &a.by,
        channel: Channel::Agent,
    };
    Ok(Ok(
        finish(conn, now, &board_id, None, events, by, false).await?
    ))
}

/// `board_archive`: archive a board by hand (CAS on its version).
pub(crate) async fn archive(
    s: &Store,
    pg: &Pg,
    board: &str,
    project: Option<&str>,
    board_version: i64,
    by: &str,
) -> Result<Decided<Archived>> {
    let input = Arc::new((
        board.to_string(),
        project.map(str::to_string),
        by.to_string(),
    ));
    s.pg_write(pg, input, move |conn, input, now| {
        Box::pin(async move {
            let (board, project, by) = &*input;
            let board_id = decided!(open_board(conn, board, project.as_deref()).await?);
            // Why guarded: the version is the CAS token and only an
            // active board can be archived.
            let done = sqlx::query(
                "UPDATE boards SET archived_at = $1, auto_archived = 0, revision = revision + 1,
                    updated_at = $1
                 WHERE id = $2 AND revision = $3 AND archived_at IS NULL",
            )
            .bind(now)
            .bind(&board_id)
            .bind(board_version)
            .execute(&mut *conn)
            .await?;
            let current = load_board(conn, &board_id).await?;
            if done.rows_affected() == 0 {
                return Ok(Err(if current.board_version != board_version {
                    Refusal::Stale {
                        board_version: current.board_version,
                        rows: Vec::new(),
                    }
                } else {
                    Refusal::Archived
                }));
            }
            let payload = json!({
                "title": current.title,
                "board_version": current.board_version,
                "auto": false,
            });
            let by = By {
                actor: by,
                channel: Channel::Cli,
            };
            board_event(conn, now, "board.archived", &current, by, &payload).await?;
            Ok(Ok(current))
        })
    })
    .await
}
