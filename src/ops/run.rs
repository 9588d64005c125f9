//! Running an approved action's command, for every door that runs one
//! (`propose --exec`, `recover`, and the chat's Run button on the daemon):
//! claim the action, run the command outside any transaction with the real
//! arguments (`HANDOFF_ARGS` and stdin), renew the lease while it runs, and
//! record the outcome with the output tails (scrubbed of secrets by the
//! store).
//!
//! If the process dies mid-run, the lease stops being renewed and recovery
//! later marks the action `unknown`; nothing here retries. Claim, renewals
//! and completion go through [`Ops`], so against a daemon the command runs
//! here and its outcome is recorded there. This module prints nothing but
//! the command's own output, where the caller asks.

use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{Error, Ops, Result};
use crate::store::actions::{Action, ClaimOutcome, CompleteOutcome, Status};

/// Where the command's output goes besides its recorded tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// stdout to stdout, stderr to stderr (a terminal run).
    Terminal,
    /// Both to stderr (stdout carries JSON).
    Stderr,
    /// Nowhere: the daemon keeps only the tails.
    Quiet,
}

/// Bytes of stdout and stderr kept in the recorded result.
const TAIL_BYTES: usize = 4096;

/// What one run did.
#[derive(Debug, Serialize)]
pub struct ExecReport {
    /// The action.
    pub action_id: String,
    /// Whether this process won the claim and ran the command.
    pub claimed: bool,
    /// The command's exit code (None: not run, or killed by a signal).
    pub exit_code: Option<i32>,
    /// The status afterwards.
    pub status: Status,
    /// Set when the command could not be started (recorded as failed).
    #[serde(skip)]
    pub spawn_error: Option<String>,
    /// The command finished but the claim was lost meanwhile (recovery
    /// marked it unknown): its result was not recorded.
    #[serde(skip)]
    pub lost_claim: bool,
}

/// Copy `src` to `dst` (if any) as it arrives and keep the last [`TAIL_BYTES`].
async fn tee(mut src: impl AsyncRead + Unpin, mut dst: Option<impl AsyncWrite + Unpin>) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match src.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(d) = dst.as_mut() {
                    // The terminal may be gone; the tail is still worth keeping.
                    let _ = d.write_all(&buf[..n]).await;
                    let _ = d.flush().await;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > TAIL_BYTES {
                    tail.drain(..tail.len() - TAIL_BYTES);
                }
            }
        }
    }
    tail
}

/// Claim `action` as a new owner named after `who` and run `argv`;
/// `claimed: false` if another executor won.
pub async fn run_claimed(
    ops: &Ops,
    action: &Action,
    argv: &[String],
    lease: Duration,
    who: &str,
    echo: Echo,
) -> Result<ExecReport> {
    let (prog, rest) = argv
        .split_first()
        .ok_or_else(|| Error::invalid("--exec needs a command"))?;
    let lease_ms = lease.as_millis() as i64;
    let owner = format!("{who}:{}:{}", std::process::id(), crate::store::new_id());
    let action = match ops.claim(&action.id, &owner, lease_ms).await? {
        ClaimOutcome::Claimed { action } => action,
        ClaimOutcome::NotClaimable { action } => {
            return Ok(ExecReport {
                action_id: action.id,
                claimed: false,
                exit_code: None,
                status: action.status,
                spawn_error: None,
                lost_claim: false,
            });
        }
    };
    let args_json = action.effective_args.to_string();
    let spawned = tokio::process::Command::new(prog)
        .args(rest)
        .env("HANDOFF_ARGS", &args_json)
        .env("HANDOFF_ACTION_ID", &action.id)
        .env("HANDOFF_ACTION_KIND", &action.kind)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(err) => {
            let msg = format!("cannot run {prog}: {err}");
            let done = ops
                .complete(
                    &action.id,
                    &owner,
                    false,
                    json!({"spawn_error": msg}),
                    Some(&msg),
                )
                .await?;
            return Ok(ExecReport {
                action_id: action.id,
                claimed: true,
                exit_code: None,
                status: done_status(&done),
                spawn_error: Some(msg),
                lost_claim: matches!(done, CompleteOutcome::NotOwner { .. }),
            });
        }
    };
    let stdin = child.stdin.take();
    let feed = tokio::spawn(async move {
        if let Some(mut pipe) = stdin {
            // A command that ignores stdin closes the pipe early: not an error.
            let _ = pipe.write_all(args_json.as_bytes()).await;
        }
    });
    let out = child.stdout.take().expect("stdout is piped");
    let err = child.stderr.take().expect("stderr is piped");
    let (out_task, err_task) = match echo {
        Echo::Terminal => (
            tokio::spawn(tee(out, Some(tokio::io::stdout()))),
            tokio::spawn(tee(err, Some(tokio::io::stderr()))),
        ),
        Echo::Stderr => (
            tokio::spawn(tee(out, Some(tokio::io::stderr()))),
            tokio::spawn(tee(err, Some(tokio::io::stderr()))),
        ),
        Echo::Quiet => (
            tokio::spawn(tee(out, None::<tokio::io::Stderr>)),
            tokio::spawn(tee(err, None::<tokio::io::Stderr>)),
        ),
    };
    // Renew the lease at a third of its length while the command runs, so a
    // live executor is never mistaken for a dead one.
    let renew = {
        let ops = ops.clone();
        let (id, owner) = (action.id.clone(), owner.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(lease / 3);
            tick.tick().await;
            loop {
                tick.tick().await;
                match ops.extend_lease(&id, &owner, lease_ms).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(action_id = %id, "lost the execution lease");
                        break;
                    }
                    Err(err) => tracing::warn!(action_id = %id, error = %err, "cannot renew lease"),
                }
            }
        })
    };
    let status = child.wait().await;
    renew.abort();
    let _ = feed.await;
    let stdout_tail = out_task.await.unwrap_or_default();
    let stderr_tail = err_task.await.unwrap_or_default();
    let (success, code, error) = match &status {
        Ok(s) if s.success() => (true, Some(0), None),
        Ok(s) => (false, exit_code(s), Some(describe_exit(s))),
        Err(err) => (
            false,
            None,
            Some(format!("waiting for {prog} failed: {err}")),
        ),
    };
    let result = json!({
        "exit_code": code,
        "stdout_tail": String::from_utf8_lossy(&stdout_tail),
        "stderr_tail": String::from_utf8_lossy(&stderr_tail),
    });
    let done = ops
        .complete(&action.id, &owner, success, result, error.as_deref())
        .await?;
    Ok(ExecReport {
        action_id: action.id,
        claimed: true,
        exit_code: code,
        status: done_status(&done),
        spawn_error: None,
        lost_claim: matches!(done, CompleteOutcome::NotOwner { .. }),
    })
}

fn done_status(done: &CompleteOutcome) -> Status {
    match done {
        CompleteOutcome::Completed { action } | CompleteOutcome::NotOwner { action } => {
            action.status
        }
    }
}

/// The shell convention for a command's status: its code, or 128 + signal.
fn exit_code(s: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = s.signal() {
            return Some(128 + sig);
        }
    }
    s.code()
}

fn describe_exit(s: &std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = s.signal() {
            return format!("killed by signal {sig}");
        }
    }
    match s.code() {
        Some(c) => format!("exited with code {c}"),
        None => "exited abnormally".into(),
    }
}
