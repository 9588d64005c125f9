//! [`Store::seed_history`](crate::store::Store::seed_history) on PostgreSQL:
//! the same rows as on SQLite (see `store/seed.rs`), in PostgreSQL's
//! spelling: `generate_series` for the recursive series, `to_hex` and
//! `lpad` for `printf('%028x')`, `$N` placeholders, `"by"` quoted. The
//! events get their seqs from the commit-order trigger one row at a time,
//! in the order the statement inserts them (`ORDER BY i, k`).

use super::Pg;
use crate::store::Result;

/// Write questions `first..=last` (six rows each), ending `now`, in one
/// transaction.
pub(crate) async fn batch(pg: &Pg, first: i64, last: i64, now: i64) -> Result<()> {
    let series = "FROM generate_series($1::BIGINT, $2::BIGINT) AS s(i)";
    // Ids share UUIDv7's shape (32 hex digits); `5eed` keeps them apart.
    let id = "'5eed' || lpad(to_hex(i), 28, '0')";
    // Older questions further back: one a minute, the last one now.
    let at = "($3::BIGINT - ($2::BIGINT - i) * 60000)";
    let statements = [
        format!(
            "INSERT INTO questions (id, project, agent, session, title, detail, status, \
             outcome, reply, reply_kind, reply_source, replied_by, replied_at, reply_seen_at, \
             reply_seq, created_at, updated_at, resolved_at) \
             SELECT {id}, 'project-' || (i % 20), 'agent-' || (i % 50), 'session-' || (i % 500), \
             'Seeded question ' || i, 'Which way should step ' || i || ' go?', 'resolved', 'done', \
             'Option A', 'answer', 'chat', 'human', {at}, {at}, 1, {at} - 300000, {at}, {at} {series}"
        ),
        format!(
            "INSERT INTO question_replies (question_id, reply_seq, action, reply, kind, \
             source, \"by\", revision, at) \
             SELECT {id}, 1, 'reply', 'Option A', 'answer', 'chat', 'human', 1, {at} {series}"
        ),
        format!(
            "INSERT INTO chat_messages (item_kind, item_id, chat_id, message_id, status, \
             revision, created_at, updated_at) \
             SELECT 'question', {id}, 1, i, 'sent', 1, {at} - 300000, {at} {series}"
        ),
        format!(
            "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session) \
             SELECT {at} - 300000 + k * 100000, type, 'question', {id}, 'seed', channel, \
             'project-' || (i % 20), 'session-' || (i % 500) {series}, \
             (VALUES (0, 'question.flagged', 'agent'), (1, 'question.answered', 'chat'), \
             (2, 'question.resolved', 'agent')) AS e(k, type, channel) ORDER BY i, k"
        ),
    ];
    let mut tx = pg.pool().begin().await?;
    for sql in &statements {
        sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
            .bind(first)
            .bind(last)
            .bind(now)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
