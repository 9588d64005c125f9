//! `POST /v1/questions`: flag a question and, with `wait=reply`, wait in
//! the same request for a reply and mark it picked up (`ask --wait` in one
//! round trip). What ends the wait is [`crate::ops::wait::step`], the rule
//! the CLI's own wait on the file follows.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::wrote;
use crate::api::auth::Caller;
use crate::api::doc::Created;
use crate::api::error::{ApiError, ApiResult};
use crate::api::input::{Body, Ctx, NAME, Name, Params, TIMEOUT};
use crate::api::long_poll;
use crate::ops::wait::{Step, step};
use crate::shared::Shared;
use crate::store::questions::{Flagged, NewQuestion, Question, QuestionOption};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OptionBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    label: String,
    #[serde(default)]
    recommended: bool,
}

impl From<OptionBody> for QuestionOption {
    fn from(o: OptionBody) -> Self {
        QuestionOption {
            label: o.label,
            recommended: o.recommended,
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlagBody {
    #[serde(default)]
    project: Name,
    #[serde(default)]
    agent: Name,
    #[serde(default)]
    session: Name,
    key: Option<String>,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    title: String,
    #[serde(default)]
    detail: String,
    #[serde(default)]
    context: String,
    #[serde(default)]
    options: Vec<OptionBody>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlagQuery {
    /// `reply`: after the flag, wait for a reply not delivered before (or
    /// the question closing) and mark it picked up in `by`'s name.
    #[schemars(extend("enum" = ["reply", null]))]
    wait: Option<String>,
    /// How long to wait (default 30s, at most 300s).
    #[schemars(regex(pattern = TIMEOUT))]
    timeout: Option<String>,
    /// Who picks the reply up (with a token: its own name, or left out).
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// How a flag-and-wait ended.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AskOutcome {
    /// A reply not delivered before, now marked picked up (or the agent's
    /// own answer, newer than the ask).
    Reply,
    /// The question was resolved or dismissed meanwhile.
    Closed,
    /// Nothing arrived within `timeout`; the question stays open.
    Timeout,
}

/// `POST /v1/questions`' answer: what the flag did, and with `wait` how
/// the wait ended and the question as it is then.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum FlagView {
    /// With `wait=reply`.
    Waited {
        /// True when a new question was created.
        created: bool,
        /// `reply`, `closed` or `timeout`.
        outcome: AskOutcome,
        /// The question after the wait (with `reply`, its reply marked seen).
        question: Question,
    },
    /// Without `wait`.
    Now(Flagged),
}

/// `POST /v1/questions?wait&timeout&by`: flag (201 created, 200 updated in
/// place by key); with `wait=reply` also wait for the reply and pick it up.
pub(crate) async fn flag(
    Ctx { s, c }: Ctx,
    Params(w): Params<FlagQuery>,
    Body(b): Body<FlagBody>,
) -> ApiResult<Created<axum::Json<FlagView>>> {
    let waits = [("reply", ())];
    let asked = long_poll::asked(
        w.wait.as_deref(),
        w.timeout.as_deref(),
        &waits,
        "wait=reply",
    )?;
    if asked.is_none() && w.by.is_some() {
        return Err(ApiError::invalid("by needs wait=reply"));
    }
    let by = c.actor(w.by.as_deref())?;
    let q = NewQuestion {
        project: c.write_project(&b.project.0)?,
        agent: c.agent_or(&s, b.agent.0).await?,
        session: b.session.0,
        key: b.key,
        title: b.title,
        detail: b.detail,
        context: b.context,
        options: b.options.into_iter().map(QuestionOption::from).collect(),
    };
    let flagged = c.ops(&s).flag(&q).await?;
    wrote(&s);
    let created = flagged.created;
    let view = match asked {
        None => FlagView::Now(flagged),
        Some(((), timeout)) => {
            let (outcome, question) = wait_reply(&s, &c, &flagged.question, &by, timeout).await?;
            FlagView::Waited {
                created,
                outcome,
                question,
            }
        }
    };
    Ok(Created {
        created,
        reply: axum::Json(view),
    })
}

/// Wait up to `timeout` for a reply to `asked` not delivered before and
/// mark exactly it picked up; a reply that changed between the read and
/// the mark is read again, so the newer one is taken.
async fn wait_reply(
    s: &Shared,
    c: &Caller,
    asked: &Question,
    by: &str,
    timeout: Duration,
) -> ApiResult<(AskOutcome, Question)> {
    let deadline = tokio::time::Instant::now() + timeout;
    let key = format!("question:{}", asked.id);
    let ops = c.ops(s);
    loop {
        let read = || {
            let (ops, id) = (ops.clone(), asked.id.clone());
            async move {
                ops.get_question(&id)
                    .await?
                    .ok_or_else(|| ApiError::not_found("question"))
            }
        };
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let done = |q: &Question| step(asked, q) != Step::Wait;
        let (mut q, _) = long_poll::watch(s, c, &key, left, read, done).await?;
        match step(asked, &q) {
            Step::Closed => return Ok((AskOutcome::Closed, q)),
            Step::Answered => return Ok((AskOutcome::Reply, q)),
            Step::Wait => return Ok((AskOutcome::Timeout, q)),
            Step::PickUp => {
                if let Some(seen) = ops.pick_up_reply(&q, by).await? {
                    q = seen;
                    wrote(s);
                    return Ok((AskOutcome::Reply, q));
                }
            }
        }
    }
}
