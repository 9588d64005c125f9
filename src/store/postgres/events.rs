//! Reading the event log on PostgreSQL: the same reads as
//! `store/events.rs`, and [`count_rows`].
//!
//! Why reading by `seq` is safe here although several processes append at
//! once: `events.seq` is handed out in commit order (the counter row of
//! migration 20261201000510), so once a `seq` is visible every lower one
//! is too, and a follower that moves its cursor past what it read never
//! skips a row that commits later. Nothing here writes.

use sqlx::PgConnection;

use crate::store::events::{EventPage, Span, from_row, tail_reads};
use crate::store::{Error, Event, Result};

use super::Pg;

/// The sizes of the events with `seq > after`, at most `limit` (see
/// [`crate::store::Store::events_span_after`]).
pub(crate) async fn sizes_after(pg: &Pg, after: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
    Ok(sqlx::query_as(
        "SELECT seq, octet_length(payload)::BIGINT FROM events WHERE seq > $1 ORDER BY seq LIMIT $2",
    )
    .bind(after)
    // SQLite reads a negative LIMIT as none; PostgreSQL refuses it but
    // reads NULL so.
    .bind((limit >= 0).then_some(limit))
    .fetch_all(pg.pool())
    .await?)
}

/// A read-only transaction with one snapshot. Why REPEATABLE READ: under
/// PostgreSQL's default READ COMMITTED each statement takes its own
/// snapshot; the newest seq, the sizes and the rows must come from one.
/// Read-only, so it can never fail to serialize.
async fn snapshot(pg: &Pg) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
    let mut tx = pg.pool().begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    Ok(tx)
}

/// The newest `n` events within the page budget, and the newest seq (see
/// [`crate::store::Store::events_tail`]).
pub(crate) async fn tail(pg: &Pg, n: i64) -> Result<EventPage> {
    let mut tx = snapshot(pg).await?;
    let span = tail_span_in(&mut tx, n).await?;
    let events = span_rows_in(&mut tx, &span).await?;
    tx.commit().await?;
    Ok(EventPage {
        events,
        next_after: span.next_after,
    })
}

/// Where [`tail`] reads (see [`crate::store::Store::events_span_tail`]).
pub(crate) async fn tail_span(pg: &Pg, n: i64) -> Result<Span> {
    let mut tx = snapshot(pg).await?;
    let span = tail_span_in(&mut tx, n).await?;
    tx.commit().await?;
    Ok(span)
}

tail_reads!(
    PgConnection,
    sizes: "SELECT seq, octet_length(payload)::BIGINT FROM events WHERE seq <= $1
         ORDER BY seq DESC LIMIT $2",
);

/// Events about one entity, oldest first.
pub(crate) async fn of_entity(pg: &Pg, entity_kind: &str, entity_id: &str) -> Result<Vec<Event>> {
    let rows =
        sqlx::query("SELECT * FROM events WHERE entity_kind = $1 AND entity_id = $2 ORDER BY seq")
            .bind(entity_kind)
            .bind(entity_id)
            .fetch_all(pg.pool())
            .await?;
    rows.iter().map(from_row).collect()
}

/// The newest seq, or 0 for an empty log.
pub(crate) async fn newest(pg: &Pg) -> Result<i64> {
    let seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
        .fetch_one(pg.pool())
        .await?;
    Ok(seq.unwrap_or(0))
}

/// `sql` (`SELECT COUNT(*) FROM <table>`, the name checked by the caller).
pub(crate) async fn count_rows(pg: &Pg, sql: String) -> Result<i64> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(pg.pool())
        .await
        .map_err(Error::from)
}
