//! The chat bridge's writes on PostgreSQL that are more than one
//! statement (using a pairing code) or append an event from Rust (a
//! refused tap); the single statements run on either engine from
//! `store/chat.rs`. [`append`] is SQLite's `events::append` on a
//! PostgreSQL connection, for any ported write that appends its own event.

use std::sync::Arc;

use sqlx::PgConnection;

use super::Pg;
use crate::store::chat::{PAIRING_ADMIT, PAIRING_TTL_MS, PAIRING_USE, paired};
use crate::store::events::check_depth;
use crate::store::{Channel, NewEvent, Result, Store};

/// Append `ev` at time `at` inside the transaction on `conn`, last in it
/// (the event counter's row stays locked until commit). The payload is
/// serialised by Rust on both engines, so its text is SQLite's byte for byte.
pub(crate) async fn append(conn: &mut PgConnection, at: i64, ev: &NewEvent<'_>) -> Result<i64> {
    check_depth(&ev.payload)?;
    let row = crate::store::events::bind_append(sqlx::query(crate::store::events::APPEND), at, ev)
        .fetch_one(conn)
        .await?;
    Ok(sqlx::Row::try_get(&row, 0)?)
}

/// An event with owned fields, so a retried transaction can append it again.
#[derive(Clone)]
struct Owned {
    kind: String,
    entity_kind: String,
    entity_id: String,
    actor: String,
    channel: Channel,
    project: String,
    session: String,
    payload: serde_json::Value,
}

/// Append one event at `now` in a transaction of its own.
pub(crate) async fn event(s: &Store, pg: &Pg, now: i64, ev: &NewEvent<'_>) -> Result<()> {
    let owned = Arc::new(Owned {
        kind: ev.kind.into(),
        entity_kind: ev.entity_kind.into(),
        entity_id: ev.entity_id.into(),
        actor: ev.actor.into(),
        channel: ev.channel,
        project: ev.project.into(),
        session: ev.session.into(),
        payload: ev.payload.clone(),
    });
    s.pg_write(pg, owned, move |conn, ev, _| {
        Box::pin(async move {
            let ev = NewEvent {
                kind: &ev.kind,
                entity_kind: &ev.entity_kind,
                entity_id: &ev.entity_id,
                actor: &ev.actor,
                channel: ev.channel,
                project: &ev.project,
                session: &ev.session,
                payload: ev.payload.clone(),
            };
            append(conn, now, &ev).await.map(drop)
        })
    })
    .await
}

/// [`Store::pairing_use`] on PostgreSQL: the guarded UPDATE makes the code
/// single-use (a second `pair` racing on the same code waits for the
/// first's row lock, re-checks `used_at IS NULL` and changes nothing).
pub(crate) async fn pairing_use(
    s: &Store,
    pg: &Pg,
    code: String,
    role: String,
) -> Result<Option<(i64, i64, String)>> {
    s.pg_write(pg, Arc::new((code, role)), move |conn, input, now| {
        Box::pin(async move {
            let (code, role) = &*input;
            let row: Option<(i64, i64, String)> = sqlx::query_as(PAIRING_USE)
                .bind(now)
                .bind(code)
                .bind(now - PAIRING_TTL_MS)
                .fetch_optional(&mut *conn)
                .await?;
            let Some((user, chat, name)) = row else {
                return Ok(None);
            };
            sqlx::query(PAIRING_ADMIT)
                .bind(chat)
                .bind(user)
                .bind(role)
                .bind(now)
                .execute(&mut *conn)
                .await?;
            let (chat_s, user_s) = (chat.to_string(), user.to_string());
            append(conn, now, &paired(&chat_s, &user_s, user, role, &name)).await?;
            Ok(Some((user, chat, name)))
        })
    })
    .await
}
