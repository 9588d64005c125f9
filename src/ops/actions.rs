//! Pending actions for the agent: propose (applying the configured rules, as
//! `handoff propose` does), read the status with an optional bounded wait,
//! claim before running, complete after. Everything returned is redacted
//! except the claim, which hands the executor the real effective arguments.

use serde_json::{Value, json};

use super::local::{detail, required};
use super::questions::wait_for;
use super::requests::{ActionStatusRequest, ClaimRequest, CompleteRequest, ProposeRequest};
use super::results::{ActionState, Proposal};
use super::{Error, Ops, Result, Until};
use crate::store::Channel;
use crate::store::actions::{Action, ClaimOutcome, CompleteOutcome, NewAction, OnExpire, Status};

/// The default executor lease, in seconds.
const DEFAULT_LEASE_SECONDS: u64 = 300;

/// What a claim refused for an action in `status` means, in words.
fn not_claimable(a: &Action, status: Status) -> String {
    let id = a.short_id();
    match status {
        Status::Pending => format!(
            "{id} is not approved yet: do not run it; wait with action_status (wait_seconds) and claim once approved"
        ),
        Status::Executing => {
            format!(
                "{id} is already being executed by {}: do not run it again",
                a.owner.as_deref().unwrap_or("another executor")
            )
        }
        Status::Executed | Status::Failed => {
            format!("{id} already ran ({status}): do not run it again")
        }
        Status::Unknown => format!(
            "{id} is unknown (an earlier run was interrupted): a human must settle it; do not run it"
        ),
        Status::Rejected | Status::Expired => format!(
            "{id} was {status}{}: do not run it",
            a.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        Status::Approved => format!("{id} could not be claimed; read its status and retry"),
    }
}

impl Ops {
    pub async fn propose_action(&self, r: ProposeRequest) -> Result<Proposal> {
        required("kind", &r.kind)?;
        required("summary", &r.summary)?;
        let args = match r.args {
            None | Some(Value::Null) => "{}".to_string(),
            Some(v @ Value::Object(_)) => v.to_string(),
            Some(_) => {
                return Err(Error::invalid(
                    "`args` must be a JSON object of named arguments",
                ));
            }
        };
        let ttl_ms = r
            .ttl
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .map(|t| {
                crate::clock::parse_duration_ms(t).map_err(|e| Error::invalid(format!("ttl: {e}")))
            })
            .transpose()?;
        let on_expire = match r.on_expire.as_deref() {
            None | Some("") | Some("expire") => OnExpire::Expire,
            Some("reject") => OnExpire::Reject,
            Some(o) => {
                return Err(Error::invalid(format!(
                    "on_expire `{o}` is not `expire` or `reject`"
                )));
            }
        };
        let new = NewAction {
            kind: r.kind,
            summary: r.summary,
            args,
            dedup_key: r.dedup_key.filter(|k| !k.trim().is_empty()),
            ttl_ms,
            approvals_required: r.approvals.unwrap_or(1),
            on_expire,
            proposer: r.proposer.unwrap_or_default(),
            channel: Channel::Agent,
            project: r.project.unwrap_or_default(),
            session: r.session.unwrap_or_default(),
            exec: None,
            verify: None,
            // The policy's keys locally, the daemon's own remotely.
            redact_keys: None,
            not_by_proposer: false,
            escalation: Vec::new(),
        };
        let mut out = self.propose(&new).await?;
        out.note = crate::store::actions::unknown_duplicate_note(out.created, &out.action);
        Ok(out)
    }

    pub async fn action_status(&self, r: ActionStatusRequest) -> Result<ActionState> {
        required("id", &r.id)?;
        let settled_only = match r.until.as_deref() {
            None | Some("") | Some("decided") => false,
            Some("settled") => true,
            Some(u) => {
                return Err(Error::invalid(format!(
                    "until `{u}` is not `decided` or `settled`"
                )));
            }
        };
        let (action, timed_out) = match wait_for(r.wait_seconds)? {
            None => (self.get_action(&r.id).await?, false),
            Some(wait) => {
                let until = if settled_only {
                    Until::Settled
                } else {
                    Until::Decided
                };
                let out = self.wait_action(&r.id, wait, until).await?;
                let timed_out = matches!(out, crate::store::actions::Settled::StillRunning { .. });
                (out.action().clone(), timed_out)
            }
        };
        let mut shown = action.redacted();
        shown.status = action.effective_status(self.now());
        Ok(ActionState {
            action: shown,
            timed_out,
        })
    }

    pub async fn claim_action(&self, r: ClaimRequest) -> Result<Action> {
        required("id", &r.id)?;
        let owner = r.owner.unwrap_or_default();
        required("owner", &owner)?;
        let lease = r.lease_seconds.unwrap_or(DEFAULT_LEASE_SECONDS);
        if lease == 0 || lease > 86_400 {
            return Err(Error::invalid("lease_seconds is 1 to 86400"));
        }
        match self.claim(&r.id, &owner, (lease * 1000) as i64).await? {
            ClaimOutcome::Claimed { action } => Ok(action),
            ClaimOutcome::NotClaimable { action } => {
                let status = action.effective_status(self.now());
                let mut shown = action.redacted();
                shown.status = status;
                Err(Error::refused(
                    "not_claimable",
                    not_claimable(&action, status),
                    json!({"status": status, "action": detail(&shown)}),
                ))
            }
        }
    }

    pub async fn complete_action(&self, r: CompleteRequest) -> Result<Action> {
        required("id", &r.id)?;
        let owner = r.owner.unwrap_or_default();
        required("owner", &owner)?;
        let result = r.result.unwrap_or(Value::Null);
        let out = self
            .complete(&r.id, &owner, r.success, &result, r.error.as_deref())
            .await?;
        match out {
            CompleteOutcome::Completed { action } => Ok(action.redacted()),
            CompleteOutcome::NotOwner { action } => {
                let shown = action.redacted();
                Err(Error::refused(
                    "not_owner",
                    format!(
                        "{} is {} and not claimed by `{owner}`: only the executor that claimed it reports its end{}",
                        action.short_id(),
                        action.status,
                        if action.status == Status::Unknown {
                            " (its lease ran out, so it is unknown now: tell a human what happened)"
                        } else {
                            ""
                        }
                    ),
                    json!({"status": action.status, "action": detail(&shown)}),
                ))
            }
        }
    }
}
