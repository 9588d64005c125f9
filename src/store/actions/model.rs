//! The actions' model: where an action stands ([`Status`]), what expiry
//! means ([`OnExpire`]), the stored action ([`Action`]) and who moves it
//! ([`Actor`]).

use serde::Serialize;
use serde_json::Value;

use super::{Escalation, Redactor, scrub};
use crate::store::Channel;

/// Where an action stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for approvals.
    Pending,
    /// Approved, not yet claimed by an executor.
    Approved,
    /// Claimed; the executor holds a lease.
    Executing,
    /// The executor reported success.
    Executed,
    /// The executor reported failure.
    Failed,
    /// The executor vanished mid-call: the side effect may or may not have happened.
    Unknown,
    /// A person or a rule said no (or it expired with `on_expire = reject`).
    Rejected,
    /// Nobody decided before `expires_at`.
    Expired,
}

impl Status {
    /// Every status, in lifecycle order.
    pub const ALL: [Status; 8] = [
        Status::Pending,
        Status::Approved,
        Status::Executing,
        Status::Executed,
        Status::Failed,
        Status::Unknown,
        Status::Rejected,
        Status::Expired,
    ];

    /// The SQL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Executing => "executing",
            Status::Executed => "executed",
            Status::Failed => "failed",
            Status::Unknown => "unknown",
            Status::Rejected => "rejected",
            Status::Expired => "expired",
        }
    }

    /// Parse the SQL/CLI spelling.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Final: nothing changes it again (`unknown` waits for a human instead).
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            Status::Executed | Status::Failed | Status::Rejected | Status::Expired
        )
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens when nobody decides in time.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OnExpire {
    /// Status becomes `expired`.
    #[default]
    Expire,
    /// Status becomes `rejected` (reason "expired").
    Reject,
}

impl OnExpire {
    /// The SQL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnExpire::Expire => "expire",
            OnExpire::Reject => "reject",
        }
    }
}

/// One action as stored. `args` and `effective_args` hold the *real* values
/// (executors need them); render through [`Action::redacted`] or
/// [`Action::display_args`] for people.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Action {
    /// Full id (UUIDv7 hex).
    pub id: String,
    /// What sort of action (`email.send`, `deploy`, …).
    pub kind: String,
    /// One line for the human deciding.
    pub summary: String,
    /// Arguments as proposed.
    pub args: Value,
    /// SHA-256 hex of the canonical `{kind, summary, args}`.
    pub fingerprint: String,
    /// Dedup key, unique among live actions.
    pub dedup_key: Option<String>,
    /// Stored status. See [`Action::effective_status`] for lazy expiry.
    pub status: Status,
    /// Decisions at or after this instant are refused.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub expires_at: Option<i64>,
    /// What expiry turns it into.
    pub on_expire: OnExpire,
    /// Distinct approvals needed.
    pub approvals_required: i64,
    /// Distinct approvals so far.
    pub approvals: i64,
    /// Separation of duties: the proposer's own approval is refused
    /// (`self_approval`) and never counts toward the quorum.
    #[serde(default)]
    pub not_by_proposer: bool,
    /// Who decided (the N-th approver, the rejecter, `rule:<name>`, `expiry`).
    pub decided_by: Option<String>,
    /// When it was decided.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub decided_at: Option<i64>,
    /// Why it was rejected, expired or resolved.
    pub reason: Option<String>,
    /// The patch an approver applied, if any.
    pub patch: Option<Value>,
    /// Arguments the executor receives (`args` with the patch applied).
    pub effective_args: Value,
    /// Key patterns redacted in every human-facing rendering.
    pub redact_keys: Vec<String>,
    /// Executor argv recorded at proposal, if any.
    pub exec: Option<Vec<String>>,
    /// Verifier argv recovery runs for an interrupted execution, if any.
    pub verify: Option<Vec<String>>,
    /// The executor holding the claim.
    pub owner: Option<String>,
    /// The claim lapses at this instant unless extended.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub lease_until: Option<i64>,
    /// What the executor reported.
    pub result: Option<Value>,
    /// Why the execution failed or is unknown.
    pub error: Option<String>,
    /// Claims so far.
    pub attempts: i64,
    /// Who proposed it.
    pub proposer: String,
    /// Project of the proposer.
    pub project: String,
    /// Agent session of the proposer.
    pub session: String,
    /// When it was proposed.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Last transition.
    #[serde(with = "crate::clock::Timestamp")]
    pub updated_at: i64,
    /// Its escalation chain, fixed at proposal: each step's due time and
    /// where it goes (see [`crate::config::ApprovalsConfig`]).
    #[serde(default)]
    pub escalation: Vec<Escalation>,
    /// How many of those steps have fired.
    #[serde(default)]
    pub escalated: i64,
    /// When the last step fired.
    #[serde(default, with = "crate::clock::MaybeTimestamp")]
    pub escalated_at: Option<i64>,
}

impl Action {
    /// The status as of `now`: a pending action past its expiry shows as
    /// `expired` (or `rejected`) even before `expire_due()` writes it.
    pub fn effective_status(&self, now: i64) -> Status {
        match (self.status, self.expires_at) {
            (Status::Pending, Some(exp)) if exp <= now => match self.on_expire {
                OnExpire::Expire => Status::Expired,
                OnExpire::Reject => Status::Rejected,
            },
            (s, _) => s,
        }
    }

    /// The effective arguments with secrets replaced by `"[redacted]"`.
    pub fn display_args(&self) -> Value {
        self.redactor().redact(&self.effective_args)
    }

    /// A copy safe to show a person: every argument field redacted, and
    /// secrets scrubbed from the free text (result strings, error, reason).
    pub fn redacted(&self) -> Action {
        let r = self.redactor();
        let values = self.secret_values();
        Action {
            args: r.redact(&self.args),
            effective_args: r.redact(&self.effective_args),
            patch: self.patch.as_ref().map(|p| r.redact(p)),
            result: self.result.as_ref().map(|v| scrub::value(&r, &values, v)),
            error: self.error.as_deref().map(|e| scrub::text(&r, &values, e)),
            reason: self.reason.as_deref().map(|e| scrub::text(&r, &values, e)),
            ..self.clone()
        }
    }

    /// The real values of this action's secret arguments (as proposed, as
    /// patched, and as the executor gets them).
    fn secret_values(&self) -> Vec<String> {
        let r = self.redactor();
        let mut out = Vec::new();
        for v in [
            Some(&self.args),
            Some(&self.effective_args),
            self.patch.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            scrub::secret_values(&r, v, &mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    /// `text` with this action's secrets scrubbed: its secret argument
    /// values, and any value written after a secret-looking key.
    pub fn scrub_text(&self, text: &str) -> String {
        scrub::text(&self.redactor(), &self.secret_values(), text)
    }

    /// `v` with secret keys redacted and every string scrubbed as
    /// [`Action::scrub_text`] does.
    pub fn scrub_value(&self, v: &Value) -> Value {
        scrub::value(&self.redactor(), &self.secret_values(), v)
    }

    /// The redactor built from this action's own key patterns.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.redact_keys.clone())
    }

    /// The short id (last 8 characters).
    pub fn short_id(&self) -> &str {
        crate::store::short_id(&self.id)
    }
}

/// Who causes a transition and through which door (for audit and events).
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    /// A person's name, `rule:<name>`, an executor id, …
    pub name: &'a str,
    /// The door it came through.
    pub channel: Channel,
}

impl<'a> Actor<'a> {
    /// An actor on the command line.
    pub fn cli(name: &'a str) -> Self {
        Actor {
            name,
            channel: Channel::Cli,
        }
    }

    /// An actor tapping or typing in a chat (Telegram or Slack).
    pub fn chat(name: &'a str) -> Self {
        Actor {
            name,
            channel: Channel::Chat,
        }
    }
}
