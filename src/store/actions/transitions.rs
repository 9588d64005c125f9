//! The deciding transitions: propose (with dedup), approve (quorum,
//! patches) and reject.
//!
//! Each public write is wrapped in the store's busy retry and queued for the
//! write turn (`store::writer`, group commit). When it wins it is one
//! statement: the guarded `UPDATE … RETURNING` (or the proposal's INSERT)
//! names the transition in the `t_*` columns, and the table's triggers
//! append the audit row, the event and the approvals row in that same
//! statement. A refusal reads more, in a transaction, to explain itself.
//! Nothing slow (executors, deciders) runs inside a transaction.

use std::sync::Arc;

use serde_json::{Value, json};
use sqlx::SqliteConnection;

use super::codec::{self, Redactor};
use super::{
    Action, Actor, ApproveOutcome, COLUMNS, Error, NewAction, Proposed, RejectOutcome, Result,
    Status, from_row, load,
};
use crate::store::binds::{Query, binder};
use crate::store::postgres::action_moves as pg;
use crate::store::writer::Turn;
use crate::store::{Engine, Store};

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
            id: crate::store::new_id(),
            canonical: codec::canonical(&args),
            fingerprint: codec::fingerprint(new.kind.trim(), &new.summary, &args),
            redact_json: serde_json::to_string(redact.patterns()).unwrap_or_else(|_| "[]".into()),
            exec: new.exec.as_ref().map(|a| json!(a).to_string()),
            verify: new.verify.as_ref().map(|a| json!(a).to_string()),
            expires_at: new.ttl_ms.map(|t| now.saturating_add(t)),
            details: String::new(),
            new: new.clone(),
        });
        // The audit details are known before the row exists: written by the
        // INSERT's trigger, so a proposal is one statement.
        let details = json!({
            "kind": new.kind.trim(),
            "summary": new.summary,
            "args": redact.redact(&args),
            "fingerprint": p.fingerprint,
            "dedup_key": new.dedup_key,
            "expires_at": p.expires_at.map(crate::clock::format_rfc3339),
            "on_expire": new.on_expire,
            "approvals_required": new.approvals_required,
            "proposer": new.proposer,
        });
        crate::store::events::check_depth(&details)?;
        let p = Arc::new(Proposal {
            details: details.to_string(),
            ..Arc::unwrap_or_clone(p)
        });
        if let Engine::Postgres(pg) = self.engine() {
            return pg::propose(self, pg, p).await;
        }
        self.retry_actions(|| {
            let p = p.clone();
            self.write(move |turn| Box::pin(propose_in(turn, p, now)))
        })
        .await
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
        let clock = self.clock().clone();
        let won = match self.engine() {
            Engine::Postgres(pg) => pg::approve(self, pg, a.clone()).await?,
            Engine::Sqlite(_) => {
                self.retry_actions(|| {
                    let (a, clock) = (a.clone(), clock.clone());
                    self.write(move |turn| Box::pin(approve_in(turn, a, clock.now_ms())))
                })
                .await?
            }
        };
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
        if let Engine::Postgres(pg) = self.engine() {
            return pg::settle_expired(self, pg, id).await;
        }
        let id = Arc::new(id.to_string());
        let clock = self.clock().clone();
        self.retry_actions(|| {
            let (id, clock) = (id.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move {
                    turn.begin().await?;
                    super::recovery::expire_in(turn.conn(), clock.now_ms(), Some(&id), None)
                        .await?;
                    load(turn.conn(), &id).await
                })
            })
        })
        .await
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
        let clock = self.clock().clone();
        let won = match self.engine() {
            Engine::Postgres(pg) => pg::reject(self, pg, r.clone()).await?,
            Engine::Sqlite(_) => {
                self.retry_actions(|| {
                    let (r, clock) = (r.clone(), clock.clone());
                    self.write(move |turn| Box::pin(reject_in(turn, r, clock.now_ms())))
                })
                .await?
            }
        };
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

/// A proposal ready to insert: everything derived from the input.
#[derive(Clone)]
pub(crate) struct Proposal {
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
}

/// An approval patch, checked against the arguments it was made for.
pub(crate) struct Patched {
    /// The patch (canonical JSON).
    pub(crate) patch: String,
    /// The arguments with the patch applied (canonical JSON).
    pub(crate) effective: String,
    /// The arguments the patch was checked against (canonical JSON).
    pub(crate) expected: String,
    /// The audit details of `patched` (redacted JSON).
    pub(crate) details: String,
}

/// One approval to apply.
pub(crate) struct Approval {
    pub(crate) id: String,
    pub(crate) actor: String,
    pub(crate) channel: crate::store::Channel,
    pub(crate) patched: Option<Patched>,
    pub(crate) outright: bool,
}

impl Proposal {
    binder! {
        /// Bind the proposal's INSERT (`$1`–`$18` or `?1`–`?18`, the same on
        /// both engines: id, kind, summary, arguments, fingerprint, dedup key,
        /// expiry, on-expire, approvals required, redact keys, exec, verify,
        /// proposer, project, session, now, channel, audit details).
        pub(crate) fn bind<'q, DB>(
            &self,
            query: Query<'q, DB>,
            now: i64,
        ) -> Query<'q, DB> {
            let new = &self.new;
            query
                .bind(self.id.as_str())
                .bind(new.kind.trim())
                .bind(new.summary.as_str())
                .bind(self.canonical.as_str())
                .bind(self.fingerprint.as_str())
                .bind(new.dedup_key.as_deref())
                .bind(self.expires_at)
                .bind(new.on_expire.as_str())
                .bind(new.approvals_required)
                .bind(self.redact_json.as_str())
                .bind(self.exec.as_deref())
                .bind(self.verify.as_deref())
                .bind(new.proposer.as_str())
                .bind(new.project.as_str())
                .bind(new.session.as_str())
                .bind(now)
                .bind(new.channel.as_str())
                .bind(self.details.as_str())
        }
    }
}

impl Approval {
    binder! {
        /// Bind the approval's guarded UPDATE (`$1`–`$10` or `?1`–`?10`, the
        /// same on both engines: id, approver, now, patch, outright, patched
        /// arguments, the arguments patched, the early-quorum fault, channel,
        /// the patch's audit details).
        pub(crate) fn bind<'q, DB>(
            &self,
            query: Query<'q, DB>,
            now: i64,
        ) -> Query<'q, DB> {
            let patched = self.patched.as_ref();
            query
                .bind(self.id.as_str())
                .bind(self.actor.as_str())
                .bind(now)
                .bind(patched.map(|p| p.patch.as_str()))
                .bind(self.outright)
                .bind(patched.map(|p| p.effective.as_str()))
                .bind(patched.map(|p| p.expected.as_str()))
                .bind(i64::from(crate::fault::on("early-quorum"))) // FAULT(early-quorum)
                .bind(self.channel.as_str())
                .bind(patched.map(|p| p.details.as_str()))
        }
    }
}

/// Insert the proposal: one statement whose trigger writes the audit row
/// and the event. A live holder of the dedup key refuses the INSERT; a
/// holder past its expiry is settled first (it neither blocks nor answers
/// for the key) and the INSERT tried once more.
async fn propose_in(turn: &mut Turn, p: Arc<Proposal>, now: i64) -> Result<Proposed> {
    match insert_proposal(turn.conn(), &p, now).await {
        Err(e) if is_unique_violation(&e) => {}
        other => {
            return other.map(|action| Proposed {
                action,
                created: true,
            });
        }
    }
    turn.begin().await?;
    let new = &p.new;
    let key = new.dedup_key.as_deref().unwrap_or_default();
    let settled =
        super::recovery::expire_in(turn.conn(), now, None, Some((&new.project, key))).await?;
    if !settled.is_empty() {
        match insert_proposal(turn.conn(), &p, now).await {
            Err(e) if is_unique_violation(&e) => {}
            other => {
                return other.map(|action| Proposed {
                    action,
                    created: true,
                });
            }
        }
    }
    dedup_holder(turn.conn(), new, &p.fingerprint).await
}

async fn insert_proposal(conn: &mut SqliteConnection, p: &Proposal, now: i64) -> Result<Action> {
    let sql = format!(
        "INSERT INTO actions (id, kind, summary, args, fingerprint, dedup_key, status, expires_at,
             on_expire, approvals_required, effective_args, redact_keys, exec, verify, proposer,
             project, session, created_at, updated_at, t_event, t_actor, t_channel, t_details)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8, ?9, ?4, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?16,
                 'proposed', ?13, ?17, ?18)
         RETURNING {COLUMNS}"
    );
    let row = p
        .bind(sqlx::query(sqlx::AssertSqlSafe(sql)), now)
        .fetch_one(conn)
        .await?;
    from_row(&row)
}

/// What one approval call found: it counted, or it was refused (the row
/// as it stands and whether this approver already counted), or there is
/// no such action.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) enum Approving {
    Won(Box<ApproveOutcome>),
    Refused { action: Box<Action>, counted: bool },
    Missing,
}

impl Approving {
    /// A counted approval, as `action` stands after it.
    pub(crate) fn won(action: Action) -> Self {
        Approving::Won(Box::new(if action.status == Status::Approved {
            ApproveOutcome::Approved { action }
        } else {
            ApproveOutcome::ApprovalAdded { action }
        }))
    }
}

/// Apply one approval: one guarded `UPDATE … RETURNING` whose trigger
/// writes the approvals row, the audit rows and the events — and, in the
/// same call, a read of the row that only answers when the UPDATE changed
/// nothing (`changes() = 0`), so a refusal explains itself without a
/// second round trip. Why it matters: of 8 approvers racing on one action
/// 7 are refused.
async fn approve_in(turn: &mut Turn, a: Arc<Approval>, now: i64) -> Result<Approving> {
    // Why guarded: the state, the TTL, the "not counted yet" check and (for
    // a patch) "nobody approved these arguments yet" are all in the one
    // predicate, so of N concurrent approvers exactly the right ones count
    // and approving at or after the expiry millisecond cannot happen.
    let sql = format!(
        "UPDATE actions SET
             approvals = approvals + 1,
             status = CASE WHEN ?5 OR approvals + 1 + ?8 >= approvals_required THEN 'approved' ELSE 'pending' END,
             decided_by = CASE WHEN ?5 OR approvals + 1 + ?8 >= approvals_required THEN ?2 ELSE decided_by END,
             decided_at = CASE WHEN ?5 OR approvals + 1 + ?8 >= approvals_required THEN ?3 ELSE decided_at END,
             patch = COALESCE(?4, patch),
             effective_args = COALESCE(?6, effective_args),
             updated_at = ?3,
             t_seq = t_seq + 1,
             t_event = CASE WHEN ?5 OR approvals + 1 + ?8 >= approvals_required THEN 'approved' ELSE 'approval_added' END,
             t_actor = ?2, t_channel = ?9, t_patched = ?10,
             t_details = json_object('approvals', approvals + 1, 'approver', ?2, 'required', approvals_required)
         WHERE id = ?1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?3)
           AND NOT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = ?1 AND approver = ?2)
           AND (?7 IS NULL OR (approvals = 0 AND effective_args = ?7))
         RETURNING {COLUMNS}, 1 AS won, 0 AS counted;
         SELECT {COLUMNS}, 0 AS won, EXISTS (SELECT 1 FROM action_approvals
                 WHERE action_id = ?1 AND approver = ?2) AS counted
         FROM actions WHERE id = ?1 AND changes() = 0"
    );
    let row = a
        .bind(sqlx::query(sqlx::AssertSqlSafe(sql)), now)
        .fetch_all(turn.conn())
        .await?;
    let Some(row) = row.first() else {
        return Ok(Approving::Missing);
    };
    let action = from_row(row)?;
    let flag =
        |name: &str| sqlx::Row::try_get::<bool, _>(row, name).map_err(crate::store::Error::from);
    if !flag("won")? {
        return Ok(Approving::Refused {
            counted: flag("counted")?,
            action: Box::new(action),
        });
    }
    Ok(Approving::won(action))
}

/// Apply one rejection (id, rejecter, channel, scrubbed reason). `None`:
/// refused (the caller explains why, outside the turn).
async fn reject_in(
    turn: &mut Turn,
    r: Arc<(String, String, crate::store::Channel, String)>,
    now: i64,
) -> Result<Option<Action>> {
    let (id, actor, channel, reason) = &*r;
    // Why guarded: only a still-pending, unexpired action can be rejected;
    // a concurrent approval or expiry that won keeps its decision.
    let sql = format!(
        "UPDATE actions SET status = 'rejected', decided_by = ?2, decided_at = ?3, reason = ?4, updated_at = ?3,
             t_seq = t_seq + 1, t_event = 'rejected', t_actor = ?2, t_channel = ?5, t_patched = NULL,
             t_details = json_object('reason', ?4, 'rejecter', ?2)
         WHERE id = ?1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?3)
         RETURNING {COLUMNS}"
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(actor)
        .bind(now)
        .bind(reason)
        .bind(channel.as_str())
        .fetch_optional(turn.conn())
        .await?;
    row.as_ref().map(from_row).transpose()
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
