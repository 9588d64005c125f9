//! A value as SQLite stored it, and how it binds to a PostgreSQL column of a
//! given type when the copy between engines writes it.

use sqlx::query_builder::Separated;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, TypeInfo, ValueRef};

/// A value as SQLite stored it (its storage class, not the column's type).
#[derive(Debug)]
pub(super) enum Lite {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Lite {
    pub(super) fn read(row: &SqliteRow, i: usize) -> std::result::Result<Lite, sqlx::Error> {
        let raw = row.try_get_raw(i)?;
        if raw.is_null() {
            return Ok(Lite::Null);
        }
        let class = raw.type_info().name().to_string();
        Ok(match class.as_str() {
            "INTEGER" => Lite::Int(row.try_get_unchecked(i)?),
            "REAL" => Lite::Real(row.try_get_unchecked(i)?),
            "TEXT" => Lite::Text(row.try_get_unchecked(i)?),
            _ => Lite::Blob(row.try_get_unchecked(i)?),
        })
    }

    /// Its storage class, as an error names it.
    fn class(&self) -> &'static str {
        match self {
            Lite::Null => "NULL",
            Lite::Int(_) => "an integer",
            Lite::Real(_) => "a real number",
            Lite::Text(_) => "text",
            Lite::Blob(_) => "a blob",
        }
    }

    pub(super) fn shown(&self) -> String {
        match self {
            Lite::Null => "NULL".into(),
            Lite::Int(i) => i.to_string(),
            Lite::Real(r) => r.to_string(),
            Lite::Text(t) => format!("'{t}'"),
            Lite::Blob(b) => format!("a {}-byte blob", b.len()),
        }
    }
}

/// A value typed for its PostgreSQL column: sqlx sends each parameter with
/// a type, so even a NULL must be bound as the column's (a NULL text bound
/// to a BIGINT column is an error).
pub(super) enum Bound {
    I64(Option<i64>),
    I32(Option<i32>),
    I16(Option<i16>),
    F64(Option<f64>),
    Bool(Option<bool>),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
}

/// `v` as a value of the PostgreSQL type `pg` (information_schema's
/// `data_type`), or why it does not fit.
pub(super) fn bind_as(v: Lite, pg: &str) -> std::result::Result<Bound, String> {
    let misfit = |v: &Lite| format!("{} does not fit a {pg} column", v.class());
    let int = |v: Lite| match v {
        Lite::Null => Ok(None),
        Lite::Int(i) => Ok(Some(i)),
        other => Err(misfit(&other)),
    };
    let narrow = |i: i64| format!("{i} does not fit a {pg} column");
    Ok(match pg {
        "bigint" => Bound::I64(int(v)?),
        "integer" => Bound::I32(
            int(v)?
                .map(|i| i32::try_from(i).map_err(|_| narrow(i)))
                .transpose()?,
        ),
        "smallint" => Bound::I16(
            int(v)?
                .map(|i| i16::try_from(i).map_err(|_| narrow(i)))
                .transpose()?,
        ),
        "boolean" => Bound::Bool(match v {
            Lite::Null => None,
            Lite::Int(0) => Some(false),
            Lite::Int(1) => Some(true),
            other => return Err(format!("{} is not a boolean (0 or 1)", other.shown())),
        }),
        "double precision" | "real" => Bound::F64(match v {
            Lite::Null => None,
            Lite::Real(r) => Some(r),
            Lite::Int(i) => Some(i as f64),
            other => return Err(misfit(&other)),
        }),
        "text" | "character varying" => Bound::Text(match v {
            Lite::Null => None,
            Lite::Text(t) => Some(t),
            other => return Err(misfit(&other)),
        }),
        "bytea" => Bound::Bytes(match v {
            Lite::Null => None,
            Lite::Blob(b) => Some(b),
            other => return Err(misfit(&other)),
        }),
        other => return Err(format!("export cannot write a {other} column")),
    })
}

/// A copied value a batch INSERT binds on the engine `DB` it is written to.
pub(super) trait Binds<DB: sqlx::Database> {
    /// The engine's limit on parameters in one statement.
    const MAX_PARAMS: usize;
    /// Rows per INSERT at most (fewer for wide tables, under
    /// [`Binds::MAX_PARAMS`]).
    const MAX_BATCH_ROWS: usize;

    fn bind(self, tuple: &mut Separated<'_, DB, &'static str>);
}

impl Binds<sqlx::Sqlite> for Lite {
    /// SQLite's, since 3.32.
    const MAX_PARAMS: usize = 32_766;
    const MAX_BATCH_ROWS: usize = 500;

    fn bind(self, tuple: &mut Separated<'_, sqlx::Sqlite, &'static str>) {
        match self {
            Lite::Null => tuple.push_bind(None::<i64>),
            Lite::Int(x) => tuple.push_bind(x),
            Lite::Real(x) => tuple.push_bind(x),
            Lite::Text(x) => tuple.push_bind(x),
            Lite::Blob(x) => tuple.push_bind(x),
        };
    }
}

impl Binds<sqlx::Postgres> for Bound {
    const MAX_PARAMS: usize = 65_535;
    const MAX_BATCH_ROWS: usize = 1_000;

    fn bind(self, tuple: &mut Separated<'_, sqlx::Postgres, &'static str>) {
        match self {
            Bound::I64(x) => tuple.push_bind(x),
            Bound::I32(x) => tuple.push_bind(x),
            Bound::I16(x) => tuple.push_bind(x),
            Bound::F64(x) => tuple.push_bind(x),
            Bound::Bool(x) => tuple.push_bind(x),
            Bound::Text(x) => tuple.push_bind(x),
            Bound::Bytes(x) => tuple.push_bind(x),
        };
    }
}
