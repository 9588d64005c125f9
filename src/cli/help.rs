//! What `--help` ends with: the exit codes and the environment variables
//! every command reads (the man pages take the same table).

const EXIT_CODES: &str = "\
Exit codes (the same for every command):
  0  success
  1  internal error, or the database or daemon cannot be reached
  2  bad input: a usage error or a bad value (malformed JSON, option
     count, duration, a named database that does not exist, …)
  3  refused: nothing changed (already answered or decided, stale
     revision, not open, expired, conflict, token not allowed)
  4  not found: no such id (question, action, board, row, session, …)
  5  timed out waiting (--wait, wait)
  propose --exec exits with the command's own status once it ran.

With --json every command prints one JSON object on stdout; on any
failure it is {\"error\": {\"reason\", \"message\", \"detail\"}}.";

/// The environment variables every command reads, as (name, meaning):
/// `--help` lists them after the exit codes, and every man page has them
/// as its ENVIRONMENT section.
pub(crate) const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "HANDOFF_CONFIG",
        "config file (else config/handoff.toml, else ~/.config/handoff/handoff.toml); --config wins",
    ),
    (
        "HANDOFF_DB",
        "database file; --db wins, and it wins over the config's [store] path (default ~/.local/share/handoff/handoff.db). A named file must exist: `handoff init` creates it",
    ),
    (
        "HANDOFF_URL",
        "a daemon's address (http://host:8642): every command except serve, init, migrate, pair, token, recover, purge, backup, export and inbox-link runs against it",
    ),
    (
        "HANDOFF_TOKEN",
        "the API token for HANDOFF_URL (`handoff token create`)",
    ),
    (
        "HANDOFF_USER",
        "your name for human commands: reply, dismiss, approve, reject, resolve-unknown, … (--as wins; else $USER, else cli)",
    ),
    (
        "HANDOFF_PROJECT, HANDOFF_AGENT, HANDOFF_SESSION",
        "who an agent is (ask, propose, pending, wait, mcp)",
    ),
    (
        "HANDOFF_RULES",
        "a file of [[rule]]s that decide proposed actions (propose, mcp; --rules wins, else the config's [[rule]]s)",
    ),
    (
        "HANDOFF_TIMEOUT",
        "how long a call to HANDOFF_URL waits for an answer (default 10s)",
    ),
    (
        "HANDOFF_SOCKET",
        "off: never send calls to the local daemon's socket (<db>.sock); by default they go there when it answers",
    ),
    (
        "HANDOFF_HOST",
        "the host a session registered from here records (for `handoff sessions` and the Inbox's Sessions page; default: this machine's hostname)",
    ),
    (
        "HANDOFF_TELEGRAM_TOKEN",
        "the Telegram bot token (serve); wins over [telegram] token",
    ),
    (
        "HANDOFF_TELEGRAM_WEBHOOK_SECRET",
        "the secret Telegram sends with webhook updates (serve); wins over [telegram] webhook_secret",
    ),
    (
        "HANDOFF_LOG",
        "what is logged to stderr, a tracing filter (`info`, `handoff=debug,warn`; default info for serve, warn otherwise); a value that is not a filter is refused (exit 2)",
    ),
];

/// The exit codes, then the environment, as `--help` ends.
pub(super) fn after_help() -> String {
    let mut s = format!("{EXIT_CODES}\n\nEnvironment:\n");
    for (name, meaning) in ENVIRONMENT {
        s.push_str(&format!("  {name}\n      {meaning}\n"));
    }
    s.trim_end().to_string()
}
