//! What the daemon's request handlers and workers share: the store, the
//! configuration, the in-process waiters, the nudge that wakes followers
//! after a write made here, and the shutdown token.
//!
//! [`roles`]: the jobs only one of several daemons on one database does.
//!
//! A leaf of the daemon's modules: `api`, `chat` and `notify` import it,
//! and it imports none of them, so nothing reaches back into `daemon`.

pub mod roles;

use std::sync::Arc;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::follow::Waiters;
use crate::ops::{Local, Policy};
use crate::store::Store;

/// What request handlers and workers share. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Shared {
    /// The one store every handler and worker writes through.
    pub store: Store,
    /// The operations on that store under the config's policy: what the
    /// HTTP handlers call, so a rule is applied in one place for every door.
    pub ops: Local,
    /// The configuration the daemon started with (routes, rules, notify).
    pub config: Arc<Config>,
    /// In-process waiters, woken by the waiter follower.
    pub waiters: Waiters,
    /// Nudged after a write made in this process, so followers look at once
    /// instead of at their next poll; [`Shared::wrote`] is the one way to do it.
    pub nudge: Arc<Notify>,
    /// Cancelled at shutdown: long polls and event streams end on it, so a
    /// graceful shutdown does not wait for them.
    pub shutdown: CancellationToken,
    /// The jobs this daemon holds among several on one database.
    pub roles: Arc<roles::Roles>,
}

impl Shared {
    /// Share `store` and `config`, with no waiters yet, ending on `shutdown`.
    pub fn new(store: Store, config: Config, shutdown: CancellationToken) -> Self {
        Self {
            ops: Local::new(store.clone(), Policy::of(&config)),
            store,
            config: Arc::new(config),
            waiters: Waiters::default(),
            nudge: Arc::new(Notify::new()),
            shutdown,
            roles: Arc::new(roles::Roles::new()),
        }
    }

    /// Say that this process wrote to the store: the followers read the
    /// event log now rather than at their next poll.
    pub fn wrote(&self) {
        self.nudge.notify_waiters();
    }
}
