//! The three writers of a reply and the agent's pickup (DESIGN §2).
//!
//! - Inbox: unconditional while open; overwrites and sets `reply_seen_at`
//!   NULL. A blank Inbox reply clears only a reply nobody picked up.
//! - Chat: one conditional UPDATE, allowed only while no unclaimed reply
//!   waits; a `clarify` may also replace an unclaimed *chat* reply.
//! - Agent: the same conditional UPDATE, born seen; if refused, the agent is
//!   handed the unread answer (and that exact reply is marked picked up).
//! - Pickup marks `reply_seen_at` only for the exact reply read, named by
//!   `reply_seq` (two replies in one millisecond share `replied_at`).

use serde_json::json;

use super::read::get_on;
use super::write::{event, explain_closed};
use super::{
    Channel, Delivery, NewReply, Outcome, Question, Refusal, ReplyKind, Status, from_row, validate,
};
use crate::store::{Result, Store, WriteTx};

/// Append a history row and the `question.answered` event for the reply
/// `q` now carries.
async fn record_reply(tx: &mut WriteTx, now: i64, q: &Question, channel: Channel) -> Result<()> {
    let r = q
        .reply
        .as_ref()
        .ok_or_else(|| crate::store::Error::Corrupt("reply vanished inside its write".into()))?;
    sqlx::query(
        "INSERT INTO question_replies
             (question_id, reply_seq, action, reply, reply_context, kind, source, by, revision, at)
         VALUES (?, ?, 'reply', ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&q.id)
    .bind(q.reply_seq)
    .bind(&r.text)
    .bind(r.context.as_deref())
    .bind(r.kind.as_str())
    .bind(r.source.as_str())
    .bind(&r.by)
    .bind(q.revision)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    let actor = if r.by.is_empty() {
        channel.as_str()
    } else {
        &r.by
    };
    // The reply itself travels with the event, so a wake-up's receiver
    // can act on it without API access.
    let payload = json!({
        "kind": r.kind,
        "source": r.source,
        "text": r.text,
        "context": r.context,
        "by": r.by,
        "revision": q.revision,
        "reply_seq": q.reply_seq,
    });
    event(tx, now, "question.answered", q, actor, channel, payload).await?;
    Ok(())
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
    /// [`Refusal::Empty`] when there is nothing to clear.
    pub async fn reply_inbox(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        validate::reply(r)?;
        if is_blank(r) {
            return self.retry(|| self.clear_once(id, r)).await;
        }
        self.retry(|| self.reply_inbox_once(id, r)).await
    }

    async fn reply_inbox_once(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        let now = self.now();
        let mut tx = self.begin_write().await?;
        // Why unconditional on the reply columns: the Inbox is the human's
        // authoritative door; only the question being open (and, if the
        // caller drew a revision, that revision) guards it.
        let row = sqlx::query(
            "UPDATE questions SET reply = ?1, reply_context = ?2, reply_kind = ?3,
                 reply_source = 'inbox', replied_by = ?4, replied_at = ?5,
                 reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = ?5
             WHERE id = ?6 AND status = 'open' AND (?7 IS NULL OR revision = ?7)
             RETURNING *",
        )
        .bind(r.text.trim())
        .bind(r.context.as_deref())
        .bind(r.kind.as_str())
        .bind(&r.by)
        .bind(now)
        .bind(id)
        .bind(r.expected_revision)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(Err(self.explain(&mut tx, id, r.expected_revision).await?));
        };
        let q = from_row(&row)?;
        record_reply(&mut tx, now, &q, Channel::Inbox).await?;
        tx.commit().await?;
        Ok(Ok(q))
    }

    async fn clear_once(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        let now = self.now();
        let mut tx = self.begin_write().await?;
        // Why `reply_seen_at IS NULL`: a reply the agent already picked up
        // cannot be taken back by clearing; only an unpicked one can.
        let row = sqlx::query(
            "UPDATE questions SET reply = NULL, reply_context = NULL, reply_kind = NULL,
                 reply_source = NULL, replied_by = NULL, replied_at = NULL,
                 reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = ?1
             WHERE id = ?2 AND status = 'open' AND reply IS NOT NULL AND reply_seen_at IS NULL
               AND (?3 IS NULL OR revision = ?3)
             RETURNING *",
        )
        .bind(now)
        .bind(id)
        .bind(r.expected_revision)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            // Open and on the expected revision, yet not cleared: there is no
            // reply, or the agent already has it.
            let refusal = match self.explain(&mut tx, id, r.expected_revision).await? {
                Refusal::Empty | Refusal::UnreadAnswer { .. } => {
                    match get_on(&mut tx, id).await?.and_then(|q| q.reply) {
                        Some(reply) => Refusal::AlreadyPickedUp { reply: reply.text },
                        None => Refusal::Empty,
                    }
                }
                other => other,
            };
            return Ok(Err(refusal));
        };
        let q = from_row(&row)?;
        sqlx::query(
            "INSERT INTO question_replies (question_id, reply_seq, action, source, by, revision, at)
             VALUES (?, ?, 'clear', 'inbox', ?, ?, ?)",
        )
        .bind(&q.id)
        .bind(q.reply_seq)
        .bind(&r.by)
        .bind(q.revision)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let actor = if r.by.is_empty() { "inbox" } else { &r.by };
        let payload = json!({ "reply_seq": q.reply_seq, "revision": q.revision });
        event(
            &mut tx,
            now,
            "question.reply_cleared",
            &q,
            actor,
            Channel::Inbox,
            payload,
        )
        .await?;
        tx.commit().await?;
        Ok(Ok(q))
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
        self.retry(|| self.conditional_once(id, r, Channel::Chat))
            .await
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
        self.retry(|| self.conditional_once(id, r, Channel::Agent))
            .await
    }

    async fn conditional_once(
        &self,
        id: &str,
        r: &NewReply,
        source: Channel,
    ) -> Result<Outcome<Question>> {
        let now = self.now();
        let born_seen = source == Channel::Agent;
        let clarify_chat = source == Channel::Chat && r.kind == ReplyKind::Clarify;
        let mut tx = self.begin_write().await?;
        // Why this predicate: a reply nobody has picked up yet (above all an
        // Inbox one) must never be overwritten from chat or by the agent —
        // the engine decides, so of N racing writers exactly one wins. A chat
        // `clarify` may correct an unclaimed *chat* reply, never an Inbox one.
        let row = sqlx::query(
            "UPDATE questions SET reply = ?1, reply_context = ?2, reply_kind = ?3,
                 reply_source = ?4, replied_by = ?5, replied_at = ?6,
                 reply_seen_at = CASE WHEN ?7 THEN ?6 ELSE NULL END,
                 reply_seq = reply_seq + 1, updated_at = ?6
             WHERE id = ?8 AND status = 'open' AND (?9 IS NULL OR revision = ?9)
               AND (reply IS NULL OR reply_seen_at IS NOT NULL
                    OR (?10 AND reply_source = 'chat'))
             RETURNING *",
        )
        .bind(r.text.trim())
        .bind(r.context.as_deref())
        .bind(r.kind.as_str())
        .bind(source.as_str())
        .bind(&r.by)
        .bind(now)
        .bind(born_seen)
        .bind(id)
        .bind(r.expected_revision)
        .bind(clarify_chat)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            let refusal = self.explain(&mut tx, id, r.expected_revision).await?;
            if born_seen && let Refusal::UnreadAnswer { .. } = refusal {
                // The agent is handed the unread answer: record that exact
                // reply as delivered, in this same transaction.
                if let Some(q) = get_on(&mut tx, id).await? {
                    self.mark_on(&mut tx, now, &q, &r.by).await?;
                    tx.commit().await?;
                }
            }
            return Ok(Err(refusal));
        };
        let q = from_row(&row)?;
        record_reply(&mut tx, now, &q, source).await?;
        tx.commit().await?;
        Ok(Ok(q))
    }

    /// Explain a refused reply from the refusing transaction's snapshot:
    /// missing, closed, stale, or an unclaimed reply in the way (`Empty` if
    /// none of these — the caller refines it).
    async fn explain(
        &self,
        tx: &mut WriteTx,
        id: &str,
        expected_revision: Option<i64>,
    ) -> Result<Refusal> {
        let Some(q) = get_on(tx, id).await? else {
            return Ok(Refusal::NotFound);
        };
        if q.status != Status::Open {
            return explain_closed(tx, id).await;
        }
        if let Some(rev) = expected_revision
            && rev != q.revision
        {
            return Ok(Refusal::Stale {
                current_revision: q.revision,
            });
        }
        Ok(match q.reply {
            Some(r) if r.seen_at.is_none() => Refusal::UnreadAnswer {
                reply: r.text,
                kind: r.kind,
                source: r.source,
                by: r.by,
            },
            _ => Refusal::Empty,
        })
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
                .fetch_all(self.pool())
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
                .fetch_all(self.pool())
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
        self.retry(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            let marked = self.mark_on(&mut tx, now, q, by).await?;
            tx.commit().await?;
            Ok(marked.then_some(now))
        })
        .await
    }

    async fn mark_on(&self, tx: &mut WriteTx, now: i64, q: &Question, by: &str) -> Result<bool> {
        // Why `reply_seq = ?`: mark only the reply that was read. If a human
        // re-replied between read and mark — even within the same
        // millisecond — the counter moved, the mark fails and the newer
        // reply stays queued.
        let done = sqlx::query(
            "UPDATE questions SET reply_seen_at = ?1
             WHERE id = ?2 AND status = 'open' AND reply IS NOT NULL
               AND reply_seen_at IS NULL AND reply_seq = ?3",
        )
        .bind(now)
        .bind(&q.id)
        .bind(q.reply_seq)
        .execute(&mut **tx)
        .await?
        .rows_affected()
            == 1;
        if done {
            let r = q.reply.as_ref();
            let payload = json!({
                "reply_seq": q.reply_seq,
                "kind": r.map(|r| r.kind),
                "source": r.map(|r| r.source),
            });
            let actor = if by.is_empty() { "agent" } else { by };
            event(
                tx,
                now,
                "question.picked_up",
                q,
                actor,
                Channel::Agent,
                payload,
            )
            .await?;
        }
        Ok(done)
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
