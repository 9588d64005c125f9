//! The durable store: one SQLite file shared by every handoff process, or
//! a PostgreSQL database shared by several.
//!
//! The daemon, CLI invocations and MCP servers may all have the file open at
//! once. Every state change is one guarded statement or one `BEGIN IMMEDIATE`
//! transaction that also appends its [event](events); a guarded
//! `UPDATE … WHERE <state predicate>` decides races and `rows_affected()` tells
//! who won. Reads happen afterwards only to explain a refusal.
//!
//! SQL lives only in this module and its children. It does not send chat
//! messages, run executors or wake anyone: it records, and others follow the
//! event log.
//!
//! Two engines behind one API: a [`Store`] holds an [`Engine`], SQLite (the
//! pool, the write turn, the file) or PostgreSQL ([`postgres::Pg`], a pool).
//! Every part reaches them through the seam in `engine`, the only place
//! that matches on the engine: one statement text for both (or one
//! spelling each), run as a read, a guarded write or a transaction; a
//! write whose shape differs per engine takes both bodies, kept side by
//! side in the part's own folder (`actions/postgres.rs`,
//! `sessions/postgres.rs`). Every part of the store runs on both but
//! `backup` (an SQLite file copy: it says to use pg_dump); a method
//! reaching SQLite alone through [`Store::pool`] or [`Store::begin_write`]
//! on a PostgreSQL store gets [`Error::Unsupported`] naming its part (see
//! [`NOT_ON_POSTGRES_YET`]), never a panic.

pub mod actions;
pub mod audit;
pub mod backup;
pub mod boards;
pub mod channel;
pub mod chat;
mod cols;
pub mod counts;
pub mod deliveries;
pub mod depth;
pub mod due;
mod engine;
mod error;
pub mod events;
pub mod grants;
pub mod inbox_sessions;
pub mod leases;
mod paths;
pub mod postgres;
pub mod questions;
pub mod refusal;
pub mod request;
#[doc(hidden)]
pub mod seed;
pub mod sessions;
pub mod slack;
pub mod tokens;
pub mod topics;
pub mod voice;
mod writer;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use std::panic::Location;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};

use crate::clock::{Clock, SystemClock};

pub use channel::Channel;
pub(crate) use engine::Engine;
pub use error::Error;
pub(crate) use error::is_busy;
use error::{db_message, describe_open_error, is_readonly, migration_db_error};
pub use events::{Event, NewEvent};
use paths::create_private_dir;
pub use paths::{default_location, fingerprint, socket_path};
pub use postgres::unported::NOT_ON_POSTGRES_YET;
pub(crate) use postgres::unported::unsupported;

/// Shorthand for store results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The newest schema version this build knows (its newest migration).
pub fn schema_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// How many times a write is retried after `SQLITE_BUSY` (on top of the
/// 5 s busy_timeout each attempt already waits).
const BUSY_RETRIES: u32 = 8;

/// How long opening a database waits out other processes setting the file
/// up (its switch to WAL, its migrations) before saying so.
const OPEN_PATIENCE: Duration = Duration::from_secs(10);

/// A handle on the store. Cheap to clone: clones share one connection pool.
#[derive(Clone, Debug)]
pub struct Store {
    clock: Arc<dyn Clock>,
    engine: Engine,
    /// Sessions' projects once known (see `sessions/home.rs`): a session's
    /// project never changes once it has one, so a cached one is never stale.
    homes: Arc<dashmap::DashMap<String, String>>,
}

impl Store {
    /// Open (creating if needed) the database at `path` with the system clock.
    pub async fn open(path: &Path) -> Result<Store> {
        Self::open_with_clock(path, Arc::new(SystemClock)).await
    }

    /// Open the database at `path`, taking every "now" from `clock`.
    ///
    /// Creates the parent directory (mode 0700) and the file, applies the
    /// embedded migrations (idempotent), and refuses a file whose schema is
    /// newer than this build.
    pub async fn open_with_clock(path: &Path, clock: Arc<dyn Clock>) -> Result<Store> {
        Ok(Self::open_shaped(path, clock, Shape::Serving).await?.0)
    }

    /// Open as [`Store::open_one_shot`] does, and say which migrations (by
    /// version, ascending) this open applied: none when the schema was
    /// current. For `handoff migrate`.
    pub async fn open_migrating(path: &Path) -> Result<(Store, Vec<i64>)> {
        Self::open_shaped(path, Arc::new(SystemClock), Shape::OneShot).await
    }

    /// Open the store for a one-shot command (a CLI call, a hook): one
    /// connection for its reads and its writes. Why: every connection is
    /// a worker thread, a file open and its setup pragmas — a few
    /// milliseconds each — and a pool of several opened up to three in one
    /// hook call (a connection given back reaches the pool a moment later,
    /// so the next statement found none idle and opened another). With
    /// one, the next statement waits that moment instead.
    pub async fn open_one_shot(path: &Path) -> Result<Store> {
        Ok(
            Self::open_shaped(path, Arc::new(SystemClock), Shape::OneShot)
                .await?
                .0,
        )
    }

    async fn open_shaped(
        path: &Path,
        clock: Arc<dyn Clock>,
        shape: Shape,
    ) -> Result<(Store, Vec<i64>)> {
        let shown = path.display().to_string();
        let open_err = |reason: String| Error::Open {
            path: shown.clone(),
            reason,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && !parent.exists()
        {
            create_private_dir(parent).map_err(|e| {
                open_err(format!("cannot create directory {}: {e}", parent.display()))
            })?;
        }
        if path.is_dir() {
            return Err(open_err("it is a directory, not a database file".into()));
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_millis(5000));
        let pool = connect(options, shape)
            .await
            .map_err(|e| open_err(describe_open_error(&e)))?;
        let store = Store {
            clock,
            homes: Arc::default(),
            engine: engine::sqlite(pool, path, shape == Shape::Serving),
        };
        let applied = store.migrate().await?;
        Ok((store, applied))
    }

    /// Open the PostgreSQL database at `url` (`postgres://…`), taking every
    /// "now" from `clock`: connects a pool, applies this build's missing
    /// migrations (under an advisory lock, as `handoff migrate` does) and
    /// refuses a database whose schema is newer than this build, as
    /// [`Error::NewerSchema`]. Every part of the store runs there but
    /// `backup` (see the module docs).
    pub async fn open_postgres(url: &str, clock: Arc<dyn Clock>) -> Result<Store> {
        Ok(Store {
            clock,
            homes: Arc::default(),
            engine: engine::postgres(url).await?,
        })
    }

    /// Refuse a newer schema, then apply missing migrations. Several processes
    /// may open a fresh file at once: each migration runs in its own
    /// transaction, so a loser of that race fails cleanly and the retry finds
    /// the migration applied.
    ///
    /// Why one read first: a file whose applied migrations are exactly this
    /// build's (same versions, all successful, same checksums) needs nothing
    /// from the migrator, whose own check is three more statements, usually
    /// on a connection opened just for it (the one this read used is still
    /// on its way back to the pool). Every CLI process (each hook call)
    /// opens the store, so the common case is this one read. Anything else
    /// (a fresh file, missing, failed or edited migrations, a newer schema)
    /// goes the full way below, which refuses or migrates as before.
    async fn migrate(&self) -> Result<Vec<i64>> {
        let lite = self.lite()?;
        let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
        let mut last = String::new();
        for attempt in 0..BUSY_RETRIES {
            let applied: Vec<(i64, bool, Vec<u8>)> = match sqlx::query_as(
                "SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version",
            )
            .fetch_all(&lite.pool)
            .await
            {
                Ok(v) => v,
                // No migrations table yet: a fresh file.
                Err(sqlx::Error::Database(e)) if e.message().contains("no such table") => {
                    Vec::new()
                }
                Err(e) if is_busy(&e) => {
                    backoff(attempt).await;
                    continue;
                }
                Err(e) => return Err(self.classify_open(e)),
            };
            if schema_is_current(&applied) {
                return Ok(Vec::new());
            }
            let found = applied.iter().filter(|m| m.1).map(|m| m.0).max();
            if let Some(found) = found
                && found > known
            {
                return Err(Error::NewerSchema {
                    path: lite.path.display().to_string(),
                    found,
                    known,
                });
            }
            match MIGRATOR.run(&lite.pool).await {
                Ok(()) => {
                    let had: Vec<i64> = applied.iter().filter(|m| m.1).map(|m| m.0).collect();
                    return Ok(MIGRATOR
                        .iter()
                        .filter(|m| m.migration_type.is_up_migration() && !had.contains(&m.version))
                        .map(|m| m.version)
                        .collect());
                }
                Err(e) => {
                    last = e.to_string();
                    if let Some(inner) = migration_db_error(&e)
                        && is_readonly(inner)
                    {
                        return Err(Error::Open {
                            path: lite.path.display().to_string(),
                            reason: "the file is read-only".into(),
                        });
                    }
                    backoff(attempt).await;
                }
            }
        }
        Err(Error::Migrate(last))
    }

    fn classify_open(&self, e: sqlx::Error) -> Error {
        Error::Open {
            path: self.path().display().to_string(),
            reason: describe_open_error(&e),
        }
    }

    /// The current time in ms, from this store's clock.
    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The clock this store stamps writes with.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Start a write transaction that takes the write lock up front
    /// (`BEGIN IMMEDIATE`), so it can never fail later with
    /// `SQLITE_BUSY_SNAPSHOT` when a read upgrades to a write. Dropping the
    /// transaction without commit rolls it back. SQLite only.
    #[track_caller]
    pub(crate) fn begin_write(&self) -> impl Future<Output = Result<WriteTx>> + '_ {
        let lite = self.lite();
        async move {
            let lite = lite?;
            // The guard is taken before a pooled connection, so queued writers
            // don't sit on connections readers need.
            let guard = lite.write_lock.clone().lock_owned().await;
            let tx = lite.pool.begin_with("BEGIN IMMEDIATE").await?;
            Ok(WriteTx { tx, _guard: guard })
        }
    }

    /// Run `op` (one guarded statement or one whole transaction) and retry it
    /// with bounded, jittered backoff while SQLite reports the database busy
    /// or locked, or PostgreSQL a serialization failure or a deadlock (the
    /// transaction was rolled back whole: running it again is safe). A
    /// persistent busy state becomes [`Error::Busy`], never a panic.
    pub(crate) async fn retry<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        for attempt in 0..=BUSY_RETRIES {
            match op().await {
                Err(Error::Db(e)) if is_busy(&e) || postgres::is_retryable(&e) => {
                    tracing::debug!(attempt, "database busy, retrying");
                    if attempt == BUSY_RETRIES {
                        break;
                    }
                    backoff(attempt).await;
                }
                Err(Error::Write { busy: true, .. }) => {
                    tracing::debug!(attempt, "database busy, retrying");
                    if attempt == BUSY_RETRIES {
                        break;
                    }
                    backoff(attempt).await;
                }
                other => return other,
            }
        }
        Err(Error::Busy)
    }

    /// [`Store::write`] with [`Store::retry`]'s busy retries: `op` runs under
    /// the write turn with its own copy of `input` and the clock's time when
    /// it runs (a retry reads it again). The shape most single writes share.
    #[track_caller]
    pub(crate) fn write_retried<I, T, F>(
        &self,
        input: I,
        op: F,
    ) -> impl Future<Output = Result<T>> + '_
    where
        I: Clone + Send + 'static,
        T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
        F: for<'t> Fn(
                &'t mut writer::Turn,
                I,
                i64,
            ) -> futures_util::future::BoxFuture<'t, Result<T>>
            + Clone
            + Send
            + 'static,
    {
        let at = Location::caller();
        let clock = self.clock().clone();
        async move {
            self.retry(|| {
                let (input, op, clock) = (input.clone(), op.clone(), clock.clone());
                self.write_at(at, move |turn| op(turn, input, clock.now_ms()))
            })
            .await
        }
    }
}

/// Whether the applied migrations (version, success, checksum; ascending
/// by version) are exactly this build's up migrations: then the migrator
/// has nothing to apply and nothing to refuse.
fn schema_is_current(applied: &[(i64, bool, Vec<u8>)]) -> bool {
    let mut ours = MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration());
    let mut theirs = applied.iter();
    loop {
        match (ours.next(), theirs.next()) {
            (None, None) => return true,
            (Some(m), Some((version, success, checksum))) => {
                if m.version != *version || !*success || *m.checksum != **checksum {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// What a store is opened for: a process that serves many callers at
/// once (the daemon, tests), or a one-shot command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Serving,
    OneShot,
}

/// Connect the pool, retrying while the file is busy or locked. Why: the
/// first connection to a fresh file switches it to WAL, which needs an
/// exclusive lock that SQLite's busy handler does not wait for; another
/// process opening the same new file at that moment gets `SQLITE_BUSY` at
/// once. Retried with jittered backoff for up to [`OPEN_PATIENCE`].
async fn connect(
    options: SqliteConnectOptions,
    shape: Shape,
) -> std::result::Result<SqlitePool, sqlx::Error> {
    // Why a time bound, not a count: SQLite refuses the lock upgrade of a
    // fresh file's WAL switch at once (no busy handler), so all the waiting
    // is ours, and a count of quick retries runs out on a loaded machine.
    let deadline = tokio::time::Instant::now() + OPEN_PATIENCE;
    let mut attempt = 0;
    loop {
        // Why no ping on acquire: every statement is a round trip to the
        // connection's worker thread already, and a check before each one
        // doubled it; a broken connection still fails its own statement.
        let pool = SqlitePoolOptions::new()
            .max_connections(match shape {
                Shape::Serving => 8,
                Shape::OneShot => 1,
            })
            .min_connections(0)
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await;
        match pool {
            Err(e) if is_busy(&e) && tokio::time::Instant::now() < deadline => {
                tracing::debug!(attempt, "database locked while opening, retrying");
                backoff(attempt).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// A write transaction holding this process's write turn. Derefs to the
/// connection; dropping it without [`commit`](WriteTx::commit) rolls back.
pub(crate) struct WriteTx {
    tx: Transaction<'static, Sqlite>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl WriteTx {
    /// Commit, then give the write turn to the next writer.
    pub(crate) async fn commit(self) -> Result<()> {
        Ok(self.tx.commit().await?)
    }
}

impl std::ops::Deref for WriteTx {
    type Target = sqlx::SqliteConnection;
    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

/// Sleep before retry `attempt`: 10 ms doubling to ~1.3 s, with jitter so
/// racing processes spread out.
async fn backoff(attempt: u32) {
    let base = 10u64 << attempt.min(7);
    let jitter = (uuid::Uuid::now_v7().as_u128() as u64) % (base / 2 + 1);
    tokio::time::sleep(Duration::from_millis(base + jitter)).await;
}

/// A new random id (UUIDv7: time-ordered, so ids sort by creation).
pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// The short form of an id shown in chat and accepted by commands: its last
/// 8 characters (the random part of a UUIDv7). Characters, not bytes: a
/// session id is the client's and may be any text.
pub fn short_id(id: &str) -> &str {
    let start = id.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    &id[start..]
}

/// `n` and `word`, plural unless `n` is 1 ("1 option", "5 options").
pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}
