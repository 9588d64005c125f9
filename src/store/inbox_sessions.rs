//! Web Inbox logins: one-time login codes and the browser sessions they open.
//!
//! `handoff inbox-link` creates a code (32 random bytes, hex) that works
//! once, until it expires. Visiting the link trades the code for a session:
//! one transaction whose guarded UPDATE marks the code used — so two tabs
//! racing on one link open exactly one session — and inserts the session.
//! The store keeps only SHA-256 hashes of codes and session cookies. A
//! session acts as the name given at `inbox-link --as`; what it may do is
//! the API's business, not this module's.

use crate::store::cols::{Cols, rows_by};
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::engine::Stmt;
use super::{Error, NewEvent, Result, Store, new_id};
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
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// The code is refused from this moment on.
    #[serde(with = "crate::clock::Timestamp")]
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
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Refused from this moment on.
    #[serde(with = "crate::clock::Timestamp")]
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

// A stored session, on either engine.
rows_by!(InboxSession, session_from);

fn session_from(r: &impl Cols) -> Result<InboxSession> {
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
        // Why the code is added after the write: a write under a request
        // id remembers its value (see `request`), and the code must not be
        // stored.
        let input = Arc::new((name.to_string(), digest));
        let (id, created_at): (String, i64) = self
            .transact(input, move |mut tx, input, now| {
                Box::pin(async move {
                    let (name, digest) = &*input;
                    let id = new_id();
                    let insert = Stmt::new(
                        "INSERT INTO inbox_login_codes (id, hash, name, created_at, expires_at)
                         VALUES ($1, $2, $3, $4, $5)",
                    )
                    .text(id.as_str())
                    .text(digest.as_str())
                    .text(name.as_str())
                    .int(now)
                    .int(now + ttl_ms);
                    tx.change(&insert).await?;
                    tx.append(now, &event("inbox.link_created", &id, name))
                        .await?;
                    Ok((id, now))
                })
            })
            .await?;
        Ok(LoginLink {
            id,
            name: name.to_string(),
            code,
            created_at,
            expires_at: created_at + ttl_ms,
        })
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
        let input = Arc::new((digest, secret_hash));
        let opened: std::result::Result<InboxSession, Login> = self
            .transact(input, move |mut tx, input, now| {
                Box::pin(async move {
                    let (digest, secret_hash) = &*input;
                    // Why guarded on used_at IS NULL and the expiry: the
                    // UPDATE decides; of two visits racing on one link
                    // exactly one marks the code used, and a code at its
                    // expiry ms is refused.
                    let take = Stmt::new(
                        "UPDATE inbox_login_codes SET used_at = $1
                         WHERE hash = $2 AND used_at IS NULL AND expires_at > $1
                         RETURNING id, name",
                    )
                    .int(now)
                    .text(digest.as_str());
                    let Some((code_id, name)) = tx.row::<(String, String)>(&take).await? else {
                        // Read in the same write (on PostgreSQL under the
                        // row lock), so the reason is the state that refused.
                        let why = Stmt::spelled(
                            "SELECT used_at FROM inbox_login_codes WHERE hash = $1",
                            "SELECT used_at FROM inbox_login_codes WHERE hash = $1 FOR UPDATE",
                        )
                        .text(digest.as_str());
                        let used: Option<(Option<i64>,)> = tx.row(&why).await?;
                        return Ok(Err(match used {
                            None => Login::Unknown,
                            Some((Some(_),)) => Login::Used,
                            Some((None,)) => Login::Expired,
                        }));
                    };
                    let session = InboxSession {
                        id: new_id(),
                        name,
                        created_at: now,
                        expires_at: now + session_ttl_ms,
                    };
                    let insert = Stmt::new(
                        "INSERT INTO inbox_sessions (id, hash, name, code_id, created_at, expires_at)
                         VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .text(session.id.as_str())
                    .text(secret_hash.as_str())
                    .text(session.name.as_str())
                    .text(code_id.as_str())
                    .int(session.created_at)
                    .int(session.expires_at);
                    tx.change(&insert).await?;
                    tx.append(now, &event("inbox.login", &session.id, &session.name))
                        .await?;
                    Ok(Ok(session))
                })
            })
            .await?;
        Ok(match opened {
            Ok(session) => Login::Opened { session, secret },
            Err(refused) => refused,
        })
    }

    /// The live session whose cookie value is `secret`, if any.
    pub async fn inbox_session_verify(&self, secret: &str) -> Result<Option<InboxSession>> {
        if !plausible(secret) {
            return Ok(None);
        }
        self.row(
            Stmt::new(
                "SELECT * FROM inbox_sessions
                 WHERE hash = $1 AND revoked_at IS NULL AND expires_at > $2",
            )
            .text(hash(secret).as_str())
            .int(self.now()),
        )
        .await
    }

    /// End the session whose cookie value is `secret`; false when it was
    /// not live.
    pub async fn inbox_logout(&self, secret: &str) -> Result<bool> {
        if !plausible(secret) {
            return Ok(false);
        }
        let digest = hash(secret);
        self.transact(Arc::new(digest), move |mut tx, digest, now| {
            Box::pin(async move {
                // Why guarded on revoked_at IS NULL: logging out twice
                // changes nothing and appends no second event.
                let end = Stmt::new(
                    "UPDATE inbox_sessions SET revoked_at = $1
                     WHERE hash = $2 AND revoked_at IS NULL RETURNING *",
                )
                .int(now)
                .text(digest.as_str());
                let Some(s) = tx.row::<InboxSession>(&end).await? else {
                    return Ok(false);
                };
                tx.append(now, &event("inbox.logout", &s.id, &s.name))
                    .await?;
                Ok(true)
            })
        })
        .await
    }
}

/// The `inbox.*` event `kind` about session (or code) `id` of `name`, on
/// either engine.
fn event<'a>(kind: &'a str, id: &'a str, name: &'a str) -> NewEvent<'a> {
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
