//! `handoff session register|checkpoint|resume|show|list|end`.

use clap::Subcommand;

use super::{read_json, render, resolve_existing, resolve_or_given};
use crate::cli::{Ctx, exit, fail, refusal};
use crate::store::sessions::{Checkpointed, DEFAULT_LEDGER_TAIL, Ended, NewSession, WakeTarget};

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Register a session (or update its agent, project, cwd and wake target).
    Register(Box<RegisterArgs>),
    /// Store the session's state, if its revision is still --revision (CAS).
    Checkpoint {
        /// Session id (or a unique suffix of a registered one).
        #[arg(long, env = "HANDOFF_SESSION")]
        session: String,
        /// The revision you read (from `resume` or the last checkpoint).
        #[arg(long)]
        revision: i64,
        /// The state: JSON text, @file, or - for stdin.
        #[arg(long)]
        state: String,
    },
    /// Everything the session needs to pick up where it stopped: last
    /// checkpoint, ledger tail, interrupted calls, unclaimed answers,
    /// decisions and wakes. Marks nothing.
    Resume {
        /// Session to resume (id, or a unique suffix of a registered one).
        #[arg(long, env = "HANDOFF_SESSION")]
        session: String,
        /// How many ledger rows to show.
        #[arg(long, default_value_t = DEFAULT_LEDGER_TAIL)]
        tail: i64,
    },
    /// Show one session: agent, project, status, revision, wake target.
    Show {
        /// Session id (or a unique suffix).
        #[arg(long, env = "HANDOFF_SESSION")]
        session: String,
    },
    /// Sessions, most recently changed first.
    List {
        /// Only sessions with this status.
        #[arg(long, value_parser = ["active", "idle", "ended"])]
        status: Option<String>,
        /// Only sessions of this project.
        #[arg(long)]
        project: Option<String>,
    },
    /// Mark the session ended (registering it again reopens it).
    End {
        /// Session id (or a unique suffix).
        #[arg(long, env = "HANDOFF_SESSION")]
        session: String,
    },
}

/// `handoff session register`.
#[derive(Debug, clap::Args)]
pub(crate) struct RegisterArgs {
    /// Session id, chosen by the agent (e.g. Claude Code's session id).
    #[arg(long, env = "HANDOFF_SESSION")]
    session: String,
    /// Agent name (claude, codex, …).
    #[arg(long, env = "HANDOFF_AGENT", default_value = "")]
    agent: String,
    /// Project the session works in (`session list --project` filters on it).
    #[arg(long, default_value = "")]
    project: String,
    /// Working directory [default: the current one].
    #[arg(long)]
    cwd: Option<String>,
    /// Wake by running the command after `--` (argv, no shell; JSON on stdin).
    #[arg(long, requires = "command", conflicts_with_all = ["wake_webhook", "wake_tmux"])]
    wake_exec: bool,
    /// With --wake-exec: kill the command after this many seconds.
    #[arg(long, value_name = "SECS", requires = "wake_exec")]
    wake_timeout: Option<u64>,
    /// Wake by POSTing to this URL, signed per Standard Webhooks.
    #[arg(
        long,
        value_name = "URL",
        requires = "wake_secret",
        conflicts_with = "wake_tmux"
    )]
    wake_webhook: Option<String>,
    /// The `whsec_…` signing secret for --wake-webhook.
    #[arg(
        long,
        value_name = "SECRET",
        env = "HANDOFF_WAKE_SECRET",
        requires = "wake_webhook"
    )]
    wake_secret: Option<String>,
    /// Wake by typing a notice into this tmux pane (`%3`, `main:1.0`).
    #[arg(long, value_name = "PANE")]
    wake_tmux: Option<String>,
    /// With --wake-tmux: only if the pane still runs this command.
    #[arg(long, value_name = "NAME", requires = "wake_tmux")]
    wake_agent: Option<String>,
    /// The wake command (after `--`).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

impl RegisterArgs {
    fn wake_target(&self) -> anyhow::Result<Option<WakeTarget>> {
        if self.wake_exec {
            return Ok(Some(WakeTarget::Exec {
                argv: self.command.clone(),
                timeout_secs: self.wake_timeout,
            }));
        }
        if !self.command.is_empty() {
            return Err(fail(
                exit::INVALID,
                "a command after `--` is the wake command: add --wake-exec before `--`",
            ));
        }
        if let Some(url) = &self.wake_webhook {
            return Ok(Some(WakeTarget::Webhook {
                url: url.clone(),
                secret: self.wake_secret.clone().unwrap_or_default(),
            }));
        }
        Ok(self.wake_tmux.as_ref().map(|pane| WakeTarget::Tmux {
            pane: pane.clone(),
            agent: self.wake_agent.clone(),
        }))
    }
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Register(a) => a.run(ctx).await,
        Cmd::Checkpoint {
            session,
            revision,
            state,
        } => checkpoint(ctx, &session, revision, &state).await,
        Cmd::Resume { session, tail } => {
            let ops = ctx.ops().await?;
            let id = resolve_or_given(&ops, &session).await?;
            let r = ops.read_resume(&id, tail).await?;
            ctx.show("resume", &r, || render::resume(&r));
            Ok(exit::OK)
        }
        Cmd::Show { session } => show(ctx, &session).await,
        Cmd::List { status, project } => list(ctx, status, project).await,
        Cmd::End { session } => end(ctx, &session).await,
    }
}

impl RegisterArgs {
    /// `handoff session register`.
    async fn run(self, ctx: &Ctx) -> anyhow::Result<u8> {
        let wake_target = self.wake_target()?;
        let cwd = self.cwd.unwrap_or_else(|| {
            std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        });
        let ops = ctx.ops().await?;
        let s = ops
            .register_session(&NewSession {
                session_id: self.session,
                agent: self.agent,
                project: self.project,
                cwd,
                wake_target,
            })
            .await?;
        ctx.show("session", &s, || {
            format!("registered\n{}", render::session(&s))
        });
        Ok(exit::OK)
    }
}

/// `handoff session checkpoint`: store `state` if the session is still at
/// `revision`.
async fn checkpoint(ctx: &Ctx, session: &str, revision: i64, state: &str) -> anyhow::Result<u8> {
    let value = read_json("--state", state)?;
    let ops = ctx.ops().await?;
    let id = resolve_existing(&ops, session).await?;
    match ops
        .save_checkpoint(&id, revision, &value.to_string())
        .await?
    {
        Checkpointed::Saved { session: s } => {
            let rev = s.revision;
            ctx.show("session", &s, || {
                format!("checkpointed {id}: now revision {rev} (pass --revision {rev} next time)")
            });
            Ok(exit::OK)
        }
        r @ Checkpointed::Stale { expected, current } => Err(refusal(
            exit::REFUSED,
            &r,
            format!(
                "session {id} is at revision {current}, not {expected}: someone checkpointed in between; \
                 read it again (`handoff session resume`) and retry with --revision {current}"
            ),
        )),
        r @ Checkpointed::Ended { .. } => Err(refusal(
            exit::REFUSED,
            &r,
            format!("session {id} has ended; register it again to reopen it"),
        )),
        Checkpointed::NotFound => Err(fail(
            exit::NOT_FOUND,
            format!("no session `{id}` is registered"),
        )),
    }
}

/// `handoff session show`.
async fn show(ctx: &Ctx, session: &str) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let id = resolve_existing(&ops, session).await?;
    let s = ops
        .get_session(&id)
        .await?
        .ok_or_else(|| fail(exit::NOT_FOUND, format!("no session `{id}`")))?;
    ctx.show("session", &s, || render::session(&s));
    Ok(exit::OK)
}

/// `handoff session list`.
async fn list(ctx: &Ctx, status: Option<String>, project: Option<String>) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let list = ops
        .list_sessions(status.as_deref(), project.as_deref())
        .await?;
    ctx.list("sessions", &list, || {
        if list.is_empty() {
            "no sessions".into()
        } else {
            list.iter().map(render::session_line).collect()
        }
    });
    Ok(exit::OK)
}

/// `handoff session end`.
async fn end(ctx: &Ctx, session: &str) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    let id = resolve_existing(&ops, session).await?;
    let out = ops.end_session(&id).await?;
    let (s, outcome, text) = match &out {
        Ended::NotFound => {
            return Err(fail(exit::NOT_FOUND, format!("no session `{id}`")));
        }
        Ended::Ended { session: s } => (s, "ended", format!("ended session {id}")),
        Ended::AlreadyEnded { session: s } => (
            s,
            "already_ended",
            format!("session {id} had already ended"),
        ),
    };
    let v = crate::cli::one("session", s, serde_json::json!({"outcome": outcome}));
    ctx.print(&v, || text);
    Ok(exit::OK)
}
