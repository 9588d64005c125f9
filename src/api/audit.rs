//! `GET /v1/audit/export`: the actions' audit log as a hash chain (see
//! `store/audit.rs`), for an admin or auditor token; a scoped token gets
//! its own project's entries only.

use serde::Deserialize;

use super::doc::Shaped;
use super::error::{ApiError, ApiResult};
use super::input::{Ctx, Params};
use crate::store::audit::Export;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExportQuery {
    /// Only entries at or after this RFC 3339 time (a bare date,
    /// 2026-12-01, is read as its midnight UTC).
    #[schemars(extend("format" = "date-time"))]
    since: Option<String>,
    /// Only this project's actions (a scoped token: its own, always).
    project: Option<String>,
}

/// `GET /v1/audit/export?since&project`: every audit entry as one JSON
/// Lines file (`lines`, entries then the head line), chained by SHA-256;
/// the head is recorded in the event log (`audit.exported`).
pub(crate) async fn export(
    Ctx { s, c }: Ctx,
    Params(q): Params<ExportQuery>,
) -> ApiResult<Shaped<Export>> {
    let since = q
        .since
        .as_deref()
        .map(|t| {
            crate::clock::parse_rfc3339(t).map_err(|e| {
                ApiError::invalid(format!(
                    "since `{t}`: {e}; give an RFC 3339 time, e.g. 2026-12-01T00:00:00Z"
                ))
            })
        })
        .transpose()?;
    let project = c.filter(q.project)?;
    let out = c
        .ops(&s)
        .audit_export(since, project.as_deref(), &c.name)
        .await?;
    Ok(Shaped::new(serde_json::to_value(out).unwrap_or_default()))
}
