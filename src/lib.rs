//! handoff: agents hand questions, blocked steps and risky actions to humans,
//! and are woken when the humans answer.
//!
//! # Layout
//!
//! - [`clock`]: the injectable wall clock; RFC 3339 and duration parsing.
//! - [`store`]: the SQLite store — questions, boards, actions, events. All SQL lives here.
//! - [`cli`]: the `handoff` command line (argument parsing, output, exit codes).
//! - [`inbox`]: the web Inbox page and its login links and session cookies.

pub mod api;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod config;
pub mod daemon;
pub mod inbox;
pub mod store;
