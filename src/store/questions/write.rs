//! The question's own lifecycle: flag (create or update in place), resolve,
//! dismiss, snooze. Replies live in `reply.rs`.

use std::sync::Arc;

use serde_json::json;
use sqlx::SqliteConnection;

use super::read::get_on;
use super::{
    Channel, Choice, Flagged, NewQuestion, Outcome, Question, Refusal, Status, from_row, validate,
};
use crate::store::postgres::questions as pg;
use crate::store::writer::Turn;
use crate::store::{Engine, Result, Store, new_id};

/// Explain why a guarded `… WHERE id = ? AND status = 'open'` changed
/// nothing: the question is missing or closed. Read on the refusing
/// transaction, so the explanation matches what refused.
pub(super) async fn explain_closed(conn: &mut SqliteConnection, id: &str) -> Result<Refusal> {
    Ok(match get_on(conn, id).await? {
        None => Refusal::NotFound,
        Some(q) => Refusal::NotOpen { status: q.status },
    })
}

impl Store {
    /// Flag a question. With a `key`, an open question with the same
    /// `(project, key)` is updated in place (title, detail, context,
    /// options, agent, session) and its `revision` bumped; it never gets a
    /// twin. Re-flagging also wakes a snoozed question: its content changed.
    pub async fn flag(&self, q: &NewQuestion) -> Result<Flagged> {
        self.flag_card(q, Choice::Plain).await
    }

    /// Flag a question drawn as `choice` (an agent's own multiple-choice
    /// prompt; [`Store::flag`] is `Choice::Plain`). A card needs options.
    pub async fn flag_card(&self, q: &NewQuestion, choice: Choice) -> Result<Flagged> {
        let mut q = validate::question(q)?;
        if !choice.is_plain() && q.options.is_empty() {
            return Err(crate::store::Error::Invalid(
                "a single or multiple choice needs options to choose from".into(),
            ));
        }
        // Filed in its session's project (see `sessions/home.rs`).
        q.project = self.session_home(&q.session, &q.project).await?;
        let q = Arc::new(q);
        let options = Arc::new(
            serde_json::to_string(&q.options)
                .map_err(|e| crate::store::Error::Invalid(format!("options: {e}")))?,
        );
        let clock = self.clock().clone();
        let flagged = match self.engine() {
            Engine::Sqlite(_) => {
                self.retry(|| {
                    let (q, options, clock) = (q.clone(), options.clone(), clock.clone());
                    self.write(move |turn| {
                        Box::pin(async move {
                            flag_in(turn, &q, &options, choice, clock.now_ms()).await
                        })
                    })
                })
                .await?
            }
            Engine::Postgres(p) => pg::flag(self, p, q, options, choice).await?,
        };
        let question = &flagged.question;
        tracing::info!(question_id = %question.id, created = flagged.created, revision = question.revision, "question flagged");
        Ok(flagged)
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
        self.close_question(id, Status::Resolved, Some(&outcome), by, Channel::Agent)
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
        self.close_question(id, Status::Dismissed, reason, by, via)
            .await
    }

    async fn close_question(
        &self,
        id: &str,
        to: Status,
        outcome: Option<&str>,
        by: &str,
        channel: Channel,
    ) -> Result<Outcome<Question>> {
        let (kind, payload) = match to {
            Status::Resolved => ("question.resolved", json!({ "outcome": outcome })),
            _ => ("question.dismissed", json!({ "reason": outcome })),
        };
        if let Engine::Postgres(p) = self.engine() {
            let set = pg::Set::Close {
                status: to,
                outcome: outcome.map(str::to_string),
            };
            return pg::change(self, p, pg_change(id, kind, by, channel, payload, set)).await;
        }
        let c = Arc::new(Change {
            id: id.to_string(),
            kind,
            by: by.to_string(),
            channel,
            payload: payload.to_string(),
        });
        let (to, outcome) = (to.as_str(), outcome.map(str::to_string));
        let clock = self.clock().clone();
        self.retry(|| {
            let (c, outcome, clock) = (c.clone(), outcome.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move {
                    // Why guarded on status: nothing reopens, and of two
                    // closers racing (the agent resolving, a human
                    // dismissing) exactly one wins.
                    let set = "status = ?7, outcome = ?8, resolved_at = ?1";
                    change_in(turn, &c, clock.now_ms(), set, (to, outcome)).await
                })
            })
        })
        .await
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
        self.snooze(id, until, by, via).await
    }

    async fn snooze(
        &self,
        id: &str,
        until: i64,
        by: &str,
        via: Channel,
    ) -> Result<Outcome<Question>> {
        let until = (until > self.now()).then_some(until);
        let payload = json!({ "until": until.map(crate::clock::format_rfc3339) });
        if let Engine::Postgres(p) = self.engine() {
            let set = pg::Set::Snooze { until };
            return pg::change(
                self,
                p,
                pg_change(id, "question.snoozed", by, via, payload, set),
            )
            .await;
        }
        let c = Arc::new(Change {
            id: id.to_string(),
            kind: "question.snoozed",
            by: by.to_string(),
            channel: via,
            payload: payload.to_string(),
        });
        let clock = self.clock().clone();
        self.retry(|| {
            let (c, clock) = (c.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move {
                    // Why guarded on status: snoozing a closed question
                    // would be a silent no-op the human never learns about.
                    let set = "snoozed_until = ?7";
                    change_in(turn, &c, clock.now_ms(), set, (until, None::<String>)).await
                })
            })
        })
        .await
    }
}

/// A change to an open question, for PostgreSQL.
fn pg_change(
    id: &str,
    kind: &'static str,
    by: &str,
    channel: Channel,
    payload: serde_json::Value,
    set: pg::Set,
) -> pg::Change {
    pg::Change {
        id: id.to_string(),
        kind,
        by: by.to_string(),
        channel,
        payload: payload.to_string(),
        set,
    }
}

/// Flag (or update by key) one question: one upsert whose trigger appends
/// `question.flagged` (a new row) or `question.updated` (bumped in place).
async fn flag_in(
    turn: &mut Turn,
    q: &NewQuestion,
    options: &str,
    choice: Choice,
    now: i64,
) -> Result<Flagged> {
    let id = new_id();
    // Why one upsert: the partial unique index on (project, key) over
    // open questions decides "create or update" inside the engine, so
    // two agents flagging the same key at once can never make twins.
    let row = sqlx::query(
        "INSERT INTO questions
             (id, project, agent, session, key, title, detail, context, options, choice,
              created_at, updated_at, t_at, t_event, t_actor, t_channel, t_payload)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?11, ?10, ?10,
                 ?10, 'question.flagged', ?3, 'agent', json_object('key', ?5, 'revision', 1, 'title', ?6))
         ON CONFLICT (project, key) WHERE key IS NOT NULL AND status = 'open'
         DO UPDATE SET agent = excluded.agent, session = excluded.session,
             title = excluded.title, detail = excluded.detail,
             context = excluded.context, options = excluded.options,
             choice = excluded.choice, picked = 0,
             revision = revision + 1, snoozed_until = NULL,
             updated_at = excluded.updated_at,
             t_seq = t_seq + 1, t_at = excluded.updated_at, t_event = 'question.updated',
             t_history = NULL, t_actor = excluded.agent, t_channel = 'agent',
             t_payload = json_object('key', key, 'revision', revision + 1, 'title', excluded.title)
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
    .bind(options)
    .bind(now)
    .bind(choice.as_str())
    .fetch_one(turn.conn())
    .await?;
    let question = from_row(&row)?;
    Ok(Flagged {
        created: question.id == id,
        question,
    })
}

/// One change to an open question that logs an event and no history row.
struct Change {
    id: String,
    kind: &'static str,
    by: String,
    channel: Channel,
    /// The event payload (JSON).
    payload: String,
}

/// Apply `set` (assignments reading `?7` and `?8` from `values`) to the
/// open question `c.id`: one guarded UPDATE whose trigger appends its event.
async fn change_in<A, B>(
    turn: &mut Turn,
    c: &Change,
    now: i64,
    set: &str,
    values: (A, B),
) -> Result<Outcome<Question>>
where
    A: for<'q> sqlx::Encode<'q, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send,
    B: for<'q> sqlx::Encode<'q, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send,
{
    let sql = format!(
        "UPDATE questions SET {set}, updated_at = ?1,
             t_seq = t_seq + 1, t_at = ?1, t_event = ?3, t_history = NULL,
             t_actor = ?4, t_channel = ?5, t_payload = ?6
         WHERE id = ?2 AND status = 'open' RETURNING *"
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .bind(&c.id)
        .bind(c.kind)
        .bind(&c.by)
        .bind(c.channel.as_str())
        .bind(&c.payload)
        .bind(values.0)
        .bind(values.1)
        .fetch_optional(turn.conn())
        .await?;
    match row {
        Some(row) => Ok(Ok(from_row(&row)?)),
        None => Ok(Err(explain_closed(turn.conn(), &c.id).await?)),
    }
}
