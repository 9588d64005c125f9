//! The jobs only one of several daemons on one database may do at a time
//! (polling Telegram: the Bot API allows one consumer per bot), held by a
//! lease in the database ([`Store::lease_take`]).
//!
//! Each daemon names itself once ([`Roles::me`]). A keeper task per role
//! tries to take the lease every third of its period and renews it while
//! it holds it; the job's task waits until [`Roles::watch`] says held and
//! stops as soon as it says not. A holder that cannot renew (its database
//! unreachable) gives the job up when its own copy of the expiry comes,
//! which is no later than another daemon may take it; a clean shutdown
//! releases the lease so the next daemon takes the job at its next try.
//! `/healthz` shows the roles held now ([`Roles::held`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::store::Store;

/// The lease period: 6 s, or `HANDOFF_LEASE_MS` within its bounds (see
/// [`crate::config::tuning::LEASE`]; every command refuses a value outside
/// them). A crashed holder's job moves to another daemon within this and
/// a third of it.
pub fn lease_period() -> Duration {
    static EVERY: OnceLock<Duration> = OnceLock::new();
    *EVERY.get_or_init(|| crate::config::tuning::LEASE.get())
}

/// This daemon's roles. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Roles {
    me: String,
    /// Role → whether this daemon holds it now (a std Mutex: never held
    /// across an await).
    held: Mutex<BTreeMap<&'static str, watch::Sender<bool>>>,
    /// Role → until when this daemon may act on it, by its own monotonic
    /// clock: a little before its lease lapses, counted from before the
    /// statement that took or renewed it.
    until: Mutex<BTreeMap<&'static str, Instant>>,
}

impl Default for Roles {
    fn default() -> Self {
        Roles::new()
    }
}

impl Roles {
    /// Roles for a new daemon instance, holding none yet. Its name says
    /// where it runs (host and pid, for a person reading `/healthz`) and
    /// ends in a random part, so a restarted daemon that got the same pid
    /// is not mistaken for the one that died.
    pub fn new() -> Roles {
        let host = hostname();
        let pid = std::process::id();
        let tail = uuid::Uuid::now_v7().simple().to_string();
        let tail = &tail[tail.len() - 6..];
        Roles {
            me: format!("{host}/{pid}/{tail}"),
            held: Mutex::new(BTreeMap::new()),
            until: Mutex::new(BTreeMap::new()),
        }
    }

    /// This daemon's name, as lease rows and `/healthz` show it.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The roles this daemon holds now, by name.
    pub fn held(&self) -> Vec<String> {
        let held = self.held.lock().expect("roles lock");
        held.iter()
            .filter(|(_, tx)| *tx.borrow())
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// Whether this daemon holds `role` now, and every change of it. A role
    /// nobody keeps reads as not held.
    pub fn watch(&self, role: &'static str) -> watch::Receiver<bool> {
        let mut held = self.held.lock().expect("roles lock");
        held.entry(role)
            .or_insert_with(|| watch::channel(false).0)
            .subscribe()
    }

    /// Whether this daemon may act on `role` at this instant: it holds it
    /// and its own deadline for it has not passed. A job checks this before
    /// each step it must not share (each poll of Telegram), so a daemon
    /// that was paused (SIGSTOP, a stalled VM) past its lease stops at once
    /// when it resumes, before its keeper has run.
    pub fn holds(&self, role: &'static str) -> bool {
        let until = self.until.lock().expect("roles lock");
        until.get(role).is_some_and(|u| Instant::now() < *u)
    }

    /// A token for one stint of holding `role`: a child of `parent`,
    /// cancelled as soon as this daemon no longer holds the role. The
    /// caller cancels it when the stint ends on its own (that also ends
    /// the small task watching the role).
    pub fn stint(&self, role: &'static str, parent: &CancellationToken) -> CancellationToken {
        let stint = parent.child_token();
        let mut held = self.watch(role);
        let ends = stint.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = held.wait_for(|h| !*h) => ends.cancel(),
                _ = ends.cancelled() => {}
            }
        });
        stint
    }

    fn set(&self, role: &'static str, now: bool) {
        if !now {
            self.until.lock().expect("roles lock").remove(role);
        }
        let mut held = self.held.lock().expect("roles lock");
        let tx = held.entry(role).or_insert_with(|| watch::channel(false).0);
        tx.send_if_modified(|h| std::mem::replace(h, now) != now);
    }

    /// Keep trying to hold `role` until `cancel`, then release it.
    pub fn keep(
        self: &Arc<Self>,
        store: Store,
        role: &'static str,
        tracker: &TaskTracker,
        cancel: CancellationToken,
    ) {
        let roles = self.clone();
        tracker.spawn(async move { roles.keeper(store, role, cancel).await });
    }

    async fn keeper(&self, store: Store, role: &'static str, cancel: CancellationToken) {
        let period = lease_period();
        let ttl = period.as_millis() as i64;
        let every = period / 3;
        // The expiry of the lease this daemon last took or renewed.
        let mut until: Option<i64> = None;
        loop {
            // Why from before the statement: the lease may have been
            // written at any moment while it ran.
            let asked = Instant::now();
            let mut took = store.lease_take(role, &self.me, ttl).await;
            if let Ok(None) = took
                && let Some(dead) = self.dead_local_holder(&store, role).await
            {
                took = store.lease_take_from(role, &self.me, &dead, ttl).await;
                if let Ok(Some(_)) = took {
                    tracing::info!(role, dead = %dead, "took the role from a daemon on this host that died");
                }
            }
            if crate::fault::on("shared-roles") && matches!(took, Ok(None)) {
                // FAULT(shared-roles): every daemon believes it holds the
                // role, as if the lease were not exclusive.
                took = Ok(Some(store.now() + ttl));
            }
            match took {
                Ok(Some(expires)) => {
                    if until.is_none() {
                        tracing::info!(role, "this daemon took the role");
                    }
                    until = Some(expires);
                    self.until
                        .lock()
                        .expect("roles lock")
                        .insert(role, asked + period - period / 6);
                }
                Ok(None) => {
                    if until.take().is_some() {
                        tracing::warn!(role, "another daemon holds the role now");
                    }
                }
                Err(e) => {
                    tracing::warn!(role, error = %e, "cannot take or renew the role's lease; will retry")
                }
            }
            self.set(role, until.is_some());
            // Why the sleep ends at the expiry at the latest: a holder that
            // could not renew must give the job up before anyone else may
            // take it.
            let sleep = match until {
                Some(u) => every.min(Duration::from_millis((u - store.now()).max(0) as u64)),
                None => every,
            };
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(sleep) => {}
            }
            if until.is_some_and(|u| u <= store.now()) {
                tracing::warn!(
                    role,
                    "the role's lease lapsed before it could be renewed; giving the role up"
                );
                until = None;
                self.set(role, false);
            }
        }
        self.set(role, false);
        if until.is_some()
            && let Err(e) = store.lease_release(role, &self.me).await
        {
            tracing::warn!(role, error = %e, "cannot release the role's lease; another daemon takes it when it lapses");
        }
    }
}

impl Roles {
    /// The holder of `role` when it is a daemon on this host whose process
    /// is gone (a crash, `kill -9`) and the database is a file: a daemon
    /// restarted after it need not wait out the lease. A process of that pid alive counts as alive
    /// (pids are reused): then the lease lapses as usual.
    async fn dead_local_holder(&self, store: &Store, role: &str) -> Option<String> {
        // Only beside a database file, which the daemons of one host share:
        // daemons on a shared server may run on hosts of the same name, and
        // one must never take a live lease from another.
        let leases = store.lease_holders().await.ok()?;
        let lease = leases.into_iter().find(|l| l.name == role)?;
        self.gone(store, &lease.holder).then_some(lease.holder)
    }

    /// Whether `holder` (an instance name) is a daemon on this host whose
    /// process is gone, beside a database file (see
    /// [`Roles::dead_local_holder`] for why only there).
    pub fn gone(&self, store: &Store, holder: &str) -> bool {
        if store.file().is_none() {
            return false;
        }
        let mut parts = holder.splitn(3, '/');
        let (Some(host), Some(Ok(pid))) = (parts.next(), parts.next().map(str::parse::<u32>))
        else {
            return false;
        };
        let mine = self.me.split('/').next().unwrap_or_default();
        host == mine
            && pid != std::process::id()
            && cfg!(target_os = "linux")
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }
}

/// This host's name, or `localhost` when it cannot be read.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_past_its_own_deadline_is_not_acted_on_before_its_keeper_runs() {
        let roles = Roles::new();
        assert!(!roles.holds("r"), "never taken");
        roles.set("r", true);
        roles
            .until
            .lock()
            .unwrap()
            .insert("r", Instant::now() + Duration::from_secs(60));
        assert!(roles.holds("r"));
        // The deadline passes (a paused process resumes) while the keeper
        // has not run yet: still listed as held, but not to be acted on.
        roles
            .until
            .lock()
            .unwrap()
            .insert("r", Instant::now() - Duration::from_millis(1));
        assert_eq!(roles.held(), vec!["r".to_string()]);
        assert!(!roles.holds("r"));
        roles.set("r", false);
        assert!(roles.held().is_empty() && !roles.holds("r"));
    }

    #[test]
    fn a_daemon_names_itself_by_host_pid_and_a_random_tail() {
        let (a, b) = (Roles::new(), Roles::new());
        let parts: Vec<&str> = a.me().split('/').collect();
        assert_eq!(parts.len(), 3, "{}", a.me());
        assert_eq!(parts[1], std::process::id().to_string());
        assert_ne!(a.me(), b.me(), "two instances in one process differ");
    }
}
