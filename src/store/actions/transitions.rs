//! The deciding transitions: propose (with dedup), approve (quorum,
//! patches) and reject.
//!
//! Each public write is wrapped in the store's busy retry and runs as one
//! `BEGIN IMMEDIATE` transaction: the guarded UPDATE decides, then the audit
//! row and the event are appended before commit. Nothing slow (executors,
//! deciders) runs inside a transaction.

use serde_json::{Value, json};
use sqlx::SqliteConnection;

use super::codec::{self, Redactor};
use super::{
    Actor, ApproveOutcome, COLUMNS, Error, NewAction, Proposed, RejectOutcome, Result, Status,
    load, record,
};
use crate::store::Store;

pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::Store(crate::store::Error::Invalid(msg.into()))
}

fn check_new(new: &NewAction) -> Result<()> {
    let kind = new.kind.trim();
    if kind.is_empty() || kind.len() > 100 {
        return Err(invalid(
            "--kind must be 1 to 100 characters, e.g. email.send",
        ));
    }
    if new.summary.trim().is_empty() || new.summary.len() > 500 {
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

fn is_unique_violation(e: &Error) -> bool {
    matches!(e, Error::Store(crate::store::Error::Db(sqlx::Error::Database(d))) if d.is_unique_violation())
}

impl Store {
    /// Run one actions transaction under the store's busy retry. Store
    /// errors (busy) are retried; engine errors (conflicts) pass through.
    pub(crate) async fn retry_actions<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.retry(|| {
            let fut = op();
            async move {
                match fut.await {
                    Err(Error::Store(e)) => Err(e),
                    other => Ok(other),
                }
            }
        })
        .await?
    }

    /// Propose an action. Arguments are parsed strictly (a JSON object, no
    /// NaN/Infinity, no lone surrogates, ≤ 1 MiB) before anything is written.
    /// With a dedup key held by a live action: the same payload returns that
    /// action (`created: false`); a different payload is
    /// [`Error::DedupConflict`].
    pub async fn propose(&self, new: &NewAction) -> Result<Proposed> {
        check_new(new)?;
        let args = Value::Object(codec::parse_object("args", &new.args).map_err(invalid)?);
        let canonical = codec::canonical(&args);
        let fingerprint = codec::fingerprint(new.kind.trim(), &new.summary, &args);
        let redact = match &new.redact_keys {
            Some(keys) => Redactor::new(keys.clone()),
            None => Redactor::default(),
        };
        let redact_json = serde_json::to_string(redact.patterns()).unwrap_or_else(|_| "[]".into());
        let exec = new.exec.as_ref().map(|a| json!(a).to_string());
        let verify = new.verify.as_ref().map(|a| json!(a).to_string());
        self.retry_actions(|| {
            self.propose_once(
                new,
                &canonical,
                &fingerprint,
                &redact_json,
                exec.as_deref(),
                verify.as_deref(),
            )
        })
        .await
    }

    async fn propose_once(
        &self,
        new: &NewAction,
        canonical: &str,
        fingerprint: &str,
        redact_json: &str,
        exec: Option<&str>,
        verify: Option<&str>,
    ) -> Result<Proposed> {
        let now = self.now();
        let id = crate::store::new_id();
        let mut tx = self.begin_write().await?;
        if let Some(key) = &new.dedup_key {
            // A holder past its expiry is dead even if no sweep wrote it yet:
            // settle it first so it neither blocks nor answers for the key.
            super::recovery::expire_in(&mut tx, now, None, Some((&new.project, key))).await?;
        }
        let inserted = sqlx::query(
            "INSERT INTO actions (id, kind, summary, args, fingerprint, dedup_key, status, expires_at,
                 on_expire, approvals_required, effective_args, redact_keys, exec, verify, proposer,
                 project, session, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(new.kind.trim())
        .bind(&new.summary)
        .bind(canonical)
        .bind(fingerprint)
        .bind(&new.dedup_key)
        .bind(new.ttl_ms.map(|t| now.saturating_add(t)))
        .bind(new.on_expire.as_str())
        .bind(new.approvals_required)
        .bind(canonical)
        .bind(redact_json)
        .bind(exec)
        .bind(verify)
        .bind(&new.proposer)
        .bind(&new.project)
        .bind(&new.session)
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(Error::from);
        match inserted {
            Ok(_) => {}
            Err(e) if is_unique_violation(&e) => {
                return dedup_holder(&mut tx, new, fingerprint).await;
            }
            Err(e) => return Err(e),
        }
        let action = load(&mut tx, &id).await?;
        let details = json!({
            "kind": action.kind,
            "summary": action.summary,
            "args": action.display_args(),
            "fingerprint": action.fingerprint,
            "dedup_key": action.dedup_key,
            "expires_at": action.expires_at.map(crate::clock::format_rfc3339),
            "on_expire": action.on_expire,
            "approvals_required": action.approvals_required,
            "proposer": action.proposer,
        });
        record(
            &mut tx,
            now,
            &action,
            Actor {
                name: &new.proposer,
                channel: new.channel,
            },
            "proposed",
            details,
        )
        .await?;
        tx.commit().await?;
        Ok(Proposed {
            action,
            created: true,
        })
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
        let id = self.resolve_action_id(id).await?;
        let patched = match patch {
            Some(text) => {
                // Validate against the current arguments before touching state;
                // the UPDATE below re-checks they are still the ones validated.
                let current = self.get_action(&id).await?;
                let (p, eff) =
                    codec::apply_patch(&current.effective_args, text).map_err(invalid)?;
                Some((p, eff, codec::canonical(&current.effective_args)))
            }
            None => None,
        };
        self.retry_actions(|| self.approve_once(&id, actor, patched.as_ref(), outright))
            .await
    }

    async fn approve_once(
        &self,
        id: &str,
        actor: Actor<'_>,
        patched: Option<&(Value, Value, String)>,
        outright: bool,
    ) -> Result<ApproveOutcome> {
        let now = self.now();
        let mut tx = self.begin_write().await?;
        let (patch_json, eff_json, expected) = match patched {
            Some((p, e, exp)) => (
                Some(codec::canonical(p)),
                Some(codec::canonical(e)),
                Some(exp.as_str()),
            ),
            None => (None, None, None),
        };
        // Why guarded: the state, the TTL, the "not counted yet" check and (for
        // a patch) "nobody approved these arguments yet" are all in the one
        // predicate, so of N concurrent approvers exactly the right ones count
        // and approving at or after the expiry millisecond cannot happen.
        let res = sqlx::query(
            "UPDATE actions SET
                 approvals = approvals + 1,
                 status = CASE WHEN ?5 OR approvals + 1 + ?8 >= approvals_required THEN 'approved' ELSE 'pending' END,
                 decided_by = CASE WHEN ?5 OR approvals + 1 + ?8 >= approvals_required THEN ?2 ELSE decided_by END,
                 decided_at = CASE WHEN ?5 OR approvals + 1 + ?8 >= approvals_required THEN ?3 ELSE decided_at END,
                 patch = COALESCE(?4, patch),
                 effective_args = COALESCE(?6, effective_args),
                 updated_at = ?3
             WHERE id = ?1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?3)
               AND NOT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = ?1 AND approver = ?2)
               AND (?7 IS NULL OR (approvals = 0 AND effective_args = ?7))",
        )
        .bind(id)
        .bind(actor.name)
        .bind(now)
        .bind(&patch_json)
        .bind(outright)
        .bind(&eff_json)
        .bind(expected)
        .bind(i64::from(crate::fault::on("early-quorum"))) // FAULT(early-quorum)
        .execute(&mut *tx)
        .await?;
        if res.rows_affected() == 0 {
            return self
                .explain_refused_approval(tx, now, id, actor, expected)
                .await;
        }
        sqlx::query("INSERT INTO action_approvals (action_id, approver, at) VALUES (?, ?, ?)")
            .bind(id)
            .bind(actor.name)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        let action = load(&mut tx, id).await?;
        let r = action.redactor();
        if let Some((p, _, _)) = patched {
            let before: Value = serde_json::from_str(expected.unwrap_or("{}")).unwrap_or_default();
            let details = json!({
                "proposed": r.redact(&action.args),
                "before": r.redact(&before),
                "patch": r.redact(p),
                "effective": action.display_args(),
            });
            record(&mut tx, now, &action, actor, "patched", details).await?;
        }
        let details = json!({
            "approver": actor.name,
            "approvals": action.approvals,
            "required": action.approvals_required,
        });
        let approved = action.status == Status::Approved;
        if approved {
            record(&mut tx, now, &action, actor, "approved", details).await?;
        } else {
            record(&mut tx, now, &action, actor, "approval_added", details).await?;
        }
        tx.commit().await?;
        Ok(if approved {
            ApproveOutcome::Approved { action }
        } else {
            ApproveOutcome::ApprovalAdded { action }
        })
    }

    /// The approval CAS matched nothing: find out why (reading only), and
    /// settle an action whose expiry has passed so it cannot come back.
    async fn explain_refused_approval(
        &self,
        mut tx: crate::store::WriteTx,
        now: i64,
        id: &str,
        actor: Actor<'_>,
        expected: Option<&str>,
    ) -> Result<ApproveOutcome> {
        if !super::recovery::expire_in(&mut tx, now, Some(id), None)
            .await?
            .is_empty()
        {
            let action = load(&mut tx, id).await?;
            tx.commit().await?;
            return Ok(ApproveOutcome::Expired { action });
        }
        let action = load(&mut tx, id).await?;
        let counted: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = ? AND approver = ?)",
        )
        .bind(id)
        .bind(actor.name)
        .fetch_one(&mut *tx)
        .await?;
        drop(tx);
        Ok(match action.status {
            Status::Expired => ApproveOutcome::Expired { action },
            Status::Pending if counted => ApproveOutcome::AlreadyApprovedBy { action },
            Status::Pending if expected.is_some() => ApproveOutcome::PatchRefused {
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

    /// Reject a pending action with a reason. One rejection rejects.
    pub async fn reject(&self, id: &str, actor: Actor<'_>, reason: &str) -> Result<RejectOutcome> {
        if reason.trim().is_empty() {
            return Err(invalid("a rejection needs a reason (--reason \"...\")"));
        }
        if actor.name.trim().is_empty() {
            return Err(invalid("a rejecter needs a name (--as NAME)"));
        }
        let id = self.resolve_action_id(id).await?;
        self.retry_actions(|| self.reject_once(&id, actor, reason))
            .await
    }

    async fn reject_once(&self, id: &str, actor: Actor<'_>, reason: &str) -> Result<RejectOutcome> {
        let now = self.now();
        let mut tx = self.begin_write().await?;
        // A person's words may quote a secret: scrubbed before they are stored.
        let reason = &load(&mut tx, id).await?.scrub_text(reason);
        // Why guarded: only a still-pending, unexpired action can be rejected;
        // a concurrent approval or expiry that won keeps its decision.
        let res = sqlx::query(
            "UPDATE actions SET status = 'rejected', decided_by = ?2, decided_at = ?3, reason = ?4, updated_at = ?3
             WHERE id = ?1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?3)",
        )
        .bind(id)
        .bind(actor.name)
        .bind(now)
        .bind(reason)
        .execute(&mut *tx)
        .await?;
        if res.rows_affected() == 0 {
            let expired = !super::recovery::expire_in(&mut tx, now, Some(id), None)
                .await?
                .is_empty();
            let action = load(&mut tx, id).await?;
            tx.commit().await?;
            return Ok(if expired {
                RejectOutcome::Expired { action }
            } else {
                RejectOutcome::AlreadyDecided { action }
            });
        }
        let action = load(&mut tx, id).await?;
        let details = json!({"rejecter": actor.name, "reason": reason});
        record(&mut tx, now, &action, actor, "rejected", details).await?;
        tx.commit().await?;
        Ok(RejectOutcome::Rejected { action })
    }
}

/// The live action holding `new`'s dedup key (the partial unique index
/// refused a second): the same payload answers as that action, another
/// payload is a loud [`Error::DedupConflict`].
async fn dedup_holder(
    conn: &mut SqliteConnection,
    new: &NewAction,
    fingerprint: &str,
) -> Result<Proposed> {
    // An `unknown` outcome counts as live: it may have happened. The
    // caller holds the write lock, so the holder is stable.
    let key = new.dedup_key.clone().unwrap_or_default();
    let sql = format!(
        "SELECT {COLUMNS} FROM actions WHERE project = ? AND dedup_key = ?
           AND status IN ('pending','approved','executing','unknown')"
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&new.project)
        .bind(&key)
        .fetch_one(&mut *conn)
        .await?;
    let existing = super::from_row(&row)?;
    if existing.fingerprint == fingerprint {
        return Ok(Proposed {
            action: existing,
            created: false,
        });
    }
    Err(Error::DedupConflict {
        key,
        existing_id: existing.id,
        existing_fingerprint: existing.fingerprint,
        new_fingerprint: fingerprint.to_string(),
    })
}
