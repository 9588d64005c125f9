//! Pending-action primitives over `/v1/actions`. A 404 reads like the
//! local engine's "no action `x`" so messages match; refusals in `detail`
//! become the engine's typed outcomes (`PatchRefused`, `NotClaimable`,
//! `NotOwner`, not-unknown).

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Answer, Failure, MAX_POLL, Remote, host_only, named, query};
use crate::ops::backend::{Run, actions as call};
use crate::ops::claude::GrantCheck;
use crate::ops::results::Proposal;
use crate::ops::wait::Deadline;
use crate::ops::{Error, Result};
use crate::store::actions::{
    self, Action, ApproveOutcome, AuditEntry, ClaimOutcome, CompleteOutcome, RejectOutcome,
    RuleDecision, Settled, codec,
};

/// A failure on action `id`, with the local engine's words for "not found".
fn failed(id: &str, f: Failure) -> Error {
    if f.status == 404 && f.reason == "not_found" {
        return Error::not_found(actions::Error::NotFound(id.trim().to_string()).to_string());
    }
    f.into()
}

/// The answer, or the failure in the local engine's words.
fn on(id: &str, a: Answer<Value>) -> Result<Value> {
    a.map_err(|f| failed(id, f))
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| Error::Internal {
        message: format!("the daemon gave an action answer this handoff does not understand ({e})"),
    })
}

/// The action in a refusal's `detail`, when there is one.
fn detail_action(f: &Failure) -> Option<Action> {
    f.detail_as::<Action>()
}

fn lease(ms: i64) -> String {
    format!("{}ms", ms.max(1))
}

#[derive(Deserialize)]
struct RuleBody {
    rule: String,
    decision: RuleDecision,
}

#[derive(Deserialize)]
struct Proposed {
    created: bool,
    rule: Option<RuleBody>,
    action: Action,
}

// Propose. The daemon applies its own `[[rule]]`s and `[redact]` keys;
// a verifier command cannot be set remotely (the host would run it),
// and an executor command is not recorded (the caller runs it).
impl Run<call::Propose<'_>> for Remote {
    async fn run(&self, call::Propose(new): call::Propose<'_>) -> Result<Proposal> {
        if new.verify.is_some() {
            return Err(host_only("proposing with a verifier command (--verify)"));
        }
        // Over the local socket the caller is the host: `--exec` is
        // recorded on the file (the chat's Run now and `recover` use it).
        if new.exec.is_some() && self.is_socket() {
            return Err(host_only("recording the command of `propose --exec`"));
        }
        let args = codec::parse_object("args", &new.args).map_err(Error::invalid)?;
        let body = json!({
            "kind": new.kind,
            "summary": new.summary,
            "args": args,
            "dedup_key": new.dedup_key,
            "ttl": new.ttl_ms.map(|ms| format!("{ms}ms")),
            "approvals_required": new.approvals_required,
            "on_expire": new.on_expire,
            "project": new.project,
            "session": new.session,
            "proposer": named(&new.proposer),
            "channel": named(new.channel.as_str()),
        });
        let p: Proposed = self.post(&["actions"], body).await?;
        Ok(Proposal {
            created: p.created,
            action: p.action.redacted(),
            rule: p.rule.as_ref().map(|r| r.rule.clone()),
            decision: p.rule.map(|r| r.decision),
            note: None,
        })
    }
}

impl Run<call::Approve<'_>> for Remote {
    async fn run(
        &self,
        call::Approve(id, actor, patch): call::Approve<'_>,
    ) -> Result<ApproveOutcome> {
        let patch = patch
            .map(|p| codec::parse_object("patch", p).map_err(Error::invalid))
            .transpose()?;
        let body = json!({"patch": patch, "by": named(actor.name), "channel": named(actor.channel.as_str())});
        match self.post::<Value>(&["actions", id, "approve"], body).await {
            Ok(v) => decode(v),
            Err(f) if f.status == 409 && f.reason == actions::SELF_APPROVAL => {
                match detail_action(&f) {
                    Some(action) => Ok(ApproveOutcome::SelfApproval { action }),
                    None => Err(f.into()),
                }
            }
            Err(f) if f.status == 409 && f.reason == "patch_refused" => match detail_action(&f) {
                Some(action) => Ok(ApproveOutcome::PatchRefused {
                    reason: f.message,
                    action,
                }),
                None => Err(f.into()),
            },
            Err(f) => Err(failed(id, f)),
        }
    }
}

impl Run<call::Reject<'_>> for Remote {
    async fn run(
        &self,
        call::Reject(id, actor, reason): call::Reject<'_>,
    ) -> Result<RejectOutcome> {
        let body = json!({"reason": reason, "by": named(actor.name), "channel": named(actor.channel.as_str())});
        decode(on(id, self.post(&["actions", id, "reject"], body).await)?)
    }
}

impl Run<call::ListActions> for Remote {
    async fn run(&self, call::ListActions(status): call::ListActions) -> Result<Vec<Action>> {
        let q = query(&[("status", status.map(|s| s.as_str().to_string()))]);
        Ok(self.get_all(&["actions"], &q).await?)
    }
}

impl Run<call::GetAction<'_>> for Remote {
    async fn run(&self, call::GetAction(id): call::GetAction<'_>) -> Result<Action> {
        decode(on(id, self.get(&["actions", id], &[]).await)?)
    }
}

// Long polls of at most the API's cap until `until` holds or `wait` passes.
impl Run<call::WaitAction<'_>> for Remote {
    async fn run(
        &self,
        call::WaitAction(id, wait, until): call::WaitAction<'_>,
    ) -> Result<Settled> {
        let deadline = Deadline::after(Some(wait));
        loop {
            let poll = deadline.left(MAX_POLL);
            let params = [
                ("wait", until.as_query().to_string()),
                ("timeout", format!("{}ms", poll.as_millis())),
            ];
            let v = self
                .call::<Value>(
                    reqwest::Method::GET,
                    &["actions", id],
                    &params,
                    None,
                    Some(poll),
                )
                .await
                .map_err(|f| failed(id, f))?;
            let settled: Settled = decode(v)?;
            if matches!(settled, Settled::Done { .. }) || deadline.passed() {
                return Ok(settled);
            }
        }
    }
}

impl Run<call::ActionAudit<'_>> for Remote {
    async fn run(&self, call::ActionAudit(id): call::ActionAudit<'_>) -> Result<Vec<AuditEntry>> {
        self.get_all(&["actions", id, "audit"], &[])
            .await
            .map_err(|f| failed(id, f))
    }
}

impl Run<call::AuditExport<'_>> for Remote {
    async fn run(
        &self,
        call::AuditExport(since, project, _by): call::AuditExport<'_>,
    ) -> Result<crate::store::audit::Export> {
        let q = query(&[
            ("since", since.map(crate::clock::format_rfc3339)),
            ("project", project.map(str::to_string)),
        ]);
        Ok(self.get(&["audit", "export"], &q).await?)
    }
}

impl Run<call::ExpireDue> for Remote {
    async fn run(&self, call::ExpireDue(): call::ExpireDue) -> Result<Vec<Action>> {
        Ok(self.post(&["actions", "expire"], json!({})).await?)
    }
}

impl Run<call::Claim<'_>> for Remote {
    async fn run(&self, call::Claim(id, owner, lease_ms): call::Claim<'_>) -> Result<ClaimOutcome> {
        let body = json!({"owner": owner, "lease": lease(lease_ms)});
        match self.post::<Value>(&["actions", id, "claim"], body).await {
            Ok(v) => decode(v),
            Err(f) if f.status == 409 && f.reason == "not_claimable" => match detail_action(&f) {
                Some(action) => Ok(ClaimOutcome::NotClaimable { action }),
                None => Err(f.into()),
            },
            Err(f) => Err(failed(id, f)),
        }
    }
}

impl Run<call::ExtendLease<'_>> for Remote {
    async fn run(
        &self,
        call::ExtendLease(id, owner, lease_ms): call::ExtendLease<'_>,
    ) -> Result<bool> {
        let body = json!({"owner": owner, "lease": lease(lease_ms)});
        match self.post::<Value>(&["actions", id, "extend"], body).await {
            Ok(_) => Ok(true),
            Err(f) if f.status == 409 && f.reason == "not_owner" => Ok(false),
            Err(f) => Err(failed(id, f)),
        }
    }
}

impl Run<call::Complete<'_>> for Remote {
    async fn run(
        &self,
        call::Complete(id, owner, success, result, error): call::Complete<'_>,
    ) -> Result<CompleteOutcome> {
        let body = json!({"owner": owner, "success": success, "result": result, "error": error});
        match self.post::<Value>(&["actions", id, "complete"], body).await {
            Ok(v) => decode(v),
            Err(f) if f.status == 409 && f.reason == "not_owner" => match detail_action(&f) {
                Some(action) => Ok(CompleteOutcome::NotOwner { action }),
                None => Err(f.into()),
            },
            Err(f) => Err(failed(id, f)),
        }
    }
}

impl Run<call::ResolveUnknown<'_>> for Remote {
    async fn run(
        &self,
        call::ResolveUnknown(id, actor, how): call::ResolveUnknown<'_>,
    ) -> Result<std::result::Result<Action, Action>> {
        let body = json!({"resolution": how, "by": named(actor.name), "channel": named(actor.channel.as_str())});
        match self
            .post::<Value>(&["actions", id, "resolve-unknown"], body)
            .await
        {
            Ok(v) => Ok(Ok(decode(v["action"].clone())?)),
            Err(f) if f.status == 409 && f.reason == "not_unknown" => match detail_action(&f) {
                Some(action) => Ok(Err(action)),
                None => Err(f.into()),
            },
            Err(f) => Err(failed(id, f)),
        }
    }
}

// `POST /v1/actions/{id}/grant`: a covering grant decides the prompt
// on the daemon, and the grant its approval saved comes back.
impl Run<call::GrantCheck<'_>> for Remote {
    async fn run(&self, call::GrantCheck(id): call::GrantCheck<'_>) -> Result<GrantCheck> {
        decode(on(
            id,
            self.post(&["actions", id, "grant"], json!({})).await,
        )?)
    }
}
