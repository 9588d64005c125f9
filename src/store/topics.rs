//! Forum topics the chat bridge created, one per (chat, project or
//! session), so every later push of that project goes to the same topic,
//! across restarts. This module only remembers: creating a topic is the
//! chat bridge's (`chat/topics.rs`).

use super::{Result, Store};

impl Store {
    /// The topic remembered for `key` in `chat_id`, if any.
    pub async fn topic_get(&self, chat_id: i64, key: &str) -> Result<Option<i32>> {
        Ok(
            sqlx::query_scalar("SELECT thread_id FROM chat_topics WHERE chat_id = ? AND key = ?")
                .bind(chat_id)
                .bind(key)
                .fetch_optional(self.pool()?)
                .await?,
        )
    }

    /// Remember `thread_id` as the topic of `key` in `chat_id`; the topic
    /// that holds after the call (an earlier one wins: its messages are
    /// already there).
    pub async fn topic_save(
        &self,
        chat_id: i64,
        key: &str,
        name: &str,
        thread_id: i32,
    ) -> Result<i32> {
        self.retry(|| async {
            let now = self.now();
            // In the write turn, so it never meets the turn's writer at
            // SQLite's busy handler.
            let _turn = self.write_lock()?.clone().lock_owned().await;
            // Why ON CONFLICT DO NOTHING and read back: a topic saved by
            // another process first stays, and this one is told which.
            sqlx::query(
                "INSERT INTO chat_topics (chat_id, key, thread_id, name, created_at)
                 VALUES (?, ?, ?, ?, ?) ON CONFLICT (chat_id, key) DO NOTHING",
            )
            .bind(chat_id)
            .bind(key)
            .bind(thread_id)
            .bind(name)
            .bind(now)
            .execute(self.pool()?)
            .await?;
            let held: i32 = sqlx::query_scalar(
                "SELECT thread_id FROM chat_topics WHERE chat_id = ? AND key = ?",
            )
            .bind(chat_id)
            .bind(key)
            .fetch_one(self.pool()?)
            .await?;
            Ok(held)
        })
        .await
    }
}
