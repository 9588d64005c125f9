//! Chat-message bookkeeping of the chat bridge: follower cursors, one
//! message record per (item, chat), pairing codes, paired members and
//! refused taps. Board, question and action reads live with their items.
//!
//! The chat worker writes `sending` before a Bot API call and `sent` after,
//! so a push interrupted by a crash is found and resent; a change not yet
//! drawn on a message is marked `dirty_at` until its edit is made (or
//! settled), so an edit survives a crash too. Nothing here talks to
//! Telegram.

pub use hold::{Held, Hold};

use crate::store::cols::{Cols, rows_by};

use serde::Serialize;

use super::engine::Stmt;
use super::{Error, Result, Store};

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
    /// editable); `held` / `quiet` / `burst` while a push waits (see
    /// `hold`), `skipped` when it settled while it waited and was never
    /// pushed.
    pub status: String,
    /// Hash of the last text drawn (skip edits that change nothing).
    pub text_hash: String,
    /// When the item last changed without this message being redrawn
    /// since (ms); `None` when the message is up to date.
    pub dirty_at: Option<i64>,
    /// The file carrying the message's whole text: its message id once it
    /// arrived (-1 when Telegram's answer did not say it), 0 when its
    /// upload was given up, `None` while none was sent (or none is owed).
    pub document_id: Option<i32>,
}

// A stored message record, on either engine (its ids are 64-bit
// integers in PostgreSQL's schema, checked into `i32` here).
rows_by!(ChatMessage, from_row);

fn from_row(r: &impl Cols) -> Result<ChatMessage> {
    let small = |v: Option<i64>, what: &str| {
        v.map(i32::try_from)
            .transpose()
            .map_err(|_| Error::Corrupt(format!("a chat message's {what} does not fit 32 bits")))
    };
    Ok(ChatMessage {
        item_kind: r.try_get("item_kind")?,
        item_id: r.try_get("item_id")?,
        chat_id: r.try_get("chat_id")?,
        thread_id: small(r.try_get("thread_id")?, "thread id")?,
        message_id: small(r.try_get("message_id")?, "message id")?,
        status: r.try_get("status")?,
        text_hash: r.try_get("text_hash")?,
        dirty_at: r.try_get("dirty_at")?,
        document_id: small(r.try_get("document_id")?, "document id")?,
    })
}

mod hold;
mod members;

/// A statement on one message record, whose key (`item_kind`, `item_id`,
/// `chat_id`) are its last three placeholders.
trait OnRecord<'q> {
    fn record(self, item_kind: &'q str, item_id: &'q str, chat_id: i64) -> Self;
}

impl<'q> OnRecord<'q> for Stmt<'q> {
    fn record(self, item_kind: &'q str, item_id: &'q str, chat_id: i64) -> Self {
        self.text(item_kind).text(item_id).int(chat_id)
    }
}

impl Store {
    /// The last `seq` the follower `name` fully applied (0 if never).
    pub async fn cursor(&self, name: &str) -> Result<i64> {
        let seq: Option<(i64,)> = self
            .row(Stmt::new("SELECT seq FROM cursors WHERE name = $1").text(name))
            .await?;
        Ok(seq.map_or(0, |(s,)| s))
    }

    /// Move the follower `name` forward to `seq`. Never moves it back, so
    /// two daemons on one database cannot rewind each other.
    pub async fn set_cursor(&self, name: &str, seq: i64) -> Result<()> {
        let now = self.now();
        self.change(
            Stmt::new(
                "INSERT INTO cursors (name, seq, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT(name) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at
                 WHERE excluded.seq > cursors.seq",
            )
            .text(name)
            .int(seq)
            .int(now),
        )
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
        let thread_id = thread_id.map(i64::from);
        let n = self
            .change(
                Stmt::new(
                    "INSERT INTO chat_messages (item_kind, item_id, chat_id, thread_id, status, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT DO NOTHING",
                )
                .record(item_kind, item_id, chat_id)
                .int(thread_id)
                .text(status)
                .int(now),
            )
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
        let message_id = message_id.map(i64::from);
        // Why the CASE: a change marked while this rendering was on its
        // way is not shown by it, so its mark stays (redrawn at start-up
        // if the daemon stops first). Same-millisecond marks stay too.
        self.change(
            Stmt::new(
                "UPDATE chat_messages SET message_id = COALESCE($1, message_id),
                    status = COALESCE($2, status), text_hash = $3, updated_at = $4,
                    dirty_at = CASE WHEN dirty_at >= $5 THEN dirty_at ELSE NULL END
                 WHERE item_kind = $6 AND item_id = $7 AND chat_id = $8",
            )
            .int(message_id)
            .text(status)
            .text(text_hash)
            .int(now)
            .int(since)
            .record(item_kind, item_id, chat_id),
        )
        .await
        .map(drop)
    }

    /// Record what became of the file carrying a message's whole text (see
    /// [`ChatMessage::document_id`]).
    pub async fn chat_document(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        document_id: i32,
    ) -> Result<()> {
        let now = self.now();
        self.change(
            Stmt::new(
                "UPDATE chat_messages SET document_id = $1, updated_at = $2
                 WHERE item_kind = $3 AND item_id = $4 AND chat_id = $5",
            )
            .int(i64::from(document_id))
            .int(now)
            .record(item_kind, item_id, chat_id),
        )
        .await
        .map(drop)
    }

    /// Every message record of an item.
    pub async fn chat_messages_of(
        &self,
        item_kind: &str,
        item_id: &str,
    ) -> Result<Vec<ChatMessage>> {
        self.rows(
            Stmt::new("SELECT * FROM chat_messages WHERE item_kind = $1 AND item_id = $2")
                .text(item_kind)
                .text(item_id),
        )
        .await
    }

    /// The item a chat message shows (for replies-to-message).
    pub async fn chat_item_of_message(
        &self,
        chat_id: i64,
        message_id: i32,
    ) -> Result<Option<(String, String)>> {
        self.row(
            Stmt::new(
                "SELECT item_kind, item_id FROM chat_messages
                 WHERE chat_id = $1 AND message_id = $2 AND status = 'sent'",
            )
            .int(chat_id)
            .int(i64::from(message_id)),
        )
        .await
    }

    /// Pushes interrupted between `sending` and `sent` (to resend at start-up).
    pub async fn chat_unsent(&self) -> Result<Vec<ChatMessage>> {
        self.rows(Stmt::new(
            "SELECT * FROM chat_messages WHERE status = 'sending' ORDER BY created_at",
        ))
        .await
    }

    /// Messages whose item changed and that were not redrawn since (to
    /// redraw at start-up).
    pub async fn chat_dirty(&self) -> Result<Vec<ChatMessage>> {
        self.rows(Stmt::new(
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
        // The three columns are the table's primary key: at most one record.
        self.row(
            Stmt::new(
                "SELECT * FROM chat_messages WHERE item_kind = $1 AND item_id = $2 AND chat_id = $3",
            )
            .record(item_kind, item_id, chat_id),
        )
        .await
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
        self.change_returning(
            Stmt::new(
                "UPDATE chat_messages SET dirty_at = $1
                 WHERE item_kind = $2 AND item_id = $3
                   AND (status = 'sending' OR (status = 'sent' AND message_id IS NOT NULL))
                 RETURNING *",
            )
            .int(now)
            .text(item_kind)
            .text(item_id),
        )
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
        self.change(
            Stmt::new(
                "UPDATE chat_messages SET status = 'sending', message_id = NULL, text_hash = '',
                    dirty_at = NULL, updated_at = $1
                 WHERE item_kind = $2 AND item_id = $3 AND chat_id = $4",
            )
            .int(now)
            .record(item_kind, item_id, chat_id),
        )
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
        // Why guarded on `sending`: only the push in flight is settled
        // here; a record already sent keeps its message id.
        self.change(
            Stmt::new(
                "UPDATE chat_messages SET status = 'sent', text_hash = $1, dirty_at = NULL, updated_at = $2
                 WHERE status = 'sending' AND item_kind = $3 AND item_id = $4 AND chat_id = $5",
            )
            .text(text_hash)
            .int(now)
            .record(item_kind, item_id, chat_id),
        )
        .await
        .map(drop)
    }
}
