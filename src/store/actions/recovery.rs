//! The backward-looking transitions: expiry sweeps, crash recovery,
//! resolving `unknown` by hand, and retention (purge).
//!
//! Recovery never silently re-runs an interrupted execution: an `executing`
//! action whose lease ran out becomes `unknown` — unless the action carries
//! a verifier, which is asked first (executed / re-run / unknown). Only a
//! person ([`Store::resolve_unknown`]) or a verifier can choose a re-run.

use serde::Serialize;
use serde_json::json;
use sqlx::SqliteConnection;

use super::rules::Verdict;
use super::{Action, Actor, COLUMNS, Error, Result, from_row, load, record};
use crate::store::Channel;
use crate::store::Store;

/// How long recovery holds an interrupted action while its verifier runs.
const VERIFY_LEASE_MS: i64 = 120_000;

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
#[derive(Debug, Clone, Default, Serialize, PartialEq, schemars::JsonSchema)]
pub struct PurgeReport {
    /// Settled actions deleted together with their audit rows.
    pub purged: Vec<String>,
    /// Audit rows deleted with them.
    pub audit_rows: u64,
    /// Older actions kept because they are still live (or `unknown`).
    pub kept_live: i64,
}

/// In the caller's transaction, settle pending actions whose expiry has
/// passed (all, one `id`, or the holder of `dedup_key` in `project`),
/// writing audit rows and events. Returns the settled actions.
pub(crate) async fn expire_in(
    conn: &mut SqliteConnection,
    now: i64,
    id: Option<&str>,
    dedup_key: Option<(&str, &str)>,
) -> Result<Vec<Action>> {
    match dedup_key {
        Some((project, key)) => expire_matching(conn, now, id, Some(key), Some(project)).await,
        None => expire_matching(conn, now, id, None, None).await,
    }
}

/// [`expire_in`], optionally only for actions of `project`.
async fn expire_matching(
    conn: &mut SqliteConnection,
    now: i64,
    id: Option<&str>,
    dedup_key: Option<&str>,
    project: Option<&str>,
) -> Result<Vec<Action>> {
    // Why guarded: `status = 'pending'` makes concurrent sweeps (and a sweep
    // racing an approval) settle each action exactly once; `expires_at <= now`
    // is the exact complement of the approval CAS's `expires_at > now`.
    // Why t_*: the transition trigger appends each settled action's audit
    // row and event, so a sweep is one statement however many it settles
    // (the details as `format_rfc3339` writes them: milliseconds, `Z`).
    let sql = format!(
        "UPDATE actions SET
             status = CASE on_expire WHEN 'reject' THEN 'rejected' ELSE 'expired' END,
             decided_by = 'expiry', decided_at = ?1,
             reason = 'expired: nobody decided in time', updated_at = ?1,
             t_seq = t_seq + 1,
             t_event = CASE on_expire WHEN 'reject' THEN 'rejected' ELSE 'expired' END,
             t_actor = 'expiry', t_channel = 'daemon', t_patched = NULL,
             t_details = json_object(
                 'expires_at', strftime('%Y-%m-%dT%H:%M:%S', expires_at / 1000, 'unixepoch')
                     || printf('.%03dZ', expires_at % 1000),
                 'on_expire', on_expire)
         WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?1
           AND (?2 IS NULL OR id = ?2) AND (?3 IS NULL OR dedup_key = ?3)
           AND (?4 IS NULL OR project = ?4)
         RETURNING {COLUMNS}"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .bind(id)
        .bind(dedup_key)
        .bind(project)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter().map(from_row).collect()
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
        let clock = self.clock().clone();
        self.retry_actions(|| {
            let (project, clock) = (project.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move {
                    expire_matching(turn.conn(), clock.now_ms(), None, None, project.as_deref())
                        .await
                })
            })
        })
        .await
    }

    /// `executing` actions whose lease ran out, oldest first: what recovery
    /// ([`crate::programs::recover`]) settles.
    pub async fn lapsed(&self) -> Result<Vec<Action>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM actions WHERE status = 'executing' AND lease_until <= ? ORDER BY created_at"
        );
        let mut lapsed = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(self.now())
            .fetch_all(self.pool())
            .await?;
        if crate::fault::on("skip-recovery") {
            lapsed.clear(); // FAULT(skip-recovery)
        }
        lapsed.iter().map(from_row).collect()
    }

    /// A lapsed execution without a verifier becomes `unknown`: the side
    /// effect may or may not have happened, and a person must say. `None`
    /// when it is no longer lapsed (its executor renewed or finished).
    pub async fn lapse_to_unknown(&self, action: &Action) -> Result<Option<Action>> {
        let why = format!(
            "the executor {} stopped renewing its lease: the side effect may or may not have happened",
            action.owner.as_deref().unwrap_or("?")
        );
        self.mark_unknown(&action.id, None, &why).await
    }

    /// Approved actions nobody has claimed: safe to execute.
    pub async fn claimable(&self) -> Result<Vec<Action>> {
        // Only the approved rows are read: recovery runs on the daemon's
        // housekeeping cadence, and reading every action's arguments each
        // time would cost the whole table.
        let sql = format!(
            "SELECT {COLUMNS} FROM actions WHERE status = 'approved' ORDER BY created_at DESC, id DESC"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(from_row)
            .collect()
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
        let id = action.id.clone();
        let took = self
            .retry_actions(|| async {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                // Why guarded: of several recoverers exactly one takes over the
                // lapsed claim, so the verifier runs once.
                let res = sqlx::query(
                    "UPDATE actions SET owner = ?2, lease_until = ?3, updated_at = ?4
                     WHERE id = ?1 AND status = 'executing' AND lease_until <= ?4",
                )
                .bind(&id)
                .bind(&me)
                .bind(now + VERIFY_LEASE_MS)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                if res.rows_affected() == 0 {
                    return Ok(false);
                }
                let a = load(&mut tx, &id).await?;
                let details = json!({"previous_owner": action.owner, "verifier": argv});
                record(
                    &mut tx,
                    now,
                    &a,
                    Actor {
                        name: &me,
                        channel: Channel::Daemon,
                    },
                    "verifying",
                    details,
                )
                .await?;
                tx.commit().await?;
                Ok(true)
            })
            .await?;
        Ok(took.then_some(me))
    }

    /// Record a verifier's answer for the action the recoverer `me` holds:
    /// executed → completed, re-run → `approved`, unknown or no answer
    /// (`Err`, the reason) → `unknown`. `None` when `me` no longer holds it.
    pub async fn record_verdict(
        &self,
        id: &str,
        me: &str,
        verdict: &std::result::Result<Verdict, String>,
    ) -> Result<Option<Action>> {
        match verdict {
            Ok(Verdict::Executed) => {
                let out = self
                    .complete(id, me, true, json!({"verified": "executed"}), None)
                    .await?;
                Ok(match out {
                    super::CompleteOutcome::Completed { action } => Some(action),
                    _ => None,
                })
            }
            Ok(Verdict::Rerun) => {
                self.back_to_approved(id, me, "verifier: not executed, re-run")
                    .await
            }
            Ok(Verdict::Unknown) => {
                self.mark_unknown(id, Some(me), "the verifier answered unknown")
                    .await
            }
            Err(e) => {
                let why = format!("the verifier could not decide: {e}");
                self.mark_unknown(id, Some(me), &why).await
            }
        }
    }

    /// `executing` → `unknown`, either because the lease lapsed (`owner`
    /// None) or on behalf of the recoverer holding it.
    async fn mark_unknown(
        &self,
        id: &str,
        owner: Option<&str>,
        why: &str,
    ) -> Result<Option<Action>> {
        self.retry_actions(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            // `why` may carry a verifier's words: scrub them like any error.
            let why = load(&mut tx, id).await?.scrub_text(why);
            // Why guarded: the executor may have renewed its lease or completed
            // since we looked; then it is alive and this must not fire.
            let res = sqlx::query(
                "UPDATE actions SET status = 'unknown', error = ?3, lease_until = NULL, updated_at = ?4
                 WHERE id = ?1 AND status = 'executing'
                   AND ((?2 IS NULL AND lease_until <= ?4) OR owner = ?2)",
            )
            .bind(id)
            .bind(owner)
            .bind(&why)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            if res.rows_affected() == 0 {
                return Ok(None);
            }
            let a = load(&mut tx, id).await?;
            let details = json!({"owner": a.owner, "reason": why});
            record(&mut tx, now, &a, Actor { name: "recovery", channel: Channel::Daemon }, "unknown", details)
                .await?;
            tx.commit().await?;
            Ok(Some(a))
        })
        .await
    }

    /// `executing` (held by the verifier `owner`) → `approved` for a re-run.
    async fn back_to_approved(&self, id: &str, owner: &str, why: &str) -> Result<Option<Action>> {
        self.retry_actions(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            // Why guarded: only the recoverer that took over the claim may hand it back.
            let res = sqlx::query(
                "UPDATE actions SET status = 'approved', owner = NULL, lease_until = NULL, updated_at = ?3
                 WHERE id = ?1 AND status = 'executing' AND owner = ?2",
            )
            .bind(id)
            .bind(owner)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            if res.rows_affected() == 0 {
                return Ok(None);
            }
            let a = load(&mut tx, id).await?;
            let details = json!({"reason": why, "attempts": a.attempts});
            record(&mut tx, now, &a, Actor { name: owner, channel: Channel::Daemon }, "retry", details).await?;
            tx.commit().await?;
            Ok(Some(a))
        })
        .await
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
        let id = self.resolve_action_id(id).await?;
        self.retry_actions(|| async {
            let now = self.now();
            let (status, event) = match resolution {
                Resolution::Executed => ("executed", "executed"),
                Resolution::Failed => ("failed", "failed"),
                Resolution::Retry => ("approved", "retry"),
            };
            let mut tx = self.begin_write().await?;
            // Why guarded: only `unknown` waits for a person; any other state
            // (already resolved by someone else) stays as it is.
            let res = sqlx::query(
                "UPDATE actions SET status = ?2, owner = CASE WHEN ?2 = 'approved' THEN NULL ELSE owner END,
                     lease_until = NULL, reason = ?3, updated_at = ?4
                 WHERE id = ?1 AND status = 'unknown'",
            )
            .bind(&id)
            .bind(status)
            .bind(format!("resolved by {}: {status}", actor.name))
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let a = load(&mut tx, &id).await?;
            if res.rows_affected() == 0 {
                return Ok(Err(a));
            }
            let mut details = json!({"resolved_by": actor.name, "resolution": resolution});
            if resolution == Resolution::Retry {
                details["note"] =
                    json!("at-least-once: a person chose to run it again after an unknown outcome");
            }
            record(&mut tx, now, &a, actor, event, details).await?;
            tx.commit().await?;
            Ok(Ok(a))
        })
        .await
    }

    /// Delete settled actions (executed, failed, rejected, expired) last
    /// changed before `before`, with their approvals and audit rows, in one
    /// transaction. Live and `unknown` actions are kept (counted in
    /// `kept_live`). The only way an audit row ever disappears.
    pub async fn purge_actions(&self, before: i64) -> Result<PurgeReport> {
        self.retry_actions(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO action_purge_guard (action_id)
                 SELECT id FROM actions
                 WHERE updated_at < ? AND status IN ('executed','failed','rejected','expired')",
            )
            .bind(before)
            .execute(&mut *tx)
            .await?;
            let sql = format!(
                "SELECT {COLUMNS} FROM actions WHERE id IN (SELECT action_id FROM action_purge_guard)"
            );
            let doomed: Vec<Action> = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(from_row)
                .collect::<Result<_>>()?;
            // The delete trigger lets these through only because each id is in
            // the guard table *and* its action is settled.
            let audit = sqlx::query(
                "DELETE FROM action_audit WHERE action_id IN (SELECT action_id FROM action_purge_guard)",
            )
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "DELETE FROM action_approvals WHERE action_id IN (SELECT action_id FROM action_purge_guard)",
            )
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM actions WHERE id IN (SELECT action_id FROM action_purge_guard)")
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM action_purge_guard")
                .execute(&mut *tx)
                .await?;
            let kept_live: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM actions WHERE created_at < ?")
                    .bind(before)
                    .fetch_one(&mut *tx)
                    .await?;
            for a in &doomed {
                crate::store::events::append(
                    &mut tx,
                    now,
                    &crate::store::NewEvent {
                        kind: "action.purged",
                        entity_kind: "action",
                        entity_id: &a.id,
                        actor: "purge",
                        channel: Channel::Cli,
                        project: &a.project,
                        session: &a.session,
                        payload: json!({"status": a.status, "kind": a.kind}),
                    },
                )
                .await?;
            }
            tx.commit().await?;
            Ok(PurgeReport {
                purged: doomed.into_iter().map(|a| a.id).collect(),
                audit_rows: audit.rows_affected(),
                kept_live,
            })
        })
        .await
    }
}
