//! Escalation chains: a pending action nobody decided moves, step by step,
//! to the next chat, Slack channel or webhook its chain names (fixed at proposal, see
//! `config::approvals`). Each step is claimed by one guarded UPDATE on the
//! count of steps fired, so it fires once however many daemons (or
//! restarts) look, and its audit row and `action.escalated` event are
//! written in the same transaction. Only a still-pending, unexpired action
//! escalates: a decision at any step ends the chain; the TTL's outcome
//! (the expiry sweep, fail-closed) is its end. Delivering the step — the
//! chat push, the webhook — is the chat bridge's and `notify`'s work, as
//! they follow the event; this file only records that it is due.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::spelling::Sql;
use super::{Action, COLUMNS, Result, Status, one, record_payload};
use crate::store::{Channel, NewEvent, Store};

/// What the store keeps of a step on the action: when it is due and where
/// it goes (no secret: a webhook's is looked up by URL when it is sent).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Escalation {
    /// When the step is due (ms).
    #[serde(with = "crate::clock::Timestamp")]
    pub at: i64,
    /// How it is shown.
    pub to: String,
    /// The chat's config name, for a chat step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    /// Its forum topic, if the step names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<i32>,
    /// The Slack channel id, for a Slack step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<String>,
    /// The URL, for a webhook step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

/// Who an escalation's audit row and event name.
pub const ESCALATION_ACTOR: &str = "escalation";

/// At most this many actions per sweep (the next sweep takes the rest).
const BATCH: i64 = 100;

/// The pending, unexpired actions whose next step is due at `$1`.
static DUE: Sql = Sql::new(|_| {
    format!(
        "SELECT {COLUMNS} FROM actions
          WHERE status = 'pending' AND escalate_at IS NOT NULL AND escalate_at <= $1
            AND (expires_at IS NULL OR expires_at > $1)
          ORDER BY escalate_at LIMIT $2"
    )
});

/// Claim step `$2` (0-based: the count fired so far) of action `$1` at
/// `$3`, moving the next due time to `$4`. Why guarded on `escalated`, the
/// status and the expiry: two daemons that both saw the step due race
/// here and one wins; a decision or the expiry that came first ends the
/// chain, so nothing fires for an action no longer waiting.
static CLAIM: Sql = Sql::new(|_| {
    format!(
        "UPDATE actions SET escalated = escalated + 1, escalated_at = $3, escalate_at = $4
          WHERE id = $1 AND status = 'pending' AND escalated = $2
            AND escalate_at IS NOT NULL AND escalate_at <= $3
            AND (expires_at IS NULL OR expires_at > $3)
          RETURNING {COLUMNS}"
    )
});

/// One step that fired.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Escalated {
    /// The action, after the step.
    pub action: Action,
    /// Which step (1-based).
    pub step: i64,
    /// Where it went.
    pub to: Escalation,
}

impl Store {
    /// Fire every escalation step that is due now, in each chain's order,
    /// each once: the steps this call claimed (another daemon's claims are
    /// not among them).
    pub async fn escalate_due(&self) -> Result<Vec<Escalated>> {
        let now = self.now();
        let due = self.read_actions(DUE.stmt().int(now).int(BATCH)).await?;
        let mut fired = Vec::new();
        for a in due {
            // Several steps may be due (a daemon down meanwhile): one
            // claim each, in order, until one is not due or not won.
            let mut step = a.escalated;
            while let Some(e) = self.escalate_one(&a.id, step).await? {
                step = e.step;
                fired.push(e);
            }
        }
        Ok(fired)
    }

    /// Claim step `step` (0-based) of action `id`, if it is due and still
    /// unclaimed; its audit row and event in the same transaction.
    async fn escalate_one(&self, id: &str, step: i64) -> Result<Option<Escalated>> {
        let input = Arc::new((id.to_string(), step));
        Ok(self
            .transact(input, |mut tx, input, now| {
                Box::pin(async move {
                    let (id, step) = &*input;
                    let Some(before) = super::load(&mut tx, id, false).await? else {
                        return Ok(None);
                    };
                    let (Ok(i), true) = (usize::try_from(*step), before.escalated == *step) else {
                        return Ok(None);
                    };
                    let Some(to) = before.escalation.get(i).cloned() else {
                        return Ok(None);
                    };
                    let next = before.escalation.get(i + 1).map(|e| e.at);
                    let claim = CLAIM.stmt().text(id.as_str()).int(*step).int(now).int(next);
                    let Some(action) = one(&mut tx, &claim).await? else {
                        return Ok(None);
                    };
                    let mut details = json!({
                        "step": step + 1,
                        "of": action.escalation.len(),
                        "to": to.to,
                        "chat": to.chat,
                        "topic": to.topic,
                        "webhook": to.webhook,
                    });
                    // Only a Slack step says `slack`: the entries of the
                    // other steps read as they always have.
                    if let Some(channel) = &to.slack {
                        details["slack"] = json!(channel);
                    }
                    let details_text = details.to_string();
                    let ev = NewEvent {
                        kind: "action.escalated",
                        entity_kind: "action",
                        entity_id: &action.id,
                        actor: ESCALATION_ACTOR,
                        channel: Channel::Daemon,
                        project: &action.project,
                        session: &action.session,
                        payload: record_payload(&action, details),
                    };
                    tx.append_audited(now, &ev, &details_text).await?;
                    Ok(Some(Escalated {
                        step: step + 1,
                        to,
                        action,
                    }))
                })
            })
            .await?)
    }
}

/// The line saying where `a` was escalated and when ("Escalated to #ops
/// at 14:05 UTC"), and the next step if one is left, while it is pending;
/// `None` before its first step.
pub fn escalation_note(a: &Action) -> Option<String> {
    if a.status != Status::Pending {
        return None;
    }
    let hhmm = |ms: i64| {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .map(|t| t.format("%H:%M UTC").to_string())
            .unwrap_or_else(|| crate::clock::format_rfc3339(ms))
    };
    let done = usize::try_from(a.escalated).unwrap_or(0);
    let last = done.checked_sub(1).and_then(|i| a.escalation.get(i));
    let next = a.escalation.get(done);
    match (last, a.escalated_at, next) {
        (Some(l), Some(at), Some(n)) => Some(format!(
            "Escalated to {} at {}; to {} at {} if still undecided",
            l.to,
            hhmm(at),
            n.to,
            hhmm(n.at)
        )),
        (Some(l), Some(at), None) => Some(format!("Escalated to {} at {}", l.to, hhmm(at))),
        (None, _, Some(n)) => Some(format!(
            "Escalates to {} at {} if nobody decides",
            n.to,
            hhmm(n.at)
        )),
        _ => None,
    }
}
