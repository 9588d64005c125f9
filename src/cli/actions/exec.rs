//! The executor runner behind `propose --exec` and `recover`, as the CLI
//! sees it: the run itself is [`crate::ops::run`]; this points the
//! command's output at the terminal, turns a command that cannot start into
//! a one-line failure, follows a run another executor won, and says which
//! exit code each ending means. It prints nothing of its own: the commands
//! word what it returns with [`super::render`].

use std::time::Duration;

use crate::cli::{exit, fail};
use crate::ops::run::{Echo, ExecReport};
use crate::ops::{Ops, Until};
use crate::store::actions::{Action, Settled, Status};

/// Claim `action` and run `argv`, its output streamed to the terminal as
/// it arrives (all of it to stderr with `--json`, whose stdout is the one
/// JSON document); `claimed: false` if another executor won.
pub(super) async fn run_claimed(
    ops: &Ops,
    json: bool,
    action: &Action,
    argv: &[String],
    lease: Duration,
) -> anyhow::Result<ExecReport> {
    let echo = Echo::To {
        stdout: if json {
            Box::new(tokio::io::stderr())
        } else {
            Box::new(tokio::io::stdout())
        },
        stderr: Box::new(tokio::io::stderr()),
    };
    let report = crate::ops::run::run_claimed(ops, action, argv, lease, "exec", echo).await?;
    if let Some(msg) = &report.spawn_error {
        return Err(fail(exit::INTERNAL, msg.clone()));
    }
    Ok(report)
}

/// How often a follower looks again whether the run it follows came back
/// for a re-run (the bound of each wait; it returns sooner on a change).
const RECHECK: Duration = Duration::from_secs(2);

/// Wait for the run another executor holds to settle, or to come back to
/// `approved`: a verifier sent it back for a re-run after its executor
/// died, and this process, which holds the command, may claim it. Without
/// the second, a follower waited forever on a re-run nobody would make.
/// Returns the action as it then stands.
pub(super) async fn follow(ops: &Ops, action: &Action) -> anyhow::Result<Action> {
    loop {
        match ops.wait_action(&action.id, RECHECK, Until::Settled).await? {
            Settled::Done { action } => return Ok(action),
            Settled::StillRunning { action } if action.status == Status::Approved => {
                return Ok(action);
            }
            Settled::StillRunning { .. } => {}
        }
    }
}

/// The exit code of a run this process made: the command's own, else 0 if
/// it was recorded executed, else 1.
pub(super) fn ran_exit(report: &ExecReport) -> u8 {
    match report.exit_code {
        Some(c) => u8::try_from(c).unwrap_or(exit::INTERNAL),
        None if report.status == Status::Executed => exit::OK,
        None => exit::INTERNAL,
    }
}

/// The exit code of a followed run: 0 if it executed, else 1.
pub(super) fn followed_exit(a: &Action) -> u8 {
    if a.status == Status::Executed {
        exit::OK
    } else {
        exit::INTERNAL
    }
}
