//! Pushes that wait: a message record may be `held` (its kind's grace
//! period), `quiet` (its chat's quiet hours) or `burst` (beyond the digest
//! threshold, waiting for its burst's digest) until `due_at`, then released
//! to `sending`, covered by a digest (`digest`), or `skipped` when the item
//! settled meanwhile. Durable, so a restart neither loses a waiting push nor
//! sends it early. Which items wait, and for how long, is the chat bridge's
//! call.

use super::super::engine::Stmt;
use super::super::{Error, Result, Store};
use super::OnRecord;

/// Why a push waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Inside its kind's grace period: sent on its own when due.
    Grace,
    /// Inside its chat's quiet hours: sent in one digest when they end.
    Quiet,
    /// Beyond the digest threshold of its chat and forum topic: sent in
    /// that burst's one digest when due.
    Burst,
}

impl Hold {
    /// The record status.
    pub fn as_str(self) -> &'static str {
        match self {
            Hold::Grace => "held",
            Hold::Quiet => "quiet",
            Hold::Burst => "burst",
        }
    }

    fn from_status(status: &str) -> Hold {
        match status {
            "quiet" => Hold::Quiet,
            "burst" => Hold::Burst,
            _ => Hold::Grace,
        }
    }
}

/// One waiting push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// `question`, `row` or `action`.
    pub item_kind: String,
    /// The item's id.
    pub item_id: String,
    /// The chat it waits for.
    pub chat_id: i64,
    /// Its forum topic, when known already (a burst's; the others' is
    /// chosen on release).
    pub thread_id: Option<i32>,
    /// Why it waits.
    pub hold: Hold,
    /// When it is looked at again (ms).
    pub due_at: i64,
}

impl Store {
    /// Claim the push of an item to `chat_id` as waiting until `due_at`
    /// (ms). Like [`Store::chat_begin_send`], false when the item already
    /// has a record in that chat (a replayed event). Its forum topic is
    /// set on release: an item that settles first needs none.
    pub async fn chat_hold(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        hold: Hold,
        due_at: i64,
    ) -> Result<bool> {
        self.chat_hold_in(item_kind, item_id, chat_id, None, hold, due_at)
            .await
    }

    /// [`Store::chat_hold`] in forum topic `thread_id`, known already (a
    /// burst waits with the others of its topic).
    pub async fn chat_hold_in(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        thread_id: Option<i32>,
        hold: Hold,
        due_at: i64,
    ) -> Result<bool> {
        let now = self.now();
        let n = self
            .change(
                Stmt::new(
                    "INSERT INTO chat_messages (item_kind, item_id, chat_id, thread_id, status, due_at, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING",
                )
                .record(item_kind, item_id, chat_id)
                .int(thread_id.map(i64::from))
                .text(hold.as_str())
                .int(due_at)
                .int(now),
            )
            .await?;
        Ok(n == 1)
    }

    /// Waiting pushes due at or before `now` (ms), earliest first.
    pub async fn chat_held_due(&self, now: i64) -> Result<Vec<Held>> {
        let rows: Vec<(String, String, i64, Option<i64>, String, i64)> = self
            .rows(
                Stmt::new(
                    "SELECT item_kind, item_id, chat_id, thread_id, status, due_at FROM chat_messages
                     WHERE status IN ('held', 'quiet', 'burst') AND due_at <= $1 ORDER BY due_at, created_at",
                )
                .int(now),
            )
            .await?;
        rows.into_iter()
            .map(|(item_kind, item_id, chat_id, thread, status, due_at)| {
                Ok(Held {
                    item_kind,
                    item_id,
                    chat_id,
                    thread_id: thread.map(i32::try_from).transpose().map_err(|_| {
                        Error::Corrupt("a chat message's thread id does not fit 32 bits".into())
                    })?,
                    hold: Hold::from_status(&status),
                    due_at,
                })
            })
            .collect()
    }

    /// When the next waiting push falls due (ms), if any waits.
    pub async fn chat_next_due(&self) -> Result<Option<i64>> {
        self.first(Stmt::new(
            "SELECT MIN(due_at) FROM chat_messages WHERE status IN ('held', 'quiet', 'burst')",
        ))
        .await
    }

    /// Move a waiting push: `hold` until `due_at` (quiet hours began while
    /// it waited out its grace), and into forum topic `t` if `into_topic`
    /// is `Some(t)` (a push let out of its grace period that joins a
    /// burst). False when it no longer waits.
    pub async fn chat_hold_again(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        (hold, due_at): (Hold, i64),
        into_topic: Option<Option<i32>>,
    ) -> Result<bool> {
        self.chat_settle_hold(
            item_kind,
            item_id,
            chat_id,
            hold.as_str(),
            Some(due_at),
            into_topic,
        )
        .await
    }

    /// Release a waiting push to `sending` in forum topic `thread_id`
    /// (then sent like any push). False when it no longer waits, so two
    /// releases never both send it.
    pub async fn chat_release(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        thread_id: Option<i32>,
    ) -> Result<bool> {
        self.chat_settle_hold(
            item_kind,
            item_id,
            chat_id,
            "sending",
            None,
            Some(thread_id),
        )
        .await
    }

    /// Mark a waiting push `skipped`: its item settled while it waited, so
    /// it is never pushed. False when it no longer waits.
    pub async fn chat_skip(&self, item_kind: &str, item_id: &str, chat_id: i64) -> Result<bool> {
        self.chat_settle_hold(item_kind, item_id, chat_id, "skipped", None, None)
            .await
    }

    /// A waiting push went out in the digest message `message_id`: its
    /// record says so (`digest`; a digest is never edited). False when it
    /// no longer waits.
    pub async fn chat_digested(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        message_id: i32,
    ) -> Result<bool> {
        let now = self.now();
        // Why guarded on the waiting statuses: an item covered by a digest
        // is never also sent on its own, nor the other way round.
        let n = self
            .change(
                Stmt::new(
                    "UPDATE chat_messages SET status = 'digest', message_id = $1, due_at = NULL, updated_at = $2
                     WHERE status IN ('held', 'quiet', 'burst')
                       AND item_kind = $3 AND item_id = $4 AND chat_id = $5",
                )
                .int(i64::from(message_id))
                .int(now)
                .record(item_kind, item_id, chat_id),
            )
            .await?;
        Ok(n == 1)
    }

    async fn chat_settle_hold(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        status: &str,
        due_at: Option<i64>,
        thread_id: Option<Option<i32>>,
    ) -> Result<bool> {
        let now = self.now();
        let (set_thread, thread) = (thread_id.is_some(), thread_id.flatten().map(i64::from));
        // Why guarded on the waiting statuses: a record already
        // released (or sent) is never pulled back into waiting.
        let n = self
            .change(
                Stmt::new(
                    "UPDATE chat_messages SET status = $1, due_at = $2, updated_at = $3,
                        thread_id = CASE WHEN $4 THEN $5 ELSE thread_id END
                     WHERE status IN ('held', 'quiet', 'burst')
                       AND item_kind = $6 AND item_id = $7 AND chat_id = $8",
                )
                .text(status)
                .int(due_at)
                .int(now)
                .bool(set_thread)
                .int(thread)
                .record(item_kind, item_id, chat_id),
            )
            .await?;
        Ok(n == 1)
    }
}
