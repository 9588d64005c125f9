//! `handoff serve`: the long-running daemon. The only module that wires
//! subsystems together.
//!
//! At start it opens the store, runs action recovery, then starts its
//! workers under one [`CancellationToken`] and [`TaskTracker`]: the HTTP
//! listener ([`listener`](crate::api::listener): timeouts and a connection cap), the waiter follower (wakes in-process waiters), the chat
//! follower (pushes items to Telegram, with a durable cursor), the notify
//! worker (wake-ups, with a durable cursor) and the Telegram update loop,
//! plus the database watcher ([`follow::watch`]: other processes' writes
//! nudge the followers) and housekeeping (expiry sweeps, lease recovery,
//! each when it falls due). Nothing ticks on a fixed short cadence: an idle
//! daemon sleeps until a write, a due time or the fallback poll.
//! Shutdown cancels the token and waits for the tracker, bounded.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::listener;
use crate::config::Config;
use crate::follow;
use crate::shared::Shared;
use crate::store::Store;

/// How long shutdown waits for workers before giving up on them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

/// How soon housekeeping tries again when a run left work due (it failed,
/// or a verifier is still deciding): the old fixed cadence, as a floor.
const HOUSEKEEPING_AGAIN: Duration = Duration::from_secs(1);

/// The longest housekeeping sleeps without a nudge or a due time (the
/// wall clock may jump; an expiry is never later than this).
const HOUSEKEEPING_IDLE: Duration = Duration::from_secs(60);

/// Errors that stop the daemon.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store failed at start-up.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// The chat bridge could not start.
    #[error(transparent)]
    Chat(#[from] crate::chat::Error),
    /// The HTTP listener failed.
    #[error("HTTP listener failed: {0}")]
    Http(std::io::Error),
}

/// Run the daemon on an already-bound `listener` until `shutdown` fires.
pub async fn run(
    config: Config,
    store: Store,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let shared = Shared::new(store.clone(), config, shutdown.clone());
    let tracker = TaskTracker::new();

    // Recovery before any worker: lapsed executions become `unknown` (shown
    // to a human, never silently re-run); approved-but-unclaimed stay claimable.
    recover_at_start(&store).await;
    spawn_housekeeping(
        store.clone(),
        shared.nudge.clone(),
        &tracker,
        shutdown.clone(),
    );
    spawn_forget_requests(store.clone(), &tracker, shutdown.clone());
    spawn_followers(&shared, &tracker, &shutdown).await?;

    // Wake-ups: another follower with a durable cursor (`notify`), plus the
    // delivery loop that runs targets outside any transaction.
    crate::notify::spawn(
        store.clone(),
        shared.config.clone(),
        crate::notify::Options::from_config(&shared.config),
        shared.nudge.clone(),
        &tracker,
        shutdown.clone(),
    )
    .await?;

    let chat = crate::chat::start(&shared, &tracker, shutdown.clone()).await?;

    let app = crate::api::router(shared.clone()).merge(chat.router);
    let (socket, local) = serve_local_socket(&shared, &app, &shutdown).await;
    // The address and database are on the one "serving on" line the CLI
    // prints before this runs; no second line for the same address.
    let served = listener::serve(
        listener,
        app,
        &shared.config.http,
        shutdown.clone(),
        SHUTDOWN_GRACE,
    )
    .await;
    shutdown.cancel();
    if let Some(local) = local {
        if let Ok(Err(e)) = local.await {
            tracing::warn!(error = %e, "the local socket failed");
        }
        if let Some(path) = &socket {
            let _ = std::fs::remove_file(path);
        }
    }
    tracker.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("workers did not stop within {SHUTDOWN_GRACE:?}; exiting anyway");
    }
    store.close().await;
    served.map_err(Error::Http)
}

/// The followers of other processes' writes and of the log for in-memory
/// waiters.
async fn spawn_followers(
    shared: &Shared,
    tracker: &TaskTracker,
    shutdown: &CancellationToken,
) -> Result<(), Error> {
    let store = &shared.store;
    // Other processes' writes: seen through the database files (SQLite) or
    // announced by the server (PostgreSQL's LISTEN/NOTIFY), not polled.
    match store.notifications() {
        Some(pool) => tracker.spawn(follow::listen(pool, shared.nudge.clone(), shutdown.clone())),
        None => tracker.spawn(follow::watch(
            store.clone(),
            shared.nudge.clone(),
            shutdown.clone(),
        )),
    };

    // Waiter follower: from the end of the log (waiters live in memory only).
    {
        let s = shared.clone();
        let cancel = shutdown.clone();
        let start = store.last_event_seq().await?;
        tracker.spawn(async move {
            let waiters = s.waiters.clone();
            follow::follow(s.store.clone(), start, &s.nudge, cancel, waiters).await;
        });
    }
    Ok(())
}

/// The local socket beside a database file, serving `app` to this host's
/// owner: its path and its task, or neither.
async fn serve_local_socket(
    shared: &Shared,
    app: &axum::Router,
    shutdown: &CancellationToken,
) -> (
    Option<std::path::PathBuf>,
    Option<tokio::task::JoinHandle<std::io::Result<()>>>,
) {
    // The local socket: the same routes, the caller trusted as this host's
    // owner (see `api::auth`), so the CLI here writes through the daemon.
    // Only beside a database file: the CLI on this host finds the daemon
    // there. A PostgreSQL daemon is reached over HTTP.
    let socket = shared.store.file().map(crate::store::socket_path);
    let bound = match &socket {
        Some(path) => listener::bind_socket(path).await,
        None => None,
    };
    let local = match bound {
        Some(unix) => {
            let app = app.clone().layer(axum::Extension(crate::api::OwnerSocket));
            let (cfg, cancel) = (shared.config.http.clone(), shutdown.clone());
            Some(tokio::spawn(async move {
                listener::serve(unix, app, &cfg, cancel, SHUTDOWN_GRACE).await
            }))
        }
        None => None,
    };
    (socket, local)
}

/// Run action recovery once, saying what it found; a failure is only a
/// warning (housekeeping retries every second).
async fn recover_at_start(store: &Store) {
    match crate::programs::recover(store).await {
        Ok(r) => {
            tracing::info!(
                unknown = r.unknown.len(),
                claimable = r.claimable.len(),
                rerun = r.rerun.len(),
                "action recovery done"
            );
            // The daemon does not run agents' commands itself: name each
            // stranded `--exec` action and the command that runs it.
            for a in r.claimable.iter().filter(|a| a.exec.is_some()) {
                tracing::warn!(
                    action_id = %a.id,
                    kind = %a.kind,
                    "approved with --exec but never run (its proposer stopped?): `handoff recover` on this host runs it"
                );
            }
        }
        Err(e) => tracing::warn!(error = %e, "action recovery failed; will retry"),
    }
}

/// Housekeeping: the library has no hidden background thread, so the
/// daemon writes escalations, expiries and lapsed leases itself, when the earliest of
/// them falls due. A nudge (any write: a new action, a claim) makes it look
/// again, since the earliest due time may have moved closer.
fn spawn_housekeeping(
    store: Store,
    nudge: Arc<Notify>,
    tracker: &TaskTracker,
    cancel: CancellationToken,
) {
    tracker.spawn(async move {
        // Set after a run: if work is still due, not again before this.
        let mut not_before: Option<Instant> = None;
        loop {
            // Enabled before the read, so a write during it is not missed.
            let nudged = nudge.notified();
            tokio::pin!(nudged);
            nudged.as_mut().enable();
            let next = store.next_housekeeping_due().await;
            let now = store.now();
            let sleep = match next {
                Ok(Some(due)) if due <= now => match not_before {
                    Some(t) if Instant::now() < t => t - Instant::now(),
                    _ => {
                        housekeep(&store).await;
                        not_before = Some(Instant::now() + HOUSEKEEPING_AGAIN);
                        continue;
                    }
                },
                Ok(Some(due)) => Duration::from_millis((due - now) as u64).min(HOUSEKEEPING_IDLE),
                Ok(None) => HOUSEKEEPING_IDLE,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read when housekeeping is due");
                    HOUSEKEEPING_AGAIN
                }
            };
            // Why select: shutdown must not wait out a sleep, and a write
            // may have brought the next due time closer.
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(sleep) => {}
                _ = &mut nudged => {}
            }
        }
    });
}

/// Forget request ids past their day (see [`crate::store::request`]), at
/// start and then hourly.
fn spawn_forget_requests(store: Store, tracker: &TaskTracker, cancel: CancellationToken) {
    tracker.spawn(async move {
        loop {
            if let Err(e) = store.forget_requests().await {
                tracing::warn!(error = %e, "cannot forget old request ids; will try again");
            }
            if let Err(e) = store.forget_chat_updates().await {
                tracing::warn!(error = %e, "cannot forget old Telegram update ids; will try again");
            }
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
            }
        }
    });
}

/// One escalation sweep, one expiry sweep and one lease recovery;
/// failures are warnings (the next due time comes round again). Escalation
/// first: a step due before the expiry fires before the chain's end.
async fn housekeep(store: &Store) {
    match store.escalate_due().await {
        Ok(fired) => {
            for e in fired {
                tracing::info!(action_id = %e.action.id, step = e.step, to = %e.to.to, "escalated");
            }
        }
        Err(e) => tracing::warn!(error = %e, "escalation sweep failed"),
    }
    if let Err(e) = store.expire_due().await {
        tracing::warn!(error = %e, "expiry sweep failed");
    }
    if let Err(e) = crate::programs::recover(store).await {
        tracing::warn!(error = %e, "lease recovery failed");
    }
}

/// Cancel `token` on SIGINT or SIGTERM.
pub fn cancel_on_signals(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for SIGTERM");
                        let _ = ctrl_c.await;
                        token.cancel();
                        return;
                    }
                };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down");
        token.cancel();
    });
}
