//! Rows of either engine, read by column name. Every table's columns are
//! text and 64-bit integers on both engines, so one decoder per type reads
//! both: it takes `&impl Cols`, and [`rows_by!`] makes it the type's
//! `FromRow` for SQLite's rows and PostgreSQL's.

use sqlx::postgres::{PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::{Decode, Type};

/// A column value both engines decode the same way.
pub(crate) trait Col:
    for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

impl<T> Col for T where
    T: for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

/// A row of either engine.
pub(crate) trait Cols {
    /// The value of column `name`.
    fn try_get<T: Col>(&self, name: &str) -> sqlx::Result<T>;
}

impl Cols for SqliteRow {
    fn try_get<T: Col>(&self, name: &str) -> sqlx::Result<T> {
        sqlx::Row::try_get(self, name)
    }
}

impl Cols for PgRow {
    fn try_get<T: Col>(&self, name: &str) -> sqlx::Result<T> {
        sqlx::Row::try_get(self, name)
    }
}

/// A decoder's error as sqlx's, for `FromRow`.
pub(crate) fn decode_error(e: super::Error) -> sqlx::Error {
    sqlx::Error::Decode(e.to_string().into())
}

/// `FromRow` of `$t` for both engines' rows, through `$decode`, a
/// `fn(&impl Cols) -> store::Result<$t>`.
macro_rules! rows_by {
    ($t:ty, $decode:path) => {
        impl sqlx::FromRow<'_, sqlx::sqlite::SqliteRow> for $t {
            fn from_row(r: &sqlx::sqlite::SqliteRow) -> sqlx::Result<$t> {
                $decode(r).map_err($crate::store::cols::decode_error)
            }
        }
        impl sqlx::FromRow<'_, sqlx::postgres::PgRow> for $t {
            fn from_row(r: &sqlx::postgres::PgRow) -> sqlx::Result<$t> {
                $decode(r).map_err($crate::store::cols::decode_error)
            }
        }
    };
}
pub(crate) use rows_by;
