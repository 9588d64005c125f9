//! The approval on PostgreSQL: the body of the write its SQLite twin in
//! `approval.rs` (`approve_in_one_call`) runs beside it, through
//! `Store::write_split`. The rules and the guarded UPDATE are the same;
//! what differs is the shape.
//!
//! SQLite's one call also reads a refusal's explanation (`changes() = 0`).
//! Here the action's row is locked before the guarded UPDATE, and a
//! refusal is explained by the row as locked, which nothing changed since.
//! Why the lock: at READ COMMITTED an UPDATE that waited for another
//! approver's re-checks the row's own columns but reads `action_approvals`
//! as of its start, so the same approver racing itself would pass the
//! "not counted yet" check and fail on the approvals row's unique index.
//! Under the row lock every approval of this action has committed (only
//! an UPDATE of that row writes one), so the check sees them all.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use sqlx::PgConnection;

use super::approval::{Approval, Approving, approve_sql};
use super::spelling::Sql;
use super::{load, one};
use crate::store::Result;
use crate::store::engine::{Stmt, Tx};

/// The guarded approval, as SQLite's call runs it first.
static APPROVE: Sql = Sql::new(|s| approve_sql(s, super::COLUMNS, None));

/// Apply one approval under the action's row lock (see the module docs).
pub(super) fn approve(
    conn: &mut PgConnection,
    a: Arc<Approval>,
    now: i64,
) -> BoxFuture<'_, Result<Approving>> {
    Box::pin(async move {
        let mut tx = Tx::Pg(conn);
        let Some(locked) = load(&mut tx, &a.id, true).await? else {
            return Ok(Approving::Missing);
        };
        if let Some(action) = one(&mut tx, &a.bind(&APPROVE, now)).await? {
            return Ok(Approving::won(action));
        }
        let counted = Stmt::new(
            "SELECT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = $1 AND approver = $2)",
        )
        .text(a.id.as_str())
        .text(a.actor.as_str());
        let (counted,): (bool,) = tx.row(&counted).await?.ok_or(sqlx::Error::RowNotFound)?;
        Ok(Approving::Refused {
            action: Box::new(locked),
            counted,
        })
    })
}
