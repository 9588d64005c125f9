//! `handoff serve`: the long-running daemon. The only module that wires
//! subsystems together.
//!
//! At start it opens the store, runs action recovery, then starts its
//! workers under one [`CancellationToken`] and [`TaskTracker`]: the HTTP
//! listener ([`listener`](crate::api::listener): timeouts and a connection cap), the waiter follower (wakes in-process waiters), the chat
//! follower (pushes items to Telegram, with a durable cursor), the notify
//! worker (wake-ups, with a durable cursor) and the Telegram update loop,
//! plus housekeeping (expiry sweeps, lease recovery).
//! Shutdown cancels the token and waits for the tracker, bounded.

use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::listener;
use crate::config::Config;
use crate::follow;
use crate::shared::Shared;
use crate::store::Store;

/// How long shutdown waits for workers before giving up on them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

/// How often expiries and lapsed leases are written.
const HOUSEKEEPING: Duration = Duration::from_secs(1);

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
    spawn_housekeeping(store.clone(), &tracker, shutdown.clone());

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
/// daemon writes expiries and lapsed leases on its own cadence.
fn spawn_housekeeping(store: Store, tracker: &TaskTracker, cancel: CancellationToken) {
    tracker.spawn(async move {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(HOUSEKEEPING) => {}
            }
            if let Err(e) = store.expire_due().await {
                tracing::warn!(error = %e, "expiry sweep failed");
            }
            if let Err(e) = crate::programs::recover(&store).await {
                tracing::warn!(error = %e, "lease recovery failed");
            }
        }
    });
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
