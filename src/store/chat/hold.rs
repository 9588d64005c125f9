//! Pushes that wait (issue 13, item 8): a message record may be `held`
//! (its kind's grace period) or `quiet` (its chat's quiet hours) until
//! `due_at`, then released to `sending` or `skipped` when the item settled
//! meanwhile. Durable, so a restart neither loses a waiting push nor sends
//! it early. Which items wait, and for how long, is the chat bridge's call.

use super::super::{Engine, Result, Store};

/// Why a push waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Inside its kind's grace period: sent on its own when due.
    Grace,
    /// Inside its chat's quiet hours: sent in one digest when they end.
    Quiet,
}

impl Hold {
    /// The record status.
    pub fn as_str(self) -> &'static str {
        match self {
            Hold::Grace => "held",
            Hold::Quiet => "quiet",
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
        let now = self.now();
        let n = chat_exec!(
            self,
            "INSERT INTO chat_messages (item_kind, item_id, chat_id, status, due_at, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT DO NOTHING",
            |q| q
                .bind(item_kind)
                .bind(item_id)
                .bind(chat_id)
                .bind(hold.as_str())
                .bind(due_at)
                .bind(now)
        )?;
        Ok(n == 1)
    }

    /// Waiting pushes due at or before `now` (ms), earliest first.
    pub async fn chat_held_due(&self, now: i64) -> Result<Vec<Held>> {
        let rows: Vec<(String, String, i64, String, i64)> = chat_scalar!(
            self,
            fetch_all,
            query_as,
            "SELECT item_kind, item_id, chat_id, status, due_at FROM chat_messages
             WHERE status IN ('held', 'quiet') AND due_at <= $1 ORDER BY due_at, created_at",
            |q| q.bind(now)
        );
        Ok(rows
            .into_iter()
            .map(|(item_kind, item_id, chat_id, status, due_at)| Held {
                item_kind,
                item_id,
                chat_id,
                hold: if status == "quiet" {
                    Hold::Quiet
                } else {
                    Hold::Grace
                },
                due_at,
            })
            .collect())
    }

    /// When the next waiting push falls due (ms), if any waits.
    pub async fn chat_next_due(&self) -> Result<Option<i64>> {
        Ok(chat_scalar!(
            self,
            fetch_one,
            query_scalar,
            "SELECT MIN(due_at) FROM chat_messages WHERE status IN ('held', 'quiet')",
            |q| q
        ))
    }

    /// Move a waiting push: `hold` until `due_at` (quiet hours began while
    /// it waited out its grace). False when it no longer waits.
    pub async fn chat_hold_again(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        hold: Hold,
        due_at: i64,
    ) -> Result<bool> {
        self.chat_settle_hold(
            item_kind,
            item_id,
            chat_id,
            hold.as_str(),
            Some(due_at),
            None,
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
        let n = chat_exec!(
            self,
            "UPDATE chat_messages SET status = $1, due_at = $2, updated_at = $3,
                thread_id = CASE WHEN $4 THEN $5 ELSE thread_id END
             WHERE status IN ('held', 'quiet')
               AND item_kind = $6 AND item_id = $7 AND chat_id = $8",
            |q| q
                .bind(status)
                .bind(due_at)
                .bind(now)
                .bind(set_thread)
                .bind(thread)
                .bind(item_kind)
                .bind(item_id)
                .bind(chat_id)
        )?;
        Ok(n == 1)
    }
}
