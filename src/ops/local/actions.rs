//! [`ActionOps`] on the store: one store call each, plus the policy's
//! part of a proposal (redaction keys, approvals, rules).

use std::time::Duration;

use serde_json::Value;

use super::Local;
use crate::ops::Until;
use crate::ops::backend::{ActionOps, Call};
use crate::ops::claude::GrantCheck;
use crate::ops::results::Proposal;
use crate::store::actions::{
    Action, Actor, ApproveOutcome, AuditEntry, ClaimOutcome, CompleteOutcome, NewAction,
    RejectOutcome, Resolution, Settled, Status,
};

impl ActionOps for Local {
    // Propose, filling the redaction keys from the policy when the caller
    // left them out, then let the policy's first matching rule decide.
    fn propose<'a>(&'a self, new: &'a NewAction) -> Call<'a, Proposal> {
        Box::pin(async move {
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
                action: proposed.action.redacted(),
                rule: None,
                decision: None,
                note: None,
            };
            if proposed.created
                && let Some(applied) =
                    crate::programs::apply_rules(&self.store, &proposed.action, &self.policy.rules)
                        .await?
            {
                out.action = applied.action.redacted();
                out.rule = Some(applied.rule);
                out.decision = Some(applied.decision);
            }
            Ok(out)
        })
    }

    fn approve<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        patch: Option<&'a str>,
    ) -> Call<'a, ApproveOutcome> {
        Box::pin(async move { Ok(self.store.approve(id, actor, patch).await?) })
    }

    fn reject<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        reason: &'a str,
    ) -> Call<'a, RejectOutcome> {
        Box::pin(async move { Ok(self.store.reject(id, actor, reason).await?) })
    }

    fn list_actions<'a>(&'a self, status: Option<Status>) -> Call<'a, Vec<Action>> {
        Box::pin(async move {
            // A list carries summaries (no arguments or result), as over HTTP.
            Ok(self.store.list_action_summaries(status, None).await?)
        })
    }

    fn get_action<'a>(&'a self, id: &'a str) -> Call<'a, Action> {
        Box::pin(async move { Ok(self.store.get_action(id).await?) })
    }

    fn wait_action<'a>(&'a self, id: &'a str, wait: Duration, until: Until) -> Call<'a, Settled> {
        Box::pin(async move {
            Ok(self
                .store
                .wait_action_pausing(id, wait, move |s| until.holds(s), |d| self.pause(d))
                .await?)
        })
    }

    fn action_audit<'a>(&'a self, id: &'a str) -> Call<'a, Vec<AuditEntry>> {
        Box::pin(async move { Ok(self.store.action_audit(id).await?) })
    }

    fn audit_export<'a>(
        &'a self,
        since: Option<i64>,
        project: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, crate::store::audit::Export> {
        Box::pin(async move {
            Ok(self
                .store
                .audit_export(since, project, by, crate::store::Channel::Cli)
                .await?)
        })
    }

    fn expire_due<'a>(&'a self) -> Call<'a, Vec<Action>> {
        Box::pin(async move { Ok(self.store.expire_due().await?) })
    }

    fn claim<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, ClaimOutcome> {
        Box::pin(async move { Ok(self.store.claim(id, owner, lease_ms).await?) })
    }

    fn extend_lease<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, bool> {
        Box::pin(async move { Ok(self.store.extend_lease(id, owner, lease_ms).await?) })
    }

    fn complete<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        success: bool,
        result: &'a Value,
        error: Option<&'a str>,
    ) -> Call<'a, CompleteOutcome> {
        Box::pin(async move {
            Ok(self
                .store
                .complete(id, owner, success, result.clone(), error)
                .await?)
        })
    }

    fn resolve_unknown<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        how: Resolution,
    ) -> Call<'a, std::result::Result<Action, Action>> {
        Box::pin(async move { Ok(self.store.resolve_unknown(id, actor, how).await?) })
    }

    fn grant_check<'a>(&'a self, id: &'a str) -> Call<'a, GrantCheck> {
        Box::pin(async move {
            let a = self.store.get_action(id).await?;
            let applied = self.store.grant_apply(&a).await?;
            let a = if applied.is_some() {
                self.store.get_action(id).await?
            } else {
                a
            };
            let given = self.store.grant_given(&a).await?;
            Ok(GrantCheck {
                applied,
                given,
                action: a.redacted(),
            })
        })
    }
}
