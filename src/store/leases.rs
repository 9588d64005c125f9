//! Jobs only one daemon may do at a time, when several share one database
//!, and the Telegram updates some daemon has taken.
//!
//! A lease is a row naming its holder and when it lapses. [`Store::lease_take`]
//! is one guarded upsert: it takes a lease nobody holds or whose holder let
//! it lapse, and renews one this holder has; it never takes a live lease
//! from another holder. So a crashed holder's job moves on within one lease
//! period, and two live daemons never hold the same lease at once (each
//! holder stops the job when its own copy of the expiry passes without a
//! renewal, before anyone else may take it).
//!
//! Leases are not events: no follower needs them, and a renewal every few
//! seconds must not grow the log.

use std::sync::Arc;

use super::engine::Stmt;
use super::{Result, Store};

/// Take a lease that is free or lapsed, or renew this holder's; no row
/// when another holder's is live. Why `taken_at` is kept on a renewal:
/// /healthz shows since when this daemon holds the job, not since its
/// last renewal. The same text runs on both engines.
const TAKE: &str = "INSERT INTO leases (name, holder, expires_at, taken_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (name) DO UPDATE SET
         holder = excluded.holder,
         expires_at = excluded.expires_at,
         taken_at = CASE WHEN leases.holder = excluded.holder
                         THEN leases.taken_at ELSE excluded.taken_at END
     WHERE leases.holder = excluded.holder OR leases.expires_at <= $4
     RETURNING expires_at";

/// Take a lease from a holder known dead; no row when it holds it no more.
const TAKE_FROM: &str = "UPDATE leases SET holder = $2, expires_at = $3, taken_at = $4
     WHERE name = $1 AND holder = $5
     RETURNING expires_at";

const RELEASE: &str = "DELETE FROM leases WHERE name = $1 AND holder = $2";

const HOLDERS: &str = "SELECT name, holder, expires_at, taken_at FROM leases ORDER BY name";

/// Take an update nobody took, or one whose take was left unfinished
/// (`done_at` unset) for `$4` ms or more: its handler died with its daemon.
const TAKE_UPDATE: &str =
    "INSERT INTO chat_updates (update_id, holder, taken_at) VALUES ($1, $2, $3)
     ON CONFLICT (update_id) DO UPDATE SET holder = excluded.holder, taken_at = excluded.taken_at
     WHERE chat_updates.done_at IS NULL AND chat_updates.taken_at <= $3 - $4";

/// Take an unfinished update from a taker known dead.
const TAKE_UPDATE_FROM: &str = "UPDATE chat_updates SET holder = $2, taken_at = $3
     WHERE update_id = $1 AND holder = $4 AND done_at IS NULL";

const UPDATE_DONE: &str =
    "UPDATE chat_updates SET done_at = $3 WHERE update_id = $1 AND holder = $2";

const UPDATE_TAKER: &str =
    "SELECT holder FROM chat_updates WHERE update_id = $1 AND done_at IS NULL";

const FORGET_UPDATES: &str = "DELETE FROM chat_updates WHERE taken_at < $1";

/// How long a Telegram update id is remembered: Telegram keeps an
/// unconfirmed update for at most 24 hours, so none comes back after that.
const KEEP_UPDATES_MS: i64 = 24 * 3600 * 1000;

/// Who holds a lease, as [`Store::lease_holders`] reads it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Lease {
    /// The job, e.g. `telegram.poll`.
    pub name: String,
    /// The daemon holding it (its instance name).
    pub holder: String,
    /// When it lapses unless renewed (ms).
    pub expires_at: i64,
    /// When this holder took it (ms; renewals keep it).
    pub taken_at: i64,
}

impl Store {
    /// Take or renew the lease `name` for `holder` until now + `ttl_ms`:
    /// the new expiry when `holder` holds it after this call, `None` when
    /// another holder's lease is still live. One statement, so two
    /// daemons taking a lapsed lease at once cannot both win.
    pub async fn lease_take(&self, name: &str, holder: &str, ttl_ms: i64) -> Result<Option<i64>> {
        let input = Arc::new((name.to_string(), holder.to_string()));
        self.write_with(input, move |mut tx, input, now| {
            Box::pin(async move {
                let (name, holder) = &*input;
                let take = Stmt::new(TAKE)
                    .text(name.as_str())
                    .text(holder.as_str())
                    .int(now + ttl_ms)
                    .int(now);
                Ok(tx.row::<(i64,)>(&take).await?.map(|(until,)| until))
            })
        })
        .await
    }

    /// Take the lease `name` from `dead`, a holder known to have died (a
    /// daemon on this host whose process is gone), without waiting for it
    /// to lapse: the new expiry, or `None` when `dead` no longer holds it
    /// (someone else took it first).
    pub async fn lease_take_from(
        &self,
        name: &str,
        holder: &str,
        dead: &str,
        ttl_ms: i64,
    ) -> Result<Option<i64>> {
        let input = Arc::new((name.to_string(), holder.to_string(), dead.to_string()));
        self.write_with(input, move |mut tx, input, now| {
            Box::pin(async move {
                let (name, holder, dead) = &*input;
                let take = Stmt::new(TAKE_FROM)
                    .text(name.as_str())
                    .text(holder.as_str())
                    .int(now + ttl_ms)
                    .int(now)
                    .text(dead.as_str());
                Ok(tx.row::<(i64,)>(&take).await?.map(|(until,)| until))
            })
        })
        .await
    }

    /// Give up the lease `name` if `holder` holds it (a clean shutdown), so
    /// another daemon takes the job at its next try instead of after the
    /// lease lapses. False when `holder` did not hold it.
    pub async fn lease_release(&self, name: &str, holder: &str) -> Result<bool> {
        let gone = Stmt::new(RELEASE).text(name).text(holder);
        Ok(self.change(gone).await? == 1)
    }

    /// Every lease row, by name (lapsed ones too: their `expires_at` says so).
    pub async fn lease_holders(&self) -> Result<Vec<Lease>> {
        let rows: Vec<(String, String, i64, i64)> = self.rows(Stmt::new(HOLDERS)).await?;
        Ok(rows
            .into_iter()
            .map(|(name, holder, expires_at, taken_at)| Lease {
                name,
                holder,
                expires_at,
                taken_at,
            })
            .collect())
    }

    /// Claim Telegram update `update_id` for `holder`: true for the first
    /// claim, false when some daemon (this one included) took it before
    /// and either finished it ([`Store::chat_update_done`]) or took it less
    /// than `stale_ms` ago. Claimed on receipt, before the update writes
    /// anything, so two daemons never both apply it; a take whose daemon
    /// died mid-update is taken again when the update comes back (a new
    /// poller, a webhook retry), by then or at once by a daemon that knows
    /// the taker is gone ([`Store::chat_update_take_from`]).
    pub async fn chat_update_take(
        &self,
        update_id: i64,
        holder: &str,
        stale_ms: i64,
    ) -> Result<bool> {
        let input = Arc::new(holder.to_string());
        self.write_with(input, move |mut tx, holder, now| {
            Box::pin(async move {
                let take = Stmt::new(TAKE_UPDATE)
                    .int(update_id)
                    .text(holder.as_str())
                    .int(now)
                    .int(stale_ms);
                Ok(tx.change(&take).await? == 1)
            })
        })
        .await
    }

    /// Who took update `update_id` and has not finished it, if anyone.
    pub async fn chat_update_taker(&self, update_id: i64) -> Result<Option<String>> {
        let taker: Option<(String,)> = self.row(Stmt::new(UPDATE_TAKER).int(update_id)).await?;
        Ok(taker.map(|(holder,)| holder))
    }

    /// Take update `update_id` from `dead`, a taker known to have died
    /// before finishing it: false when `dead` no longer holds it unfinished.
    pub async fn chat_update_take_from(
        &self,
        update_id: i64,
        holder: &str,
        dead: &str,
    ) -> Result<bool> {
        let input = Arc::new((holder.to_string(), dead.to_string()));
        self.write_with(input, move |mut tx, input, now| {
            Box::pin(async move {
                let (holder, dead) = &*input;
                let take = Stmt::new(TAKE_UPDATE_FROM)
                    .int(update_id)
                    .text(holder.as_str())
                    .int(now)
                    .text(dead.as_str());
                Ok(tx.change(&take).await? == 1)
            })
        })
        .await
    }

    /// Mark update `update_id`, taken by `holder`, handled: it is never
    /// taken again. False when `holder` no longer holds it.
    pub async fn chat_update_done(&self, update_id: i64, holder: &str) -> Result<bool> {
        let input = Arc::new(holder.to_string());
        self.write_with(input, move |mut tx, holder, now| {
            Box::pin(async move {
                let done = Stmt::new(UPDATE_DONE)
                    .int(update_id)
                    .text(holder.as_str())
                    .int(now);
                Ok(tx.change(&done).await? == 1)
            })
        })
        .await
    }

    /// Forget update ids older than Telegram keeps updates; how many went.
    pub async fn forget_chat_updates(&self) -> Result<u64> {
        self.write_with((), |mut tx, (), now| {
            Box::pin(async move {
                let gone = Stmt::new(FORGET_UPDATES).int(now - KEEP_UPDATES_MS);
                tx.change(&gone).await
            })
        })
        .await
    }
}
