//! Store tests on both engines: one test body, run once on a temp SQLite
//! file and once on a fresh PostgreSQL database (tests/common/postgres.rs).
//!
//! A test is an `async fn name(db: Db)` that opens its stores with
//! `db.open()` (as many handles as it needs: each is a pool of its own, as
//! another process would have), and one line
//! `both_engines!(name, other_name, …);` makes `name::sqlite` and
//! `name::postgres` tests of it (`both_engines!(multi_thread: name)` for a
//! runtime of 4 worker threads). The body is plain Rust, so rustfmt and
//! clippy see it.

use std::path::Path;
use std::sync::Arc;

use handoff::clock::{Clock, ManualClock, SystemClock};
use handoff::store::Store;
use sqlx::Connection;

use super::TempDb;
use super::postgres::PgDb;

/// Which engine a test body runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// A fresh, empty database on one engine (schema applied), removed when
/// the test ends.
pub struct Db {
    pub engine: Engine,
    file: Option<TempDb>,
    pg: Option<PgDb>,
}

impl Db {
    /// A fresh database on `engine`.
    pub async fn new(engine: Engine) -> Db {
        match engine {
            Engine::Sqlite => Db {
                engine,
                file: Some(TempDb::new()),
                pg: None,
            },
            Engine::Postgres => {
                let db = Db {
                    engine,
                    file: None,
                    pg: Some(PgDb::new().await),
                };
                // Migrated once here, as `TempDb::new` creates its file.
                db.open().await.close().await;
                db
            }
        }
    }

    /// A store on this database with the system clock (a pool of its own).
    pub async fn open(&self) -> Store {
        self.open_with_clock(Arc::new(SystemClock)).await
    }

    /// A store on this database with a manual clock standing at `ms`.
    pub async fn open_manual(&self, ms: i64) -> (Store, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(ms));
        (self.open_with_clock(clock.clone()).await, clock)
    }

    /// A store on this database taking every "now" from `clock`.
    pub async fn open_with_clock(&self, clock: Arc<dyn Clock>) -> Store {
        match (&self.file, &self.pg) {
            (Some(file), _) => Store::open_with_clock(&file.path, clock).await,
            (_, Some(pg)) => Store::open_postgres(&pg.url, clock).await,
            _ => unreachable!("a Db holds one of the two"),
        }
        .inspect(|store| {
            // Never test SQLite twice by mistake.
            assert_eq!(store.file().is_some(), self.engine == Engine::Sqlite);
        })
        .unwrap_or_else(|e| panic!("open the {:?} store: {e}", self.engine))
    }

    /// The SQLite file (None on PostgreSQL).
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }

    /// Run one raw statement (placeholders `$1`, `$2`, …: both engines take
    /// them) with text `binds`, on a connection of its own, as a hand edit
    /// or another program would: the rows it changed, or the engine's
    /// error message.
    pub async fn exec(&self, sql: &str, binds: &[&str]) -> Result<u64, String> {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        let done = match (&self.file, &self.pg) {
            (Some(file), _) => {
                let mut c =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.path.display()))
                        .await
                        .expect("connect to the SQLite file");
                let mut q = sqlx::query::<sqlx::Sqlite>(sql);
                for b in binds {
                    q = q.bind(*b);
                }
                q.execute(&mut c).await.map(|r| r.rows_affected())
            }
            (_, Some(pg)) => {
                let mut c = pg.connect().await;
                let mut q = sqlx::query::<sqlx::Postgres>(sql);
                for b in binds {
                    q = q.bind(*b);
                }
                q.execute(&mut c).await.map(|r| r.rows_affected())
            }
            _ => unreachable!("a Db holds one of the two"),
        };
        done.map_err(|e| match e {
            sqlx::Error::Database(db) => db.message().to_string(),
            other => other.to_string(),
        })
    }
}

impl Db {
    /// The rows `sql` returns, every column as text (the query casts what
    /// is not text), read on a connection of its own.
    pub async fn rows(&self, sql: &str) -> super::engines::Rows {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match (&self.file, &self.pg) {
            (Some(file), _) => {
                let mut c =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.path.display()))
                        .await
                        .expect("connect to the SQLite file");
                let rows = sqlx::query::<sqlx::Sqlite>(sql)
                    .fetch_all(&mut c)
                    .await
                    .expect("sqlite select");
                super::engines::texts(&rows)
            }
            (_, Some(pg)) => {
                let mut c = pg.connect().await;
                let rows = sqlx::query::<sqlx::Postgres>(sql)
                    .fetch_all(&mut c)
                    .await
                    .expect("postgres select");
                super::engines::texts(&rows)
            }
            _ => unreachable!("a Db holds one of the two"),
        }
    }

    /// The PostgreSQL database (None on SQLite).
    pub fn pg(&self) -> Option<&PgDb> {
        self.pg.as_ref()
    }
}

/// `name::sqlite` and `name::postgres` tests running `async fn name(db: Db)`
/// on a fresh database of each engine (see the module docs).
#[macro_export]
macro_rules! both_engines {
    (multi_thread: $($name:ident),+ $(,)?) => {
        $( $crate::both_engines!(@one $name, tokio::test(flavor = "multi_thread", worker_threads = 4)); )+
    };
    (@one $name:ident, $($test:tt)+) => {
        mod $name {
            use $crate::common::engine::{Db, Engine};

            #[$($test)+]
            async fn sqlite() {
                super::$name(Db::new(Engine::Sqlite).await).await
            }

            #[$($test)+]
            async fn postgres() {
                super::$name(Db::new(Engine::Postgres).await).await
            }
        }
    };
    ($($name:ident),+ $(,)?) => {
        $( $crate::both_engines!(@one $name, tokio::test); )+
    };
}
