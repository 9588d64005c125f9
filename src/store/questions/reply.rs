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
//! - A refused write reads the row and runs its guarded statement once
//!   more after [`Tx::begin`] before it explains itself. Why: alone, the
//!   refused statement was its own transaction, so another writer may
//!   have changed the row before the explanation read it — an unread
//!   reply picked up, and a chat reply then told it was "empty". On
//!   SQLite, under `BEGIN IMMEDIATE` nobody else writes; on PostgreSQL
//!   (READ COMMITTED) the read locks the row (`FOR UPDATE`): the second
//!   try wins, or it is refused by exactly the state the explanation
//!   reads. Only a refused write pays for it; a winning one is one
//!   statement.
//!
//! Each statement is written once per engine only where its JSON payload
//! is spelled differently (see `write.rs`) or PostgreSQL needs a typed
//! NULL test (`$N::BIGINT IS NULL`); the values are numbered the same.

use std::sync::Arc;

use super::read::lock;
use super::refused::{explain, is_blank, picked_up_or_empty};
use super::{Channel, Delivery, Medium, NewReply, Outcome, Question, Refusal, ReplyKind, validate};
use crate::store::engine::{Stmt, Tx};
use crate::store::{Result, Store};

/// Who a reply's event names: the person, else the door.
fn actor_of(r: &NewReply, channel: Channel) -> &str {
    if r.by.is_empty() {
        channel.as_str()
    } else {
        &r.by
    }
}

/// One reply to write, owned for the write.
#[derive(Debug)]
pub(crate) struct Submitted {
    pub(crate) id: String,
    pub(crate) r: NewReply,
    pub(crate) source: Channel,
    /// Typed, or a confirmed voice note (chat only).
    pub(crate) medium: Medium,
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
        let one = Arc::new(Submitted {
            id: id.to_string(),
            r: r.clone(),
            source: Channel::Inbox,
            medium: Medium::Text,
        });
        self.write_with(one, move |tx, one, now| {
            if blank {
                Box::pin(clear_in(tx, one, now))
            } else {
                Box::pin(reply_inbox_in(tx, one, now))
            }
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
        self.conditional(id, r, Channel::Chat, Medium::Text).await
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
        self.conditional(id, r, Channel::Agent, Medium::Text).await
    }

    async fn conditional(
        &self,
        id: &str,
        r: &NewReply,
        source: Channel,
        medium: Medium,
    ) -> Result<Outcome<Question>> {
        let one = Arc::new(Submitted {
            id: id.to_string(),
            r: r.clone(),
            source,
            medium,
        });
        self.write_with(one, |mut tx, one, now| {
            Box::pin(async move { conditional_in(&mut tx, &one, now).await })
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
        // Two spellings so SQLite can use the `questions_pending` index on
        // the session when one is given (a `$2 IS NULL OR …` filter can't);
        // on PostgreSQL `COLLATE "C"` breaks ties in SQLite's byte order.
        let pending = match session {
            Some(session) => Stmt::spelled(
                "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL AND session = $2
                   AND ($1 IS NULL OR project = $1) AND ($3 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id",
                "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL AND session = $2
                   AND ($1::TEXT IS NULL OR project = $1) AND ($3 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id COLLATE \"C\"",
            )
            .text(project)
            .text(session)
            .bool(include_seen),
            None => Stmt::spelled(
                "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL
                   AND ($1 IS NULL OR project = $1) AND ($2 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id",
                "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL
                   AND ($1::TEXT IS NULL OR project = $1) AND ($2 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id COLLATE \"C\"",
            )
            .text(project)
            .bool(include_seen),
        };
        self.rows(pending).await
    }

    /// Mark the exact reply `q` carries (its `reply_seq`) as picked up by
    /// `by`, returning the time of the mark. `None` when the reply changed
    /// since `q` was read (the newer one stays queued), was already marked,
    /// or the question closed.
    pub async fn mark_reply_seen(&self, q: &Question, by: &str) -> Result<Option<i64>> {
        let one = Arc::new((q.id.clone(), q.reply_seq, by.to_string()));
        self.write_with(one, |mut tx, one, now| {
            Box::pin(async move {
                let (id, seq, by) = &*one;
                Ok(mark_in(&mut tx, now, id, *seq, by).await?.then_some(now))
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
async fn reply_inbox_in(
    mut tx: Tx<'_>,
    one: Arc<Submitted>,
    now: i64,
) -> Result<Outcome<Question>> {
    if let Some(q) = tx.row(&reply_inbox(&one, now)).await? {
        return Ok(Ok(q));
    }
    // Refused: once more under the lock (see the module docs).
    tx.begin().await?;
    let locked = tx.row::<Question>(&lock(&one.id)).await?;
    if let Some(q) = tx.row(&reply_inbox(&one, now)).await? {
        return Ok(Ok(q));
    }
    // A card answered: unread, or picked up (its hook is closing it).
    Ok(Err(
        match explain(locked.as_ref(), one.r.expected_revision) {
            Refusal::Empty => picked_up_or_empty(locked.as_ref()),
            other => other,
        },
    ))
}

/// The Inbox reply's guarded statement: `$1` text, `$2` context, `$3`
/// kind, `$4` source, `$5` by, `$6` now, `$7` id, `$8` the expected
/// revision, `$9` the actor; its trigger appends `question.answered` and
/// the history row.
fn reply_inbox(one: &Submitted, now: i64) -> Stmt<'_> {
    let r = &one.r;
    // Why unconditional on the reply columns: the Inbox is the human's
    // authoritative door; only the question being open (and, if the
    // caller drew a revision, that revision) guards it. Except on a card
    // (an agent's own multiple-choice prompt): its hook takes the first
    // answer and closes it, so a later one would be lost; it is refused.
    Stmt::spelled(
        "UPDATE questions SET reply = $1, reply_context = $2, reply_kind = $3,
             reply_source = $4, replied_by = $5, replied_at = $6, reply_medium = 'text',
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = $6,
             t_seq = t_seq + 1, t_at = $6, t_event = 'question.answered',
             t_history = 'reply', t_by = $5, t_actor = $9, t_channel = $4,
             t_payload = json_object('by', $5, 'context', $2, 'kind', $3, 'reply_seq', reply_seq + 1,
                                     'revision', revision, 'source', $4, 'text', $1)
         WHERE id = $7 AND status = 'open' AND ($8 IS NULL OR revision = $8)
           AND (choice = '' OR reply IS NULL)
         RETURNING *",
        "UPDATE questions SET reply = $1, reply_context = $2, reply_kind = $3,
             reply_source = $4, replied_by = $5, replied_at = $6, reply_medium = 'text',
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = $6,
             t_seq = t_seq + 1, t_at = $6, t_event = 'question.answered',
             t_history = 'reply', t_by = $5, t_actor = $9, t_channel = $4,
             t_payload = handoff_json_set(json_build_object(
                 'by', $5, 'context', $2, 'kind', $3, 'reply_seq', reply_seq + 1,
                 'revision', revision, 'source', $4, 'text', $1)::text, '{}', '{}')
         WHERE id = $7 AND status = 'open' AND ($8::BIGINT IS NULL OR revision = $8)
           AND (choice = '' OR reply IS NULL)
         RETURNING *",
    )
    .text(r.text.trim())
    .text(r.context.as_deref())
    .text(r.kind.as_str())
    .text(Channel::Inbox.as_str())
    .text(r.by.as_str())
    .int(now)
    .text(one.id.as_str())
    .int(r.expected_revision)
    .text(actor_of(r, Channel::Inbox))
}

/// A blank Inbox reply: clears a reply nobody picked up.
async fn clear_in(mut tx: Tx<'_>, one: Arc<Submitted>, now: i64) -> Result<Outcome<Question>> {
    if let Some(q) = tx.row(&clear(&one, now)).await? {
        return Ok(Ok(q));
    }
    // Refused: once more under the lock (see the module docs).
    tx.begin().await?;
    let locked = tx.row::<Question>(&lock(&one.id)).await?;
    if let Some(q) = tx.row(&clear(&one, now)).await? {
        return Ok(Ok(q));
    }
    // Open and on the expected revision, yet not cleared: there is no
    // reply, or the agent already has it.
    Ok(Err(
        match explain(locked.as_ref(), one.r.expected_revision) {
            Refusal::Empty | Refusal::UnreadAnswer { .. } => picked_up_or_empty(locked.as_ref()),
            other => other,
        },
    ))
}

/// The clear's guarded statement: `$1` now, `$2` id, `$3` the expected
/// revision, `$4` by, `$5` the actor.
fn clear(one: &Submitted, now: i64) -> Stmt<'_> {
    let r = &one.r;
    // Why `reply_seen_at IS NULL`: a reply the agent already picked up
    // cannot be taken back by clearing; only an unpicked one can.
    Stmt::spelled(
        "UPDATE questions SET reply = NULL, reply_context = NULL, reply_kind = NULL,
             reply_source = NULL, replied_by = NULL, replied_at = NULL, reply_medium = NULL,
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = $1,
             t_seq = t_seq + 1, t_at = $1, t_event = 'question.reply_cleared',
             t_history = 'clear', t_by = $4, t_actor = $5, t_channel = 'inbox',
             t_payload = json_object('reply_seq', reply_seq + 1, 'revision', revision)
         WHERE id = $2 AND status = 'open' AND reply IS NOT NULL AND reply_seen_at IS NULL
           AND ($3 IS NULL OR revision = $3)
         RETURNING *",
        "UPDATE questions SET reply = NULL, reply_context = NULL, reply_kind = NULL,
             reply_source = NULL, replied_by = NULL, replied_at = NULL, reply_medium = NULL,
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = $1,
             t_seq = t_seq + 1, t_at = $1, t_event = 'question.reply_cleared',
             t_history = 'clear', t_by = $4, t_actor = $5, t_channel = 'inbox',
             t_payload = handoff_json_set(json_build_object(
                 'reply_seq', reply_seq + 1, 'revision', revision)::text, '{}', '{}')
         WHERE id = $2 AND status = 'open' AND reply IS NOT NULL AND reply_seen_at IS NULL
           AND ($3::BIGINT IS NULL OR revision = $3)
         RETURNING *",
    )
    .int(now)
    .text(one.id.as_str())
    .int(r.expected_revision)
    .text(r.by.as_str())
    .text(actor_of(r, Channel::Inbox))
}

/// A chat or agent reply: only while no unclaimed reply waits. Also the
/// voice reply's Send (`voice`), inside that write's transaction.
pub(crate) async fn conditional_in(
    tx: &mut Tx<'_>,
    one: &Submitted,
    now: i64,
) -> Result<Outcome<Question>> {
    validate::reply(&one.r)?;
    if is_blank(&one.r) {
        return Ok(Err(Refusal::Empty));
    }
    if let Some(q) = tx.row(&conditional(one, now)).await? {
        return Ok(Ok(q));
    }
    // Refused: once more under the lock (see the module docs).
    tx.begin().await?;
    let locked = tx.row::<Question>(&lock(&one.id)).await?;
    if let Some(q) = tx.row(&conditional(one, now)).await? {
        return Ok(Ok(q));
    }
    let refusal = explain(locked.as_ref(), one.r.expected_revision);
    if one.source == Channel::Agent
        && let Refusal::UnreadAnswer { .. } = refusal
        && let Some(q) = &locked
    {
        // The agent is handed the unread answer: record that exact reply
        // as delivered, in this same transaction (nobody else writes the
        // row meanwhile, so it is the reply the refusal carries).
        mark_in(tx, now, &q.id, q.reply_seq, &one.r.by).await?;
    }
    Ok(Err(refusal))
}

/// A chat or agent reply's guarded statement: `$1` text, `$2` context,
/// `$3` kind, `$4` source, `$5` by, `$6` now, `$7` born seen (the agent's
/// own), `$8` id, `$9` the expected revision, `$10` a chat clarify, `$11`
/// the actor, `$12` the medium; its trigger appends `question.answered` and the history row.
fn conditional(one: &Submitted, now: i64) -> Stmt<'_> {
    let (r, source) = (&one.r, one.source);
    // Why this predicate: a reply nobody has picked up yet (above all an
    // Inbox one) must never be overwritten from chat or by the agent —
    // the engine decides, so of N racing writers exactly one wins. A chat
    // `clarify` may correct an unclaimed *chat* reply, never an Inbox one.
    Stmt::spelled(
        "UPDATE questions SET reply = $1, reply_context = $2, reply_kind = $3,
             reply_source = $4, replied_by = $5, replied_at = $6, reply_medium = $12,
             reply_seen_at = CASE WHEN $7 THEN $6 ELSE NULL END,
             reply_seq = reply_seq + 1, updated_at = $6,
             t_seq = t_seq + 1, t_at = $6, t_event = 'question.answered',
             t_history = 'reply', t_by = $5, t_actor = $11, t_channel = $4,
             t_payload = json_object('by', $5, 'context', $2, 'kind', $3, 'reply_seq', reply_seq + 1,
                                     'revision', revision, 'source', $4, 'text', $1)
         WHERE id = $8 AND status = 'open' AND ($9 IS NULL OR revision = $9)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL
                OR ($10 AND reply_source = 'chat'))
         RETURNING *",
        "UPDATE questions SET reply = $1, reply_context = $2, reply_kind = $3,
             reply_source = $4, replied_by = $5, replied_at = $6, reply_medium = $12,
             reply_seen_at = CASE WHEN $7 THEN $6 ELSE NULL END,
             reply_seq = reply_seq + 1, updated_at = $6,
             t_seq = t_seq + 1, t_at = $6, t_event = 'question.answered',
             t_history = 'reply', t_by = $5, t_actor = $11, t_channel = $4,
             t_payload = handoff_json_set(json_build_object(
                 'by', $5, 'context', $2, 'kind', $3, 'reply_seq', reply_seq + 1,
                 'revision', revision, 'source', $4, 'text', $1)::text, '{}', '{}')
         WHERE id = $8 AND status = 'open' AND ($9::BIGINT IS NULL OR revision = $9)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL
                OR ($10 AND reply_source = 'chat'))
         RETURNING *",
    )
    .text(r.text.trim())
    .text(r.context.as_deref())
    .text(r.kind.as_str())
    .text(source.as_str())
    .text(r.by.as_str())
    .int(now)
    .bool(source == Channel::Agent)
    .text(one.id.as_str())
    .int(r.expected_revision)
    .bool(source == Channel::Chat && r.kind == ReplyKind::Clarify)
    .text(actor_of(r, source))
    .text(one.medium.as_str())
}

/// Mark reply `reply_seq` of question `id` picked up by `by`: one guarded
/// UPDATE whose trigger appends `question.picked_up`. Whether it marked.
async fn mark_in(tx: &mut Tx<'_>, now: i64, id: &str, reply_seq: i64, by: &str) -> Result<bool> {
    // Why `reply_seq = $3`: mark only the reply that was read. If a human
    // re-replied between read and mark — even within the same
    // millisecond — the counter moved, the mark fails and the newer
    // reply stays queued.
    let mark = Stmt::spelled(
        "UPDATE questions SET reply_seen_at = $1,
             t_seq = t_seq + 1, t_at = $1, t_event = 'question.picked_up', t_history = NULL,
             t_by = $4, t_actor = $5, t_channel = 'agent',
             t_payload = json_object('kind', reply_kind, 'reply_seq', reply_seq, 'source', reply_source)
         WHERE id = $2 AND status = 'open' AND reply IS NOT NULL
           AND reply_seen_at IS NULL AND reply_seq = $3",
        "UPDATE questions SET reply_seen_at = $1,
             t_seq = t_seq + 1, t_at = $1, t_event = 'question.picked_up', t_history = NULL,
             t_by = $4, t_actor = $5, t_channel = 'agent',
             t_payload = handoff_json_set(json_build_object(
                 'kind', reply_kind, 'reply_seq', reply_seq, 'source', reply_source)::text,
                 '{}', '{}')
         WHERE id = $2 AND status = 'open' AND reply IS NOT NULL
           AND reply_seen_at IS NULL AND reply_seq = $3",
    )
    .int(now)
    .text(id)
    .int(reply_seq)
    .text(by)
    .text(if by.is_empty() { "agent" } else { by });
    Ok(tx.change(&mark).await? == 1)
}
