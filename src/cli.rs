//! The `handoff` command line: argument parsing, output and exit codes.
//!
//! Each area has its own file (`cli/questions.rs`, `cli/boards.rs`,
//! `cli/actions.rs`, `cli/ops_kit.rs` for events, backup, completions and
//! man pages) with a clap `Cmd` enum and a `run` function; this file
//! glues them together. Commands print human-readable text by default and
//! JSON with `--json`. No SQL here: commands go through [`crate::ops::Ops`]
//! (`ctx.ops()`), which is the local store, or the daemon at `HANDOFF_URL`
//! — the same command either way. Host-only commands (serve, pair, token,
//! recover, purge, backup) open the store directly (`ctx.host_store()`).

mod actions;
mod boards;
mod inbox;
mod mcp;
mod ops_kit;
mod questions;
mod sessions;
mod tokens;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde::Serialize;

use crate::ops::{self, Local, Ops, Policy, Remote};
use crate::store::{self, Store};

/// Exit codes, documented in `--help` and the README.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// An error: bad input, an unusable database, a failed command.
    pub const ERROR: u8 = 1;
    /// The command line itself is wrong (clap's usage errors).
    pub const USAGE: u8 = 2;
    /// The store refused the write: already answered, stale revision,
    /// not open, dedup conflict, lost a race. Nothing was changed.
    pub const REFUSED: u8 = 3;
    /// No such question, board, row or action.
    pub const NOT_FOUND: u8 = 4;
    /// `--wait` or `wait` timed out before anything arrived.
    pub const TIMEOUT: u8 = 5;
}

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  error (bad input, unusable database, failed command)
  2  usage error
  3  refused: the store refused the write and changed nothing
     (already answered, stale revision, not open, conflict)
  4  not found
  5  timed out waiting (--wait, wait)

Environment:
  HANDOFF_DB     database file (default ~/.local/share/handoff/handoff.db)
  HANDOFF_URL    a daemon's address (http://host:8642): every command except
                 serve, pair, token, recover, purge and backup runs against it
  HANDOFF_TOKEN  the API token for HANDOFF_URL (`handoff token create`)
  HANDOFF_TIMEOUT  how long a call to HANDOFF_URL waits for an answer (default 10s)";

/// Hand questions, blocked steps and risky actions to humans.
#[derive(Debug, Parser)]
#[command(name = "handoff", version, after_help = EXIT_CODES)]
pub struct Cli {
    /// Database file [default: $HANDOFF_DB, else ~/.local/share/handoff/handoff.db]
    #[arg(long, global = true, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the daemon: push items to Telegram, take answers back, serve HTTP.
    Serve {
        /// Config file [default: config/handoff.toml, else ~/.config/handoff/handoff.toml]
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Listen address, overriding [http] listen (port 0 picks a free port).
        #[arg(long, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
    },
    /// Admit a Telegram user who sent /start, with the code the bot gave them.
    Pair {
        /// The one-time code.
        code: String,
        /// What they may do: answer questions and rows, or also decide actions.
        #[arg(long, value_parser = ["answer", "approve"], default_value = "answer")]
        role: String,
    },
    #[command(flatten)]
    Questions(questions::Cmd),
    /// Boards: named checklists whose blocked rows wait on a person.
    Board {
        #[command(subcommand)]
        cmd: boards::Cmd,
    },
    #[command(flatten)]
    Actions(actions::Cmd),
    #[command(flatten)]
    Sessions(sessions::Cmd),
    /// API tokens: create (printed once), list, revoke.
    Token {
        #[command(subcommand)]
        cmd: tokens::Cmd,
    },
    /// Serve the agent-side tools over MCP on stdin/stdout (for Claude Code, Codex, …).
    Mcp(mcp::McpArgs),
    /// Print a one-time login link to the web Inbox (works once, for --ttl).
    InboxLink {
        /// The daemon's address as the browser reaches it.
        #[arg(long, default_value = "http://127.0.0.1:8642")]
        url: String,
        /// How long the link works (the session it opens lasts 7 days).
        #[arg(long, default_value = "10m")]
        ttl: String,
        /// Who the session acts as (recorded as `by` of its answers and decisions).
        #[arg(long = "as", value_name = "NAME", default_value = "inbox")]
        name: String,
    },
    #[command(flatten)]
    OpsKit(ops_kit::Cmd),
}

/// A failure with its own exit code and a message for the user.
#[derive(Debug)]
pub(crate) struct Failure {
    pub code: u8,
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// An error that exits with `code`.
pub(crate) fn fail(code: u8, message: impl Into<String>) -> anyhow::Error {
    Failure {
        code,
        message: message.into(),
    }
    .into()
}

/// Whose replies a pickup (`pending`, `board pending`) hands over: the
/// given `--session`, else the caller's own `$HANDOFF_SESSION`; without a
/// session, the given `--project`, else `$HANDOFF_PROJECT`. `--all` drops
/// the defaults from the environment (explicit flags still apply), so one
/// agent never takes another's replies by accident.
pub(crate) fn caller_scope(
    project: Option<String>,
    session: Option<String>,
    all: bool,
) -> (Option<String>, Option<String>) {
    let env = |k: &str| {
        std::env::var(k)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let session = session.or_else(|| (!all).then(|| env("HANDOFF_SESSION")).flatten());
    let project = match (&project, &session) {
        (Some(_), _) | (None, Some(_)) => project,
        (None, None) => (!all).then(|| env("HANDOFF_PROJECT")).flatten(),
    };
    (project, session)
}

/// What every command gets: where the store (or the daemon) is and how to print.
pub(crate) struct Ctx {
    db: Option<PathBuf>,
    pub json: bool,
    /// `HANDOFF_URL`: run operations against this daemon.
    url: Option<String>,
    /// `HANDOFF_TOKEN`: its bearer token.
    token: Option<String>,
}

impl Ctx {
    /// The operations: the daemon at `HANDOFF_URL` when set, else the
    /// local store, with the default action policy.
    pub async fn ops(&self) -> anyhow::Result<Ops> {
        self.ops_with(Policy::default()).await
    }

    /// The operations with `policy` for proposed actions (local only: a
    /// daemon applies its own rules).
    pub async fn ops_with(&self, policy: Policy) -> anyhow::Result<Ops> {
        match &self.url {
            Some(url) => Ok(Ops::Remote(Remote::new(url, self.token.clone())?)),
            None => Ok(Ops::Local(Local::new(self.store().await?, policy))),
        }
    }

    /// True when commands run against a daemon (`HANDOFF_URL`).
    pub fn remote(&self) -> bool {
        self.url.is_some()
    }

    /// The store for a command that only runs on the daemon's host; a clear
    /// refusal when `HANDOFF_URL` points elsewhere.
    pub async fn host_store(&self, what: &str) -> anyhow::Result<Store> {
        if self.remote() {
            return Err(fail(
                exit::ERROR,
                format!(
                    "`handoff {what}` must run on the daemon's host: it works on the database file there (unset HANDOFF_URL)"
                ),
            ));
        }
        self.store().await
    }

    /// The actor name for a write: `given`, else `default` locally. Against
    /// a daemon with a token the token's own name is the actor, so an
    /// unnamed write sends none (and a named one must match it).
    pub fn actor(&self, given: Option<String>, default: impl FnOnce() -> String) -> String {
        match given {
            Some(g) => g,
            None if self.remote() && self.token.is_some() => String::new(),
            None => default(),
        }
    }

    /// Open the store (the `--db` flag, else the default path).
    pub async fn store(&self) -> anyhow::Result<Store> {
        let path = match &self.db {
            Some(p) => p.clone(),
            None => store::default_path()?,
        };
        Ok(Store::open(&path).await?)
    }

    /// Print `value` as JSON with `--json`, else the text `human` builds.
    pub fn print<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            match serde_json::to_string_pretty(value) {
                Ok(s) => out(&s),
                // Serializing our own plain structs cannot fail; say so if it does.
                Err(e) => eprintln!("handoff: cannot print JSON: {e}"),
            }
        } else {
            let text = human();
            if !text.is_empty() {
                out(text.trim_end());
            }
        }
    }

    /// Report a refusal: as JSON on stdout with `--json` (it is a result, not
    /// a crash), and as an error either way, so the exit code is `code`.
    pub fn refuse<T: Serialize>(&self, code: u8, value: &T, message: String) -> anyhow::Error {
        if self.json {
            self.print(value, String::new);
        }
        fail(code, message)
    }
}

/// Parse the arguments, run the command, and map the outcome to an exit code.
pub async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    match run(cli).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let code = match (e.downcast_ref::<Failure>(), e.downcast_ref::<ops::Error>()) {
                (Some(f), _) => f.code,
                (None, Some(ops::Error::NotFound { .. })) => exit::NOT_FOUND,
                (None, Some(ops::Error::Refused { .. })) => exit::REFUSED,
                _ => exit::ERROR,
            };
            eprintln!("handoff: {e:#}");
            ExitCode::from(code)
        }
    }
}

/// Run one parsed command; returns the exit code on success paths.
pub async fn run(cli: Cli) -> anyhow::Result<u8> {
    let env = |k: &str| {
        std::env::var(k)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let ctx = Ctx {
        db: cli.db,
        json: cli.json,
        url: env("HANDOFF_URL"),
        token: env("HANDOFF_TOKEN"),
    };
    match cli.cmd {
        Command::Questions(cmd) => questions::run(cmd, &ctx).await,
        Command::Board { cmd } => boards::run(cmd, &ctx).await,
        Command::Actions(cmd) => actions::run(cmd, &ctx).await,
        Command::Sessions(cmd) => sessions::run(cmd, &ctx).await,
        Command::Token { cmd } => tokens::run(cmd, &ctx).await,
        Command::Mcp(args) => mcp::run(args, &ctx).await,
        Command::Serve { config, listen } => serve(&ctx, config, listen).await,
        Command::InboxLink { url, ttl, name } => inbox::run(&url, &ttl, &name, &ctx).await,
        Command::Pair { code, role } => {
            let store = ctx.host_store("pair").await?;
            match store.pairing_use(&code, &role).await? {
                Some((user, chat, name)) => {
                    let v = serde_json::json!({"user_id": user, "chat_id": chat, "username": name, "role": role});
                    ctx.print(&v, || {
                        format!("admitted Telegram user {user} (@{name}) to chat {chat} with role {role}")
                    });
                    Ok(exit::OK)
                }
                None => Err(fail(
                    exit::NOT_FOUND,
                    format!(
                        "no pending pairing with code {code}: codes work once, for one hour; ask the user to send /start again"
                    ),
                )),
            }
        }
        Command::OpsKit(cmd) => ops_kit::run(cmd, &ctx).await,
    }
}

async fn serve(
    ctx: &Ctx,
    config: Option<PathBuf>,
    listen: Option<std::net::SocketAddr>,
) -> anyhow::Result<u8> {
    let (cfg, cfg_path) = crate::config::Config::load(config.as_deref())?;
    let db = match &ctx.db {
        Some(p) => p.clone(),
        None => cfg.db_path()?,
    };
    let store = Store::open(&db).await?;
    let addr = listen.unwrap_or(cfg.http.listen);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        fail(
            exit::ERROR,
            format!(
                "cannot listen on {addr}: {e}{}",
                if e.kind() == std::io::ErrorKind::AddrInUse {
                    " (is another `handoff serve` running? pick another with --listen or [http] listen)"
                } else {
                    ""
                }
            ),
        )
    })?;
    let local = listener.local_addr()?;
    if let Some(why) = crate::api::listen_refusal(&store, cfg.http.open, local).await? {
        return Err(fail(exit::ERROR, why));
    }
    // One plain line on stderr, whatever the log level: scripts and tests
    // read the bound address from it.
    eprintln!(
        "handoff: serving on http://{local} (database {}, API {}, config {})",
        db.display(),
        if cfg.http.open {
            "open on loopback"
        } else {
            "needs a token"
        },
        cfg_path.map_or("none: defaults".into(), |p| p.display().to_string())
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    crate::daemon::cancel_on_signals(shutdown.clone());
    crate::daemon::run(cfg, store, listener, shutdown).await?;
    Ok(exit::OK)
}

/// Write one line of output. A reader that went away (`handoff … | head`)
/// ends the command quietly instead of panicking like `println!` would.
fn out(line: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("handoff: cannot write output: {e}");
    }
}

/// The person a human command acts as when none is named: $HANDOFF_USER,
/// else $USER, else `cli` — the same for every command (reply, dismiss,
/// annotate, approve, reject, …).
pub(crate) fn person() -> String {
    ["HANDOFF_USER", "USER"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "cli".into())
}
