//! The backward-looking transitions: expiry sweeps, crash recovery,
//! resolving `unknown` by hand, and retention (purge).
//!
//! Recovery never silently re-runs an interrupted execution: an `executing`
//! action whose lease ran out becomes `unknown` — unless the action carries
//! a verifier, which is asked first (executed / re-run / unknown). Only a
//! person ([`Store::resolve_unknown`]) or a verifier can choose a re-run.

use std::sync::Arc;

use serde::Serialize;
use serde_json::json;

use super::logged::{Entry, logged};
use super::rules::Verdict;
use super::spelling::Sql;
use super::{Action, Actor, COLUMNS, Error, Result, all, one};
use crate::store::engine::{Stmt, Tx};
use crate::store::{Channel, NewEvent, Store};

/// How long recovery's hold on an interrupted action lasts while its
/// verifier runs, renewed every [`VERIFY_RENEW`]. Short and renewed, like
/// an executor's lease, rather than long enough for any verifier: a
/// recoverer that dies mid-verify (a daemon killed, a `handoff recover`
/// stopped) lets go within it, and the next recovery asks the verifier
/// again, instead of the action showing `executing` for minutes.
const VERIFY_LEASE_MS: i64 = 6_000;

/// How often a recoverer renews its hold while the verifier runs: a third
/// of the lease, so two renewals may be late before it lapses.
pub const VERIFY_RENEW: std::time::Duration =
    std::time::Duration::from_millis(VERIFY_LEASE_MS as u64 / 3);

/// What recovery found and did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, schemars::JsonSchema)]
pub struct RecoverReport {
    /// Executions whose lease ran out, now `unknown` (shown to a human).
    pub unknown: Vec<Action>,
    /// Interrupted executions a verifier declared executed.
    pub verified_executed: Vec<Action>,
    /// Interrupted executions a verifier sent back to `approved` for one re-run.
    pub rerun: Vec<Action>,
    /// Approved actions nobody has claimed: safe to execute.
    pub claimable: Vec<Action>,
}

/// A person's verdict on an `unknown` action.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Resolution {
    /// The side effect happened.
    Executed,
    /// It did not happen, and should not be retried.
    Failed,
    /// Run it again: a conscious at-least-once choice.
    Retry,
}

/// What a purge removed.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct PurgeReport {
    /// Settled actions deleted (their audit entries stay in the event log).
    pub purged: Vec<String>,
    /// Always 0: the event log (the audit) keeps a purged action's entries.
    pub audit_rows: u64,
    /// Older actions kept because they are still live (or `unknown`).
    pub kept_live: i64,
}

/// Settle pending actions past their expiry (`$1` now; all, or `$2` one
/// id, `$3` the holder of a dedup key, `$4` in one project). Why guarded:
/// `status = 'pending'` makes concurrent sweeps (and a sweep racing an
/// approval) settle each action exactly once; `expires_at <= now` is the
/// exact complement of the approval CAS's `expires_at > now`. Each settled
/// action's entry is appended in the same call (`logged.rs`), so a sweep
/// is one call however many it settles.
static EXPIRE: Sql = Sql::new(|s| {
    const DUE: &str = "status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1
           AND ($2 IS NULL OR id = $2) AND ($3 IS NULL OR dedup_key = $3)
           AND ($4 IS NULL OR project = $4)";
    const SETTLED: &str = "CASE on_expire WHEN 'reject' THEN 'rejected' ELSE 'expired' END";
    let details = s.object(&format!(
        "'expires_at', {}, 'on_expire', on_expire",
        s.expires_text
    ));
    let entry = Entry {
        status: SETTLED,
        at: "$1",
        many: Some(DUE),
        ..Entry::new(SETTLED, "'expiry'", "'daemon'", &details)
    };
    let change = format!(
        "UPDATE actions SET status = {SETTLED}, decided_by = 'expiry', decided_at = $1,
             reason = 'expired: nobody decided in time', updated_at = $1
         WHERE {DUE}"
    );
    logged(s, &change, COLUMNS, &entry)
});

/// In the caller's write, settle pending actions whose expiry has passed
/// (all, one `id`, or the holder of `dedup_key`, in `project` or all),
/// writing audit rows and events. Returns the settled actions.
pub(crate) async fn expire_matching(
    tx: &mut Tx<'_>,
    now: i64,
    id: Option<&str>,
    dedup_key: Option<&str>,
    project: Option<&str>,
) -> crate::store::Result<Vec<Action>> {
    let expire = EXPIRE
        .stmt()
        .int(now)
        .text(id)
        .text(dedup_key)
        .text(project);
    all(tx, &expire).await
}

/// `executing` actions whose lease ran out by `$1`, oldest first.
static LAPSED: Sql = Sql::new(|s| {
    format!(
        "SELECT {COLUMNS} FROM actions WHERE status = 'executing' AND lease_until <= $1
         ORDER BY created_at{}",
        s.then_by_id
    )
});

/// Approved actions nobody has claimed, newest first.
static CLAIMABLE: Sql = Sql::new(|s| {
    format!(
        "SELECT {COLUMNS} FROM actions WHERE status = 'approved'
         ORDER BY created_at DESC, id{} DESC",
        s.bytewise
    )
});

/// A verifier's take-over of a lapsed claim (`$1` id, `$2` the recoverer,
/// `$3` the details, `$4` now, `$5` its lease in ms). Why guarded: of
/// several recoverers exactly one takes over the lapsed claim, so the
/// verifier runs once. Its `verifying` entry is appended in the same call.
static TAKE_FOR_VERIFIER: Sql = Sql::new(|s| {
    logged(
        s,
        "UPDATE actions SET owner = $2, lease_until = $4 + $5, updated_at = $4
         WHERE id = $1 AND status = 'executing' AND lease_until <= $4",
        COLUMNS,
        &Entry::new("'verifying'", "$2", "'daemon'", "$3"),
    )
});

/// `executing → unknown` (`$1` id, `$2` the recoverer holding it, or NULL
/// for a lapsed lease, `$3` the reason, `$4` now). Why guarded: the
/// executor may have renewed its lease or completed since we looked; then
/// it is alive and this must not fire.
static MARK_UNKNOWN: Sql = Sql::new(|s| {
    let details = s.object("'owner', owner, 'reason', $3");
    logged(
        s,
        "UPDATE actions SET status = 'unknown', error = $3, lease_until = NULL, updated_at = $4
         WHERE id = $1 AND status = 'executing'
           AND (($2 IS NULL AND lease_until <= $4) OR owner = $2)",
        COLUMNS,
        &Entry::new("'unknown'", "'recovery'", "'daemon'", &details),
    )
});

/// A verifier's claim handed back for a re-run (`$1` id, `$2` the
/// recoverer, `$3` the reason, `$4` now). Why guarded: only the recoverer
/// that took over the claim may hand it back.
static BACK_TO_APPROVED: Sql = Sql::new(|s| {
    let details = s.object("'attempts', attempts, 'reason', $3");
    logged(
        s,
        "UPDATE actions SET status = 'approved', owner = NULL, lease_until = NULL, updated_at = $4
         WHERE id = $1 AND status = 'executing' AND owner = $2",
        COLUMNS,
        &Entry::new("'retry'", "$2", "'daemon'", &details),
    )
});

/// A person settling an `unknown` action (`$1` id, `$2` the person, `$3`
/// the details, `$4` now, `$5` the new status, `$6` the audit event, `$7`
/// the channel). Why guarded: only `unknown` waits for a person; any other
/// state (already resolved by someone else) stays as it is.
static RESOLVE_UNKNOWN: Sql = Sql::new(|s| {
    logged(
        s,
        "UPDATE actions SET status = $5,
             owner = CASE WHEN $5 = 'approved' THEN NULL ELSE owner END,
             lease_until = NULL, reason = 'resolved by ' || $2 || ': ' || $5, updated_at = $4
         WHERE id = $1 AND status = 'unknown'",
        COLUMNS,
        &Entry::new("$6", "$2", "$7", "$3"),
    )
});

/// One of recovery's guarded moves to run: its statement, `$1` the action
/// id, `$2` the owner or actor, `$3` a text (a reason, the details), `$4`
/// now (the write's), then `ms` a number of ms and `words`, when given.
struct Move {
    sql: &'static Sql,
    id: String,
    who: Option<String>,
    text: String,
    ms: Option<i64>,
    words: Vec<String>,
}

impl Move {
    fn new(sql: &'static Sql, id: &str, who: Option<&str>, text: &str) -> Move {
        Move {
            sql,
            id: id.to_string(),
            who: who.map(str::to_string),
            text: text.to_string(),
            ms: None,
            words: Vec::new(),
        }
    }

    fn stmt(&self, now: i64) -> Stmt<'_> {
        let mut s = self
            .sql
            .stmt()
            .text(self.id.as_str())
            .text(self.who.as_deref())
            .text(self.text.as_str())
            .int(now);
        if let Some(ms) = self.ms {
            s = s.int(ms);
        }
        for w in &self.words {
            s = s.text(w.as_str());
        }
        s
    }
}

impl Store {
    /// Write the final status of every pending action past its expiry
    /// (`expired`, or `rejected` with `on_expire = reject`). Concurrent
    /// sweeps settle each action once. Returns what this call settled.
    pub async fn expire_due(&self) -> Result<Vec<Action>> {
        self.expire_due_in(None).await
    }

    /// [`expire_due`](Store::expire_due) for the actions of `project` only
    /// (all when `None`).
    pub async fn expire_due_in(&self, project: Option<&str>) -> Result<Vec<Action>> {
        let project = project.map(str::to_string);
        Ok(self
            .write_with(project, |mut tx, project, now| {
                Box::pin(async move {
                    expire_matching(&mut tx, now, None, None, project.as_deref()).await
                })
            })
            .await?)
    }

    /// `executing` actions whose lease ran out, oldest first: what recovery
    /// ([`crate::programs::recover`]) settles.
    pub async fn lapsed(&self) -> Result<Vec<Action>> {
        let mut lapsed = self.read_actions(LAPSED.stmt().int(self.now())).await?;
        if crate::fault::on("skip-recovery") {
            lapsed.clear(); // FAULT(skip-recovery)
        }
        Ok(lapsed)
    }

    /// A lapsed execution without a verifier becomes `unknown`: the side
    /// effect may or may not have happened, and a person must say. `None`
    /// when it is no longer lapsed (its executor renewed or finished).
    pub async fn lapse_to_unknown(&self, action: &Action) -> Result<Option<Action>> {
        let why = format!(
            "the executor {} stopped renewing its lease: the side effect may or may not have happened",
            action.owner.as_deref().unwrap_or("?")
        );
        self.mark_unknown(action, None, &why).await
    }

    /// Approved actions nobody has claimed: safe to execute.
    pub async fn claimable(&self) -> Result<Vec<Action>> {
        // Only the approved rows are read: recovery runs on the daemon's
        // housekeeping cadence, and reading every action's arguments each
        // time would cost the whole table.
        self.read_actions(CLAIMABLE.stmt()).await
    }

    /// Take over a lapsed execution so that its verifier (`argv`) runs once.
    /// Returns the recoverer's name (the new owner) when this call took it,
    /// `None` when another recoverer did or the executor came back.
    pub async fn take_for_verifier(
        &self,
        action: &Action,
        argv: &[String],
    ) -> Result<Option<String>> {
        let me = format!("recovery:{}", crate::store::new_id());
        let details = json!({"previous_owner": action.owner, "verifier": argv}).to_string();
        let took = self
            .transition(Move {
                ms: Some(VERIFY_LEASE_MS),
                ..Move::new(&TAKE_FOR_VERIFIER, &action.id, Some(&me), &details)
            })
            .await?;
        Ok(took.map(|_| me))
    }

    /// Renew the hold the recoverer `me` took with
    /// [`take_for_verifier`](Store::take_for_verifier) while its verifier
    /// runs. False when `me` no longer holds it.
    pub async fn keep_verifier_lease(&self, id: &str, me: &str) -> Result<bool> {
        self.extend_lease(id, me, VERIFY_LEASE_MS).await
    }

    /// Record a verifier's answer for `action`, which the recoverer `me`
    /// holds: executed → completed, re-run → `approved`, unknown or no
    /// answer (`Err`, the reason) → `unknown`. `None` when `me` no longer
    /// holds it.
    pub async fn record_verdict(
        &self,
        action: &Action,
        me: &str,
        verdict: &std::result::Result<Verdict, String>,
    ) -> Result<Option<Action>> {
        match verdict {
            Ok(Verdict::Executed) => {
                let out = self
                    .complete(&action.id, me, true, json!({"verified": "executed"}), None)
                    .await?;
                Ok(match out {
                    super::CompleteOutcome::Completed { action } => Some(action),
                    _ => None,
                })
            }
            Ok(Verdict::Rerun) => {
                self.back_to_approved(&action.id, me, "verifier: not executed, re-run")
                    .await
            }
            Ok(Verdict::Unknown) => {
                self.mark_unknown(action, Some(me), "the verifier answered unknown")
                    .await
            }
            Err(e) => {
                let why = format!("the verifier could not decide: {e}");
                self.mark_unknown(action, Some(me), &why).await
            }
        }
    }

    /// `executing` → `unknown`, either because the lease lapsed (`owner`
    /// None) or on behalf of the recoverer holding it. `action` is the
    /// action as read before (its arguments, fixed once executing, say
    /// which secrets to scrub from `why`).
    async fn mark_unknown(
        &self,
        action: &Action,
        owner: Option<&str>,
        why: &str,
    ) -> Result<Option<Action>> {
        // `why` may carry a verifier's words: scrub them like any error.
        let why = action.scrub_text(why);
        self.transition(Move::new(&MARK_UNKNOWN, &action.id, owner, &why))
            .await
    }

    /// `executing` (held by the verifier `owner`) → `approved` for a re-run.
    async fn back_to_approved(&self, id: &str, owner: &str, why: &str) -> Result<Option<Action>> {
        self.transition(Move::new(&BACK_TO_APPROVED, id, Some(owner), why))
            .await
    }

    /// Run one guarded `UPDATE … RETURNING` of a recovery transition as a
    /// write of its own, its event (the audit entry) appended in the same
    /// call (`logged.rs`). `None` when the guard matched
    /// nothing.
    async fn transition(&self, m: Move) -> Result<Option<Action>> {
        Ok(self
            .write_with(Arc::new(m), |mut tx, m, now| {
                Box::pin(async move { one(&mut tx, &m.stmt(now)).await })
            })
            .await?)
    }

    /// A person settles an `unknown` action: it did happen (`Executed`), it
    /// did not (`Failed`), or run it again (`Retry` → `approved`; a
    /// conscious at-least-once choice, audited as such). Returns `None` when
    /// the action is not `unknown` (nothing changed).
    pub async fn resolve_unknown(
        &self,
        id: &str,
        actor: Actor<'_>,
        resolution: Resolution,
    ) -> Result<std::result::Result<Action, Action>> {
        if actor.name.trim().is_empty() {
            return Err(Error::Store(crate::store::Error::Invalid(
                "resolving needs a name (--as NAME)".into(),
            )));
        }
        let id = self.write_target(id).await?;
        let (status, event) = match resolution {
            Resolution::Executed => ("executed", "executed"),
            Resolution::Failed => ("failed", "failed"),
            Resolution::Retry => ("approved", "retry"),
        };
        let mut details = json!({"resolved_by": actor.name, "resolution": resolution});
        if resolution == Resolution::Retry {
            details["note"] =
                json!("at-least-once: a person chose to run it again after an unknown outcome");
        }
        let won = self
            .transition(Move {
                words: vec![status.into(), event.into(), actor.channel.as_str().into()],
                ..Move::new(
                    &RESOLVE_UNKNOWN,
                    &id,
                    Some(actor.name),
                    &details.to_string(),
                )
            })
            .await?;
        Ok(match won {
            Some(a) => Ok(a),
            None => Err(self.get_action(&id).await?),
        })
    }

    /// Delete settled actions (executed, failed, rejected, expired) last
    /// changed before `before` and their approvals, in one transaction;
    /// their audit entries stay in the log. Live and `unknown` actions are
    /// kept (counted in `kept_live`).
    pub async fn purge_actions(&self, before: i64) -> Result<PurgeReport> {
        Ok(self
            .transact_apart(before, |mut tx, before, now| {
                Box::pin(async move { purge_in(&mut tx, before, now).await })
            })
            .await?)
    }
}

/// The purge's guard (`$1` the cutoff): the ids of the settled actions
/// last changed before it, which the statements below delete. A settled
/// action never changes again, so what it picks stays settled; on
/// PostgreSQL a racing purge waits on the guard rows and then finds their
/// actions gone (`ON CONFLICT DO NOTHING`).
fn purge_guard<'q>() -> Stmt<'q> {
    Stmt::spelled(
        "INSERT INTO action_purge_guard (action_id)
         SELECT id FROM actions
         WHERE updated_at < $1 AND status IN ('executed','failed','rejected','expired')",
        "INSERT INTO action_purge_guard (action_id)
         SELECT id FROM actions
         WHERE updated_at < $1 AND status IN ('executed','failed','rejected','expired')
         ON CONFLICT DO NOTHING",
    )
}

/// The actions the guard picked.
static DOOMED: Sql = Sql::new(|_| {
    format!("SELECT {COLUMNS} FROM actions WHERE id IN (SELECT action_id FROM action_purge_guard)")
});

/// The purge's statements in the caller's transaction: the guard, the
/// doomed actions read, their approvals and rows deleted (their audit
/// entries stay in the log), the guard emptied, what is kept counted, and
/// an `action.purged` event for each, last.
async fn purge_in(tx: &mut Tx<'_>, before: i64, now: i64) -> crate::store::Result<PurgeReport> {
    tx.change(&purge_guard().int(before)).await?;
    let doomed = all(tx, &DOOMED.stmt()).await?;
    for sql in [
        "DELETE FROM action_approvals WHERE action_id IN (SELECT action_id FROM action_purge_guard)",
        "DELETE FROM actions WHERE id IN (SELECT action_id FROM action_purge_guard)",
        "DELETE FROM action_purge_guard",
    ] {
        tx.change(&Stmt::new(sql)).await?;
    }
    let (kept_live,): (i64,) = tx
        .row(&Stmt::new("SELECT COUNT(*) FROM actions WHERE created_at < $1").int(before))
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    for a in &doomed {
        let ev = NewEvent {
            kind: "action.purged",
            entity_kind: "action",
            entity_id: &a.id,
            actor: "purge",
            channel: Channel::Cli,
            project: &a.project,
            session: &a.session,
            payload: json!({"status": a.status, "kind": a.kind}),
        };
        tx.append(now, &ev).await?;
    }
    Ok(PurgeReport {
        purged: doomed.into_iter().map(|a| a.id).collect(),
        audit_rows: 0,
        kept_live,
    })
}
