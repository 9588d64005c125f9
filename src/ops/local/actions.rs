//! The pending-action primitives on the store: one store call each, plus the policy's
//! part of a proposal (redaction keys, approvals, rules).

use super::Local;
use crate::ops::Result;
use crate::ops::backend::{Run, actions as call};
use crate::ops::claude::GrantCheck;
use crate::ops::results::Proposal;
use crate::store::actions::{
    Action, Actor, ApproveOutcome, AuditEntry, ClaimOutcome, CompleteOutcome, NewAction,
    RejectOutcome, Settled,
};
use crate::store::grants::{Grant, Revoked, Terms};

impl Local {
    /// Propose `new` under the policy: the redaction keys filled from it
    /// when the caller left them out, its separation of duties and
    /// escalation chain, then its first matching rule decides. The action
    /// comes back as stored (secrets included): each door shows it as its
    /// caller may see it.
    pub async fn propose_deciding(&self, new: &NewAction) -> Result<Proposal> {
        let mut new = new.clone();
        if new.redact_keys.is_none() {
            new.redact_keys = self.policy.redact_keys.clone();
        }
        new.not_by_proposer |= self
            .policy
            .approvals
            .not_by_proposer(&new.kind, &new.project);
        if new.escalation.is_empty() {
            new.escalation = self
                .policy
                .approvals
                .escalation(&new.kind, &new.project, 0, None);
        }
        let proposed = self.store.propose(&new).await?;
        let mut out = Proposal {
            created: proposed.created,
            action: proposed.action,
            rule: None,
            decision: None,
            note: None,
        };
        if proposed.created
            && let Some(applied) =
                crate::programs::apply_rules(&self.store, &out.action, &self.policy.rules).await?
        {
            out.action = applied.action;
            out.rule = Some(applied.rule);
            out.decision = Some(applied.decision);
        }
        Ok(out)
    }

    /// An action id as given, resolved within the scope when there is one
    /// (the store resolves an unscoped one itself, in the same call).
    pub(super) async fn action_id(&self, id: &str) -> Result<String> {
        match self.scope() {
            None => Ok(id.to_string()),
            Some(p) => Ok(self.store.resolve_action_id_in(id, Some(p)).await?),
        }
    }

    /// Approve the action `id` and save the grant `terms` describe, of the
    /// rule its arguments show (live only if this approval won).
    pub async fn approve_granting(
        &self,
        id: &str,
        actor: Actor<'_>,
        terms: Terms,
    ) -> Result<ApproveOutcome> {
        let a = self.store.get_action_in(id, self.scope()).await?;
        Ok(self.approve_saving(&a, actor, terms).await?.0)
    }

    /// Approve the action `a` as read and save the grant `terms` describe;
    /// the grant saved, if this approval won and saved one.
    pub async fn approve_saving(
        &self,
        a: &Action,
        actor: Actor<'_>,
        terms: Terms,
    ) -> Result<(ApproveOutcome, Option<Grant>)> {
        Ok(self.store.approve_granting(a, actor, terms).await?)
    }

    /// The live grants (with `all`, every grant) of `project` (the scope's,
    /// when there is one), newest first.
    pub async fn grant_list(&self, all: bool, project: Option<&str>) -> Result<Vec<Grant>> {
        let project = self.scope().or(project);
        Ok(self.store.grant_list_in(all, project).await?)
    }

    /// Revoke the grant `id` (full or short, within the scope) as `by`
    /// through `channel`; `None` when no grant matches.
    pub async fn grant_revoke(
        &self,
        id: &str,
        by: &str,
        channel: crate::store::Channel,
    ) -> Result<Option<Revoked>> {
        Ok(self
            .store
            .grant_revoke_in(id, by, channel, self.scope())
            .await?)
    }

    /// Let a live grant covering the prompt `id` decide it, and read the
    /// grant its approval saved; the action as stored (secrets included).
    pub async fn grant_check(&self, id: &str) -> Result<GrantCheck> {
        let a = self.store.get_action_in(id, self.scope()).await?;
        let applied = self.store.grant_apply(&a).await?;
        let a = if applied.is_some() {
            self.store.get_action(&a.id).await?
        } else {
            a
        };
        let given = self.store.grant_given(&a).await?;
        Ok(GrantCheck {
            applied,
            given,
            action: a,
        })
    }
}

impl Run<call::Propose<'_>> for Local {
    async fn run(&self, call::Propose(new): call::Propose<'_>) -> Result<Proposal> {
        let mut out = self.propose_deciding(new).await?;
        out.action = out.action.redacted();
        Ok(out)
    }
}

impl Run<call::Approve<'_>> for Local {
    async fn run(
        &self,
        call::Approve(id, actor, patch): call::Approve<'_>,
    ) -> Result<ApproveOutcome> {
        let id = self.action_id(id).await?;
        Ok(self.store.approve(&id, actor, patch).await?)
    }
}

impl Run<call::Reject<'_>> for Local {
    async fn run(
        &self,
        call::Reject(id, actor, reason): call::Reject<'_>,
    ) -> Result<RejectOutcome> {
        let id = self.action_id(id).await?;
        Ok(self.store.reject(&id, actor, reason).await?)
    }
}

impl Run<call::ListActions> for Local {
    async fn run(&self, call::ListActions(status): call::ListActions) -> Result<Vec<Action>> {
        // A list carries summaries (no arguments or result), as over HTTP.
        Ok(self
            .store
            .list_action_summaries(status, self.scope())
            .await?)
    }
}

impl Run<call::GetAction<'_>> for Local {
    async fn run(&self, call::GetAction(id): call::GetAction<'_>) -> Result<Action> {
        Ok(self.store.get_action_in(id, self.scope()).await?)
    }
}

impl Run<call::WaitAction<'_>> for Local {
    async fn run(
        &self,
        call::WaitAction(id, wait, until): call::WaitAction<'_>,
    ) -> Result<Settled> {
        Ok(self
            .store
            .wait_action_pausing(id, wait, move |s| until.holds(s), |d| self.pause(d))
            .await?)
    }
}

impl Run<call::ActionAudit<'_>> for Local {
    async fn run(&self, call::ActionAudit(id): call::ActionAudit<'_>) -> Result<Vec<AuditEntry>> {
        let id = self.action_id(id).await?;
        Ok(self.store.action_audit(&id).await?)
    }
}

impl Run<call::AuditExport<'_>> for Local {
    async fn run(
        &self,
        call::AuditExport(since, project, by): call::AuditExport<'_>,
    ) -> Result<crate::store::audit::Export> {
        Ok(self
            .store
            .audit_export(
                since,
                self.scope().or(project),
                by,
                crate::store::Channel::Cli,
            )
            .await?)
    }
}

impl Run<call::ExpireDue> for Local {
    async fn run(&self, call::ExpireDue(): call::ExpireDue) -> Result<Vec<Action>> {
        Ok(self.store.expire_due_in(self.scope()).await?)
    }
}

impl Run<call::Claim<'_>> for Local {
    async fn run(&self, call::Claim(id, owner, lease_ms): call::Claim<'_>) -> Result<ClaimOutcome> {
        let id = self.action_id(id).await?;
        Ok(self.store.claim(&id, owner, lease_ms).await?)
    }
}

impl Run<call::ExtendLease<'_>> for Local {
    async fn run(
        &self,
        call::ExtendLease(id, owner, lease_ms): call::ExtendLease<'_>,
    ) -> Result<bool> {
        let id = self.action_id(id).await?;
        Ok(self.store.extend_lease(&id, owner, lease_ms).await?)
    }
}

impl Run<call::Complete<'_>> for Local {
    async fn run(
        &self,
        call::Complete(id, owner, success, result, error): call::Complete<'_>,
    ) -> Result<CompleteOutcome> {
        let id = self.action_id(id).await?;
        Ok(self
            .store
            .complete(&id, owner, success, result.clone(), error)
            .await?)
    }
}

impl Run<call::ResolveUnknown<'_>> for Local {
    async fn run(
        &self,
        call::ResolveUnknown(id, actor, how): call::ResolveUnknown<'_>,
    ) -> Result<std::result::Result<Action, Action>> {
        let id = self.action_id(id).await?;
        Ok(self.store.resolve_unknown(&id, actor, how).await?)
    }
}

impl Run<call::GrantCheck<'_>> for Local {
    async fn run(&self, call::GrantCheck(id): call::GrantCheck<'_>) -> Result<GrantCheck> {
        let mut check = self.grant_check(id).await?;
        check.action = check.action.redacted();
        Ok(check)
    }
}
