//! Reading questions: one by id, short-id lookup, lists, reply history.
//!
//! Reads never decide a write; they only show state and explain refusals.

use sqlx::SqliteConnection;

use super::{ListFilter, Question, ReplyRecord, from_row, record_from_row};
use crate::store::postgres::questions as pg;
use crate::store::{Engine, Error, Result, Store};

/// Read one question on `conn` (inside a transaction, to explain a refusal
/// from the same snapshot that refused).
pub(super) async fn get_on(conn: &mut SqliteConnection, id: &str) -> Result<Option<Question>> {
    let row = sqlx::query("SELECT * FROM questions WHERE id = ?")
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

impl Store {
    /// One question by its full id.
    pub async fn get_question(&self, id: &str) -> Result<Option<Question>> {
        if let Engine::Postgres(p) = self.engine() {
            return pg::get(p, id).await;
        }
        let mut conn = self.pool()?.acquire().await?;
        get_on(&mut conn, id).await
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
        let ids: Vec<String> = match self.engine() {
            Engine::Postgres(p) => pg::ids_like(p, &s).await?,
            Engine::Sqlite(_) => {
                sqlx::query_scalar(
                    "SELECT id FROM questions WHERE id = ?1
             UNION
             SELECT id FROM questions WHERE length(?1) >= 4 AND substr(id, -length(?1)) = ?1
             LIMIT 3",
                )
                .bind(&s)
                .fetch_all(self.pool()?)
                .await?
            }
        };
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
        if let Engine::Postgres(p) = self.engine() {
            return pg::list(p, filter, self.now()).await;
        }
        let rows = sqlx::query(
            "SELECT * FROM questions
             WHERE (?1 IS NULL OR status = ?1)
               AND (?2 IS NULL OR project = ?2)
               AND (?3 IS NULL OR session = ?3)
               AND (NOT ?4 OR snoozed_until IS NULL OR snoozed_until <= ?5)
             ORDER BY created_at, id
             LIMIT ?6",
        )
        .bind(filter.status.map(|s| s.as_str()))
        .bind(filter.project.as_deref())
        .bind(filter.session.as_deref())
        .bind(filter.awake_only)
        .bind(self.now())
        .bind(filter.limit.unwrap_or(-1))
        .fetch_all(self.pool()?)
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// The append-only reply history of one question, oldest first.
    pub async fn question_replies(&self, id: &str) -> Result<Vec<ReplyRecord>> {
        if let Engine::Postgres(p) = self.engine() {
            return pg::replies(p, id).await;
        }
        let rows = sqlx::query("SELECT * FROM question_replies WHERE question_id = ? ORDER BY seq")
            .bind(id)
            .fetch_all(self.pool()?)
            .await?;
        rows.iter().map(record_from_row).collect()
    }
}
