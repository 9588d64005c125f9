//! The `handoff` binary: logging set-up, then the library's CLI.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to stderr so stdout stays clean for command output (and, later,
    // for MCP protocol frames).
    // The daemon tells what it is doing (info); one-shot commands only warn.
    let serving = std::env::args().any(|a| a == "serve");
    let default = if serving { "info" } else { "warn" };
    // A HANDOFF_LOG that is not a filter is refused, not ignored: whoever set
    // it expects to see the logs it names.
    let filter = match std::env::var("HANDOFF_LOG") {
        Ok(v) if !v.trim().is_empty() => match log_filter(&v) {
            Ok(f) => f,
            Err(e) => {
                eprintln!(
                    "handoff: HANDOFF_LOG={v:?} is not a log filter ({e}); use a level \
                     (`info`, `debug`) or target=level pairs (`handoff=debug,warn`), or unset it"
                );
                return ExitCode::from(2);
            }
        },
        _ => tracing_subscriber::EnvFilter::new(default),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour_logs())
        .init();
    handoff::cli::main().await
}

/// `HANDOFF_LOG` as a filter. A bare word must be a level or a crate that
/// logs here: tracing reads any other (`loud`) as a target name, which
/// would quietly log nothing.
fn log_filter(v: &str) -> Result<tracing_subscriber::EnvFilter, String> {
    const WORDS: [&str; 11] = [
        "trace", "debug", "info", "warn", "error", "off", "handoff", "sqlx", "teloxide", "hyper",
        "reqwest",
    ];
    for d in v.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let bare = !d.contains(['=', '[', ':']);
        if bare && !WORDS.contains(&d.to_ascii_lowercase().as_str()) {
            return Err(format!("`{d}` is neither a level nor a target=level pair"));
        }
    }
    tracing_subscriber::EnvFilter::try_new(v).map_err(|e| e.to_string())
}

/// Colour the logs only for a person at a terminal: not into a file, a pipe
/// or journald, and not when `NO_COLOR` is set (<https://no-color.org>).
fn colour_logs() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
