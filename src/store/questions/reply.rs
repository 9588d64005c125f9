//! The three writers of a reply and the agent's pickup.
//!
//! - Inbox: unconditional while open; overwrites and sets `reply_seen_at`
//!   NULL. A blank Inbox reply clears only a reply nobody picked up. A
//!   card (an agent's own multiple-choice prompt) takes one answer only.
//! - Chat: one conditional UPDATE, allowed only while no unclaimed reply
//!   waits; a `clarify` may also replace an unclaimed *chat* reply.
//! - Agent: the same conditional UPDATE, born seen; if refused, the agent is
//!   handed the unread answer (and that exact reply is marked picked up).
//! - Pickup marks `reply_seen_at` only for the exact reply read, named by
//!   `reply_seq` (two replies in one millisecond share `replied_at`).
//! - A refused write runs its guarded statement once more after
//!   [`Turn::begin`] before it explains itself. Why: alone, the refused
//!   statement was its own transaction, so another process (another
//!   store's pool) may have changed the row before the explanation read it
//!   — an unread reply picked up, and a chat reply then told it was
//!   "empty". Under `BEGIN IMMEDIATE` nobody else writes: the second try
//!   wins, or it is refused by exactly the state the explanation reads.
//!   Only a refused write pays for it; a winning one is one statement.

use std::sync::Arc;

use sqlx::SqliteConnection;

use super::read::get_on;
use super::write::explain_closed;
use super::{
    Channel, Delivery, NewReply, Outcome, Question, Refusal, ReplyKind, Status, from_row, validate,
};
use crate::store::binds::{Query, binder};
use crate::store::postgres::replies as pg;
use crate::store::writer::Turn;
use crate::store::{Engine, Result, Store};

/// The `question.answered` event and its history row, named in the
/// reply UPDATE's `t_*` columns for the trigger: `?1` text, `?2` context,
/// `?3` kind, `?4` source, `?5` by, `?6` now and `?11` the actor (`?7` to
/// `?10` are each writer's own).
const ANSWERED: &str = "t_seq = t_seq + 1, t_at = ?6, t_event = 'question.answered',
     t_history = 'reply', t_by = ?5, t_actor = ?11, t_channel = ?4,
     t_payload = json_object('by', ?5, 'context', ?2, 'kind', ?3, 'reply_seq', reply_seq + 1,
                             'revision', revision, 'source', ?4, 'text', ?1)";

/// Who a reply's event names: the person, else the door.
pub(crate) fn actor_of(r: &NewReply, channel: Channel) -> &str {
    if r.by.is_empty() {
        channel.as_str()
    } else {
        &r.by
    }
}

/// One reply to write, owned for the write queue (SQLite) or the
/// retries (PostgreSQL).
#[derive(Debug)]
pub(crate) struct Submitted {
    pub(crate) id: String,
    pub(crate) r: NewReply,
    pub(crate) source: Channel,
}

impl Submitted {
    binder! {
        /// Bind a chat or agent reply's guarded UPDATE, the same numbering on
        /// both engines: `1` text, `2` context, `3` kind, `4` source, `5` by,
        /// `6` now, `7` born seen (the agent's own), `8` id, `9` the expected
        /// revision, `10` a chat clarify, `11` the actor.
        pub(crate) fn bind_conditional<'q, DB>(
            &self,
            query: Query<'q, DB>,
            now: i64,
        ) -> Query<'q, DB> {
            let (r, source) = (&self.r, self.source);
            let born_seen = source == Channel::Agent;
            let clarify_chat = source == Channel::Chat && r.kind == ReplyKind::Clarify;
            query
                .bind(r.text.trim())
                .bind(r.context.as_deref())
                .bind(r.kind.as_str())
                .bind(source.as_str())
                .bind(r.by.as_str())
                .bind(now)
                .bind(born_seen)
                .bind(self.id.as_str())
                .bind(r.expected_revision)
                .bind(clarify_chat)
                .bind(actor_of(r, source))
        }
    }

    binder! {
        /// Bind a blank Inbox reply's guarded clear, the same numbering on
        /// both engines: `1` now, `2` id, `3` the expected revision, `4` by,
        /// `5` the actor.
        pub(crate) fn bind_clear<'q, DB>(
            &self,
            query: Query<'q, DB>,
            now: i64,
        ) -> Query<'q, DB> {
            let r = &self.r;
            query
                .bind(now)
                .bind(self.id.as_str())
                .bind(r.expected_revision)
                .bind(r.by.as_str())
                .bind(actor_of(r, Channel::Inbox))
        }
    }
}

binder! {
    /// Bind the pickup mark of reply `reply_seq` of question `id` by `by`, the
    /// same numbering on both engines: `1` now, `2` id, `3` the reply's
    /// number, `4` by, `5` the actor.
    pub(crate) fn bind_mark<'q, DB>(
        query: Query<'q, DB>,
        now: i64,
        id: &str,
        reply_seq: i64,
        by: &str,
    ) -> Query<'q, DB> {
        query
            .bind(now)
            .bind(id)
            .bind(reply_seq)
            .bind(by)
            .bind(if by.is_empty() { "agent" } else { by })
    }
}

/// Why a reply to the open question `q` was refused: stale, or an
/// unclaimed reply in the way (`Empty` if neither: the caller refines it).
pub(crate) fn explain_open(q: &Question, expected_revision: Option<i64>) -> Refusal {
    if let Some(rev) = expected_revision
        && rev != q.revision
    {
        return Refusal::Stale {
            current_revision: q.revision,
        };
    }
    match &q.reply {
        Some(r) if r.seen_at.is_none() => Refusal::UnreadAnswer {
            reply: r.text.clone(),
            kind: r.kind,
            source: r.source,
            by: r.by.clone(),
        },
        _ => Refusal::Empty,
    }
}

/// A write that found nothing to clear or was refused by a card's answer:
/// the agent already has the standing reply of `q`, or there is none.
pub(crate) fn picked_up_or_empty(q: Option<&Question>) -> Refusal {
    match q.and_then(|q| q.reply.as_ref()) {
        Some(reply) => Refusal::AlreadyPickedUp {
            reply: reply.text.clone(),
        },
        None => Refusal::Empty,
    }
}

/// A blank reply is allowed only as a decline without a reason.
fn is_blank(r: &NewReply) -> bool {
    r.text.trim().is_empty() && r.kind != ReplyKind::Decline
}

impl Store {
    /// A human replies through the Inbox (or `handoff reply`). Always wins
    /// while the question is open: overwrites any reply and makes it unseen.
    /// A blank text clears a reply nobody has picked up yet; it is refused
    /// as [`Refusal::AlreadyPickedUp`] after pickup, and as
    /// [`Refusal::Empty`] when there is nothing to clear. A card already
    /// answered is refused ([`Refusal::UnreadAnswer`], or
    /// [`Refusal::AlreadyPickedUp`] once its hook has the answer).
    pub async fn reply_inbox(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        validate::reply(r)?;
        let blank = is_blank(r);
        if let Engine::Postgres(p) = self.engine() {
            return pg::inbox(self, p, id, r, blank).await;
        }
        let one = Arc::new(Submitted {
            id: id.to_string(),
            r: r.clone(),
            source: Channel::Inbox,
        });
        let clock = self.clock().clone();
        self.retry(|| {
            let (one, clock) = (one.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move {
                    let now = clock.now_ms();
                    if blank {
                        clear_in(turn, &one, now).await
                    } else {
                        reply_inbox_in(turn, &one, now).await
                    }
                })
            })
        })
        .await
    }

    /// A human replies from a chat. Allowed only while no unclaimed reply
    /// waits; an unclaimed Inbox (or agent-visible) reply wins and comes
    /// back as [`Refusal::UnreadAnswer`]. A `clarify` may also replace an
    /// unclaimed *chat* reply, never an unclaimed Inbox one.
    pub async fn reply_chat(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        validate::reply(r)?;
        if is_blank(r) {
            return Ok(Err(Refusal::Empty));
        }
        self.conditional(id, r, Channel::Chat).await
    }

    /// The agent records an answer the human gave in its own terminal.
    /// Same condition as a chat reply, but born seen. If an unread reply
    /// stands, it is refused as [`Refusal::UnreadAnswer`] carrying that
    /// reply, which is thereby delivered (marked picked up).
    pub async fn answer_agent(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        validate::reply(r)?;
        if is_blank(r) {
            return Ok(Err(Refusal::Empty));
        }
        self.conditional(id, r, Channel::Agent).await
    }

    async fn conditional(
        &self,
        id: &str,
        r: &NewReply,
        source: Channel,
    ) -> Result<Outcome<Question>> {
        if let Engine::Postgres(p) = self.engine() {
            return pg::conditional(self, p, id, r, source).await;
        }
        let one = Arc::new(Submitted {
            id: id.to_string(),
            r: r.clone(),
            source,
        });
        let clock = self.clock().clone();
        self.retry(|| {
            let (one, clock) = (one.clone(), clock.clone());
            self.write(move |turn| Box::pin(conditional_in(turn, one, clock.now_ms())))
        })
        .await
    }

    /// Open questions in scope with an unseen reply (and, with
    /// `include_seen`, with a delivered one), as read now — the
    /// first half of [`pending`](Store::pending). Exposed so tests (and
    /// careful callers) can interleave between the read and the mark.
    pub async fn read_pending(
        &self,
        project: Option<&str>,
        session: Option<&str>,
        include_seen: bool,
    ) -> Result<Vec<Question>> {
        if let Engine::Postgres(p) = self.engine() {
            return pg::read_pending(p, project, session, include_seen).await;
        }
        // Two spellings so SQLite can use the `questions_pending` index on
        // the session when one is given (an `?2 IS NULL OR …` filter can't).
        let rows = match session {
            Some(session) => {
                sqlx::query(
                    "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL AND session = ?2
                   AND (?1 IS NULL OR project = ?1) AND (?3 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id",
                )
                .bind(project)
                .bind(session)
                .bind(include_seen)
                .fetch_all(self.pool()?)
                .await?
            }
            None => {
                sqlx::query(
                    "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL
                   AND (?1 IS NULL OR project = ?1) AND (?2 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id",
                )
                .bind(project)
                .bind(include_seen)
                .fetch_all(self.pool()?)
                .await?
            }
        };
        rows.iter().map(from_row).collect()
    }

    /// Mark the exact reply `q` carries (its `reply_seq`) as picked up by
    /// `by`, returning the time of the mark. `None` when the reply changed
    /// since `q` was read (the newer one stays queued), was already marked,
    /// or the question closed.
    pub async fn mark_reply_seen(&self, q: &Question, by: &str) -> Result<Option<i64>> {
        if let Engine::Postgres(p) = self.engine() {
            return pg::mark_seen(self, p, &q.id, q.reply_seq, by).await;
        }
        let one = Arc::new((q.id.clone(), q.reply_seq, by.to_string()));
        let clock = self.clock().clone();
        self.retry(|| {
            let (one, clock) = (one.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move {
                    let now = clock.now_ms();
                    let (id, seq, by) = &*one;
                    Ok(mark_in(turn.conn(), now, id, *seq, by)
                        .await?
                        .then_some(now))
                })
            })
        })
        .await
    }

    /// Hand an agent the replies on open questions of a project and/or
    /// session. Each unseen reply is marked picked up — only the exact reply
    /// read — and returned with `new: true`; a reply changed between read
    /// and mark is left queued for the next call and not returned. With
    /// `include_seen`, replies delivered before and still standing on open
    /// questions come back too (`new: false`): delivery is at-least-once
    /// until the agent resolves.
    pub async fn pending(
        &self,
        project: Option<&str>,
        session: Option<&str>,
        include_seen: bool,
        by: &str,
    ) -> Result<Vec<Delivery>> {
        let mut out = Vec::new();
        for q in self.read_pending(project, session, include_seen).await? {
            if !q.has_unseen_reply() {
                out.push(Delivery {
                    new: false,
                    question: q,
                });
            } else if let Some(at) = self.mark_reply_seen(&q, by).await? {
                let mut q = q;
                if let Some(r) = q.reply.as_mut() {
                    r.seen_at = Some(at);
                }
                out.push(Delivery {
                    new: true,
                    question: q,
                });
            }
        }
        Ok(out)
    }
}

/// The Inbox reply: unconditional on the reply columns while open.
async fn reply_inbox_in(turn: &mut Turn, one: &Submitted, now: i64) -> Result<Outcome<Question>> {
    if let Some(row) = reply_inbox_once(turn.conn(), one, now).await? {
        return Ok(Ok(from_row(&row)?));
    }
    // Refused: once more under the lock (see the module docs).
    turn.begin().await?;
    if let Some(row) = reply_inbox_once(turn.conn(), one, now).await? {
        return Ok(Ok(from_row(&row)?));
    }
    let conn = turn.conn();
    // A card answered and already picked up (its hook is closing it).
    Ok(Err(
        match explain(conn, &one.id, one.r.expected_revision).await? {
            Refusal::Empty => picked_up_or_empty(get_on(conn, &one.id).await?.as_ref()),
            other => other,
        },
    ))
}

/// The Inbox reply's guarded statement: the row when it won.
async fn reply_inbox_once(
    conn: &mut SqliteConnection,
    one: &Submitted,
    now: i64,
) -> Result<Option<sqlx::sqlite::SqliteRow>> {
    let r = &one.r;
    // Why unconditional on the reply columns: the Inbox is the human's
    // authoritative door; only the question being open (and, if the
    // caller drew a revision, that revision) guards it. Except on a card
    // (an agent's own multiple-choice prompt): its hook takes the first
    // answer and closes it, so a later one would be lost; it is refused.
    let sql = format!(
        "UPDATE questions SET reply = ?1, reply_context = ?2, reply_kind = ?3,
             reply_source = ?4, replied_by = ?5, replied_at = ?6,
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = ?6, {ANSWERED}
         WHERE id = ?7 AND status = 'open' AND (?8 IS NULL OR revision = ?8)
           AND (choice = '' OR reply IS NULL)
         RETURNING *"
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(r.text.trim())
        .bind(r.context.as_deref())
        .bind(r.kind.as_str())
        .bind(Channel::Inbox.as_str())
        .bind(&r.by)
        .bind(now)
        .bind(&one.id)
        .bind(r.expected_revision)
        .bind(None::<i64>) // ?9 unused
        .bind(None::<i64>) // ?10 unused
        .bind(actor_of(r, Channel::Inbox))
        .fetch_optional(conn)
        .await?;
    Ok(row)
}

/// A blank Inbox reply: clears a reply nobody picked up.
async fn clear_in(turn: &mut Turn, one: &Submitted, now: i64) -> Result<Outcome<Question>> {
    if let Some(row) = clear_once(turn.conn(), one, now).await? {
        return Ok(Ok(from_row(&row)?));
    }
    // Refused: once more under the lock (see the module docs).
    turn.begin().await?;
    if let Some(row) = clear_once(turn.conn(), one, now).await? {
        return Ok(Ok(from_row(&row)?));
    }
    // Open and on the expected revision, yet not cleared: there is no
    // reply, or the agent already has it.
    let conn = turn.conn();
    let refusal = match explain(conn, &one.id, one.r.expected_revision).await? {
        Refusal::Empty | Refusal::UnreadAnswer { .. } => {
            picked_up_or_empty(get_on(conn, &one.id).await?.as_ref())
        }
        other => other,
    };
    Ok(Err(refusal))
}

/// The clear's guarded statement: the row when it won.
async fn clear_once(
    conn: &mut SqliteConnection,
    one: &Submitted,
    now: i64,
) -> Result<Option<sqlx::sqlite::SqliteRow>> {
    // Why `reply_seen_at IS NULL`: a reply the agent already picked up
    // cannot be taken back by clearing; only an unpicked one can.
    let row = one
        .bind_clear(
            sqlx::query(
                "UPDATE questions SET reply = NULL, reply_context = NULL, reply_kind = NULL,
             reply_source = NULL, replied_by = NULL, replied_at = NULL,
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = ?1,
             t_seq = t_seq + 1, t_at = ?1, t_event = 'question.reply_cleared',
             t_history = 'clear', t_by = ?4, t_actor = ?5, t_channel = 'inbox',
             t_payload = json_object('reply_seq', reply_seq + 1, 'revision', revision)
         WHERE id = ?2 AND status = 'open' AND reply IS NOT NULL AND reply_seen_at IS NULL
           AND (?3 IS NULL OR revision = ?3)
         RETURNING *",
            ),
            now,
        )
        .fetch_optional(conn)
        .await?;
    Ok(row)
}

/// A chat or agent reply: only while no unclaimed reply waits.
async fn conditional_in(
    turn: &mut Turn,
    one: Arc<Submitted>,
    now: i64,
) -> Result<Outcome<Question>> {
    if let Some(row) = conditional_once(turn.conn(), &one, now).await? {
        return Ok(Ok(from_row(&row)?));
    }
    // Refused: once more under the lock (see the module docs).
    turn.begin().await?;
    if let Some(row) = conditional_once(turn.conn(), &one, now).await? {
        return Ok(Ok(from_row(&row)?));
    }
    let r = &one.r;
    let refusal = explain(turn.conn(), &one.id, r.expected_revision).await?;
    if one.source == Channel::Agent
        && let Refusal::UnreadAnswer { .. } = refusal
    {
        // The agent is handed the unread answer: record that exact
        // reply as delivered, in this same transaction.
        if let Some(q) = get_on(turn.conn(), &one.id).await? {
            mark_in(turn.conn(), now, &q.id, q.reply_seq, &r.by).await?;
        }
    }
    Ok(Err(refusal))
}

/// A chat or agent reply's guarded statement: the row when it won.
async fn conditional_once(
    conn: &mut SqliteConnection,
    one: &Submitted,
    now: i64,
) -> Result<Option<sqlx::sqlite::SqliteRow>> {
    // Why this predicate: a reply nobody has picked up yet (above all an
    // Inbox one) must never be overwritten from chat or by the agent —
    // the engine decides, so of N racing writers exactly one wins. A chat
    // `clarify` may correct an unclaimed *chat* reply, never an Inbox one.
    let sql = format!(
        "UPDATE questions SET reply = ?1, reply_context = ?2, reply_kind = ?3,
             reply_source = ?4, replied_by = ?5, replied_at = ?6,
             reply_seen_at = CASE WHEN ?7 THEN ?6 ELSE NULL END,
             reply_seq = reply_seq + 1, updated_at = ?6, {ANSWERED}
         WHERE id = ?8 AND status = 'open' AND (?9 IS NULL OR revision = ?9)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL
                OR (?10 AND reply_source = 'chat'))
         RETURNING *"
    );
    let row = one
        .bind_conditional(sqlx::query(sqlx::AssertSqlSafe(sql)), now)
        .fetch_optional(conn)
        .await?;
    Ok(row)
}

/// Mark reply `reply_seq` of question `id` picked up by `by`: one guarded
/// UPDATE whose trigger appends `question.picked_up`. Whether it marked.
async fn mark_in(
    conn: &mut SqliteConnection,
    now: i64,
    id: &str,
    reply_seq: i64,
    by: &str,
) -> Result<bool> {
    // Why `reply_seq = ?`: mark only the reply that was read. If a human
    // re-replied between read and mark — even within the same
    // millisecond — the counter moved, the mark fails and the newer
    // reply stays queued.
    let query = sqlx::query(
        "UPDATE questions SET reply_seen_at = ?1,
             t_seq = t_seq + 1, t_at = ?1, t_event = 'question.picked_up', t_history = NULL,
             t_by = ?4, t_actor = ?5, t_channel = 'agent',
             t_payload = json_object('kind', reply_kind, 'reply_seq', reply_seq, 'source', reply_source)
         WHERE id = ?2 AND status = 'open' AND reply IS NOT NULL
           AND reply_seen_at IS NULL AND reply_seq = ?3",
    );
    let done = bind_mark(query, now, id, reply_seq, by)
        .execute(conn)
        .await?
        .rows_affected();
    Ok(done == 1)
}

/// Explain a refused reply: missing, closed, stale, or an unclaimed reply
/// in the way (`Empty` if none of these — the caller refines it).
async fn explain(
    conn: &mut SqliteConnection,
    id: &str,
    expected_revision: Option<i64>,
) -> Result<Refusal> {
    let Some(q) = get_on(conn, id).await? else {
        return Ok(Refusal::NotFound);
    };
    if q.status != Status::Open {
        return explain_closed(conn, id).await;
    }
    Ok(explain_open(&q, expected_revision))
}
