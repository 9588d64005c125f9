//! Pending-action routes. Agent side: propose (the config's `[[rule]]`s and
//! `[redact]` keys apply, as on the CLI), status with a long poll, claim,
//! extend the lease, complete. Human side: approve (optionally patching the
//! arguments), reject, resolve an `unknown` outcome.
//!
//! Losers don't fail: a second approver or a double tap gets `200` with the
//! winner's decision in `outcome` (`already_decided`, `already_approved_by`,
//! `expired`); only a refused patch, a refused claim or completion, and a
//! resolve on an action that is not `unknown` are 409. Human-role callers
//! see arguments redacted; agents (who execute them) see the real values.
//! Executor and verifier argv cannot be set over HTTP: the daemon would
//! run them.

mod decide;

pub(crate) use decide::{approve, expire, grant, reject, resolve_unknown};

use axum::extract::Path;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::auth::Caller;
use super::doc::{Created, Shaped};
use super::error::{ApiError, ApiResult};
use super::input::{Body, Ctx, DURATION, NAME, Params, TIMEOUT};
use super::long_poll;
use super::page::{PageQuery, Paged, Paging, list_query};
use super::questions::wrote;
use crate::ops::{Ops, Until};
use crate::store::Channel;
use crate::store::actions::{
    Action, AuditEntry, ClaimOutcome, CompleteOutcome, NewAction, OnExpire, RuleDecision, Settled,
    Status, unknown_duplicate_note,
};

/// An action as one caller may see it (arguments redacted for people).
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub(crate) struct ActionView(#[schemars(with = "Action")] Value);

/// The action as this caller may see it.
fn show(c: &Caller, a: &Action) -> ActionView {
    // The rule a "for this session" / "always" approval would save, so the
    // Inbox shows it before anyone saves it (agents' prompts only), and for
    // a Codex prompt the line "always" adds to Codex's own rules file.
    use crate::store::grants::{CODEX, offer, pattern, prompt_of};
    let offered = offer(a);
    let rule = offered.as_ref().map(|(tool, p)| pattern::shown(tool, p));
    let codex_rule = offered
        .as_ref()
        .filter(|_| prompt_of(a).is_some_and(|(agent, _)| agent == CODEX))
        .map(|(tool, p)| pattern::codex_prefix_rule(tool, p));
    let note = crate::store::actions::expiry_note(a);
    let escalated = crate::store::actions::escalation_note(a);
    let a = if c.sees_secrets() {
        a.clone()
    } else {
        a.redacted()
    };
    let preview = prompt_of(&a)
        .and_then(|(_, tool)| crate::ops::claude::preview::preview(tool, &a.effective_args));
    let mut v = serde_json::to_value(a).unwrap_or(Value::Null);
    if let (Some(rule), Value::Object(m)) = (rule, &mut v) {
        m.insert("grant_rule".into(), Value::String(rule));
        // `null`: a Codex prompt whose grant Codex's rules cannot say.
        if let Some(codex) = codex_rule {
            m.insert(
                "codex_rule".into(),
                codex.map_or(Value::Null, Value::String),
            );
        }
    }
    // What happens if nobody decides, and when, in the chat message's words.
    if let (Some(note), Value::Object(m)) = (note, &mut v) {
        m.insert("expiry_note".into(), Value::String(note));
    }
    // Where an escalation chain sent it, and when ("Escalated to #ops at …").
    if let (Some(note), Value::Object(m)) = (escalated, &mut v) {
        m.insert("escalation_note".into(), Value::String(note));
    }
    // An agent's prompt as the chat shows it: the whole command, or the
    // unified diff of an edit (from the arguments this caller may see).
    if let (Some(p), Value::Object(m)) = (preview, &mut v) {
        m.insert("preview".into(), Value::String(p));
    }
    ActionView(v)
}

/// A serialized outcome with its `action` shown as this caller may see it.
fn shown<T: Serialize>(c: &Caller, v: &T, a: &Action) -> Shaped<T> {
    let mut j = serde_json::to_value(v).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut j {
        m.insert("action".into(), show(c, a).0);
    }
    Shaped::new(j)
}

fn duration(what: &str, text: &str) -> ApiResult<i64> {
    let ms = crate::clock::parse_duration_ms(text)
        .map_err(|e| ApiError::invalid(format!("{what}: {e}")))?;
    if ms <= 0 {
        return Err(ApiError::invalid(format!("{what} must be positive")));
    }
    Ok(ms)
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProposeBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    kind: String,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    summary: String,
    #[serde(default)]
    args: Map<String, Value>,
    #[schemars(length(min = 1, max = 200), regex(pattern = r"\S"))]
    dedup_key: Option<String>,
    /// `30m`, `24h`, …
    #[schemars(regex(pattern = DURATION))]
    ttl: Option<String>,
    #[schemars(range(min = 1, max = 100))]
    approvals_required: Option<i64>,
    #[serde(default)]
    on_expire: OnExpire,
    #[serde(default)]
    project: String,
    #[serde(default)]
    session: String,
    /// Proposer name (with a token: its own name, or left out).
    #[schemars(regex(pattern = NAME))]
    proposer: Option<String>,
    /// `agent` (default) or `cli`: the door it came through.
    #[schemars(extend("enum" = ["agent", "cli", null]))]
    channel: Option<String>,
}

/// The door a write names: one of `allowed` exactly (as the schema's enum
/// says), the first when left out or `null`. Only doors a remote caller
/// really uses are accepted (never `chat` or `daemon`, which only the daemon
/// itself writes), except through the owner-only socket; an empty or padded
/// name is refused like any other.
fn door(c: &Caller, channel: Option<&str>, allowed: &[Channel]) -> ApiResult<Channel> {
    // The host's owner on the local socket writes through any door the
    // CLI on the file could (e.g. a hook settling a prompt as the agent).
    let default = allowed[0];
    let allowed = if c.is_socket() {
        &Channel::ALL[..]
    } else {
        allowed
    };
    match channel {
        None => Ok(default),
        Some(c) => allowed
            .iter()
            .find(|a| a.as_str() == c)
            .copied()
            .ok_or_else(|| {
                let names: Vec<&str> = allowed.iter().map(|a| a.as_str()).collect();
                ApiError::invalid(format!("channel `{c}`: use {}", names.join(" or ")))
            }),
    }
}

/// `POST /v1/actions`: propose (201 created, 200 the live action with the
/// same dedup key and payload, 409 `dedup_conflict` for a different payload).
pub(crate) async fn propose(
    Ctx { s, c }: Ctx,
    Body(b): Body<ProposeBody>,
) -> ApiResult<Created<axum::Json<Proposed>>> {
    let ttl_ms = b.ttl.as_deref().map(|t| duration("ttl", t)).transpose()?;
    let new = NewAction {
        kind: b.kind,
        summary: b.summary,
        args: Value::Object(b.args).to_string(),
        dedup_key: b.dedup_key,
        ttl_ms,
        approvals_required: b.approvals_required.unwrap_or(1),
        on_expire: b.on_expire,
        proposer: c.actor(b.proposer.as_deref())?,
        channel: door(&c, b.channel.as_deref(), &[Channel::Agent, Channel::Cli])?,
        project: c.write_project(&b.project)?,
        session: b.session,
        exec: None,
        verify: None,
        redact_keys: None,
        not_by_proposer: false,
        escalation: Vec::new(),
    };
    let proposed = s.ops.propose_deciding(&new).await?;
    wrote(&s);
    let action = proposed.action;
    let rule = proposed
        .rule
        .zip(proposed.decision)
        .map(|(rule, decision)| RuleView { rule, decision });
    let note = unknown_duplicate_note(proposed.created, &action);
    Ok(Created {
        created: proposed.created,
        reply: axum::Json(Proposed {
            created: proposed.created,
            rule,
            action: show(&c, &action),
            note,
        }),
    })
}

/// `POST /v1/actions`' answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Proposed {
    /// False: an action with this dedup key and payload was live already.
    created: bool,
    /// The config rule that decided it at once, if one did.
    rule: Option<RuleView>,
    /// The action as it is now.
    action: ActionView,
    /// Said when the action found is `unknown` (the retry of a proposal
    /// whose first run may have happened): nothing new was proposed.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// A config rule's decision on a new action.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct RuleView {
    /// The rule's name.
    rule: String,
    /// What it decided.
    decision: RuleDecision,
}

list_query! {
    ListQuery {
        #[schemars(extend("enum" = ["pending", "approved", "executing", "executed", "failed", "unknown", "rejected", "expired", null]))]
        status: Option<String>,
        project: Option<String>,
    }
}

/// `GET /v1/actions?status&project&limit&after`: newest first, lazy expiry
/// applied, paged. Items leave out `args`, `effective_args`, `patch` and
/// `result` (`null`; `GET /v1/actions/{id}` has them), so a list stays
/// small whatever the actions carry.
pub(crate) async fn list(
    Ctx { s, c }: Ctx,
    Params(q): Params<ListQuery>,
) -> ApiResult<Paged<ActionView>> {
    let status = match q.status.as_deref() {
        Some(st) => Some(Status::parse(st).ok_or_else(|| {
            ApiError::invalid(format!(
                "`{st}` is not an action status: use pending, approved, executing, executed, failed, unknown, rejected or expired"
            ))
        })?),
        None => None,
    };
    let project = c.filter(q.project.clone())?;
    let list = Ops::Local(s.ops.within(project.as_deref()))
        .list_actions(status)
        .await?;
    Ok(q.page(list, |a| a.id.clone())?.map(|a| show(&c, a)))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetQuery {
    #[schemars(extend("enum" = ["approved", "decided", "settled", null]))]
    wait: Option<String>,
    #[schemars(regex(pattern = TIMEOUT))]
    timeout: Option<String>,
}

/// `GET /v1/actions/{id}`; with `?wait=approved` a long poll until it is
/// decided (no longer pending), with `?wait=settled` until it is final or
/// `unknown`; answers `{"outcome": "done"|"still_running", "action": …}`.
pub(crate) async fn get(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Params(q): Params<GetQuery>,
) -> ApiResult<axum::Json<ActionGet>> {
    let ops = c.ops(&s);
    let first = ops.get_action(&id).await?;
    let waits = [
        ("approved", Until::Decided),
        ("decided", Until::Decided),
        ("settled", Until::Settled),
    ];
    let hint = "wait=approved or wait=settled";
    let Some((until, timeout)) =
        long_poll::asked(q.wait.as_deref(), q.timeout.as_deref(), &waits, hint)?
    else {
        let mut a = first;
        a.status = a.effective_status(ops.now());
        return Ok(axum::Json(ActionGet::Now(show(&c, &a))));
    };
    let read = || {
        let (ops, full) = (ops.clone(), first.id.clone());
        async move {
            let mut a = ops.get_action(&full).await?;
            // Lazy expiry: show (and decide on) the effective status; the
            // daemon's sweep writes it.
            a.status = a.effective_status(ops.now());
            Ok::<_, ApiError>(a)
        }
    };
    let key = format!("action:{}", first.id);
    let (action, ok) =
        long_poll::watch(&s, &c, &key, timeout, read, |a| until.holds(a.status)).await?;
    let settled = if ok {
        Settled::Done { action }
    } else {
        Settled::StillRunning { action }
    };
    Ok(axum::Json(ActionGet::Waited(
        shown(&c, &settled, settled.action()).0,
    )))
}

/// `GET /v1/actions/{id}`'s answer: the action, or with `wait` the long
/// poll's outcome (`done` or `still_running`) and the action.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum ActionGet {
    /// With `wait`.
    Waited(#[schemars(with = "Settled")] Value),
    /// Without `wait`.
    Now(ActionView),
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClaimBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    owner: String,
    /// How long the claim holds unless extended (default `5m`).
    #[schemars(regex(pattern = DURATION))]
    lease: Option<String>,
}

/// `POST /v1/actions/{id}/claim`: `approved → executing` for `owner`.
pub(crate) async fn claim(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<ClaimBody>,
) -> ApiResult<Shaped<ClaimOutcome>> {
    let lease = duration("lease", b.lease.as_deref().unwrap_or("5m"))?;
    let out = c.ops(&s).claim(&id, &b.owner, lease).await?;
    wrote(&s);
    match &out {
        ClaimOutcome::Claimed { action } => Ok(shown(&c, &out, action)),
        ClaimOutcome::NotClaimable { action } => Err(ApiError::conflict(
            "not_claimable",
            format!(
                "the action is {}, not approved: nothing to claim",
                action.status
            ),
        )
        .with_detail(show(&c, action).0)),
    }
}

/// `POST /v1/actions/{id}/extend`: push the lease of the caller's claim.
pub(crate) async fn extend(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<ClaimBody>,
) -> ApiResult<axum::Json<Changed>> {
    let ops = c.ops(&s);
    let a = ops.get_action(&id).await?;
    let lease = duration("lease", b.lease.as_deref().unwrap_or("5m"))?;
    let extended = ops.extend_lease(&a.id, &b.owner, lease).await?;
    let now = ops.get_action(&a.id).await?;
    if !extended {
        return Err(not_owner(&c, &b.owner, &now));
    }
    Ok(axum::Json(Changed {
        extended: Some(true),
        resolved: None,
        action: show(&c, &now),
    }))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompleteBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    owner: String,
    success: bool,
    #[serde(default)]
    result: Value,
    error: Option<String>,
}

/// `POST /v1/actions/{id}/complete`: the owner records `executed` or `failed`.
pub(crate) async fn complete(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<CompleteBody>,
) -> ApiResult<Shaped<CompleteOutcome>> {
    let out = c
        .ops(&s)
        .complete(&id, &b.owner, b.success, &b.result, b.error.as_deref())
        .await?;
    wrote(&s);
    match &out {
        CompleteOutcome::Completed { action } => Ok(shown(&c, &out, action)),
        CompleteOutcome::NotOwner { action } => Err(not_owner(&c, &b.owner, action)),
    }
}

/// 409 `not_owner`: `owner` holds no executing claim on `action` (shown
/// as the caller may see it in `detail`).
fn not_owner(c: &Caller, owner: &str, action: &Action) -> ApiError {
    ApiError::conflict(
        "not_owner",
        format!(
            "`{owner}` does not hold an executing claim on this action (it is {})",
            action.status
        ),
    )
    .with_detail(show(c, action).0)
}

/// `GET /v1/actions/{id}/audit?limit&after`: the action's append-only
/// audit trail, oldest first, paged (secrets are redacted in the audit itself).
pub(crate) async fn audit(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Params(q): Params<PageQuery>,
) -> ApiResult<Paged<AuditEntry>> {
    let trail = c.ops(&s).action_audit(&id).await?;
    q.page(trail, |e| e.seq.to_string())
}

/// The answer of `extend` (`extended: true`) and `resolve-unknown`
/// (`resolved: true`): the action as it is now.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Changed {
    #[serde(skip_serializing_if = "Option::is_none")]
    extended: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolved: Option<bool>,
    action: ActionView,
}
