//! Question routes. Agent side: flag, list, get (with a long poll for the
//! reply), pending pickup (questions and board rows), answer (the agent
//! channel), resolve. Human side: reply (the Inbox channel, which always
//! wins) and dismiss. Each handler is a thin layer over the questions store:
//! scope, call, map the refusal, nudge the followers. `ask`: the flag,
//! with its optional wait for the reply.

mod ask;

pub(crate) use ask::flag;

use axum::extract::Path;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::input::{Body, Ctx, DURATION, NAME, Params, TIMEOUT};
use super::long_poll::{self, WaitOutcome};
use super::page::{PageQuery, Paged, Paging, list_query};
use crate::ops::Ops;
use crate::shared::Shared;
use crate::store::boards::PendingRow;
use crate::store::questions::{
    Delivery, ListFilter, NewReply, Outcome, Question, ReplyKind, ReplyRecord, Status,
};

/// Wake the event followers at once after a write made here.
pub(crate) fn wrote(s: &Shared) {
    s.wrote();
}

list_query! {
    ListQuery {
        #[schemars(extend("enum" = ["open", "resolved", "dismissed", null]))]
        status: Option<String>,
        project: Option<String>,
        session: Option<String>,
    }
}

/// `GET /v1/questions?status&project&session&limit&after`, oldest first, paged.
pub(crate) async fn list(
    Ctx { s, c }: Ctx,
    Params(q): Params<ListQuery>,
) -> ApiResult<Paged<Question>> {
    let status = q
        .status
        .as_deref()
        .map(str::parse::<Status>)
        .transpose()
        .map_err(ApiError::invalid)?;
    let filter = ListFilter {
        status,
        project: c.filter(q.project.clone())?,
        session: q.session.clone(),
        awake_only: false,
        limit: None,
    };
    let all = c.ops(&s).list_questions(&filter).await?;
    q.page(all, |x| x.id.clone())
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetQuery {
    #[schemars(extend("enum" = ["reply", "change", null]))]
    wait: Option<String>,
    #[schemars(regex(pattern = TIMEOUT))]
    timeout: Option<String>,
}

/// What a question looks like for "did it change?".
fn mark(q: &Question) -> (Status, i64, i64, Option<i64>, Option<i64>) {
    (
        q.status,
        q.reply_seq,
        q.revision,
        q.reply.as_ref().and_then(|r| r.seen_at),
        q.snoozed_until,
    )
}

/// What `?wait=` on a question waits for.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// A reply waits unseen, or the question closed.
    Reply,
    /// Anything about it changed.
    Change,
}

/// `GET /v1/questions/{id}`; with `?wait=reply` a long poll until a reply
/// waits unseen or the question closes, with `?wait=change` until anything
/// about it changes; `timeout` (default 30s, at most 300s). The long poll
/// answers `{"outcome": "done"|"timeout", "question": …}`.
pub(crate) async fn get(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Params(q): Params<GetQuery>,
) -> ApiResult<axum::Json<QuestionView>> {
    let ops = c.ops(&s);
    let first = c.local(&s).question(&id).await?;
    let waits = [("reply", Wait::Reply), ("change", Wait::Change)];
    let hint = "wait=reply or wait=change";
    let Some((wait, timeout)) =
        long_poll::asked(q.wait.as_deref(), q.timeout.as_deref(), &waits, hint)?
    else {
        return Ok(axum::Json(QuestionView::Now(first)));
    };
    let baseline = mark(&first);
    let read = || {
        let (ops, full) = (ops.clone(), first.id.clone());
        async move {
            ops.get_question(&full)
                .await?
                .ok_or_else(|| ApiError::not_found("question"))
        }
    };
    let done = |q: &Question| match wait {
        Wait::Reply => q.has_unseen_reply() || q.status != Status::Open,
        Wait::Change => mark(q) != baseline,
    };
    let key = format!("question:{}", first.id);
    let (question, done) = long_poll::watch(&s, &c, &key, timeout, read, done).await?;
    Ok(axum::Json(QuestionView::Waited {
        outcome: WaitOutcome::of(done),
        question,
    }))
}

/// `GET /v1/questions/{id}`'s answer: the question, or with `wait` the
/// long poll's outcome and the question as it is then.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum QuestionView {
    /// With `wait`: `done` or `timeout`, and the question.
    Waited {
        outcome: WaitOutcome,
        question: Question,
    },
    /// Without `wait`.
    Now(Question),
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingQuery {
    project: Option<String>,
    session: Option<String>,
    #[serde(default)]
    new: bool,
    /// `questions` or `rows`: pick up only that half (default both).
    #[schemars(extend("enum" = ["questions", "rows", null]))]
    only: Option<String>,
    /// Rows only: read without marking anything delivered.
    #[serde(default)]
    peek: bool,
    /// Who picks up (with a token: its own name, or left out).
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `GET /v1/pending?project&session&new&only&peek&by`: the agent's pickup.
/// Replies on open questions (each unseen one marked picked up, exactly the
/// reply read) and board rows waiting for the agent (marked delivered
/// unless `peek`); `only=questions|rows` picks up one half.
pub(crate) async fn pending(
    Ctx { s, c }: Ctx,
    Params(q): Params<PendingQuery>,
) -> ApiResult<axum::Json<PendingView>> {
    let (want_q, want_rows) = match q.only.as_deref() {
        None => (true, true),
        Some("questions") => (true, false),
        Some("rows") => (false, true),
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "only=`{other}`: use only=questions or only=rows"
            )));
        }
    };
    if q.peek && want_q {
        return Err(ApiError::invalid(
            "peek reads rows without marking them: use it with only=rows",
        ));
    }
    let project = c.filter(q.project.clone())?;
    let by = c.actor(q.by.as_deref())?;
    let session = q.session.as_deref();
    let mut body = PendingView::default();
    let ops = c.ops(&s);
    if want_q {
        let questions = ops
            .pending_replies(project.as_deref(), session, !q.new, &by)
            .await?;
        body.questions = Some(questions);
    }
    if want_rows {
        let rows = ops
            .pending_rows(project.as_deref(), session, &by, q.peek)
            .await?;
        let rows: Vec<_> = if q.new {
            rows.into_iter().filter(|r| r.new).collect()
        } else {
            rows
        };
        body.rows = Some(rows);
    }
    wrote(&s);
    Ok(axum::Json(body))
}

/// `GET /v1/pending`'s answer: each half asked for (`only` leaves one out).
#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub(crate) struct PendingView {
    /// Replies picked up.
    #[serde(skip_serializing_if = "Option::is_none")]
    questions: Option<Vec<Delivery>>,
    /// Board rows waiting for the agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    rows: Option<Vec<PendingRow>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PickupBody {
    /// The `reply_seq` of the reply the agent read.
    reply_seq: i64,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/questions/{id}/pickup`: mark exactly the reply the agent read
/// (by its `reply_seq`) as picked up. `picked: false` when the reply
/// changed meanwhile (read again and pick up the newer one), was already
/// picked up, or the question closed.
pub(crate) async fn pickup(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<PickupBody>,
) -> ApiResult<axum::Json<Pickup>> {
    let mut q = c.local(&s).question(&id).await?;
    let by = c.actor(b.by.as_deref())?;
    let mut picked = false;
    if q.reply_seq == b.reply_seq
        && let Some(seen) = c.ops(&s).pick_up_reply(&q, &by).await?
    {
        picked = true;
        q = seen;
        wrote(&s);
    }
    Ok(axum::Json(Pickup {
        picked,
        question: q,
    }))
}

/// `POST /v1/questions/{id}/pickup`'s answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Pickup {
    /// Whether this call marked the reply picked up.
    picked: bool,
    /// The question as it is now.
    question: Question,
}

/// `GET /v1/questions/{id}/replies?limit&after`: the append-only reply
/// history, oldest first, paged.
pub(crate) async fn replies(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Params(p): Params<PageQuery>,
) -> ApiResult<Paged<ReplyRecord>> {
    let all = c.ops(&s).question_replies(&id).await?;
    p.page(all, |r| r.seq.to_string())
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnoozeBody {
    /// How long: `30m`, `2h`, `1500ms`; `0s` wakes it now.
    #[serde(rename = "for")]
    #[schemars(regex(pattern = DURATION))]
    duration: String,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// The write a question route ends in: the question `id` if the caller
/// may see it, who acts (`by`, checked against the caller), then `write`
/// on them through the operations (`id` resolved in the caller's scope
/// already, so `ops` is every project's); the followers are woken and the
/// answer is the question as it is now, or the store's refusal.
async fn change(
    s: &Shared,
    c: &Caller,
    id: &str,
    by: Option<&str>,
    write: impl AsyncFnOnce(Ops, Question, String) -> ApiResult<Outcome<Question>>,
) -> ApiResult<axum::Json<Question>> {
    let q = c.local(s).question(id).await?;
    let by = c.actor(by)?;
    let out = write(Ops::Local(s.ops.clone()), q, by).await?;
    wrote(s);
    Ok(axum::Json(out?))
}

/// `POST /v1/questions/{id}/snooze`: hide it from the chat list for a while.
pub(crate) async fn snooze(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<SnoozeBody>,
) -> ApiResult<axum::Json<Question>> {
    change(&s, &c, &id, b.by.as_deref(), async |ops, q, by| {
        let ms = crate::clock::parse_duration_ms(&b.duration)
            .map_err(|e| ApiError::invalid(format!("for: {e}")))?;
        Ok(ops.snooze_question(&q.id, ms.max(0), &by).await?)
    })
    .await
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplyBody {
    #[serde(default)]
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    text: String,
    #[serde(default)]
    kind: ReplyKind,
    context: Option<String>,
    expected_revision: Option<i64>,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

impl ReplyBody {
    /// The reply this body asks for, written by `by` (checked already).
    fn reply(&self, by: String) -> NewReply {
        NewReply {
            by,
            text: self.text.clone(),
            kind: self.kind,
            context: self.context.clone(),
            expected_revision: self.expected_revision,
        }
    }
}

/// `POST /v1/questions/{id}/answer`: the agent records an answer the human
/// gave in its own terminal. 409 `unread_answer` hands back a waiting reply.
pub(crate) async fn answer(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<ReplyBody>,
) -> ApiResult<axum::Json<Question>> {
    change(&s, &c, &id, b.by.as_deref(), async |ops, q, by| {
        Ok(ops.answer_agent(&q.id, &b.reply(by)).await?)
    })
    .await
}

/// `POST /v1/questions/{id}/reply`: a human replies through the Inbox
/// channel (always wins; blank text clears an unpicked reply).
pub(crate) async fn reply(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<ReplyBody>,
) -> ApiResult<axum::Json<Question>> {
    change(&s, &c, &id, b.by.as_deref(), async |ops, q, by| {
        Ok(ops.reply_inbox(&q.id, &b.reply(by)).await?)
    })
    .await
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    outcome: String,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/questions/{id}/resolve`: the agent closes it with an outcome.
pub(crate) async fn resolve(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<ResolveBody>,
) -> ApiResult<axum::Json<Question>> {
    change(&s, &c, &id, b.by.as_deref(), async |ops, q, by| {
        Ok(ops.resolve_question(&q.id, &b.outcome, &by).await?)
    })
    .await
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DismissBody {
    reason: Option<String>,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/questions/{id}/dismiss`: a human closes it without answering.
pub(crate) async fn dismiss(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<DismissBody>,
) -> ApiResult<axum::Json<Question>> {
    change(&s, &c, &id, b.by.as_deref(), async |ops, q, by| {
        Ok(ops
            .dismiss_question(&q.id, b.reason.as_deref(), &by)
            .await?)
    })
    .await
}
