//! A proposal as one statement: the row, its log entry's details (secrets
//! redacted, the escalation chain dated) and the dedup key's holder, written
//! by one INSERT on the winning path.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::codec::Redactor;
use super::logged::{Entry, logged};
use super::recovery::expire_matching;
use super::spelling::Sql;
use super::{COLUMNS, NewAction, Proposed, one};
use crate::store::engine::{Stmt, Tx};

/// What the proposal's log entry says, secrets redacted.
pub(super) fn proposal_details(
    new: &NewAction,
    redact: &Redactor,
    args: &Value,
    p: &Proposal,
    chain: &[crate::store::actions::Escalation],
) -> Value {
    let mut details = json!({
        "kind": new.kind.trim(),
        "summary": new.summary,
        "args": redact.redact(args),
        "fingerprint": p.fingerprint,
        "dedup_key": new.dedup_key,
        "expires_at": p.expires_at.map(crate::clock::format_rfc3339),
        "on_expire": new.on_expire,
        "approvals_required": new.approvals_required,
        "proposer": new.proposer,
    });
    if new.not_by_proposer {
        details["not_by_proposer"] = json!(true);
    }
    if !chain.is_empty() {
        details["escalation"] = json!(chain);
    }
    details
}

/// The escalation chain dated from the proposal at `now`; a step the TTL
/// cuts off would never fire, so it is not kept (the TTL's outcome ends the
/// chain).
pub(super) fn escalation_chain(
    new: &NewAction,
    now: i64,
    expires_at: Option<i64>,
) -> Vec<crate::store::actions::Escalation> {
    new.escalation
        .iter()
        .map(|e| crate::store::actions::Escalation {
            at: now.saturating_add(e.at),
            ..e.clone()
        })
        .filter(|e| expires_at.is_none_or(|x| e.at < x))
        .collect()
}

/// A proposal ready to insert: everything derived from the input.
#[derive(Clone)]
pub(crate) struct Proposal {
    /// When it is proposed (its expiry counts from here).
    pub(crate) at: i64,
    pub(crate) id: String,
    pub(crate) new: NewAction,
    pub(crate) canonical: String,
    pub(crate) fingerprint: String,
    pub(crate) redact_json: String,
    pub(crate) exec: Option<String>,
    pub(crate) verify: Option<String>,
    pub(crate) expires_at: Option<i64>,
    /// The audit details of `proposed` (redacted JSON).
    pub(crate) details: String,
    /// The dated escalation chain as JSON (empty: none).
    pub(crate) escalation: String,
    /// When its first step is due.
    pub(crate) escalate_at: Option<i64>,
}

impl Proposal {
    /// The proposal's INSERT with its values (`$1`–`$21`: id, kind,
    /// summary, arguments, fingerprint, dedup key, expiry, on-expire,
    /// approvals required, redact keys, exec, verify, proposer, project,
    /// session, now, channel, audit details, not by the proposer,
    /// escalation chain, its first due time).
    fn insert(&self) -> Stmt<'_> {
        let new = &self.new;
        INSERT
            .stmt()
            .text(self.id.as_str())
            .text(new.kind.trim())
            .text(new.summary.as_str())
            .text(self.canonical.as_str())
            .text(self.fingerprint.as_str())
            .text(new.dedup_key.as_deref())
            .int(self.expires_at)
            .text(new.on_expire.as_str())
            .int(new.approvals_required)
            .text(self.redact_json.as_str())
            .text(self.exec.as_deref())
            .text(self.verify.as_deref())
            .text(new.proposer.as_str())
            .text(new.project.as_str())
            .text(new.session.as_str())
            .int(self.at)
            .text(new.channel.as_str())
            .text(self.details.as_str())
            .int(i64::from(new.not_by_proposer))
            .text(Some(self.escalation.as_str()).filter(|e| !e.is_empty()))
            .int(self.escalate_at)
    }
}

/// The proposal's INSERT and its `proposed` entry (`$18` the details) in
/// one call (`logged.rs`); it inserts nothing when a live action holds the
/// dedup key.
pub(super) static INSERT: Sql = Sql::new(|s| {
    logged(
        s,
        "INSERT INTO actions (id, kind, summary, args, fingerprint, dedup_key, status, expires_at,
             on_expire, approvals_required, effective_args, redact_keys, exec, verify, proposer,
             project, session, created_at, updated_at, not_by_proposer, escalation, escalate_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $4, $10, $11, $12, $13, $14, $15,
                 $16, $16, $19, $20, $21)
         ON CONFLICT (project, dedup_key)
             WHERE dedup_key IS NOT NULL AND status IN ('pending', 'approved', 'executing', 'unknown')
             DO NOTHING",
        COLUMNS,
        &Entry::new("'proposed'", "$13", "$17", "$18"),
    )
});

/// The live action holding a dedup key (`$1` project, `$2` key), locked
/// where a refusal is explained under a lock (an `unknown` outcome counts
/// as live: it may have happened).
static DEDUP_HOLDER: Sql = Sql::new(|s| {
    format!(
        "SELECT {COLUMNS} FROM actions WHERE project = $1 AND dedup_key = $2
           AND status IN ('pending','approved','executing','unknown'){}",
        s.lock
    )
});

/// What a proposal found: its new action (or the live one with the same
/// key and payload), or a live holder with another payload.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) enum Proposing {
    Made(Box<Proposed>),
    Conflict {
        existing_id: String,
        existing_fingerprint: String,
    },
}

/// Insert the proposal: one call that also appends its event (its audit
/// entry). A live holder of the dedup key refuses the INSERT; a
/// holder past its expiry is settled then (it neither blocks nor answers
/// for the key) and the INSERT tried again; else the holder answers: the
/// same payload as that action, another one as a conflict.
pub(super) fn propose_in(
    mut tx: Tx<'_>,
    p: Arc<Proposal>,
) -> BoxFuture<'_, crate::store::Result<Proposing>> {
    Box::pin(async move {
        let new = &p.new;
        let key = new.dedup_key.as_deref().unwrap_or_default();
        // Why a bounded loop: on PostgreSQL a holder may settle between
        // the INSERT that met it and the read that looks for it; then the
        // key is free again (SQLite's write turn holds it still). Three
        // rounds outlast any such race but a pathological one, which is
        // then retried whole as busy.
        for round in 0..3 {
            if let Some(action) = one(&mut tx, &p.insert()).await? {
                return Ok(Proposing::Made(Box::new(Proposed {
                    action,
                    created: true,
                })));
            }
            if round == 0 {
                // The INSERT alone was the whole write when it won; what
                // follows is all or nothing.
                tx.begin().await?;
            }
            let settled =
                expire_matching(&mut tx, p.at, None, Some(key), Some(&new.project)).await?;
            if !settled.is_empty() {
                continue;
            }
            let holder = DEDUP_HOLDER.stmt().text(new.project.as_str()).text(key);
            if let Some(existing) = one(&mut tx, &holder).await? {
                return Ok(if existing.fingerprint == p.fingerprint {
                    Proposing::Made(Box::new(Proposed {
                        action: existing,
                        created: false,
                    }))
                } else {
                    Proposing::Conflict {
                        existing_id: existing.id,
                        existing_fingerprint: existing.fingerprint,
                    }
                });
            }
        }
        Err(crate::store::Error::Write {
            reason: "the dedup key's holder kept changing".into(),
            busy: true,
        })
    })
}
