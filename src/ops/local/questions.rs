//! The question primitives on the store: one store call each, plus the polling
//! step of a reply wait that needs no daemon.

use super::{Local, POLL};
use crate::ops::Awaited;
use crate::ops::backend::{Run, questions as call};
use crate::ops::{Error, Result};
use crate::store::Channel;
use crate::store::questions::{self, Delivery, Flagged, NewReply, Outcome, Question, ReplyRecord};

impl Local {
    /// The question `id` (full or short) if it is in scope; another
    /// project's question is not found, as if absent.
    pub async fn question(&self, id: &str) -> Result<Question> {
        let missing = || Error::not_found(format!("no question `{id}`; list yours with `pending`"));
        let full = self
            .store
            .resolve_question_id(id)
            .await?
            .ok_or_else(missing)?;
        let q = self.store.get_question(&full).await?.ok_or_else(missing)?;
        if self.scope().is_some_and(|p| p != q.project) {
            return Err(missing());
        }
        Ok(q)
    }

    /// Reply to the question `id` from chat (a tap's answer or a text
    /// reply), through the chat channel's guarded writer.
    pub async fn reply_chat(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        let id = self.question_id(id).await?;
        Ok(self.store.reply_chat(&id, r).await?)
    }

    /// Toggle option `option` of a multiple-choice card drawn at
    /// `expected_revision`, by `by` through `via`.
    pub async fn question_toggle(
        &self,
        id: &str,
        option: u8,
        expected_revision: i64,
        by: &str,
        via: Channel,
    ) -> Result<Outcome<Question>> {
        let id = self.question_id(id).await?;
        Ok(self
            .store
            .question_toggle(&id, option, expected_revision, by, via)
            .await?)
    }

    /// A question id as given, checked against the scope when there is one
    /// (the store resolves an unscoped one itself).
    async fn question_id(&self, id: &str) -> Result<String> {
        match self.scope() {
            None => Ok(id.to_string()),
            Some(_) => Ok(self.question(id).await?.id),
        }
    }
}

impl Run<call::ResolveQuestionId<'_>> for Local {
    async fn run(
        &self,
        call::ResolveQuestionId(id): call::ResolveQuestionId<'_>,
    ) -> Result<Option<String>> {
        match self.scope() {
            None => Ok(self.store.resolve_question_id(id).await?),
            Some(_) => match self.question(id).await {
                Ok(q) => Ok(Some(q.id)),
                Err(Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            },
        }
    }
}

impl Run<call::Flag<'_>> for Local {
    async fn run(&self, call::Flag(q): call::Flag<'_>) -> Result<Flagged> {
        Ok(self.store.flag(q).await?)
    }
}

// Flag only: without a daemon the wait polls the file
// (`Ops::flag_and_await`).
impl Run<call::FlagWait<'_>> for Local {
    async fn run(
        &self,
        call::FlagWait(q, _by, _within): call::FlagWait<'_>,
    ) -> Result<(Flagged, Option<Awaited>)> {
        Ok((self.store.flag(q).await?, None))
    }
}

impl Run<call::GetQuestion<'_>> for Local {
    async fn run(&self, call::GetQuestion(id): call::GetQuestion<'_>) -> Result<Option<Question>> {
        let q = self.store.get_question(id).await?;
        Ok(q.filter(|q| self.scope().is_none_or(|p| p == q.project)))
    }
}

impl Run<call::QuestionReplies<'_>> for Local {
    async fn run(
        &self,
        call::QuestionReplies(id): call::QuestionReplies<'_>,
    ) -> Result<Vec<ReplyRecord>> {
        let id = self.question_id(id).await?;
        Ok(self.store.question_replies(&id).await?)
    }
}

impl Run<call::ListQuestions<'_>> for Local {
    async fn run(
        &self,
        call::ListQuestions(filter): call::ListQuestions<'_>,
    ) -> Result<Vec<Question>> {
        match self.scope() {
            None => Ok(self.store.list_questions(filter).await?),
            Some(p) => {
                let mut filter = filter.clone();
                filter.project = Some(p.to_string());
                Ok(self.store.list_questions(&filter).await?)
            }
        }
    }
}

impl Run<call::PendingReplies<'_>> for Local {
    async fn run(
        &self,
        call::PendingReplies(project, session, include_seen, by): call::PendingReplies<'_>,
    ) -> Result<Vec<Delivery>> {
        let project = self.scope().or(project);
        Ok(self
            .store
            .pending(project, session, include_seen, by)
            .await?)
    }
}

impl Run<call::PickUpReply<'_>> for Local {
    async fn run(
        &self,
        call::PickUpReply(q, by): call::PickUpReply<'_>,
    ) -> Result<Option<Question>> {
        let Some(at) = self.store.mark_reply_seen(q, by).await? else {
            return Ok(None);
        };
        let mut q = q.clone();
        if let Some(r) = q.reply.as_mut() {
            r.seen_at = Some(at);
        }
        Ok(Some(q))
    }
}

// Sleep one poll interval (at most `within`), then read the question:
// a wait needs no daemon.
impl Run<call::WatchQuestion<'_>> for Local {
    async fn run(
        &self,
        call::WatchQuestion(id, within): call::WatchQuestion<'_>,
    ) -> Result<Option<Question>> {
        self.pause(POLL.min(within)).await;
        Ok(self.store.get_question(id).await?)
    }
}

impl Run<call::ReplyInbox<'_>> for Local {
    async fn run(
        &self,
        call::ReplyInbox(id, r): call::ReplyInbox<'_>,
    ) -> Result<Outcome<Question>> {
        let id = self.question_id(id).await?;
        Ok(self.store.reply_inbox(&id, r).await?)
    }
}

impl Run<call::AnswerAgent<'_>> for Local {
    async fn run(
        &self,
        call::AnswerAgent(id, r): call::AnswerAgent<'_>,
    ) -> Result<Outcome<Question>> {
        let id = self.question_id(id).await?;
        Ok(self.store.answer_agent(&id, r).await?)
    }
}

impl Run<call::ResolveQuestion<'_>> for Local {
    async fn run(
        &self,
        call::ResolveQuestion(id, outcome, by): call::ResolveQuestion<'_>,
    ) -> Result<Outcome<Question>> {
        let id = self.question_id(id).await?;
        Ok(self.store.resolve_question(&id, outcome, by).await?)
    }
}

impl Run<call::DismissQuestion<'_>> for Local {
    async fn run(
        &self,
        call::DismissQuestion(id, reason, by): call::DismissQuestion<'_>,
    ) -> Result<Outcome<Question>> {
        let id = self.question_id(id).await?;
        Ok(self
            .store
            .dismiss_question(&id, reason, by, questions::Channel::Inbox)
            .await?)
    }
}

impl Run<call::SnoozeQuestion<'_>> for Local {
    async fn run(
        &self,
        call::SnoozeQuestion(id, for_ms, by): call::SnoozeQuestion<'_>,
    ) -> Result<Outcome<Question>> {
        let id = self.question_id(id).await?;
        let until = self.store.now().saturating_add(for_ms);
        Ok(self
            .store
            .snooze_question(&id, until, by, questions::Channel::Inbox)
            .await?)
    }
}
