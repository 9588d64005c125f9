//! Questions for the agent: ask (with an optional bounded wait), pending
//! (question replies and board-row responses), answer and resolve.

use std::time::Duration;

use super::local::{Local, parse, required, wait_for};
use super::requests::{AnswerRequest, AskRequest, PendingRequest, ResolveRequest};
use super::results::{Asked, Pending};
use super::{Error, Result};
use crate::store::questions::{NewQuestion, NewReply, Question, QuestionOption, ReplyKind, Status};

/// How often a waiting `ask` looks for a reply.
const POLL: Duration = Duration::from_millis(200);

impl Local {
    /// The full id of question `id` (full or short).
    async fn question_id(&self, id: &str) -> Result<String> {
        required("id", id)?;
        self.store
            .resolve_question_id(id.trim())
            .await?
            .ok_or_else(|| {
                Error::not_found(format!(
                    "no question `{id}`; `pending` lists the ones with replies"
                ))
            })
    }

    pub(super) async fn ask(&self, r: AskRequest) -> Result<Asked> {
        let wait = wait_for(r.wait_seconds)?;
        let q = NewQuestion {
            project: r.project.unwrap_or_default(),
            agent: r.agent.unwrap_or_default(),
            session: r.session.unwrap_or_default(),
            key: r.key.filter(|k| !k.trim().is_empty()),
            title: r.title,
            detail: r.detail,
            context: r.context,
            options: r
                .options
                .into_iter()
                .map(|o| QuestionOption {
                    label: o.label,
                    recommended: o.recommended,
                })
                .collect(),
        };
        let flagged = self.store.flag(&q).await?;
        let mut asked = Asked {
            created: flagged.created,
            answered: false,
            timed_out: false,
            question: flagged.question,
        };
        if let Some(wait) = wait {
            match self.wait_reply(&asked.question, &q.agent, wait).await? {
                Some(q) => {
                    asked.answered = true;
                    asked.question = q;
                }
                None => asked.timed_out = true,
            }
        }
        Ok(asked)
    }

    /// Poll until `asked` gets a reply not delivered before, pick up exactly
    /// that reply and return the question; `None` when `wait` runs out.
    /// A reply already waiting counts; an answer the agent recorded itself
    /// (born seen) counts when it is newer than the ask.
    async fn wait_reply(
        &self,
        asked: &Question,
        by: &str,
        wait: Duration,
    ) -> Result<Option<Question>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let q = self
                .store
                .get_question(&asked.id)
                .await?
                .ok_or_else(|| Error::not_found("the question disappeared while waiting"))?;
            if q.status != Status::Open {
                let why = q.outcome.as_deref().unwrap_or("");
                return Err(Error::refused(
                    "not_open",
                    format!("the question was {} while waiting: {why}", q.status),
                    super::local::detail(&q),
                ));
            }
            if let Some(r) = &q.reply {
                if r.seen_at.is_none() {
                    // Mark only this exact reply; if it changed meanwhile,
                    // read again and take the newer one.
                    if let Some(at) = self.store.mark_reply_seen(&q, by).await? {
                        let mut q = q;
                        if let Some(r) = q.reply.as_mut() {
                            r.seen_at = Some(at);
                        }
                        return Ok(Some(q));
                    }
                    continue;
                } else if q.reply_seq > asked.reply_seq {
                    return Ok(Some(q));
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(POLL.min(deadline - now)).await;
        }
    }

    pub(super) async fn pending(&self, r: PendingRequest) -> Result<Pending> {
        let project = r.project.filter(|p| !p.is_empty());
        let session = r.session.filter(|s| !s.is_empty());
        let by = r.by.unwrap_or_default();
        let questions = self
            .store
            .pending(project.as_deref(), session.as_deref(), !r.new_only, &by)
            .await?;
        let mut rows = self
            .store
            .pending_rows(project.as_deref(), session.as_deref(), &by)
            .await?;
        if r.new_only {
            rows.retain(|p| p.new);
        }
        Ok(Pending { questions, rows })
    }

    pub(super) async fn answer(&self, r: AnswerRequest) -> Result<Question> {
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
        match self.store.answer_agent(&id, &reply).await? {
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

    pub(super) async fn resolve(&self, r: ResolveRequest) -> Result<Question> {
        let id = self.question_id(&r.id).await?;
        required("outcome", &r.outcome)?;
        Ok(self
            .store
            .resolve_question(&id, &r.outcome, &r.by.unwrap_or_default())
            .await??)
    }
}
