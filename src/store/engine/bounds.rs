//! The bounds the engine seam's calls put on what a part hands them: row
//! types both engines decode, and a write's input, result and body.

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::FromRow;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;

use super::Tx;
use crate::store::Result;

/// A row type both engines decode: a tuple of plain values, or a struct
/// with a `FromRow` for each.
pub(crate) trait Rows:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin + 'static
{
}

impl<T> Rows for T where
    T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin + 'static
{
}

/// What a write's `op` takes along: each attempt gets its own copy.
pub(crate) trait Input: Clone + Send + Sync + 'static {}

impl<I: Clone + Send + Sync + 'static> Input for I {}

/// What a write returns: remembered under a request id, so it serialises.
pub(crate) trait Output: Serialize + DeserializeOwned + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Send + 'static> Output for T {}

/// A write's body: one attempt's statements on its [`Tx`], given its copy
/// of the input and the clock's time.
pub(crate) trait TxOp<I, T>:
    for<'c> Fn(Tx<'c>, I, i64) -> BoxFuture<'c, Result<T>> + Clone + Send + Sync + 'static
{
}

impl<I, T, F> TxOp<I, T> for F where
    F: for<'c> Fn(Tx<'c>, I, i64) -> BoxFuture<'c, Result<T>> + Clone + Send + Sync + 'static
{
}
