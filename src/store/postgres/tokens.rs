//! API tokens and Inbox sign-ins on PostgreSQL: the statements of
//! `store/tokens.rs` and `store/inbox_sessions.rs` in PostgreSQL's spelling
//! (`$N` placeholders; `right()` for SQLite's negative `substr`), each
//! write a transaction of its own ([`Store::pg_write`]) that appends its
//! event last. The guards are SQLite's: the partial unique index on live
//! names decides two creators of one name; `revoked_at IS NULL` /
//! `used_at IS NULL` make a revocation, a logout and a login code count
//! once (a racing second writer waits for the first's row lock, re-checks
//! the guard on the new row and changes nothing).

use std::sync::Arc;

use super::Pg;
use super::write::append;
use crate::store::inbox_sessions::{self, InboxSession, Login, LoginLink, session_from};
use crate::store::tokens::{
    Role, Token, constant_time_eq, name_taken, several, token_event, token_from,
};
use crate::store::{Result, Store, new_id};

/// [`Store::token_create`] after its checks: the new token, or a refusal
/// when a live one has the name.
pub(crate) async fn create(
    s: &Store,
    pg: &Pg,
    name: &str,
    role: Role,
    project: Option<&str>,
    digest: &str,
) -> Result<Token> {
    let input = Arc::new((
        name.to_string(),
        project.map(str::to_string),
        digest.to_string(),
    ));
    s.pg_write(pg, input, move |conn, input, now| {
        Box::pin(async move {
            let (name, project, digest) = &*input;
            let row = sqlx::query(
                "INSERT INTO api_tokens (id, name, role, project, hash, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT DO NOTHING RETURNING *",
            )
            .bind(new_id())
            .bind(name)
            .bind(role.as_str())
            .bind(project.as_deref())
            .bind(digest)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
            let Some(row) = row else {
                return Err(name_taken(name));
            };
            let token = token_from(&row)?;
            append(conn, now, &token_event("token.created", &token)).await?;
            Ok(token)
        })
    })
    .await
}

/// Every token, oldest first (ties by id in byte order, as SQLite sorts).
pub(crate) async fn list(pg: &Pg) -> Result<Vec<Token>> {
    let rows = sqlx::query("SELECT * FROM api_tokens ORDER BY created_at, id COLLATE \"C\"")
        .fetch_all(pg.pool())
        .await?;
    rows.iter().map(token_from).collect()
}

/// Whether a token acts as `name` (see [`Store::token_name_exists`]).
pub(crate) async fn name_exists(pg: &Pg, name: &str) -> Result<bool> {
    Ok(
        sqlx::query_scalar("SELECT EXISTS(SELECT 1 FROM api_tokens WHERE name = $1)")
            .bind(name)
            .fetch_one(pg.pool())
            .await?,
    )
}

/// [`Store::token_revoke`] after its checks. Several matches: refused, and
/// the transaction (its revocations) rolled back.
pub(crate) async fn revoke(s: &Store, pg: &Pg, key: &str) -> Result<Option<Token>> {
    s.pg_write(pg, Arc::new(key.to_string()), move |conn, key, now| {
        Box::pin(async move {
            let rows = sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1
                 WHERE revoked_at IS NULL
                   AND (name = $2 OR id = $2 OR (length($2) >= 8 AND right(id, length($2)) = $2))
                 RETURNING *",
            )
            .bind(now)
            .bind(&*key)
            .fetch_all(&mut *conn)
            .await?;
            match rows.as_slice() {
                [] => Ok(None),
                [one] => {
                    let token = token_from(one)?;
                    append(conn, now, &token_event("token.revoked", &token)).await?;
                    Ok(Some(token))
                }
                _ => Err(several(&key)),
            }
        })
    })
    .await
}

/// The live token whose secret hashes to `digest`.
pub(crate) async fn verify(pg: &Pg, digest: &str) -> Result<Option<Token>> {
    let row = sqlx::query("SELECT * FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL")
        .bind(digest)
        .fetch_optional(pg.pool())
        .await?;
    let Some(row) = row else { return Ok(None) };
    let stored: String = sqlx::Row::try_get(&row, "hash")?;
    // As on SQLite: the decision itself takes the same time for every hash.
    if !constant_time_eq(stored.as_bytes(), digest.as_bytes()) {
        return Ok(None);
    }
    token_from(&row).map(Some)
}

/// Whether any live token exists.
pub(crate) async fn exist(pg: &Pg) -> Result<bool> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_tokens WHERE revoked_at IS NULL")
        .fetch_one(pg.pool())
        .await?;
    Ok(n > 0)
}

/// [`Store::inbox_link_create`] after its checks: stores the code's hash.
/// Why the code is added after the write: a write under a request id
/// remembers its value in `requests`, and the code must not be stored.
pub(crate) async fn link_create(
    s: &Store,
    pg: &Pg,
    name: &str,
    ttl_ms: i64,
    code: &str,
    digest: &str,
) -> Result<LoginLink> {
    let input = Arc::new((name.to_string(), digest.to_string()));
    let (id, created_at) = s
        .pg_write(pg, input, move |conn, input, now| {
            Box::pin(async move {
                let (name, digest) = &*input;
                let id = new_id();
                sqlx::query(
                    "INSERT INTO inbox_login_codes (id, hash, name, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(&id)
                .bind(digest)
                .bind(name)
                .bind(now)
                .bind(now + ttl_ms)
                .execute(&mut *conn)
                .await?;
                append(
                    conn,
                    now,
                    &inbox_sessions::event("inbox.link_created", &id, name),
                )
                .await?;
                Ok((id, now))
            })
        })
        .await?;
    Ok(LoginLink {
        id,
        name: name.to_string(),
        code: code.to_string(),
        created_at,
        expires_at: created_at + ttl_ms,
    })
}

/// [`Store::inbox_login`] after its checks: the session opened with the
/// cookie hash `secret_hash`, or why the code was refused.
pub(crate) async fn login(
    s: &Store,
    pg: &Pg,
    digest: &str,
    secret_hash: &str,
    session_ttl_ms: i64,
) -> Result<Result<InboxSession, Login>> {
    let input = Arc::new((digest.to_string(), secret_hash.to_string()));
    s.pg_write(pg, input, move |conn, input, now| {
        Box::pin(async move {
            let (digest, secret_hash) = &*input;
            let row: Option<(String, String)> = sqlx::query_as(
                "UPDATE inbox_login_codes SET used_at = $1
                 WHERE hash = $2 AND used_at IS NULL AND expires_at > $1
                 RETURNING id, name",
            )
            .bind(now)
            .bind(digest)
            .fetch_optional(&mut *conn)
            .await?;
            let Some((code_id, name)) = row else {
                // Read under the row lock, so the reason is the state that
                // refused (see `questions.rs`).
                let used: Option<Option<i64>> = sqlx::query_scalar(
                    "SELECT used_at FROM inbox_login_codes WHERE hash = $1 FOR UPDATE",
                )
                .bind(digest)
                .fetch_optional(&mut *conn)
                .await?;
                return Ok(Err(match used {
                    None => Login::Unknown,
                    Some(Some(_)) => Login::Used,
                    Some(None) => Login::Expired,
                }));
            };
            let session = InboxSession {
                id: new_id(),
                name,
                created_at: now,
                expires_at: now + session_ttl_ms,
            };
            sqlx::query(
                "INSERT INTO inbox_sessions (id, hash, name, code_id, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&session.id)
            .bind(secret_hash)
            .bind(&session.name)
            .bind(&code_id)
            .bind(session.created_at)
            .bind(session.expires_at)
            .execute(&mut *conn)
            .await?;
            append(
                conn,
                now,
                &inbox_sessions::event("inbox.login", &session.id, &session.name),
            )
            .await?;
            Ok(Ok(session))
        })
    })
    .await
}

/// The live session whose cookie hashes to `digest` at `now`.
pub(crate) async fn session_verify(
    pg: &Pg,
    digest: &str,
    now: i64,
) -> Result<Option<InboxSession>> {
    let row = sqlx::query(
        "SELECT * FROM inbox_sessions WHERE hash = $1 AND revoked_at IS NULL AND expires_at > $2",
    )
    .bind(digest)
    .bind(now)
    .fetch_optional(pg.pool())
    .await?;
    row.as_ref().map(session_from).transpose()
}

/// End the live session whose cookie hashes to `digest`.
pub(crate) async fn logout(s: &Store, pg: &Pg, digest: &str) -> Result<bool> {
    s.pg_write(
        pg,
        Arc::new(digest.to_string()),
        move |conn, digest, now| {
            Box::pin(async move {
                let row = sqlx::query(
                    "UPDATE inbox_sessions SET revoked_at = $1
                 WHERE hash = $2 AND revoked_at IS NULL RETURNING *",
                )
                .bind(now)
                .bind(&*digest)
                .fetch_optional(&mut *conn)
                .await?;
                let Some(row) = row else { return Ok(false) };
                let session = session_from(&row)?;
                append(
                    conn,
                    now,
                    &inbox_sessions::event("inbox.logout", &session.id, &session.name),
                )
                .await?;
                Ok(true)
            })
        },
    )
    .await
}
