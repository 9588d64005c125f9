//! Ticking the options of a multiple choice (an agent's own prompt drawn as
//! toggles with a Done button): each tap flips one option and bumps the
//! question's revision, so a tap on a card drawn before it is stale.
//! The answer itself is a reply like any other (`reply.rs`).

use std::sync::Arc;

use super::read::get_on;
use super::write::explain_closed;
use super::{Channel, Outcome, Question, Refusal, Status, from_row};
use crate::store::postgres::questions as pg;
use crate::store::writer::Turn;
use crate::store::{Engine, Result, Store};

/// One toggle, owned for the write queue.
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
        if let Engine::Postgres(p) = self.engine() {
            let t = pg::Toggle {
                id: id.to_string(),
                option,
                expected_revision,
                by: by.to_string(),
                via,
            };
            return pg::toggle(self, p, t).await;
        }
        let t = Arc::new(Toggle {
            id: id.to_string(),
            option,
            expected_revision,
            by: by.to_string(),
            via,
        });
        let clock = self.clock().clone();
        self.retry(|| {
            let (t, clock) = (t.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move { toggle_in(turn, &t, clock.now_ms()).await })
            })
        })
        .await
    }
}

async fn toggle_in(turn: &mut Turn, t: &Toggle, now: i64) -> Result<Outcome<Question>> {
    let bit: i64 = 1 << t.option.min(62);
    // Why this predicate: the tap applies only to the card it was drawn
    // on (`revision = ?`), of an open multiple choice that has such an
    // option, while no answer waits unread; the bump makes every earlier
    // drawing stale, so of two racing taps on one drawing exactly one wins.
    // `(picked | b) - (picked & b)` is `picked XOR b` (SQLite has no XOR).
    let row = sqlx::query(
        "UPDATE questions SET picked = (picked | ?3) - (picked & ?3), revision = revision + 1,
             updated_at = ?1, t_seq = t_seq + 1, t_at = ?1, t_event = 'question.toggled',
             t_history = NULL, t_by = ?5, t_actor = ?6, t_channel = ?7,
             t_payload = json_object('option', ?8, 'picked', (picked | ?3) - (picked & ?3),
                                     'revision', revision + 1, 'by', ?5)
         WHERE id = ?2 AND status = 'open' AND choice = 'many' AND revision = ?4
           AND ?8 < json_array_length(options)
           AND (reply IS NULL OR reply_seen_at IS NOT NULL)
         RETURNING *",
    )
    .bind(now)
    .bind(&t.id)
    .bind(bit)
    .bind(t.expected_revision)
    .bind(&t.by)
    .bind(if t.by.is_empty() {
        t.via.as_str()
    } else {
        &t.by
    })
    .bind(t.via.as_str())
    .bind(i64::from(t.option))
    .fetch_optional(turn.conn())
    .await?;
    if let Some(row) = row {
        return Ok(Ok(from_row(&row)?));
    }
    turn.begin().await?;
    let conn = turn.conn();
    let Some(q) = get_on(conn, &t.id).await? else {
        return Ok(Err(Refusal::NotFound));
    };
    if q.status != Status::Open {
        return Ok(Err(explain_closed(conn, &t.id).await?));
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
