//! The small result values operations return where the store has no single
//! type for them. Everything else is the store's own type (question, board,
//! action, session, resume).

use serde::Serialize;

use crate::store::actions::{Action, RuleDecision};
use crate::store::boards::PendingRow;
use crate::store::questions::{Delivery, Question};
use crate::store::sessions::{Begin, Complete};

/// What `ask` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asked {
    /// True when a new question was created; false when the open question
    /// with the same key was updated in place.
    pub created: bool,
    /// True when a reply arrived within the wait and was picked up (it is in
    /// `question.reply`).
    pub answered: bool,
    /// True when a wait ran out without a reply (the question stays open;
    /// `pending` will deliver the reply).
    pub timed_out: bool,
    /// The question as it stands.
    pub question: Question,
}

/// What `pending` hands over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pending {
    /// Replies on open questions (`new: false` = delivered before, still unresolved).
    pub questions: Vec<Delivery>,
    /// Board rows with a human response waiting for the agent.
    pub rows: Vec<PendingRow>,
}

/// What `propose_action` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    /// False when a live action with the same dedup key and payload was returned.
    pub created: bool,
    /// The action (secrets redacted), after any rule decision.
    pub action: Action,
    /// The configured rule that decided it at once, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// That rule's decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<RuleDecision>,
    /// Set when the returned action's outcome is unknown: why nothing new
    /// was proposed and what settles it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `action_status` read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionState {
    /// The action (secrets redacted, lazy expiry applied to `status`).
    pub action: Action,
    /// True when a wait ran out before the awaited state (a status, not an error).
    pub timed_out: bool,
}

/// What `ledger_record` wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Ledgered {
    /// A `started` phase: written, or the same call begun before.
    Begin(Begin),
    /// A `completed` / `failed` phase: written, or the same outcome recorded before.
    Complete(Complete),
}
