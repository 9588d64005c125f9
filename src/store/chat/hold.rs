//! Pushes that wait (issue 13, item 8): a message record may be `held`
//! (its kind's grace period) or `quiet` (its chat's quiet hours) until
//! `due_at`, then released to `sending` or `skipped` when the item settled
//! meanwhile. Durable, so a restart neither loses a waiting push nor sends
//! it early. Which items wait, and for how long, is the chat bridge's call.

use sqlx::Row;

use super::super::{Result, Store};
use super::keyed;

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
        let n = self
            .chat_exec(|| {
                let q = sqlx::query(
                    "INSERT INTO chat_messages (item_kind, item_id, chat_id, status, due_at, created_at, updated_at)
                     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                );
                keyed(q, item_kind, item_id, chat_id)
                    .bind(hold.as_str())
                    .bind(due_at)
                    .bind(now)
                    .bind(now)
            })
            .await?;
        Ok(n == 1)
    }

    /// Waiting pushes due at or before `now` (ms), earliest first.
    pub async fn chat_held_due(&self, now: i64) -> Result<Vec<Held>> {
        let rows = sqlx::query(
            "SELECT item_kind, item_id, chat_id, status, due_at FROM chat_messages
             WHERE status IN ('held', 'quiet') AND due_at <= ? ORDER BY due_at, created_at",
        )
        .bind(now)
        .fetch_all(self.pool()?)
        .await?;
        rows.iter()
            .map(|r| {
                let status: String = r.try_get("status")?;
                Ok(Held {
                    item_kind: r.try_get("item_kind")?,
                    item_id: r.try_get("item_id")?,
                    chat_id: r.try_get("chat_id")?,
                    hold: if status == "quiet" {
                        Hold::Quiet
                    } else {
                        Hold::Grace
                    },
                    due_at: r.try_get("due_at")?,
                })
            })
            .collect()
    }

    /// When the next waiting push falls due (ms), if any waits.
    pub async fn chat_next_due(&self) -> Result<Option<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT MIN(due_at) FROM chat_messages WHERE status IN ('held', 'quiet')",
        )
        .fetch_one(self.pool()?)
        .await?)
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
        let (set_thread, thread) = (thread_id.is_some(), thread_id.flatten());
        let n = self
            .chat_exec(|| {
                // Why guarded on the waiting statuses: a record already
                // released (or sent) is never pulled back into waiting.
                let q = sqlx::query(
                    "UPDATE chat_messages SET status = ?, due_at = ?, updated_at = ?,
                        thread_id = CASE WHEN ? THEN ? ELSE thread_id END
                     WHERE status IN ('held', 'quiet')
                       AND item_kind = ? AND item_id = ? AND chat_id = ?",
                )
                .bind(status)
                .bind(due_at)
                .bind(now)
                .bind(set_thread)
                .bind(thread);
                keyed(q, item_kind, item_id, chat_id)
            })
            .await?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiting_push_is_released_or_skipped_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("h.db")).await.unwrap();
        assert_eq!(store.chat_next_due().await.unwrap(), None);
        assert!(
            store
                .chat_hold("action", "a", 1, Hold::Grace, 500)
                .await
                .unwrap()
        );
        assert!(
            store
                .chat_hold("action", "b", 1, Hold::Quiet, 900)
                .await
                .unwrap()
        );
        // A replayed event claims nothing twice.
        assert!(
            !store
                .chat_hold("action", "a", 1, Hold::Quiet, 1)
                .await
                .unwrap()
        );
        assert!(
            !store
                .chat_begin_send("action", "a", 1, None, "sending")
                .await
                .unwrap()
        );
        assert_eq!(store.chat_next_due().await.unwrap(), Some(500));
        let due = store.chat_held_due(600).await.unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!((due[0].item_id.as_str(), due[0].hold), ("a", Hold::Grace));
        // Quiet hours began: it waits again, now for the digest.
        assert!(
            store
                .chat_hold_again("action", "a", 1, Hold::Quiet, 900)
                .await
                .unwrap()
        );
        assert!(store.chat_held_due(600).await.unwrap().is_empty());
        let due = store.chat_held_due(900).await.unwrap();
        assert_eq!(due.iter().filter(|h| h.hold == Hold::Quiet).count(), 2);
        assert!(store.chat_release("action", "a", 1, Some(7)).await.unwrap());
        assert!(
            !store.chat_release("action", "a", 1, None).await.unwrap(),
            "released once"
        );
        assert!(!store.chat_skip("action", "a", 1).await.unwrap());
        let rec = store.chat_message("action", "a", 1).await.unwrap().unwrap();
        assert_eq!((rec.status.as_str(), rec.thread_id), ("sending", Some(7)));
        assert_eq!(
            store.chat_unsent().await.unwrap().len(),
            1,
            "sent like any push"
        );
        assert!(store.chat_skip("action", "b", 1).await.unwrap());
        assert!(
            !store.chat_release("action", "b", 1, None).await.unwrap(),
            "skipped for good"
        );
        assert_eq!(store.chat_next_due().await.unwrap(), None);
    }
}
