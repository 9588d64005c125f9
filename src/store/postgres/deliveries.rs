//! Wake-up deliveries on PostgreSQL: enqueue, claim, the three outcomes
//! guarded by the claim's attempt number, recovery and the reads. The
//! statements are SQLite's (`store/deliveries.rs`), each write in a
//! transaction of its own (`write.rs`).
//!
//! Claiming: the due rows are picked `FOR UPDATE SKIP LOCKED`, so two
//! daemons claiming at once take different rows instead of the second
//! waiting for the first and then finding its picks taken; the
//! `status = 'pending'` guard still lets exactly one attempt flip a row.
//! Why the pick is a CTE of its own: as `id IN (… LIMIT n FOR UPDATE)`
//! inside the UPDATE, PostgreSQL may run the subquery more than once and
//! claim more than `n` rows (a test caught 3 claimed for a limit of 1);
//! a locking CTE runs once.
//!
//! Giving up (`dead`): SQLite's one savepoint call checks in SQL that its
//! own write stands before it disables the target; here the guarded UPDATE
//! returning a row says so, and the rest follows in the same transaction,
//! the `delivery.dead` event last.

use std::sync::Arc;

use super::Pg;
use super::sessions::{Append, append};
use crate::store::deliveries::{Delivery, from_row};
use crate::store::{Event, Result, Store};

/// One target to enqueue: key, origin, target (JSON), lease (ms).
pub(crate) type Row = (String, String, String, i64);

/// Enqueue `event_seq` for each target not enqueued for it yet and not
/// disabled; how many rows were inserted.
pub(crate) async fn enqueue(
    s: &Store,
    pg: &Pg,
    event_seq: i64,
    rows: Arc<Vec<Row>>,
    first_delay_ms: i64,
) -> Result<u64> {
    s.pg_write(pg, rows, move |conn, rows, now| {
        Box::pin(async move {
            let mut inserted = 0;
            for (target_key, origin, target, lease_ms) in rows.iter() {
                inserted += sqlx::query(
                    "INSERT INTO deliveries
                        (event_seq, target_key, origin, target, next_attempt_at, lease_ms,
                         created_at, updated_at)
                     SELECT $1, $2, $3, $4, $5, $6, $7, $7
                     WHERE NOT EXISTS (SELECT 1 FROM disabled_targets WHERE target_key = $2)
                     ON CONFLICT (event_seq, target_key) DO NOTHING",
                )
                .bind(event_seq)
                .bind(target_key)
                .bind(origin)
                .bind(target)
                .bind(now + first_delay_ms)
                .bind(lease_ms)
                .bind(now)
                .execute(&mut *conn)
                .await?
                .rows_affected();
            }
            Ok(inserted)
        })
    })
    .await
}

/// Claim up to `limit` due deliveries, in the order they fell due.
pub(crate) async fn claim(s: &Store, pg: &Pg, limit: i64) -> Result<Vec<Delivery>> {
    s.pg_write(pg, (), move |conn, (), now| {
        Box::pin(async move {
            let rows = sqlx::query(
                "WITH picked AS (
                     SELECT id FROM deliveries
                      WHERE status = 'pending' AND next_attempt_at <= $1
                      ORDER BY next_attempt_at, id LIMIT $2
                      FOR UPDATE SKIP LOCKED
                 ), claimed AS (
                     UPDATE deliveries d
                        SET status = 'delivering', attempts = d.attempts + 1,
                            lease_until = $1 + d.lease_ms, updated_at = $1
                       FROM picked
                      WHERE d.id = picked.id AND d.status = 'pending' AND d.next_attempt_at <= $1
                      RETURNING d.*)
                 SELECT * FROM claimed ORDER BY next_attempt_at, id",
            )
            .bind(now)
            .bind((limit >= 0).then_some(limit))
            .fetch_all(conn)
            .await?;
            rows.iter().map(from_row).collect()
        })
    })
    .await
}

/// The claimed attempt delivered; false when the claim was lost.
pub(crate) async fn delivered(s: &Store, pg: &Pg, id: i64, attempts: i64) -> Result<bool> {
    s.pg_write(pg, (), move |conn, (), now| {
        Box::pin(async move {
            let n = sqlx::query(
                "UPDATE deliveries SET status = 'delivered', lease_until = NULL, last_error = NULL,
                        updated_at = $1
                  WHERE id = $2 AND status = 'delivering' AND attempts = $3",
            )
            .bind(now)
            .bind(id)
            .bind(attempts)
            .execute(conn)
            .await?
            .rows_affected();
            Ok(n == 1)
        })
    })
    .await
}

/// The claimed attempt failed: pending again at `next_at` with `error`;
/// false when the claim was lost.
pub(crate) async fn retry(
    s: &Store,
    pg: &Pg,
    (id, attempts): (i64, i64),
    next_at: i64,
    error: Arc<String>,
) -> Result<bool> {
    s.pg_write(pg, error, move |conn, error, now| {
        Box::pin(async move {
            let n = sqlx::query(
                "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, lease_until = NULL,
                        last_error = $2, updated_at = $3
                  WHERE id = $4 AND status = 'delivering' AND attempts = $5",
            )
            .bind(next_at)
            .bind(&*error)
            .bind(now)
            .bind(id)
            .bind(attempts)
            .execute(conn)
            .await?
            .rows_affected();
            Ok(n == 1)
        })
    })
    .await
}

/// What giving up writes: the delivery, the event it carried, the error
/// and the `delivery.dead` payload (compact JSON).
pub(crate) type Dead = Arc<(Delivery, Event, String, String)>;

/// Give up on the claimed attempt (see [`Store::delivery_dead`]).
pub(crate) async fn dead(s: &Store, pg: &Pg, input: Dead, disable: bool) -> Result<bool> {
    s.pg_write(pg, input, move |conn, input, now| {
        Box::pin(async move {
            let (d, ev, error, payload) = &*input;
            let won = sqlx::query(
                "UPDATE deliveries SET status = 'dead', lease_until = NULL, last_error = $1,
                        updated_at = $2
                  WHERE id = $3 AND status = 'delivering' AND attempts = $4",
            )
            .bind(error)
            .bind(now)
            .bind(d.id)
            .bind(d.attempts)
            .execute(&mut *conn)
            .await?
            .rows_affected()
                == 1;
            if !won {
                return Ok(false);
            }
            if disable {
                sqlx::query(
                    "INSERT INTO disabled_targets (target_key, reason, disabled_at)
                     VALUES ($1, $2, $3) ON CONFLICT (target_key) DO NOTHING",
                )
                .bind(&d.target_key)
                .bind(error)
                .bind(now)
                .execute(&mut *conn)
                .await?;
                // Only pending rows die: a row another attempt holds
                // settles through its own guarded write.
                sqlx::query(
                    "UPDATE deliveries SET status = 'dead', last_error = 'target disabled: ' || $1,
                            updated_at = $2
                      WHERE target_key = $3 AND status = 'pending'",
                )
                .bind(error)
                .bind(now)
                .bind(&d.target_key)
                .execute(&mut *conn)
                .await?;
            }
            append(
                conn,
                now,
                &Append {
                    kind: "delivery.dead",
                    entity_kind: &ev.entity_kind,
                    entity_id: &ev.entity_id,
                    actor: "notify",
                    channel: "daemon",
                    project: &ev.project,
                    session: &ev.session,
                    payload,
                },
            )
            .await?;
            Ok(true)
        })
    })
    .await
}

/// Lapsed attempts back to pending, due now; how many.
pub(crate) async fn recover(s: &Store, pg: &Pg) -> Result<u64> {
    s.pg_write(pg, (), move |conn, (), now| {
        Box::pin(async move {
            Ok(sqlx::query(
                "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, lease_until = NULL,
                        last_error = COALESCE(last_error,
                                              'interrupted (the daemon stopped mid-delivery)'),
                        updated_at = $1
                  WHERE status = 'delivering' AND lease_until <= $1",
            )
            .bind(now)
            .execute(conn)
            .await?
            .rows_affected())
        })
    })
    .await
}

/// When the worker next has something to do.
pub(crate) async fn next_work(pg: &Pg) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT MIN(CASE status WHEN 'pending' THEN next_attempt_at ELSE lease_until END)
           FROM deliveries WHERE status IN ('pending', 'delivering')",
    )
    .fetch_one(pg.pool())
    .await?)
}

/// Deliveries, oldest first: of one event, or all.
pub(crate) async fn list(pg: &Pg, event_seq: Option<i64>) -> Result<Vec<Delivery>> {
    let rows = sqlx::query(
        "SELECT * FROM deliveries WHERE ($1::BIGINT IS NULL OR event_seq = $1) ORDER BY id",
    )
    .bind(event_seq)
    .fetch_all(pg.pool())
    .await?;
    rows.iter().map(from_row).collect()
}

/// Why `target_key` is disabled, if it is.
pub(crate) async fn disabled(pg: &Pg, target_key: &str) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT reason FROM disabled_targets WHERE target_key = $1")
            .bind(target_key)
            .fetch_optional(pg.pool())
            .await?,
    )
}
