//! The notify worker: two tasks under the daemon's tracker.
//!
//! - The *enqueuer* follows the event log with the durable cursor `notify`
//!   and inserts one delivery per (event, target); a replayed event is a
//!   no-op (`UNIQUE(event_seq, target_key)`).
//! - The *deliverer* recovers lapsed leases, claims due deliveries with a
//!   guarded UPDATE, runs each target outside any transaction (a few at a
//!   time), then records delivered, the next attempt per the schedule, or
//!   dead. Between those it sleeps until the next attempt or lease falls
//!   due, or the enqueuer kicks it: it does not tick.
//!
//! Durations use `tokio::time`; every stored time comes from the store's clock.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Outcome, Wake, exec, targets_for, tmux, webhook};
use crate::config::Config;
use crate::follow;
use crate::store::deliveries::Delivery;
use crate::store::sessions::WakeTarget;
use crate::store::{Event, Store};

/// The name of the worker's durable cursor.
pub const CURSOR: &str = "notify";

/// How long shutdown waits for attempts in flight before abandoning them
/// (an abandoned attempt is retried after its lease lapses).
const DRAIN: Duration = Duration::from_secs(4);

/// How soon the deliverer looks again after due work could not be claimed
/// (another daemon holds it, or the store failed): a floor, so that never
/// becomes a busy loop.
const AGAIN: Duration = Duration::from_millis(100);

/// Tunables of the worker.
#[derive(Debug, Clone)]
pub struct Options {
    /// Delay before each attempt; after the last one fails, dead.
    pub schedule: Vec<Duration>,
    /// The longest the deliverer sleeps when nothing is due and nothing
    /// kicks it (only this process writes deliveries, so this is a bound
    /// for clock jumps, not a cadence).
    pub idle: Duration,
    /// Attempts run at once.
    pub concurrency: usize,
}

impl Options {
    /// The options the config asks for.
    pub fn from_config(config: &Config) -> Options {
        Options {
            schedule: super::schedule(config),
            idle: Duration::from_secs(30),
            concurrency: 8,
        }
    }
}

struct Ctx {
    store: Store,
    config: Arc<Config>,
    opts: Options,
    http: reqwest::Client,
}

/// Start the enqueuer and the deliverer on `tracker`, both stopping on
/// `cancel`. `nudge` is the daemon's "a write happened here" notifier.
pub async fn spawn(
    store: Store,
    config: Arc<Config>,
    opts: Options,
    nudge: Arc<Notify>,
    tracker: &TaskTracker,
    cancel: CancellationToken,
) -> crate::store::Result<()> {
    // The migration that created the deliveries table set this cursor to
    // the log's end at that moment, so history from before wake-ups existed
    // is not replayed, and nothing written since is skipped.
    let start = store.cursor(CURSOR).await?;
    let ctx = Arc::new(Ctx {
        store: store.clone(),
        config,
        opts,
        http: webhook::client(),
    });
    let kick = Arc::new(Notify::new());
    {
        let enq = Enqueuer {
            ctx: ctx.clone(),
            kick: kick.clone(),
        };
        let cancel = cancel.clone();
        tracker.spawn(async move {
            follow::follow(store, start, &nudge, cancel, enq).await;
        });
    }
    tracker.spawn(deliver_loop(ctx, kick, cancel));
    Ok(())
}

/// Turns wake-up events into delivery rows.
struct Enqueuer {
    ctx: Arc<Ctx>,
    kick: Arc<Notify>,
}

/// An escalation step's event: its webhook step is delivered here.
const ESCALATED: &str = "action.escalated";

impl follow::Apply for Enqueuer {
    const NAME: &'static str = "notify";
    /// Only a wake event's payload decides anything ([`super::wakes`]),
    /// and an escalation's (its webhook step).
    fn reads_payload(&self, kind: &str) -> bool {
        crate::store::events::WAKE_EVENTS.contains(&kind) || kind == ESCALATED
    }
    async fn apply(&mut self, ev: &Event) -> bool {
        if !super::wakes(ev) && ev.kind != ESCALATED {
            return true;
        }
        let store = &self.ctx.store;
        // Why an `--exec` action's approval does not wake its session: its
        // proposer runs it, so the agent is woken once, by the outcome. A
        // `[[notify]]` rule that lists `action.approved` still fires (its
        // operator asked for that event). Unreadable (purged since): woken
        // as any approval.
        let session = if ev.session.is_empty() {
            None
        } else {
            match store.get_session(&ev.session).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, seq = ev.seq, "cannot read the event's session");
                    return false;
                }
            }
        };
        let mut targets = targets_for(ev, session.as_ref(), &self.ctx.config);
        // Read only when the session would be woken by it.
        if ev.kind == "action.approved"
            && targets.iter().any(|d| d.origin == "session")
            && store
                .get_action(&ev.entity_id)
                .await
                .is_ok_and(|a| a.exec.is_some())
        {
            targets.retain(|d| d.origin != "session");
        }
        if targets.is_empty() {
            return true;
        }
        let first = self.ctx.opts.schedule.first().copied().unwrap_or_default();
        match store
            .enqueue_deliveries(ev.seq, &targets, millis(first))
            .await
        {
            Ok(n) => {
                if n > 0 {
                    tracing::debug!(seq = ev.seq, deliveries = n, "wake-ups enqueued");
                    self.kick.notify_one();
                }
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, seq = ev.seq, "cannot enqueue wake-ups; will retry");
                false
            }
        }
    }

    async fn save(&mut self, seq: i64) {
        if let Err(e) = self.ctx.store.set_cursor(CURSOR, seq).await {
            tracing::warn!(error = %e, "cannot save the notify cursor");
        }
    }
}

async fn deliver_loop(ctx: Arc<Ctx>, kick: Arc<Notify>, cancel: CancellationToken) {
    let mut running: JoinSet<()> = JoinSet::new();
    while !cancel.is_cancelled() {
        let free = ctx.opts.concurrency.saturating_sub(running.len());
        let sleep = if free > 0 {
            claim_and_start(&ctx, &kick, &mut running, free).await
        } else {
            ctx.opts.idle // a finished attempt frees a slot and wakes the loop
        };
        if sleep.is_zero() {
            continue;
        }
        // Why select: a new delivery (kick) or a finished attempt should be
        // looked at at once; shutdown must not wait out a sleep.
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = kick.notified() => {}
            _ = tokio::time::sleep(sleep) => {}
            Some(_) = running.join_next(), if !running.is_empty() => {}
        }
    }
    // Let attempts in flight settle, bounded; the rest keep their lease and
    // are retried (same event id) once it lapses.
    let drained = tokio::time::timeout(DRAIN, async {
        while running.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::info!(
            left = running.len(),
            "wake-ups still running at shutdown; retried after restart"
        );
    }
    running.shutdown().await;
}

/// Claim and start what is due, up to `free` attempts; returns how long to
/// sleep before looking again (zero: at once).
async fn claim_and_start(
    ctx: &Arc<Ctx>,
    kick: &Arc<Notify>,
    running: &mut JoinSet<()>,
    free: usize,
) -> Duration {
    let store = &ctx.store;
    // A cheap read first, so an idle worker never takes the write lock.
    let next = store.next_delivery_work().await;
    let now = store.now();
    match next {
        Ok(Some(t)) if t <= now => {}
        Ok(Some(t)) => return Duration::from_millis((t - now) as u64).min(ctx.opts.idle),
        Ok(None) => return ctx.opts.idle,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the delivery queue");
            return AGAIN;
        }
    }
    match store.recover_deliveries().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(count = n, "interrupted wake-ups will be retried"),
        Err(e) => tracing::warn!(error = %e, "cannot recover lapsed deliveries"),
    }
    let batch = match store.claim_deliveries(free as i64).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "cannot claim deliveries");
            return AGAIN;
        }
    };
    // Nothing claimed although something was due: another daemon took it,
    // or a lease is not quite lapsed on the store's clock. Look again soon.
    let sleep = if batch.is_empty() {
        AGAIN
    } else {
        Duration::ZERO
    };
    for d in batch {
        let ctx = ctx.clone();
        let kick = kick.clone();
        running.spawn(async move {
            ctx.attempt(d).await;
            // A retry due at once (schedule 0) is picked up without a tick.
            kick.notify_one();
        });
    }
    sleep
}

impl Ctx {
    /// Run one claimed attempt and record its outcome.
    async fn attempt(&self, d: Delivery) {
        let ev = match self.store.event_at(d.event_seq).await {
            Ok(Some(ev)) => ev,
            Ok(None) => {
                tracing::error!(seq = d.event_seq, "a delivery's event is missing");
                return;
            }
            Err(e) => {
                // The lease lapses and the attempt is retried.
                tracing::warn!(error = %e, "cannot read a delivery's event");
                return;
            }
        };
        let wake = Wake::new(&ev);
        tracing::debug!(delivery = d.id, event_id = %wake.event_id, attempt = d.attempts, target = %d.target_key, "delivering");
        let outcome = match &d.target {
            WakeTarget::Exec { argv, timeout_secs } => {
                let t = timeout_secs
                    .map(Duration::from_secs)
                    .unwrap_or(exec::DEFAULT_TIMEOUT);
                if crate::fault::on("duplicate-wake") {
                    exec::run(argv, t, &wake).await; // FAULT(duplicate-wake)
                }
                exec::run(argv, t, &wake).await
            }
            WakeTarget::Webhook { url, secret } => {
                if d.origin == "session" && !self.config.wake.webhook_allowed(url) {
                    Outcome::Dead {
                        error: format!(
                            "webhook URL {url} is not allowed: add it (or a prefix) to [wake] allowed_webhook_urls"
                        ),
                    }
                } else {
                    webhook::send(&self.http, url, secret, &wake, self.store.now()).await
                }
            }
            WakeTarget::Tmux { pane, agent } => tmux::run(pane, agent.as_deref(), &wake).await,
        };
        self.settle(&d, &ev, outcome).await;
    }

    async fn settle(&self, d: &Delivery, ev: &Event, outcome: Outcome) {
        let store = &self.store;
        let res = match outcome {
            Outcome::Delivered => {
                tracing::info!(delivery = d.id, seq = d.event_seq, target = %d.target_key, "woken");
                store.delivery_delivered(d).await
            }
            Outcome::Retry { error, after } => {
                let done = usize::try_from(d.attempts).unwrap_or(usize::MAX);
                match self.opts.schedule.get(done) {
                    Some(delay) => {
                        let delay = after.map_or(*delay, |a| a.max(*delay));
                        tracing::info!(delivery = d.id, attempt = d.attempts, %error, ?delay, "wake-up failed; will retry");
                        store
                            .delivery_retry(d, store.now() + millis(delay), &error)
                            .await
                    }
                    None => {
                        let error = format!("gave up after {done} attempts: {error}");
                        tracing::warn!(delivery = d.id, %error, "wake-up dead");
                        store.delivery_dead(d, ev, &error, false).await
                    }
                }
            }
            Outcome::Dead { error } => {
                tracing::warn!(delivery = d.id, %error, "wake-up dead");
                store.delivery_dead(d, ev, &error, false).await
            }
            Outcome::Disable { error } => {
                tracing::warn!(delivery = d.id, %error, "wake-up target disabled");
                store.delivery_dead(d, ev, &error, true).await
            }
        };
        match res {
            Ok(true) => {}
            Ok(false) => tracing::info!(
                delivery = d.id,
                "the attempt's lease lapsed before it settled; another attempt owns it"
            ),
            Err(e) => {
                tracing::warn!(error = %e, delivery = d.id, "cannot record a wake-up outcome")
            }
        }
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}
