//! The executor runner behind `propose --exec` and `recover`: claim the
//! approved action, run the command outside any transaction with the real
//! arguments, renew the lease while it runs, and record the outcome.
//!
//! If this process dies mid-run, the lease stops being renewed and
//! `recover` later marks the action `unknown`; nothing here retries.
//! Claim, renewals and completion go through [`Ops`], so against a daemon
//! the command runs here and its outcome is recorded there.

use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{FOREVER, map_err, shown};
use crate::cli::{Ctx, exit, fail};
use crate::ops::{Ops, Until};
use crate::store::actions::{Action, ClaimOutcome, CompleteOutcome, Status};

/// Bytes of stdout and stderr kept in the recorded result.
const TAIL_BYTES: usize = 4096;

/// What one run did.
#[derive(Debug, Serialize)]
pub(crate) struct ExecReport {
    /// The action.
    pub action_id: String,
    /// Whether this process won the claim and ran the command.
    pub claimed: bool,
    /// The command's exit code (None: not run, or killed by a signal).
    pub exit_code: Option<i32>,
    /// The status afterwards.
    pub status: Status,
}

/// Copy `src` to `dst` as it arrives and keep the last [`TAIL_BYTES`].
async fn tee(mut src: impl AsyncRead + Unpin, mut dst: impl AsyncWrite + Unpin) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match src.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                // The terminal may be gone; the tail is still worth keeping.
                let _ = dst.write_all(&buf[..n]).await;
                let _ = dst.flush().await;
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > TAIL_BYTES {
                    tail.drain(..tail.len() - TAIL_BYTES);
                }
            }
        }
    }
    tail
}

/// Claim `action` and run `argv`; `claimed: false` if another executor won.
pub(crate) async fn run_claimed(
    ops: &Ops,
    ctx: &Ctx,
    action: &Action,
    argv: &[String],
    lease: Duration,
) -> anyhow::Result<ExecReport> {
    let e = |err| map_err(ctx, err);
    let lease_ms = lease.as_millis() as i64;
    let owner = format!("exec:{}:{}", std::process::id(), crate::store::new_id());
    let action = match ops.claim(&action.id, &owner, lease_ms).await.map_err(e)? {
        ClaimOutcome::Claimed { action } => action,
        ClaimOutcome::NotClaimable { action } => {
            return Ok(ExecReport {
                action_id: action.id,
                claimed: false,
                exit_code: None,
                status: action.status,
            });
        }
    };
    let (prog, rest) = argv
        .split_first()
        .ok_or_else(|| fail(exit::USAGE, "--exec needs a command"))?;
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
            ops.complete(
                &action.id,
                &owner,
                false,
                json!({"spawn_error": msg}),
                Some(&msg),
            )
            .await
            .map_err(e)?;
            return Err(fail(exit::ERROR, msg));
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
    let out_task = if ctx.json {
        tokio::spawn(tee(out, tokio::io::stderr()))
    } else {
        tokio::spawn(tee(out, tokio::io::stdout()))
    };
    let err_task = tokio::spawn(tee(err, tokio::io::stderr()));
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
        .await
        .map_err(e)?;
    let status = match done {
        CompleteOutcome::Completed { action } => action.status,
        CompleteOutcome::NotOwner { action } => {
            eprintln!(
                "handoff: {} finished, but its claim was lost meanwhile (now {}); the result was not recorded",
                action.short_id(),
                action.status
            );
            action.status
        }
    };
    Ok(ExecReport {
        action_id: action.id,
        claimed: true,
        exit_code: code,
        status,
    })
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

/// After approval: run the command if this process wins the claim,
/// otherwise follow whoever did and report their outcome. Returns the exit
/// code: the command's own, or 0/1 for a followed run.
pub(crate) async fn run_or_follow(
    ops: &Ops,
    ctx: &Ctx,
    action: &Action,
    argv: &[String],
    lease: Duration,
) -> anyhow::Result<u8> {
    let e = |err| map_err(ctx, err);
    if action.status == Status::Approved {
        let report = run_claimed(ops, ctx, action, argv, lease).await?;
        if report.claimed {
            let a = ops.get_action(&action.id).await.map_err(e)?;
            ctx.print(&shown(&report, &a), || super::render::action(&a, ops.now()));
            return Ok(match report.exit_code {
                Some(c) => u8::try_from(c).unwrap_or(exit::ERROR),
                None if report.status == Status::Executed => exit::OK,
                None => exit::ERROR,
            });
        }
    }
    if !ctx.json {
        eprintln!(
            "handoff: {} is being executed elsewhere; waiting for its result",
            crate::store::short_id(&action.id)
        );
    }
    let settled = ops
        .wait_action(&action.id, FOREVER, Until::Settled)
        .await
        .map_err(e)?;
    let a = settled.action();
    ctx.print(&a.redacted(), || super::render::action(a, ops.now()));
    Ok(if a.status == Status::Executed {
        exit::OK
    } else {
        exit::ERROR
    })
}
