//! Agent sessions' writes on PostgreSQL: register, checkpoint (CAS on
//! `revision`), end, the `wait` cursor and inbound wakes, each the body of
//! a write its SQLite twin in `sessions/` runs beside it (through
//! `Store::write_split`). The rules are the same; what differs is the
//! shape of a write.
//!
//! SQLite runs each of these as one multi-statement call whose event
//! insert is guarded by `changes()`. Here the statements run one after
//! another in the write's own transaction (`write.rs`): the guarded
//! `UPDATE … RETURNING` (or upsert) first, and the event appended last,
//! only when it returned a row, with the payload text SQLite's
//! `json_object` writes (the same members in the same order, compact). A
//! failed event aborts the transaction, so the change goes with it, as
//! SQLite's savepoint makes it. A refused checkpoint or end is tried once
//! more under `SELECT … FOR UPDATE` (see `store/questions/reply.rs`), so the refusal
//! names the state that refused it.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use sqlx::PgConnection;

use super::{Checkpointed, Ended, Session, WakeRecorded, register_upsert, session_from};
use crate::store::{Error, Result};

/// One event to append, every column as text but `at`.
struct Append<'a> {
    kind: &'a str,
    entity_kind: &'a str,
    entity_id: &'a str,
    actor: &'a str,
    channel: &'a str,
    project: &'a str,
    session: &'a str,
    /// Compact JSON, exactly as SQLite would store it.
    payload: &'a str,
}

/// Append `e` at `at`; its seq. Called last in a transaction: the seq
/// counter's row stays locked until commit.
async fn append(conn: &mut PgConnection, at: i64, e: &Append<'_>) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq",
    )
    .bind(at)
    .bind(e.kind)
    .bind(e.entity_kind)
    .bind(e.entity_id)
    .bind(e.actor)
    .bind(e.channel)
    .bind(e.project)
    .bind(e.session)
    .bind(e.payload)
    .fetch_one(conn)
    .await?)
}

/// Append a session event about `s`, by `actor` through the agent's door.
async fn session_event(
    conn: &mut PgConnection,
    at: i64,
    kind: &str,
    s: &Session,
    actor: &str,
    payload: &str,
) -> Result<i64> {
    let e = Append {
        kind,
        entity_kind: "session",
        entity_id: &s.session_id,
        actor,
        channel: "agent",
        project: &s.project,
        session: &s.session_id,
        payload,
    };
    append(conn, at, &e).await
}

/// One session on `conn`, with its row locked when `lock`.
async fn get_on(conn: &mut PgConnection, id: &str, lock: bool) -> Result<Option<Session>> {
    let sql = if lock {
        "SELECT * FROM agent_sessions WHERE session_id = $1 FOR UPDATE"
    } else {
        "SELECT * FROM agent_sessions WHERE session_id = $1"
    };
    let row = sqlx::query(sql).bind(id).fetch_optional(conn).await?;
    row.as_ref().map(session_from).transpose()
}

/// What registering writes: id, agent, project, cwd, wake target (JSON), host.
pub(super) type Registration = Arc<(String, String, String, String, Option<String>, String)>;

/// Register or update a session, and append `session.registered`; `None`
/// when its home is another project (see `sessions/home.rs`).
pub(super) fn register(
    conn: &mut PgConnection,
    input: Registration,
    now: i64,
) -> BoxFuture<'_, Result<Option<Session>>> {
    Box::pin(async move {
        let (id, agent, project, cwd, wake, host) = &*input;
        // Why guarded: a session keeps its home (see SQLite's twin).
        let row = sqlx::query(register_upsert!())
            .bind(id)
            .bind(agent)
            .bind(project)
            .bind(cwd)
            .bind(wake.as_deref())
            .bind(now)
            .bind(host)
            .fetch_optional(&mut *conn)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let session = session_from(&row)?;
        // SQLite's json_object('wake', json_extract(wake_target, '$.type')):
        // the kind of the target as stored, null without one.
        let kind = session
            .wake_target
            .as_ref()
            .map(crate::store::sessions::target_kind);
        let payload = serde_json::json!({ "wake": kind }).to_string();
        // The actor is the registering agent as given (the row's, too).
        let agent = session.agent.clone();
        session_event(conn, now, "session.registered", &session, &agent, &payload).await?;
        Ok(Some(session))
    })
}

/// The checkpoint's guarded UPDATE: the session after it, or `None`.
async fn checkpoint_once(
    conn: &mut PgConnection,
    id: &str,
    expected: i64,
    state: &str,
    now: i64,
) -> Result<Option<Session>> {
    // Why guarded on revision: two writers holding the same revision must
    // not both win (see `sessions/lifecycle.rs`).
    let row = sqlx::query(
        "UPDATE agent_sessions SET state_blob = $1, revision = revision + 1, updated_at = $2
         WHERE session_id = $3 AND revision = $4 AND status <> 'ended'
         RETURNING *",
    )
    .bind(state)
    .bind(now)
    .bind(id)
    .bind(expected)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(session_from).transpose()
}

/// Store a checkpoint if the revision is still `expected`, appending
/// `session.checkpointed`; a refusal says why.
pub(super) fn checkpoint(
    conn: &mut PgConnection,
    input: Arc<(String, String)>,
    expected: i64,
    now: i64,
) -> BoxFuture<'_, Result<Checkpointed>> {
    Box::pin(async move {
        let (id, state) = &*input;
        let mut saved = checkpoint_once(conn, id, expected, state, now).await?;
        let mut locked = None;
        if saved.is_none() {
            locked = get_on(conn, id, true).await?;
            saved = checkpoint_once(conn, id, expected, state, now).await?;
        }
        let Some(session) = saved else {
            return Ok(match locked {
                None => Checkpointed::NotFound,
                Some(s) if s.status == "ended" => Checkpointed::Ended { session: s },
                Some(s) => Checkpointed::Stale {
                    expected,
                    current: s.revision,
                },
            });
        };
        let payload = format!(
            r#"{{"bytes":{},"revision":{}}}"#,
            state.len(),
            session.revision
        );
        let agent = session.agent.clone();
        session_event(
            conn,
            now,
            "session.checkpointed",
            &session,
            &agent,
            &payload,
        )
        .await?;
        Ok(Checkpointed::Saved { session })
    })
}

async fn end_once(conn: &mut PgConnection, id: &str, now: i64) -> Result<Option<Session>> {
    let row = sqlx::query(
        "UPDATE agent_sessions SET status = 'ended', ended_at = $1, updated_at = $1
         WHERE session_id = $2 AND status <> 'ended' RETURNING *",
    )
    .bind(now)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(session_from).transpose()
}

/// End a session, appending `session.ended`; ending twice says so.
pub(super) fn end(
    conn: &mut PgConnection,
    id: Arc<String>,
    now: i64,
) -> BoxFuture<'_, Result<Ended>> {
    Box::pin(async move {
        let mut ended = end_once(conn, &id, now).await?;
        let mut locked = None;
        if ended.is_none() {
            locked = get_on(conn, &id, true).await?;
            ended = end_once(conn, &id, now).await?;
        }
        let Some(session) = ended else {
            return Ok(match locked {
                None => Ended::NotFound,
                Some(session) => Ended::AlreadyEnded { session },
            });
        };
        let agent = session.agent.clone();
        session_event(conn, now, "session.ended", &session, &agent, "{}").await?;
        Ok(Ended::Ended { session })
    })
}

/// Move the wait cursor from `from` to `to` (a bare row when the session
/// never registered), appending `session.picked_up`; false when another
/// waiter moved it first.
pub(super) fn advance_cursor(
    conn: &mut PgConnection,
    input: Arc<(String, String)>,
    (from, to): (i64, i64),
    now: i64,
) -> BoxFuture<'_, Result<bool>> {
    Box::pin(async move {
        let (id, by) = &*input;
        // Why guarded on the old value: this is the claim. A racing
        // waiter waits for this row's lock, then finds the cursor
        // moved and changes nothing.
        let row: Option<(String,)> = sqlx::query_as(
            "INSERT INTO agent_sessions (session_id, created_at, updated_at, last_wait_seq)
                 VALUES ($1, $2, $2, $4)
                 ON CONFLICT (session_id) DO UPDATE SET last_wait_seq = excluded.last_wait_seq
                 WHERE agent_sessions.last_wait_seq = $3
                 RETURNING project",
        )
        .bind(id)
        .bind(now)
        .bind(from)
        .bind(to)
        .fetch_optional(&mut *conn)
        .await?;
        let Some((project,)) = row else {
            return Ok(false);
        };
        let payload = format!(r#"{{"from":{from},"to":{to}}}"#);
        append(
            conn,
            now,
            &Append {
                kind: "session.picked_up",
                entity_kind: "session",
                entity_id: id,
                actor: by,
                channel: "agent",
                project: &project,
                session: id,
                payload: &payload,
            },
        )
        .await?;
        Ok(true)
    })
}

/// What recording a wake writes: session, source, delivery id, payload.
pub(super) type Wake = Arc<(String, String, String, String)>;

/// Record an inbound wake once per (source, delivery id): the row, its
/// `session.wake` event, and the event's seq on the row; a replay reads
/// the first delivery's seq.
pub(super) fn record_wake(
    conn: &mut PgConnection,
    input: Wake,
    now: i64,
) -> BoxFuture<'_, Result<WakeRecorded>> {
    Box::pin(async move {
        let (session, source, delivery, payload) = &*input;
        // Why ON CONFLICT DO NOTHING: the UNIQUE(source, delivery_id)
        // index decides whether this delivery is new; a racing twin
        // waits for the first one's commit and then inserts nothing.
        let new = sqlx::query(
            "INSERT INTO session_wakes (source, delivery_id, session_id, at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (source, delivery_id) DO NOTHING",
        )
        .bind(source)
        .bind(delivery)
        .bind(session)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
            == 1;
        if !new {
            // Committed with its seq: the first delivery's transaction
            // stamped it before it committed.
            let seq: i64 = sqlx::query_scalar(
                "SELECT event_seq FROM session_wakes WHERE source = $1 AND delivery_id = $2",
            )
            .bind(source)
            .bind(delivery)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or_else(|| Error::Corrupt("a recorded wake vanished".into()))?;
            return Ok(WakeRecorded { new, seq });
        }
        let project: String = sqlx::query_scalar(
            "SELECT COALESCE((SELECT project FROM agent_sessions WHERE session_id = $1), '')",
        )
        .bind(session)
        .fetch_one(&mut *conn)
        .await?;
        let seq = append(
            conn,
            now,
            &Append {
                kind: "session.wake",
                entity_kind: "session",
                entity_id: session,
                actor: source,
                channel: "webhook",
                project: &project,
                session,
                payload,
            },
        )
        .await?;
        // The stamp follows the append (its seq is known only now); the
        // row is this transaction's own, so it waits on nobody.
        sqlx::query(
            "UPDATE session_wakes SET event_seq = $3 WHERE source = $1 AND delivery_id = $2",
        )
        .bind(source)
        .bind(delivery)
        .bind(seq)
        .execute(&mut *conn)
        .await?;
        Ok(WakeRecorded { new, seq })
    })
}
