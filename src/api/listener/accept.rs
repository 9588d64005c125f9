//! The listeners the daemon serves on ([`Accept`]): its TCP address and
//! its owner-only Unix socket, each accepting a connection (the socket
//! only from this host's owner) and telling when one has bytes to read.

use std::net::IpAddr;
use std::os::fd::AsRawFd;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};

/// A listener the daemon serves on: its TCP address, or its owner-only
/// Unix socket next to the database.
pub(crate) trait Accept: Send {
    type Io: AsyncRead + AsyncWrite + AsRawFd + Unpin + Send + 'static;
    /// The next connection; `None` for one refused at the door (dropped).
    fn accept(&self) -> impl Future<Output = std::io::Result<Option<Accepted<Self::Io>>>> + Send;
    /// Resolves once `io` has bytes to read (or was closed).
    fn readable(io: &Self::Io) -> impl Future<Output = std::io::Result<()>> + Send;
}

/// An accepted connection.
pub(crate) struct Accepted<Io> {
    pub(super) io: Io,
    /// The client's address; `None` for the owner-only socket, whose peer
    /// is this host's owner.
    pub(super) peer: Option<IpAddr>,
    /// Bytes were already waiting when it was accepted.
    pub(super) spoke: bool,
}

impl Accept for TcpListener {
    type Io = tokio::net::TcpStream;
    /// Why the peek: under load the accept lags the handshake, so a client
    /// that sends its request at once has it waiting here, and must count
    /// as one that spoke before its task first runs (a silent connection
    /// is closed first to make room).
    async fn accept(&self) -> std::io::Result<Option<Accepted<Self::Io>>> {
        let (stream, peer) = TcpListener::accept(self).await?;
        let spoke = waiting(&stream);
        Ok(Some(Accepted {
            io: stream,
            peer: Some(peer.ip()),
            spoke,
        }))
    }
    async fn readable(io: &Self::Io) -> std::io::Result<()> {
        settled(
            || io.readable(),
            || io.try_io(tokio::io::Interest::READABLE, || peek(io)),
        )
        .await
    }
}

impl Accept for UnixListener {
    type Io = tokio::net::UnixStream;
    /// Why the peer check on top of the socket's 0600 mode: a socket
    /// file's permissions are not honoured on every system; the kernel's
    /// peer credentials are.
    async fn accept(&self) -> std::io::Result<Option<Accepted<Self::Io>>> {
        let (stream, _) = UnixListener::accept(self).await?;
        let me = nix::unistd::Uid::current().as_raw();
        match stream.peer_cred() {
            Ok(c) if c.uid() == me => Ok(Some(Accepted {
                io: stream,
                peer: None,
                spoke: false,
            })),
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
    async fn readable(io: &Self::Io) -> std::io::Result<()> {
        settled(
            || io.readable(),
            || io.try_io(tokio::io::Interest::READABLE, || peek(io)),
        )
        .await
    }
}

/// Peek at `io`'s socket buffer without blocking: the bytes waiting (0
/// once the peer closed), or `WouldBlock` when none are.
fn peek(io: &impl AsRawFd) -> std::io::Result<usize> {
    use nix::sys::socket::{MsgFlags, recv};
    let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
    recv(io.as_raw_fd(), &mut [0u8; 1], flags).map_err(std::io::Error::from)
}

/// Wait until a socket is readable for real: `ready` resolves when the
/// reactor says so, `peek` then checks (through the reactor, so a
/// `WouldBlock` clears its readiness). Why the peek: a new registration
/// reports readable before anything arrived; a peek that would block
/// clears that, and the wait goes on.
async fn settled<R: Future<Output = std::io::Result<()>>>(
    ready: impl Fn() -> R,
    peek: impl Fn() -> std::io::Result<usize>,
) -> std::io::Result<()> {
    loop {
        ready().await?;
        match peek() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
            Ok(_) => return Ok(()),
        }
    }
}

/// Whether bytes wait to be read on `io` now (the socket's own buffer,
/// whatever the reactor has seen yet).
pub(super) fn waiting(io: &impl AsRawFd) -> bool {
    matches!(peek(io), Ok(n) if n > 0)
}
