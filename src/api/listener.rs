//! Serving the daemon's router on its listener, with the limits
//! `axum::serve` does not offer: a first-byte timeout for a new connection,
//! a header timeout (which also ends idle keep-alive connections), a
//! whole-body deadline, a body size announced too large refused before it
//! is read, and a cap on connections served at once. HTTP/1.1 only
//! (hyper's HTTP/1 server), as before.
//!
//! The cap is shared fairly: a connection that has not yet presented a
//! valid credential (a token or an Inbox session; the owner-only socket's
//! connections count as presented) is *unauthenticated*, and one client
//! address may hold at most `[http] max_unauthenticated_per_client` of
//! those. When a newcomer finds that limit or `max_connections` reached,
//! the oldest unauthenticated connection with no request in flight (one
//! that never sent a byte first) is closed to make room; only when there is
//! none is the newcomer answered 503 and closed. So idle connections, from
//! one client or many, cannot keep an authenticated client out, and an
//! authenticated connection or a request being served is never cut for a
//! newcomer.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

mod accept;
mod body;

use accept::waiting;
pub(crate) use accept::{Accept, Accepted};
use body::read_body;

use crate::config::HttpConfig;

/// Connections open right now.
static OPEN: AtomicU64 = AtomicU64::new(0);
/// Connections refused because no slot could be made for them.
static REFUSED: AtomicU64 = AtomicU64::new(0);
/// Idle unauthenticated connections closed to make room for a newcomer.
static EVICTED: AtomicU64 = AtomicU64::new(0);

/// `(open, refused, evicted)` connection counts of this process, for
/// `/metrics`.
pub fn connection_counts() -> (u64, u64, u64) {
    // Relaxed: independent counters, read only for reporting.
    (
        OPEN.load(Ordering::Relaxed),
        REFUSED.load(Ordering::Relaxed),
        EVICTED.load(Ordering::Relaxed),
    )
}

/// The largest request body: the API's and the inbound wake route's limit.
const MAX_BODY: usize = crate::api::wake::MAX_BODY;

/// How long an evicted connection may take to finish what it started.
const EVICT_GRACE: Duration = Duration::from_secs(1);

/// One open connection, shared by its task, its requests (as a
/// [`ConnHandle`] extension) and the accept loop.
struct Conn {
    /// Accept order: a lower id is older.
    id: u64,
    /// The client's address; `None` through the owner-only socket.
    peer: Option<IpAddr>,
    /// Its first byte arrived.
    spoke: AtomicBool,
    /// A request on it presented a valid credential.
    authenticated: AtomicBool,
    /// Requests being served on it now.
    in_flight: AtomicU32,
    /// Cancelled to close it for a newcomer (replaced when it turns out to
    /// have spoken just then).
    evict: Mutex<CancellationToken>,
}

impl Conn {
    /// The `id`th connection accepted, from `peer`, with a first byte
    /// already waiting if `spoke`.
    fn accepted(id: u64, peer: Option<IpAddr>, spoke: bool) -> Arc<Self> {
        Arc::new(Conn {
            id,
            peer,
            spoke: AtomicBool::new(spoke),
            // The owner-only socket admits only this host's owner.
            authenticated: AtomicBool::new(peer.is_none()),
            in_flight: AtomicU32::new(0),
            evict: Mutex::new(CancellationToken::new()),
        })
    }

    fn evict_token(&self) -> CancellationToken {
        self.evict.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn evictable(&self) -> bool {
        // Relaxed: a hint for choosing a victim; a request that starts
        // just after is given EVICT_GRACE to finish.
        !self.authenticated.load(Ordering::Relaxed) && self.in_flight.load(Ordering::Relaxed) == 0
    }
}

/// A request's connection, so the API can mark it authenticated.
#[derive(Clone)]
pub(crate) struct ConnHandle(Arc<Conn>);

impl ConnHandle {
    /// The request presented a valid credential: the connection is no
    /// longer counted against its client's unauthenticated limit, nor
    /// closed to make room.
    pub(crate) fn authenticated(&self) {
        self.0.authenticated.store(true, Ordering::Relaxed);
    }
}

/// Marks an in-flight request for as long as it is served.
struct InFlight(Arc<Conn>);

impl InFlight {
    fn enter(conn: &Arc<Conn>) -> Self {
        conn.spoke.store(true, Ordering::Relaxed);
        conn.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(conn.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a newcomer got no slot.
enum Full {
    /// `max_connections` are open and none can be closed for it.
    Total(usize),
    /// Its address holds the most unauthenticated connections allowed,
    /// none of them idle.
    Client(usize),
}

/// The open connections, oldest first. A std Mutex, not a tokio one: no
/// `.await` happens while it is held.
struct Conns {
    open: Mutex<BTreeMap<u64, Arc<Conn>>>,
    max: usize,
    per_client: usize,
}

impl Conns {
    /// Make room for `conn` (closing an idle unauthenticated connection
    /// when a limit is reached) and count it in, or say why not.
    fn admit(&self, conn: &Arc<Conn>) -> Result<(), Full> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ip) = conn.peer {
            let unauthenticated =
                |c: &Conn| c.peer == Some(ip) && !c.authenticated.load(Ordering::Relaxed);
            let held = open.values().filter(|c| unauthenticated(c)).count();
            if held >= self.per_client {
                evict(&mut open, |c| c.peer == Some(ip)).ok_or(Full::Client(self.per_client))?;
            }
        }
        if open.len() >= self.max {
            evict(&mut open, |_| true).ok_or(Full::Total(self.max))?;
        }
        open.insert(conn.id, conn.clone());
        Ok(())
    }

    /// Count `conn` in again: chosen to be closed as silent, it had sent
    /// its first bytes by then. Over a limit by one for as long as it
    /// lasts, rather than cutting a client that spoke.
    fn reinstate(&self, conn: &Arc<Conn>) {
        *conn.evict.lock().unwrap_or_else(|p| p.into_inner()) = CancellationToken::new();
        conn.spoke.store(true, Ordering::Relaxed);
        EVICTED.fetch_sub(1, Ordering::Relaxed);
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(conn.id, conn.clone());
    }

    fn remove(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// Close the oldest evictable connection `which` accepts, preferring one
/// that never sent a byte; it leaves the count at once.
fn evict(open: &mut BTreeMap<u64, Arc<Conn>>, which: impl Fn(&Conn) -> bool) -> Option<()> {
    let candidates = || open.values().filter(|c| which(c) && c.evictable());
    let victim = candidates()
        .find(|c| !c.spoke.load(Ordering::Relaxed))
        .or_else(|| candidates().next())?
        .id;
    let conn = open.remove(&victim)?;
    conn.evict_token().cancel();
    EVICTED.fetch_add(1, Ordering::Relaxed);
    Some(())
}

/// Serve `app` on `listener` until `shutdown`, then let open requests
/// finish for at most `grace`.
pub(crate) async fn serve<L: Accept>(
    listener: L,
    app: Router,
    cfg: &HttpConfig,
    shutdown: CancellationToken,
    grace: Duration,
) -> std::io::Result<()> {
    let body_timeout = Duration::from_secs(cfg.body_timeout_secs);
    let app = app.layer(axum::middleware::from_fn_with_state(
        body_timeout,
        read_body,
    ));
    let header_timeout = Duration::from_secs(cfg.header_timeout_secs);
    let first_byte = Duration::from_secs(cfg.first_byte_timeout_secs).min(header_timeout);
    let conns = Arc::new(Conns {
        open: Mutex::new(BTreeMap::new()),
        max: cfg.max_connections,
        per_client: cfg.max_unauthenticated_per_client,
    });
    let tasks = TaskTracker::new();
    let mut next_id = 0u64;
    loop {
        // Why select: shutdown must not wait for the next connection.
        let Accepted {
            io: stream,
            peer,
            spoke,
        } = tokio::select! {
            _ = shutdown.cancelled() => break,
            r = listener.accept() => match r {
                Ok(Some(accepted)) => accepted,
                Ok(None) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: pause instead
                    // of spinning on accept.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        next_id += 1;
        let conn = Conn::accepted(next_id, peer, spoke);
        if let Err(full) = conns.admit(&conn) {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(refuse(stream, full));
            continue;
        }
        OPEN.fetch_add(1, Ordering::Relaxed);
        let app = app.clone();
        let conns = conns.clone();
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            serve_one::<L>(
                stream,
                &conn,
                &conns,
                app,
                header_timeout,
                first_byte,
                &shutdown,
            )
            .await;
            conns.remove(conn.id);
            OPEN.fetch_sub(1, Ordering::Relaxed);
        });
    }
    tasks.close();
    if tokio::time::timeout(grace, tasks.wait()).await.is_err() {
        tracing::warn!("open HTTP connections did not finish within {grace:?}; closing them");
    }
    Ok(())
}

/// One connection: its first byte within `first_byte`, then HTTP/1.1 until
/// it closes, is evicted (given [`EVICT_GRACE`] to finish a request that
/// just started) or the daemon shuts down (open requests finish).
async fn serve_one<L: Accept>(
    stream: L::Io,
    conn: &Arc<Conn>,
    conns: &Conns,
    app: Router,
    header_timeout: Duration,
    first_byte: Duration,
    shutdown: &CancellationToken,
) {
    {
        let first = tokio::time::timeout(first_byte, L::readable(&stream));
        let mut first = std::pin::pin!(first);
        // Why select: an evicted or silent connection must not wait for
        // the header timeout, nor hold up shutdown. Biased: bytes that
        // arrived win over an eviction that came at the same time.
        let evict = conn.evict_token();
        tokio::select! {
            biased;
            r = first.as_mut() => match r {
                Ok(Ok(())) => conn.spoke.store(true, Ordering::Relaxed),
                Ok(Err(_)) => return,
                Err(_) => {
                    tracing::debug!("a connection sent nothing within {first_byte:?}; closed");
                    return;
                }
            },
            _ = evict.cancelled() => {
                // Chosen as silent: a request that reached the socket
                // meanwhile is served after all.
                if !waiting(&stream) {
                    return;
                }
                conns.reinstate(conn);
            }
            _ = shutdown.cancelled() => return,
        }
    }
    let handle = conn.clone();
    let svc = tower::service_fn(move |mut req: Request<hyper::body::Incoming>| {
        let app = app.clone();
        let handle = handle.clone();
        async move {
            let _in_flight = InFlight::enter(&handle);
            req.extensions_mut().insert(ConnHandle(handle));
            app.oneshot(req.map(Body::new)).await
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let served = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
    let mut served = std::pin::pin!(served);
    let evict = conn.evict_token();
    let ended = tokio::select! {
        r = served.as_mut() => Some(r),
        _ = evict.cancelled() => None,
        _ = shutdown.cancelled() => None,
    };
    let result = match ended {
        Some(r) => r,
        None => {
            served.as_mut().graceful_shutdown();
            if evict.is_cancelled() {
                match tokio::time::timeout(EVICT_GRACE, served).await {
                    Ok(r) => r,
                    Err(_) => return,
                }
            } else {
                served.await
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// Answer a connection no slot could be made for with 503 and close it,
/// without reading its request. Bounded: a peer that does not read cannot
/// hold the task.
async fn refuse<S: AsyncWrite + Unpin>(mut stream: S, full: Full) {
    let message = match full {
        Full::Total(max) => format!(
            "the daemon already serves {max} connections ([http] max_connections), none of them idle without a token; close idle ones or retry shortly"
        ),
        Full::Client(max) => format!(
            "this address already holds {max} connections that presented no token ([http] max_unauthenticated_per_client), each with a request in flight; retry shortly"
        ),
    };
    let body = json!({"reason": "too_many_connections", "message": message}).to_string();
    let resp = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\nx-content-type-options: nosniff\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(resp.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), write).await;
}

/// Bind the owner-only socket `path` (mode 0600; the accept loop also
/// checks each peer's uid). A socket left by a daemon that died is
/// replaced; one another daemon still answers on is left alone (`None`,
/// said in the log), as is a path too long for a socket address. Never
/// fatal: without the socket the CLI uses the database file.
pub(crate) async fn bind_socket(path: &std::path::Path) -> Option<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    if path.as_os_str().len() > 100 {
        tracing::warn!(path = %path.display(), "the database path is too long for a socket next to it; CLI calls use the file");
        return None;
    }
    if path.exists() {
        if tokio::net::UnixStream::connect(path).await.is_ok() {
            tracing::warn!(path = %path.display(), "another daemon answers on this database's socket; not taking it");
            return None;
        }
        let _ = std::fs::remove_file(path);
    }
    let bound = UnixListener::bind(path).and_then(|l| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        Ok(l)
    });
    match bound {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot listen on the database's socket; CLI calls use the file");
            None
        }
    }
}
