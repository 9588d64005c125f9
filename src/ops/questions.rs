//! Questions for the agent: ask (with an optional bounded wait), pending
//! (question replies and board-row responses), answer and resolve. Written
//! once over the primitives, so they run locally and remotely alike.

use std::time::Duration;

use super::local::{parse, required};
use super::requests::{
    AnswerRequest, AskRequest, MAX_WAIT_SECONDS, PendingRequest, ResolveRequest,
};
use super::results::{Asked, Pending};
use super::{Awaited, Error, Ops, Result};
use crate::store::questions::{NewQuestion, NewReply, Question, QuestionOption, ReplyKind};

/// A bounded wait: `None` for no wait, else at most [`MAX_WAIT_SECONDS`].
pub(super) fn wait_for(seconds: Option<u64>) -> Result<Option<Duration>> {
    match seconds {
        None | Some(0) => Ok(None),
        Some(s) if s > MAX_WAIT_SECONDS => Err(Error::invalid(format!(
            "wait_seconds is at most {MAX_WAIT_SECONDS} (10 minutes); wait again with another call"
        ))),
        Some(s) => Ok(Some(Duration::from_secs(s))),
    }
}

impl Ops {
    /// The full id of question `id` (full or short).
    async fn question_id(&self, id: &str) -> Result<String> {
        required("id", id)?;
        self.resolve_question_id(id.trim()).await?.ok_or_else(|| {
            Error::not_found(format!(
                "no question `{id}`; `pending` lists the ones with replies"
            ))
        })
    }

    pub async fn ask(&self, r: AskRequest) -> Result<Asked> {
        let wait = wait_for(r.wait_seconds)?;
        let q = NewQuestion {
            project: r.project.unwrap_or_default(),
            agent: r.agent.unwrap_or_default(),
            session: r.session.unwrap_or_default(),
            key: r.key.filter(|k| !k.trim().is_empty()),
            title: r.title,
            detail: r.detail,
            context: r.context,
            options: r.options.into_iter().map(QuestionOption::from).collect(),
        };
        let Some(wait) = wait else {
            let flagged = self.flag(&q).await?;
            return Ok(Asked {
                created: flagged.created,
                answered: false,
                timed_out: false,
                question: flagged.question,
            });
        };
        let (flagged, awaited) = self.flag_and_await(&q, &q.agent, wait).await?;
        let mut asked = Asked {
            created: flagged.created,
            answered: false,
            timed_out: false,
            question: flagged.question,
        };
        match awaited {
            Awaited::Reply(q) => {
                asked.answered = true;
                asked.question = q;
            }
            Awaited::Closed(q) => {
                let why = q.outcome.as_deref().unwrap_or("");
                return Err(Error::refused(
                    "not_open",
                    format!("the question was {} while waiting: {why}", q.status),
                    super::local::detail(&q),
                ));
            }
            Awaited::TimedOut(_) => asked.timed_out = true,
        }
        Ok(asked)
    }

    pub async fn pending(&self, r: PendingRequest) -> Result<Pending> {
        let project = r.project.filter(|p| !p.is_empty());
        let session = r.session.filter(|s| !s.is_empty());
        let by = r.by.unwrap_or_default();
        let questions = self
            .pending_replies(project.as_deref(), session.as_deref(), !r.new_only, &by)
            .await?;
        let mut rows = self
            .pending_rows(project.as_deref(), session.as_deref(), &by, false)
            .await?;
        if r.new_only {
            rows.retain(|p| p.new);
        }
        Ok(Pending { questions, rows })
    }

    pub async fn answer(&self, r: AnswerRequest) -> Result<Question> {
        let id = self.question_id(&r.id).await?;
        let kind = match r.kind.as_deref() {
            None | Some("") => ReplyKind::Answer,
            Some(k) => parse("kind", k)?,
        };
        let reply = NewReply {
            text: r.text,
            kind,
            context: None,
            by: r.by.unwrap_or_default(),
            expected_revision: r.revision,
        };
        match self.answer_agent(&id, &reply).await? {
            Ok(q) => Ok(q),
            Err(refusal @ crate::store::questions::Refusal::UnreadAnswer { .. }) => {
                let d = super::local::detail(&refusal);
                Err(Error::refused(
                    "unread_answer",
                    format!(
                        "a human already replied: {refusal} — that reply is now delivered to you (see `detail`); act on it instead"
                    ),
                    d,
                ))
            }
            Err(other) => Err(other.into()),
        }
    }

    pub async fn resolve(&self, r: ResolveRequest) -> Result<Question> {
        let id = self.question_id(&r.id).await?;
        required("outcome", &r.outcome)?;
        Ok(self
            .resolve_question(&id, &r.outcome, &r.by.unwrap_or_default())
            .await??)
    }
}
