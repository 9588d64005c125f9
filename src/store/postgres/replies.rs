//! A question's replies on PostgreSQL: the three writers (Inbox, chat,
//! agent) with the asymmetric rule, the blank Inbox reply that clears, and
//! the agent's pickup. The rules and the statements are SQLite's (see
//! `store/questions/reply.rs`); `questions.rs` says how the spelling
//! differs and why a refused write is tried once more under a row lock.

use std::sync::Arc;

use sqlx::PgConnection;

use super::Pg;
use super::questions::{explain_closed, lock_on};
use crate::store::questions::{
    Channel, NewReply, Outcome, Question, Refusal, Status, Submitted, actor_of, bind_mark,
    explain_open, from_row, picked_up_or_empty,
};
use crate::store::{Result, Store};

/// The `question.answered` event and its history row, in the reply
/// UPDATE's `t_*` columns: `$1` text, `$2` context, `$3` kind, `$4`
/// source, `$5` by, `$6` now, and `actor` the parameter naming the actor.
fn answered(actor: &str) -> String {
    format!(
        "t_seq = t_seq + 1, t_at = $6, t_event = 'question.answered',
         t_history = 'reply', t_by = $5, t_actor = {actor}, t_channel = $4,
         t_payload = handoff_json_set(json_build_object(
             'by', $5, 'context', $2, 'kind', $3, 'reply_seq', reply_seq + 1,
             'revision', revision, 'source', $4, 'text', $1)::text, '{{}}', '{{}}')"
    )
}

/// The Inbox reply: unconditional on the reply columns while open (except
/// a card already answered); a blank one clears an unpicked reply.
pub(crate) async fn inbox(
    s: &Store,
    pg: &Pg,
    id: &str,
    r: &NewReply,
    blank: bool,
) -> Result<Outcome<Question>> {
    let one = Arc::new(Submitted {
        id: id.to_string(),
        r: r.clone(),
        source: Channel::Inbox,
    });
    s.pg_write(pg, one, move |conn, one, now| {
        Box::pin(async move {
            if blank {
                clear_in(conn, &one, now).await
            } else {
                inbox_in(conn, &one, now).await
            }
        })
    })
    .await
}

async fn inbox_once(
    conn: &mut PgConnection,
    one: &Submitted,
    now: i64,
) -> Result<Option<Question>> {
    let r = &one.r;
    // Why unconditional on the reply columns: the Inbox is the human's
    // authoritative door (see `questions/reply.rs`).
    let sql = format!(
        "UPDATE questions SET reply = $1, reply_context = $2, reply_kind = $3,
             reply_source = $4, replied_by = $5, replied_at = $6,
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = $6, {}
         WHERE id = $7 AND status = 'open' AND ($8::BIGINT IS NULL OR revision = $8)
           AND (choice = '' OR reply IS NULL)
         RETURNING *",
        answered("$9")
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
        .bind(actor_of(r, Channel::Inbox))
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

async fn inbox_in(conn: &mut PgConnection, one: &Submitted, now: i64) -> Result<Outcome<Question>> {
    if let Some(q) = inbox_once(conn, one, now).await? {
        return Ok(Ok(q));
    }
    let locked = lock_on(conn, &one.id).await?;
    if let Some(q) = inbox_once(conn, one, now).await? {
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

async fn clear_once(
    conn: &mut PgConnection,
    one: &Submitted,
    now: i64,
) -> Result<Option<Question>> {
    // Why `reply_seen_at IS NULL`: a reply the agent already picked up
    // cannot be taken back by clearing; only an unpicked one can.
    let query = sqlx::query(
        "UPDATE questions SET reply = NULL, reply_context = NULL, reply_kind = NULL,
             reply_source = NULL, replied_by = NULL, replied_at = NULL,
             reply_seen_at = NULL, reply_seq = reply_seq + 1, updated_at = $1,
             t_seq = t_seq + 1, t_at = $1, t_event = 'question.reply_cleared',
             t_history = 'clear', t_by = $4, t_actor = $5, t_channel = 'inbox',
             t_payload = handoff_json_set(json_build_object(
                 'reply_seq', reply_seq + 1, 'revision', revision)::text, '{}', '{}')
         WHERE id = $2 AND status = 'open' AND reply IS NOT NULL AND reply_seen_at IS NULL
           AND ($3::BIGINT IS NULL OR revision = $3)
         RETURNING *",
    );
    let row = one.bind_clear(query, now).fetch_optional(conn).await?;
    row.as_ref().map(from_row).transpose()
}

async fn clear_in(conn: &mut PgConnection, one: &Submitted, now: i64) -> Result<Outcome<Question>> {
    if let Some(q) = clear_once(conn, one, now).await? {
        return Ok(Ok(q));
    }
    let locked = lock_on(conn, &one.id).await?;
    if let Some(q) = clear_once(conn, one, now).await? {
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

/// A chat or agent reply: only while no unclaimed reply waits.
pub(crate) async fn conditional(
    s: &Store,
    pg: &Pg,
    id: &str,
    r: &NewReply,
    source: Channel,
) -> Result<Outcome<Question>> {
    let one = Arc::new(Submitted {
        id: id.to_string(),
        r: r.clone(),
        source,
    });
    s.pg_write(pg, one, |conn, one, now| {
        Box::pin(async move { conditional_in(conn, &one, now).await })
    })
    .await
}

async fn conditional_once(
    conn: &mut PgConnection,
    one: &Submitted,
    now: i64,
) -> Result<Option<Question>> {
    // Why this predicate: a reply nobody has picked up yet (above all an
    // Inbox one) is never overwritten from chat or by the agent; a chat
    // `clarify` may correct an unclaimed *chat* reply, never an Inbox one.
    // Of N racing writers exactly one wins (see `write.rs`).
    let sql = format!(
        "UPDATE questions SET reply = $1, reply_context = $2, reply_kind = $3,
             reply_source = $4, replied_by = $5, replied_at = $6,
             reply_seen_at = CASE WHEN $7 THEN $6 ELSE NULL END,
             reply_seq = reply_seq + 1, updated_at = $6, {}
         WHERE id = $8 AND status = 'open' AND ($9::BIGINT IS NULL OR revision = $9)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL
                OR ($10 AND reply_source = 'chat'))
         RETURNING *",
        answered("$11")
    );
    let row = one
        .bind_conditional(sqlx::query(sqlx::AssertSqlSafe(sql)), now)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

async fn conditional_in(
    conn: &mut PgConnection,
    one: &Submitted,
    now: i64,
) -> Result<Outcome<Question>> {
    if let Some(q) = conditional_once(conn, one, now).await? {
        return Ok(Ok(q));
    }
    let locked = lock_on(conn, &one.id).await?;
    if let Some(q) = conditional_once(conn, one, now).await? {
        return Ok(Ok(q));
    }
    let refusal = explain(locked.as_ref(), one.r.expected_revision);
    if one.source == Channel::Agent
        && let Refusal::UnreadAnswer { .. } = refusal
        && let Some(q) = &locked
    {
        // The agent is handed the unread answer: record that exact reply
        // as delivered, in this same transaction (the row is still locked,
        // so it is the reply the refusal carries).
        mark_in(conn, now, &q.id, q.reply_seq, &one.r.by).await?;
    }
    Ok(Err(refusal))
}

/// Mark reply `reply_seq` of question `id` picked up by `by` (at the
/// clock's time): whether it marked, and when.
pub(crate) async fn mark_seen(
    s: &Store,
    pg: &Pg,
    id: &str,
    reply_seq: i64,
    by: &str,
) -> Result<Option<i64>> {
    let one = Arc::new((id.to_string(), reply_seq, by.to_string()));
    s.pg_write(pg, one, |conn, one, now| {
        Box::pin(async move {
            let (id, seq, by) = &*one;
            Ok(mark_in(conn, now, id, *seq, by).await?.then_some(now))
        })
    })
    .await
}

/// One guarded UPDATE whose trigger appends `question.picked_up`.
async fn mark_in(
    conn: &mut PgConnection,
    now: i64,
    id: &str,
    reply_seq: i64,
    by: &str,
) -> Result<bool> {
    // Why `reply_seq = $3`: mark only the reply that was read; a re-reply
    // since (even in the same millisecond) moved the counter.
    let query = sqlx::query(
        "UPDATE questions SET reply_seen_at = $1,
             t_seq = t_seq + 1, t_at = $1, t_event = 'question.picked_up', t_history = NULL,
             t_by = $4, t_actor = $5, t_channel = 'agent',
             t_payload = handoff_json_set(json_build_object(
                 'kind', reply_kind, 'reply_seq', reply_seq, 'source', reply_source)::text,
                 '{}', '{}')
         WHERE id = $2 AND status = 'open' AND reply IS NOT NULL
           AND reply_seen_at IS NULL AND reply_seq = $3",
    );
    let done = bind_mark(query, now, id, reply_seq, by)
        .execute(conn)
        .await?
        .rows_affected();
    Ok(done == 1)
}

/// Open questions in scope with a reply: unseen ones, and with
/// `include_seen` delivered ones too, in reply order.
pub(crate) async fn read_pending(
    pg: &Pg,
    project: Option<&str>,
    session: Option<&str>,
    include_seen: bool,
) -> Result<Vec<Question>> {
    // Two spellings, as on SQLite, so the `questions_pending` index on
    // the session serves a call that names one.
    let rows = match session {
        Some(session) => {
            sqlx::query(
                "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL AND session = $2
                   AND ($1::TEXT IS NULL OR project = $1) AND ($3 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id COLLATE \"C\"",
            )
            .bind(project)
            .bind(session)
            .bind(include_seen)
            .fetch_all(pg.pool())
            .await?
        }
        None => {
            sqlx::query(
                "SELECT * FROM questions
                 WHERE status = 'open' AND reply IS NOT NULL
                   AND ($1::TEXT IS NULL OR project = $1) AND ($2 OR reply_seen_at IS NULL)
                 ORDER BY replied_at, id COLLATE \"C\"",
            )
            .bind(project)
            .bind(include_seen)
            .fetch_all(pg.pool())
            .await?
        }
    };
    rows.iter().map(from_row).collect()
}

/// Explain a refused reply from the locked row: missing, closed, stale, or
/// an unclaimed reply in the way (`Empty` if none of these — the caller
/// refines it).
fn explain(q: Option<&Question>, expected_revision: Option<i64>) -> Refusal {
    let Some(q) = q else {
        return Refusal::NotFound;
    };
    if q.status != Status::Open {
        return explain_closed(Some(q));
    }
    explain_open(q, expected_revision)
}
