//! Which project and session an agent's command works in: whose replies a
//! pickup hands over, and where a new item is filed.

use crate::ops::Ops;

/// Whose items a pickup (`pending`, `board pending`) hands over: the
/// given `--session`, else the caller's own `$HANDOFF_SESSION`; without a
/// session, the given `--project`, else `$HANDOFF_PROJECT`. `--all` drops
/// the defaults from the environment (explicit flags still apply), so one
/// agent never takes another's replies by accident.
#[derive(Debug, clap::Args)]
pub(crate) struct PickupScope {
    /// Only this project [default: $HANDOFF_PROJECT when no session is known].
    #[arg(long)]
    project: Option<String>,
    /// Only this agent session [default: $HANDOFF_SESSION].
    #[arg(long)]
    session: Option<String>,
    /// Every session's and project's items, ignoring $HANDOFF_SESSION and
    /// $HANDOFF_PROJECT (for a person or a supervisor, not an agent).
    #[arg(long)]
    all: bool,
}

impl PickupScope {
    /// The (project, session) the pickup reads.
    pub(crate) fn resolve(self) -> (Option<String>, Option<String>) {
        let env = |k: &str| {
            std::env::var(k)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let all = self.all;
        let session = self
            .session
            .or_else(|| (!all).then(|| env("HANDOFF_SESSION")).flatten());
        let project = match (&self.project, &session) {
            (Some(_), _) | (None, Some(_)) => self.project,
            (None, None) => (!all).then(|| env("HANDOFF_PROJECT")).flatten(),
        };
        (project, session)
    }
}

/// The project an agent's new item (`ask`, `propose`) is filed under, one
/// rule for both: the given `--project` (or `$HANDOFF_PROJECT`), else the
/// project of the registered session `session`, else the current folder's
/// name.
pub(crate) async fn filing_project(
    ops: &Ops,
    given: Option<String>,
    session: &str,
) -> anyhow::Result<String> {
    if let Some(p) = given {
        return Ok(p);
    }
    let session = session.trim();
    if !session.is_empty()
        && let Some(s) = ops.get_session(session).await?
        && s.session_id == session
        && !s.project.is_empty()
    {
        return Ok(s.project);
    }
    Ok(std::env::current_dir()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default())
}
