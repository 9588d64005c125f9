//! The `handoff` binary: logging set-up, then the library's CLI.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Logs go to stderr so stdout stays clean for command output (and, later,
    // for MCP protocol frames).
    // The daemon tells what it is doing (info); one-shot commands only warn.
    let serving = std::env::args().any(|a| a == "serve");
    let default = if serving { "info" } else { "warn" };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HANDOFF_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour_logs())
        .init();
    // Why two kinds of runtime: the daemon and the MCP server serve many
    // callers at once and want every core; a one-shot command (each hook
    // call is one) does one thing at a time, and on one thread it starts
    // no worker threads and hands no wake-up from one to another (on a
    // loaded machine each hand-off waits for a core). An argument that
    // merely equals "serve" or "mcp" only gets the multi-threaded runtime
    // every command had before.
    let long_lived = serving || std::env::args().any(|a| a == "mcp");
    let mut runtime = if long_lived {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    match runtime.enable_all().build() {
        Ok(rt) => rt.block_on(handoff::cli::main()),
        Err(e) => {
            eprintln!("handoff: cannot start the async runtime: {e}");
            ExitCode::from(handoff::cli::exit::INTERNAL)
        }
    }
}

/// Colour the logs only for a person at a terminal: not into a file, a pipe
/// or journald, and not when `NO_COLOR` is set (<https://no-color.org>).
fn colour_logs() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
