//! The way back (`handoff export --to FILE` with a PostgreSQL source):
//! every row of a PostgreSQL database copied into a new SQLite file, for a
//! team leaving a shared server or taking a copy home.
//! The export's pieces serve both ways ([`super::export`]): its table
//! lists, its column types, its parents-first order, its report.
//!
//! What makes the copy trustworthy:
//! - FILE must not exist: it is created exclusively (`create_new`), so
//!   nothing the user has is overwritten, and removed again on any failure;
//! - the file gets this build's schema from [`Store`]'s own migrations, and
//!   the SQLite schema's tables and columns are what is copied: each must
//!   exist in PostgreSQL (else `handoff migrate` it first), and a table
//!   only PostgreSQL has must hold no rows (it would be lost);
//! - PostgreSQL is read in one REPEATABLE READ, READ ONLY transaction: one
//!   snapshot, so a daemon writing meanwhile cannot tear the copy;
//! - SQLite is written in one transaction. SQLite cannot switch triggers
//!   off, so the user triggers are dropped (their SQL kept from
//!   `sqlite_master`) and re-created from that SQL before COMMIT: the
//!   transition-log rows they would add are among the copied rows, and the
//!   append-only ones would refuse replacing the fresh file's seed rows;
//! - AUTOINCREMENT continues past the copied ids (`sqlite_sequence` is
//!   raised to every table's highest rowid), and the row counts are
//!   compared before COMMIT.

use std::collections::HashMap;
use std::path::Path;

use sqlx::postgres::{PgConnection, PgRow};
use sqlx::{Connection, Row, SqliteConnection};

use super::super::{Error, Result, Store};
use super::export::{
    ExportReport, Source, check_url, copy_rows, count_both, first_with_rows, ident, lite_schema,
    parents_first, target_columns,
};
use super::values::Lite;
use super::{applied_versions, connect, schema_version, shown};

/// PostgreSQL-only tables: the event counter (SQLite numbers events with
/// AUTOINCREMENT) and sqlx's bookkeeping. Their rows stay behind.
const PG_ONLY: &[&str] = &["events_seq", "_sqlx_migrations"];

/// Copy every row of the PostgreSQL database at `url` into a new SQLite
/// file at `file` (see the module docs). An existing `file`, a database
/// without this build's schema, or a failure on the way is an error, and
/// no file is left behind then.
pub async fn import_to(url: &str, file: &Path) -> Result<ExportReport> {
    check_url(url)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)
        .map_err(|e| {
            Error::Invalid(if e.kind() == std::io::ErrorKind::AlreadyExists {
                format!(
                    "{} already exists: export writes a new SQLite file and never replaces one; name a file that does not exist",
                    file.display()
                )
            } else {
                format!("cannot create {}: {e}", file.display())
            })
        })?;
    let outcome = fill(url, file).await;
    if outcome.is_err() {
        // Nothing half-made stays: the file (and its WAL) was ours alone.
        for suffix in ["", "-wal", "-shm"] {
            let mut p = file.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
    outcome
}

async fn fill(url: &str, file: &Path) -> Result<ExportReport> {
    // An empty file is an empty database to SQLite: open migrates it.
    let store = Store::open_one_shot(file).await?;
    let mut pg = match connect(url).await {
        Ok(pg) => pg,
        Err(e) => {
            store.close().await;
            return Err(e);
        }
    };
    let outcome = copy(&store, &mut pg, url).await;
    let _ = pg.close().await;
    store.close().await;
    outcome
}

/// The PostgreSQL database holds a handoff schema this build can read.
async fn check_schema(pg: &mut PgConnection, url: &str) -> Result<()> {
    let versions = applied_versions(pg).await?;
    let known = schema_version();
    match versions.last() {
        None => {
            return Err(Error::Invalid(format!(
                "the PostgreSQL database {} has no handoff schema: there is nothing to copy (is it the right database?)",
                shown(url)
            )));
        }
        Some(&found) if found > known => {
            return Err(Error::NewerSchema {
                path: shown(url),
                found,
                known,
            });
        }
        Some(_) => {}
    }
    Ok(())
}

/// Every table and column of this build's SQLite schema is in the
/// PostgreSQL database (`target`: its tables' columns and types).
fn check_columns(
    names: &[String],
    sources: &HashMap<String, Source>,
    target: &HashMap<String, HashMap<String, String>>,
    url: &str,
) -> Result<()> {
    for name in names {
        let missing = match target.get(name) {
            None => Some(format!("has no table {name}")),
            Some(have) => sources[name]
                .columns
                .iter()
                .find(|c| !have.contains_key(*c))
                .map(|c| format!("table {name} has no column {c}")),
        };
        if let Some(what) = missing {
            return Err(Error::Invalid(format!(
                "the PostgreSQL database {} {what}, which this handoff's SQLite schema has: bring it up to date first with `HANDOFF_DB={} handoff migrate`",
                shown(url),
                shown(url)
            )));
        }
    }
    Ok(())
}

async fn copy(store: &Store, pg: &mut PgConnection, url: &str) -> Result<ExportReport> {
    check_schema(pg, url).await?;
    let mut lite = store.pool()?.acquire().await?;
    let mut tx = lite.begin_with("BEGIN IMMEDIATE").await?;
    let (names, sources) = lite_schema(&mut tx).await?;
    let source = target_columns(pg).await?;
    check_columns(&names, &sources, &source, url)?;
    let order = parents_first(pg, &names).await?;

    // The snapshot every read below sees.
    let mut snap = pg
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .await?;
    refuse_lost_rows(&mut snap, &source, &names, url).await?;

    let triggers: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND sql IS NOT NULL ORDER BY name",
    )
    .fetch_all(&mut *tx)
    .await?;
    for (name, _) in &triggers {
        lite_execute(&mut tx, format!("DROP TRIGGER {}", ident(name))).await?;
    }
    // The fresh file's own rows (the `notify` cursor, …) give way to the
    // copied ones: children first, so no foreign key is left dangling.
    for name in order.iter().rev() {
        lite_execute(&mut tx, format!("DELETE FROM {}", ident(name))).await?;
    }
    for name in &order {
        let columns = &sources[name].columns;
        let types: Vec<&str> = columns.iter().map(|c| source[name][c].as_str()).collect();
        copy_table(&mut snap, &mut tx, name, columns, &types).await?;
    }
    for (_, sql) in &triggers {
        lite_execute(&mut tx, sql.clone()).await?;
    }
    continue_numbering(&mut tx).await?;

    let tables = count_both(&mut tx, &mut snap, &names, |name, here, there| {
        format!(
            "the copy of {name} has {here} rows where the PostgreSQL database has {there}: no file was written"
        )
    })
    .await?;
    tx.commit().await?;
    // The snapshot only read: ending it changes nothing.
    snap.rollback().await?;
    Ok(ExportReport::of(tables))
}

async fn lite_execute(tx: &mut SqliteConnection, sql: String) -> Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(tx).await?;
    Ok(())
}

/// Refuse a PostgreSQL table the SQLite schema lacks if it holds rows:
/// they would silently stay behind (a newer handoff's table, most likely).
async fn refuse_lost_rows(
    snap: &mut PgConnection,
    source: &HashMap<String, HashMap<String, String>>,
    names: &[String],
    url: &str,
) -> Result<()> {
    let mut extra: Vec<&String> = source
        .keys()
        .filter(|t| !names.contains(t) && !PG_ONLY.contains(&t.as_str()))
        .collect();
    extra.sort();
    match first_with_rows(snap, extra).await? {
        Some(table) => Err(Error::Invalid(format!(
            "the PostgreSQL database {} has rows in {table}, a table this handoff's SQLite schema lacks: they would be lost; copy with the handoff that wrote them",
            shown(url)
        ))),
        None => Ok(()),
    }
}

/// One PostgreSQL value as SQLite stores it, by its column's type
/// (information_schema's `data_type`).
fn read(row: &PgRow, i: usize, pg: &str) -> std::result::Result<Lite, String> {
    let got = |e: sqlx::Error| e.to_string();
    let int = |v: Option<i64>| v.map_or(Lite::Null, Lite::Int);
    Ok(match pg {
        "bigint" => int(row.try_get::<Option<i64>, _>(i).map_err(got)?),
        "integer" => int(row
            .try_get::<Option<i32>, _>(i)
            .map_err(got)?
            .map(i64::from)),
        "smallint" => int(row
            .try_get::<Option<i16>, _>(i)
            .map_err(got)?
            .map(i64::from)),
        "boolean" => int(row
            .try_get::<Option<bool>, _>(i)
            .map_err(got)?
            .map(i64::from)),
        "double precision" => row
            .try_get::<Option<f64>, _>(i)
            .map_err(got)?
            .map_or(Lite::Null, Lite::Real),
        "real" => row
            .try_get::<Option<f32>, _>(i)
            .map_err(got)?
            .map_or(Lite::Null, |r| Lite::Real(f64::from(r))),
        "text" | "character varying" => row
            .try_get::<Option<String>, _>(i)
            .map_err(got)?
            .map_or(Lite::Null, Lite::Text),
        "bytea" => row
            .try_get::<Option<Vec<u8>>, _>(i)
            .map_err(got)?
            .map_or(Lite::Null, Lite::Blob),
        other => return Err(format!("export cannot read a {other} column")),
    })
}

/// Copy one table's rows from the snapshot, in multi-row INSERTs.
async fn copy_table(
    snap: &mut PgConnection,
    tx: &mut SqliteConnection,
    table: &str,
    columns: &[String],
    types: &[&str],
) -> Result<()> {
    copy_rows::<sqlx::Postgres, sqlx::Sqlite, _>(snap, tx, table, columns, |row: &PgRow, _| {
        let mut values = Vec::with_capacity(columns.len());
        for (i, ty) in types.iter().enumerate() {
            values.push(read(row, i, ty).map_err(|why| {
                Error::Invalid(format!("cannot copy {table}.{}: {why}", columns[i]))
            })?);
        }
        Ok(values)
    })
    .await
}

/// New rows continue past the copied ids: SQLite raises `sqlite_sequence`
/// itself when an explicit id is inserted, but only for tables it already
/// lists there after the insert; this makes sure for every AUTOINCREMENT
/// table, each at least at its highest rowid.
async fn continue_numbering(tx: &mut SqliteConnection) -> Result<()> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND sql LIKE '%AUTOINCREMENT%' ORDER BY name",
    )
    .fetch_all(&mut *tx)
    .await?;
    for table in tables {
        let top = format!("SELECT COALESCE(max(rowid), 0) FROM {}", ident(&table));
        let top: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(top))
            .fetch_one(&mut *tx)
            .await?;
        let had: Option<i64> =
            sqlx::query_scalar("SELECT seq FROM sqlite_sequence WHERE name = ?1")
                .bind(&table)
                .fetch_optional(&mut *tx)
                .await?;
        match had {
            Some(seq) if seq >= top => {}
            Some(_) => {
                sqlx::query("UPDATE sqlite_sequence SET seq = ?2 WHERE name = ?1")
                    .bind(&table)
                    .bind(top)
                    .execute(&mut *tx)
                    .await?;
            }
            None if top > 0 => {
                sqlx::query("INSERT INTO sqlite_sequence (name, seq) VALUES (?1, ?2)")
                    .bind(&table)
                    .bind(top)
                    .execute(&mut *tx)
                    .await?;
            }
            None => {}
        }
    }
    Ok(())
}
