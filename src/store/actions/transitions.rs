//! The deciding transitions: propose (with dedup), approve (quorum,
//! patches) and reject.
//!
//! Each public write is one write of the store (`Store::write_with`: on
//! SQLite queued for the write turn, `store::writer`, group commit; on
//! PostgreSQL a transaction of its own), retried when the database is
//! busy. When it wins it is one call: the guarded `UPDATE … RETURNING`
//! (or the proposal's INSERT) with the event that is its audit entry and
//! the approvals row appended in the same call (`logged.rs`: statements of
//! one call on SQLite, one statement on PostgreSQL); nothing about the
//! entry is stored on the action's row. A refusal reads more, in a
//! transaction, to explain itself. Nothing slow (executors, deciders) runs
//! inside a transaction.
//!
//! One write differs in shape per engine, the approval: SQLite's one call
//! (`approval.rs`) reads a refusal's explanation with `changes() = 0`;
//! PostgreSQL's twin (`postgres.rs`) locks the row first and reads it
//! after.

use std::sync::Arc;

use serde_json::{Value, json};

use super::approval::{Approval, Approving, Patched, approve_in_one_call};
use super::codec::{self, Redactor};
use super::logged::{Entry, logged};
use super::proposal::{Proposal, Proposing, escalation_chain, proposal_details, propose_in};
use super::recovery::expire_matching;
use super::spelling::Sql;
use super::{
    Action, Actor, ApproveOutcome, COLUMNS, Error, NewAction, Proposed, RejectOutcome, Result,
    Status, load, one,
};
use crate::store::Store;

/// The reason a refused self-approval is audited with (and every door's
/// refusal `reason`).
pub const SELF_APPROVAL: &str = "self_approval";

pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::Store(crate::store::Error::Invalid(msg.into()))
}

fn check_new(new: &NewAction) -> Result<()> {
    let kind = new.kind.trim();
    if kind.is_empty() || kind.chars().count() > 100 {
        return Err(invalid(
            "--kind must be 1 to 100 characters, e.g. email.send",
        ));
    }
    if new.summary.trim().is_empty() || new.summary.chars().count() > 500 {
        return Err(invalid("--summary must be 1 to 500 characters"));
    }
    if !(1..=100).contains(&new.approvals_required) {
        return Err(invalid("--approvals must be between 1 and 100"));
    }
    if new.ttl_ms.is_some_and(|t| t <= 0) {
        return Err(invalid("--ttl must be positive, e.g. 24h"));
    }
    if let Some(k) = &new.dedup_key
        && (k.trim().is_empty() || k.chars().count() > 200)
    {
        return Err(invalid("--dedup-key must be 1 to 200 characters"));
    }
    for (what, argv) in [("--exec", &new.exec), ("--verify", &new.verify)] {
        if argv.as_ref().is_some_and(|a| a.is_empty()) {
            return Err(invalid(format!("{what} needs a command after `--`")));
        }
    }
    Ok(())
}

impl Store {
    /// Propose an action. Arguments are parsed strictly (a JSON object, no
    /// NaN/Infinity, no lone surrogates, ≤ 1 MiB) before anything is written.
    /// With a dedup key held by a live action: the same payload returns that
    /// action (`created: false`); a different payload is
    /// [`Error::DedupConflict`].
    pub async fn propose(&self, new: &NewAction) -> Result<Proposed> {
        check_new(new)?;
        let args = Value::Object(codec::parse_object("args", &new.args).map_err(invalid)?);
        // Filed in its session's project (see `sessions/home.rs`), once
        // the input is known to be good: a refused proposal writes nothing.
        let project = self.session_home(&new.session, &new.project).await?;
        let claimed;
        let new = if project == new.project {
            new
        } else {
            claimed = NewAction {
                project,
                ..new.clone()
            };
            &claimed
        };
        let redact = match &new.redact_keys {
            Some(keys) => Redactor::new(keys.clone()),
            None => Redactor::default(),
        };
        let now = self.now();
        let p = Arc::new(Proposal {
            at: now,
            id: crate::store::new_id(),
            canonical: codec::canonical(&args),
            fingerprint: codec::fingerprint(new.kind.trim(), &new.summary, &args),
            redact_json: serde_json::to_string(redact.patterns()).unwrap_or_else(|_| "[]".into()),
            exec: new.exec.as_ref().map(|a| json!(a).to_string()),
            verify: new.verify.as_ref().map(|a| json!(a).to_string()),
            expires_at: new.ttl_ms.map(|t| now.saturating_add(t)),
            escalation: String::new(),
            escalate_at: None,
            details: String::new(),
            new: new.clone(),
        });
        // The audit details are known before the row exists: written by the
        // INSERT's call, so a proposal is one call.
        let chain = escalation_chain(new, now, p.expires_at);
        let details = proposal_details(new, &redact, &args, &p, &chain);
        crate::store::events::check_depth(&details)?;
        let p = Arc::new(Proposal {
            details: details.to_string(),
            escalate_at: chain.first().map(|e| e.at),
            escalation: if chain.is_empty() {
                String::new()
            } else {
                json!(chain).to_string()
            },
            ..Arc::unwrap_or_clone(p)
        });
        let out = self
            .write_with(p.clone(), |tx, p, _| Box::pin(propose_in(tx, p)))
            .await?;
        match out {
            Proposing::Made(made) => Ok(*made),
            Proposing::Conflict {
                existing_id,
                existing_fingerprint,
            } => Err(Error::DedupConflict {
                key: p.new.dedup_key.clone().unwrap_or_default(),
                existing_id,
                existing_fingerprint,
                new_fingerprint: p.fingerprint.clone(),
            }),
        }
    }

    /// Add `actor`'s approval, optionally with a patch of the arguments.
    /// The patch is validated (known keys, same JSON types, size) before any
    /// state change; a broken one is an [`Error::Store`] `Invalid` and the
    /// action stays untouched. The N-th distinct approval approves.
    pub async fn approve(
        &self,
        id: &str,
        actor: Actor<'_>,
        patch: Option<&str>,
    ) -> Result<ApproveOutcome> {
        self.approve_as(id, actor, patch, false).await
    }

    /// Approve on behalf of an auto-decision rule: one rule decision
    /// approves outright, whatever the quorum.
    pub(crate) async fn approve_as(
        &self,
        id: &str,
        actor: Actor<'_>,
        patch: Option<&str>,
        outright: bool,
    ) -> Result<ApproveOutcome> {
        if actor.name.trim().is_empty() {
            return Err(invalid("an approver needs a name (--as NAME)"));
        }
        let id = self.write_target(id).await?;
        let patched = match patch {
            Some(text) => {
                // Validate against the current arguments before touching state;
                // the UPDATE below re-checks they are still the ones validated.
                let current = self.get_action(&id).await?;
                let (p, eff) =
                    codec::apply_patch(&current.effective_args, text).map_err(invalid)?;
                let r = current.redactor();
                let details = json!({
                    "proposed": r.redact(&current.args),
                    "before": r.redact(&current.effective_args),
                    "patch": r.redact(&p),
                    "effective": r.redact(&eff),
                });
                Some(Patched {
                    patch: codec::canonical(&p),
                    effective: codec::canonical(&eff),
                    expected: codec::canonical(&current.effective_args),
                    details: details.to_string(),
                })
            }
            None => None,
        };
        let a = Arc::new(Approval {
            id,
            actor: actor.name.to_string(),
            channel: actor.channel,
            patched,
            outright,
        });
        let won = self
            .write_split(a.clone(), approve_in_one_call, super::postgres::approve)
            .await?;
        match won {
            Approving::Won(outcome) => Ok(*outcome),
            Approving::Refused { action, counted } => {
                self.explain_refused_approval(&a, *action, counted).await
            }
            Approving::Missing => Err(Error::NotFound(a.id.clone())),
        }
    }

    /// The approval CAS matched nothing: say why, from the row the same
    /// call read back. An action whose expiry has passed is settled on the
    /// way (so it cannot come back); that is the only further call.
    async fn explain_refused_approval(
        &self,
        a: &Approval,
        action: Action,
        counted: bool,
    ) -> Result<ApproveOutcome> {
        if action.effective_status(self.now()) != action.status {
            let action = self.settle_expired(&a.id).await?;
            if action.status != Status::Pending {
                return Ok(ApproveOutcome::Expired { action });
            }
        }
        if action.status == Status::Pending && action.not_by_proposer && action.proposer == a.actor
        {
            let actor = super::Actor {
                name: &a.actor,
                channel: a.channel,
            };
            self.audit_refused_attempt(&a.id, actor, SELF_APPROVAL)
                .await?;
            return Ok(ApproveOutcome::SelfApproval { action });
        }
        Ok(match action.status {
            Status::Expired => ApproveOutcome::Expired { action },
            Status::Pending if counted => ApproveOutcome::AlreadyApprovedBy { action },
            Status::Pending if a.patched.is_some() => ApproveOutcome::PatchRefused {
                reason: if action.approvals > 0 {
                    format!(
                        "{} approval(s) were already given for the current arguments; approve without --patch, or reject and propose again",
                        action.approvals
                    )
                } else {
                    "the arguments changed since the patch was checked; look again and retry".into()
                },
                action,
            },
            _ => ApproveOutcome::AlreadyDecided {
                status: action.status,
                decided_by: action.decided_by.clone(),
                decided_at: action.decided_at,
                action,
            },
        })
    }

    /// Settle `id` if it is pending past its expiry (a guarded write that
    /// a concurrent decision may have beaten), and return it as it stands.
    pub(crate) async fn settle_expired(&self, id: &str) -> Result<Action> {
        let found = self
            .transact(Arc::new(id.to_string()), |mut tx, id, now| {
                Box::pin(async move {
                    expire_matching(&mut tx, now, Some(&id), None, None).await?;
                    load(&mut tx, &id, false).await
                })
            })
            .await?;
        found.ok_or_else(|| Error::NotFound(id.to_string()))
    }

    /// Reject a pending action with a reason. One rejection rejects.
    pub async fn reject(&self, id: &str, actor: Actor<'_>, reason: &str) -> Result<RejectOutcome> {
        if reason.trim().is_empty() {
            return Err(invalid("a rejection needs a reason (--reason \"...\")"));
        }
        if actor.name.trim().is_empty() {
            return Err(invalid("a rejecter needs a name (--as NAME)"));
        }
        let id = self.resolve_action_id(id).await?;
        // A person's words may quote a secret: scrubbed before they are
        // stored. The secret values are fixed at proposal, so this read
        // needs no write turn.
        let reason = self.get_action(&id).await?.scrub_text(reason);
        let r = Arc::new((id, actor.name.to_string(), actor.channel, reason));
        let won = self
            .write_with(r.clone(), |mut tx, r, now| {
                Box::pin(async move {
                    let (id, actor, channel, reason) = &*r;
                    let reject = REJECT
                        .stmt()
                        .text(id.as_str())
                        .text(actor.as_str())
                        .int(now)
                        .text(reason.as_str())
                        .text(channel.as_str());
                    one(&mut tx, &reject).await
                })
            })
            .await?;
        if let Some(action) = won {
            return Ok(RejectOutcome::Rejected { action });
        }
        // Refused: expired (settled now if no sweep did yet) or decided.
        let action = self.get_action(&r.0).await?;
        if action.effective_status(self.now()) != action.status {
            let action = self.settle_expired(&r.0).await?;
            if action.status != Status::Pending {
                return Ok(RejectOutcome::Expired { action });
            }
        }
        // An action some earlier call or sweep expired is already decided,
        // as before the one-round-trip write path (the model test holds it).
        Ok(RejectOutcome::AlreadyDecided { action })
    }
}

/// A rejection (`$1` id, `$2` rejecter, `$3` now, `$4` the scrubbed
/// reason, `$5` channel). Why guarded: only a still-pending, unexpired
/// action can be rejected; a concurrent approval or expiry that won keeps
/// its decision.
static REJECT: Sql = Sql::new(|s| {
    let details = s.object("'reason', $4, 'rejecter', $2");
    logged(
        s,
        "UPDATE actions SET status = 'rejected', decided_by = $2, decided_at = $3, reason = $4,
             updated_at = $3
         WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $3)",
        COLUMNS,
        &Entry::new("'rejected'", "$2", "$5", &details),
    )
});
