//! `handoff export --to URL`: every row of the SQLite file copied into an
//! empty PostgreSQL database, for a team moving its store onto a shared
//! server. The way back (PostgreSQL → a new SQLite
//! file) is [`super::import`], which shares this module's pieces.
//!
//! What makes the copy trustworthy:
//! - the target schema is brought to this build's first ([`super::migrate`]),
//!   so every SQLite table and column has its counterpart;
//! - the SQLite side is read inside one read transaction on one connection:
//!   a snapshot, so a daemon writing meanwhile cannot tear the copy;
//! - the PostgreSQL side is written in one transaction, which also holds
//!   every target table locked (`ALTER TABLE` takes a lock that blocks
//!   writers) from the "is it empty?" check to the commit: nothing the user
//!   wrote there is ever overwritten, and a failure leaves nothing behind;
//! - the target's user triggers are off for the copy: the rows that the
//!   transition-log triggers would add (events, audit, approvals, counters)
//!   are already among the copied rows, and the append-only triggers would
//!   refuse the replaced seed rows. Foreign keys stay on (they are not user
//!   triggers), so tables are filled parents first;
//! - afterwards every identity sequence and the event counter continue past
//!   the copied numbers, and the row counts are compared before COMMIT.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures_util::TryStreamExt;
use sqlx::postgres::PgConnection;
use sqlx::sqlite::SqliteRow;
use sqlx::{Connection, QueryBuilder, SqliteConnection};

use super::super::{Error, Result, Store};
use super::values::{Binds, Lite, bind_as};
use super::{connect, migrate, shown};

/// What an export copied.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExportReport {
    /// Rows copied per table (every table of the SQLite file, empty ones too).
    pub tables: BTreeMap<String, i64>,
    /// All rows copied.
    pub rows: i64,
}

impl ExportReport {
    pub(super) fn of(tables: BTreeMap<String, i64>) -> Self {
        let rows = tables.values().sum();
        Self { tables, rows }
    }
}

/// Tables a freshly migrated PostgreSQL database already holds rows in
/// (the `notify` cursor, the event counter): they do not make it "not
/// empty". A copied one has its rows replaced by the source's; the counter
/// (PostgreSQL only) is set after the copy.
const SEEDED: &[&str] = &["cursors", "events_seq"];

/// Copy every row of `store`'s SQLite file into the empty PostgreSQL
/// database at `url` (see the module docs). A `url` that is not
/// `postgres://` or `postgresql://`, a target that holds rows, or a value
/// that does not fit its PostgreSQL column is an error, and nothing is
/// written then (the migrations aside, which a target gets either way).
pub async fn export_to(store: &Store, url: &str) -> Result<ExportReport> {
    check_url(url)?;
    migrate(url).await?;
    let mut pg = connect(url).await?;
    let outcome = copy(store, &mut pg, url).await;
    let _ = pg.close().await;
    outcome
}

/// Refuse anything but a PostgreSQL URL (before any connection is tried).
pub fn check_url(url: &str) -> Result<()> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "postgres" | "postgresql") => Ok(()),
        Ok(u) => Err(Error::Invalid(format!(
            "{} is a {}:// URL: export copies into a PostgreSQL database, named as postgres://user:password@host/database",
            shown(url),
            u.scheme()
        ))),
        Err(_) => Err(Error::Invalid(format!(
            "`{url}` is not a URL: export copies into a PostgreSQL database, named as postgres://user:password@host/database"
        ))),
    }
}

/// `name` quoted as an SQL identifier (`by` is reserved in PostgreSQL).
pub(super) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// One SQLite table's columns as the copy needs them.
pub(super) struct Source {
    /// Every column, in table order.
    pub(super) columns: Vec<String>,
    /// Which of them make the primary key (to name a row in an error).
    key: Vec<usize>,
}

/// The SQLite file's tables (by name, sqlx's bookkeeping and SQLite's own
/// left out) and each one's columns: what an export reads and what an
/// import fills.
pub(super) async fn lite_schema(
    lite: &mut sqlx::SqliteConnection,
) -> Result<(Vec<String>, HashMap<String, Source>)> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND substr(name, 1, 7) <> 'sqlite_' AND name <> '_sqlx_migrations' ORDER BY name",
    )
    .fetch_all(&mut *lite)
    .await?;
    let mut sources = HashMap::new();
    for name in &names {
        let info: Vec<(String, i64)> = sqlx::query_as(
            "SELECT name, pk FROM pragma_table_info(?1) ORDER BY cid", //
        )
        .bind(name)
        .fetch_all(&mut *lite)
        .await?;
        let mut key: Vec<(i64, usize)> = info
            .iter()
            .enumerate()
            .filter(|(_, (_, pk))| *pk > 0)
            .map(|(i, (_, pk))| (*pk, i))
            .collect();
        key.sort_unstable();
        sources.insert(
            name.clone(),
            Source {
                columns: info.into_iter().map(|(c, _)| c).collect(),
                key: key.into_iter().map(|(_, i)| i).collect(),
            },
        );
    }
    Ok((names, sources))
}

async fn copy(store: &Store, pg: &mut PgConnection, url: &str) -> Result<ExportReport> {
    // The snapshot: a deferred BEGIN pins what its first read sees, and
    // every read below runs in it.
    let mut lite = store.pool()?.acquire().await?;
    let mut snap = lite.begin().await?;
    let (names, sources) = lite_schema(&mut snap).await?;

    let target = target_columns(pg).await?;
    for name in &names {
        let Some(have) = target.get(name) else {
            return Err(Error::Invalid(format!(
                "the PostgreSQL database {} has no table {name}, which the SQLite file has: is the file from a newer handoff? export with that version",
                shown(url)
            )));
        };
        if let Some(c) = sources[name]
            .columns
            .iter()
            .find(|c| !have.contains_key(*c))
        {
            return Err(Error::Invalid(format!(
                "the PostgreSQL table {name} has no column {c}, which the SQLite file has: is the file from a newer handoff? export with that version"
            )));
        }
    }
    let order = parents_first(pg, &names).await?;

    let mut tx = pg.begin().await?;
    // First: the lock that keeps other writers out until COMMIT.
    for name in &order {
        execute(
            &mut tx,
            format!("ALTER TABLE {} DISABLE TRIGGER USER", ident(name)),
        )
        .await?;
    }
    refuse_rows(&mut tx, &target, url).await?;
    for name in order.iter().filter(|n| SEEDED.contains(&n.as_str())) {
        execute(&mut tx, format!("DELETE FROM {}", ident(name))).await?;
    }
    for name in &order {
        copy_table(&mut snap, &mut tx, name, &sources[name], &target[name]).await?;
    }
    continue_numbering(&mut tx, &names).await?;
    for name in &order {
        execute(
            &mut tx,
            format!("ALTER TABLE {} ENABLE TRIGGER USER", ident(name)),
        )
        .await?;
    }

    let tables = count_both(&mut snap, &mut tx, &names, |name, here, there| {
        format!(
            "the copy of {name} has {there} rows where the SQLite file has {here}: nothing was written to {}",
            shown(url)
        )
    })
    .await?;
    tx.commit().await?;
    // The snapshot only read: ending it changes nothing.
    snap.rollback().await?;
    Ok(ExportReport::of(tables))
}

/// Each table's rows counted on both sides, in the transactions the copy
/// still holds open; a table whose counts differ is refused with
/// `differ(name, sqlite_rows, postgres_rows)`, before anything commits.
pub(super) async fn count_both(
    lite: &mut SqliteConnection,
    pg: &mut PgConnection,
    names: &[String],
    differ: impl Fn(&str, i64, i64) -> String,
) -> Result<BTreeMap<String, i64>> {
    let mut tables = BTreeMap::new();
    for name in names {
        let count = format!("SELECT count(*) FROM {}", ident(name));
        let on_lite: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(count.clone()))
            .fetch_one(&mut *lite)
            .await?;
        let on_pg: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(count))
            .fetch_one(&mut *pg)
            .await?;
        if on_lite != on_pg {
            return Err(Error::Invalid(differ(name, on_lite, on_pg)));
        }
        tables.insert(name.clone(), on_lite);
    }
    Ok(tables)
}

async fn execute(tx: &mut PgConnection, sql: String) -> Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(tx).await?;
    Ok(())
}

/// The target's tables (of the schema it resolves names in), each with its
/// columns' types.
pub(super) async fn target_columns(
    pg: &mut PgConnection,
) -> Result<HashMap<String, HashMap<String, String>>> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.table_name::text, c.column_name::text, c.data_type::text \
           FROM information_schema.columns c \
           JOIN information_schema.tables t \
             ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
          WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'",
    )
    .fetch_all(&mut *pg)
    .await?;
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    for (table, column, ty) in rows {
        out.entry(table).or_default().insert(column, ty);
    }
    Ok(out)
}

/// `names` ordered so a table comes after every table its foreign keys
/// point at (PostgreSQL checks each INSERT at once: no key is deferrable).
pub(super) async fn parents_first(pg: &mut PgConnection, names: &[String]) -> Result<Vec<String>> {
    let edges: Vec<(String, String)> = sqlx::query_as(
        "SELECT child.relname::text, parent.relname::text \
           FROM pg_constraint c \
           JOIN pg_class child ON child.oid = c.conrelid \
           JOIN pg_class parent ON parent.oid = c.confrelid \
          WHERE c.contype = 'f' \
            AND c.connamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
    )
    .fetch_all(&mut *pg)
    .await?;
    let mut left: Vec<&String> = names.iter().collect();
    let mut done: HashSet<&str> = HashSet::new();
    let mut order = Vec::new();
    while !left.is_empty() {
        let ready = |t: &&String| {
            edges.iter().all(|(child, parent)| {
                child != *t
                    || parent == *t
                    || done.contains(parent.as_str())
                    || !names.contains(parent)
            })
        };
        // A cycle (none in handoff's schema) is copied as it comes: the
        // INSERT then says which key failed.
        let next = left.iter().position(ready).unwrap_or(0);
        let t = left.remove(next);
        done.insert(t);
        order.push(t.clone());
    }
    Ok(order)
}

/// Refuse a target holding any row outside the migrations' own seed rows:
/// the events first (every write appends one), then every other table.
async fn refuse_rows(
    tx: &mut PgConnection,
    target: &HashMap<String, HashMap<String, String>>,
    url: &str,
) -> Result<()> {
    let mut tables: Vec<&String> = target
        .keys()
        .filter(|t| !SEEDED.contains(&t.as_str()) && *t != "_sqlx_migrations")
        .collect();
    tables.sort_by_key(|t| (t.as_str() != "events", t.as_str()));
    match first_with_rows(tx, tables).await? {
        Some(table) => Err(Error::Invalid(format!(
            "the PostgreSQL database {} is not empty (its table {table} has rows): export only copies into an empty database, so nothing there is overwritten; create a new one (CREATE DATABASE) and export into that",
            shown(url)
        ))),
        None => Ok(()),
    }
}

/// The first of `tables` (in their order) that holds a row, if any.
pub(super) async fn first_with_rows<'t>(
    conn: &mut PgConnection,
    tables: impl IntoIterator<Item = &'t String>,
) -> Result<Option<&'t String>> {
    for table in tables {
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {})", ident(table));
        let any: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut *conn)
            .await?;
        if any {
            return Ok(Some(table));
        }
    }
    Ok(None)
}

/// Copy one table's rows from the snapshot, in multi-row INSERTs.
async fn copy_table(
    snap: &mut sqlx::SqliteConnection,
    tx: &mut PgConnection,
    table: &str,
    source: &Source,
    types: &HashMap<String, String>,
) -> Result<()> {
    let columns = &source.columns;
    let types: Vec<&str> = columns.iter().map(|c| types[c].as_str()).collect();
    copy_rows::<sqlx::Sqlite, sqlx::Postgres, _>(
        snap,
        tx,
        table,
        columns,
        |row: &SqliteRow, seen| {
            let mut values = Vec::with_capacity(columns.len());
            for (i, ty) in types.iter().enumerate() {
                let misfit = |why: String| {
                    Error::Invalid(format!(
                        "cannot export {table}.{}, {}: {why}",
                        columns[i],
                        row_name(row, source, seen)
                    ))
                };
                let value = Lite::read(row, i).map_err(|e| misfit(e.to_string()))?;
                values.push(bind_as(value, ty).map_err(misfit)?);
            }
            Ok(values)
        },
    )
    .await
}

/// Copy `columns` of `table` from the snapshot `snap` (engine `S`) into
/// `tx` (engine `D`), in multi-row INSERTs as large as `D` allows; each
/// row's values are `values(row, n)` (`n` counts rows from 1).
pub(super) async fn copy_rows<S, D, V>(
    snap: &mut S::Connection,
    tx: &mut D::Connection,
    table: &str,
    columns: &[String],
    mut values: impl FnMut(&S::Row, usize) -> Result<Vec<V>>,
) -> Result<()>
where
    S: sqlx::Database,
    S::Arguments: Default + sqlx::IntoArguments<S>,
    for<'c> &'c mut S::Connection: sqlx::Executor<'c, Database = S>,
    D: sqlx::Database,
    D::Arguments: Default + sqlx::IntoArguments<D>,
    for<'c> &'c mut D::Connection: sqlx::Executor<'c, Database = D>,
    V: Binds<D>,
{
    let list = columns
        .iter()
        .map(|c| ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let select = format!("SELECT {list} FROM {}", ident(table));
    let per_batch = (V::MAX_PARAMS / columns.len().max(1)).clamp(1, V::MAX_BATCH_ROWS);
    let mut rows = sqlx::query::<S>(sqlx::AssertSqlSafe(select)).fetch(&mut *snap);
    let mut batch: Vec<Vec<V>> = Vec::with_capacity(per_batch);
    let mut seen = 0usize;
    while let Some(row) = rows.try_next().await? {
        seen += 1;
        batch.push(values(&row, seen)?);
        if batch.len() == per_batch {
            insert(tx, table, &list, &mut batch).await?;
        }
    }
    if !batch.is_empty() {
        insert(tx, table, &list, &mut batch).await?;
    }
    Ok(())
}

/// A row as an error names it: by its primary key, else its position.
fn row_name(row: &SqliteRow, source: &Source, n: usize) -> String {
    if source.key.is_empty() {
        return format!("row {n}");
    }
    let parts: Vec<String> = source
        .key
        .iter()
        .map(|&i| {
            let v = Lite::read(row, i).map_or_else(|_| "?".into(), |v| v.shown());
            format!("{} = {v}", source.columns[i])
        })
        .collect();
    format!("the row with {}", parts.join(", "))
}

/// One INSERT of every row in `batch` (emptied), on either engine: the
/// copy's values bind as their engine's own types.
async fn insert<DB, V>(
    tx: &mut DB::Connection,
    table: &str,
    list: &str,
    batch: &mut Vec<Vec<V>>,
) -> Result<()>
where
    DB: sqlx::Database,
    DB::Arguments: Default + sqlx::IntoArguments<DB>,
    V: Binds<DB>,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    let mut q = QueryBuilder::<DB>::new(format!("INSERT INTO {} ({list}) ", ident(table)));
    q.push_values(batch.drain(..), |mut tuple, values| {
        for v in values {
            v.bind(&mut tuple);
        }
    });
    q.build().execute(&mut *tx).await?;
    Ok(())
}

/// New rows continue the copied numbering: every identity (or serial)
/// column's sequence past its highest value, the event counter at the
/// highest `events.seq`.
async fn continue_numbering(tx: &mut PgConnection, copied: &[String]) -> Result<()> {
    let counters: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
          WHERE table_schema = current_schema() \
            AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')",
    )
    .fetch_all(&mut *tx)
    .await?;
    for (table, column) in counters.iter().filter(|(t, _)| copied.contains(t)) {
        // is_called = false: the next value handed out is max + 1 itself.
        let sql = format!(
            "SELECT setval(pg_get_serial_sequence($1, $2), \
                           COALESCE((SELECT max({}) FROM {}), 0) + 1, false)",
            ident(column),
            ident(table)
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ident(table))
            .bind(column)
            .execute(&mut *tx)
            .await?;
    }
    if copied.iter().any(|t| t == "events") {
        execute(
            tx,
            "UPDATE events_seq SET seq = (SELECT COALESCE(max(seq), 0) FROM events)".into(),
        )
        .await?;
    }
    Ok(())
}
