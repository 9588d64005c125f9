//! The `handoff` binary: logging set-up, then the library's CLI.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
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
        .init();
    handoff::cli::main().await
}
