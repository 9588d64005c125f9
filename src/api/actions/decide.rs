//! The human side of pending actions: approve (optionally patching the
//! arguments or saving a grant), the grants check of a Claude Code prompt,
//! reject, resolve an `unknown` outcome, and settle the expired ones.

use axum::extract::Path;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ActionView, Changed, door, show, shown};
use crate::api::doc::Shaped;
use crate::api::error::{ApiError, ApiResult};
use crate::api::input::{Body, Ctx, NAME};
use crate::api::questions::wrote;
use crate::ops::Ops;
use crate::store::Channel;
use crate::store::actions::{Actor, ApproveOutcome, RejectOutcome, Resolution};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApproveBody {
    /// Changes to the arguments: known keys, same JSON types.
    #[schemars(extend("minProperties" = 1))]
    patch: Option<Map<String, Value>>,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
    /// `inbox` (default) or `cli`.
    #[schemars(extend("enum" = ["inbox", "cli", null]))]
    channel: Option<String>,
    /// An agent's prompt only: also save a grant, for this `session` or
    /// `always` (every session of the project), of the rule its
    /// `grant_rule` shows (not with `patch`).
    #[schemars(extend("enum" = ["session", "always", null]))]
    grant: Option<String>,
    /// With `grant`: when it ends — `for 2h` (30m, 1h, 7d …), `until 18:00`
    /// (UTC unless an offset follows: `18:00+01:00`) or `until` an RFC 3339
    /// time; left out, it holds until revoked.
    #[schemars(length(min = 1, max = 64))]
    until: Option<String>,
    /// With `grant`: keep it to the prompt's working directory and below
    /// (the Inbox's "for 1 h" and "always here").
    here: Option<bool>,
}

/// `POST /v1/actions/{id}/approve`: add the caller's approval, optionally
/// patching the arguments (validated before anything changes: 422).
pub(crate) async fn approve(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<ApproveBody>,
) -> ApiResult<Shaped<ApproveOutcome>> {
    let ops = c.ops(&s);
    let by = c.actor(b.by.as_deref())?;
    let patch = b.patch.map(|p| Value::Object(p).to_string());
    let actor = Actor {
        name: &by,
        channel: door(&c, b.channel.as_deref(), &[Channel::Inbox, Channel::Cli])?,
    };
    let scope = match b.grant.as_deref() {
        None => None,
        Some("session") => Some(crate::store::grants::Scope::Session),
        Some("always") => Some(crate::store::grants::Scope::Always),
        Some(g) => {
            return Err(ApiError::invalid(format!(
                "grant `{g}` is not `session` or `always`"
            )));
        }
    };
    if scope.is_none() && (b.until.is_some() || b.here.is_some()) {
        return Err(ApiError::invalid(
            "`until` and `here` are terms of a grant: give `grant` (session or always) too",
        ));
    }
    let until = match b.until.as_deref() {
        Some(spec) => {
            Some(crate::store::grants::end::parse(spec, ops.now()).map_err(ApiError::invalid)?)
        }
        None => None,
    };
    let out = match scope {
        Some(_) if patch.is_some() => {
            return Err(ApiError::invalid(
                "a grant saves the rule of the arguments as shown: approve an edited prompt once (no grant)",
            ));
        }
        Some(scope) => {
            let terms = crate::store::grants::Terms {
                scope,
                until,
                here: b.here.unwrap_or(false),
            };
            c.local(&s).approve_granting(&id, actor, terms).await?
        }
        None => ops.approve(&id, actor, patch.as_deref()).await?,
    };
    wrote(&s);
    if let crate::store::actions::ApproveOutcome::PatchRefused { reason, action } = &out {
        return Err(
            ApiError::conflict("patch_refused", reason.clone()).with_detail(show(&c, action).0)
        );
    }
    if let crate::store::actions::ApproveOutcome::SelfApproval { action } = &out {
        return Err(ApiError::conflict(
            crate::store::actions::SELF_APPROVAL,
            crate::store::actions::self_approval_note(action),
        )
        .with_detail(show(&c, action).0));
    }
    Ok(shown(&c, &out, out.action()))
}

/// What `POST /v1/actions/{id}/grant` found.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct GrantCheck {
    /// The live grant that just approved this pending prompt, if one covers it.
    applied: Option<crate::store::grants::Grant>,
    /// The grant saved with the approval that decided it ("for this
    /// session" / "always"), if it still holds.
    given: Option<crate::store::grants::Grant>,
    /// The action as it stands now.
    action: ActionView,
}

/// `POST /v1/actions/{id}/grant`: the grants side of a Claude Code prompt,
/// for `handoff hook claude` against a daemon (grants live on its host).
pub(crate) async fn grant(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
) -> ApiResult<Shaped<GrantCheck>> {
    let found = c.local(&s).grant_check(&id).await?;
    if found.applied.is_some() {
        wrote(&s);
    }
    let check = GrantCheck {
        applied: found.applied,
        given: found.given,
        action: show(&c, &found.action),
    };
    Ok(Shaped::new(
        serde_json::to_value(check).unwrap_or(Value::Null),
    ))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectBody {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    reason: String,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
    /// `inbox` (default) or `cli`.
    #[schemars(extend("enum" = ["inbox", "cli", null]))]
    channel: Option<String>,
}

/// `POST /v1/actions/{id}/reject`: one rejection rejects.
pub(crate) async fn reject(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<RejectBody>,
) -> ApiResult<Shaped<RejectOutcome>> {
    let by = c.actor(b.by.as_deref())?;
    let actor = Actor {
        name: &by,
        channel: door(&c, b.channel.as_deref(), &[Channel::Inbox, Channel::Cli])?,
    };
    let out = c.ops(&s).reject(&id, actor, &b.reason).await?;
    wrote(&s);
    Ok(shown(&c, &out, out.action()))
}

#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ResolutionBody {
    Executed,
    Failed,
    Retry,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveUnknownBody {
    resolution: ResolutionBody,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
    /// `inbox` (default) or `cli`.
    #[schemars(extend("enum" = ["inbox", "cli", null]))]
    channel: Option<String>,
}

/// `POST /v1/actions/{id}/resolve-unknown`: a person settles an `unknown`
/// outcome (it happened, it did not, or run it again).
pub(crate) async fn resolve_unknown(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<ResolveUnknownBody>,
) -> ApiResult<axum::Json<Changed>> {
    let by = c.actor(b.by.as_deref())?;
    let resolution = match b.resolution {
        ResolutionBody::Executed => Resolution::Executed,
        ResolutionBody::Failed => Resolution::Failed,
        ResolutionBody::Retry => Resolution::Retry,
    };
    let actor = Actor {
        name: &by,
        channel: door(&c, b.channel.as_deref(), &[Channel::Inbox, Channel::Cli])?,
    };
    match c.ops(&s).resolve_unknown(&id, actor, resolution).await? {
        Ok(action) => {
            wrote(&s);
            Ok(axum::Json(Changed {
                extended: None,
                resolved: Some(true),
                action: show(&c, &action),
            }))
        }
        Err(action) => Err(ApiError::conflict(
            "not_unknown",
            format!(
                "the action is {}, not unknown: nothing to resolve",
                action.status
            ),
        )
        .with_detail(show(&c, &action).0)),
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExpireBody {
    /// Only this project's actions (a scoped token: its own, always).
    project: Option<String>,
}

/// `POST /v1/actions/expire`: settle every pending action whose expiry has
/// passed (the daemon also does this on its own cadence), of `project` or
/// of the token's project, else of every project.
pub(crate) async fn expire(
    Ctx { s, c }: Ctx,
    Body(b): Body<ExpireBody>,
) -> ApiResult<axum::Json<Vec<ActionView>>> {
    let project = c.filter(b.project)?;
    let done = Ops::Local(s.ops.within(project.as_deref()))
        .expire_due()
        .await?;
    if !done.is_empty() {
        wrote(&s);
    }
    Ok(axum::Json(done.iter().map(|a| show(&c, a)).collect()))
}
