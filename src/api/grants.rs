//! Grant routes: the permission grants that "for this session"
//! and "always" taps saved, listed and revoked by people — what
//! `handoff grants` does on the host, for the web Inbox and remote tools.
//!
//! Reading is open to any token (as actions are); revoking is on the human
//! side, like deciding an action. A project-scoped token lists only its
//! project's grants, and another project's grant is 404 as if it did not
//! exist. A revoke that finds the grant revoked already changes nothing and
//! says so (409 `already_revoked`, the grant as it stands in `detail`).
//! Deciding prompts by grants is not here (`actions::grant`).

use axum::extract::Path;
use axum::http::StatusCode;
use serde::Deserialize;

use super::error::{ApiError, ApiResult};
use super::input::{Body, Ctx, NAME, Params};
use super::page::{Paged, Paging, list_query};
use super::questions::wrote;
use crate::store::Channel;
use crate::store::grants::{Grant, Revoked};

list_query! {
    ListQuery {
        /// Only this project's grants (a scoped token: its own, always).
        project: Option<String>,
        /// Also revoked and inert (never confirmed) grants.
        #[serde(default)]
        all: bool,
    }
}

/// `GET /v1/grants?project&all&limit&after`: the live grants (with `all`,
/// every grant), newest first, paged — the list `handoff grants` prints.
pub(crate) async fn list(
    Ctx { s, c }: Ctx,
    Params(q): Params<ListQuery>,
) -> ApiResult<Paged<Grant>> {
    let project = c.filter(q.project.clone())?;
    let all = c.local(&s).grant_list(q.all, project.as_deref()).await?;
    q.page(all, |g| g.id.clone())
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevokeBody {
    /// Who revokes it (with a token: its own name, or left out).
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/grants/{id}/revoke`: revoke a grant (full or short id); the
/// prompts it covered ask again from now on.
pub(crate) async fn revoke(
    Ctx { s, c }: Ctx,
    Path(id): Path<String>,
    Body(b): Body<RevokeBody>,
) -> ApiResult<axum::Json<Grant>> {
    let by = c.actor(b.by.as_deref())?;
    // Why 404, not 422: an id is a path segment, and one that cannot name
    // a grant names none (as an unknown action id does).
    let key = id.trim();
    if key.len() < 8 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(not_found(&id));
    }
    let out = c.local(&s).grant_revoke(&id, &by, Channel::Inbox).await?;
    match out {
        Some(Revoked::Now(g)) => {
            wrote(&s);
            Ok(axum::Json(g))
        }
        Some(Revoked::Already(g)) => {
            let when = g
                .revoked_at
                .map(crate::clock::format_rfc3339)
                .unwrap_or_default();
            let who = g.revoked_by.clone().unwrap_or_else(|| "someone".into());
            let detail = serde_json::to_value(&g).unwrap_or_default();
            Err(ApiError::conflict(
                "already_revoked",
                format!(
                    "grant `{}` ({}) was already revoked by {who} at {when}; nothing changed",
                    g.short_id(),
                    g.rule
                ),
            )
            .with_detail(detail))
        }
        None => Err(not_found(&id)),
    }
}

/// 404 for grant `id`, saying where the grants are listed.
fn not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "grant `{id}` not found: give its id or at least its last 8 characters, as GET /v1/grants lists them (add all=true for revoked ones)"
        ),
    )
}
