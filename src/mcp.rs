//! `handoff mcp`: a stdio MCP server (the official Rust SDK, `rmcp`) whose
//! tools are the agent-side [`crate::ops`] — ask, pending, answer, resolve,
//! boards, actions, checkpoint, ledger, resume.
//!
//! Stdout carries protocol frames only: nothing here prints, and logs go to
//! stderr (set up in `main.rs`). Each tool call fills the caller's identity
//! (project, agent, session, executor owner) from [`Defaults`] when the
//! arguments leave it out, calls [`Ops`], and answers with the result as JSON
//! (text and `structuredContent`). Failures and refusals come back as tool
//! results with `isError: true` and `{reason, message, detail}`, never as a
//! crash. This module does not touch the store directly.
//!
//! Layout: `tools` (the server and its tool table), `docs` (instructions
//! and tool descriptions the model reads).

mod docs;
mod tools;

use rmcp::ServiceExt;

use crate::ops::Ops;
pub use tools::{Server, TOOL_NAMES};

/// Who is calling, from the environment the agent started the server in.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    /// `HANDOFF_PROJECT`, else the working directory's name.
    pub project: String,
    /// `HANDOFF_AGENT`, else `agent`.
    pub agent: String,
    /// `HANDOFF_SESSION` (empty: none).
    pub session: String,
    /// Executor id for claims: `HANDOFF_OWNER`, else the session, else the agent.
    pub owner: String,
    /// The actor name writes are recorded under when a call names none:
    /// the agent name, or empty against a remote daemon with a token (the
    /// token's own name is the actor there, and naming another is refused).
    pub actor: String,
}

impl Defaults {
    /// Read `HANDOFF_PROJECT`, `HANDOFF_AGENT`, `HANDOFF_SESSION`, `HANDOFF_OWNER`.
    pub fn from_env() -> Defaults {
        let var = |k: &str| {
            std::env::var(k)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let project = var("HANDOFF_PROJECT").unwrap_or_else(|| {
            std::env::current_dir()
                .ok()
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default()
        });
        let agent = var("HANDOFF_AGENT").unwrap_or_else(|| "agent".into());
        let session = var("HANDOFF_SESSION").unwrap_or_default();
        let owner = var("HANDOFF_OWNER").unwrap_or_else(|| {
            if session.is_empty() {
                agent.clone()
            } else {
                session.clone()
            }
        });
        Defaults {
            project,
            actor: agent.clone(),
            agent,
            session,
            owner,
        }
    }
}

/// Serve MCP over this process's stdin/stdout until the client disconnects.
pub async fn serve_stdio(ops: Ops, defaults: Defaults) -> anyhow::Result<()> {
    tracing::info!(project = %defaults.project, agent = %defaults.agent, session = %defaults.session, "MCP server starting on stdio");
    let running = Server::new(ops, defaults)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("MCP handshake failed: {e}"))?;
    let reason = running.waiting().await?;
    tracing::info!(?reason, "MCP client disconnected");
    Ok(())
}
