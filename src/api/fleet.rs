//! The fleet route: every registered session, grouped by project, with
//! what each is doing now (see `store::sessions::fleet`), for the Inbox's
//! Sessions page and `handoff sessions` against a daemon. A project-scoped
//! token sees its own project's sessions only. Webhook secrets never
//! appear: only the wake target's kind is shown.

use serde::{Deserialize, Serialize};

use super::error::ApiResult;
use super::input::{Ctx, Params};
use crate::store::sessions::FleetSession;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FleetQuery {
    /// Only this project's sessions (a scoped token: its own, always).
    project: Option<String>,
}

/// The fleet as the route answers it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Fleet {
    /// The daemon's clock when it was read ("how long" counts from here).
    #[serde(with = "crate::clock::Timestamp")]
    now: i64,
    /// Every session, by project, waiting ones first in each.
    sessions: Vec<FleetSession>,
}

/// `GET /v1/fleet?project`: every session and what it is doing now.
pub(crate) async fn fleet(
    Ctx { s, c }: Ctx,
    Params(q): Params<FleetQuery>,
) -> ApiResult<axum::Json<Fleet>> {
    let project = c.filter(q.project)?;
    let ops = c.ops(&s);
    let sessions = ops.fleet(project.as_deref()).await?;
    Ok(axum::Json(Fleet {
        now: ops.now(),
        sessions,
    }))
}
