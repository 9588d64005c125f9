//! A statement and its bound values, written once and run on either engine
//! (each engine's spelling of the SQL where they differ).

use sqlx::{Database, Encode, Type};

/// One value bound to a statement: text, an integer or a boolean, any of
/// them NULL.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg<'q> {
    /// Text (`None`: NULL).
    Text(Option<&'q str>),
    /// A 64-bit integer (`None`: NULL).
    Int(Option<i64>),
    /// A boolean (`None`: NULL).
    Bool(Option<bool>),
}

/// One statement and its values, runnable on either engine.
#[derive(Clone, Debug)]
pub(crate) struct Stmt<'q> {
    lite: &'static str,
    pg: &'static str,
    args: Vec<Arg<'q>>,
}

impl<'q> Stmt<'q> {
    /// A statement whose text is the same on both engines.
    pub(crate) fn new(sql: &'static str) -> Stmt<'q> {
        Stmt::spelled(sql, sql)
    }

    /// A statement spelled once per engine (a cast, a function name), the
    /// values numbered the same in both.
    pub(crate) fn spelled(lite: &'static str, pg: &'static str) -> Stmt<'q> {
        Stmt {
            lite,
            pg,
            args: Vec::new(),
        }
    }

    /// Bind the next value: text, or NULL for `None`.
    pub(crate) fn text(mut self, v: impl Into<Option<&'q str>>) -> Stmt<'q> {
        self.args.push(Arg::Text(v.into()));
        self
    }

    /// Bind the next value: an integer, or NULL for `None`.
    pub(crate) fn int(mut self, v: impl Into<Option<i64>>) -> Stmt<'q> {
        self.args.push(Arg::Int(v.into()));
        self
    }

    /// Bind the next value: a boolean, or NULL for `None`.
    pub(crate) fn bool(mut self, v: impl Into<Option<bool>>) -> Stmt<'q> {
        self.args.push(Arg::Bool(v.into()));
        self
    }

    /// The statement as a query of engine `DB`, in `sql`'s spelling.
    fn query<DB>(&self, sql: &'static str) -> sqlx::query::Query<'q, DB, DB::Arguments>
    where
        DB: Database,
        Option<&'q str>: Encode<'q, DB> + Type<DB>,
        Option<i64>: Encode<'q, DB> + Type<DB>,
        Option<bool>: Encode<'q, DB> + Type<DB>,
    {
        let mut q = sqlx::query::<DB>(sql);
        for arg in &self.args {
            q = match *arg {
                Arg::Text(v) => q.bind(v),
                Arg::Int(v) => q.bind(v),
                Arg::Bool(v) => q.bind(v),
            };
        }
        q
    }

    /// Whether the SQLite text is one call in its own savepoint
    /// (`writer::call_text`): the write turn must run it as one.
    pub(crate) fn is_call(&self) -> bool {
        self.lite.starts_with(crate::store::writer::CALL_OPEN)
    }

    pub(super) fn on_lite(
        &self,
    ) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
        self.query(self.lite)
    }

    pub(super) fn on_pg(
        &self,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        self.query(self.pg)
    }
}
