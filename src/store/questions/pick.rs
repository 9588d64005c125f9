//! Ticking the options of a multiple choice (an agent's own prompt drawn as
//! toggles with a Done button): each tap flips one option and bumps the
//! question's revision, so a tap on a card drawn before it is stale.
//! The answer itself is a reply like any other (`reply.rs`).

use std::sync::Arc;

use super::read::lock;
use super::write::explain_closed;
use super::{Channel, Outcome, Question, Refusal, Status};
use crate::store::engine::{Stmt, Tx};
use crate::store::{Result, Store};

/// One toggle, owned for the write.
struct Toggle {
    id: String,
    option: u8,
    expected_revision: i64,
    by: String,
    via: Channel,
}

impl Store {
    /// Flip option `option` of the open multiple choice `id`, drawn at
    /// `expected_revision`. Refused as stale when the card changed since
    /// (another tap, a re-flag), and while an answer waits unread.
    pub async fn question_toggle(
        &self,
        id: &str,
        option: u8,
        expected_revision: i64,
        by: &str,
        via: Channel,
    ) -> Result<Outcome<Question>> {
        let t = Arc::new(Toggle {
            id: id.to_string(),
            option,
            expected_revision,
            by: by.to_string(),
            via,
        });
        self.write_with(t, |tx, t, now| Box::pin(toggle_in(tx, t, now)))
            .await
    }
}

/// The toggle; refused, once more after [`Tx::begin`] with the row read
/// (and on PostgreSQL locked) first, so the refusal is explained by the
/// state that refused it (see `reply.rs`).
async fn toggle_in(mut tx: Tx<'_>, t: Arc<Toggle>, now: i64) -> Result<Outcome<Question>> {
    if let Some(q) = tx.row(&toggle(&t, now)).await? {
        return Ok(Ok(q));
    }
    tx.begin().await?;
    let Some(q) = tx.row::<Question>(&lock(&t.id)).await? else {
        return Ok(Err(Refusal::NotFound));
    };
    if let Some(q) = tx.row(&toggle(&t, now)).await? {
        return Ok(Ok(q));
    }
    if q.status != Status::Open {
        return Ok(Err(explain_closed(Some(&q))));
    }
    if let Some(r) = q.reply.filter(|r| r.seen_at.is_none()) {
        return Ok(Err(Refusal::UnreadAnswer {
            reply: r.text,
            kind: r.kind,
            source: r.source,
            by: r.by,
        }));
    }
    // A stale drawing, or a button this card does not have.
    Ok(Err(Refusal::Stale {
        current_revision: q.revision,
    }))
}

/// The toggle's guarded UPDATE.
fn toggle(t: &Toggle, now: i64) -> Stmt<'_> {
    let bit: i64 = 1 << t.option.min(62);
    // Why this predicate: the tap applies only to the card it was drawn
    // on (`revision = $4`), of an open multiple choice that has such an
    // option, while no answer waits unread; the bump makes every earlier
    // drawing stale, so of two racing taps on one drawing exactly one wins.
    // `(picked | b) - (picked & b)` is `picked XOR b` (SQLite has no XOR).
    Stmt::spelled(
        "UPDATE questions SET picked = (picked | $3) - (picked & $3), revision = revision + 1,
             updated_at = $1, t_seq = t_seq + 1, t_at = $1, t_event = 'question.toggled',
             t_history = NULL, t_by = $5, t_actor = $6, t_channel = $7,
             t_payload = json_object('option', $8, 'picked', (picked | $3) - (picked & $3),
                                     'revision', revision + 1, 'by', $5)
         WHERE id = $2 AND status = 'open' AND choice = 'many' AND revision = $4
           AND $8 < json_array_length(options)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL)
         RETURNING *",
        "UPDATE questions SET picked = picked # $3, revision = revision + 1,
             updated_at = $1, t_seq = t_seq + 1, t_at = $1, t_event = 'question.toggled',
             t_history = NULL, t_by = $5, t_actor = $6, t_channel = $7,
             t_payload = handoff_json_set(json_build_object(
                 'option', $8, 'picked', picked # $3, 'revision', revision + 1, 'by', $5)::text,
                 '{}', '{}')
         WHERE id = $2 AND status = 'open' AND choice = 'many' AND revision = $4
           AND $8 < json_array_length(options::json)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL)
         RETURNING *",
    )
    .int(now)
    .text(t.id.as_str())
    .int(bit)
    .int(t.expected_revision)
    .text(t.by.as_str())
    .text(if t.by.is_empty() {
        t.via.as_str()
    } else {
        &t.by
    })
    .text(t.via.as_str())
    .int(i64::from(t.option))
}
