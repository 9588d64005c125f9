//! PostgreSQL, the second engine: bringing a database's schema
//! (`migrations/postgres`) up to this build's, for `handoff migrate`;
//! copying an SQLite file into an empty one ([`export`]) or one back into
//! a new SQLite file ([`import`]), for `handoff export`; the LISTEN
//! session of `follow::listen` ([`notify`]); and the pool a store on this
//! engine runs on ([`Pg`]), each write in a transaction of its own
//! ([`write`]). The parts' statements are not here: each part writes its
//! SQL once for both engines (see `engine.rs`).
//!
//! What a deploy step needs from it: the migrations this build carries
//! applied in order (sqlx's migrator takes PostgreSQL's advisory lock, so
//! two steps started at once apply them once), a database written by a
//! newer handoff refused the way a newer SQLite file is, and errors that
//! name the server without its password.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

use super::{Error, Result};

pub mod export;
pub mod import;
pub mod notify;
pub(crate) mod unported;
mod values;
pub(crate) mod write;

/// How long connecting (and waiting for a pooled connection) may take
/// before the server counts as not answering.
const PATIENCE: Duration = Duration::from_secs(10);

/// The PostgreSQL engine of a [`super::Store`]: a pool on one database.
#[derive(Clone, Debug)]
pub(crate) struct Pg {
    pool: PgPool,
    /// The URL without its password, as [`super::Store::path`] shows it.
    shown: PathBuf,
}

impl Pg {
    /// Connect to `url` and bring its schema up to this build's (refusing a
    /// newer one, as `handoff migrate` does).
    pub(crate) async fn open(url: &str) -> Result<Pg> {
        migrate(url).await?;
        let options: PgConnectOptions = url.parse().map_err(|e: sqlx::Error| Error::Open {
            path: shown(url),
            reason: format!("not a usable PostgreSQL URL: {e}"),
        })?;
        // Why 8: as many as a serving SQLite store has; each write holds
        // one for its transaction only.
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .min_connections(0)
            .acquire_timeout(PATIENCE)
            .connect_with(options)
            .await
            .map_err(|e| Error::Open {
                path: shown(url),
                reason: e.to_string(),
            })?;
        Ok(Pg {
            pool,
            shown: PathBuf::from(shown(url)),
        })
    }

    /// The pool, for the statements in this module's children.
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The URL without its password, as a path.
    pub(crate) fn shown(&self) -> &Path {
        &self.shown
    }

    /// Close the pool: every connection ends.
    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}

/// Whether PostgreSQL rolled the transaction back for a reason that goes
/// away by running it again: a serialization failure (40001) or a
/// deadlock (40P01). [`super::Store::retry`] retries these.
pub(crate) fn is_retryable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .is_some_and(|pg| matches!(pg.code(), "40001" | "40P01")),
        _ => false,
    }
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The newest PostgreSQL schema version this build knows.
pub fn schema_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// `url` as it may be shown: its password replaced by `***`.
pub fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => "the PostgreSQL URL".into(),
    }
}

/// The advisory lock `handoff migrate` holds while it reads what is
/// applied, applies the rest and reads again (any fixed key: the
/// migrator's own lock is taken inside it, and session locks nest).
const MIGRATE_LOCK: i64 = 0x68616e646f6666; // "handoff"

/// Apply this build's missing migrations to the PostgreSQL database at
/// `url`; the versions applied now (ascending), none when it was current.
/// Two at once: one waits for the other and then finds nothing to apply.
pub async fn migrate(url: &str) -> Result<Vec<i64>> {
    let at = shown(url);
    let mut conn = connect(url).await?;
    let outcome = apply(&mut conn, &at).await;
    // Closing ends the session, and with it the advisory lock.
    let _ = conn.close().await;
    outcome
}

/// One connection to the database at `url`, or an [`Error::Open`] naming
/// it without its password.
async fn connect(url: &str) -> Result<PgConnection> {
    let open = |reason: String| Error::Open {
        path: shown(url),
        reason,
    };
    let options: PgConnectOptions = url
        .parse()
        .map_err(|e: sqlx::Error| open(format!("not a usable PostgreSQL URL: {e}")))?;
    tokio::time::timeout(PATIENCE, PgConnection::connect_with(&options))
        .await
        .map_err(|_| open("the server did not answer within 10 s".into()))?
        .map_err(|e| open(e.to_string()))
}

async fn apply(conn: &mut PgConnection, at: &str) -> Result<Vec<i64>> {
    // Why one lock around the reads and the run: without it two steps at
    // once both read "nothing applied", and both reported every migration
    // as theirs although the migrator applied each once.
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(MIGRATE_LOCK)
        .execute(&mut *conn)
        .await
        .map_err(|e| Error::Migrate(e.to_string()))?;
    let known = schema_version();
    // Why read first: a newer handoff's database must be refused before
    // anything is applied, in the words the SQLite file gets.
    let had = applied_versions(conn).await?;
    if let Some(&found) = had.last()
        && found > known
    {
        return Err(Error::NewerSchema {
            path: at.to_string(),
            found,
            known,
        });
    }
    MIGRATOR
        .run(&mut *conn)
        .await
        .map_err(|e| Error::Migrate(e.to_string()))?;
    let now = applied_versions(conn).await?;
    Ok(now.into_iter().filter(|v| !had.contains(v)).collect())
}

/// The versions applied successfully so far, ascending (none on a
/// database no handoff has migrated yet).
async fn applied_versions(conn: &mut PgConnection) -> Result<Vec<i64>> {
    match sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .fetch_all(&mut *conn)
        .await
    {
        Ok(v) => Ok(v),
        // undefined_table: no migrations table yet.
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P01") => Ok(Vec::new()),
        Err(e) => Err(Error::Migrate(e.to_string())),
    }
}
