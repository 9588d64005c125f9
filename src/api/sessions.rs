//! Session routes that the store already supports: register a session and
//! read it back. Checkpoint, ledger and resume routes come with their store
//! functions; the inbound wake (`POST /v1/sessions/{id}/wake`) lives in its
//! own module.
//!
//! Over HTTP only a `webhook` wake target (or none) may be registered:
//! `exec` and `tmux` targets run programs on the daemon's machine, which a
//! remote token must not be able to arrange. Webhook secrets are never
//! shown back.

use axum::Extension;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::Value;

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::input::Body;
use super::questions::wrote;
use crate::daemon::Shared;
use crate::store::sessions::{NewSession, Session, WakeTarget};

/// A session as shown over HTTP: a webhook secret is replaced by `***`.
fn show(s: &Session) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Some(secret) = v.pointer_mut("/wake_target/secret") {
        *secret = Value::String("***".into());
    }
    v
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegisterBody {
    session_id: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    project: String,
    #[serde(default)]
    cwd: String,
    wake_target: Option<WakeTarget>,
}

/// `POST /v1/sessions`: register (or refresh) a session.
pub(crate) async fn register(
    State(s): State<Shared>,
    Extension(c): Extension<Caller>,
    Body(b): Body<RegisterBody>,
) -> ApiResult<axum::Json<Value>> {
    let project = c.write_project(&b.project)?;
    if matches!(
        b.wake_target,
        Some(WakeTarget::Exec { .. } | WakeTarget::Tmux { .. })
    ) {
        return Err(ApiError::invalid(
            "exec and tmux wake targets run programs on the daemon's machine: register them \
             locally with the CLI; over HTTP use a webhook target",
        ));
    }
    // A scoped token may not take over another project's session id.
    if let Some(existing) = s.store.get_session(b.session_id.trim()).await?
        && !c.sees(&existing.project)
    {
        return Err(ApiError::forbidden(
            "wrong_project",
            "this session id belongs to another project",
        ));
    }
    let session = s
        .store
        .register_session(&NewSession {
            session_id: b.session_id,
            agent: if b.agent.is_empty() {
                c.name.clone()
            } else {
                b.agent
            },
            project,
            cwd: b.cwd,
            wake_target: b.wake_target,
        })
        .await?;
    wrote(&s);
    Ok(axum::Json(show(&session)))
}

/// `GET /v1/sessions/{id}`.
pub(crate) async fn get(
    State(s): State<Shared>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    match s.store.get_session(&id).await? {
        Some(session) if c.sees(&session.project) => Ok(axum::Json(show(&session))),
        _ => Err(ApiError::not_found(format!("session `{id}`"))),
    }
}
