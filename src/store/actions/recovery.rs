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
use sqlx::SqliteConnection;

use super::rules::Verdict;
use super::{Action, Actor, COLUMNS, Error, Result, from_row};
use crate::store::postgres::action_moves as pg;
use crate::store::postgres::actions as pg_reads;
use crate::store::{Engine, Store};

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
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
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
        if let Engine::Postgres(p) = self.engine() {
            return pg::expire_due(self, p, project).await;
        }
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
        if let Engine::Postgres(p) = self.engine() {
            let mut lapsed = pg_reads::lapsed(p, self.now()).await?;
            if crate::fault::on("skip-recovery") {
                lapsed.clear(); // FAULT(skip-recovery)
            }
            return Ok(lapsed);
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM actions WHERE status = 'executing' AND lease_until <= ? ORDER BY created_at"
        );
        let mut lapsed = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(self.now())
            .fetch_all(self.pool()?)
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
        self.mark_unknown(action, None, &why).await
    }

    /// Approved actions nobody has claimed: safe to execute.
    pub async fn claimable(&self) -> Result<Vec<Action>> {
        // Only the approved rows are read: recovery runs on the daemon's
        // housekeeping cadence, and reading every action's arguments each
        // time would cost the whole table.
        if let Engine::Postgres(p) = self.engine() {
            return pg_reads::claimable(p).await;
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM actions WHERE status = 'approved' ORDER BY created_at DESC, id DESC"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(self.pool()?)
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
        let details = json!({"previous_owner": action.owner, "verifier": argv}).to_string();
        if let Engine::Postgres(p) = self.engine() {
            let sql = pg::take_for_verifier_sql();
            let took = pg::transition(
                self,
                p,
                sql,
                &action.id,
                Some(&me),
                &details,
                Some(VERIFY_LEASE_MS),
            )
            .await?;
            return Ok(took.map(|_| me));
        }
        // Why guarded: of several recoverers exactly one takes over the
        // lapsed claim, so the verifier runs once. The trigger appends the
        // `verifying` audit row and event in the same statement.
        let sql = format!(
            "UPDATE actions SET owner = ?2, lease_until = ?4 + ?5, updated_at = ?4,
                 t_seq = t_seq + 1, t_event = 'verifying', t_actor = ?2, t_channel = 'daemon',
                 t_patched = NULL, t_details = ?3
             WHERE id = ?1 AND status = 'executing' AND lease_until <= ?4
             RETURNING {COLUMNS}"
        );
        let took = self
            .one_transition(sql, &action.id, Some(&me), &details, VERIFY_LEASE_MS)
            .await?;
        Ok(took.map(|_| me))
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
        if let Engine::Postgres(p) = self.engine() {
            let sql = pg::mark_unknown_sql();
            return pg::transition(self, p, sql, &action.id, owner, &why, None).await;
        }
        // Why guarded: the executor may have renewed its lease or completed
        // since we looked; then it is alive and this must not fire.
        let sql = format!(
            "UPDATE actions SET status = 'unknown', error = ?3, lease_until = NULL, updated_at = ?4,
                 t_seq = t_seq + 1, t_event = 'unknown', t_actor = 'recovery', t_channel = 'daemon',
                 t_patched = NULL, t_details = json_object('owner', owner, 'reason', ?3)
             WHERE id = ?1 AND status = 'executing'
               AND ((?2 IS NULL AND lease_until <= ?4) OR owner = ?2)
             RETURNING {COLUMNS}"
        );
        self.one_transition(sql, &action.id, owner, &why, 0).await
    }

    /// `executing` (held by the verifier `owner`) → `approved` for a re-run.
    async fn back_to_approved(&self, id: &str, owner: &str, why: &str) -> Result<Option<Action>> {
        // Why guarded: only the recoverer that took over the claim may hand it back.
        if let Engine::Postgres(p) = self.engine() {
            let sql = pg::back_to_approved_sql();
            return pg::transition(self, p, sql, id, Some(owner), why, None).await;
        }
        let sql = format!(
            "UPDATE actions SET status = 'approved', owner = NULL, lease_until = NULL, updated_at = ?4,
                 t_seq = t_seq + 1, t_event = 'retry', t_actor = ?2, t_channel = 'daemon',
                 t_patched = NULL, t_details = json_object('attempts', attempts, 'reason', ?3)
             WHERE id = ?1 AND status = 'executing' AND owner = ?2
             RETURNING {COLUMNS}"
        );
        self.one_transition(sql, id, Some(owner), why, 0).await
    }

    /// Run one guarded `UPDATE … RETURNING` of a recovery transition in the
    /// write turn, its audit row and event appended by the transition
    /// trigger in that statement: `?1` the action id, `?2` the owner or
    /// actor, `?3` a text (a reason, the details), `?4` now, `?5` a number
    /// of ms. `None` when the guard matched nothing.
    async fn one_transition(
        &self,
        sql: String,
        id: &str,
        who: Option<&str>,
        text: &str,
        ms: i64,
    ) -> Result<Option<Action>> {
        let args = Arc::new((
            sql,
            id.to_string(),
            who.map(str::to_string),
            text.to_string(),
        ));
        let clock = self.clock().clone();
        self.retry_actions(|| {
            let (args, clock) = (args.clone(), clock.clone());
            self.write(move |turn| {
                Box::pin(async move {
                    let (sql, id, who, text) = &*args;
                    let row = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                        .bind(id)
                        .bind(who)
                        .bind(text)
                        .bind(clock.now_ms())
                        .bind(ms)
                        .fetch_optional(turn.conn())
                        .await
                        .map_err(crate::store::Error::from)?;
                    row.as_ref().map(from_row).transpose()
                })
            })
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
        // Why guarded: only `unknown` waits for a person; any other state
        // (already resolved by someone else) stays as it is. The status,
        // event and channel are fixed words, written into the statement.
        let sql = format!(
            "UPDATE actions SET status = '{status}',
                 owner = CASE WHEN '{status}' = 'approved' THEN NULL ELSE owner END,
                 lease_until = NULL, reason = 'resolved by ' || ?2 || ': {status}', updated_at = ?4,
                 t_seq = t_seq + 1, t_event = '{event}', t_actor = ?2, t_channel = '{channel}',
                 t_patched = NULL, t_details = ?3
             WHERE id = ?1 AND status = 'unknown'
             RETURNING {COLUMNS}",
            channel = actor.channel.as_str(),
        );
        let won = match self.engine() {
            Engine::Postgres(p) => {
                let sql = pg::resolve_unknown_sql(status, event, actor.channel.as_str());
                pg::transition(
                    self,
                    p,
                    sql,
                    &id,
                    Some(actor.name),
                    &details.to_string(),
                    None,
                )
                .await?
            }
            Engine::Sqlite(_) => {
                self.one_transition(sql, &id, Some(actor.name), &details.to_string(), 0)
                    .await?
            }
        };
        Ok(match won {
            Some(a) => Ok(a),
            None => Err(self.get_action(&id).await?),
        })
    }

    /// Delete settled actions (executed, failed, rejected, expired) last
    /// changed before `before`, with their approvals and audit rows, in one
    /// transaction. Live and `unknown` actions are kept (counted in
    /// `kept_live`). The only way an audit row ever disappears.
    pub async fn purge_actions(&self, before: i64) -> Result<PurgeReport> {
        if let Engine::Postgres(p) = self.engine() {
            return pg_reads::purge(self, p, before).await;
        }
        self.retry_actions(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            let report = purge_in(&mut tx, before, now).await?;
            tx.commit().await?;
            Ok(report)
        })
        .await
    }
}

/// The purge's statements after the caller took its lock, defining
/// `purge_in(conn, before, now)` on `$conn` (one engine's connection
/// type) in the module that invokes it; `$append` appends an event on it.
/// Why a macro: the two connection types differ, the statements and the
/// Rust around them do not, but for how the guard rows are inserted
/// (`guard`, `$1` the cutoff: PostgreSQL lets a racing purge's rows be,
/// SQLite's write lock leaves none).
macro_rules! purge_statements {
    ($conn:ty, guard: $guard:expr, append: $append:path $(,)?) => {
        async fn purge_in(
            conn: &mut $conn,
            before: i64,
            now: i64,
        ) -> $crate::store::actions::Result<$crate::store::actions::PurgeReport> {
            use $crate::store::actions::{Action, COLUMNS, from_row};
            sqlx::query($guard)
                .bind(before)
                .execute(&mut *conn)
                .await?;
            let sql = format!(
                "SELECT {COLUMNS} FROM actions WHERE id IN (SELECT action_id FROM action_purge_guard)"
            );
            let doomed: Vec<Action> = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(&mut *conn)
                .await?
                .iter()
                .map(from_row)
                .collect::<$crate::store::actions::Result<_>>()?;
            // The delete trigger lets these through only because each id is
            // in the guard table *and* its action is settled.
            let audit = sqlx::query(
                "DELETE FROM action_audit WHERE action_id IN (SELECT action_id FROM action_purge_guard)",
            )
            .execute(&mut *conn)
            .await?;
            for sql in [
                "DELETE FROM action_approvals WHERE action_id IN (SELECT action_id FROM action_purge_guard)",
                "DELETE FROM actions WHERE id IN (SELECT action_id FROM action_purge_guard)",
                "DELETE FROM action_purge_guard",
            ] {
                sqlx::query(sql).execute(&mut *conn).await?;
            }
            let kept_live: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM actions WHERE created_at < $1")
                    .bind(before)
                    .fetch_one(&mut *conn)
                    .await?;
            for a in &doomed {
                let ev = $crate::store::NewEvent {
                    kind: "action.purged",
                    entity_kind: "action",
                    entity_id: &a.id,
                    actor: "purge",
                    channel: $crate::store::Channel::Cli,
                    project: &a.project,
                    session: &a.session,
                    payload: serde_json::json!({"status": a.status, "kind": a.kind}),
                };
                $append(&mut *conn, now, &ev).await?;
            }
            Ok($crate::store::actions::PurgeReport {
                purged: doomed.into_iter().map(|a| a.id).collect(),
                audit_rows: audit.rows_affected(),
                kept_live,
            })
        }
    };
}
pub(crate) use purge_statements;

purge_statements!(
    SqliteConnection,
    guard: "INSERT INTO action_purge_guard (action_id)
         SELECT id FROM actions
         WHERE updated_at < $1 AND status IN ('executed','failed','rejected','expired')",
    append: crate::store::events::append,
);
