//! The store's errors, and what SQLite's result codes mean for a person.

/// Errors from the store. Refusals that are normal outcomes (lost a race,
/// already answered, stale revision) are *not* errors: each operation returns
/// them as a typed result.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input breaks a documented limit (title too long, bad status, …).
    #[error("{0}")]
    Invalid(String),
    /// A short reference matches more than one item (which ones depends on
    /// what is stored now): say which with a full id.
    #[error("{0}")]
    Ambiguous(String),
    /// The database stayed locked by other writers past every retry.
    #[error("the database is busy: other handoff processes kept it locked for too long; try again")]
    Busy,
    /// The file was written by a newer handoff whose schema this build does not know.
    #[error(
        "{path} was written by a newer handoff (schema {found}, this build knows up to {known}); upgrade handoff to use it"
    )]
    NewerSchema {
        /// The database file.
        path: String,
        /// Newest migration version found in the file.
        found: i64,
        /// Newest migration version this build carries.
        known: i64,
    },
    /// The database file cannot be opened or created.
    #[error("cannot open the database {path}: {reason}")]
    Open {
        /// The database file.
        path: String,
        /// What went wrong, in words.
        reason: String,
    },
    /// Applying the schema failed.
    #[error("cannot prepare the database schema: {0}")]
    Migrate(String),
    /// A write named a session that belongs to another project (see
    /// [`Store::claim_session`]): nothing was written.
    #[error(
        "session `{session}` belongs to another project (`{project}`): every item of a session is filed in the session's project; name that project, or use a session id of this project"
    )]
    SessionElsewhere {
        /// The session id as given.
        session: String,
        /// The project the session is registered in.
        project: String,
    },
    /// Any other database failure. Deliberately not a `#[source]`: the
    /// message already carries sqlx's text (and sqlx chains its own source),
    /// so `{:#}` of the chain would print it two or three times.
    #[error("database error: {}", db_message(.0))]
    Db(sqlx::Error),
    /// A queued write got no outcome of its own: the batch that carried it
    /// could not start or commit, or the write panicked. Nothing of it was
    /// kept. `busy`: another process held the database (retried).
    #[error("the write did not complete: {reason}")]
    Write {
        /// What went wrong, in words.
        reason: String,
        /// Whether another process holding the database was the cause.
        busy: bool,
    },
    /// Stored JSON that does not parse (a bug or a hand-edited file).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The operation has not been ported to PostgreSQL yet (see
    /// [`NOT_ON_POSTGRES_YET`]): `what` names the part of the store, with its verb.
    #[error("{what} not available on PostgreSQL yet: use a SQLite file (a path) for it")]
    Unsupported {
        /// The part of the store, e.g. "pending actions are".
        what: String,
    },
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Db(e)
    }
}

/// sqlx's error in one line: for a database error just SQLite's message
/// and code, without sqlx's "error returned from database" wrapper.
pub(super) fn db_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) => format!("{} (code {code})", db.message()),
            None => db.message().to_string(),
        },
        other => other.to_string(),
    }
}

/// SQLite primary result codes are the low byte of the extended code.
/// None for another engine's error (PostgreSQL's SQLSTATEs are digits
/// too, and must not read as SQLite's).
pub(super) fn sqlite_code(e: &sqlx::Error) -> Option<i64> {
    match e {
        sqlx::Error::Database(db)
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() =>
        {
            db.code().and_then(|c| c.parse::<i64>().ok())
        }
        _ => None,
    }
}

/// `SQLITE_BUSY` (5, including BUSY_SNAPSHOT) or `SQLITE_LOCKED` (6).
pub(crate) fn is_busy(e: &sqlx::Error) -> bool {
    matches!(sqlite_code(e).map(|c| c & 0xff), Some(5 | 6))
}

pub(super) fn is_readonly(e: &sqlx::Error) -> bool {
    matches!(sqlite_code(e).map(|c| c & 0xff), Some(8))
}

pub(super) fn describe_open_error(e: &sqlx::Error) -> String {
    match sqlite_code(e).map(|c| c & 0xff) {
        Some(14) => "the file or its directory cannot be opened (check the path and permissions)"
            .to_string(),
        Some(8) => "the file is read-only".into(),
        Some(26) => "the file is not a SQLite database".into(),
        Some(23) => "permission denied".into(),
        Some(5 | 6) => {
            "other handoff processes kept the file locked while it was being set up; try again"
                .into()
        }
        _ => e.to_string(),
    }
}

impl Error {
    /// The error for a person, in one line: a read-only database says what
    /// that means for the write; anything else is its message.
    pub fn describe(&self) -> String {
        match self {
            Error::Db(e) if sqlite_code(e).map(|c| c & 0xff) == Some(8) => {
                "the database is read-only: nothing was written; check the file's permissions or point HANDOFF_DB/--db elsewhere".into()
            }
            other => other.to_string(),
        }
    }
}

/// The database error under a migration failure: sqlx reports a failing
/// migration as `ExecuteMigration` and a failure around it (its bookkeeping
/// table) as `Execute`.
pub(super) fn migration_db_error(e: &sqlx::migrate::MigrateError) -> Option<&sqlx::Error> {
    match e {
        sqlx::migrate::MigrateError::Execute(inner)
        | sqlx::migrate::MigrateError::ExecuteMigration(inner, _) => Some(inner),
        _ => None,
    }
}
