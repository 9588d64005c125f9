//! Durable wake-up deliveries: one row per (event, target) with a status
//! `pending → delivering → delivered | dead`, plus disabled targets.
//!
//! The notify worker enqueues rows as it follows the event log (a replayed
//! event is a no-op thanks to `UNIQUE(event_seq, target_key)`), claims due
//! rows with a guarded UPDATE that takes a lease, runs the target outside any
//! transaction, then records the outcome guarded by the claim's attempt
//! number. This module records; it never runs a target. Inbound wakes are
//! recorded by [`Store::record_wake`] (in `sessions::wake`).

use crate::store::cols::{Cols, rows_by};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::json;

use super::engine::{Stmt, Tx};
use super::sessions::WakeTarget;
use super::writer::{Turn, one_call};
use super::{Channel, Error, Event, NewEvent, Result, Store, events};

/// A delivery of one event to one target.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Delivery {
    /// The delivery's row id (its order of creation).
    pub id: i64,
    /// The event being delivered.
    pub event_seq: i64,
    /// Identity of the target (`<kind>:<hash>`), shared by every event sent to it.
    pub target_key: String,
    /// Where the target came from: `session` or `rule:<name>`.
    pub origin: String,
    /// The target as resolved when the event was enqueued.
    pub target: WakeTarget,
    /// `pending`, `delivering`, `delivered` or `dead`.
    pub status: String,
    /// Attempts started so far (also the claim token of the current attempt).
    pub attempts: i64,
    /// When the next attempt is due.
    #[serde(with = "crate::clock::Timestamp")]
    pub next_attempt_at: i64,
    /// How long one attempt may hold the row before it counts as crashed.
    pub lease_ms: i64,
    /// While delivering: when the lease lapses.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub lease_until: Option<i64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When the event was enqueued for this target.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Last changed.
    #[serde(with = "crate::clock::Timestamp")]
    pub updated_at: i64,
}

/// A delivery about to be enqueued.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDelivery {
    /// Identity of the target (`<kind>:<hash>`).
    pub target_key: String,
    /// `session` or `rule:<name>`.
    pub origin: String,
    /// Where to deliver it: the session's wake target or a `[[notify]]` rule.
    pub target: WakeTarget,
    /// How long one attempt may hold the row.
    pub lease_ms: i64,
}

/// Map a `deliveries` row, of either engine (text and 64-bit integers on both).
fn from_row(r: &impl Cols) -> Result<Delivery> {
    let target: String = r.try_get("target")?;
    Ok(Delivery {
        id: r.try_get("id")?,
        event_seq: r.try_get("event_seq")?,
        target_key: r.try_get("target_key")?,
        origin: r.try_get("origin")?,
        target: serde_json::from_str(&target)
            .map_err(|e| Error::Corrupt(format!("delivery target: {e}")))?,
        status: r.try_get("status")?,
        attempts: r.try_get("attempts")?,
        next_attempt_at: r.try_get("next_attempt_at")?,
        lease_ms: r.try_get("lease_ms")?,
        lease_until: r.try_get("lease_until")?,
        last_error: r.try_get("last_error")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

// A stored delivery, on either engine.
rows_by!(Delivery, from_row);

/// Enqueue one target for an event unless it is enqueued already or disabled.
const ENQUEUE: &str = "INSERT INTO deliveries
        (event_seq, target_key, origin, target, next_attempt_at, lease_ms, created_at, updated_at)
     SELECT $1, $2, $3, $4, $5, $6, $7, $7
     WHERE NOT EXISTS (SELECT 1 FROM disabled_targets WHERE target_key = $2)
     ON CONFLICT (event_seq, target_key) DO NOTHING";

/// Claim due rows. Why guarded: two workers (two daemons on one database)
/// may pick the same ids; `status = 'pending'` in the outer predicate
/// lets exactly one of them flip each row. On PostgreSQL the due rows are
/// picked `FOR UPDATE SKIP LOCKED`, so two daemons claiming at once take
/// different rows instead of the second waiting for the first and then
/// finding its picks taken; and the pick is a CTE of its own, because as
/// `id IN (… LIMIT n FOR UPDATE)` inside the UPDATE PostgreSQL may run the
/// subquery more than once and claim more than `n` rows (a test caught 3
/// claimed for a limit of 1): a locking CTE runs once. `$2` NULL: no limit.
const CLAIM_LITE: &str = "UPDATE deliveries
        SET status = 'delivering', attempts = attempts + 1,
            lease_until = $1 + lease_ms, updated_at = $1
      WHERE status = 'pending' AND next_attempt_at <= $1
        AND id IN (SELECT id FROM deliveries
                    WHERE status = 'pending' AND next_attempt_at <= $1
                    ORDER BY next_attempt_at, id LIMIT COALESCE($2, -1))
      RETURNING *";
const CLAIM_PG: &str = "WITH picked AS (
         SELECT id FROM deliveries
          WHERE status = 'pending' AND next_attempt_at <= $1
          ORDER BY next_attempt_at, id LIMIT $2
          FOR UPDATE SKIP LOCKED
     ), claimed AS (
         UPDATE deliveries d
            SET status = 'delivering', attempts = d.attempts + 1,
                lease_until = $1 + d.lease_ms, updated_at = $1
           FROM picked
          WHERE d.id = picked.id AND d.status = 'pending' AND d.next_attempt_at <= $1
          RETURNING d.*)
     SELECT * FROM claimed ORDER BY next_attempt_at, id";

impl Store {
    /// Enqueue `event_seq` for each target, first attempt due at
    /// `now + first_delay_ms`. Targets already enqueued for this event, and
    /// disabled targets, are skipped, so replaying an event is a no-op.
    /// Returns how many rows were inserted.
    pub async fn enqueue_deliveries(
        &self,
        event_seq: i64,
        targets: &[NewDelivery],
        first_delay_ms: i64,
    ) -> Result<u64> {
        if targets.is_empty() {
            return Ok(0);
        }
        let mut rows = Vec::with_capacity(targets.len());
        for t in targets {
            let target = serde_json::to_string(&t.target)
                .map_err(|e| Error::Invalid(format!("wake target: {e}")))?;
            rows.push((t.target_key.clone(), t.origin.clone(), target, t.lease_ms));
        }
        self.write_with(Arc::new(rows), move |mut tx, rows, now| {
            Box::pin(async move {
                if rows.len() > 1 {
                    tx.begin().await?;
                }
                let mut inserted = 0;
                for (target_key, origin, target, lease_ms) in rows.iter() {
                    let insert = Stmt::new(ENQUEUE)
                        .int(event_seq)
                        .text(target_key.as_str())
                        .text(origin.as_str())
                        .text(target.as_str())
                        .int(now + first_delay_ms)
                        .int(*lease_ms)
                        .int(now);
                    inserted += tx.change(&insert).await?;
                }
                Ok(inserted)
            })
        })
        .await
    }

    /// Claim up to `limit` due deliveries (all due ones when negative):
    /// `pending` and due → `delivering` with a lease, `attempts + 1`, in
    /// the order they fell due. The returned rows carry the new attempt
    /// number, which guards the outcome write.
    pub async fn claim_deliveries(&self, limit: i64) -> Result<Vec<Delivery>> {
        let limit = (limit >= 0).then_some(limit);
        self.write_with((), move |mut tx, (), now| {
            Box::pin(async move {
                let claim = Stmt::spelled(CLAIM_LITE, CLAIM_PG).int(now).int(limit);
                tx.rows(&claim).await
            })
        })
        .await
    }

    /// Record that the claimed attempt delivered. False when the claim was
    /// lost (the lease lapsed and another attempt took the row).
    pub async fn delivery_delivered(&self, d: &Delivery) -> Result<bool> {
        let (id, attempts) = (d.id, d.attempts);
        self.write_with((), move |mut tx, (), now| {
            Box::pin(async move {
                // Why guarded by attempts: only the attempt that holds the
                // claim may settle the row.
                let delivered = Stmt::new(
                    "UPDATE deliveries SET status = 'delivered', lease_until = NULL, last_error = NULL,
                            updated_at = $1
                      WHERE id = $2 AND status = 'delivering' AND attempts = $3",
                )
                .int(now)
                .int(id)
                .int(attempts);
                Ok(tx.change(&delivered).await? == 1)
            })
        })
        .await
    }

    /// Put the claimed attempt back to `pending`, due at `next_at`, with
    /// the error that made it fail. False when the claim was lost.
    pub async fn delivery_retry(&self, d: &Delivery, next_at: i64, error: &str) -> Result<bool> {
        let (id, attempts) = (d.id, d.attempts);
        self.write_with(Arc::new(error.to_string()), move |mut tx, error, now| {
            Box::pin(async move {
                // Why guarded by attempts: a stale attempt must not
                // reschedule a row another attempt now holds.
                let retry = Stmt::new(
                    "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, lease_until = NULL,
                            last_error = $2, updated_at = $3
                      WHERE id = $4 AND status = 'delivering' AND attempts = $5",
                )
                .int(next_at)
                .text(error.as_str())
                .int(now)
                .int(id)
                .int(attempts);
                Ok(tx.change(&retry).await? == 1)
            })
        })
        .await
    }

    /// Give up on the claimed attempt's delivery: `dead` with `error`, and a
    /// `delivery.dead` event about the item of `ev` (so the chat that showed
    /// the item tells the human). With `disable`, the target is recorded as
    /// disabled and its other pending deliveries die too. False when the
    /// claim was lost.
    pub async fn delivery_dead(
        &self,
        d: &Delivery,
        ev: &Event,
        error: &str,
        disable: bool,
    ) -> Result<bool> {
        let payload = json!({
            "delivery_id": d.id,
            "event_seq": d.event_seq,
            "event_type": ev.kind,
            "target": crate::store::sessions::target_kind(&d.target),
            "origin": d.origin,
            "attempts": d.attempts,
            "error": error,
            "disabled": disable,
        });
        events::check_depth(&payload)?;
        let input = Arc::new((d.clone(), ev.clone(), error.to_string(), payload, disable));
        self.write_split(input, dead_in_one_call, |conn, input, now| {
            dead_step_by_step(Tx::Pg(conn), input, now)
        })
        .await
    }

    /// Deliveries whose attempt crashed (lease lapsed while `delivering`)
    /// go back to `pending`, due now: at-least-once, with the same event id.
    /// Returns how many were recovered.
    pub async fn recover_deliveries(&self) -> Result<u64> {
        self.write_with((), move |mut tx, (), now| {
            Box::pin(async move {
                // Why guarded by the lease: a live attempt keeps its row;
                // only a lapsed one (its worker died) is handed out again.
                let recover = Stmt::new(
                    "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, lease_until = NULL,
                            last_error = COALESCE(last_error, 'interrupted (the daemon stopped mid-delivery)'),
                            updated_at = $1
                      WHERE status = 'delivering' AND lease_until <= $1",
                )
                .int(now);
                tx.change(&recover).await
            })
        })
        .await
    }

    /// The earliest time the delivery worker has something to do: a pending
    /// delivery falling due or a lease lapsing. A read, so an idle worker
    /// polls without taking the write lock.
    pub async fn next_delivery_work(&self) -> Result<Option<i64>> {
        self.first(Stmt::new(
            "SELECT MIN(CASE status WHEN 'pending' THEN next_attempt_at ELSE lease_until END)
               FROM deliveries WHERE status IN ('pending', 'delivering')",
        ))
        .await
    }

    /// Every delivery of one event, oldest first.
    pub async fn deliveries_of_event(&self, event_seq: i64) -> Result<Vec<Delivery>> {
        self.deliveries_where(Some(event_seq)).await
    }

    /// Every delivery, oldest first (diagnostics and tests).
    pub async fn all_deliveries(&self) -> Result<Vec<Delivery>> {
        self.deliveries_where(None).await
    }

    /// Deliveries, oldest first: of one event, or all.
    async fn deliveries_where(&self, event_seq: Option<i64>) -> Result<Vec<Delivery>> {
        self.rows(
            Stmt::new(
                "SELECT * FROM deliveries
                  WHERE (CAST($1 AS BIGINT) IS NULL OR event_seq = $1) ORDER BY id",
            )
            .int(event_seq),
        )
        .await
    }

    /// Why `target_key` is disabled, if it is.
    pub async fn target_disabled(&self, target_key: &str) -> Result<Option<String>> {
        let reason: Option<(String,)> = self
            .row(
                Stmt::new("SELECT reason FROM disabled_targets WHERE target_key = $1")
                    .text(target_key),
            )
            .await?;
        Ok(reason.map(|(r,)| r))
    }

    /// The event with this `seq`.
    pub async fn event_at(&self, seq: i64) -> Result<Option<Event>> {
        Ok(self
            .events_after(seq - 1, 1)
            .await?
            .into_iter()
            .find(|e| e.seq == seq))
    }
}

/// What giving up writes: the delivery, the event it carried, the error,
/// the `delivery.dead` payload and whether to disable the target.
type Dead = Arc<(Delivery, Event, String, serde_json::Value, bool)>;

/// [`Store::delivery_dead`] on SQLite: one call, all or nothing. Why
/// guarded by attempts: as for the other outcomes. The event is written
/// only when the guard changed the row (`changes()` right after it);
/// disabling the target, and the death of its other pending deliveries,
/// follow only when this call's own write stands (the row dead at this
/// attempt, this time, with this error) — both are idempotent, and only
/// pending rows die: a row another attempt holds settles through its own
/// guarded write.
fn dead_in_one_call(turn: &mut Turn, input: Dead, now: i64) -> BoxFuture<'_, Result<bool>> {
    Box::pin(async move {
        let (d, ev, error, payload, disable) = &*input;
        let sql = one_call(
            "UPDATE deliveries SET status = 'dead', lease_until = NULL, last_error = ?1,
                    updated_at = ?2
              WHERE id = ?3 AND status = 'delivering' AND attempts = ?4
              RETURNING id;
             INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
             SELECT ?2, 'delivery.dead', ?7, ?8, 'notify', 'daemon', ?9, ?10, ?11
              WHERE changes() = 1;
             INSERT INTO disabled_targets (target_key, reason, disabled_at)
             SELECT ?5, ?1, ?2 WHERE ?6 AND EXISTS (SELECT 1 FROM deliveries
                  WHERE id = ?3 AND status = 'dead' AND attempts = ?4
                    AND updated_at = ?2 AND last_error = ?1)
              ON CONFLICT (target_key) DO NOTHING;
             UPDATE deliveries SET status = 'dead', last_error = 'target disabled: ' || ?1,
                    updated_at = ?2
              WHERE ?6 AND target_key = ?5 AND status = 'pending'
                AND EXISTS (SELECT 1 FROM deliveries
                  WHERE id = ?3 AND status = 'dead' AND attempts = ?4
                    AND updated_at = ?2 AND last_error = ?1)",
        );
        let q = sqlx::query(sql)
            .bind(error)
            .bind(now)
            .bind(d.id)
            .bind(d.attempts)
            .bind(&d.target_key)
            .bind(*disable)
            .bind(&ev.entity_kind)
            .bind(&ev.entity_id)
            .bind(&ev.project)
            .bind(&ev.session)
            .bind(payload.to_string());
        let rows = turn.savepoint_call(q).await?;
        Ok(!rows.is_empty())
    })
}

/// [`Store::delivery_dead`] on PostgreSQL: the guarded UPDATE returning a
/// row says this attempt's write stands, and the rest follows in the same
/// transaction, the `delivery.dead` event last (the event counter's row
/// stays locked until commit).
fn dead_step_by_step(mut tx: Tx<'_>, input: Dead, now: i64) -> BoxFuture<'_, Result<bool>> {
    Box::pin(async move {
        let (d, ev, error, payload, disable) = &*input;
        let dead = Stmt::new(
            "UPDATE deliveries SET status = 'dead', lease_until = NULL, last_error = $1,
                    updated_at = $2
              WHERE id = $3 AND status = 'delivering' AND attempts = $4",
        )
        .text(error.as_str())
        .int(now)
        .int(d.id)
        .int(d.attempts);
        if tx.change(&dead).await? != 1 {
            return Ok(false);
        }
        if *disable {
            let disabled = Stmt::new(
                "INSERT INTO disabled_targets (target_key, reason, disabled_at)
                 VALUES ($1, $2, $3) ON CONFLICT (target_key) DO NOTHING",
            )
            .text(d.target_key.as_str())
            .text(error.as_str())
            .int(now);
            tx.change(&disabled).await?;
            // Only pending rows die: a row another attempt holds settles
            // through its own guarded write.
            let others = Stmt::new(
                "UPDATE deliveries SET status = 'dead', last_error = 'target disabled: ' || $1,
                        updated_at = $2
                  WHERE target_key = $3 AND status = 'pending'",
            )
            .text(error.as_str())
            .int(now)
            .text(d.target_key.as_str());
            tx.change(&others).await?;
        }
        let event = NewEvent {
            kind: "delivery.dead",
            entity_kind: &ev.entity_kind,
            entity_id: &ev.entity_id,
            actor: "notify",
            channel: Channel::Daemon,
            project: &ev.project,
            session: &ev.session,
            payload: payload.clone(),
        };
        tx.append(now, &event).await?;
        Ok(true)
    })
}
