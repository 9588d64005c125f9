//! The execution half of the lifecycle: claim (`approved → executing`),
//! lease renewal, completion by the owner, and the polling wait that lets
//! losers and proposers see the result.
//!
//! The executor itself runs outside this module and outside any
//! transaction; here only the state changes happen.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::codec;
use super::logged::{Entry, logged};
use super::spelling::Sql;
use super::transitions::invalid;
use super::{Action, COLUMNS, ClaimOutcome, CompleteOutcome, Result, Settled, Status, one};
use crate::store::Store;
use crate::store::engine::Tx;

impl Store {
    /// Claim an approved action for execution (`approved → executing`) as
    /// `owner`, holding it for `lease_ms`.
    pub async fn claim(&self, id: &str, owner: &str, lease_ms: i64) -> Result<ClaimOutcome> {
        if owner.trim().is_empty() || lease_ms <= 0 {
            return Err(invalid("a claim needs an owner id and a positive lease"));
        }
        let c = Arc::new((self.write_target(id).await?, owner.to_string(), lease_ms));
        let won = self
            .write_with(c.clone(), |tx, c, now| Box::pin(claim_in(tx, c, now)))
            .await?;
        Ok(match won {
            Some(action) => ClaimOutcome::Claimed { action },
            None => ClaimOutcome::NotClaimable {
                action: self.get_action(&c.0).await?,
            },
        })
    }

    /// Push the lease of an executing action to now + `lease_ms`. Only the
    /// owner may, and only while it is executing. Not a transition: no audit
    /// row. Returns whether the lease was extended.
    pub async fn extend_lease(&self, id: &str, owner: &str, lease_ms: i64) -> Result<bool> {
        // Why through the write turn: a renewal straight on the pool met the
        // turn's writer at SQLite's file lock and slept in its busy handler.
        let id = self.write_target(id).await?;
        let renewal = Arc::new((id, owner.to_string()));
        Ok(self
            .write_with(renewal, move |mut tx, renewal, now| {
                Box::pin(async move {
                    // Why guarded: a lease that recovery already turned into
                    // `unknown` (or another owner's claim) must not be revived.
                    let (id, owner) = &*renewal;
                    let extend = EXTEND_LEASE
                        .stmt()
                        .text(id.as_str())
                        .text(owner.as_str())
                        .int(now.saturating_add(lease_ms));
                    Ok(tx.change(&extend).await? == 1)
                })
            })
            .await?)
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
        let action = self.get_action(id).await?;
        self.complete_claimed(&action, owner, success, result, error)
            .await
    }

    /// [`Store::complete`] for the executor holding the claimed action (as
    /// its claim returned it): no read before the write.
    pub async fn complete_claimed(
        &self,
        claimed: &Action,
        owner: &str,
        success: bool,
        result: Value,
        error: Option<&str>,
    ) -> Result<CompleteOutcome> {
        // Free text never stores a secret: the output tails and the error
        // are scrubbed of the action's secret values and `key=value`s
        // before they reach the row, the audit or an event. The arguments
        // are fixed once executing, so the claimed copy is current.
        let done = Arc::new(Completion {
            id: claimed.id.clone(),
            owner: owner.to_string(),
            status: if success {
                Status::Executed
            } else {
                Status::Failed
            },
            result: codec::canonical(&claimed.scrub_value(&result)),
            error: error.map(|e| claimed.scrub_text(e)),
        });
        let won = self
            .write_with(done.clone(), |mut tx, c, now| {
                Box::pin(async move {
                    let complete = COMPLETE
                        .stmt()
                        .text(c.id.as_str())
                        .text(c.owner.as_str())
                        .text(c.status.as_str())
                        .text(c.result.as_str())
                        .text(c.error.as_deref())
                        .int(now);
                    one(&mut tx, &complete).await
                })
            })
            .await?;
        Ok(match won {
            Some(action) => CompleteOutcome::Completed { action },
            None => CompleteOutcome::NotOwner {
                action: self.get_action(&done.id).await?,
            },
        })
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
        self.wait_action_pausing(id, timeout, done, tokio::time::sleep)
            .await
    }

    /// [`Store::wait_action`], pausing between reads with `pause(at_most)`,
    /// which may end early when something may have changed (a caller that
    /// hears of other processes' commits).
    pub async fn wait_action_pausing<F>(
        &self,
        id: &str,
        timeout: Duration,
        done: impl Fn(Status) -> bool,
        pause: impl Fn(Duration) -> F,
    ) -> Result<Settled>
    where
        F: std::future::Future<Output = ()>,
    {
        let id = self.resolve_action_id(id).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut step = Duration::from_millis(20);
        loop {
            let mut action = self.get_action(&id).await?;
            if action.effective_status(self.now()) != action.status {
                action = self.settle_expired(&id).await?;
            }
            if done(action.status) {
                return Ok(Settled::Done { action });
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(Settled::StillRunning { action });
            }
            pause(step.min(deadline - now)).await;
            step = (step * 2).min(Duration::from_millis(250));
        }
    }
}

/// A renewal (`$1` id, `$2` owner, `$3` the new end of the lease). Not a
/// transition: no audit row.
static EXTEND_LEASE: Sql = Sql::new(|s| {
    format!(
        "UPDATE actions SET lease_until = {}(COALESCE(lease_until, 0), $3)
         WHERE id = $1 AND status = 'executing' AND owner = $2",
        s.greatest
    )
});

/// A claim (`$1` id, `$2` owner, `$3` the end of the lease, `$4` now, `$5`
/// the double-claim fault, `$6` the skip-event fault, `$7` the end of the
/// lease as text). Why guarded: of several executors (or a restart racing
/// the original process) exactly one moves it out of `approved`; the
/// others see it already executing.
pub(super) static CLAIM: Sql = Sql::new(|s| {
    let details = s.object("'attempt', attempts, 'lease_until', $7, 'owner', $2");
    let entry = Entry {
        when: "$6 = 0",
        ..Entry::new("'claimed'", "$2", "'cli'", &details)
    };
    logged(
        s,
        "UPDATE actions SET status = 'executing', owner = $2, lease_until = $3,
             attempts = attempts + 1, updated_at = $4
         WHERE id = $1 AND (status = 'approved' OR ($5 AND status = 'executing'))",
        COLUMNS,
        &entry,
    )
});

/// Claim one action (id, owner, lease in ms): one guarded `UPDATE …
/// RETURNING` and its event, which is its audit entry, in one call.
/// The skip-event fault leaves the event (so the entry) out.
/// `None`: not claimable (the caller reads it, outside the write).
async fn claim_in(
    mut tx: Tx<'_>,
    c: Arc<(String, String, i64)>,
    now: i64,
) -> crate::store::Result<Option<Action>> {
    let (id, owner, lease_ms) = &*c;
    let lease_until = now.saturating_add(*lease_ms);
    let skip_event = crate::fault::on("skip-event"); // FAULT(skip-event)
    let until = crate::clock::format_rfc3339(lease_until);
    let claim = CLAIM
        .stmt()
        .text(id.as_str())
        .text(owner.as_str())
        .int(lease_until)
        .int(now)
        .bool(crate::fault::on("double-claim")) // FAULT(double-claim)
        .int(i64::from(skip_event))
        .text(until.as_str());
    one(&mut tx, &claim).await
}

/// One end of an execution to record.
struct Completion {
    id: String,
    owner: String,
    status: Status,
    /// The scrubbed result (canonical JSON).
    result: String,
    /// The scrubbed error, if any.
    error: Option<String>,
}

/// A completion (`$1` id, `$2` owner, `$3` executed or failed, `$4` the
/// result, `$5` the error, `$6` now). Why guarded: only the executor
/// holding the claim reports; a stranger, or an owner whose lapsed lease
/// recovery already marked unknown, is refused.
pub(super) static COMPLETE: Sql = Sql::new(|s| {
    let details = s.object(&format!(
        "'error', $5, 'owner', $2, 'result', {}",
        s.json("$4")
    ));
    logged(
        s,
        "UPDATE actions SET status = $3, result = $4, error = $5, lease_until = NULL,
             updated_at = $6
         WHERE id = $1 AND status = 'executing' AND owner = $2",
        COLUMNS,
        &Entry::new("$3", "$2", "'cli'", &details),
    )
});
