//! The local daemon as the one writer: when `handoff serve` runs on this
//! host for this database, the CLI sends its operations to it over the
//! owner-only Unix socket next to the database file ([`Remote`] over that
//! socket) instead of opening SQLite, so writers never meet at SQLite's
//! file lock and every write nudges the daemon's followers at once.
//!
//! - Chosen at start ([`Daemon::connect`]): the socket must answer
//!   `/healthz` within `probe()` and name this database; otherwise the
//!   caller opens the file as before.
//! - Each primitive call gets a request id (`<command id>.<n>`). When the
//!   daemon stops answering mid-call (killed, hung past the timeout), the
//!   call is run again on the file under the same id: a write the daemon
//!   committed is replayed from the store's request log, not applied twice
//!   (see [`crate::store::request`]), and the caller gets the first
//!   outcome. From then on this command uses the file.
//! - What only the host may do through a remote daemon (exec wake targets,
//!   verifier commands, chat-door writes) runs on the file directly: the
//!   caller is this host's owner.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::OnceCell;

use super::backend::{Primitive, Run};
use super::{Error, Local, Policy, Remote, Result};
use crate::store::{Store, request};

/// How long the daemon has to answer the first probe before the CLI uses
/// the database file instead: 50 ms, or `HANDOFF_SOCKET_PROBE_MS` within
/// its bounds (see [`crate::config::tuning::SOCKET_PROBE`]; every command
/// refuses a value outside them), for a loaded host where 50 ms can pass
/// before a healthy daemon answers.
fn probe() -> Duration {
    crate::config::tuning::SOCKET_PROBE.get()
}

/// Operations through the local daemon's socket, with the database file
/// as the fallback.
#[derive(Clone)]
pub struct Daemon {
    inner: Arc<Inner>,
}

struct Inner {
    remote: Remote,
    db: PathBuf,
    policy: Policy,
    local: OnceCell<Local>,
    /// This command's id; each call is `<id>.<n>`.
    id: String,
    calls: AtomicU64,
    /// When the daemon stopped answering: later calls use the file until
    /// [`RETRY_AFTER`] has passed and a probe finds it back (a long-lived
    /// `handoff mcp` outlives a daemon restart).
    gone: std::sync::Mutex<Option<std::time::Instant>>,
}

/// How long after the daemon stopped answering the socket is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(10);

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("db", &self.inner.db)
            .finish()
    }
}

impl Daemon {
    /// The daemon serving `db` on its socket, if one answers within
    /// `probe()`; `None` (use the file) otherwise, never an error.
    /// `HANDOFF_SOCKET=off` always says `None`.
    pub async fn connect(db: &Path, policy: Policy) -> Option<Daemon> {
        if std::env::var("HANDOFF_SOCKET").is_ok_and(|v| v.trim().eq_ignore_ascii_case("off")) {
            return None;
        }
        let socket = crate::store::socket_path(db);
        if !socket.exists() {
            return None;
        }
        let remote = Remote::over_socket(&socket).ok()?;
        let health = tokio::time::timeout(probe(), remote.health()).await;
        match health {
            Ok(Some(fingerprint)) if fingerprint == crate::store::fingerprint(db) => {}
            Ok(Some(_)) => {
                tracing::debug!(socket = %socket.display(), "the daemon on this socket serves another database; using the file");
                return None;
            }
            _ => {
                tracing::debug!(socket = %socket.display(), "no answer on the daemon's socket within {:?}; using the file", probe());
                return None;
            }
        }
        Some(Daemon {
            inner: Arc::new(Inner {
                remote,
                db: db.to_path_buf(),
                policy,
                local: OnceCell::new(),
                id: request::fresh(),
                calls: AtomicU64::new(0),
                gone: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The request id of the next call.
    fn next_key(&self) -> String {
        let n = self.inner.calls.fetch_add(1, Ordering::Relaxed);
        format!("{}.{n}", self.inner.id)
    }

    /// Whether to try the daemon: it answered last time, or it stopped
    /// answering over [`RETRY_AFTER`] ago and answers a probe now.
    async fn live(&self) -> bool {
        let since = *self.inner.gone.lock().unwrap_or_else(|p| p.into_inner());
        match since {
            None => true,
            Some(t) if t.elapsed() < RETRY_AFTER => false,
            Some(_) => {
                let fingerprint = crate::store::fingerprint(&self.inner.db);
                let back = tokio::time::timeout(probe(), self.inner.remote.health())
                    .await
                    .is_ok_and(|h| h.as_deref() == Some(fingerprint.as_str()));
                *self.inner.gone.lock().unwrap_or_else(|p| p.into_inner()) =
                    (!back).then(std::time::Instant::now);
                if back {
                    self.inner.remote.answered_again();
                }
                back
            }
        }
    }

    /// The socket client.
    fn remote(&self) -> &Remote {
        &self.inner.remote
    }

    /// Whether the outcome `e` of a call through the socket means "run it
    /// on the file": the daemon gave no answer (then it is gone for the
    /// rest of this command), or the call is one only the host may make.
    fn falls_back(&self, e: &Error) -> bool {
        if self.inner.remote.lost() {
            tracing::debug!("the daemon stopped answering on its socket; using the file");
            *self.inner.gone.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(std::time::Instant::now());
            return true;
        }
        super::remote::is_host_only(e)
    }

    /// The database file's operations, opened on first use.
    pub(super) async fn local(&self) -> Result<&Local> {
        self.inner
            .local
            .get_or_try_init(|| async {
                let store = Store::open(&self.inner.db)
                    .await
                    .map_err(|e| Error::Internal {
                        message: format!("cannot open {}: {e}", self.inner.db.display()),
                    })?;
                Ok(Local::new(store, self.inner.policy.clone()))
            })
            .await
    }
}

/// Every primitive through the daemon, or on the file (see the module
/// docs): the same call on the socket's backend and, when that falls
/// back, on the file's, both under one request id so a write the daemon
/// committed is replayed on the file, not applied twice.
impl<P> Run<P> for Daemon
where
    P: Primitive,
    Local: Run<P>,
    Remote: Run<P>,
{
    async fn run(&self, p: P) -> Result<P::Out> {
        let key = self.next_key();
        if self.live().await {
            match request::scope(key.clone(), self.remote().run(p)).await {
                Err(e) if self.falls_back(&e) => {}
                other => return other,
            }
        }
        let l = self.local().await?;
        request::scope(key, l.run(p)).await
    }
}
