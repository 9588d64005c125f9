//! handoff: agents hand questions, blocked steps and risky actions to humans,
//! and are woken when the humans answer.
//!
//! # Layout
//!
//! - [`clock`]: the injectable wall clock; RFC 3339 and duration parsing.
//! - [`store`]: the SQLite store — questions, boards, actions, events. All SQL lives here.
//! - [`cli`]: the `handoff` command line (argument parsing, output, exit codes).
//! - [`ops`]: the agent-side operations, one interface over the local store (and later HTTP).
//! - [`mcp`]: `handoff mcp`, the stdio MCP server over [`ops`].

pub mod api;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod config;
pub mod daemon;
pub mod mcp;
pub mod ops;
pub mod store;
