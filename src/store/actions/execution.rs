//! The execution half of the lifecycle: claim (`approved → executing`),
//! lease renewal, completion by the owner, and the polling wait that lets
//! losers and proposers see the result.
//!
//! The executor itself runs outside this module and outside any
//! transaction; here only the state changes happen.

use std::time::Duration;

use serde_json::{Value, json};

use super::codec;
use super::transitions::invalid;
use super::{Actor, ClaimOutcome, CompleteOutcome, Result, Settled, Status, load, record};
use crate::store::Channel;
use crate::store::Store;

impl Store {
    /// Claim an approved action for execution (`approved → executing`) as
    /// `owner`, holding it for `lease_ms`.
    pub async fn claim(&self, id: &str, owner: &str, lease_ms: i64) -> Result<ClaimOutcome> {
        if owner.trim().is_empty() || lease_ms <= 0 {
            return Err(invalid("a claim needs an owner id and a positive lease"));
        }
        let id = self.resolve_action_id(id).await?;
        self.retry_actions(|| self.claim_once(&id, owner, lease_ms))
            .await
    }

    async fn claim_once(&self, id: &str, owner: &str, lease_ms: i64) -> Result<ClaimOutcome> {
        let now = self.now();
        let mut tx = self.begin_write().await?;
        // Why guarded: of several executors (or a restart racing the original
        // process) exactly one moves it out of `approved`; the others see it
        // already executing.
        let res = sqlx::query(
            "UPDATE actions SET status = 'executing', owner = ?2, lease_until = ?3, attempts = attempts + 1, updated_at = ?4
             WHERE id = ?1 AND (status = 'approved' OR (?5 AND status = 'executing'))",
        )
        .bind(id)
        .bind(owner)
        .bind(now.saturating_add(lease_ms))
        .bind(now)
        .bind(crate::fault::on("double-claim")) // FAULT(double-claim)
        .execute(&mut *tx)
        .await?;
        let action = load(&mut tx, id).await?;
        if res.rows_affected() == 0 {
            return Ok(ClaimOutcome::NotClaimable { action });
        }
        let details = json!({
            "owner": owner,
            "lease_until": action.lease_until.map(crate::clock::format_rfc3339),
            "attempt": action.attempts,
        });
        record(
            &mut tx,
            now,
            &action,
            Actor {
                name: owner,
                channel: Channel::Cli,
            },
            "claimed",
            details,
        )
        .await?;
        tx.commit().await?;
        Ok(ClaimOutcome::Claimed { action })
    }

    /// Push the lease of an executing action to now + `lease_ms`. Only the
    /// owner may, and only while it is executing. Not a transition: no audit
    /// row. Returns whether the lease was extended.
    pub async fn extend_lease(&self, id: &str, owner: &str, lease_ms: i64) -> Result<bool> {
        let id = self.resolve_action_id(id).await?;
        self.retry_actions(|| async {
            let now = self.now();
            // Why guarded: a lease that recovery already turned into `unknown`
            // (or another owner's claim) must not be revived.
            let res = sqlx::query(
                "UPDATE actions SET lease_until = MAX(COALESCE(lease_until, 0), ?3)
                 WHERE id = ?1 AND status = 'executing' AND owner = ?2",
            )
            .bind(&id)
            .bind(owner)
            .bind(now.saturating_add(lease_ms))
            .execute(self.pool())
            .await?;
            Ok(res.rows_affected() == 1)
        })
        .await
    }

    /// Record the end of an execution: `executed` (success) or `failed`,
    /// with the result and error. Only the owner of an executing claim may.
    pub async fn complete(
        &self,
        id: &str,
        owner: &str,
        success: bool,
        result: Value,
        error: Option<&str>,
    ) -> Result<CompleteOutcome> {
        let id = self.resolve_action_id(id).await?;
        // Free text never stores a secret: the output tails and the error
        // are scrubbed of the action's secret values and `key=value`s
        // before they reach the row, the audit or an event. The arguments
        // are fixed once executing, so reading them first is stable.
        let action = self.get_action(&id).await?;
        let result = codec::canonical(&action.scrub_value(&result));
        let error = error.map(|e| action.scrub_text(e));
        self.retry_actions(|| self.complete_once(&id, owner, success, &result, error.as_deref()))
            .await
    }

    async fn complete_once(
        &self,
        id: &str,
        owner: &str,
        success: bool,
        result: &str,
        error: Option<&str>,
    ) -> Result<CompleteOutcome> {
        let now = self.now();
        let status = if success {
            Status::Executed
        } else {
            Status::Failed
        };
        let mut tx = self.begin_write().await?;
        // Why guarded: only the executor holding the claim reports; a stranger,
        // or an owner whose lapsed lease recovery already marked unknown, is refused.
        let res = sqlx::query(
            "UPDATE actions SET status = ?3, result = ?4, error = ?5, lease_until = NULL, updated_at = ?6
             WHERE id = ?1 AND status = 'executing' AND owner = ?2",
        )
        .bind(id)
        .bind(owner)
        .bind(status.as_str())
        .bind(result)
        .bind(error)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let action = load(&mut tx, id).await?;
        if res.rows_affected() == 0 {
            return Ok(CompleteOutcome::NotOwner { action });
        }
        let details = json!({
            "owner": owner,
            "result": action.result,
            "error": error,
        });
        record(
            &mut tx,
            now,
            &action,
            Actor {
                name: owner,
                channel: Channel::Cli,
            },
            status.as_str(),
            details,
        )
        .await?;
        tx.commit().await?;
        Ok(CompleteOutcome::Completed { action })
    }

    /// Poll (monotonic clock) until `done(status)` holds for the action's
    /// effective status, or `timeout` passes — then `StillRunning`, a status
    /// and not an error. A pending action whose expiry passes meanwhile is
    /// settled as expired on the way.
    pub async fn wait_action(
        &self,
        id: &str,
        timeout: Duration,
        done: impl Fn(Status) -> bool,
    ) -> Result<Settled> {
        let id = self.resolve_action_id(id).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            let mut action = self.get_action(&id).await?;
            if action.effective_status(self.now()) != action.status {
                self.retry_actions(|| async {
                    let mut tx = self.begin_write().await?;
                    super::recovery::expire_in(&mut tx, self.now(), Some(&id), None).await?;
                    tx.commit().await?;
                    Ok(())
                })
                .await?;
                action = self.get_action(&id).await?;
            }
            if done(action.status) {
                return Ok(Settled::Done { action });
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(Settled::StillRunning { action });
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }
}
