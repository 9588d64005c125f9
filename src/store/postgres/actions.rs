//! Pending actions on PostgreSQL: the reads (ids, one action, lists, the
//! audit trail, what recovery looks for), the audit of a refused attempt
//! and the purge. The transitions are in `action_moves.rs`.
//!
//! The statements are SQLite's (`store/actions.rs`, `actions/recovery.rs`)
//! in PostgreSQL's spelling: `$N` placeholders, `right()` for a suffix and
//! `COLLATE "C"` where an id breaks a tie, so a list comes back in SQLite's
//! byte order whatever the database's collation.

use serde_json::json;
use sqlx::PgConnection;

use super::Pg;
use crate::store::Channel;
use crate::store::actions::recovery::purge_statements;
use crate::store::actions::{
    Action, Actor, AuditEntry, COLUMNS, Error, PurgeReport, Result, audit_from_row, from_row,
    record_payload,
};
use crate::store::{NewEvent, Store};

/// One action by full id on `conn`; with `lock`, its row stays locked
/// until the transaction ends (see `questions.rs` on why a refusal is
/// explained under the lock).
pub(crate) async fn load_on(conn: &mut PgConnection, id: &str, lock: bool) -> Result<Action> {
    let sql = format!(
        "SELECT {COLUMNS} FROM actions WHERE id = $1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    match row {
        Some(r) => from_row(&r),
        None => Err(Error::NotFound(id.to_string())),
    }
}

/// One action by full id.
pub(crate) async fn get(pg: &Pg, id: &str) -> Result<Action> {
    let mut conn = pg.pool().acquire().await?;
    load_on(&mut conn, id, false).await
}

/// Up to 2 ids equal to `needle` or ending with it, among `project`'s
/// actions (all when `None`).
pub(crate) async fn ids_like(pg: &Pg, needle: &str, project: Option<&str>) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM actions
         WHERE (id = $1 OR (length($1) < 32 AND right(id, length($1)) = $1))
           AND ($2::TEXT IS NULL OR project = $2)
         LIMIT 2",
    )
    .bind(needle)
    .bind(project)
    .fetch_all(pg.pool())
    .await?)
}

/// Every action of `project` (all when `None`), newest first, reading
/// `columns` (the caller's list: all of them, or the light ones).
pub(crate) async fn list(pg: &Pg, columns: &str, project: Option<&str>) -> Result<Vec<Action>> {
    let sql = format!(
        "SELECT {columns} FROM actions WHERE ($1::TEXT IS NULL OR project = $1)
         ORDER BY created_at DESC, id COLLATE \"C\" DESC"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(project)
        .fetch_all(pg.pool())
        .await?;
    rows.iter().map(from_row).collect()
}

/// The audit trail of one action, oldest first.
pub(crate) async fn audit(pg: &Pg, id: &str) -> Result<Vec<AuditEntry>> {
    let rows = sqlx::query(
        "SELECT seq, action_id, at, actor, event, details FROM action_audit
         WHERE action_id = $1 ORDER BY seq",
    )
    .bind(id)
    .fetch_all(pg.pool())
    .await?;
    rows.iter().map(audit_from_row).collect()
}

/// `executing` actions whose lease ran out by `now`, oldest first.
pub(crate) async fn lapsed(pg: &Pg, now: i64) -> Result<Vec<Action>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM actions WHERE status = 'executing' AND lease_until <= $1
         ORDER BY created_at, id COLLATE \"C\""
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .fetch_all(pg.pool())
        .await?;
    rows.iter().map(from_row).collect()
}

/// Approved actions nobody has claimed, newest first.
pub(crate) async fn claimable(pg: &Pg) -> Result<Vec<Action>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM actions WHERE status = 'approved'
         ORDER BY created_at DESC, id COLLATE \"C\" DESC"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(pg.pool())
        .await?;
    rows.iter().map(from_row).collect()
}

/// Append one event in the caller's transaction (last in it: the event
/// counter's row lock is held until commit).
async fn append(conn: &mut PgConnection, at: i64, ev: &NewEvent<'_>) -> Result<()> {
    super::write::append(conn, at, ev).await?;
    Ok(())
}

/// One refused attempt to audit, owned for the retries.
#[derive(Clone)]
pub(crate) struct Attempt {
    pub(crate) id: String,
    pub(crate) actor: String,
    pub(crate) channel: Channel,
    pub(crate) reason: String,
}

/// Audit a refused decision attempt: its audit row and its event, as
/// `actions::record` writes them on SQLite. Changes no state.
pub(crate) async fn refused_attempt(s: &Store, pg: &Pg, a: Attempt) -> Result<()> {
    let id = a.id.clone();
    let found = s
        .pg_write(pg, std::sync::Arc::new(a), |conn, a, now| {
            Box::pin(async move { attempt_in(conn, &a, now).await.map_err(into_store) })
        })
        .await?;
    if found {
        Ok(())
    } else {
        Err(Error::NotFound(id))
    }
}

/// Write the refused attempt's audit row and event; `false` when there is
/// no such action.
async fn attempt_in(conn: &mut PgConnection, a: &Attempt, now: i64) -> Result<bool> {
    let action = match load_on(conn, &a.id, false).await {
        Err(Error::NotFound(_)) => return Ok(false),
        other => other?,
    };
    {
        {
            let details = json!({ "reason": a.reason });
            sqlx::query(
                "INSERT INTO action_audit (action_id, at, actor, event, details)
                 VALUES ($1, $2, $3, 'refused_attempt', $4)",
            )
            .bind(&action.id)
            .bind(now)
            .bind(&a.actor)
            .bind(details.to_string())
            .execute(&mut *conn)
            .await?;
            let actor = Actor {
                name: &a.actor,
                channel: a.channel,
            };
            let ev = NewEvent {
                kind: "action.refused_attempt",
                entity_kind: "action",
                entity_id: &action.id,
                actor: actor.name,
                channel: actor.channel,
                project: &action.project,
                session: &action.session,
                payload: record_payload(&action, details),
            };
            append(conn, now, &ev).await?;
            Ok(true)
        }
    }
}

/// An actions error inside a [`Store::pg_write`] (whose errors are the
/// store's). Only store errors reach it: the callers turn a missing
/// action or a dedup conflict into a value first; anything else is
/// [`crate::store::Error::Invalid`] naming it rather than lost.
pub(crate) fn into_store(e: Error) -> crate::store::Error {
    match e {
        Error::Store(s) => s,
        other => crate::store::Error::Invalid(other.to_string()),
    }
}

/// Delete settled actions last changed before `before`, with their
/// approvals and audit rows, in one transaction (see
/// [`Store::purge_actions`]); the events last.
pub(crate) async fn purge(s: &Store, pg: &Pg, before: i64) -> Result<PurgeReport> {
    s.pg_write(pg, before, |conn, before, now| {
        Box::pin(async move { purge_in(conn, before, now).await.map_err(into_store) })
    })
    .await
    .map_err(Error::Store)
}

// A settled action never changes again, so what the guard statement
// picks stays settled; a purge racing this one waits on the guard rows
// and then finds their actions gone (`ON CONFLICT DO NOTHING`).
purge_statements!(
    PgConnection,
    guard: "INSERT INTO action_purge_guard (action_id)
         SELECT id FROM actions
         WHERE updated_at < $1 AND status IN ('executed','failed','rejected','expired')
         ON CONFLICT DO NOTHING",
    append: append,
);
