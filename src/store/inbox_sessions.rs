//! Web Inbox logins: one-time login codes and the browser sessions they open.
//!
//! `handoff inbox-link` creates a code (32 random bytes, hex) that works
//! once, until it expires. Visiting the link trades the code for a session:
//! one transaction whose guarded UPDATE marks the code used — so two tabs
//! racing on one link open exactly one session — and inserts the session.
//! The store keeps only SHA-256 hashes of codes and session cookies. A
//! session acts as the name given at `inbox-link --as`; what it may do is
//! the API's business, not this module's.

use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::postgres::tokens as pg_auth;
use super::{Engine, Error, NewEvent, Result, Store, events, new_id};
use crate::store::Channel;

/// How long a browser session lasts.
pub const SESSION_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

/// Longest a login link may stay valid.
pub const MAX_LINK_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

/// Longest session name.
const MAX_NAME: usize = 64;

/// A freshly created login link: the only time its code exists outside the caller.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LoginLink {
    /// Full id of the code.
    pub id: String,
    /// The name the session will act as.
    pub name: String,
    /// The one-time code (hex); only its hash is stored.
    pub code: String,
    /// When the login link was made.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// The code is refused from this moment on.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "crate::clock::Timestamp")]
    pub expires_at: i64,
}

/// A browser session, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct InboxSession {
    /// The session's id (its cookie carries the secret, not this).
    pub id: String,
    /// Who the session acts as (recorded as `by`).
    pub name: String,
    /// When the login link was redeemed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Refused from this moment on.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "crate::clock::Timestamp")]
    pub expires_at: i64,
}

/// What visiting a login link did.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "login", rename_all = "snake_case")]
pub enum Login {
    /// A session was opened; `secret` goes into the cookie and nowhere else.
    Opened {
        /// The new session (its id, expiry and who opened it).
        session: InboxSession,
        /// The cookie value.
        #[serde(skip)]
        secret: String,
    },
    /// The code was used already (links work once).
    Used,
    /// The code expired unused.
    Expired,
    /// No such code.
    Unknown,
}

/// Hex SHA-256 of a code or cookie value.
fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 32 random bytes from the OS, as hex.
fn random_hex() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Invalid(format!("the OS gave no randomness: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A presented code or cookie is 64 lowercase hex digits; anything else
/// is not looked up at all.
fn plausible(secret: &str) -> bool {
    secret.len() == 64
        && secret
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A stored session row as an [`InboxSession`], on either engine.
pub(super) fn session_from<'r, R>(r: &'r R) -> Result<InboxSession>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(InboxSession {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        created_at: r.try_get("created_at")?,
        expires_at: r.try_get("expires_at")?,
    })
}

impl Store {
    /// Create a one-time login code for a session acting as `name`, valid
    /// for `ttl_ms`.
    pub async fn inbox_link_create(&self, name: &str, ttl_ms: i64) -> Result<LoginLink> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control)
        {
            return Err(Error::Invalid(format!(
                "--as takes a name of 1 to {MAX_NAME} printable characters"
            )));
        }
        if !(1..=MAX_LINK_TTL_MS).contains(&ttl_ms) {
            return Err(Error::Invalid(
                "--ttl must be positive and at most 7 days (e.g. 10m)".into(),
            ));
        }
        let code = random_hex()?;
        let digest = hash(&code);
        if let Engine::Postgres(pg) = self.engine() {
            return pg_auth::link_create(self, pg, name, ttl_ms, &code, &digest).await;
        }
        self.retry(|| async {
            let now = self.now();
            let id = new_id();
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO inbox_login_codes (id, hash, name, created_at, expires_at)
                 VALUES (?, ?, ?, ?, ?)",
            )
            .bind(&id)
            .bind(&digest)
            .bind(name)
            .bind(now)
            .bind(now + ttl_ms)
            .execute(&mut *tx)
            .await?;
            append_event(&mut tx, now, "inbox.link_created", &id, name).await?;
            tx.commit().await?;
            Ok(LoginLink {
                id,
                name: name.to_string(),
                code: code.clone(),
                created_at: now,
                expires_at: now + ttl_ms,
            })
        })
        .await
    }

    /// Trade `code` for a session lasting `session_ttl_ms`. A code works
    /// once and only before it expires; a refusal says which rule applied.
    pub async fn inbox_login(&self, code: &str, session_ttl_ms: i64) -> Result<Login> {
        let code = code.trim();
        if !plausible(code) {
            return Ok(Login::Unknown);
        }
        let digest = hash(code);
        let secret = random_hex()?;
        let secret_hash = hash(&secret);
        if let Engine::Postgres(pg) = self.engine() {
            return Ok(
                match pg_auth::login(self, pg, &digest, &secret_hash, session_ttl_ms).await? {
                    Ok(session) => Login::Opened { session, secret },
                    Err(refused) => refused,
                },
            );
        }
        let opened = self
            .retry(|| async {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                // Why guarded on used_at IS NULL and the expiry: the UPDATE
                // decides; of two visits racing on one link exactly one
                // marks the code used, and a code at its expiry ms is refused.
                let row = sqlx::query(
                    "UPDATE inbox_login_codes SET used_at = ?1
                     WHERE hash = ?2 AND used_at IS NULL AND expires_at > ?1
                     RETURNING id, name",
                )
                .bind(now)
                .bind(&digest)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = row else { return Ok(None) };
                let code_id: String = row.try_get("id")?;
                let name: String = row.try_get("name")?;
                let session = InboxSession {
                    id: new_id(),
                    name,
                    created_at: now,
                    expires_at: now + session_ttl_ms,
                };
                sqlx::query(
                    "INSERT INTO inbox_sessions (id, hash, name, code_id, created_at, expires_at)
                     VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(&session.id)
                .bind(&secret_hash)
                .bind(&session.name)
                .bind(&code_id)
                .bind(session.created_at)
                .bind(session.expires_at)
                .execute(&mut *tx)
                .await?;
                append_event(&mut tx, now, "inbox.login", &session.id, &session.name).await?;
                tx.commit().await?;
                Ok(Some(session))
            })
            .await?;
        if let Some(session) = opened {
            return Ok(Login::Opened {
                session,
                secret: secret.clone(),
            });
        }
        // Refused: read afterwards only to say why.
        let used: Option<Option<i64>> =
            sqlx::query_scalar("SELECT used_at FROM inbox_login_codes WHERE hash = ?")
                .bind(&digest)
                .fetch_optional(self.pool()?)
                .await?;
        Ok(match used {
            None => Login::Unknown,
            Some(Some(_)) => Login::Used,
            Some(None) => Login::Expired,
        })
    }

    /// The live session whose cookie value is `secret`, if any.
    pub async fn inbox_session_verify(&self, secret: &str) -> Result<Option<InboxSession>> {
        if !plausible(secret) {
            return Ok(None);
        }
        if let Engine::Postgres(pg) = self.engine() {
            return pg_auth::session_verify(pg, &hash(secret), self.now()).await;
        }
        let row = sqlx::query(
            "SELECT * FROM inbox_sessions
             WHERE hash = ? AND revoked_at IS NULL AND expires_at > ?",
        )
        .bind(hash(secret))
        .bind(self.now())
        .fetch_optional(self.pool()?)
        .await?;
        row.as_ref().map(session_from).transpose()
    }

    /// End the session whose cookie value is `secret`; false when it was
    /// not live.
    pub async fn inbox_logout(&self, secret: &str) -> Result<bool> {
        if !plausible(secret) {
            return Ok(false);
        }
        let digest = hash(secret);
        if let Engine::Postgres(pg) = self.engine() {
            return pg_auth::logout(self, pg, &digest).await;
        }
        self.retry(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            // Why guarded on revoked_at IS NULL: logging out twice changes
            // nothing and appends no second event.
            let row = sqlx::query(
                "UPDATE inbox_sessions SET revoked_at = ?1
                 WHERE hash = ?2 AND revoked_at IS NULL RETURNING *",
            )
            .bind(now)
            .bind(&digest)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else { return Ok(false) };
            let s = session_from(&row)?;
            append_event(&mut tx, now, "inbox.logout", &s.id, &s.name).await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }
}

async fn append_event(
    conn: &mut sqlx::SqliteConnection,
    now: i64,
    kind: &str,
    id: &str,
    name: &str,
) -> Result<i64> {
    events::append(conn, now, &event(kind, id, name)).await
}

/// The `inbox.*` event `kind` about session (or code) `id` of `name`, on
/// either engine.
pub(super) fn event<'a>(kind: &'a str, id: &'a str, name: &'a str) -> NewEvent<'a> {
    NewEvent {
        kind,
        entity_kind: "inbox_session",
        entity_id: id,
        actor: name,
        channel: Channel::Inbox,
        project: "",
        session: "",
        payload: json!({ "name": name }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_hex_and_only_plausible_ones_are_looked_up() {
        let a = random_hex().unwrap();
        assert_ne!(a, random_hex().unwrap());
        assert!(plausible(&a));
        assert!(!plausible(&a[1..]));
        assert!(!plausible(&a.to_uppercase()));
        assert!(!plausible("' OR 1=1 --"));
        assert_eq!(hash(&a).len(), 64);
    }
}
