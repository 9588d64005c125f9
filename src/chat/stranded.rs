//! Approved `--exec` actions nobody has run: their proposer usually claims
//! them within milliseconds, but one that stopped leaves them waiting
//! forever. An approver's tap either runs the command on the daemon's host
//! (what `handoff recover` does) or records that it was done by hand or
//! will not run. Every path claims first (the claim CAS), so at most one
//! executor ever runs an action, whoever taps or races.

use std::time::Duration;

use serde_json::json;

use super::Bridge;
use crate::ops::run::{Echo, run_claimed};
use crate::store::actions::{Action, ClaimOutcome, CompleteOutcome, Status};

/// The lease a tap's run holds, renewed at a third of it while the
/// command runs (as the verifier's hold is). Short, not `handoff
/// recover`'s minute: the daemon is the executor here, and when it dies
/// mid-run the next daemon's recovery brings the action to a person as
/// `unknown` within seconds instead of it showing "executing" for a
/// minute (and a `propose` following the run waiting that minute out).
/// A daemon stalled past it loses the claim; its run's outcome is then
/// not recorded and the person decides, never a second run.
const LEASE: Duration = Duration::from_secs(6);

fn not_approved(a: &Action) -> Option<String> {
    if a.status != Status::Approved {
        return Some(format!("Nothing to do: it is {} now.", a.status));
    }
    if a.exec.is_none() {
        return Some("It has no command to run: its proposer runs it.".to_string());
    }
    None
}

impl Bridge {
    /// Start the action's command on this host in the background; the
    /// message follows its claim and outcome through the event log.
    pub(crate) fn run_stranded(&self, a: &Action, who: &str) -> String {
        if let Some(why) = not_approved(a) {
            return why;
        }
        let argv = a.exec.clone().unwrap_or_default();
        let ops = self.calls();
        let action = a.clone();
        let who = who.to_string();
        // Detached on purpose: the run outlives this tap. If the daemon
        // stops mid-run the lease lapses and recovery marks it unknown,
        // as for any executor that dies.
        tokio::spawn(async move {
            match run_claimed(&ops, &action, &argv, LEASE, "chat", Echo::Quiet).await {
                Ok(r) if !r.claimed => {
                    tracing::info!(action_id = %action.id, by = %who, "run tap lost the claim: another executor runs it")
                }
                Ok(r) => {
                    tracing::info!(action_id = %action.id, by = %who, status = %r.status, exit_code = ?r.exit_code, "ran an approved action from chat")
                }
                Err(e) => {
                    tracing::warn!(action_id = %action.id, error = %e, "run from chat failed")
                }
            }
        });
        "Running it on the host ▶️ — this message shows the result.".to_string()
    }

    /// Claim the action in the tapper's name and record it executed (done
    /// by hand) or failed (will not run); nothing is run.
    pub(crate) async fn settle_by_hand(&self, a: &Action, who: &str, done: bool) -> String {
        if let Some(why) = not_approved(a) {
            return why;
        }
        let owner = format!("chat:{who}");
        let lease_ms = LEASE.as_millis() as i64;
        match self.calls().claim(&a.id, &owner, lease_ms).await {
            Ok(ClaimOutcome::Claimed { .. }) => {}
            Ok(ClaimOutcome::NotClaimable { action }) => {
                return format!("Too late: it is {} now.", action.status);
            }
            Err(e) => return format!("Not recorded: {e}"),
        }
        let (result, error) = if done {
            (json!({"done_by_hand": who}), None)
        } else {
            (
                json!({"not_run": who}),
                Some(format!(
                    "not run: {who} decided in chat that it will not run"
                )),
            )
        };
        match self
            .calls()
            .complete(&a.id, &owner, done, &result, error.as_deref())
            .await
        {
            Ok(CompleteOutcome::Completed { .. }) if done => "Recorded as done by hand ✔️".into(),
            Ok(CompleteOutcome::Completed { .. }) => "Recorded: it will not run ⏹".into(),
            Ok(CompleteOutcome::NotOwner { action }) => {
                format!("Not recorded: it is {} now.", action.status)
            }
            Err(e) => format!("Not recorded: {e}"),
        }
    }
}
