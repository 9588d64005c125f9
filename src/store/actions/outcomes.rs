//! The values the actions engine takes and gives back: a proposal and the
//! typed outcomes of each transition. Losing a race is an outcome, not an
//! error: every loser gets the action as it stands (the winner's decision).

use serde::Serialize;

use super::{Action, OnExpire, Status};
use crate::store::Channel;

/// A proposal. `args` is JSON text, parsed strictly by [`Store::propose`].
#[derive(Debug, Clone)]
pub struct NewAction {
    /// What sort of action (`email.send`, `deploy`, …).
    pub kind: String,
    /// One line for the person deciding.
    pub summary: String,
    /// The arguments: a JSON object, as text.
    pub args: String,
    /// Live actions with the same key are the same action.
    pub dedup_key: Option<String>,
    /// Decisions are refused this many ms after proposal (None = never).
    pub ttl_ms: Option<i64>,
    /// Distinct approvals needed (≥ 1).
    pub approvals_required: i64,
    /// What expiry turns it into.
    pub on_expire: OnExpire,
    /// Who proposes (an agent name, a script).
    pub proposer: String,
    /// Through which door (`agent`, `cli`, …).
    pub channel: Channel,
    /// Project of the proposer.
    pub project: String,
    /// Agent session of the proposer (woken on decisions).
    pub session: String,
    /// Executor argv to record with the action.
    pub exec: Option<Vec<String>>,
    /// Verifier argv recovery runs for an interrupted execution.
    pub verify: Option<Vec<String>>,
    /// Secret key patterns (None = the defaults).
    pub redact_keys: Option<Vec<String>>,
    /// Separation of duties: refuse the proposer's own approval (see
    /// [`crate::config::ApprovalsConfig`]).
    pub not_by_proposer: bool,
    /// The escalation chain, each step's `at` counted from the proposal
    /// (ms after it): the store dates it and drops the steps the TTL cuts
    /// off (see [`crate::config::ApprovalsConfig::escalation`]).
    pub escalation: Vec<crate::store::actions::Escalation>,
}

impl Default for NewAction {
    fn default() -> Self {
        NewAction {
            kind: String::new(),
            summary: String::new(),
            args: "{}".into(),
            dedup_key: None,
            ttl_ms: None,
            approvals_required: 1,
            on_expire: OnExpire::Expire,
            proposer: String::new(),
            channel: Channel::Cli,
            project: String::new(),
            session: String::new(),
            exec: None,
            verify: None,
            redact_keys: None,
            not_by_proposer: false,
            escalation: Vec::new(),
        }
    }
}

/// The result of [`Store::propose`].
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Proposed {
    /// The new action, or the live one with the same dedup key and payload.
    pub action: Action,
    /// False when an existing action was returned (dedup).
    pub created: bool,
}

/// Why nothing new was proposed, when the action a proposal returned
/// (`created` false) has an unknown outcome: it may already have run.
/// `None` otherwise.
pub fn unknown_duplicate_note(created: bool, a: &Action) -> Option<String> {
    (!created && a.status == super::Status::Unknown).then(|| {
        format!(
            "nothing new was proposed: {} has the same dedup key and payload and its outcome \
             is unknown (it may already have run); a person must settle it before it can run again",
            a.short_id()
        )
    })
}

/// Why a proposer's own approval was refused, and what to do instead
/// (every door says these words for [`ApproveOutcome::SelfApproval`]).
pub fn self_approval_note(a: &Action) -> String {
    format!(
        "{} was proposed by `{}` and its policy separates the duties ([approvals] \
         not_by_proposer): someone else must approve it; nothing was counted",
        a.short_id(),
        a.proposer
    )
}

/// The result of [`Store::approve`]. Only `Approved` and `ApprovalAdded`
/// changed anything; the others report what already stands.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ApproveOutcome {
    /// This approval completed the quorum: the action is approved.
    Approved {
        /// The action after the change.
        action: Action,
    },
    /// Counted; more distinct approvals are needed.
    ApprovalAdded {
        /// The action after the change.
        action: Action,
    },
    /// This approver was already counted; nothing changed.
    AlreadyApprovedBy {
        /// The action as it stands.
        action: Action,
    },
    /// Someone decided first: here is the winner's decision.
    AlreadyDecided {
        /// The decision that won: approved or rejected.
        status: Status,
        /// Who made the winning decision.
        decided_by: Option<String>,
        /// When the winning decision was made.
        #[serde(with = "crate::clock::MaybeTimestamp")]
        decided_at: Option<i64>,
        /// The action as it stands.
        action: Action,
    },
    /// Nobody decided before `expires_at`; now settled as expired (or rejected).
    Expired {
        /// The action after the write, as every reader now sees it.
        action: Action,
    },
    /// The approver proposed this action, and its policy separates the
    /// duties (`not_by_proposer`): refused, audited, nothing counted.
    SelfApproval {
        /// The action as it stands (untouched).
        action: Action,
    },
    /// The patch was valid but the arguments already carry approvals (or
    /// changed meanwhile): patching now would change what others approved.
    PatchRefused {
        /// Why, in words.
        reason: String,
        /// The action as it stands (untouched).
        action: Action,
    },
}

impl ApproveOutcome {
    /// The action this outcome carries.
    pub fn action(&self) -> &Action {
        match self {
            ApproveOutcome::Approved { action }
            | ApproveOutcome::ApprovalAdded { action }
            | ApproveOutcome::AlreadyApprovedBy { action }
            | ApproveOutcome::AlreadyDecided { action, .. }
            | ApproveOutcome::Expired { action }
            | ApproveOutcome::SelfApproval { action }
            | ApproveOutcome::PatchRefused { action, .. } => action,
        }
    }
}

/// The result of [`Store::reject`].
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RejectOutcome {
    /// This call rejected it.
    Rejected {
        /// The action after the change.
        action: Action,
    },
    /// Someone decided first.
    AlreadyDecided {
        /// The action as it stands.
        action: Action,
    },
    /// It expired before the rejection.
    Expired {
        /// The action after the write, as every reader now sees it.
        action: Action,
    },
}

impl RejectOutcome {
    /// The action this outcome carries.
    pub fn action(&self) -> &Action {
        match self {
            RejectOutcome::Rejected { action }
            | RejectOutcome::AlreadyDecided { action }
            | RejectOutcome::Expired { action } => action,
        }
    }
}

/// The result of [`Store::claim`].
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ClaimOutcome {
    /// The caller owns the execution until the lease runs out.
    Claimed {
        /// The action after the change.
        action: Action,
    },
    /// Not approved (anymore): someone else claimed it, or it was never approved.
    NotClaimable {
        /// The action as it stands.
        action: Action,
    },
}

/// The result of [`Store::complete`].
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CompleteOutcome {
    /// Recorded as executed or failed.
    Completed {
        /// The action after the change.
        action: Action,
    },
    /// The caller does not hold the claim (or it is no longer executing,
    /// e.g. recovery marked it unknown after the lease lapsed).
    NotOwner {
        /// The action as it stands.
        action: Action,
    },
}

/// The result of a wait.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Settled {
    /// The awaited state was reached.
    Done {
        /// The action as it stands (nothing changed).
        action: Action,
    },
    /// The timeout passed first: the action is still in progress
    /// (pending, approved or executing). A status, not an error.
    StillRunning {
        /// The action as it stands.
        action: Action,
    },
}

impl Settled {
    /// The action this outcome carries.
    pub fn action(&self) -> &Action {
        match self {
            Settled::Done { action } | Settled::StillRunning { action } => action,
        }
    }
}
