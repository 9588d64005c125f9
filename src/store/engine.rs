//! The engine seam: where a part of the store meets SQLite or PostgreSQL.
//!
//! A part writes each statement once, as a [`Stmt`] — its text (the same
//! on both engines, `$N` placeholders; or one spelling per engine where
//! the dialects differ) and its values — and runs it through the
//! [`Store`]'s engine-neutral calls: reads on the pool ([`Store::rows`],
//! [`Store::row`], [`Store::first`]), one guarded statement as a write of
//! its own ([`Store::change`], [`Store::change_returning`]), or several
//! in one transaction ([`Store::transact`], whose body gets a [`Tx`]).
//! Only this file matches on which engine a store has for them; the
//! parts hold the rules and the SQL, not the plumbing.
//!
//! What the calls keep from each engine: on SQLite a write waits its place
//! in this process's write turn (never in SQLite's busy handler) and a
//! transaction runs in the turn's group commit; on PostgreSQL each write
//! is a transaction of its own; both retry a busy database, a serialization
//! failure or a deadlock as [`Store::retry`] says.

use futures_util::future::BoxFuture;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{PgConnection, SqliteConnection};

use std::panic::Location;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlx::SqlitePool;

use super::postgres::Pg;
use super::postgres::unported::unsupported;
use super::writer::queue::Writer;
use super::writer::turn::Turn;
use super::{Error, Result, Store};

mod bounds;
mod stmt;

pub(crate) use bounds::{Input, Output, Rows, TxOp};

pub(crate) use stmt::Stmt;

/// The connection of a write in progress ([`Store::write_with`],
/// [`Store::transact`]), or of a [`Snapshot`].
pub(crate) enum Tx<'c> {
    /// In SQLite's write turn.
    Turn(&'c mut Turn),
    /// In a SQLite transaction outside the write turn's group commit (a
    /// [`Snapshot`], or [`Store::transact_apart`]).
    Lite(&'c mut SqliteConnection),
    /// In a PostgreSQL transaction of its own.
    Pg(&'c mut PgConnection),
}

impl Tx<'_> {
    /// Make the rest of this write all-or-nothing. On SQLite the turn's
    /// `begin` (alone: `BEGIN IMMEDIATE`; in a batch: a savepoint); a
    /// PostgreSQL write is a transaction already. A single statement needs
    /// none: each is atomic.
    pub(crate) async fn begin(&mut self) -> Result<()> {
        match self {
            Tx::Turn(t) => t.begin().await,
            Tx::Lite(_) | Tx::Pg(_) => Ok(()),
        }
    }

    /// The connection the statements run on, by engine.
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Tx::Turn(t) => Conn::Lite(t.conn()),
            Tx::Lite(c) => Conn::Lite(c),
            Tx::Pg(c) => Conn::Pg(c),
        }
    }

    /// Run `s`; the rows it changed. Not a one-call savepoint: its rows
    /// changed are the last statement's (use [`Tx::rows`]).
    pub(crate) async fn change(&mut self, s: &Stmt<'_>) -> Result<u64> {
        debug_assert!(!s.is_call(), "a one-call savepoint runs through Tx::rows");
        Ok(match self.conn() {
            Conn::Lite(c) => s.on_lite().execute(c).await?.rows_affected(),
            Conn::Pg(c) => s.on_pg().execute(c).await?.rows_affected(),
        })
    }

    /// The rows `s` yields (a `SELECT`, or a write's `RETURNING`). A
    /// one-call savepoint (`Stmt::is_call`) in the write turn runs as
    /// [`Turn::savepoint_call`], which undoes the call when a statement of it
    /// fails.
    pub(crate) async fn rows<T: Rows>(&mut self, s: &Stmt<'_>) -> Result<Vec<T>> {
        if let Tx::Turn(turn) = self
            && s.is_call()
        {
            let rows = turn.savepoint_call(s.on_lite()).await?;
            return Ok(rows.iter().map(T::from_row).collect::<sqlx::Result<_>>()?);
        }
        Ok(match self.conn() {
            Conn::Lite(c) => {
                let q = s.on_lite().try_map(|r: SqliteRow| T::from_row(&r));
                q.fetch_all(c).await?
            }
            Conn::Pg(c) => {
                let q = s.on_pg().try_map(|r: PgRow| T::from_row(&r));
                q.fetch_all(c).await?
            }
        })
    }

    /// The first row `s` yields, if any (a one-call savepoint as in
    /// [`Tx::rows`]).
    pub(crate) async fn row<T: Rows>(&mut self, s: &Stmt<'_>) -> Result<Option<T>> {
        if matches!(self, Tx::Turn(_)) && s.is_call() {
            return Ok(self.rows(s).await?.into_iter().next());
        }
        Ok(match self.conn() {
            Conn::Lite(c) => {
                let q = s.on_lite().try_map(|r: SqliteRow| T::from_row(&r));
                q.fetch_optional(c).await?
            }
            Conn::Pg(c) => {
                let q = s.on_pg().try_map(|r: PgRow| T::from_row(&r));
                q.fetch_optional(c).await?
            }
        })
    }
}

/// One engine's connection under a [`Tx`], whichever way it is held.
enum Conn<'c> {
    Lite(&'c mut SqliteConnection),
    Pg(&'c mut PgConnection),
}

/// A read-only transaction: every read on it sees one snapshot of the
/// database ([`Store::snapshot`]).
pub(crate) enum Snapshot {
    /// A deferred SQLite transaction (WAL: its first read fixes the snapshot).
    Lite(sqlx::Transaction<'static, sqlx::Sqlite>),
    /// A PostgreSQL transaction at REPEATABLE READ, READ ONLY.
    Pg(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl Snapshot {
    /// The connection, to read on.
    pub(crate) fn tx(&mut self) -> Tx<'_> {
        match self {
            Snapshot::Lite(t) => Tx::Lite(&mut *t),
            Snapshot::Pg(t) => Tx::Pg(&mut *t),
        }
    }

    /// End the snapshot (nothing was written).
    pub(crate) async fn end(self) -> Result<()> {
        match self {
            Snapshot::Lite(t) => t.commit().await?,
            Snapshot::Pg(t) => t.commit().await?,
        }
        Ok(())
    }
}

impl Store {
    /// A read-only transaction for reads that must agree with each other.
    pub(crate) async fn snapshot(&self) -> Result<Snapshot> {
        Ok(match self.engine() {
            Engine::Sqlite(_) => Snapshot::Lite(self.pool()?.begin().await?),
            Engine::Postgres(pg) => {
                let mut tx = pg.pool().begin().await?;
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .execute(&mut *tx)
                    .await?;
                Snapshot::Pg(tx)
            }
        })
    }

    /// The rows the read `s` yields.
    pub(crate) async fn rows<T: Rows>(&self, s: Stmt<'_>) -> Result<Vec<T>> {
        Ok(match self.engine() {
            Engine::Sqlite(_) => {
                s.on_lite()
                    .try_map(|r: SqliteRow| T::from_row(&r))
                    .fetch_all(self.pool()?)
                    .await?
            }
            Engine::Postgres(pg) => {
                s.on_pg()
                    .try_map(|r: PgRow| T::from_row(&r))
                    .fetch_all(pg.pool())
                    .await?
            }
        })
    }

    /// The first row the read `s` yields, if any.
    pub(crate) async fn row<T: Rows>(&self, s: Stmt<'_>) -> Result<Option<T>> {
        Ok(match self.engine() {
            Engine::Sqlite(_) => {
                s.on_lite()
                    .try_map(|r: SqliteRow| T::from_row(&r))
                    .fetch_optional(self.pool()?)
                    .await?
            }
            Engine::Postgres(pg) => {
                s.on_pg()
                    .try_map(|r: PgRow| T::from_row(&r))
                    .fetch_optional(pg.pool())
                    .await?
            }
        })
    }

    /// The one value of the first row the read `s` yields (a `COUNT(*)`).
    pub(crate) async fn first<T>(&self, s: Stmt<'_>) -> Result<T>
    where
        (T,): Rows,
    {
        match self.row::<(T,)>(s).await? {
            Some((v,)) => Ok(v),
            None => Err(sqlx::Error::RowNotFound.into()),
        }
    }

    /// Run the guarded statement `s` as a write of its own; the rows it
    /// changed. Why under the write turn on SQLite: a write straight on the
    /// pool met the turn's writers at SQLite's file lock and slept in its
    /// busy handler; in the turn it waits its place instead.
    pub(crate) async fn change(&self, s: Stmt<'_>) -> Result<u64> {
        self.retry(|| async {
            Ok(match self.engine() {
                Engine::Sqlite(_) => {
                    let _turn = self.write_lock()?.clone().lock_owned().await;
                    s.on_lite().execute(self.pool()?).await?.rows_affected()
                }
                Engine::Postgres(pg) => s.on_pg().execute(pg.pool()).await?.rows_affected(),
            })
        })
        .await
    }

    /// [`Store::change`] for a statement whose `RETURNING` yields rows.
    pub(crate) async fn change_returning<T: Rows>(&self, s: Stmt<'_>) -> Result<Vec<T>> {
        debug_assert!(!s.is_call(), "a one-call savepoint runs in the write turn");
        self.retry(|| async {
            let _turn = match self.engine() {
                Engine::Sqlite(_) => Some(self.write_lock()?.clone().lock_owned().await),
                Engine::Postgres(_) => None,
            };
            self.rows(s.clone()).await
        })
        .await
    }

    /// A write whose statements differ in shape per engine, not only in
    /// spelling (SQLite runs several in one call where PostgreSQL runs
    /// them one by one): `lite` in SQLite's write turn, `pg` in a
    /// PostgreSQL transaction, each as [`Store::write_with`] runs its `op`.
    pub(crate) async fn write_split<I, T, L, P>(&self, input: I, lite: L, pg: P) -> Result<T>
    where
        I: Input,
        T: Output,
        L: for<'t> Fn(&'t mut Turn, I, i64) -> BoxFuture<'t, Result<T>> + Clone + Send + 'static,
        P: for<'c> Fn(&'c mut PgConnection, I, i64) -> BoxFuture<'c, Result<T>> + Send + Sync,
    {
        match self.engine() {
            Engine::Sqlite(_) => self.write_retried(input, lite).await,
            Engine::Postgres(p) => self.pg_write(p, input, pg).await,
        }
    }

    /// A write only SQLite has a shape for (one multi-statement call that
    /// wins or writes nothing): `lite` in SQLite's write turn, as
    /// [`Store::write_split`] runs it; on PostgreSQL `None` without a
    /// statement, for the caller's general path.
    pub(crate) async fn write_lite<I, T, L>(&self, input: I, lite: L) -> Result<Option<T>>
    where
        I: Input,
        T: Output,
        L: for<'t> Fn(&'t mut Turn, I, i64) -> BoxFuture<'t, Result<Option<T>>>
            + Clone
            + Send
            + 'static,
    {
        match self.engine() {
            Engine::Sqlite(_) => self.write_retried(input, lite).await,
            Engine::Postgres(_) => Ok(None),
        }
    }

    /// Run `op` — several statements and usually an event — as one
    /// transaction: [`Store::write_with`] with [`Tx::begin`] first.
    pub(crate) async fn transact<I, T, F>(&self, input: I, op: F) -> Result<T>
    where
        I: Input,
        T: Output,
        F: TxOp<I, T>,
    {
        self.write_with(input, move |mut tx, input, now| {
            let op = op.clone();
            Box::pin(async move {
                tx.begin().await?;
                op(tx, input, now).await
            })
        })
        .await
    }

    /// Run the write `op` with its own copy of `input` and the clock's time
    /// when it runs (a retry reads it again); kept when `op` returns `Ok`
    /// (a typed refusal is a normal outcome: kept too), undone on `Err`.
    /// Statements before [`Tx::begin`] stand alone on SQLite, where a lone
    /// writer's single statement is its whole transaction (see `writer`).
    /// Under a request id the write remembers its value, or replays what a
    /// first attempt of the same call remembered (see `request`).
    pub(crate) async fn write_with<I, T, F>(&self, input: I, op: F) -> Result<T>
    where
        I: Input,
        T: Output,
        F: TxOp<I, T>,
    {
        match self.engine() {
            Engine::Sqlite(_) => {
                self.write_retried(input, move |turn, input, now| {
                    let op = op.clone();
                    Box::pin(async move { op(Tx::Turn(turn), input, now).await })
                })
                .await
            }
            Engine::Postgres(pg) => {
                self.pg_write(pg, input, move |conn, input, now| {
                    op(Tx::Pg(conn), input, now)
                })
                .await
            }
        }
    }

    /// Run `op` as a transaction of its own, outside SQLite's group
    /// commit: there a `BEGIN IMMEDIATE` under the write turn's lock
    /// ([`Store::begin_write`]; not remembered under a request id), on
    /// PostgreSQL a write as [`Store::write_with`] runs it. For the older
    /// writers that stand apart from the turn's batches; retried as
    /// [`Store::retry`] says.
    pub(crate) async fn transact_apart<I: Input, T: Output>(
        &self,
        input: I,
        op: impl TxOp<I, T>,
    ) -> Result<T> {
        if let Engine::Postgres(_) = self.engine() {
            return self.write_with(input, op).await;
        }
        self.retry(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            let out = op(Tx::Lite(&mut tx), input.clone(), now).await?;
            tx.commit().await?;
            Ok(out)
        })
        .await
    }
}

/// The database under a [`Store`].
#[derive(Clone, Debug)]
pub(crate) enum Engine {
    /// One SQLite file (the embedded default).
    Sqlite(Lite),
    /// A PostgreSQL database: every part of the store but `backup`.
    Postgres(Pg),
}

/// The SQLite engine's parts.
#[derive(Clone, Debug)]
pub(crate) struct Lite {
    pub(super) pool: SqlitePool,
    /// Serialises this process's writers before they ask SQLite for the
    /// write lock: queued on a fair async mutex instead of spinning in
    /// SQLite's busy handler (which sleeps up to tens of ms per round).
    /// Writers in other processes still meet at SQLite's lock.
    pub(super) write_lock: Arc<tokio::sync::Mutex<()>>,
    /// The operations queued for the write turn (group commit).
    pub(super) writer: Arc<Writer>,
    pub(super) path: PathBuf,
}

/// An SQLite store's engine: `pool` on the file at `path`, with a write
/// turn (`serving`: a daemon's, which keeps its own connection).
pub(super) fn sqlite(pool: SqlitePool, path: &Path, serving: bool) -> Engine {
    Engine::Sqlite(Lite {
        pool,
        write_lock: Arc::new(tokio::sync::Mutex::new(())),
        writer: Writer::new(serving),
        path: path.to_path_buf(),
    })
}

/// A PostgreSQL store's engine: a pool on `url`, migrated (see
/// [`Store::open_postgres`]).
pub(super) async fn postgres(url: &str) -> Result<Engine> {
    Ok(Engine::Postgres(Pg::open(url).await?))
}

impl Store {
    /// The database file. A PostgreSQL store has none: there it is the
    /// URL without its password (so a fingerprint of it still tells two
    /// databases apart); [`Store::file`] says which.
    pub fn path(&self) -> &Path {
        match &self.engine {
            Engine::Sqlite(lite) => &lite.path,
            Engine::Postgres(pg) => pg.shown(),
        }
    }

    /// The database file, or `None` for a PostgreSQL store.
    pub fn file(&self) -> Option<&Path> {
        match &self.engine {
            Engine::Sqlite(lite) => Some(&lite.path),
            Engine::Postgres(_) => None,
        }
    }

    /// On PostgreSQL, the pool a listener for other processes' commits
    /// takes its server and credentials from (`follow::listen`); `None` on
    /// SQLite, whose files are watched instead.
    pub fn notifications(&self) -> Option<sqlx::PgPool> {
        match &self.engine {
            Engine::Sqlite(_) => None,
            Engine::Postgres(pg) => Some(pg.pool().clone()),
        }
    }

    /// The engine, for the methods that run on both.
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The SQLite engine's parts, or [`Error::Unsupported`] naming the part
    /// of the store that called (see [`NOT_ON_POSTGRES_YET`]).
    #[track_caller]
    pub(crate) fn lite(&self) -> Result<&Lite> {
        match &self.engine {
            Engine::Sqlite(lite) => Ok(lite),
            Engine::Postgres(_) => Err(unsupported(Location::caller())),
        }
    }

    /// The SQLite connection pool, for reads inside the store module; on a
    /// PostgreSQL store, [`Error::Unsupported`] naming the caller's part of
    /// the store.
    #[track_caller]
    pub(crate) fn pool(&self) -> Result<&SqlitePool> {
        match &self.engine {
            Engine::Sqlite(lite) => Ok(&lite.pool),
            Engine::Postgres(_) => Err(unsupported(Location::caller())),
        }
    }

    /// This process's write turn (SQLite only), for a writer that runs its
    /// own statement on the pool rather than through [`Store::write`].
    #[track_caller]
    pub(crate) fn write_lock(&self) -> Result<&Arc<tokio::sync::Mutex<()>>> {
        Ok(&self.lite()?.write_lock)
    }

    /// Number of rows in `table`. For tests and diagnostics; `table` must be
    /// one of the store's own table names.
    pub async fn count_rows(&self, table: &str) -> Result<i64> {
        if !table
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(Error::Invalid(format!("`{table}` is not a table name")));
        }
        let sql = format!("SELECT COUNT(*) FROM {table}");
        match &self.engine {
            Engine::Sqlite(lite) => Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_one(&lite.pool)
                .await?),
            Engine::Postgres(pg) => Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_one(pg.pool())
                .await?),
        }
    }

    /// Close the pool (on SQLite, checkpointing the WAL).
    pub async fn close(&self) {
        match &self.engine {
            Engine::Sqlite(lite) => {
                lite.writer.release();
                lite.pool.close().await;
            }
            Engine::Postgres(pg) => pg.close().await,
        }
    }
}
