//! The waits, written once over the primitives: what ends a wait for a
//! reply, and when a wait's time is up. The backends supply only the
//! primitive steps (read the question again after a reply may have come,
//! pick up exactly one reply): locally a short sleep and a store read, over
//! HTTP a bounded long poll. This module neither sleeps nor calls the store
//! or the daemon itself.
//!
//! [`Ops::flag_and_await`] is `ask --wait`'s one path (the CLI's and MCP's): through a daemon one request
//! that flags and waits (the daemon runs the same [`step`] rule and marks
//! the reply picked up in that request); on the file a flag, then
//! [`Ops::await_reply`].

use std::time::Duration;

use tokio::time::Instant;

use super::{Awaited, Error, Ops, Result};
use crate::store::questions::{Flagged, NewQuestion, Question, Status};

/// When a wait ends; `None` never (wait until something arrives).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline(Option<Instant>);

impl Deadline {
    /// The deadline `wait` from now (`None`: no deadline).
    pub(crate) fn after(wait: Option<Duration>) -> Self {
        Deadline(wait.map(|w| Instant::now() + w))
    }

    /// Whether the time is up (never, without a deadline).
    pub(crate) fn passed(self) -> bool {
        self.0.is_some_and(|d| Instant::now() >= d)
    }

    /// The time left, at most `cap` (all of `cap` without a deadline; zero
    /// once it has passed).
    pub(crate) fn left(self, cap: Duration) -> Duration {
        match self.0 {
            Some(d) => d.saturating_duration_since(Instant::now()).min(cap),
            None => cap,
        }
    }
}

/// What a wait for a reply does with the question as it reads now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step {
    /// It was resolved or dismissed: the wait is over.
    Closed,
    /// It carries the agent's own answer, newer than the ask: the wait is over.
    Answered,
    /// A reply waits unseen: pick up exactly it.
    PickUp,
    /// Nothing yet: wait for a change (or the deadline).
    Wait,
}

/// Decide on `q`, the question asked as `asked`: closed ends the wait; an
/// unseen reply is picked up; an answer the agent recorded itself (born
/// seen) ends it when it is newer than the ask. The daemon's flag-and-wait
/// route decides with this same rule.
pub(crate) fn step(asked: &Question, q: &Question) -> Step {
    if q.status != Status::Open {
        return Step::Closed;
    }
    match &q.reply {
        Some(r) if r.seen_at.is_none() => Step::PickUp,
        Some(_) if q.reply_seq > asked.reply_seq => Step::Answered,
        _ => Step::Wait,
    }
}

fn gone() -> Error {
    Error::not_found("the question disappeared while waiting")
}

impl Ops {
    /// Flag `q` and wait up to `wait` for a reply not delivered before,
    /// picked up in `by`'s name: `ask --wait`. A daemon does both in one
    /// request (and the rest of a wait longer than its cap in long polls);
    /// the file flags, then waits by polling. At least once: a reply is
    /// delivered again by `pending` until the agent resolves the question.
    pub async fn flag_and_await(
        &self,
        q: &NewQuestion,
        by: &str,
        wait: Duration,
    ) -> Result<(Flagged, Awaited)> {
        let deadline = Deadline::after(Some(wait));
        let (flagged, awaited) = self.flag_wait(q, by, wait).await?;
        let awaited = match awaited {
            Some(Awaited::TimedOut(_)) if !deadline.passed() => {
                let left = deadline.left(Duration::MAX);
                self.await_reply(&flagged.question, by, left).await?
            }
            Some(a) => a,
            None => {
                let left = deadline.left(Duration::MAX);
                self.await_reply(&flagged.question, by, left).await?
            }
        };
        Ok((flagged, awaited))
    }

    /// Wait up to `wait` for a reply to `asked` not delivered before, and
    /// pick up exactly it. A reply already waiting counts; a reply that
    /// changed between the read and the pickup is read again, so the newer
    /// one is taken.
    pub async fn await_reply(&self, asked: &Question, by: &str, wait: Duration) -> Result<Awaited> {
        let deadline = Deadline::after(Some(wait));
        let mut q = self.get_question(&asked.id).await?.ok_or_else(gone)?;
        loop {
            match step(asked, &q) {
                Step::Closed => return Ok(Awaited::Closed(q)),
                Step::Answered => return Ok(Awaited::Reply(q)),
                Step::PickUp => {
                    if let Some(picked) = self.pick_up_reply(&q, by).await? {
                        return Ok(Awaited::Reply(picked));
                    }
                    q = self.get_question(&asked.id).await?.ok_or_else(gone)?;
                }
                Step::Wait if deadline.passed() => return Ok(Awaited::TimedOut(q)),
                Step::Wait => {
                    let within = deadline.left(Duration::MAX);
                    q = self
                        .watch_question(&asked.id, within)
                        .await?
                        .ok_or_else(gone)?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::questions::{Channel, Reply, ReplyKind};

    fn reply(seen_at: Option<i64>) -> Option<Reply> {
        Some(Reply {
            text: "yes".into(),
            context: None,
            kind: ReplyKind::Answer,
            source: Channel::Inbox,
            medium: Default::default(),
            by: "ann".into(),
            at: 1,
            seen_at,
        })
    }

    #[test]
    fn a_reply_wait_ends_on_close_or_a_new_answer_and_picks_up_unseen_ones() {
        let asked: Question = serde_json::from_value(serde_json::json!({
            "id": "q_1", "short_id": "q1", "project": "", "agent": "", "session": "",
            "key": null, "title": "t", "detail": "", "context": "", "options": [],
            "status": "open", "outcome": null, "reply": null, "reply_seq": 0,
            "revision": 1, "snoozed_until": null, "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "resolved_at": null
        }))
        .expect("a question decodes");
        assert_eq!(step(&asked, &asked), Step::Wait);
        let mut closed = asked.clone();
        closed.status = Status::Resolved;
        assert_eq!(step(&asked, &closed), Step::Closed);
        let mut unseen = asked.clone();
        unseen.reply_seq = 1;
        unseen.reply = reply(None);
        assert_eq!(step(&asked, &unseen), Step::PickUp);
        let mut own = unseen.clone();
        own.reply = reply(Some(5));
        assert_eq!(step(&asked, &own), Step::Answered);
        // A seen reply the ask already knew of is not an answer to it.
        assert_eq!(step(&own, &own), Step::Wait);
    }
}
