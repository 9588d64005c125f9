//! Reading questions: one by id, short-id lookup, lists, reply history.
//!
//! Reads never decide a write; they only show state and explain refusals.
//! Where the engines' spellings differ (a suffix, an unlimited `LIMIT`,
//! PostgreSQL's `COLLATE "C"` so ids break ties in SQLite's byte order
//! whatever the database's collation), a statement is spelled once each.

use super::{ListFilter, Question, ReplyRecord};
use crate::store::engine::Stmt;
use crate::store::{Error, Result, Store};

/// Read one question (inside a write: to explain a refusal).
pub(super) fn get(id: &str) -> Stmt<'_> {
    Stmt::new("SELECT * FROM questions WHERE id = $1").text(id)
}

/// Read one question inside a write and, on PostgreSQL, lock its row
/// until the write ends, so nothing changes it between this read and
/// what follows (SQLite's write turn, once begun, lets nobody else write).
pub(super) fn lock(id: &str) -> Stmt<'_> {
    Stmt::spelled(
        "SELECT * FROM questions WHERE id = $1",
        "SELECT * FROM questions WHERE id = $1 FOR UPDATE",
    )
    .text(id)
}

impl Store {
    /// One question by its full id.
    pub async fn get_question(&self, id: &str) -> Result<Option<Question>> {
        self.row(get(id)).await
    }

    /// The full id for `id_or_short`: the exact id, else the one id ending
    /// with it (the short id shown in chat and the CLI is the last 8
    /// characters). `None` when nothing matches; an ambiguous suffix is an
    /// [`Error::Invalid`] asking for more characters.
    pub async fn resolve_question_id(&self, id_or_short: &str) -> Result<Option<String>> {
        let s = id_or_short.trim().to_ascii_lowercase();
        if s.is_empty() {
            return Err(Error::Invalid("the question id is empty".into()));
        }
        let like = Stmt::spelled(
            "SELECT id FROM questions WHERE id = $1
             UNION
             SELECT id FROM questions WHERE length($1) >= 4 AND substr(id, -length($1)) = $1
             LIMIT 3",
            "SELECT id FROM questions WHERE id = $1
             UNION
             SELECT id FROM questions WHERE length($1) >= 4 AND right(id, length($1)) = $1
             LIMIT 3",
        )
        .text(s.as_str());
        let ids: Vec<String> = self
            .rows::<(String,)>(like)
            .await?
            .into_iter()
            .map(|(id,)| id)
            .collect();
        if ids.contains(&s) {
            return Ok(Some(s));
        }
        match ids.len() {
            0 => Ok(None),
            1 => Ok(ids.into_iter().next()),
            _ => Err(Error::Invalid(format!(
                "`{id_or_short}` matches several questions: give more characters of the id"
            ))),
        }
    }

    /// Questions matching `filter`, oldest first.
    pub async fn list_questions(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        // A negative limit, or none, is no limit: SQLite reads -1 so,
        // PostgreSQL a NULL.
        let list = Stmt::spelled(
            "SELECT * FROM questions
             WHERE ($1 IS NULL OR status = $1)
               AND ($2 IS NULL OR project = $2)
               AND ($3 IS NULL OR session = $3)
               AND (NOT $4 OR snoozed_until IS NULL OR snoozed_until <= $5)
             ORDER BY created_at, id
             LIMIT COALESCE($6, -1)",
            "SELECT * FROM questions
             WHERE ($1::TEXT IS NULL OR status = $1)
               AND ($2::TEXT IS NULL OR project = $2)
               AND ($3::TEXT IS NULL OR session = $3)
               AND (NOT $4 OR snoozed_until IS NULL OR snoozed_until <= $5)
             ORDER BY created_at, id COLLATE \"C\"
             LIMIT $6",
        )
        .text(filter.status.map(|s| s.as_str()))
        .text(filter.project.as_deref())
        .text(filter.session.as_deref())
        .bool(filter.awake_only)
        .int(self.now())
        .int(filter.limit.filter(|n| *n >= 0));
        self.rows(list).await
    }

    /// The append-only reply history of one question, oldest first.
    pub async fn question_replies(&self, id: &str) -> Result<Vec<ReplyRecord>> {
        let history =
            Stmt::new("SELECT * FROM question_replies WHERE question_id = $1 ORDER BY seq")
                .text(id);
        self.rows(history).await
    }
}
