//! The connection a writer writes on while it holds the write turn, and
//! the one-call savepoint its multi-statement writes run in (see
//! `writer.rs` for the turn itself and its group commit).

use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqliteConnection};

use crate::store::Result;

/// Where an operation runs: alone in autocommit, alone in its own
/// transaction (after [`Turn::begin`]), in a batch's transaction, or in its
/// own savepoint of it (after [`Turn::begin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Alone,
    AloneInTransaction,
    Batched,
    BatchedInSavepoint,
}

/// The connection an operation writes on while it holds the turn.
pub(crate) struct Turn {
    /// Always present until the turn ends ([`Turn::end`] or drop).
    conn: Option<PoolConnection<Sqlite>>,
    pub(super) mode: Mode,
    /// A [`Turn::savepoint_call`] may have left its savepoint open (it was
    /// cut short, or failing it could not be rolled back): the connection
    /// must not be used again.
    open_call: bool,
}

/// The first statement of a [`Turn::savepoint_call`].
pub(crate) const CALL_OPEN: &str = "SAVEPOINT one_call;";
/// The last statement of a [`Turn::savepoint_call`].
const CALL_CLOSE: &str = "RELEASE one_call;";

/// The text of one [`Turn::savepoint_call`] running `statements` (each
/// ending in `;`), all of them or none: the one place that wraps them.
pub(crate) fn call_text<S: AsRef<str>>(statements: &[S]) -> String {
    let mut sql = String::from(CALL_OPEN);
    for s in statements {
        sql.push('\n');
        sql.push_str(s.as_ref());
    }
    sql.push('\n');
    sql.push_str(CALL_CLOSE);
    sql
}

/// `statements` (separated by `;`, the last without one) as the text of
/// one [`Turn::savepoint_call`]. Safe SQL: callers pass literal statements
/// whose values are all bound parameters.
pub(crate) fn one_call(statements: &'static str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(call_text(&[statements, ";"]))
}

impl Turn {
    pub(super) fn new(conn: PoolConnection<Sqlite>, mode: Mode) -> Turn {
        Turn {
            conn: Some(conn),
            mode,
            open_call: false,
        }
    }

    /// The connection, for sqlx statements.
    pub(crate) fn conn(&mut self) -> &mut SqliteConnection {
        self.conn
            .as_mut()
            .expect("a turn holds its connection until it ends")
    }

    /// The turn ended cleanly: its connection, for the next turn (none
    /// when a call may have left a savepoint open: that one is closed).
    pub(super) fn end(mut self) -> Option<PoolConnection<Sqlite>> {
        let conn = self.conn.take().expect("a turn ends once");
        if self.open_call {
            drop(conn.detach());
            return None;
        }
        Some(conn)
    }

    /// Run one call of several statements, all or nothing, in one round
    /// trip: its text starts with [`CALL_OPEN`] and ends with
    /// [`CALL_CLOSE`]. Alone, that savepoint is the call's transaction (no
    /// `BEGIN`, no `COMMIT`); in a batch, it nests in the batch's. Why not
    /// [`Turn::begin`]: that is a call of its own, and another to commit.
    /// A call that fails is rolled back to its savepoint (one more call,
    /// only then); the rows are those of every statement, in order.
    pub(crate) async fn savepoint_call(
        &mut self,
        query: sqlx::query::Query<'_, Sqlite, sqlx::sqlite::SqliteArguments>,
    ) -> Result<Vec<sqlx::sqlite::SqliteRow>> {
        self.open_call = true;
        match query.fetch_all(self.conn()).await {
            Ok(rows) => {
                self.open_call = false;
                Ok(rows)
            }
            Err(e) => {
                let undo = sqlx::query("ROLLBACK TO one_call; RELEASE one_call")
                    .execute(self.conn())
                    .await;
                // "no such savepoint": the call failed before opening it,
                // or SQLite already rolled the whole transaction back.
                self.open_call = match undo {
                    Ok(_) => false,
                    Err(u) => !u.to_string().contains("no such savepoint"),
                };
                Err(e.into())
            }
        }
    }

    /// Make the rest of this operation all-or-nothing: `BEGIN IMMEDIATE`
    /// when it runs alone, a savepoint of its own in a batch. Statements it
    /// ran before this stand on their own (each is atomic).
    pub(crate) async fn begin(&mut self) -> Result<()> {
        let (sql, next) = match self.mode {
            Mode::Alone => ("BEGIN IMMEDIATE", Mode::AloneInTransaction),
            Mode::Batched => ("SAVEPOINT one_write", Mode::BatchedInSavepoint),
            _ => return Ok(()),
        };
        sqlx::query(sql).execute(self.conn()).await?;
        self.mode = next;
        Ok(())
    }
}

/// A turn dropped before it ended (its caller gave up mid-write) may hold
/// an open transaction: that connection is closed, not pooled, so SQLite
/// rolls it back and nobody else ever writes inside it.
impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && (self.mode != Mode::Alone || self.open_call)
        {
            drop(conn.detach());
        }
    }
}
