//! The write turn with group commit: every writer of this process queues
//! its operation here, and whoever takes the turn runs everything queued
//! at that moment in one transaction.
//!
//! - A lone writer runs alone and in autocommit: its guarded statement (one
//!   `UPDATE … RETURNING` whose triggers append the event and audit rows)
//!   is its whole transaction — one round trip, no `BEGIN`, no `COMMIT`.
//! - Several queued writers share one `BEGIN IMMEDIATE … COMMIT`. Each
//!   keeps its own guarded predicate and gets its own outcome, and only
//!   after the batch committed.
//! - An operation that writes more than one statement calls [`Turn::begin`]
//!   before it: alone, that opens its own transaction; in a batch, its own
//!   savepoint. An error or a panic after that undoes its writes and no one
//!   else's. A single statement needs neither: SQLite applies a statement
//!   whole or not at all, so a refused or failed one leaves nothing.
//! - No timers: the batch is whatever is queued when the turn comes, so a
//!   lone writer is never delayed waiting for company.
//!
//! The turn is the same fair mutex the older `begin_write` transactions
//! take, so the two kinds of writers never meet at SQLite's busy handler.

use std::panic::{AssertUnwindSafe, Location};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;

use super::engine::Tx;
use super::{Error, Store, request};

pub(crate) mod queue;
pub(crate) mod turn;

use queue::{Done, Failure, Job, Queued};

use turn::Mode;
pub(crate) use turn::{CALL_OPEN, Turn, call_text, one_call};

impl Store {
    /// Run `op` with the write turn, batched with whatever other writers
    /// are queued (see the module docs), on behalf of a caller at `at` (the
    /// location an [`Error::Unsupported`] names on a PostgreSQL store).
    /// `op` returns its own result; an `Err` (or a panic) undoes its writes
    /// and nobody else's. The caller retries a busy database (see
    /// [`Store::retry`]). Under a request id ([`super::request`]) the write
    /// also remembers its value, in its own transaction, or replays the
    /// value a first attempt of the same call remembered.
    pub(crate) async fn write_at<T, E, F>(
        &self,
        at: &'static Location<'static>,
        op: F,
    ) -> std::result::Result<T, E>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
        E: From<Error> + Send + 'static,
        F: for<'t> FnOnce(&'t mut Turn) -> BoxFuture<'t, std::result::Result<T, E>>
            + Send
            + 'static,
    {
        let Ok(lite) = self.lite() else {
            return Err(super::unsupported(at).into());
        };
        let scope = request::current();
        let now = self.now();
        let replay = scope.clone();
        let job: Job = Box::new(move |turn| {
            Box::pin(async move {
                let out = match replay {
                    None => op(turn).await,
                    Some(scope) => once(turn, &scope, now, op).await,
                };
                Done {
                    kept: out.is_ok(),
                    value: Box::new(out),
                }
            })
        });
        let (answer, rx) = oneshot::channel();
        let ticket = lite
            .writer
            .tickets
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lite.writer.push(Queued {
            ticket,
            job,
            answer,
        });
        self.take_turn(ticket).await;
        answer_of(rx.await, scope.as_deref())
    }

    /// Take the write turn after queueing job `ticket`: whoever holds the
    /// turn when a job is queued may run it; if the queue still holds it
    /// when we get the turn, we run the batch.
    async fn take_turn(&self, ticket: u64) {
        // Never refused: only `write_at` queues, after the same check.
        let Ok(lite) = self.lite() else { return };
        // Whoever holds the turn when our job is queued may run it; if the
        // queue still holds it when we get the turn, we run the batch.
        let guard = lite.write_lock.clone().lock_owned().await;
        let batch = lite.writer.take();
        if let [only] = batch.as_slice()
            && only.ticket == ticket
        {
            // Our own write alone: run here. If we are dropped mid-write,
            // the turn's drop closes a connection left in a transaction.
            self.run_batch(batch).await;
            drop(guard);
        } else if !batch.is_empty() {
            // Why spawned: a caller that gives up (a timeout, a closed HTTP
            // request) must not stop a batch halfway, with others' writes
            // on the connection.
            let store = self.clone();
            let run = tokio::spawn(async move {
                store.run_batch(batch).await;
                drop(guard);
            });
            let _ = run.await;
        } else {
            drop(guard);
        }
    }

    /// Run the queued operations: one alone, several in one transaction.
    /// Answers go out only after the outcome is durable (or failed).
    async fn run_batch(&self, batch: Vec<Queued>) {
        // Never refused: only `write_at` runs a batch, after the same check.
        let lite = match self.lite() {
            Ok(lite) => lite,
            Err(e) => return fail_all(batch, Failure::new(e.to_string())),
        };
        let mut conn = match lite.writer.take_conn() {
            Some(c) => c,
            None => match lite.pool.acquire().await {
                Ok(c) => c,
                Err(e) => return fail_all(batch, Failure::of(&e)),
            },
        };
        if let [_] = batch.as_slice() {
            let q = batch.into_iter().next().expect("one job");
            let mut turn = Turn::new(conn, Mode::Alone);
            let done = run_one(q.job, &mut turn).await;
            let kept = matches!(&done, Ok(d) if d.kept);
            let answer = match (turn.mode, kept) {
                (Mode::AloneInTransaction, true) => finish(&mut turn, "COMMIT").await,
                (Mode::AloneInTransaction, _) => finish(&mut turn, "ROLLBACK").await,
                _ => Ok(()),
            };
            if answer.is_ok()
                && let Some(conn) = turn.end()
            {
                lite.writer.keep_conn(conn);
            }
            let _ = q.answer.send(match (done, answer) {
                (Ok(d), Ok(())) => Ok(d.value),
                (Err(why), _) | (_, Err(why)) => Err(why),
            });
            return;
        }
        if let Err(e) = sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await {
            return fail_all(batch, Failure::of(&e));
        }
        let mut turn = Turn::new(conn, Mode::Batched);
        let mut outcomes = Vec::with_capacity(batch.len());
        for q in batch {
            turn.mode = Mode::Batched;
            let done = run_one(q.job, &mut turn).await;
            let kept = matches!(&done, Ok(d) if d.kept);
            let close = match (turn.mode, kept) {
                (Mode::BatchedInSavepoint, true) => finish(&mut turn, "RELEASE one_write").await,
                (Mode::BatchedInSavepoint, false) => {
                    match finish(&mut turn, "ROLLBACK TO one_write").await {
                        Ok(()) => finish(&mut turn, "RELEASE one_write").await,
                        Err(e) => Err(e),
                    }
                }
                _ => Ok(()),
            };
            let out = match (done, close) {
                (Ok(d), Ok(())) => Ok(d.value),
                (Err(why), _) | (_, Err(why)) => Err(why),
            };
            outcomes.push((q.answer, out));
        }
        match finish(&mut turn, "COMMIT").await {
            Ok(()) => {
                if let Some(conn) = turn.end() {
                    lite.writer.keep_conn(conn);
                }
                for (answer, out) in outcomes {
                    let _ = answer.send(out);
                }
            }
            Err(why) => {
                let _ = finish(&mut turn, "ROLLBACK").await;
                for (answer, _) in outcomes {
                    let _ = answer.send(Err(why.clone()));
                }
            }
        }
    }
}

/// Run `op` under `scope`'s request id: replay the value its number
/// remembered, or run it and remember its value in the same transaction.
async fn once<T, E, F>(
    turn: &mut Turn,
    scope: &request::Scope,
    now: i64,
    op: F,
) -> std::result::Result<T, E>
where
    T: Serialize + DeserializeOwned,
    E: From<Error>,
    F: for<'t> FnOnce(&'t mut Turn) -> BoxFuture<'t, std::result::Result<T, E>>,
{
    turn.begin().await?;
    if let Some(v) = request::remembered::<T>(&mut Tx::Turn(turn), scope).await? {
        return Ok(v);
    }
    let out = op(turn).await?;
    let value = request::value_of(&out)?;
    request::remember::<T>(&mut Tx::Turn(turn), scope, value, now).await?;
    Ok(out)
}

/// Run one job, turning a panic into an error for its caller alone.
async fn run_one(job: Job, turn: &mut Turn) -> std::result::Result<Done, Failure> {
    AssertUnwindSafe(job(turn))
        .catch_unwind()
        .await
        .map_err(|p| {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            tracing::error!(%what, "a write panicked; its writes were undone");
            Failure {
                reason: format!("the write failed: {what}"),
                busy: false,
            }
        })
}

async fn finish(turn: &mut Turn, sql: &'static str) -> std::result::Result<(), Failure> {
    sqlx::query(sql)
        .execute(turn.conn())
        .await
        .map(|_| ())
        .map_err(|e| Failure::of(&e))
}

fn fail_all(batch: Vec<Queued>, why: Failure) {
    for q in batch {
        let _ = q.answer.send(Err(why.clone()));
    }
}

/// A queued write's outcome as its caller's type; a committed write under a
/// request id marks the request done.
fn answer_of<T: 'static, E: From<Error> + 'static>(
    got: std::result::Result<
        std::result::Result<Box<dyn std::any::Any + Send>, Failure>,
        oneshot::error::RecvError,
    >,
    scope: Option<&request::Scope>,
) -> std::result::Result<T, E> {
    match got {
        Ok(Ok(value)) => match value.downcast::<std::result::Result<T, E>>() {
            Ok(out) => {
                if let (Some(scope), Ok(_)) = (scope, out.as_ref()) {
                    scope.committed();
                }
                *out
            }
            Err(_) => Err(Error::Write {
                reason: "a write answered with the wrong type".into(),
                busy: false,
            }
            .into()),
        },
        Ok(Err(f)) => Err(Error::Write {
            reason: f.reason,
            busy: f.busy,
        }
        .into()),
        Err(_) => Err(Error::Write {
            reason: "the writer stopped before answering".into(),
            busy: false,
        }
        .into()),
    }
}

#[cfg(test)]
mod tests;
