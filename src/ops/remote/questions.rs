//! Question primitives over `/v1/questions` and `/v1/pending`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Answer, MAX_POLL, Remote, Request, named, query};
use crate::ops::backend::{Run, questions as call};
use crate::ops::{Awaited, Error, Result};
use crate::store::questions::{
    Delivery, Flagged, NewQuestion, NewReply, Outcome, Question, Refusal, ReplyRecord,
};
use crate::store::request;

/// Longest single long poll of a reply wait. Shorter than the API's cap so
/// an answer the agent recorded itself (which does not end a `wait=reply`
/// poll) is noticed within this time.
const REPLY_POLL: Duration = Duration::from_secs(25);

/// A question write's answer as the store's `Outcome`: a refusal in the
/// error's `detail` becomes the typed refusal; a 404 is `NotFound`.
fn outcome(a: Answer<Question>) -> Result<Outcome<Question>> {
    match a {
        Ok(q) => Ok(Ok(q)),
        Err(f) => match f.detail_as::<Refusal>() {
            Some(r) => Ok(Err(r)),
            None if f.status == 404 => Ok(Err(Refusal::NotFound)),
            None => Err(f.into()),
        },
    }
}

/// A read of something that may be absent: 404 is `None`.
fn optional<T>(a: Answer<T>) -> Result<Option<T>> {
    match a {
        Ok(v) => Ok(Some(v)),
        Err(f) if f.status == 404 && f.reason == "not_found" => Ok(None),
        Err(f) => Err(f.into()),
    }
}

fn flag_body(q: &NewQuestion) -> Value {
    json!({
        "project": q.project,
        "agent": q.agent,
        "session": q.session,
        "key": q.key,
        "title": q.title,
        "detail": q.detail,
        "context": q.context,
        "options": q.options,
    })
}

fn reply_body(r: &NewReply) -> Value {
    json!({
        "text": r.text,
        "kind": r.kind,
        "context": r.context,
        "expected_revision": r.expected_revision,
        "by": named(&r.by),
    })
}

#[derive(Deserialize)]
struct Polled {
    question: Question,
}

/// `POST /v1/questions?wait=reply`'s answer.
#[derive(Deserialize)]
struct Asked {
    created: bool,
    /// `reply`, `closed` or `timeout`.
    outcome: String,
    question: Question,
}

impl Asked {
    fn split(self) -> (Flagged, Awaited) {
        let awaited = match self.outcome.as_str() {
            "reply" => Awaited::Reply(self.question.clone()),
            "closed" => Awaited::Closed(self.question.clone()),
            _ => Awaited::TimedOut(self.question.clone()),
        };
        let flagged = Flagged {
            created: self.created,
            question: self.question,
        };
        (flagged, awaited)
    }
}

#[derive(Deserialize)]
struct Picked {
    picked: bool,
    question: Question,
}

#[derive(Deserialize)]
struct PendingAnswer {
    questions: Vec<Delivery>,
}

impl Run<call::ResolveQuestionId<'_>> for Remote {
    async fn run(
        &self,
        call::ResolveQuestionId(id): call::ResolveQuestionId<'_>,
    ) -> Result<Option<String>> {
        if id.trim().is_empty() {
            return Err(Error::invalid("the question id is empty"));
        }
        let q = optional(self.get::<Question>(&["questions", id.trim()], &[]).await)?;
        Ok(q.map(|q| q.id))
    }
}

impl Run<call::Flag<'_>> for Remote {
    async fn run(&self, call::Flag(q): call::Flag<'_>) -> Result<Flagged> {
        Ok(self.post(&["questions"], flag_body(q)).await?)
    }
}

// One `POST /v1/questions?wait=reply&timeout=…&by=…`: the daemon
// flags, waits up to `within` (at most `MAX_POLL`) and marks the
// reply picked up in the same request. The request carries a request
// id, so over TCP a daemon that cannot be reached (restarting) is
// asked again for up to `RETRY_WINDOW` (`Remote::retrying`) with the same id: a flag it
// committed is replayed, not made twice.
impl Run<call::FlagWait<'_>> for Remote {
    async fn run(
        &self,
        call::FlagWait(q, by, within): call::FlagWait<'_>,
    ) -> Result<(Flagged, Option<Awaited>)> {
        let poll = within.min(MAX_POLL);
        let mut params = vec![
            ("wait", "reply".to_string()),
            ("timeout", format!("{}ms", poll.as_millis())),
        ];
        params.extend(named(by).map(|b| ("by", b)));
        let ask = Request {
            method: reqwest::Method::POST,
            segments: &["questions"],
            query: &params,
            body: Some(flag_body(q)),
            wait: Some(poll),
        };
        // Each retry is safe: under the request id a repeated flag is a replay.
        let send = self.retrying(|| true, || self.call_once::<Asked>(&ask));
        let (asked, _) = match request::current() {
            Some(_) => send.await?,
            None => request::scope(request::fresh(), send).await?,
        };
        let (flagged, awaited) = asked.split();
        Ok((flagged, Some(awaited)))
    }
}

impl Run<call::GetQuestion<'_>> for Remote {
    async fn run(&self, call::GetQuestion(id): call::GetQuestion<'_>) -> Result<Option<Question>> {
        optional(self.get(&["questions", id], &[]).await)
    }
}

impl Run<call::QuestionReplies<'_>> for Remote {
    async fn run(
        &self,
        call::QuestionReplies(id): call::QuestionReplies<'_>,
    ) -> Result<Vec<ReplyRecord>> {
        Ok(self.get_all(&["questions", id, "replies"], &[]).await?)
    }
}

impl Run<call::ListQuestions<'_>> for Remote {
    async fn run(&self, call::ListQuestions(f): call::ListQuestions<'_>) -> Result<Vec<Question>> {
        let q = query(&[
            ("status", f.status.map(|s| s.as_str().to_string())),
            ("project", f.project.clone()),
            ("session", f.session.clone()),
        ]);
        let mut all: Vec<Question> = self.get_all(&["questions"], &q).await?;
        if let Some(n) = f.limit {
            all.truncate(usize::try_from(n).unwrap_or(0));
        }
        Ok(all)
    }
}

impl Run<call::PendingReplies<'_>> for Remote {
    async fn run(
        &self,
        call::PendingReplies(project, session, include_seen, by): call::PendingReplies<'_>,
    ) -> Result<Vec<Delivery>> {
        let q = query(&[
            ("only", Some("questions".into())),
            ("project", project.map(str::to_string)),
            ("session", session.map(str::to_string)),
            ("new", Some((!include_seen).to_string())),
            ("by", named(by)),
        ]);
        let a: PendingAnswer = self.get(&["pending"], &q).await?;
        Ok(a.questions)
    }
}

// `pickup` by the reply's `reply_seq`: exactly the reply read.
impl Run<call::PickUpReply<'_>> for Remote {
    async fn run(
        &self,
        call::PickUpReply(q, by): call::PickUpReply<'_>,
    ) -> Result<Option<Question>> {
        let body = json!({"reply_seq": q.reply_seq, "by": named(by)});
        let p: Picked = self.post(&["questions", &q.id, "pickup"], body).await?;
        Ok(p.picked.then_some(p.question))
    }
}

// One long poll (`wait=reply`) of at most `within` and `REPLY_POLL`:
// it ends when a reply waits unseen or the question closes.
impl Run<call::WatchQuestion<'_>> for Remote {
    async fn run(
        &self,
        call::WatchQuestion(id, within): call::WatchQuestion<'_>,
    ) -> Result<Option<Question>> {
        let poll = within.min(REPLY_POLL).max(Duration::from_millis(1));
        let params = [
            ("wait", "reply".to_string()),
            ("timeout", format!("{}ms", poll.as_millis())),
        ];
        let polled = self
            .call::<Polled>(
                reqwest::Method::GET,
                &["questions", id],
                &params,
                None,
                Some(poll),
            )
            .await;
        Ok(optional(polled)?.map(|p| p.question))
    }
}

impl Run<call::ReplyInbox<'_>> for Remote {
    async fn run(
        &self,
        call::ReplyInbox(id, r): call::ReplyInbox<'_>,
    ) -> Result<Outcome<Question>> {
        outcome(self.post(&["questions", id, "reply"], reply_body(r)).await)
    }
}

impl Run<call::AnswerAgent<'_>> for Remote {
    async fn run(
        &self,
        call::AnswerAgent(id, r): call::AnswerAgent<'_>,
    ) -> Result<Outcome<Question>> {
        outcome(self.post(&["questions", id, "answer"], reply_body(r)).await)
    }
}

impl Run<call::ResolveQuestion<'_>> for Remote {
    async fn run(
        &self,
        call::ResolveQuestion(id, outcome_text, by): call::ResolveQuestion<'_>,
    ) -> Result<Outcome<Question>> {
        let body = json!({"outcome": outcome_text, "by": named(by)});
        outcome(self.post(&["questions", id, "resolve"], body).await)
    }
}

impl Run<call::DismissQuestion<'_>> for Remote {
    async fn run(
        &self,
        call::DismissQuestion(id, reason, by): call::DismissQuestion<'_>,
    ) -> Result<Outcome<Question>> {
        let body = json!({"reason": reason, "by": named(by)});
        outcome(self.post(&["questions", id, "dismiss"], body).await)
    }
}

impl Run<call::SnoozeQuestion<'_>> for Remote {
    async fn run(
        &self,
        call::SnoozeQuestion(id, for_ms, by): call::SnoozeQuestion<'_>,
    ) -> Result<Outcome<Question>> {
        let body = json!({"for": format!("{}ms", for_ms.max(0)), "by": named(by)});
        outcome(self.post(&["questions", id, "snooze"], body).await)
    }
}
