//! Serving the daemon's router on its listener, with the limits
//! `axum::serve` does not offer: a header timeout (which also ends idle
//! keep-alive connections), a whole-body deadline, a body size announced
//! too large refused before it is read, and a cap on connections served at
//! once, beyond which a connection gets a clear `503` and is closed.
//! HTTP/1.1 only (hyper's HTTP/1 server), as before.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::HttpConfig;

/// Connections open right now.
static OPEN: AtomicU64 = AtomicU64::new(0);
/// Connections refused because `max_connections` were open.
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// `(open, refused)` connection counts of this process, for `/metrics`.
pub fn connection_counts() -> (u64, u64) {
    // Relaxed: independent counters, read only for reporting.
    (
        OPEN.load(Ordering::Relaxed),
        REFUSED.load(Ordering::Relaxed),
    )
}

/// The largest request body: the API's and the inbound wake route's limit.
const MAX_BODY: usize = crate::api::wake::MAX_BODY;

/// A listener the daemon serves on: its TCP address, or its owner-only
/// Unix socket next to the database.
pub(crate) trait Accept: Send {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection; `None` for one refused at the door (dropped).
    fn accept(&self) -> impl Future<Output = std::io::Result<Option<Self::Io>>> + Send;
}

impl Accept for TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&self) -> std::io::Result<Option<Self::Io>> {
        Ok(Some(TcpListener::accept(self).await?.0))
    }
}

impl Accept for UnixListener {
    type Io = tokio::net::UnixStream;
    /// Why the peer check on top of the socket's 0600 mode: a socket
    /// file's permissions are not honoured on every system; the kernel's
    /// peer credentials are.
    async fn accept(&self) -> std::io::Result<Option<Self::Io>> {
        let (stream, _) = UnixListener::accept(self).await?;
        let me = nix::unistd::Uid::current().as_raw();
        match stream.peer_cred() {
            Ok(c) if c.uid() == me => Ok(Some(stream)),
            Ok(c) => {
                tracing::warn!(
                    uid = c.uid(),
                    "refused a socket connection from another user"
                );
                Ok(None)
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read a socket peer's credentials; refused");
                Ok(None)
            }
        }
    }
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
    let slots = Arc::new(Semaphore::new(cfg.max_connections));
    let max = cfg.max_connections;
    let graceful = GracefulShutdown::new();
    loop {
        // Why select: shutdown must not wait for the next connection.
        let stream = tokio::select! {
            _ = shutdown.cancelled() => break,
            r = listener.accept() => match r {
                Ok(Some(stream)) => stream,
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
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(refuse(stream, max));
            continue;
        };
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout);
        let conn =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        OPEN.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            OPEN.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("open HTTP connections did not finish within {grace:?}; closing them");
    }
    Ok(())
}

/// Answer a connection over the cap with 503 and close it, without reading
/// its request. Bounded: a peer that does not read cannot hold the task.
async fn refuse<S: AsyncWrite + Unpin>(mut stream: S, max: usize) {
    let body = json!({
        "reason": "too_many_connections",
        "message": format!("the daemon already serves {max} connections ([http] max_connections); close idle ones or retry shortly"),
    })
    .to_string();
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

/// Middleware: read the whole body within the deadline before any handler
/// runs. A body announced over the limit is refused at once (413), one that
/// does not arrive in time gets 408; both close the connection.
async fn read_body(State(deadline): State<Duration>, req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY as u64) {
        return refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the body is over {MAX_BODY} bytes; send less"),
        );
    }
    let chunked = req.headers().contains_key(header::TRANSFER_ENCODING);
    if announced.unwrap_or(0) == 0 && !chunked {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if too_large {
                refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    format!("the body is over {MAX_BODY} bytes; send less"),
                )
            } else {
                refusal(
                    StatusCode::BAD_REQUEST,
                    "bad_body",
                    format!("the request body could not be read ({e}); send it again"),
                )
            }
        }
        Err(_) => refusal(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the request body did not arrive within {}s ([http] body_timeout_secs); send it at once",
                deadline.as_secs()
            ),
        ),
    }
}

/// A refusal in the API's `{reason, message}` shape that closes the
/// connection (its unread body must not be taken for the next request).
fn refusal(status: StatusCode, reason: &str, message: String) -> Response {
    let mut resp = (
        status,
        axum::Json(json!({"reason": reason, "message": message})),
    )
        .into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
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
