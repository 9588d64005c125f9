//! API bearer tokens: who may call the HTTP API, in which role, for which
//! project.
//!
//! A token is `hnd_` followed by 64 hex digits (32 random bytes from the OS).
//! It is shown once, at creation; the store keeps only its SHA-256. Checking
//! a presented token hashes it, looks the hash up, and compares the stored
//! hash with the computed one in constant time. Revocation is a guarded
//! UPDATE; a revoked token never works again. This module does not decide
//! what a role may do — the API does.

use crate::store::cols::{Cols, rows_by};
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::engine::Stmt;
use super::{Error, NewEvent, Result, Store, new_id};
use crate::store::Channel;

/// What a token may do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The agent side: flag, pending, answer, resolve, boards, propose, claim, complete, reads.
    Agent,
    /// The human side: reply, dismiss, annotate, handled, approve, reject, resolve-unknown, reads.
    Human,
    /// Everything.
    Admin,
    /// Reads (secrets redacted, as a person sees them) and the audit export.
    Auditor,
}

impl Role {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Human => "human",
            Role::Admin => "admin",
            Role::Auditor => "auditor",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "agent" => Ok(Role::Agent),
            "human" => Ok(Role::Human),
            "admin" => Ok(Role::Admin),
            "auditor" => Ok(Role::Auditor),
            _ => Err(Error::Invalid(format!(
                "`{s}` is not a role: use agent, human, admin or auditor"
            ))),
        }
    }
}

/// A stored token, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Token {
    /// The token's id (never the secret).
    pub id: String,
    /// Who the token acts as (recorded as the actor of its writes).
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The one project it may see and write; `None` = every project.
    pub project: Option<String>,
    /// When it was minted.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Revoked; `None` while valid.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub revoked_at: Option<i64>,
}

/// A freshly created token: the only time its secret exists outside the caller.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Created {
    /// The stored record.
    pub token: Token,
    /// `hnd_…`: give it to the client; it cannot be shown again.
    pub secret: String,
}

/// The prefix every token starts with (lets secret scanners spot leaks).
pub const PREFIX: &str = "hnd_";

/// Longest token name.
const MAX_NAME: usize = 64;

/// Hex SHA-256 of a presented token.
pub(super) fn hash(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Equality whose running time does not depend on where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

// A stored token, on either engine.
rows_by!(Token, token_from);

/// A stored token with its hash, for [`Store::token_verify`].
struct Hashed(Token, String);

rows_by!(Hashed, hashed_from);

fn hashed_from(r: &impl Cols) -> Result<Hashed> {
    Ok(Hashed(token_from(r)?, r.try_get("hash")?))
}

/// A stored token row as a [`Token`], on either engine.
fn token_from(r: &impl Cols) -> Result<Token> {
    let role: String = r.try_get("role")?;
    Ok(Token {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        role: role
            .parse()
            .map_err(|_| Error::Corrupt(format!("token role `{role}`")))?,
        project: r.try_get("project")?,
        created_at: r.try_get("created_at")?,
        revoked_at: r.try_get("revoked_at")?,
    })
}

fn new_secret() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Invalid(format!("the OS gave no randomness for a token: {e}")))?;
    Ok(format!(
        "{PREFIX}{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

impl Store {
    /// Create a token acting as `name` with `role`, limited to `project`
    /// when given. Returns the secret once; only its hash is stored. A live
    /// token with the same name is refused (revoke it first).
    pub async fn token_create(
        &self,
        name: &str,
        role: Role,
        project: Option<&str>,
    ) -> Result<Created> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME {
            return Err(Error::Invalid(format!(
                "a token name is 1 to {MAX_NAME} characters"
            )));
        }
        let project = project.map(str::trim);
        if project.is_some_and(str::is_empty) {
            return Err(Error::Invalid(
                "--project is empty: name a project or leave it out".into(),
            ));
        }
        let secret = new_secret()?;
        let digest = hash(&secret);
        let input = Arc::new((name.to_string(), project.map(str::to_string), digest));
        let token = self
            .transact(input, move |mut tx, input, now| {
                Box::pin(async move {
                    let (name, project, digest) = &*input;
                    let id = new_id();
                    // Why ON CONFLICT DO NOTHING: the partial unique index on
                    // live names decides a race between two creators of one name.
                    let insert = Stmt::new(
                        "INSERT INTO api_tokens (id, name, role, project, hash, created_at)
                         VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT DO NOTHING RETURNING *",
                    )
                    .text(id.as_str())
                    .text(name.as_str())
                    .text(role.as_str())
                    .text(project.as_deref())
                    .text(digest.as_str())
                    .int(now);
                    let Some(token) = tx.row::<Token>(&insert).await? else {
                        return Err(name_taken(name));
                    };
                    tx.append(now, &token_event("token.created", &token))
                        .await?;
                    Ok(token)
                })
            })
            .await?;
        Ok(Created { token, secret })
    }

    /// Every token, live and revoked, oldest first. No secrets.
    pub async fn token_list(&self) -> Result<Vec<Token>> {
        // Ties by id in byte order on both engines.
        self.rows(Stmt::spelled(
            "SELECT * FROM api_tokens ORDER BY created_at, id",
            "SELECT * FROM api_tokens ORDER BY created_at, id COLLATE \"C\"",
        ))
        .await
    }

    /// Whether some token (live or revoked) acts as `name`: an item filed
    /// by another token must not name it as its agent.
    pub async fn token_name_exists(&self, name: &str) -> Result<bool> {
        let n: i64 = self
            .first(Stmt::new("SELECT COUNT(*) FROM api_tokens WHERE name = $1").text(name))
            .await?;
        Ok(n > 0)
    }

    /// Revoke the live token named `name_or_id` (a name, a full id or its
    /// short id). `None` when no live token matches.
    pub async fn token_revoke(&self, name_or_id: &str) -> Result<Option<Token>> {
        let key = name_or_id.trim();
        if key.is_empty() {
            return Err(Error::Invalid("name the token to revoke".into()));
        }
        self.transact(Arc::new(key.to_string()), move |mut tx, key, now| {
            Box::pin(async move {
                // Why guarded on revoked_at IS NULL: revoking twice changes
                // nothing and appends no second event.
                let revoke = Stmt::spelled(
                    "UPDATE api_tokens SET revoked_at = $1
                     WHERE revoked_at IS NULL
                       AND (name = $2 OR id = $2 OR (length($2) >= 8 AND substr(id, -length($2)) = $2))
                     RETURNING *",
                    "UPDATE api_tokens SET revoked_at = $1
                     WHERE revoked_at IS NULL
                       AND (name = $2 OR id = $2 OR (length($2) >= 8 AND right(id, length($2)) = $2))
                     RETURNING *",
                )
                .int(now)
                .text(key.as_str());
                let revoked: Vec<Token> = tx.rows(&revoke).await?;
                match revoked.as_slice() {
                    [] => Ok(None),
                    [token] => {
                        tx.append(now, &token_event("token.revoked", token)).await?;
                        Ok(Some(token.clone()))
                    }
                    // The refusal rolls the revocations back.
                    _ => Err(several(&key)),
                }
            })
        })
        .await
    }

    /// The live token whose secret is `presented`, if any.
    pub async fn token_verify(&self, presented: &str) -> Result<Option<Token>> {
        if !presented.starts_with(PREFIX) || presented.len() > 200 {
            return Ok(None);
        }
        let digest = hash(presented);
        let found: Option<Hashed> = self
            .row(
                Stmt::new("SELECT * FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL")
                    .text(digest.as_str()),
            )
            .await?;
        let Some(Hashed(token, stored)) = found else {
            return Ok(None);
        };
        // The index lookup found it; compare again without an early exit so
        // the decision itself takes the same time for every stored hash.
        if !constant_time_eq(stored.as_bytes(), digest.as_bytes()) {
            return Ok(None);
        }
        Ok(Some(token))
    }

    /// Whether any live token exists (the daemon refuses a non-loopback
    /// listener without one).
    pub async fn tokens_exist(&self) -> Result<bool> {
        let n: i64 = self
            .first(Stmt::new(
                "SELECT COUNT(*) FROM api_tokens WHERE revoked_at IS NULL",
            ))
            .await?;
        Ok(n > 0)
    }
}

/// Refusal of a second live token named `name`.
fn name_taken(name: &str) -> Error {
    Error::Invalid(format!(
        "a live token named `{name}` exists: revoke it first or pick another name"
    ))
}

/// Refusal of a revocation whose key matches several live tokens.
fn several(key: &str) -> Error {
    Error::Invalid(format!("`{key}` matches several tokens: give the full id"))
}

/// The `token.*` event `kind` about `t`, on either engine.
fn token_event<'a>(kind: &'a str, t: &'a Token) -> NewEvent<'a> {
    NewEvent {
        kind,
        entity_kind: "token",
        entity_id: &t.id,
        actor: "cli",
        channel: Channel::Cli,
        project: t.project.as_deref().unwrap_or(""),
        session: "",
        payload: json!({"name": t.name, "role": t.role, "project": t.project}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_whole_inputs() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
        // Two differences whose XORs cancel must still be a difference.
        assert!(!constant_time_eq(b"ab", b"`c"));
        assert!(!constant_time_eq(b"\x01\x01", b"\x00\x00"));
    }

    #[test]
    fn secrets_are_prefixed_random_hex() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(PREFIX));
        assert_eq!(a.len(), PREFIX.len() + 64);
        assert_eq!(hash(&a).len(), 64);
    }
}
