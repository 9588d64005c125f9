//! Questions on PostgreSQL: flag, close (resolve, dismiss), snooze, toggle
//! and the reads. Replies and pickup are in `replies.rs`.
//!
//! The statements are SQLite's (`store/questions/`) in PostgreSQL's
//! spelling: `$N` placeholders, each bound once and in order; `#` for XOR;
//! `right()` for a suffix; a NULL `LIMIT` for none; `COLLATE "C"` where an
//! id breaks a tie, so the order is SQLite's byte order whatever the
//! database's collation. The same `t_*` columns make the same triggers
//! (migration 20261201000520) append the same events and history rows.
//!
//! JSON payloads: `handoff_json_set(json_build_object(…)::text, '{}', '{}')`
//! is SQLite's `json_object(…)`: the same members in the same order, and
//! compact (json_build_object writes `"k" : v, …`; handoff_json_set with no
//! key to set writes the members back without the spaces), so an event's
//! payload text is the same on both engines.
//!
//! Refusals: a guarded UPDATE that changed nothing is run once more with the
//! row locked (`SELECT … FOR UPDATE`). Why: at READ COMMITTED the row may
//! have changed since the UPDATE looked (another writer committed in
//! between), so a plain read could explain a refusal with a state that
//! would have let the write through; under the lock the second UPDATE
//! either wins or is refused by exactly the state read.

use std::sync::Arc;

use sqlx::PgConnection;

use super::Pg;
use crate::store::questions::{
    Channel, Choice, Flagged, ListFilter, NewQuestion, Outcome, Question, Refusal, ReplyRecord,
    Status, from_row, record_from_row,
};
use crate::store::{Result, Store, new_id};

/// Read one question on `conn`.
pub(super) async fn get_on(conn: &mut PgConnection, id: &str) -> Result<Option<Question>> {
    let row = sqlx::query("SELECT * FROM questions WHERE id = $1")
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Read one question on `conn` and lock its row until the transaction
/// ends, so nothing changes it between the read and what follows.
pub(super) async fn lock_on(conn: &mut PgConnection, id: &str) -> Result<Option<Question>> {
    let row = sqlx::query("SELECT * FROM questions WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Why a guarded `… AND status = 'open'` write was refused, from the row
/// as read under its lock (`None`: no such question).
pub(super) fn explain_closed(q: Option<&Question>) -> Refusal {
    match q {
        None => Refusal::NotFound,
        Some(q) => Refusal::NotOpen { status: q.status },
    }
}

/// Flag (or update by key) one question: one upsert whose triggers append
/// `question.flagged` (a new row) or `question.updated` (bumped in place).
pub(crate) async fn flag(
    s: &Store,
    pg: &Pg,
    q: Arc<NewQuestion>,
    options: Arc<String>,
    choice: Choice,
) -> Result<Flagged> {
    s.pg_write(pg, (q, options), move |conn, (q, options), now| {
        Box::pin(async move { flag_in(conn, &q, &options, choice, now).await })
    })
    .await
}

async fn flag_in(
    conn: &mut PgConnection,
    q: &NewQuestion,
    options: &str,
    choice: Choice,
    now: i64,
) -> Result<Flagged> {
    let id = new_id();
    // Why one upsert: the partial unique index on (project, key) over open
    // questions decides "create or update" inside the engine; a second
    // agent flagging the same key at once waits for the first's insert and
    // then updates it, so there are never twins.
    let row = sqlx::query(
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
    .bind(&id)
    .bind(&q.project)
    .bind(&q.agent)
    .bind(&q.session)
    .bind(q.key.as_deref())
    .bind(&q.title)
    .bind(&q.detail)
    .bind(&q.context)
    .bind(options)
    .bind(choice.as_str())
    .bind(now)
    .fetch_one(conn)
    .await?;
    let question = from_row(&row)?;
    Ok(Flagged {
        created: question.id == id,
        question,
    })
}

/// What a [`Change`] sets on the open question.
#[derive(Clone, Debug)]
pub(crate) enum Set {
    /// Close it as `status` (resolved or dismissed) with an outcome.
    Close {
        status: Status,
        outcome: Option<String>,
    },
    /// Hide it until then (`None`: wake it).
    Snooze { until: Option<i64> },
}

/// One change to an open question that logs an event and no history row.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub(crate) id: String,
    pub(crate) kind: &'static str,
    pub(crate) by: String,
    pub(crate) channel: Channel,
    /// The event payload (JSON).
    pub(crate) payload: String,
    pub(crate) set: Set,
}

/// Apply `c` to the open question `c.id`: one guarded UPDATE whose
/// trigger appends its event.
pub(crate) async fn change(s: &Store, pg: &Pg, c: Change) -> Result<Outcome<Question>> {
    s.pg_write(pg, Arc::new(c), |conn, c, now| {
        Box::pin(async move {
            if let Some(q) = change_once(conn, &c, now).await? {
                return Ok(Ok(q));
            }
            let locked = lock_on(conn, &c.id).await?;
            if let Some(q) = change_once(conn, &c, now).await? {
                return Ok(Ok(q));
            }
            Ok(Err(explain_closed(locked.as_ref())))
        })
    })
    .await
}

async fn change_once(conn: &mut PgConnection, c: &Change, now: i64) -> Result<Option<Question>> {
    // Why guarded on status: nothing reopens, and of two closers racing
    // (the agent resolving, a human dismissing) exactly one wins; snoozing
    // a closed question would be a silent no-op the human never learns of.
    const LOG: &str = "updated_at = $1, t_seq = t_seq + 1, t_at = $1, t_event = $3,
        t_history = NULL, t_actor = $4, t_channel = $5, t_payload = $6";
    let query = match &c.set {
        Set::Close { status, outcome } => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE questions SET status = $7, outcome = $8, resolved_at = $1, {LOG}
             WHERE id = $2 AND status = 'open' RETURNING *"
        )))
        .bind(now)
        .bind(&c.id)
        .bind(c.kind)
        .bind(&c.by)
        .bind(c.channel.as_str())
        .bind(&c.payload)
        .bind(status.as_str())
        .bind(outcome.as_deref()),
        Set::Snooze { until } => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE questions SET snoozed_until = $7, {LOG}
             WHERE id = $2 AND status = 'open' RETURNING *"
        )))
        .bind(now)
        .bind(&c.id)
        .bind(c.kind)
        .bind(&c.by)
        .bind(c.channel.as_str())
        .bind(&c.payload)
        .bind(*until),
    };
    let row = query.fetch_optional(conn).await?;
    row.as_ref().map(from_row).transpose()
}

/// One toggle of a multiple choice's option, owned for the retries.
#[derive(Clone, Debug)]
pub(crate) struct Toggle {
    pub(crate) id: String,
    pub(crate) option: u8,
    pub(crate) expected_revision: i64,
    pub(crate) by: String,
    pub(crate) via: Channel,
}

/// Flip one option of an open multiple choice drawn at a revision.
pub(crate) async fn toggle(s: &Store, pg: &Pg, t: Toggle) -> Result<Outcome<Question>> {
    s.pg_write(pg, Arc::new(t), |conn, t, now| {
        Box::pin(async move {
            if let Some(q) = toggle_once(conn, &t, now).await? {
                return Ok(Ok(q));
            }
            let Some(q) = lock_on(conn, &t.id).await? else {
                return Ok(Err(Refusal::NotFound));
            };
            if let Some(q) = toggle_once(conn, &t, now).await? {
                return Ok(Ok(q));
            }
            if q.status != Status::Open {
                return Ok(Err(explain_closed(Some(&q))));
            }
            if let Some(r) = q.reply.filter(|r| r.seen_at.is_none()) {
                return Ok(Err(Refusal::UnreadAnswer {
                    reply: r.text,
                    kind: r.kind,
                    source: r.source,
                    by: r.by,
                }));
            }
            // A stale drawing, or a button this card does not have.
            Ok(Err(Refusal::Stale {
                current_revision: q.revision,
            }))
        })
    })
    .await
}

async fn toggle_once(conn: &mut PgConnection, t: &Toggle, now: i64) -> Result<Option<Question>> {
    let bit: i64 = 1 << t.option.min(62);
    // Why this predicate: see `questions/pick.rs` (the card it was drawn
    // on, open, a multiple choice with such an option, no answer waiting).
    let row = sqlx::query(
        "UPDATE questions SET picked = picked # $3, revision = revision + 1,
             updated_at = $1, t_seq = t_seq + 1, t_at = $1, t_event = 'question.toggled',
             t_history = NULL, t_by = $5, t_actor = $6, t_channel = $7,
             t_payload = handoff_json_set(json_build_object(
                 'option', $8, 'picked', picked # $3, 'revision', revision + 1, 'by', $5)::text,
                 '{}', '{}')
         WHERE id = $2 AND status = 'open' AND choice = 'many' AND revision = $4
           AND $8 < json_array_length(options::json)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL)
         RETURNING *",
    )
    .bind(now)
    .bind(&t.id)
    .bind(bit)
    .bind(t.expected_revision)
    .bind(&t.by)
    .bind(if t.by.is_empty() {
        t.via.as_str()
    } else {
        &t.by
    })
    .bind(t.via.as_str())
    .bind(i64::from(t.option))
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// One question by its full id.
pub(crate) async fn get(pg: &Pg, id: &str) -> Result<Option<Question>> {
    let mut conn = pg.pool().acquire().await?;
    get_on(&mut conn, id).await
}

/// Up to 3 ids equal to `s` or ending with it (at least 4 characters).
pub(crate) async fn ids_like(pg: &Pg, s: &str) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM questions WHERE id = $1
         UNION
         SELECT id FROM questions WHERE length($1) >= 4 AND right(id, length($1)) = $1
         LIMIT 3",
    )
    .bind(s)
    .fetch_all(pg.pool())
    .await?)
}

/// Questions matching `filter` (awake ones as of `now`), oldest first.
pub(crate) async fn list(pg: &Pg, filter: &ListFilter, now: i64) -> Result<Vec<Question>> {
    let rows = sqlx::query(
        "SELECT * FROM questions
         WHERE ($1::TEXT IS NULL OR status = $1)
           AND ($2::TEXT IS NULL OR project = $2)
           AND ($3::TEXT IS NULL OR session = $3)
           AND (NOT $4 OR snoozed_until IS NULL OR snoozed_until <= $5)
         ORDER BY created_at, id COLLATE \"C\"
         LIMIT $6",
    )
    .bind(filter.status.map(|s| s.as_str()))
    .bind(filter.project.as_deref())
    .bind(filter.session.as_deref())
    .bind(filter.awake_only)
    .bind(now)
    // SQLite reads a negative LIMIT as none; PostgreSQL reads NULL so.
    .bind(filter.limit.filter(|n| *n >= 0))
    .fetch_all(pg.pool())
    .await?;
    rows.iter().map(from_row).collect()
}

/// The append-only reply history of one question, oldest first.
pub(crate) async fn replies(pg: &Pg, id: &str) -> Result<Vec<ReplyRecord>> {
    let rows = sqlx::query("SELECT * FROM question_replies WHERE question_id = $1 ORDER BY seq")
        .bind(id)
        .fetch_all(pg.pool())
        .await?;
    rows.iter().map(record_from_row).collect()
}
