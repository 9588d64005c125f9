//! The same statements on both engines: a fresh SQLite database made by the
//! real store beside a fresh PostgreSQL one (tests/common/postgres.rs) with
//! migrations/postgres applied, and helpers that run a statement on both and
//! compare what each did or returns.

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{Postgres, Sqlite};

use super::postgres::PgDb;

/// The PostgreSQL migrations, embedded as the store will embed them.
pub static PG_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// A fresh SQLite database made by the real store, and a fresh PostgreSQL
/// database with the PostgreSQL migrations applied.
pub struct Both {
    _dir: tempfile::TempDir,
    /// The SQLite file, with foreign keys on as the store has them.
    pub lite: SqlitePool,
    /// The PostgreSQL database.
    pub pg: PgPool,
}

impl Both {
    pub async fn new() -> Both {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("handoff.db");
        drop(
            handoff::store::Store::open(&path)
                .await
                .expect("open store"),
        );
        // The store's own connection settings that matter here.
        let lite = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(
                SqliteConnectOptions::new()
                    .filename(&path)
                    .foreign_keys(true),
            )
            .await
            .expect("open sqlite");
        let db = PgDb::new().await;
        let pg = PgPoolOptions::new()
            .max_connections(2)
            .connect(&db.url) // by URL, as `[store] url` will name a server
            .await
            .expect("connect postgres");
        PG_MIGRATOR
            .run(&pg)
            .await
            .expect("apply migrations/postgres");
        Both {
            _dir: dir,
            lite,
            pg,
        }
    }

    /// Run `sql` with `binds` on each engine: (sqlite, postgres) outcomes.
    pub async fn outcomes(
        &self,
        sql: &str,
        binds: &[V],
    ) -> (Result<(), String>, Result<(), String>) {
        let mut lite = sqlx::query::<Sqlite>(sqlx::AssertSqlSafe(sql.to_string()));
        let mut pg = sqlx::query::<Postgres>(sqlx::AssertSqlSafe(sql.to_string()));
        for v in binds {
            (lite, pg) = match v {
                V::I(i) => (lite.bind(*i), pg.bind(*i)),
                V::T(t) => (lite.bind(*t), pg.bind(*t)),
                V::NullT => (lite.bind(None::<String>), pg.bind(None::<String>)),
                V::NullI => (lite.bind(None::<i64>), pg.bind(None::<i64>)),
            };
        }
        let a = lite.execute(&self.lite).await.map(drop).map_err(message);
        let b = pg.execute(&self.pg).await.map(drop).map_err(message);
        (a, b)
    }

    /// Run `sql` on both engines: both must succeed, or both refuse it with
    /// the same message (returned).
    pub async fn exec(&self, sql: &str, binds: &[V]) -> Result<(), String> {
        match self.outcomes(sql, binds).await {
            (Ok(()), Ok(())) => Ok(()),
            (Err(a), Err(b)) if a == b => Err(a),
            (a, b) => panic!("the engines disagree on `{sql}`: sqlite {a:?}, postgres {b:?}"),
        }
    }

    /// `exec` that must succeed.
    pub async fn ok(&self, sql: &str, binds: &[V]) {
        if let Err(e) = self.exec(sql, binds).await {
            panic!("`{sql}` refused on both engines: {e}");
        }
    }

    /// Run `sql` on both engines: both must refuse it (their messages may
    /// differ, e.g. a unique index's).
    pub async fn fails(&self, sql: &str, binds: &[V]) {
        match self.outcomes(sql, binds).await {
            (Err(_), Err(_)) => {}
            (a, b) => {
                panic!("expected both engines to refuse `{sql}`: sqlite {a:?}, postgres {b:?}")
            }
        }
    }

    /// The rows `sql` returns on each engine, every column as text (the
    /// query casts what is not text).
    pub async fn rows(&self, sql: &str) -> (Rows, Rows) {
        let lite = sqlx::query::<Sqlite>(sqlx::AssertSqlSafe(sql.to_string()))
            .fetch_all(&self.lite)
            .await
            .expect("sqlite select");
        let pg = sqlx::query::<Postgres>(sqlx::AssertSqlSafe(sql.to_string()))
            .fetch_all(&self.pg)
            .await
            .expect("postgres select");
        (texts(&lite), texts(&pg))
    }

    /// `sql` returns the same rows on both engines, and at least one.
    pub async fn same(&self, sql: &str) -> Rows {
        let (lite, pg) = self.rows(sql).await;
        assert_eq!(lite, pg, "{sql}: sqlite vs postgres");
        assert!(!lite.is_empty(), "{sql}: no rows to compare");
        lite
    }
}

/// A bound value, the same on both engines.
pub enum V {
    I(i64),
    T(&'static str),
    NullT,
    NullI,
}

pub type Rows = Vec<Vec<Option<String>>>;

pub fn texts<R: sqlx::Row>(rows: &[R]) -> Rows
where
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    rows.iter()
        .map(|r| {
            (0..r.len())
                .map(|i| r.try_get(i).expect("text column"))
                .collect()
        })
        .collect()
}

pub fn message(e: sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    }
}
