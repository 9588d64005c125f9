//! What the daemon's doors read to let a caller in and to follow the log:
//! tokens, Inbox sign-ins, the event log's spans and the database's
//! fingerprint. Each is one store call; here so that the HTTP doors, like
//! every other, reach the store only through the operations.

use std::path::Path;

use super::Local;
use crate::ops::Result;
use crate::store::events::{RawEvent, Span};
use crate::store::inbox_sessions::{InboxSession, Login};
use crate::store::tokens::Token;

impl Local {
    /// The live token `presented` is, if any (unknown and revoked: `None`).
    pub async fn token_verify(&self, presented: &str) -> Result<Option<Token>> {
        Ok(self.store.token_verify(presented).await?)
    }

    /// Whether some token acts as `name` (so another may not file as it).
    pub async fn token_name_exists(&self, name: &str) -> Result<bool> {
        Ok(self.store.token_name_exists(name).await?)
    }

    /// The live Inbox session `secret` opens, if any.
    pub async fn inbox_session_verify(&self, secret: &str) -> Result<Option<InboxSession>> {
        Ok(self.store.inbox_session_verify(secret).await?)
    }

    /// Trade a one-time login `code` for a session of `ttl_ms`.
    pub async fn inbox_login(&self, code: &str, ttl_ms: i64) -> Result<Login> {
        Ok(self.store.inbox_login(code, ttl_ms).await?)
    }

    /// End the Inbox session `secret` opens; false if none did.
    pub async fn inbox_logout(&self, secret: &str) -> Result<bool> {
        Ok(self.store.inbox_logout(secret).await?)
    }

    /// The log's events after `after`, at most `limit`, as stored text.
    pub async fn events_span_after(&self, after: i64, limit: i64) -> Result<Span> {
        Ok(self.store.events_span_after(after, limit).await?)
    }

    /// The log's events after `after` up to `last`, payloads as stored text.
    pub async fn events_raw(&self, after: i64, last: i64) -> Result<Vec<RawEvent>> {
        Ok(self.store.events_raw(after, last).await?)
    }

    /// Whether any live API token exists (a daemon off loopback needs one).
    pub async fn tokens_exist(&self) -> Result<bool> {
        Ok(self.store.tokens_exist().await?)
    }

    /// The log's last `n` events, as stored text.
    pub async fn events_span_tail(&self, n: i64) -> Result<Span> {
        Ok(self.store.events_span_tail(n).await?)
    }

    /// The database's location (a path, or the PostgreSQL URL's identity),
    /// which `/healthz` shows as a fingerprint.
    pub fn database_path(&self) -> &Path {
        self.store.path()
    }
}
