//! The `handoff` command line: argument parsing, output and exit codes.
//!
//! Each area has its own file (`cli/questions.rs`, `cli/boards.rs`,
//! `cli/actions.rs`, `cli/ops_kit.rs` for events, backup, completions and
//! man pages) with a clap `Cmd` enum and a `run` function; this file
//! glues them together. Commands print human-readable text by default and
//! one JSON object with `--json`; `cli/output.rs` holds that contract, the
//! error object and the exit-code rule, applied once in [`main`]. No SQL here: commands go through [`crate::ops::Ops`]
//! (`ctx.ops()`), which is the local store, or the daemon at `HANDOFF_URL`
//! — the same command either way. Host-only commands (serve, init, migrate, pair,
//! token, recover, purge, backup, export) open the store directly (`ctx.host_store()`).
//!
//! Every command finds the same config file and database the same way
//! ([`crate::config::Config::locate`], [`crate::config::database`]); a
//! database someone named (`--db`, `HANDOFF_DB`, `[store] path`) must exist,
//! except for `serve` and `init`, which create it.

mod actions;
mod boards;
mod help;
mod hook;
mod inbox;
mod mcp;
mod ops_kit;
mod output;
mod questions;
mod scope;
mod serve;
mod sessions;
mod status;
mod tokens;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde::Serialize;

use crate::config::{Config, DbSource};
use crate::ops::{Daemon, Local, Ops, Policy, Remote};
use crate::store::Store;
pub(crate) use help::ENVIRONMENT;
use help::after_help;
pub(crate) use output::{entity, fail, fail_as, list, one, refusal, store_failure};
pub(crate) use scope::{PickupScope, filing_project};
use serve::serve;

pub mod exit;

/// Hand questions, blocked steps and risky actions to humans.
#[derive(Debug, Parser)]
#[command(name = "handoff", version, after_help = after_help())]
pub struct Cli {
    /// Database file [default: $HANDOFF_DB, else the config's [store] path, else ~/.local/share/handoff/handoff.db]
    #[arg(long, global = true, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Config file [default: $HANDOFF_CONFIG, else config/handoff.toml, else ~/.config/handoff/handoff.toml]
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
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
        /// Listen address, overriding [http] listen (port 0 picks a free port).
        #[arg(long, value_name = "ADDR", value_parser = crate::config::resolve_listen)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Create the database (and its folder) where the other commands will look for it.
    Init,
    /// Bring an existing database's schema up to this build's and exit (for deploy pipelines).
    Migrate,
    /// Show which config and database the commands use, and whether a daemon serves it.
    Status,
    /// Check the agent hooks handoff installs: installed, current, and (Codex) trusted.
    Doctor,
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
        /// The daemon's address as the browser reaches it [default: the config's [http] public_url, else its listen address].
        #[arg(long)]
        url: Option<String>,
        /// How long the link works (the session it opens lasts 7 days).
        #[arg(long, default_value = "10m")]
        ttl: String,
        /// Who the session acts as (recorded as `by` of its answers and decisions).
        #[arg(long = "as", value_name = "NAME", default_value = "inbox")]
        name: String,
    },
    #[command(flatten)]
    OpsKit(ops_kit::Cmd),
    /// Answer an agent's hook event through handoff (Claude Code and Codex permission prompts), or install the hooks.
    Hook {
        #[command(subcommand)]
        cmd: hook::Cmd,
    },
    /// Permission grants saved by "for this session" / "always" approvals: list, revoke.
    Grants {
        #[command(subcommand)]
        cmd: Option<hook::GrantsCmd>,
        /// Also list revoked and inert grants.
        #[arg(long)]
        all: bool,
    },
}

/// What every command gets: where the store (or the daemon) is and how to print.
pub(crate) struct Ctx {
    /// `--db`.
    db: Option<PathBuf>,
    /// `--config`.
    config: Option<PathBuf>,
    /// The config, read once on first use (remote commands never read it).
    loaded: std::sync::OnceLock<(Config, Option<PathBuf>)>,
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
    /// daemon applies its own rules). Without `HANDOFF_URL`, a daemon
    /// serving this database on its socket runs them (the one writer),
    /// unless the policy carries rules of its own (`--rules`, or the
    /// config's `[[rule]]`s: the file decides with exactly those).
    pub async fn ops_with(&self, policy: Policy) -> anyhow::Result<Ops> {
        match &self.url {
            Some(url) => Ok(Ops::Remote(Remote::new(url, self.token.clone())?)),
            None => {
                // A daemon's socket lies beside a database file; on
                // PostgreSQL every process writes to the server itself.
                if policy.rules.is_empty()
                    && let (crate::config::DatabaseRef::File(path), _) = self.database_ref()?
                    && let Some(d) = Daemon::connect(&path, policy.clone()).await
                {
                    return Ok(Ops::Daemon(d));
                }
                Ok(Ops::Local(Local::new(self.store().await?, policy)))
            }
        }
    }

    /// True when commands run against a daemon (`HANDOFF_URL`).
    pub fn remote(&self) -> bool {
        self.url.is_some()
    }

    /// The store for a command that only runs on the daemon's host; a clear
    /// refusal when `HANDOFF_URL` points elsewhere.
    pub async fn host_store(&self, what: &str) -> anyhow::Result<Store> {
        self.local_only(what)?;
        self.store().await
    }

    /// Refuse `handoff {what}`, a command that works on this machine's
    /// database, when `HANDOFF_URL` says the commands use a daemon's.
    pub fn local_only(&self, what: &str) -> anyhow::Result<()> {
        if self.remote() {
            return Err(fail(
                exit::INVALID,
                format!(
                    "`handoff {what}` must run on the daemon's host: it works on the database file there (unset HANDOFF_URL)"
                ),
            ));
        }
        Ok(())
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

    /// The config file every command reads (see [`Config::locate`]) and
    /// where it was found (`None`: no file, the defaults).
    pub fn config(&self) -> anyhow::Result<(&Config, Option<&std::path::Path>)> {
        if self.loaded.get().is_none() {
            let loaded = Config::load(self.config.as_deref())?;
            // Only this thread fills it; a lost race would hold the same value.
            let _ = self.loaded.set(loaded);
        }
        let (cfg, path) = self.loaded.get().expect("filled just above");
        Ok((cfg, path.as_deref()))
    }

    /// The database file and who named it: `--db`, else `HANDOFF_DB`, else
    /// the config's `[store] path`, else the default location.
    pub fn database(&self) -> anyhow::Result<(PathBuf, DbSource)> {
        let (cfg, cfg_path) = self.config()?;
        Ok(crate::config::database(self.db.as_deref(), cfg, cfg_path)?)
    }

    /// [`Ctx::database`], a PostgreSQL URL included (`handoff migrate`).
    pub fn database_ref(&self) -> anyhow::Result<(crate::config::DatabaseRef, DbSource)> {
        let (cfg, cfg_path) = self.config()?;
        Ok(crate::config::database_ref(
            self.db.as_deref(),
            cfg,
            cfg_path,
        )?)
    }

    /// Open the store. Only the default location is created when missing:
    /// a file someone named that does not exist is a typo until `handoff
    /// init` says otherwise, so it is refused with its path.
    pub async fn store(&self) -> anyhow::Result<Store> {
        let path = match self.database_ref()? {
            (crate::config::DatabaseRef::Postgres(url), _) => {
                let clock = std::sync::Arc::new(crate::clock::SystemClock);
                return Ok(Store::open_postgres(&url, clock).await?);
            }
            (crate::config::DatabaseRef::File(path), _) => path,
        };
        let (path, source) = (path, self.database()?.1);
        if source.is_named() && !path.exists() {
            return Err(fail(exit::INVALID, missing_database(&path, &source)));
        }
        Ok(Store::open_one_shot(&path).await?)
    }

    /// The action policy from the config (`[[rule]]`, `[redact]`), or the
    /// rules of `rules_file` when given.
    pub fn policy(&self, rules_file: Option<&std::path::Path>) -> anyhow::Result<Policy> {
        let (cfg, _) = self.config()?;
        Ok(Policy::from_config(cfg, rules_file)?)
    }

    /// Print `value` (one object of the JSON contract, see [`output`])
    /// with `--json`, else the text `human` builds.
    pub fn print(&self, value: &serde_json::Value, human: impl FnOnce() -> String) {
        debug_assert!(value.is_object(), "--json prints one object");
        if self.json {
            match serde_json::to_string_pretty(value) {
                Ok(s) => out(&s),
                // Serializing a serde_json::Value cannot fail; say so if it does.
                Err(e) => eprintln!("handoff: cannot print JSON: {e}"),
            }
        } else {
            let text = human();
            if !text.is_empty() {
                out(text.trim_end());
            }
        }
    }

    /// Print `{key: value}` (see [`one`]).
    pub fn show<T: Serialize>(&self, key: &str, value: &T, human: impl FnOnce() -> String) {
        self.print(&one(key, value, serde_json::Value::Null), human);
    }

    /// Print `{key: [items], "next": null}` (see [`list`]).
    pub fn list<T: Serialize>(&self, key: &str, items: &[T], human: impl FnOnce() -> String) {
        self.print(&list(key, items, None), human);
    }
}

/// Parse the arguments, run the command, and map the outcome to an exit code.
pub async fn main() -> ExitCode {
    let json = output::wants_json(std::env::args_os());
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // Help and version go to stdout and exit 0.
            let _ = e.print();
            return ExitCode::from(exit::OK);
        }
        Err(e) => {
            // A usage error: clap's text on stderr, and with --json the
            // error object on stdout like every other failure.
            let _ = e.print();
            if json {
                let text = e.to_string();
                let first = text
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("usage error");
                let message = first.trim_start_matches("error: ").trim();
                // A value clap's parser refused (a bad duration, a status
                // that does not exist) is `invalid`, like any bad value;
                // the rest (unknown flag, missing argument) is `usage`.
                let reason = match e.kind() {
                    clap::error::ErrorKind::ValueValidation
                    | clap::error::ErrorKind::InvalidValue => "invalid",
                    _ => "usage",
                };
                print_error(
                    &serde_json::json!({"reason": reason, "message": message, "detail": null}),
                );
            }
            return ExitCode::from(exit::INVALID);
        }
    };
    match run(cli).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // The one place a failure becomes an exit code, a line on
            // stderr and (with --json) the error object on stdout.
            let (code, body) = output::error_object(&e);
            eprintln!("handoff: {e:#}");
            if json {
                print_error(&body);
            }
            ExitCode::from(code)
        }
    }
}

/// Print `{"error": body}` on stdout.
fn print_error(body: &serde_json::Value) {
    let v = serde_json::json!({ "error": body });
    match serde_json::to_string_pretty(&v) {
        Ok(s) => out(&s),
        Err(e) => eprintln!("handoff: cannot print JSON: {e}"),
    }
}

/// Run one parsed command; returns the exit code on success paths.
pub async fn run(cli: Cli) -> anyhow::Result<u8> {
    // A fault switch is never on quietly, whatever the command; nor is a
    // timing setting out of its bounds.
    crate::fault::warn_if_set();
    crate::config::tuning::check().map_err(|why| fail(exit::INVALID, why))?;
    let env = |k: &str| {
        std::env::var(k)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let ctx = Ctx {
        db: cli.db,
        config: cli.config,
        loaded: std::sync::OnceLock::new(),
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
        Command::Hook { cmd } => hook::run(cmd, &ctx).await,
        Command::Grants { cmd, all } => hook::grants(&ctx, cmd, all).await,
        Command::Serve { listen } => serve(&ctx, listen).await,
        Command::Init => status::init(&ctx).await,
        Command::Migrate => status::migrate(&ctx).await,
        Command::Status => status::run(&ctx).await,
        Command::Doctor => hook::doctor::run(&ctx),
        Command::InboxLink { url, ttl, name } => inbox::run(url, &ttl, &name, &ctx).await,
        Command::Pair { code, role } => {
            let store = ctx.host_store("pair").await?;
            match store.pairing_use(&code, &role).await? {
                Some((user, chat, name)) => {
                    let v = serde_json::json!({"pairing": {"user_id": user, "chat_id": chat, "username": name, "role": role}});
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

/// The one-line error for a named database file that does not exist.
pub(crate) fn missing_database(path: &std::path::Path, source: &DbSource) -> String {
    format!(
        "the database {} (named by {source}) does not exist: create it with `handoff init`, or fix the path",
        path.display()
    )
}

/// Write one line of output. A reader that went away (`handoff … | head`)
/// ends the command quietly instead of panicking like `println!` would.
pub(crate) fn out(line: &str) {
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

/// The text of a JSON argument, spelled the same for every flag that takes
/// one: inline text, `@FILE`, or `-` (also `@-`) for stdin.
pub(crate) fn arg_text(what: &str, arg: &str) -> anyhow::Result<String> {
    let source = if arg == "-" {
        Some("-")
    } else {
        arg.strip_prefix('@')
    };
    match source {
        Some("-") => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .map_err(|e| fail(exit::INVALID, format!("cannot read {what} from stdin: {e}")))?;
            Ok(s)
        }
        Some(path) => std::fs::read_to_string(path).map_err(|e| {
            fail(
                exit::INVALID,
                format!("cannot read {what} from {path}: {e}"),
            )
        }),
        None => Ok(arg.to_string()),
    }
}
