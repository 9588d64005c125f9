//! The execution ledger on PostgreSQL: a call's start and outcome, and
//! the reads. The statements are SQLite's (`store/sessions/ledger.rs`):
//! an `INSERT … ON CONFLICT DO NOTHING RETURNING *` whose trigger
//! (`execution_ledger_log`, migration 20261201000520) appends the
//! `ledger.*` event with SQLite's payload text, and the UNIQUE indexes
//! deciding one start and at most one outcome per call. A racing twin
//! waits for the first insert's commit and then inserts nothing; what it
//! reads next (a new statement at READ COMMITTED) is the committed row.

use sqlx::PgConnection;

use super::Pg;
use crate::store::sessions::ledger::{
    Call, Outcome, begin_differs, complete_refused, entry_from, registered,
};
use crate::store::sessions::{Begin, Complete, LedgerEntry};
use crate::store::{Result, Store};

async fn row_where(
    conn: &mut PgConnection,
    session_id: &str,
    event_id: &str,
    started: bool,
) -> Result<Option<LedgerEntry>> {
    let sql = if started {
        "SELECT * FROM execution_ledger WHERE session_id = $1 AND event_id = $2 AND status = 'started'"
    } else {
        "SELECT * FROM execution_ledger WHERE session_id = $1 AND event_id = $2 AND status <> 'started'"
    };
    let row = sqlx::query(sql)
        .bind(session_id)
        .bind(event_id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(entry_from).transpose()
}

/// Record a start (see [`Store::ledger_begin`]).
pub(crate) async fn begin(s: &Store, pg: &Pg, c: std::sync::Arc<Call>) -> Result<Begin> {
    s.pg_write(pg, c, |conn, c, now| {
        Box::pin(async move {
            let row = sqlx::query(
                "INSERT INTO execution_ledger
                     (event_id, session_id, tool, payload, payload_hash, status, replay_safe, at)
                 VALUES ($1, $2, $3, $4, $5, 'started', $6, $7)
                 ON CONFLICT DO NOTHING RETURNING *",
            )
            .bind(&c.event_id)
            .bind(&c.session_id)
            .bind(&c.tool)
            .bind(&c.payload)
            .bind(&c.hash)
            .bind(i64::from(c.replay_safe))
            .bind(now)
            .fetch_optional(&mut *conn)
            .await;
            let row = registered(row, &c.session_id)?;
            if let Some(row) = row {
                return Ok(Begin::Started {
                    entry: entry_from(&row)?,
                });
            }
            let existing = row_where(conn, &c.session_id, &c.event_id, true)
                .await?
                .ok_or_else(|| crate::store::Error::Corrupt("ledger start vanished".into()))?;
            let differs = begin_differs(&existing, &c.tool, &c.hash, c.replay_safe);
            if !differs.is_empty() {
                return Ok(Begin::Conflict { existing, differs });
            }
            let finished = row_where(conn, &c.session_id, &c.event_id, false).await?;
            Ok(Begin::Existing {
                entry: existing,
                finished,
            })
        })
    })
    .await
}

/// Record an outcome (see [`Store::ledger_complete`]).
pub(crate) async fn complete(s: &Store, pg: &Pg, o: std::sync::Arc<Outcome>) -> Result<Complete> {
    s.pg_write(pg, o, |conn, o, now| {
        Box::pin(async move {
            // Why INSERT … SELECT: the outcome copies the started row, so
            // it exists only if the call was begun; the partial UNIQUE index
            // lets exactly one outcome in.
            let row = sqlx::query(
                "INSERT INTO execution_ledger
                     (event_id, session_id, tool, payload, payload_hash, status, result,
                      result_hash, replay_safe, at)
                 SELECT event_id, session_id, tool, payload, payload_hash, $1, $2, $3,
                        replay_safe, $4
                 FROM execution_ledger
                 WHERE session_id = $5 AND event_id = $6 AND status = 'started'
                 ON CONFLICT DO NOTHING RETURNING *",
            )
            .bind(o.status)
            .bind(&o.text)
            .bind(&o.hash)
            .bind(now)
            .bind(&o.session_id)
            .bind(&o.event_id)
            .fetch_optional(&mut *conn)
            .await?;
            if let Some(row) = row {
                return Ok(Complete::Completed {
                    entry: entry_from(&row)?,
                });
            }
            let Some(existing) = row_where(conn, &o.session_id, &o.event_id, false).await? else {
                return Ok(Complete::NotStarted);
            };
            let stored_hash: Option<String> =
                sqlx::query_scalar("SELECT result_hash FROM execution_ledger WHERE seq = $1")
                    .bind(existing.seq)
                    .fetch_one(&mut *conn)
                    .await?;
            Ok(complete_refused(existing, stored_hash.as_deref(), &o))
        })
    })
    .await
}

/// The sessions (of `project`, or all) that began a call `event_id`.
pub(crate) async fn sessions(
    pg: &Pg,
    event_id: &str,
    project: Option<&str>,
    limit: i64,
) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT l.session_id FROM execution_ledger l
             JOIN agent_sessions s ON s.session_id = l.session_id
         WHERE l.event_id = $1 AND l.status = 'started' AND ($2::TEXT IS NULL OR s.project = $2)
         ORDER BY l.seq LIMIT $3",
    )
    .bind(event_id)
    .bind(project)
    // SQLite reads a negative LIMIT as none; PostgreSQL reads NULL so.
    .bind((limit >= 0).then_some(limit))
    .fetch_all(pg.pool())
    .await?)
}

/// A session's rows, oldest first; with `last`, only the newest `last`.
pub(crate) async fn list(pg: &Pg, session_id: &str, last: Option<i64>) -> Result<Vec<LedgerEntry>> {
    let rows = sqlx::query(
        "SELECT * FROM (
             SELECT * FROM execution_ledger WHERE session_id = $1
             ORDER BY seq DESC LIMIT $2
         ) tail ORDER BY seq",
    )
    .bind(session_id)
    .bind(last.filter(|n| *n >= 0))
    .fetch_all(pg.pool())
    .await?;
    rows.iter().map(entry_from).collect()
}

/// A session's calls begun and never finished, oldest first.
pub(crate) async fn interrupted(pg: &Pg, session_id: &str) -> Result<Vec<LedgerEntry>> {
    let rows = sqlx::query(
        "SELECT s.* FROM execution_ledger s
         WHERE s.session_id = $1 AND s.status = 'started'
           AND NOT EXISTS (SELECT 1 FROM execution_ledger o
                           WHERE o.session_id = s.session_id AND o.event_id = s.event_id
                             AND o.status <> 'started')
         ORDER BY s.seq",
    )
    .bind(session_id)
    .fetch_all(pg.pool())
    .await?;
    rows.iter().map(entry_from).collect()
}
