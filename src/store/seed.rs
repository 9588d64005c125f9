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
//! The same rows on both engines, by the same statements but for how
//! they spell an id.

use super::engine::Stmt;
use super::{Result, Store};

/// Rows [`Store::seed_history`] writes per question.
pub const ROWS_PER_QUESTION: u64 = 6;

/// Questions written per transaction, so the WAL stays bounded.
const BATCH: u64 = 20_000;

/// The four statements that write questions `$1..=$2`, ending at `$3`, with
/// `$id` spelling a seeded question's id from its number `i`. Ids are not
/// UUIDv7 but share their shape (32 hex digits), and the leading `5eed`
/// keeps them apart from real ids. Older questions lie further back: one a
/// minute, the last one at `$3`. The events get their seqs in the order the
/// statement inserts them (`ORDER BY i, k`; on PostgreSQL from the
/// commit-order trigger, one row at a time).
macro_rules! seeding {
    ($id:literal) => {
        [
            concat!(
                "WITH RECURSIVE s(i) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT i + 1 FROM s WHERE i < $2)
                 INSERT INTO questions (id, project, agent, session, title, detail, status,
                     outcome, reply, reply_kind, reply_source, replied_by, replied_at, reply_seen_at,
                     reply_seq, created_at, updated_at, resolved_at)
                 SELECT ", $id, ", 'project-' || (i % 20), 'agent-' || (i % 50), 'session-' || (i % 500),
                     'Seeded question ' || i, 'Which way should step ' || i || ' go?', 'resolved', 'done',
                     'Option A', 'answer', 'chat', 'human', ", seeding!(@at), ", ", seeding!(@at), ", 1, ",
                     seeding!(@at), " - 300000, ", seeding!(@at), ", ", seeding!(@at), " FROM s"
            ),
            concat!(
                "WITH RECURSIVE s(i) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT i + 1 FROM s WHERE i < $2)
                 INSERT INTO question_replies (question_id, reply_seq, action, reply, kind, source, \"by\",
                     revision, at)
                 SELECT ", $id, ", 1, 'reply', 'Option A', 'answer', 'chat', 'human', 1, ",
                     seeding!(@at), " FROM s"
            ),
            concat!(
                "WITH RECURSIVE s(i) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT i + 1 FROM s WHERE i < $2)
                 INSERT INTO chat_messages (item_kind, item_id, chat_id, message_id, status, revision,
                     created_at, updated_at)
                 SELECT 'question', ", $id, ", 1, i, 'sent', 1, ", seeding!(@at), " - 300000, ",
                     seeding!(@at), " FROM s"
            ),
            concat!(
                "WITH RECURSIVE s(i) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT i + 1 FROM s WHERE i < $2),
                 e(k, type, channel) AS (VALUES (0, 'question.flagged', 'agent'),
                     (1, 'question.answered', 'chat'), (2, 'question.resolved', 'agent'))
                 INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session)
                 SELECT ", seeding!(@at), " - 300000 + k * 100000, type, 'question', ", $id, ", 'seed',
                     channel, 'project-' || (i % 20), 'session-' || (i % 500) FROM s, e ORDER BY i, k"
            ),
        ]
    };
    (@at) => {
        "(CAST($3 AS BIGINT) - (CAST($2 AS BIGINT) - i) * 60000)"
    };
}

/// The statements in SQLite's spelling of the id (`printf`)…
const LITE: [&str; 4] = seeding!("printf('5eed%028x', i)");
/// …and in PostgreSQL's (`to_hex`, `lpad`).
const PG: [&str; 4] = seeding!("'5eed' || lpad(to_hex(i), 28, '0')");

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
            self.transact((), move |mut tx, (), _| {
                Box::pin(async move {
                    for (lite, pg) in LITE.into_iter().zip(PG) {
                        let batch = Stmt::spelled(lite, pg).int(first).int(last).int(now);
                        tx.change(&batch).await?;
                    }
                    Ok(())
                })
            })
            .await?;
            done += n;
        }
        let end = self.last_event_seq().await?;
        for cursor in ["chat", "notify"] {
            self.set_cursor(cursor, end).await?;
        }
        Ok(questions * ROWS_PER_QUESTION)
    }
}
