//! The harness's own reads of the database, on either engine: the
//! invariants look at rows the store's API does not hand out (cursors,
//! chat records, approvals), with the same SQL on SQLite and PostgreSQL
//! (`?` placeholders, rewritten to `$N` for PostgreSQL).

use std::path::Path;

use sqlx::postgres::{PgPoolOptions, PgRow};
use sqlx::sqlite::SqliteRow;
use sqlx::{FromRow, PgPool, SqlitePool};

/// A value bound to a `?`.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Int(i64),
    Text(&'a str),
}

/// A pool of the harness's own, on the database the daemons share.
#[derive(Clone)]
pub enum Raw {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Raw {
    /// Open `db`: a `postgres://` URL or a SQLite file's path.
    pub async fn open(db: &str) -> Raw {
        if db.starts_with("postgres") {
            let pool = PgPoolOptions::new()
                .max_connections(2)
                .connect(db)
                .await
                .expect("the harness's own PostgreSQL pool");
            Raw::Postgres(pool)
        } else {
            Raw::Sqlite(crate::common::raw_pool(Path::new(db)).await)
        }
    }

    /// Every row `sql` selects.
    pub async fn all<T>(&self, sql: &str, args: &[Arg<'_>]) -> Vec<T>
    where
        T: Send + Unpin + for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow>,
    {
        match self {
            Raw::Sqlite(pool) => {
                let mut q = sqlx::query_as::<_, T>(sqlx::AssertSqlSafe(sql.to_string()));
                for a in args {
                    q = match *a {
                        Arg::Int(n) => q.bind(n),
                        Arg::Text(s) => q.bind(s.to_string()),
                    };
                }
                q.fetch_all(pool).await
            }
            Raw::Postgres(pool) => {
                let mut q = sqlx::query_as::<_, T>(sqlx::AssertSqlSafe(numbered(sql)));
                for a in args {
                    q = match *a {
                        Arg::Int(n) => q.bind(n),
                        Arg::Text(s) => q.bind(s.to_string()),
                    };
                }
                q.fetch_all(pool).await
            }
        }
        .unwrap_or_else(|e| panic!("the harness's read failed: {e}\n{sql}"))
    }

    /// The one number `sql` selects.
    pub async fn scalar(&self, sql: &str, args: &[Arg<'_>]) -> i64 {
        let rows: Vec<(i64,)> = self.all(sql, args).await;
        rows.first()
            .map(|r| r.0)
            .expect("a scalar read returns a row")
    }

    /// The first row `sql` selects, if any.
    pub async fn first<T>(&self, sql: &str, args: &[Arg<'_>]) -> Option<T>
    where
        T: Send + Unpin + for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow>,
    {
        self.all(sql, args).await.into_iter().next()
    }
}

/// `?` placeholders as PostgreSQL's `$1`, `$2`, … (the harness's SQL has
/// no `?` inside a literal).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}
