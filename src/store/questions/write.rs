//! The question's own lifecycle: flag (create or update in place), resolve,
//! dismiss, snooze. Replies live in `reply.rs`.
//!
//! Each write is one statement on both engines, written once: its event
//! (and any history row) is appended by the table's triggers from the
//! statement's `t_*` columns. What differs per engine is only how a JSON
//! payload is spelled: SQLite's `json_object(…)`, and on PostgreSQL
//! `handoff_json_set(json_build_object(…)::text, '{}', '{}')`, which writes
//! the same members in the same order, compact, so an event's payload text
//! is the same on both.

use std::sync::Arc;

use serde_json::json;

use super::read::get;
use super::{Channel, Choice, Flagged, NewQuestion, Outcome, Question, Refusal, Status, validate};
use crate::store::engine::{Stmt, Tx};
use crate::store::{Result, Store, new_id};

/// Why a guarded `… WHERE id = $N AND status = 'open'` write was refused,
/// from the row as read after it (`None`: no such question).
pub(super) fn explain_closed(q: Option<&Question>) -> Refusal {
    match q {
        None => Refusal::NotFound,
        Some(q) => Refusal::NotOpen { status: q.status },
    }
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
        let options = serde_json::to_string(&q.options)
            .map_err(|e| crate::store::Error::Invalid(format!("options: {e}")))?;
        let input = Arc::new((q, options));
        let flagged = self
            .write_with(input, move |mut tx, input, now| {
                Box::pin(async move {
                    let (q, options) = &*input;
                    flag_in(&mut tx, q, options, choice, now).await
                })
            })
            .await?;
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
        let set = Set::Close {
            status: to,
            outcome: outcome.map(str::to_string),
        };
        self.change_open(Change::new(id, kind, by, channel, payload, set))
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
        let until = (until > self.now()).then_some(until);
        let payload = json!({ "until": until.map(crate::clock::format_rfc3339) });
        let set = Set::Snooze { until };
        self.change_open(Change::new(id, "question.snoozed", by, via, payload, set))
            .await
    }

    /// Apply `c` to the open question `c.id`: one guarded UPDATE whose
    /// trigger appends its event. Refused, the question is missing or
    /// closed, and stays so (nothing reopens): the row read after says which.
    async fn change_open(&self, c: Change) -> Result<Outcome<Question>> {
        self.write_with(Arc::new(c), |mut tx, c, now| {
            Box::pin(async move {
                match tx.row(&c.stmt(now)).await? {
                    Some(q) => Ok(Ok(q)),
                    None => Ok(Err(explain_closed(tx.row(&get(&c.id)).await?.as_ref()))),
                }
            })
        })
        .await
    }
}

/// Flag (or update by key) one question: one upsert whose trigger appends
/// `question.flagged` (a new row) or `question.updated` (bumped in place).
async fn flag_in(
    tx: &mut Tx<'_>,
    q: &NewQuestion,
    options: &str,
    choice: Choice,
    now: i64,
) -> Result<Flagged> {
    let id = new_id();
    // Why one upsert: the partial unique index on (project, key) over
    // open questions decides "create or update" inside the engine, so
    // two agents flagging the same key at once can never make twins (on
    // PostgreSQL the second waits for the first's insert, then updates it).
    let upsert = Stmt::spelled(
        "INSERT INTO questions
             (id, project, agent, session, key, title, detail, context, options, choice,
              created_at, updated_at, t_at, t_event, t_actor, t_channel, t_payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11,
                 $11, 'question.flagged', $3, 'agent', json_object('key', $5, 'revision', 1, 'title', $6))
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
        "INSERT INTO questions
             (id, project, agent, session, key, title, detail, context, options, choice,
              created_at, updated_at, t_at, t_event, t_actor, t_channel, t_payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11,
                 $11, 'question.flagged', $3, 'agent',
                 handoff_json_set(json_build_object('key', $5, 'revision', 1, 'title', $6)::text,
                                  '{}', '{}'))
         ON CONFLICT (project, key) WHERE key IS NOT NULL AND status = 'open'
         DO UPDATE SET agent = excluded.agent, session = excluded.session,
             title = excluded.title, detail = excluded.detail,
             context = excluded.context, options = excluded.options,
             choice = excluded.choice, picked = 0,
             revision = questions.revision + 1, snoozed_until = NULL,
             updated_at = excluded.updated_at,
             t_seq = questions.t_seq + 1, t_at = excluded.updated_at,
             t_event = 'question.updated', t_history = NULL, t_actor = excluded.agent,
             t_channel = 'agent',
             t_payload = handoff_json_set(json_build_object(
                 'key', questions.key, 'revision', questions.revision + 1,
                 'title', excluded.title)::text, '{}', '{}')
         RETURNING *",
    )
    .text(id.as_str())
    .text(q.project.as_str())
    .text(q.agent.as_str())
    .text(q.session.as_str())
    .text(q.key.as_deref())
    .text(q.title.as_str())
    .text(q.detail.as_str())
    .text(q.context.as_str())
    .text(options)
    .text(choice.as_str())
    .int(now);
    let question: Question = tx.row(&upsert).await?.ok_or(sqlx::Error::RowNotFound)?;
    Ok(Flagged {
        created: question.id == id,
        question,
    })
}

/// What a [`Change`] sets on the open question.
enum Set {
    /// Close it as `status` (resolved or dismissed) with an outcome.
    Close {
        status: Status,
        outcome: Option<String>,
    },
    /// Hide it until then (`None`: wake it).
    Snooze { until: Option<i64> },
}

/// One change to an open question that logs an event and no history row.
struct Change {
    id: String,
    kind: &'static str,
    by: String,
    channel: Channel,
    /// The event payload (JSON).
    payload: String,
    set: Set,
}

impl Change {
    fn new(
        id: &str,
        kind: &'static str,
        by: &str,
        channel: Channel,
        payload: serde_json::Value,
        set: Set,
    ) -> Change {
        Change {
            id: id.to_string(),
            kind,
            by: by.to_string(),
            channel,
            payload: payload.to_string(),
            set,
        }
    }

    /// The guarded UPDATE at `now`: `$1` now, `$2` id, `$3`–`$6` the
    /// event's type, actor, channel and payload, `$7` on what it sets.
    /// Why guarded on status: nothing reopens, and of two closers racing
    /// (the agent resolving, a human dismissing) exactly one wins;
    /// snoozing a closed question would be a silent no-op the human never
    /// learns about.
    fn stmt(&self, now: i64) -> Stmt<'_> {
        let s = match self.set {
            Set::Close { .. } => Stmt::new(
                "UPDATE questions SET status = $7, outcome = $8, resolved_at = $1, updated_at = $1,
                     t_seq = t_seq + 1, t_at = $1, t_event = $3, t_history = NULL,
                     t_actor = $4, t_channel = $5, t_payload = $6
                 WHERE id = $2 AND status = 'open' RETURNING *",
            ),
            Set::Snooze { .. } => Stmt::new(
                "UPDATE questions SET snoozed_until = $7, updated_at = $1,
                     t_seq = t_seq + 1, t_at = $1, t_event = $3, t_history = NULL,
                     t_actor = $4, t_channel = $5, t_payload = $6
                 WHERE id = $2 AND status = 'open' RETURNING *",
            ),
        };
        let s = s
            .int(now)
            .text(self.id.as_str())
            .text(self.kind)
            .text(self.by.as_str())
            .text(self.channel.as_str())
            .text(self.payload.as_str());
        match &self.set {
            Set::Close { status, outcome } => s.text(status.as_str()).text(outcome.as_deref()),
            Set::Snooze { until } => s.int(*until),
        }
    }
}
