//! Request ids: a call that may be sent twice (to the local daemon over
//! its socket, then — the answer lost — through the database file) carries
//! one id, and every write it commits under that id is remembered with the
//! value it produced, in the same transaction as the write. A repeat of the
//! call replays those values in order instead of writing again, so it gets
//! the first attempt's outcome and nothing is applied twice.
//!
//! The id travels as a task-local scope ([`scope`]): the API wraps a
//! request carrying the `Handoff-Request-Id` header in it, the CLI wraps a
//! call it retries through the file in it. [`Store::write`] numbers the
//! writes of a scope from 0 (only committed ones count, so a busy retry
//! keeps its number) and checks the kind of a remembered value before
//! replaying it.
//!
//! Covered: every write through the engine seam's `write_with`,
//! `transact` and `write_split` on either engine (on SQLite the write
//! turn, on PostgreSQL `postgres::write` under an advisory lock on the id
//! and number, so two attempts on two connections run one after the
//! other). Not remembered: the writes outside the group commit
//! (`transact_apart`: purge, refused-attempt audits) and single statements
//! run with `change` (chat message records, grant confirmations, topics, a
//! lease release, forgetting old rows); a repeat of one
//! of those finds nothing left to do or records a refusal again, never a
//! second change.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::engine::{Stmt, Tx};
use super::{Error, Result, Store};

/// How long a request id is remembered.
pub const KEEP_MS: i64 = 24 * 60 * 60 * 1000;

/// The header a request id travels in over HTTP.
pub const HEADER: &str = "handoff-request-id";

/// One call's request id and the number of its next write.
#[derive(Debug)]
pub struct Scope {
    key: String,
    next: AtomicI64,
}

tokio::task_local! {
    static REQUEST: Arc<Scope>;
}

/// Whether `key` is a usable request id: 1–128 characters of ASCII
/// letters, digits and `.`, `_`, `-`, `:`.
pub fn valid(key: &str) -> bool {
    (1..=128).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'))
}

/// A fresh request id (a v7 uuid: time-ordered, 74 random bits).
pub fn fresh() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// Run `fut` with `key` as its request id.
pub async fn scope<F: Future>(key: String, fut: F) -> F::Output {
    REQUEST
        .scope(
            Arc::new(Scope {
                key,
                next: AtomicI64::new(0),
            }),
            fut,
        )
        .await
}

/// The request id of the running task, if any.
pub(crate) fn current() -> Option<Arc<Scope>> {
    REQUEST.try_with(Arc::clone).ok()
}

impl Scope {
    /// The number the next write of this scope gets.
    pub(crate) fn next(&self) -> i64 {
        self.next.load(Ordering::SeqCst)
    }

    /// A write of this scope committed: the next one gets the next number.
    pub(crate) fn committed(&self) {
        self.next.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn key(&self) -> &str {
        &self.key
    }
}

/// The value the scope's next write produced in an earlier attempt, if it
/// is remembered and of type `T`.
pub(crate) async fn remembered<T: DeserializeOwned>(
    tx: &mut Tx<'_>,
    scope: &Scope,
) -> Result<Option<T>> {
    let stored = Stmt::new("SELECT kind, value FROM requests WHERE key = $1 AND n = $2")
        .text(scope.key())
        .int(scope.next());
    let row: Option<(String, String)> = tx.row(&stored).await?;
    Ok(row
        .filter(|(kind, _)| kind == std::any::type_name::<T>())
        .and_then(|(_, value)| serde_json::from_str(&value).ok()))
}

/// `out` as the text [`remember`] keeps.
pub(crate) fn value_of<T: Serialize>(out: &T) -> Result<String> {
    serde_json::to_string(out).map_err(|e| Error::Write {
        reason: format!("cannot remember a write's value: {e}"),
        busy: false,
    })
}

/// Remember `value` (a `T`, as [`value_of`] wrote it) as the scope's next
/// write. Replaces a row of another kind (the repeat took another path;
/// its own value now stands).
pub(crate) async fn remember<T>(
    tx: &mut Tx<'_>,
    scope: &Scope,
    value: String,
    now: i64,
) -> Result<()> {
    let keep = Stmt::new(
        "INSERT INTO requests (key, n, kind, value, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (key, n) DO UPDATE
         SET kind = excluded.kind, value = excluded.value, created_at = excluded.created_at",
    )
    .text(scope.key())
    .int(scope.next())
    .text(std::any::type_name::<T>())
    .text(value.as_str())
    .int(now);
    tx.change(&keep).await?;
    Ok(())
}

/// Forget the remembered writes older than a time. Same text on both engines.
const FORGET: &str = "DELETE FROM requests WHERE created_at < $1";

impl Store {
    /// Forget request ids older than [`KEEP_MS`]; returns how many writes
    /// were forgotten.
    pub async fn forget_requests(&self) -> Result<u64> {
        let before = self.now() - KEEP_MS;
        self.change(Stmt::new(FORGET).int(before)).await
    }
}
