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
//! here and its outcome is recorded there. This module prints nothing: the
//! command's output goes to the writers the caller passes in [`Echo`] as it
//! arrives, and what the run came to is the returned [`ExecReport`], which
//! the caller words.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Child;
use tokio::task::JoinHandle;

use super::{Error, Ops, Result};
use crate::store::actions::{Action, ClaimOutcome, CompleteOutcome, Status};

/// A writer the command's output is copied to as it arrives.
pub type Sink = Box<dyn AsyncWrite + Send + Unpin>;

/// Where the command's output goes besides its recorded tail.
pub enum Echo {
    /// Nowhere: the daemon keeps only the tails.
    Quiet,
    /// Copied as it arrives, each stream to its writer (the CLI passes its
    /// terminal: stdout and stderr, or stderr twice when stdout carries JSON).
    To {
        /// Receives the command's stdout.
        stdout: Sink,
        /// Receives the command's stderr.
        stderr: Sink,
    },
}

/// Bytes of stdout and stderr kept in the recorded result.
const TAIL_BYTES: usize = 4096;

/// What one run did.
#[derive(Debug, Serialize)]
pub struct ExecReport {
    /// The action run (or found claimed by another executor).
    pub action_id: String,
    /// Whether this process won the claim and ran the command.
    pub claimed: bool,
    /// The command's exit code (None: not run, or killed by a signal).
    pub exit_code: Option<i32>,
    /// The action's status once the run was recorded (or as found, when
    /// not claimed).
    pub status: Status,
    /// Set when the command could not be started (recorded as failed).
    #[serde(skip)]
    pub spawn_error: Option<String>,
    /// The command finished but the claim was lost meanwhile (recovery
    /// marked it unknown): its result was not recorded.
    #[serde(skip)]
    pub lost_claim: bool,
}

impl ExecReport {
    /// Another executor holds the claim: nothing ran here.
    fn not_claimed(action: Action) -> Self {
        ExecReport {
            action_id: action.id,
            claimed: false,
            exit_code: None,
            status: action.status,
            spawn_error: None,
            lost_claim: false,
        }
    }

    /// This process ran (or tried to run) the command and recorded `done`.
    fn recorded(
        action_id: &str,
        exit_code: Option<i32>,
        done: &CompleteOutcome,
        spawn_error: Option<String>,
    ) -> Self {
        let (CompleteOutcome::Completed { action } | CompleteOutcome::NotOwner { action }) = done;
        ExecReport {
            action_id: action_id.to_string(),
            claimed: true,
            exit_code,
            status: action.status,
            spawn_error,
            lost_claim: matches!(done, CompleteOutcome::NotOwner { .. }),
        }
    }
}

/// The claim this process holds while it runs an action.
struct Claim<'a> {
    ops: &'a Ops,
    action_id: &'a str,
    owner: &'a str,
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
    let owner = format!("{who}:{}:{}", std::process::id(), crate::store::new_id());
    let action = match ops.claim(&action.id, &owner, lease_ms(lease)).await? {
        ClaimOutcome::Claimed { action } => action,
        ClaimOutcome::NotClaimable { action } => return Ok(ExecReport::not_claimed(action)),
    };
    let claim = Claim {
        ops,
        action_id: &action.id,
        owner: &owner,
    };
    let args_json = action.effective_args.to_string();
    let mut child = match spawn(prog, rest, &action, &args_json) {
        Ok(c) => c,
        Err(err) => {
            return claim
                .spawn_failed(format!("cannot run {prog}: {err}"))
                .await;
        }
    };
    let io = Io::start(&mut child, args_json, echo);
    let renew = claim.keep_lease(lease);
    let status = child.wait().await;
    renew.abort();
    let (stdout_tail, stderr_tail) = io.finish().await;
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
    let done = claim.complete(success, result, error.as_deref()).await?;
    Ok(ExecReport::recorded(&action.id, code, &done, None))
}

fn lease_ms(lease: Duration) -> i64 {
    lease.as_millis() as i64
}

/// Start `prog` with the action's real arguments (`args_json`) in its
/// environment and every stream piped.
fn spawn(prog: &str, rest: &[String], action: &Action, args_json: &str) -> std::io::Result<Child> {
    tokio::process::Command::new(prog)
        .args(rest)
        .env("HANDOFF_ARGS", args_json)
        .env("HANDOFF_ACTION_ID", &action.id)
        .env("HANDOFF_ACTION_KIND", &action.kind)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

impl Claim<'_> {
    /// Record the outcome of the run under this claim.
    async fn complete(
        &self,
        success: bool,
        result: serde_json::Value,
        error: Option<&str>,
    ) -> Result<CompleteOutcome> {
        self.ops
            .complete(self.action_id, self.owner, success, &result, error)
            .await
    }

    /// The command could not be started: record the action failed.
    async fn spawn_failed(&self, msg: String) -> Result<ExecReport> {
        let done = self
            .complete(false, json!({"spawn_error": msg}), Some(&msg))
            .await?;
        Ok(ExecReport::recorded(self.action_id, None, &done, Some(msg)))
    }

    /// Renew the lease at a third of its length while the command runs, so
    /// a live executor is never mistaken for a dead one. Abort the task
    /// when the command ends.
    fn keep_lease(&self, lease: Duration) -> JoinHandle<()> {
        let ops = self.ops.clone();
        let (id, owner) = (self.action_id.to_string(), self.owner.to_string());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(lease / 3);
            tick.tick().await;
            loop {
                tick.tick().await;
                match ops.extend_lease(&id, &owner, lease_ms(lease)).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(action_id = %id, "lost the execution lease");
                        break;
                    }
                    Err(err) => tracing::warn!(action_id = %id, error = %err, "cannot renew lease"),
                }
            }
        })
    }
}

/// The tasks feeding a running command its stdin and copying its output.
struct Io {
    feed: JoinHandle<()>,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
}

impl Io {
    /// Write `args_json` to the child's stdin and tee its stdout and stderr
    /// to `echo`, keeping their tails.
    fn start(child: &mut Child, args_json: String, echo: Echo) -> Io {
        let stdin = child.stdin.take();
        let feed = tokio::spawn(async move {
            if let Some(mut pipe) = stdin {
                // A command that ignores stdin closes the pipe early: not an error.
                let _ = pipe.write_all(args_json.as_bytes()).await;
            }
        });
        let out = child.stdout.take().expect("stdout is piped");
        let err = child.stderr.take().expect("stderr is piped");
        let (to_out, to_err) = match echo {
            Echo::Quiet => (None, None),
            Echo::To { stdout, stderr } => (Some(stdout), Some(stderr)),
        };
        Io {
            feed,
            stdout: tokio::spawn(tee(out, to_out)),
            stderr: tokio::spawn(tee(err, to_err)),
        }
    }

    /// Once the command has exited: the tails of its stdout and stderr.
    async fn finish(self) -> (Vec<u8>, Vec<u8>) {
        let _ = self.feed.await;
        (
            self.stdout.await.unwrap_or_default(),
            self.stderr.await.unwrap_or_default(),
        )
    }
}

/// Copy `src` to `dst` (if any) as it arrives and keep the last [`TAIL_BYTES`].
async fn tee(mut src: impl AsyncRead + Unpin, mut dst: Option<Sink>) -> Vec<u8> {
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

/// The shell convention for a command's status: its code, or 128 + signal.
fn exit_code(s: &ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = s.signal() {
            return Some(128 + sig);
        }
    }
    s.code()
}

fn describe_exit(s: &ExitStatus) -> String {
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
