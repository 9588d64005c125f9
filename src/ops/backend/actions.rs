//! The pending-action primitives: their argument types and [`Ops`]'s
//! methods.

use std::time::Duration;

use serde_json::Value;

use super::Call;
use crate::ops::results::Proposal;
use crate::ops::{Ops, Until};
use crate::store::actions::{
    Action, Actor, ApproveOutcome, AuditEntry, ClaimOutcome, CompleteOutcome, NewAction,
    RejectOutcome, Resolution, Settled, Status,
};

primitives! {
    propose: Propose<'a>(&'a NewAction) -> Proposal;
    approve: Approve<'a>(&'a str, Actor<'a>, Option<&'a str>) -> ApproveOutcome;
    reject: Reject<'a>(&'a str, Actor<'a>, &'a str) -> RejectOutcome;
    list_actions: ListActions(Option<Status>) -> Vec<Action>;
    get_action: GetAction<'a>(&'a str) -> Action;
    wait_action: WaitAction<'a>(&'a str, Duration, Until) -> Settled;
    action_audit: ActionAudit<'a>(&'a str) -> Vec<AuditEntry>;
    audit_export: AuditExport<'a>(Option<i64>, Option<&'a str>, &'a str)
        -> crate::store::audit::Export;
    expire_due: ExpireDue() -> Vec<Action>;
    claim: Claim<'a>(&'a str, &'a str, i64) -> ClaimOutcome;
    extend_lease: ExtendLease<'a>(&'a str, &'a str, i64) -> bool;
    complete: Complete<'a>(&'a str, &'a str, bool, &'a Value, Option<&'a str>) -> CompleteOutcome;
    resolve_unknown: ResolveUnknown<'a>(&'a str, Actor<'a>, Resolution)
        -> std::result::Result<Action, Action>;
    grant_check: GrantCheck<'a>(&'a str) -> crate::ops::claude::GrantCheck;
}

impl Ops {
    /// Propose an action; the policy's rules (locally) or the daemon's may decide it at once.
    pub fn propose<'a>(&'a self, new: &'a NewAction) -> Call<'a, Proposal> {
        self.run(Propose(new))
    }

    /// Add an approval, optionally patching the arguments (JSON object text).
    pub fn approve<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        patch: Option<&'a str>,
    ) -> Call<'a, ApproveOutcome> {
        self.run(Approve(id, actor, patch))
    }

    /// Reject with a reason.
    pub fn reject<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        reason: &'a str,
    ) -> Call<'a, RejectOutcome> {
        self.run(Reject(id, actor, reason))
    }

    /// Actions, newest first (effective status), as summaries: no
    /// arguments, patch or result (`null`); `get_action` has them.
    pub fn list_actions(&self, status: Option<Status>) -> Call<'_, Vec<Action>> {
        self.run(ListActions(status))
    }

    /// One action (stored status; real arguments where the caller may see them).
    pub fn get_action<'a>(&'a self, id: &'a str) -> Call<'a, Action> {
        self.run(GetAction(id))
    }

    /// Wait up to `wait` until `until` holds for the action.
    pub fn wait_action<'a>(
        &'a self,
        id: &'a str,
        wait: Duration,
        until: Until,
    ) -> Call<'a, Settled> {
        self.run(WaitAction(id, wait, until))
    }

    /// The action's audit trail.
    pub fn action_audit<'a>(&'a self, id: &'a str) -> Call<'a, Vec<AuditEntry>> {
        self.run(ActionAudit(id))
    }

    /// The actions' audit log as a hash chain (since, project), its head recorded.
    pub fn audit_export<'a>(
        &'a self,
        since: Option<i64>,
        project: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, crate::store::audit::Export> {
        self.run(AuditExport(since, project, by))
    }

    /// Settle every pending action past its expiry.
    pub fn expire_due(&self) -> Call<'_, Vec<Action>> {
        self.run(ExpireDue())
    }

    /// Claim an approved action for execution.
    pub fn claim<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease_ms: i64,
    ) -> Call<'a, ClaimOutcome> {
        self.run(Claim(id, owner, lease_ms))
    }

    /// Push the lease of `owner`'s claim; false if it holds none.
    pub fn extend_lease<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease_ms: i64,
    ) -> Call<'a, bool> {
        self.run(ExtendLease(id, owner, lease_ms))
    }

    /// Record executed or failed.
    pub fn complete<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        success: bool,
        result: &'a Value,
        error: Option<&'a str>,
    ) -> Call<'a, CompleteOutcome> {
        self.run(Complete(id, owner, success, result, error))
    }

    /// Settle an `unknown` outcome; `Err` carries the action when it is not unknown.
    pub fn resolve_unknown<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        how: Resolution,
    ) -> Call<'a, std::result::Result<Action, Action>> {
        self.run(ResolveUnknown(id, actor, how))
    }

    /// Let a live grant covering the prompt `id` decide it, and read the
    /// grant its approval saved.
    pub fn grant_check<'a>(&'a self, id: &'a str) -> Call<'a, crate::ops::claude::GrantCheck> {
        self.run(GrantCheck(id))
    }
}
