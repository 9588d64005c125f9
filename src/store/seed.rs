//! Bulk history for capacity benchmarks: a database that looks like months of
//! use, written in a few set-based statements instead of hundreds of
//! thousands of single writes.
//!
//! Each seeded question went the whole way: flagged, answered from the chat
//! (one reply record, one sent chat message), resolved, with its three
//! events. That is six rows per question. The daemon's durable cursors
//! (`chat`, `notify`) are moved to the end of the log, as they would be after
//! a daemon that kept up; start-up must then not depend on how long the
//! history is.
//!
//! On PostgreSQL the same rows are written by `postgres::seed`, in that
//! engine's spelling.

use super::postgres::seed as pg_seed;
use super::{Engine, Result, Store};

/// Rows [`Store::seed_history`] writes per question.
pub const ROWS_PER_QUESTION: u64 = 6;

/// Questions written per transaction, so the WAL stays bounded.
const BATCH: u64 = 20_000;

impl Store {
    /// Append `questions` finished questions (six rows each, see the module
    /// doc) to the history, in batches of 20,000, and move the daemon's
    /// cursors to the end of the event log. Returns the rows written. For
    /// benchmarks and capacity checks; it bypasses the per-write rules
    /// (the rows it writes are all in final states).
    #[doc(hidden)]
    pub async fn seed_history(&self, questions: u64) -> Result<u64> {
        let now = self.now();
        let mut done = 0;
        while done < questions {
            let n = BATCH.min(questions - done);
            let (first, last) = (done as i64 + 1, (done + n) as i64);
            if let Engine::Postgres(pg) = self.engine() {
                pg_seed::batch(pg, first, last, now).await?;
                done += n;
                continue;
            }
            let mut tx = self.begin_write().await?;
            let series =
                "WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2)";
            // Ids are not UUIDv7 but share their shape (32 hex digits), and
            // the leading `5eed` keeps them apart from real ids.
            let id = "printf('5eed%028x', i)";
            // Older questions further back: one a minute, the last one now.
            let at = "(?3 - (?2 - i) * 60000)";
            let statements = [
                format!(
                    "{series} INSERT INTO questions (id, project, agent, session, title, detail, status, \
                     outcome, reply, reply_kind, reply_source, replied_by, replied_at, reply_seen_at, \
                     reply_seq, created_at, updated_at, resolved_at) \
                     SELECT {id}, 'project-' || (i % 20), 'agent-' || (i % 50), 'session-' || (i % 500), \
                     'Seeded question ' || i, 'Which way should step ' || i || ' go?', 'resolved', 'done', \
                     'Option A', 'answer', 'chat', 'human', {at}, {at}, 1, {at} - 300000, {at}, {at} FROM s"
                ),
                format!(
                    "{series} INSERT INTO question_replies (question_id, reply_seq, action, reply, kind, \
                     source, by, revision, at) \
                     SELECT {id}, 1, 'reply', 'Option A', 'answer', 'chat', 'human', 1, {at} FROM s"
                ),
                format!(
                    "{series} INSERT INTO chat_messages (item_kind, item_id, chat_id, message_id, status, \
                     revision, created_at, updated_at) \
                     SELECT 'question', {id}, 1, i, 'sent', 1, {at} - 300000, {at} FROM s"
                ),
                format!(
                    "{series}, e(k, type, channel) AS (VALUES (0, 'question.flagged', 'agent'), \
                     (1, 'question.answered', 'chat'), (2, 'question.resolved', 'agent')) \
                     INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session) \
                     SELECT {at} - 300000 + k * 100000, type, 'question', {id}, 'seed', channel, \
                     'project-' || (i % 20), 'session-' || (i % 500) FROM s, e ORDER BY i, k"
                ),
            ];
            for sql in &statements {
                sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                    .bind(first)
                    .bind(last)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            done += n;
        }
        let end = self.last_event_seq().await?;
        for cursor in ["chat", "notify"] {
            self.set_cursor(cursor, end).await?;
        }
        Ok(questions * ROWS_PER_QUESTION)
    }
}
