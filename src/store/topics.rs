//! Forum topics the chat bridge created, one per (chat, project or
//! session), so every later push of that project goes to the same topic,
//! across restarts. This module only remembers: creating a topic is the
//! chat bridge's (`chat/topics.rs`).

use super::engine::Stmt;
use super::{Error, Result, Store};

/// The topic remembered for a key in a chat. Same text on both engines.
const GET: &str = "SELECT thread_id FROM chat_topics WHERE chat_id = $1 AND key = $2";

/// Remember a topic unless one is remembered already. Why ON CONFLICT DO
/// NOTHING and read back: a topic saved by another process first stays,
/// and this one is told which.
const SAVE: &str = "INSERT INTO chat_topics (chat_id, key, thread_id, name, created_at)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (chat_id, key) DO NOTHING";

/// A stored thread id (BIGINT on PostgreSQL) as Telegram's 32 bits.
fn thread(id: i64) -> Result<i32> {
    i32::try_from(id)
        .map_err(|_| Error::Corrupt(format!("topic thread id {id} does not fit 32 bits")))
}

impl Store {
    /// The topic remembered for `key` in `chat_id`, if any.
    pub async fn topic_get(&self, chat_id: i64, key: &str) -> Result<Option<i32>> {
        let id: Option<(i64,)> = self.row(Stmt::new(GET).int(chat_id).text(key)).await?;
        id.map(|(id,)| thread(id)).transpose()
    }

    /// Remember `thread_id` as the topic of `key` in `chat_id`; the topic
    /// that holds after the call (an earlier one wins: its messages are
    /// already there). Two statements, each a write or read of its own:
    /// the read after the insert sees whichever save committed first.
    pub async fn topic_save(
        &self,
        chat_id: i64,
        key: &str,
        name: &str,
        thread_id: i32,
    ) -> Result<i32> {
        let save = Stmt::new(SAVE)
            .int(chat_id)
            .text(key)
            .int(i64::from(thread_id))
            .text(name)
            .int(self.now());
        self.change(save).await?;
        thread(self.first(Stmt::new(GET).int(chat_id).text(key)).await?)
    }
}
