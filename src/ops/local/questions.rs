//! [`QuestionOps`] on the store: one store call each, plus the polling
//! step of a reply wait that needs no daemon.

use std::time::Duration;

use super::{Local, POLL};
use crate::ops::Awaited;
use crate::ops::backend::{Call, QuestionOps};
use crate::store::questions::{
    self, Delivery, Flagged, ListFilter, NewQuestion, NewReply, Outcome, Question, ReplyRecord,
};

impl QuestionOps for Local {
    fn resolve_question_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        Box::pin(async move { Ok(self.store.resolve_question_id(id).await?) })
    }

    fn flag<'a>(&'a self, q: &'a NewQuestion) -> Call<'a, Flagged> {
        Box::pin(async move { Ok(self.store.flag(q).await?) })
    }

    // Flag only: without a daemon the wait polls the file
    // (`Ops::flag_and_await`).
    fn flag_wait<'a>(
        &'a self,
        q: &'a NewQuestion,
        _by: &'a str,
        _within: Duration,
    ) -> Call<'a, (Flagged, Option<Awaited>)> {
        Box::pin(async move { Ok((self.store.flag(q).await?, None)) })
    }

    fn get_question<'a>(&'a self, id: &'a str) -> Call<'a, Option<Question>> {
        Box::pin(async move { Ok(self.store.get_question(id).await?) })
    }

    fn question_replies<'a>(&'a self, id: &'a str) -> Call<'a, Vec<ReplyRecord>> {
        Box::pin(async move { Ok(self.store.question_replies(id).await?) })
    }

    fn list_questions<'a>(&'a self, filter: &'a ListFilter) -> Call<'a, Vec<Question>> {
        Box::pin(async move { Ok(self.store.list_questions(filter).await?) })
    }

    fn pending_replies<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        include_seen: bool,
        by: &'a str,
    ) -> Call<'a, Vec<Delivery>> {
        Box::pin(async move {
            Ok(self
                .store
                .pending(project, session, include_seen, by)
                .await?)
        })
    }

    fn pick_up_reply<'a>(&'a self, q: &'a Question, by: &'a str) -> Call<'a, Option<Question>> {
        Box::pin(async move {
            let Some(at) = self.store.mark_reply_seen(q, by).await? else {
                return Ok(None);
            };
            let mut q = q.clone();
            if let Some(r) = q.reply.as_mut() {
                r.seen_at = Some(at);
            }
            Ok(Some(q))
        })
    }

    // Sleep one poll interval (at most `within`), then read the question:
    // a wait needs no daemon.
    fn watch_question<'a>(&'a self, id: &'a str, within: Duration) -> Call<'a, Option<Question>> {
        Box::pin(async move {
            self.pause(POLL.min(within)).await;
            Ok(self.store.get_question(id).await?)
        })
    }

    fn reply_inbox<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        Box::pin(async move { Ok(self.store.reply_inbox(id, r).await?) })
    }

    fn answer_agent<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        Box::pin(async move { Ok(self.store.answer_agent(id, r).await?) })
    }

    fn resolve_question<'a>(
        &'a self,
        id: &'a str,
        outcome: &'a str,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(async move { Ok(self.store.resolve_question(id, outcome, by).await?) })
    }

    fn dismiss_question<'a>(
        &'a self,
        id: &'a str,
        reason: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(async move {
            Ok(self
                .store
                .dismiss_question(id, reason, by, questions::Channel::Inbox)
                .await?)
        })
    }

    fn snooze_question<'a>(
        &'a self,
        id: &'a str,
        for_ms: i64,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(async move {
            let until = self.store.now().saturating_add(for_ms);
            Ok(self
                .store
                .snooze_question(id, until, by, questions::Channel::Inbox)
                .await?)
        })
    }
}
