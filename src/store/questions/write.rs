//! The question's own lifecycle: flag (create or update in place), resolve,
//! dismiss, snooze. Replies live in `reply.rs`.

use serde_json::json;
use sqlx::SqliteConnection;

use super::read::get_on;
use super::{
    Channel, Flagged, NewQuestion, Outcome, Question, Refusal, Status, from_row, validate,
};
use crate::store::events::{self, NewEvent};
use crate::store::{Result, Store, new_id};

/// Explain why a guarded `… WHERE id = ? AND status = 'open'` changed
/// nothing: the question is missing or closed. Read on the refusing
/// transaction, so the explanation matches what refused.
pub(super) async fn explain_closed(conn: &mut SqliteConnection, id: &str) -> Result<Refusal> {
    Ok(match get_on(conn, id).await? {
        None => Refusal::NotFound,
        Some(q) => Refusal::NotOpen { status: q.status },
    })
}

/// Append a `question.*` event for `q` on the open transaction `conn`.
pub(super) async fn event(
    conn: &mut SqliteConnection,
    at: i64,
    kind: &str,
    q: &Question,
    actor: &str,
    channel: Channel,
    payload: serde_json::Value,
) -> Result<i64> {
    events::append(
        conn,
        at,
        &NewEvent {
            kind,
            entity_kind: "question",
            entity_id: &q.id,
            actor,
            channel,
            project: &q.project,
            session: &q.session,
            payload,
        },
    )
    .await
}

impl Store {
    /// Flag a question. With a `key`, an open question with the same
    /// `(project, key)` is updated in place (title, detail, context,
    /// options, agent, session) and its `revision` bumped; it never gets a
    /// twin. Re-flagging also wakes a snoozed question: its content changed.
    pub async fn flag(&self, q: &NewQuestion) -> Result<Flagged> {
        let q = validate::question(q)?;
        self.retry(|| self.flag_once(&q)).await
    }

    async fn flag_once(&self, q: &NewQuestion) -> Result<Flagged> {
        let now = self.now();
        let id = new_id();
        let options = serde_json::to_string(&q.options)
            .map_err(|e| crate::store::Error::Invalid(format!("options: {e}")))?;
        let mut tx = self.begin_write().await?;
        // Why one upsert: the partial unique index on (project, key) over
        // open questions decides "create or update" inside the engine, so
        // two agents flagging the same key at once can never make twins.
        let row = sqlx::query(
            "INSERT INTO questions
                 (id, project, agent, session, key, title, detail, context, options, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
             ON CONFLICT (project, key) WHERE key IS NOT NULL AND status = 'open'
             DO UPDATE SET agent = excluded.agent, session = excluded.session,
                 title = excluded.title, detail = excluded.detail,
                 context = excluded.context, options = excluded.options,
                 revision = revision + 1, snoozed_until = NULL,
                 updated_at = excluded.updated_at
             RETURNING *",
        )
        .bind(&id)
        .bind(&q.project)
        .bind(&q.agent)
        .bind(&q.session)
        .bind(q.key.as_deref())
        .bind(&q.title)
        .bind(&q.detail)
        .bind(&q.context)
        .bind(&options)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        let question = from_row(&row)?;
        let created = question.id == id;
        let kind = if created {
            "question.flagged"
        } else {
            "question.updated"
        };
        let payload = json!({
            "title": question.title,
            "key": question.key,
            "revision": question.revision,
        });
        event(
            &mut tx,
            now,
            kind,
            &question,
            &q.agent,
            Channel::Agent,
            payload,
        )
        .await?;
        tx.commit().await?;
        tracing::info!(question_id = %question.id, created, revision = question.revision, "question flagged");
        Ok(Flagged { created, question })
    }

    /// The agent closes an open question with an `outcome` (required).
    /// Replies stay on the row and in the history.
    pub async fn resolve_question(
        &self,
        id: &str,
        outcome: &str,
        by: &str,
    ) -> Result<Outcome<Question>> {
        let outcome = validate::outcome(outcome)?;
        self.retry(|| self.close_once(id, Status::Resolved, Some(&outcome), by, Channel::Agent))
            .await
    }

    /// A human closes an open question without answering it, through `via`
    /// (Inbox or chat), optionally saying why.
    pub async fn dismiss_question(
        &self,
        id: &str,
        reason: Option<&str>,
        by: &str,
        via: Channel,
    ) -> Result<Outcome<Question>> {
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        self.retry(|| self.close_once(id, Status::Dismissed, reason, by, via))
            .await
    }

    async fn close_once(
        &self,
        id: &str,
        to: Status,
        outcome: Option<&str>,
        by: &str,
        channel: Channel,
    ) -> Result<Outcome<Question>> {
        let now = self.now();
        let mut tx = self.begin_write().await?;
        // Why guarded on status: nothing reopens, and of two closers racing
        // (the agent resolving, a human dismissing) exactly one wins.
        let row = sqlx::query(
            "UPDATE questions SET status = ?1, outcome = ?2, resolved_at = ?3, updated_at = ?3
             WHERE id = ?4 AND status = 'open' RETURNING *",
        )
        .bind(to.as_str())
        .bind(outcome)
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(Err(explain_closed(&mut tx, id).await?));
        };
        let q = from_row(&row)?;
        let (kind, payload) = match to {
            Status::Resolved => ("question.resolved", json!({ "outcome": outcome })),
            _ => ("question.dismissed", json!({ "reason": outcome })),
        };
        event(&mut tx, now, kind, &q, by, channel, payload).await?;
        tx.commit().await?;
        Ok(Ok(q))
    }

    /// Hide an open question from the chat-facing list until `until` (ms).
    /// A time not in the future wakes it again.
    pub async fn snooze_question(
        &self,
        id: &str,
        until: i64,
        by: &str,
        via: Channel,
    ) -> Result<Outcome<Question>> {
        self.retry(|| self.snooze_once(id, until, by, via)).await
    }

    async fn snooze_once(
        &self,
        id: &str,
        until: i64,
        by: &str,
        via: Channel,
    ) -> Result<Outcome<Question>> {
        let now = self.now();
        let until = (until > now).then_some(until);
        let mut tx = self.begin_write().await?;
        // Why guarded on status: snoozing a closed question would be a
        // silent no-op the human never learns about.
        let row = sqlx::query(
            "UPDATE questions SET snoozed_until = ?1, updated_at = ?2
             WHERE id = ?3 AND status = 'open' RETURNING *",
        )
        .bind(until)
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(Err(explain_closed(&mut tx, id).await?));
        };
        let q = from_row(&row)?;
        let payload = json!({ "until": until.map(crate::clock::format_rfc3339) });
        event(&mut tx, now, "question.snoozed", &q, by, via, payload).await?;
        tx.commit().await?;
        Ok(Ok(q))
    }
}
