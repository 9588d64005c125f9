//! Session routes: register, read, list, checkpoint (CAS on the revision),
//! resume, end; the execution ledger (begin, complete, list); and the
//! session's long-poll `wait`, which claims what arrived for it. The
//! inbound wake (`POST /v1/sessions/{id}/wake`) lives in its own module.
//!
//! `{id}` is a session id or a unique suffix of a registered one. A
//! project-scoped token reaches only registered sessions of its project.
//!
//! Over HTTP only a `webhook` wake target (or none) may be registered:
//! `exec` and `tmux` targets run programs on the daemon's machine, which a
//! remote token must not be able to arrange. Webhook secrets are never
//! shown back.

use std::sync::atomic::AtomicI64;

use axum::extract::Path;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Caller;
use super::doc::Shaped;
use super::error::{ApiError, ApiResult};
use super::input::{Body, Ctx, NAME, Name, Params, TIMEOUT, wait_timeout};
use super::long_poll::{WaitOutcome, wait_until};
use super::page::{Paged, Paging, list_query};
use super::questions::wrote;
use crate::shared::Shared;
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, DEFAULT_LEDGER_TAIL, Ended, LedgerEntry, NewCall,
    NewSession, Resume, Session, WakeTarget,
};

/// A session as shown over HTTP: a webhook secret is replaced by `***`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub(crate) struct SessionView(#[schemars(with = "Session")] Value);

fn show(s: &Session) -> SessionView {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Some(secret) = v.pointer_mut("/wake_target/secret") {
        *secret = Value::String("***".into());
    }
    SessionView(v)
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegisterBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    session_id: String,
    #[serde(default)]
    agent: Name,
    #[serde(default)]
    project: Name,
    #[serde(default)]
    cwd: String,
    wake_target: Option<WakeTarget>,
    /// The machine the session runs on (the registering process's hostname).
    #[serde(default)]
    host: String,
}

/// `POST /v1/sessions`: register (or refresh) a session.
pub(crate) async fn register(
    Ctx { s, c }: Ctx,
    Body(b): Body<RegisterBody>,
) -> ApiResult<axum::Json<SessionView>> {
    let project = c.write_project(&b.project.0)?;
    if matches!(
        b.wake_target,
        Some(WakeTarget::Exec { .. } | WakeTarget::Tmux { .. })
    ) {
        return Err(ApiError::invalid(
            "exec and tmux wake targets run programs on the daemon's machine: register them \
             locally with the CLI; over HTTP use a webhook target",
        ));
    }
    // No token takes over another project's session id: the store refuses
    // a session whose home is another project (`session_in_other_project`).
    let new = NewSession {
        session_id: b.session_id,
        agent: c.agent_or(&s, b.agent.0).await?,
        project,
        cwd: b.cwd,
        wake_target: b.wake_target,
    };
    let session = c.local(&s).register_session_on(&new, &b.host).await?;
    wrote(&s);
    Ok(axum::Json(show(&session)))
}

/// The session `id` names (full id or unique suffix of a registered one,
/// else `id` itself) and its record, if the caller may reach it. Scoped
/// tokens reach only registered sessions of their project, and resolve ids
/// among those only: another project's session and one that does not exist
/// get the same refusal, word for word, so ids cannot be told apart.
async fn reach(s: &Shared, c: &Caller, id: &str) -> ApiResult<(String, Option<Session>)> {
    let ops = c.ops(s);
    let full = ops
        .resolve_session_id(id)
        .await?
        .unwrap_or_else(|| id.trim().to_string());
    let session = ops.get_session(&full).await?;
    match (&c.project, session) {
        (Some(_), Some(x)) if c.sees(&x.project) => Ok((full, Some(x))),
        (Some(_), _) => Err(unreachable_session(id)),
        (None, session) => Ok((full, session)),
    }
}

/// The one refusal a scoped token gets for a session it cannot reach.
fn unreachable_session(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "session `{id}` is not a registered session of this token's project: a project-scoped \
             token reaches only its project's registered sessions; register it first \
             (POST /v1/sessions)"
        ),
    )
}

/// Like [`reach`], but the session must be registered.
async fn registered(s: &Shared, c: &Caller, id: &str) -> ApiResult<Session> {
    match reach(s, c, id).await? {
        (_, Some(session)) => Ok(session),
        _ => Err(ApiError::not_found(format!("session `{id}`"))),
    }
}

/// A serialized outcome whose `session` (if any) hides its webhook secret.
fn shown<T: serde::Serialize>(v: &T) -> Shaped<T> {
    let mut j = serde_json::to_value(v).unwrap_or(Value::Null);
    if let Some(secret) = j.pointer_mut("/session/wake_target/secret") {
        *secret = Value::String("***".into());
    }
    Shaped::new(j)
}

/// `GET /v1/sessions/{id}`.
pub(crate) async fn get(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<SessionView>> {
    Ok(axum::Json(show(&registered(&s, &c, &id).await?)))
}

list_query! {
    ListQuery {
        #[schemars(extend("enum" = ["active", "idle", "ended", null]))]
        status: Option<String>,
        project: Option<String>,
    }
}

/// `GET /v1/sessions?status&project&limit&after`: most recently changed
/// first, paged.
pub(crate) async fn list(
    Ctx { s, c }: Ctx,
    Params(q): Params<ListQuery>,
) -> ApiResult<Paged<SessionView>> {
    if let Some(st) = q.status.as_deref()
        && !matches!(st, "active" | "idle" | "ended")
    {
        return Err(ApiError::invalid(format!(
            "status `{st}`: use active, idle or ended"
        )));
    }
    let project = c.filter(q.project.clone())?;
    let list = c
        .ops(&s)
        .list_sessions(q.status.as_deref(), project.as_deref())
        .await?;
    Ok(q.page(list, |x| x.session_id.clone())?.map(show))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckpointBody {
    revision: i64,
    /// The state blob, stored as given (the CLI sends JSON text).
    state: String,
}

/// `POST /v1/sessions/{id}/checkpoint`: store the state if the revision is
/// still `revision` (409 `stale` carries the current one; 409 `ended`).
pub(crate) async fn checkpoint(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<CheckpointBody>,
) -> ApiResult<Shaped<Checkpointed>> {
    let session = registered(&s, &c, &id).await?;
    let out = c
        .ops(&s)
        .save_checkpoint(&session.session_id, b.revision, &b.state)
        .await?;
    wrote(&s);
    match &out {
        Checkpointed::Saved { .. } => Ok(shown(&out)),
        Checkpointed::Stale { expected, current } => Err(ApiError::conflict(
            "stale",
            format!("the session is at revision {current}, not {expected}"),
        )
        .with_detail(shown(&out).0)),
        Checkpointed::Ended { .. } => Err(ApiError::conflict(
            "ended",
            "the session has ended; register it again to reopen it",
        )
        .with_detail(shown(&out).0)),
        Checkpointed::NotFound => {
            Err(ApiError::not_found(format!("session `{id}`")).with_detail(shown(&out).0))
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResumeQuery {
    tail: Option<i64>,
}

/// `GET /v1/sessions/{id}/resume?tail`: everything a woken session needs
/// (marks nothing). A session that never registered gets what carries its id.
pub(crate) async fn resume(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Params(q): Params<ResumeQuery>,
) -> ApiResult<Shaped<Resume>> {
    let (full, _) = reach(&s, &c, &id).await?;
    let tail = q.tail.unwrap_or(DEFAULT_LEDGER_TAIL);
    Ok(shown(&c.ops(&s).read_resume(&full, tail).await?))
}

/// `POST /v1/sessions/{id}/end`: mark it ended (registering again reopens it).
pub(crate) async fn end(Ctx { s, c }: Ctx, Path(id): Path<String>) -> ApiResult<Shaped<Ended>> {
    let session = registered(&s, &c, &id).await?;
    let out = c.ops(&s).end_session(&session.session_id).await?;
    wrote(&s);
    match out {
        Ended::NotFound => Err(ApiError::not_found(format!("session `{id}`"))),
        out => Ok(shown(&out)),
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BeginBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    event_id: String,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    tool: String,
    #[serde(default)]
    payload: Value,
    #[serde(default)]
    replay_safe: bool,
}

/// `POST /v1/sessions/{id}/ledger`: record that a call is about to run
/// (same event id and payload again: `existing`; different: 409 `conflict`).
pub(crate) async fn ledger_begin(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<BeginBody>,
) -> ApiResult<axum::Json<Begin>> {
    // The ledger belongs to a registered session.
    let full = registered(&s, &c, &id).await?.session_id;
    let out = c
        .ops(&s)
        .ledger_begin(&NewCall {
            event_id: &b.event_id,
            session_id: &full,
            tool: &b.tool,
            payload: &b.payload,
            replay_safe: b.replay_safe,
        })
        .await?;
    wrote(&s);
    if let Begin::Conflict { differs, .. } = &out {
        let message = format!(
            "event id `{}` was already begun with a different {}",
            b.event_id,
            differs.join(", ")
        );
        return Err(ApiError::conflict("conflict", message).with_detail(json!(out)));
    }
    Ok(axum::Json(out))
}

list_query! {
    LedgerQuery {
        last: Option<i64>,
    }
}

/// `GET /v1/sessions/{id}/ledger?last&limit&after`: the session's ledger
/// (its newest `last` rows), oldest first, paged.
pub(crate) async fn ledger_list(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Params(q): Params<LedgerQuery>,
) -> ApiResult<Paged<LedgerEntry>> {
    let (full, _) = reach(&s, &c, &id).await?;
    let all = c.ops(&s).ledger_list(&full, q.last).await?;
    q.page(all, |e| e.seq.to_string())
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompleteBody {
    ok: bool,
    #[serde(default)]
    result: Value,
    /// The session that began the call (event ids are unique per session);
    /// may be left out when only one visible session began `{id}`.
    #[serde(default)]
    session: Option<String>,
}

/// `POST /v1/ledger/{id}/complete`: record the outcome of the call begun
/// under event id `{id}` (409 `conflict` for another outcome, 404 with
/// `detail.outcome = not_started` if it was never begun).
pub(crate) async fn ledger_complete(
    Ctx { s, c }: Ctx,
    Path(event_id): Path<String>,
    Body(b): Body<CompleteBody>,
) -> ApiResult<axum::Json<Complete>> {
    let not_started = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no call was begun with event id `{event_id}`"),
        )
        .with_detail(json!(Complete::NotStarted))
    };
    // Scope: the call belongs to the session that began it, and a scoped
    // caller sees only its project's sessions (another project's ids neither
    // match nor make this one ambiguous).
    let session = match b.session.as_deref().filter(|x| !x.trim().is_empty()) {
        Some(id) => registered(&s, &c, id).await?.session_id,
        None => {
            let mut found = c.local(&s).ledger_sessions(&event_id, 2).await?;
            match found.len() {
                0 => return Err(not_started()),
                1 => found.remove(0),
                _ => {
                    return Err(ApiError::conflict(
                        "ambiguous",
                        format!(
                            "event id `{event_id}` was begun by more than one session: pass `session` in the body"
                        ),
                    ));
                }
            }
        }
    };
    let out = c
        .ops(&s)
        .ledger_complete(&session, &event_id, b.ok, &b.result)
        .await?;
    wrote(&s);
    match &out {
        Complete::Conflict { differs, .. } => Err(ApiError::conflict(
            "conflict",
            format!(
                "event id `{event_id}` already has a different {} recorded",
                differs.join(", ")
            ),
        )
        .with_detail(json!(out))),
        Complete::NotStarted => Err(not_started()),
        _ => Ok(axum::Json(out)),
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitQuery {
    #[schemars(regex(pattern = TIMEOUT))]
    timeout: Option<String>,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `GET /v1/sessions/{id}/wait?timeout&by`: a long poll that claims what
/// arrived for the session (unseen replies, row responses, decisions,
/// inbound wakes) as soon as something does; `outcome` is `done` or
/// `timeout` (then `arrivals` is empty and nothing was claimed).
pub(crate) async fn wait(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Params(q): Params<WaitQuery>,
) -> ApiResult<axum::Json<Arrived>> {
    let (full, _) = reach(&s, &c, &id).await?;
    crate::store::sessions::check_id(&full).map_err(ApiError::from)?;
    let local = c.local(&s);
    local.known_session(&full).await?;
    let by = c.actor(q.by.as_deref())?;
    let timeout = wait_timeout(q.timeout.as_deref())?;
    let key = format!("session:{full}");
    // The newest event seq about the session seen so far.
    let seen = std::sync::Arc::new(AtomicI64::new(i64::MIN));
    let (arrivals, done) = wait_until(&s, &c, &key, timeout, || {
        let (local, full, by, seen) = (local.clone(), full.clone(), by.clone(), seen.clone());
        async move {
            let arrivals = local.arrivals_since(&full, &by, &seen).await?;
            let done = !arrivals.is_empty();
            Ok((arrivals, done))
        }
    })
    .await?;
    if done {
        wrote(&s);
    }
    Ok(axum::Json(Arrived {
        outcome: WaitOutcome::of(done),
        session: full,
        arrivals,
    }))
}

/// `GET /v1/sessions/{id}/wait`'s answer.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Arrived {
    /// `done`: something arrived and was claimed; `timeout`: nothing did.
    outcome: WaitOutcome,
    /// The session's full id.
    session: String,
    /// What arrived (empty on a timeout).
    arrivals: Vec<Arrival>,
}
