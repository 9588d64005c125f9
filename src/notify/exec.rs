//! The `exec` wake target: run a program (argv, no shell) with the wake-up
//! as JSON on stdin and `HANDOFF_*` in the environment. Exit 0 means
//! delivered; a non-zero exit or a timeout means retry. The program runs in
//! its own process group so a timeout kills it *and* everything it started.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::{Outcome, Wake};

/// The timeout when the target names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of the program's stderr is kept for the delivery's last error.
const STDERR_KEEP: usize = 2000;

/// Run `argv` for `wake`, killing its process group after `timeout`.
pub(crate) async fn run(argv: &[String], timeout: Duration, wake: &Wake<'_>) -> Outcome {
    let Some((program, args)) = argv.split_first() else {
        return Outcome::Dead {
            error: "the exec target has no program".into(),
        };
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("HANDOFF_EVENT", &wake.event.kind)
        .env("HANDOFF_EVENT_ID", &wake.event_id)
        .env("HANDOFF_SESSION", &wake.event.session)
        .env("HANDOFF_ITEM", wake.item())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout can kill the whole tree.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        // A missing program will not appear by retrying soon, but it may be
        // installed later: retry on the schedule and die with this message.
        Err(e) => {
            return Outcome::Retry {
                error: format!("cannot start `{program}`: {e}"),
                after: None,
            };
        }
    };
    let pgid = child.id();
    let body = wake.body_bytes();
    if let Some(mut stdin) = child.stdin.take() {
        // Written in its own task: a program that never reads stdin must not
        // block us past the timeout; a program that exits early is fine (EPIPE).
        tokio::spawn(async move {
            let _ = stdin.write_all(&body).await;
            let _ = stdin.shutdown().await;
        });
    }
    let stderr = child.stderr.take().map(|mut e| {
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let _ = (&mut e)
                .take(STDERR_KEEP as u64 * 2)
                .read_to_end(&mut buf)
                .await;
            buf
        })
    });
    let status = tokio::time::timeout(timeout, child.wait()).await;
    let outcome = match status {
        Ok(Ok(s)) if s.success() => return Outcome::Delivered,
        Ok(Ok(s)) => format!("`{program}` exited with {s}"),
        Ok(Err(e)) => format!("cannot wait for `{program}`: {e}"),
        Err(_) => {
            kill_group(pgid);
            let _ = child.wait().await;
            format!("`{program}` timed out after {timeout:?}; its process group was killed")
        }
    };
    let mut error = outcome;
    if let Some(h) = stderr {
        // Grandchildren may hold stderr open: take what is there, briefly.
        if let Ok(Ok(buf)) = tokio::time::timeout(Duration::from_millis(200), h).await {
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim();
            if !text.is_empty() {
                let tail: String = text.chars().take(STDERR_KEEP).collect();
                error.push_str(": ");
                error.push_str(&tail);
            }
        }
    }
    Outcome::Retry { error, after: None }
}

/// SIGKILL the process group `pgid` (the child's pid, as it leads its group).
fn kill_group(pgid: Option<u32>) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    if let Some(id) = pgid.and_then(|p| i32::try_from(p).ok())
        && let Err(e) = killpg(Pid::from_raw(id), Signal::SIGKILL)
    {
        tracing::debug!(error = %e, pgid = id, "cannot kill the exec target's group");
    }
}
