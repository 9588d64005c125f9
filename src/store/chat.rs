//! Chat-message bookkeeping of the chat bridge: follower cursors, one
//! message record per (item, chat), pairing codes, paired members and
//! refused taps. Board, question and action reads live with their items.
//!
//! The chat worker writes `sending` before a Bot API call and `sent` after,
//! so a push interrupted by a crash is found and resent; a change not yet
//! drawn on a message is marked `dirty_at` until its edit is made (or
//! settled), so an edit survives a crash too. Nothing here talks to
//! Telegram.

mod hold;

pub use hold::{Held, Hold};

use serde::Serialize;
use sqlx::Row;

use super::{NewEvent, Result, Store};
use crate::store::Channel;

/// One pushed (or being pushed) chat message for an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ChatMessage {
    /// `question`, `row` or `action`.
    pub item_kind: String,
    /// The id of the question, row or action shown.
    pub item_id: String,
    /// The Telegram chat it is in.
    pub chat_id: i64,
    /// The forum topic it is in, if the chat has topics.
    pub thread_id: Option<i32>,
    /// Telegram message id once sent.
    pub message_id: Option<i32>,
    /// `sending`, `sent` or `digest` (covered by a digest message, not
    /// editable); `held` / `quiet` while a push waits (see `hold`),
    /// `skipped` when it settled while it waited and was never pushed.
    pub status: String,
    /// Hash of the last text drawn (skip edits that change nothing).
    pub text_hash: String,
    /// When the item last changed without this message being redrawn
    /// since (ms); `None` when the message is up to date.
    pub dirty_at: Option<i64>,
}

fn from_row(r: &sqlx::sqlite::SqliteRow) -> Result<ChatMessage> {
    Ok(ChatMessage {
        item_kind: r.try_get("item_kind")?,
        item_id: r.try_get("item_id")?,
        chat_id: r.try_get("chat_id")?,
        thread_id: r.try_get("thread_id")?,
        message_id: r.try_get("message_id")?,
        status: r.try_get("status")?,
        text_hash: r.try_get("text_hash")?,
        dirty_at: r.try_get("dirty_at")?,
    })
}

/// One statement on the chat tables, with its arguments bound.
type Query = sqlx::query::Query<'static, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>;

/// Bind the key of one message record (item kind, item id, chat id), for
/// statements ending in `item_kind = ? AND item_id = ? AND chat_id = ?`.
fn keyed(q: Query, item_kind: &str, item_id: &str, chat_id: i64) -> Query {
    q.bind(item_kind).bind(item_id).bind(chat_id)
}

impl Store {
    /// Run one statement, retried while the database is busy; returns how
    /// many rows it changed. `build` makes the statement afresh per attempt.
    ///
    /// Why under the write turn: a write straight on the pool met the turn's
    /// writer (the daemon's answers, taps, deliveries) at SQLite's file lock
    /// and slept in its busy handler; in the turn it waits its place instead.
    async fn chat_exec(&self, build: impl Fn() -> Query) -> Result<u64> {
        self.retry(|| async {
            let _turn = self.write_lock()?.clone().lock_owned().await;
            Ok(build().execute(self.pool()?).await?.rows_affected())
        })
        .await
    }

    /// [`Store::chat_fetch`] for a statement that writes (`RETURNING *`),
    /// under the write turn as [`Store::chat_exec`] is.
    async fn chat_write_fetch(&self, q: Query) -> Result<Vec<ChatMessage>> {
        let _turn = self.write_lock()?.clone().lock_owned().await;
        self.chat_fetch(q).await
    }

    /// The message records a `SELECT *` (or `RETURNING *`) yields.
    async fn chat_fetch(&self, q: Query) -> Result<Vec<ChatMessage>> {
        let rows = q.fetch_all(self.pool()?).await?;
        rows.iter().map(from_row).collect()
    }

    /// Append one chat event in its own write transaction.
    async fn chat_event(&self, now: i64, ev: &NewEvent<'_>) -> Result<()> {
        self.retry(|| async {
            let mut tx = self.begin_write().await?;
            super::events::append(&mut tx, now, ev).await?;
            tx.commit().await
        })
        .await
    }

    /// The last `seq` the follower `name` fully applied (0 if never).
    pub async fn cursor(&self, name: &str) -> Result<i64> {
        let seq: Option<i64> = sqlx::query_scalar("SELECT seq FROM cursors WHERE name = ?")
            .bind(name)
            .fetch_optional(self.pool()?)
            .await?;
        Ok(seq.unwrap_or(0))
    }

    /// Move the follower `name` forward to `seq`. Never moves it back, so
    /// two daemons on one file cannot rewind each other.
    pub async fn set_cursor(&self, name: &str, seq: i64) -> Result<()> {
        let now = self.now();
        self.chat_exec(|| {
            sqlx::query(
                "INSERT INTO cursors (name, seq, updated_at) VALUES (?, ?, ?)
                 ON CONFLICT(name) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at
                 WHERE excluded.seq > cursors.seq",
            )
            .bind(name)
            .bind(seq)
            .bind(now)
        })
        .await
        .map(drop)
    }

    /// Claim the right to push `item` to `chat_id`: inserts a `sending`
    /// record unless one exists. Returns false when the item already has a
    /// message (or a push in flight) in that chat, so one item is pushed once
    /// per chat even when the event is replayed.
    pub async fn chat_begin_send(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        thread_id: Option<i32>,
        status: &str,
    ) -> Result<bool> {
        let now = self.now();
        let n = self
            .chat_exec(|| {
                let q = sqlx::query(
                    "INSERT INTO chat_messages (item_kind, item_id, chat_id, thread_id, status, created_at, updated_at)
                     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                );
                keyed(q, item_kind, item_id, chat_id)
                    .bind(thread_id)
                    .bind(status)
                    .bind(now)
                    .bind(now)
            })
            .await?;
        Ok(n == 1)
    }

    /// Record that the push of `item` to `chat_id` was sent as `message_id`,
    /// rendered from the state read at `since` (ms; see [`Self::chat_drawn`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn chat_sent(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        message_id: i32,
        status: &str,
        text_hash: &str,
        since: i64,
    ) -> Result<()> {
        self.chat_record(
            item_kind,
            item_id,
            chat_id,
            Some((message_id, status)),
            text_hash,
            since,
        )
        .await
    }

    /// Remember the text last drawn on a message (after an edit, or an
    /// edit settled for good), rendered from the state read at `since`
    /// (ms): a change marked before then is shown, one marked since is not.
    pub async fn chat_drawn(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        text_hash: &str,
        since: i64,
    ) -> Result<()> {
        self.chat_record(item_kind, item_id, chat_id, None, text_hash, since)
            .await
    }

    /// Update a message record: the text drawn, and (once sent) its message
    /// id and status; `None` keeps the stored ones.
    async fn chat_record(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        sent: Option<(i32, &str)>,
        text_hash: &str,
        since: i64,
    ) -> Result<()> {
        let now = self.now();
        let (message_id, status) = sent.unzip();
        self.chat_exec(|| {
            // Why the CASE: a change marked while this rendering was on its
            // way is not shown by it, so its mark stays (redrawn at start-up
            // if the daemon stops first). Same-millisecond marks stay too.
            let q = sqlx::query(
                "UPDATE chat_messages SET message_id = COALESCE(?, message_id),
                    status = COALESCE(?, status), text_hash = ?, updated_at = ?,
                    dirty_at = CASE WHEN dirty_at >= ? THEN dirty_at ELSE NULL END
                 WHERE item_kind = ? AND item_id = ? AND chat_id = ?",
            )
            .bind(message_id)
            .bind(status)
            .bind(text_hash)
            .bind(now)
            .bind(since);
            keyed(q, item_kind, item_id, chat_id)
        })
        .await
        .map(drop)
    }

    /// Every message record of an item.
    pub async fn chat_messages_of(
        &self,
        item_kind: &str,
        item_id: &str,
    ) -> Result<Vec<ChatMessage>> {
        self.chat_fetch(
            sqlx::query("SELECT * FROM chat_messages WHERE item_kind = ? AND item_id = ?")
                .bind(item_kind)
                .bind(item_id),
        )
        .await
    }

    /// The item a chat message shows (for replies-to-message).
    pub async fn chat_item_of_message(
        &self,
        chat_id: i64,
        message_id: i32,
    ) -> Result<Option<(String, String)>> {
        Ok(sqlx::query_as(
            "SELECT item_kind, item_id FROM chat_messages WHERE chat_id = ? AND message_id = ? AND status = 'sent'",
        )
        .bind(chat_id)
        .bind(message_id)
        .fetch_optional(self.pool()?)
        .await?)
    }

    /// Pushes interrupted between `sending` and `sent` (to resend at start-up).
    pub async fn chat_unsent(&self) -> Result<Vec<ChatMessage>> {
        self.chat_fetch(sqlx::query(
            "SELECT * FROM chat_messages WHERE status = 'sending' ORDER BY created_at",
        ))
        .await
    }

    /// Messages whose item changed and that were not redrawn since (to
    /// redraw at start-up).
    pub async fn chat_dirty(&self) -> Result<Vec<ChatMessage>> {
        self.chat_fetch(sqlx::query(
            "SELECT * FROM chat_messages WHERE dirty_at IS NOT NULL ORDER BY dirty_at",
        ))
        .await
    }

    /// One message record of an item.
    pub async fn chat_message(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
    ) -> Result<Option<ChatMessage>> {
        let q = sqlx::query(
            "SELECT * FROM chat_messages WHERE item_kind = ? AND item_id = ? AND chat_id = ?",
        );
        // The three columns are the table's primary key: at most one record.
        let found = self
            .chat_fetch(keyed(q, item_kind, item_id, chat_id))
            .await?;
        Ok(found.into_iter().next())
    }

    /// Mark every message of an item as needing a redraw (the item
    /// changed), pushes still on their way too (they may carry the state
    /// from before the change); returns the marked records. Durable before
    /// the chat follower's cursor moves past the change, so a stop in
    /// between loses no edit.
    pub async fn chat_mark_dirty(
        &self,
        item_kind: &str,
        item_id: &str,
    ) -> Result<Vec<ChatMessage>> {
        let now = self.now();
        self.retry(|| {
            self.chat_write_fetch(
                sqlx::query(
                    "UPDATE chat_messages SET dirty_at = ?
                     WHERE item_kind = ? AND item_id = ?
                       AND (status = 'sending' OR (status = 'sent' AND message_id IS NOT NULL))
                     RETURNING *",
                )
                .bind(now)
                .bind(item_kind)
                .bind(item_id),
            )
        })
        .await
    }

    /// The item's message in `chat_id` is gone (deleted, or too old to
    /// edit) while the item still needs a human: back to `sending`, so a
    /// fresh message is pushed (and, like any push, resent after a crash).
    pub async fn chat_send_again(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
    ) -> Result<()> {
        let now = self.now();
        self.chat_exec(|| {
            let q = sqlx::query(
                "UPDATE chat_messages SET status = 'sending', message_id = NULL, text_hash = '',
                    dirty_at = NULL, updated_at = ?
                 WHERE item_kind = ? AND item_id = ? AND chat_id = ?",
            )
            .bind(now);
            keyed(q, item_kind, item_id, chat_id)
        })
        .await
        .map(drop)
    }

    /// A push Telegram accepted (`ok`) without a message we could read:
    /// delivered, but with no message id to edit later.
    pub async fn chat_sent_unconfirmed(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        text_hash: &str,
    ) -> Result<()> {
        let now = self.now();
        self.chat_exec(|| {
            // Why guarded on `sending`: only the push in flight is settled
            // here; a record already sent keeps its message id.
            let q = sqlx::query(
                "UPDATE chat_messages SET status = 'sent', text_hash = ?, dirty_at = NULL, updated_at = ?
                 WHERE status = 'sending' AND item_kind = ? AND item_id = ? AND chat_id = ?",
            )
            .bind(text_hash)
            .bind(now);
            keyed(q, item_kind, item_id, chat_id)
        })
        .await
        .map(drop)
    }

    /// Record a `/start` from an unknown user; returns the one-time code.
    pub async fn pairing_create(
        &self,
        user_id: i64,
        chat_id: i64,
        username: &str,
    ) -> Result<String> {
        let code = super::new_id()[24..].to_uppercase();
        let now = self.now();
        self.chat_exec(|| {
            sqlx::query(
                "INSERT INTO chat_pairings (code, user_id, chat_id, username, created_at) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(&code)
            .bind(user_id)
            .bind(chat_id)
            .bind(username)
            .bind(now)
        })
        .await?;
        Ok(code)
    }

    /// Admit the user behind `code` with `role`. The code works once and for
    /// one hour. Returns (user id, chat id, username) or None for an unknown,
    /// used or stale code.
    pub async fn pairing_use(&self, code: &str, role: &str) -> Result<Option<(i64, i64, String)>> {
        let now = self.now();
        let code = code.trim().to_uppercase();
        self.retry(|| async {
            let mut tx = self.begin_write().await?;
            // The guard makes the code single-use even when two `pair` commands race.
            let row = sqlx::query(
                "UPDATE chat_pairings SET used_at = ? WHERE code = ? AND used_at IS NULL AND created_at > ?
                 RETURNING user_id, chat_id, username",
            )
            .bind(now)
            .bind(&code)
            .bind(now - 3_600_000)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else { return Ok(None) };
            let (user, chat, name): (i64, i64, String) =
                (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            sqlx::query(
                "INSERT INTO chat_members (chat_id, user_id, role, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            )
            .bind(chat)
            .bind(user)
            .bind(role)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            super::events::append(
                &mut tx,
                now,
                &super::NewEvent {
                    kind: "chat.paired",
                    entity_kind: "chat",
                    entity_id: &chat.to_string(),
                    actor: &user.to_string(),
                    channel: Channel::Cli,
                    payload: serde_json::json!({"user_id": user, "role": role, "username": name}),
                    ..Default::default()
                },
            )
            .await?;
            tx.commit().await?;
            Ok(Some((user, chat, name)))
        })
        .await
    }

    /// Whether a paired member has `role` in `chat_id`.
    pub async fn chat_member_has(&self, chat_id: i64, user_id: i64, role: &str) -> Result<bool> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM chat_members WHERE chat_id = ? AND user_id = ? AND (role = ? OR role = 'approve')",
        )
        .bind(chat_id)
        .bind(user_id)
        .bind(role)
        .fetch_one(self.pool()?)
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
        self.chat_event(
            self.now(),
            &NewEvent {
                kind: "chat.refused",
                entity_kind: item_kind,
                entity_id: item_id,
                actor: who,
                channel: Channel::Chat,
                payload: serde_json::json!({"chat_id": chat_id, "user_id": user_id, "reason": "not allow-listed"}),
                ..Default::default()
            },
        )
        .await
    }
}
