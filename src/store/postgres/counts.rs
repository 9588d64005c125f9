//! The `/metrics` counts on PostgreSQL: `store/counts.rs`'s reads in
//! PostgreSQL's spelling (`SUM` of a BIGINT is NUMERIC there, so it is cast
//! back), taken in one REPEATABLE READ snapshot so the three agree.

use super::Pg;
use crate::store::Result;
use crate::store::counts::RawCounts;

/// Action counts by stored status, lapsed pending actions by `on_expire`
/// at `now`, and open questions, of `project` (all when `None`).
pub(crate) async fn counts(pg: &Pg, project: Option<&str>, now: i64) -> Result<RawCounts> {
    let mut tx = pg.pool().begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let stored: Vec<(String, i64)> = sqlx::query_as(
        "SELECT status, SUM(n)::BIGINT FROM action_counts
         WHERE ($1::TEXT IS NULL OR project = $1) GROUP BY status",
    )
    .bind(project)
    .fetch_all(&mut *tx)
    .await?;
    let lapsed: Vec<(String, i64)> = sqlx::query_as(
        "SELECT on_expire, COUNT(*) FROM actions
         WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $2
           AND ($1::TEXT IS NULL OR project = $1)
         GROUP BY on_expire",
    )
    .bind(project)
    .bind(now)
    .fetch_all(&mut *tx)
    .await?;
    let open: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM questions WHERE status = 'open' AND ($1::TEXT IS NULL OR project = $1)",
    )
    .bind(project)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((stored, lapsed, open))
}
