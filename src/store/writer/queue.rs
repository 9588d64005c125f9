//! The queue of the write turn: the operations waiting for it, type-erased
//! so one batch carries writes of any result type, and the connection the
//! turn keeps between batches (see `writer.rs` for the turn itself).

use std::any::Any;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use sqlx::Sqlite;
use sqlx::pool::PoolConnection;
use tokio::sync::oneshot;

use super::turn::Turn;

/// What an operation produced, type-erased so one batch carries operations
/// of any result type; `kept` says whether its writes stay.
pub(super) struct Done {
    pub(super) kept: bool,
    pub(super) value: Box<dyn Any + Send>,
}

pub(super) type Job = Box<dyn for<'t> FnOnce(&'t mut Turn) -> BoxFuture<'t, Done> + Send>;

pub(super) struct Queued {
    /// Which caller queued it (to tell our own job from another's).
    pub(super) ticket: u64,
    pub(super) job: Job,
    pub(super) answer: oneshot::Sender<std::result::Result<Box<dyn Any + Send>, Failure>>,
}

/// Why a queued write has no outcome of its own: the batch around it
/// failed (`busy`: another process held the database; worth a retry).
#[derive(Clone, Debug)]
pub(super) struct Failure {
    pub(super) reason: String,
    pub(super) busy: bool,
}

impl Failure {
    pub(super) fn new(reason: String) -> Failure {
        Failure {
            reason,
            busy: false,
        }
    }

    pub(super) fn of(e: &sqlx::Error) -> Failure {
        Failure {
            reason: crate::store::db_message(e),
            busy: crate::store::is_busy(e),
        }
    }
}

/// The queue of operations waiting for the write turn, and the turn.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    pub(super) queue: Mutex<Vec<QueuedDebug>>,
    /// The most operations one transaction has carried so far.
    pub(super) largest_batch: std::sync::atomic::AtomicUsize,
    /// The next ticket to hand out.
    pub(super) tickets: std::sync::atomic::AtomicU64,
    /// The writers' own connection, kept between turns. Why: a pooled
    /// connection goes back to the pool in a background task, so the next
    /// turn's acquire often found none idle and opened a fresh one (its
    /// setup pragmas and an empty statement cache) — hidden round trips.
    pub(super) conn: Mutex<Option<PoolConnection<Sqlite>>>,
    /// Whether to keep that connection between turns. A one-shot process
    /// does not: its pool has one connection, which its reads need too.
    pub(super) keep: bool,
}

/// `Queued` behind a `Debug` impl, so [`Store`] stays `Debug`.
pub(super) struct QueuedDebug(Queued);

impl std::fmt::Debug for QueuedDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("queued write")
    }
}

/// The kept connection goes back to its pool when the writer goes, which
/// sqlx does on a Tokio task: a store dropped outside a runtime (a sync
/// test, the end of `main`) closes it directly instead of panicking.
impl Drop for Writer {
    fn drop(&mut self) {
        let kept = self
            .conn
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(conn) = kept
            && tokio::runtime::Handle::try_current().is_err()
        {
            drop(conn.detach());
        }
    }
}

impl Writer {
    /// A writer that keeps its connection between turns (`keep`), or
    /// gives it back to the pool after each.
    pub(crate) fn new(keep: bool) -> Arc<Writer> {
        let mut w = Writer::default();
        w.keep = keep;
        Arc::new(w)
    }

    pub(super) fn push(&self, q: Queued) {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(QueuedDebug(q));
    }

    pub(super) fn take(&self) -> Vec<Queued> {
        let batch: Vec<Queued> =
            std::mem::take(&mut *self.queue.lock().unwrap_or_else(|p| p.into_inner()))
                .into_iter()
                .map(|q| q.0)
                .collect();
        self.largest_batch
            .fetch_max(batch.len(), std::sync::atomic::Ordering::Relaxed);
        batch
    }

    pub(super) fn take_conn(&self) -> Option<PoolConnection<Sqlite>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    pub(super) fn keep_conn(&self, conn: PoolConnection<Sqlite>) {
        if !self.keep {
            return; // dropped: back to the pool
        }
        *self.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn);
    }

    /// Give the kept connection back to the pool (before it closes).
    pub(crate) fn release(&self) {
        drop(self.take_conn());
    }

    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
