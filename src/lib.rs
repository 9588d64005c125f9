//! handoff: agents hand questions, blocked steps and risky actions to humans,
//! and are woken when the humans answer.
//!
//! # Layout
//!
//! - [`clock`]: the injectable wall clock; RFC 3339 and duration parsing.
//! - [`config`]: the TOML configuration (chats, routes, rules, notify, wake sources),
//!   where every command finds it, and which database a command uses.
//! - [`store`]: the store, on SQLite or PostgreSQL — questions, boards, actions,
//!   sessions, ledger, events, chat records, deliveries, grants, tokens. All SQL
//!   lives here, written once for both engines.
//! - [`daemon`]: `handoff serve`; wiring only (nothing but the CLI imports it).
//! - [`shared`]: what the daemon's handlers and workers share, and `wrote()`.
//! - [`follow`]: following the event log by `seq`; in-process waiters.
//! - [`chat`]: the Telegram bridge (teloxide lives only here), a file per item kind.
//! - [`notify`]: wake-ups: exec / webhook / tmux targets and durable deliveries.
//! - [`api`]: the HTTP API (`/v1`, auth tokens, long polls, SSE, metrics, inbound wakes),
//!   and the web Inbox page with its login links and session cookies (`api::inbox`).
//! - [`ops`]: the agent-side operations, one interface over the local store,
//!   the daemon's socket or HTTP.
//! - [`programs`]: the operator's programs (rule commands, verifiers), run outside the
//!   store; the store records what they decide.
//! - [`mcp`]: `handoff mcp`, the stdio MCP server over [`ops`].
//! - [`cli`]: the `handoff` command line (argument parsing, output, exit codes).
//! - [`sign`]: webhook signatures (Standard Webhooks, GitHub), pure functions; a leaf
//!   used by `config` (secret checks), `notify` (outbound) and `api` (inbound wakes).
//! - [`fault`]: test-only fault switches for the crash harness (off in release builds).
//!
//! The layering is checked by `tests/layering.rs`: the store imports nothing
//! above it; the daemon's parts never import `daemon` or each other's insides.

pub mod api;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod config;
pub mod daemon;
pub mod fault;
pub mod follow;
pub mod mcp;
pub mod notify;
pub mod ops;
pub mod programs;
pub mod shared;
pub mod sign;
pub mod store;

/// An error and its causes on one line (`a: b: c`), each cause said once
/// (many errors already repeat their source in their own text): for logs
/// and messages, never a Debug dump.
pub(crate) fn one_line(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}
