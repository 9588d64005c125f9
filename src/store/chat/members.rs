//! Who may tap in a chat: pairing codes, paired members, and the audit of a
//! tap refused for someone not allow-listed.

use std::sync::Arc;

use crate::store::engine::Stmt;
use crate::store::{Channel, NewEvent, Result, Store};

impl Store {
    /// Record a `/start` from an unknown user; returns the one-time code.
    pub async fn pairing_create(
        &self,
        user_id: i64,
        chat_id: i64,
        username: &str,
    ) -> Result<String> {
        let code = crate::store::new_id()[24..].to_uppercase();
        let now = self.now();
        self.change(
            Stmt::new(
                "INSERT INTO chat_pairings (code, user_id, chat_id, username, created_at)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .text(code.as_str())
            .int(user_id)
            .int(chat_id)
            .text(username)
            .int(now),
        )
        .await?;
        Ok(code)
    }

    /// Admit the user behind `code` with `role`. The code works once and for
    /// one hour. Returns (user id, chat id, username) or None for an unknown,
    /// used or stale code.
    pub async fn pairing_use(&self, code: &str, role: &str) -> Result<Option<(i64, i64, String)>> {
        let input = Arc::new((code.trim().to_uppercase(), role.to_string()));
        self.transact(input, |mut tx, input, now| {
            Box::pin(async move {
                let (code, role) = &*input;
                // The guard makes the code single-use even when two `pair`
                // commands race: on PostgreSQL the second waits for the
                // first's row lock, re-checks `used_at IS NULL` and changes
                // nothing.
                let row: Option<(i64, i64, String)> = tx
                    .row(
                        &Stmt::new(PAIRING_USE)
                            .int(now)
                            .text(code.as_str())
                            .int(now - PAIRING_TTL_MS),
                    )
                    .await?;
                let Some((user, chat, name)) = row else {
                    return Ok(None);
                };
                tx.change(
                    &Stmt::new(PAIRING_ADMIT)
                        .int(chat)
                        .int(user)
                        .text(role.as_str())
                        .int(now),
                )
                .await?;
                let (chat_s, user_s) = (chat.to_string(), user.to_string());
                tx.append(now, &paired(&chat_s, &user_s, user, role, &name))
                    .await?;
                Ok(Some((user, chat, name)))
            })
        })
        .await
    }

    /// Whether a paired member has `role` in `chat_id`.
    pub async fn chat_member_has(&self, chat_id: i64, user_id: i64, role: &str) -> Result<bool> {
        let n: i64 = self
            .first(
                Stmt::new(
                    "SELECT COUNT(*) FROM chat_members
                     WHERE chat_id = $1 AND user_id = $2 AND (role = $3 OR role = 'approve')",
                )
                .int(chat_id)
                .int(user_id)
                .text(role),
            )
            .await?;
        Ok(n > 0)
    }

    /// Audit a tap or reply refused because the user is not allow-listed.
    pub async fn chat_refused(
        &self,
        chat_id: i64,
        user_id: i64,
        who: &str,
        item_kind: &str,
        item_id: &str,
    ) -> Result<()> {
        let input = Arc::new((
            chat_id,
            user_id,
            who.to_string(),
            item_kind.to_string(),
            item_id.to_string(),
        ));
        self.transact(input, |mut tx, input, now| {
            Box::pin(async move {
                let (chat_id, user_id, who, item_kind, item_id) = &*input;
                let ev = NewEvent {
                    kind: "chat.refused",
                    entity_kind: item_kind,
                    entity_id: item_id,
                    actor: who,
                    channel: Channel::Chat,
                    payload: serde_json::json!({"chat_id": chat_id, "user_id": user_id, "reason": "not allow-listed"}),
                    ..Default::default()
                };
                tx.append(now, &ev).await.map(drop)
            })
        })
        .await
    }
}

/// How long a pairing code works (ms): one hour.
const PAIRING_TTL_MS: i64 = 3_600_000;

/// Use a pairing code: its user, chat and name, or no row when it is
/// unknown, used or stale. Same text on both engines.
const PAIRING_USE: &str = "UPDATE chat_pairings SET used_at = $1
     WHERE code = $2 AND used_at IS NULL AND created_at > $3
     RETURNING user_id, chat_id, username";

/// Admit a paired user with a role (kept when already admitted).
const PAIRING_ADMIT: &str =
    "INSERT INTO chat_members (chat_id, user_id, role, added_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING";

/// The `chat.paired` event of user `user` (`user_id`, in words) admitted
/// to `chat` (its id in words) with `role`.
fn paired<'a>(chat: &'a str, user: &'a str, user_id: i64, role: &str, name: &str) -> NewEvent<'a> {
    NewEvent {
        kind: "chat.paired",
        entity_kind: "chat",
        entity_id: chat,
        actor: user,
        channel: Channel::Cli,
        payload: serde_json::json!({"user_id": user_id, "role": role, "username": name}),
        ..Default::default()
    }
}
