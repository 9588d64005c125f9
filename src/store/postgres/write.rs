//! The write path on PostgreSQL: every write is one transaction of its own
//! on the pool, at READ COMMITTED, and nothing like SQLite's write turn.
//!
//! Why READ COMMITTED is enough: every transition is a guarded
//! `UPDATE … WHERE <state predicate> RETURNING *` (or an upsert on a
//! unique index). PostgreSQL locks the row it updates and, when another
//! transaction changed it meanwhile, waits for that one and re-checks the
//! predicate on the new row, so of N racing writers exactly one wins, as
//! SQLite's single writer decides. What a refused write reads to explain
//! itself is read under a row lock (`SELECT … FOR UPDATE`, see
//! `store/questions/reply.rs`), so the explanation is the state that refused.
//!
//! Where SQLite runs one multi-statement call guarded by `changes()`
//! (sessions, inbound wakes: see `sessions.rs`), the PostgreSQL version is
//! meant to be its statements run one after another in this transaction,
//! each later one skipped by the Rust code when the guarded one changed
//! nothing. Why not a CTE: data-modifying CTEs all see one snapshot and run
//! in no promised order, and the event must be appended last (the counter
//! row's lock is held until commit); why no savepoint: a failed statement
//! aborts the whole transaction anyway, which is then retried or refused
//! whole.
//!
//! A transaction PostgreSQL rolls back as a serialization failure or a
//! deadlock is run again, whole, by [`Store::retry`] (with a fresh "now").
//! Under a request id ([`crate::store::request`]) a write remembers its
//! value in its own transaction, or replays what a first attempt
//! remembered, as the SQLite write turn does.

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::PgConnection;

use super::Pg;
use crate::store::engine::Tx;
use crate::store::request::{self, Scope};
use crate::store::{Result, Store};

impl Store {
    /// Run `op` with its own copy of `input` and the clock's time in a
    /// transaction of its own on `pg`, committed when `op` returns `Ok`
    /// (a typed refusal inside is a normal outcome: committed too) and
    /// rolled back on `Err`. Retried as [`Store::retry`] says.
    pub(crate) async fn pg_write<I, T, F>(&self, pg: &Pg, input: I, op: F) -> Result<T>
    where
        I: Clone + Send + 'static,
        T: Serialize + DeserializeOwned + Send + 'static,
        F: for<'c> Fn(&'c mut PgConnection, I, i64) -> BoxFuture<'c, Result<T>> + Send + Sync,
    {
        let scope = request::current();
        let clock = self.clock().clone();
        let (op, scope, clock) = (&op, &scope, &clock);
        self.retry(|| {
            let input = input.clone();
            async move {
                let mut tx = pg.pool().begin().await?;
                let out = match scope {
                    None => op(&mut tx, input, clock.now_ms()).await?,
                    Some(scope) => {
                        take_turn(&mut tx, scope).await?;
                        match request::remembered::<T>(&mut Tx::Pg(&mut tx), scope).await? {
                            Some(value) => value,
                            None => {
                                let out = op(&mut tx, input, clock.now_ms()).await?;
                                let (value, now) = (request::value_of(&out)?, clock.now_ms());
                                request::remember::<T>(&mut Tx::Pg(&mut tx), scope, value, now)
                                    .await?;
                                out
                            }
                        }
                    }
                };
                tx.commit().await?;
                if let Some(scope) = scope {
                    scope.committed();
                }
                Ok(out)
            }
        })
        .await
    }
}

/// Take a transaction-scoped advisory lock on the scope's (request id,
/// write number), so two attempts of one call racing on two connections
/// run one after the other: the second replays the first.
async fn take_turn(tx: &mut PgConnection, scope: &Scope) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, $2))")
        .bind(scope.key())
        .bind(scope.next())
        .execute(&mut *tx)
        .await?;
    Ok(())
}
