//! Noticing writes made by other processes (the CLI, an MCP server, another
//! daemon), so the daemon need not poll the event log to see them.
//!
//! On Linux, [`watch`] asks inotify about the directory that holds the
//! database, for writes to `<db>`, `<db>-wal` and `<db>-journal` (and their
//! creation or replacement: the WAL file comes and goes, and a checkpoint
//! truncating it is a write too). A change is checked against the log's
//! newest `seq` and only a new event nudges the followers, so a write the
//! daemon made itself (a cursor save, a delivery) costs a read or two, never a
//! loop of nudges. A slow fallback poll of that same read (every
//! [`fallback`], 2 s) covers a missed notification, a filesystem where
//! inotify sees nothing, other systems, and an inotify that cannot be set
//! up (said once in the log, at info).
//!
//! It reads no events and decides nothing: the followers do. Two
//! environment variables tune it: `HANDOFF_WATCH_FALLBACK_MS` (the
//! fallback interval, within [`crate::config::tuning::WATCH_FALLBACK`]'s
//! bounds) and `HANDOFF_WATCH=poll` (no inotify: the fallback alone).

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::store::Store;

/// After a change that showed no new event, the log is read again after
/// each of these pauses, or sooner when the files change again. Why: a
/// commit becomes visible to readers just after its last write to the WAL
/// file, but inotify reports its first, so the first look often comes too
/// early; short pauses catch it within a millisecond or two of becoming
/// visible, where one fixed 5 ms pause added up to 5 ms to every wake-up
/// another process caused. A change of our own (a cursor save) costs these
/// few reads of the log's end and nothing else.
const SETTLE: [Duration; 3] = [
    Duration::from_millis(1),
    Duration::from_millis(2),
    Duration::from_millis(4),
];

/// How often the event log is read when no notification comes: the
/// fallback poll, and the longest any follower sleeps without a nudge.
pub fn fallback() -> Duration {
    static EVERY: OnceLock<Duration> = OnceLock::new();
    *EVERY.get_or_init(|| crate::config::tuning::WATCH_FALLBACK.get())
}

/// Whether inotify may be used (`HANDOFF_WATCH` is not `poll`).
fn notifications_wanted() -> bool {
    match std::env::var("HANDOFF_WATCH") {
        Ok(v) if v.trim() == "poll" => false,
        Ok(v) if !v.trim().is_empty() && v.trim() != "inotify" => {
            tracing::warn!(value = %v, "HANDOFF_WATCH is `inotify` or `poll`; using inotify");
            true
        }
        _ => true,
    }
}

/// Nudge `nudge` whenever another process appends to the event log of
/// `store`'s database, until `cancel`.
pub async fn watch(store: Store, nudge: Arc<Notify>, cancel: CancellationToken) {
    let every = fallback();
    let mut files = Files::open(store.path(), every);
    // After the watch is set up: a write from now on is either reported or
    // already in `seen`, and this first nudge covers a follower that read
    // the log just before that write.
    let mut seen = store.last_event_seq().await.unwrap_or(0);
    nudge.notify_waiters();
    if let Some(dir) = files.dir() {
        tracing::debug!(dir = %dir.display(), "watching the database files for writes by other processes");
    }
    loop {
        // Why select: shutdown must not wait out the fallback interval.
        let notified = tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(every) => false,
            () = files.changed() => true,
        };
        if check(&store, &mut seen, &nudge).await || !notified {
            continue;
        }
        // A change with no new event: ours (a cursor save), or a commit
        // not visible yet. A few more looks shortly settle which.
        // Another change starts the pauses over, so the last write of a
        // commit always gets all of them.
        let mut pause = 0;
        while let Some(wait) = SETTLE.get(pause) {
            let changed = tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(*wait) => false,
                () = files.changed() => true,
            };
            if check(&store, &mut seen, &nudge).await {
                break;
            }
            pause = if changed { 0 } else { pause + 1 };
        }
    }
}

/// Read the newest `seq`; nudge when it moved from `seen`.
async fn check(store: &Store, seen: &mut i64, nudge: &Notify) -> bool {
    match store.last_event_seq().await {
        // `!=`, not `>`: a database restored from a backup may go back.
        Ok(seq) if seq != *seen => {
            *seen = seq;
            nudge.notify_waiters();
            true
        }
        Ok(_) => false,
        Err(e) => {
            // The followers read (and report) the log themselves.
            tracing::debug!(error = %e, "cannot read the event log's end");
            false
        }
    }
}

/// The database files' change notifications, where there are any.
struct Files {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    inner: Option<inotify::Watch>,
}

impl Files {
    /// Watch the files of the database at `db`; without notifications
    /// (off, unsupported or failed), say so once: writes by other processes
    /// are then seen within `every`.
    fn open(db: &Path, every: Duration) -> Files {
        let why = if notifications_wanted() {
            match Self::notifications(db) {
                Ok(files) => return files,
                Err(e) => e,
            }
        } else {
            "HANDOFF_WATCH=poll".to_string()
        };
        tracing::info!(
            reason = %why,
            "not watching the database files: writes by other processes are seen within {every:?}"
        );
        Files {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            inner: None,
        }
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn notifications(db: &Path) -> Result<Files, String> {
        Ok(Files {
            inner: Some(inotify::Watch::new(db)?),
        })
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn notifications(_db: &Path) -> Result<Files, String> {
        Err("no file change notifications on this system".into())
    }

    /// The directory watched, if notifications are on.
    fn dir(&self) -> Option<&Path> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(w) = &self.inner {
            return Some(&w.dir);
        }
        None
    }

    /// Wait for a write to one of the database files; never, without
    /// notifications.
    async fn changed(&mut self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(w) = &self.inner {
            match w.changed().await {
                Ok(()) => return,
                Err(e) => {
                    tracing::info!(error = %e, "stopped watching the database files; falling back to polling");
                    self.inner = None;
                }
            }
        }
        std::future::pending::<()>().await
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod inotify {
    //! inotify on the database's directory, through `nix` and tokio's
    //! `AsyncFd` (no thread of its own).

    use std::ffi::OsString;
    use std::os::fd::{AsFd, AsRawFd, RawFd};
    use std::path::{Path, PathBuf};

    use nix::errno::Errno;
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    use tokio::io::unix::AsyncFd;

    /// The inotify instance, as tokio's `AsyncFd` wants it.
    struct Fd(Inotify);

    impl AsRawFd for Fd {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_fd().as_raw_fd()
        }
    }

    /// A watch on one database's directory.
    pub(super) struct Watch {
        fd: AsyncFd<Fd>,
        /// The directory watched (symlinks resolved, as SQLite does).
        pub(super) dir: PathBuf,
        /// `<db>`, `<db>-wal`, `<db>-journal`.
        names: [OsString; 3],
    }

    impl Watch {
        /// Watch the directory of `db` for writes, creations and renames.
        pub(super) fn new(db: &Path) -> Result<Watch, String> {
            // SQLite puts the WAL next to the real file, not the link.
            let real = std::fs::canonicalize(db)
                .map_err(|e| format!("cannot resolve {}: {e}", db.display()))?;
            let (Some(dir), Some(name)) = (real.parent(), real.file_name()) else {
                return Err(format!("{} has no directory", real.display()));
            };
            let names = ["", "-wal", "-journal"].map(|s| {
                let mut n = name.to_os_string();
                n.push(s);
                n
            });
            let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
                .map_err(|e| format!("inotify_init: {e}"))?;
            ino.add_watch(
                dir,
                AddWatchFlags::IN_MODIFY | AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO,
            )
            .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
            // `AsyncFd::new` is deprecated because a bare `AsRawFd` may close
            // or swap its fd while registered; `Fd` owns its inotify fd, and
            // nothing takes it out of the `AsyncFd` until both are dropped.
            // (`register`, the replacement, is `unsafe`, which we forbid.)
            #[allow(deprecated)]
            let fd = AsyncFd::new(Fd(ino)).map_err(|e| format!("cannot poll inotify: {e}"))?;
            Ok(Watch {
                fd,
                dir: dir.to_path_buf(),
                names,
            })
        }

        /// Wait until one of the database's files changed. Everything
        /// queued is read at once, so a burst of writes is one change.
        pub(super) async fn changed(&self) -> Result<(), String> {
            loop {
                let mut guard = self.fd.readable().await.map_err(|e| e.to_string())?;
                let mut ours = false;
                loop {
                    match guard.get_inner().0.read_events() {
                        Ok(events) => {
                            for ev in events {
                                if ev.mask.contains(AddWatchFlags::IN_IGNORED) {
                                    return Err("the database's directory went away".into());
                                }
                                ours |= ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW)
                                    || ev.name.is_some_and(|n| self.names.contains(&n));
                            }
                        }
                        Err(Errno::EAGAIN) => {
                            guard.clear_ready();
                            break;
                        }
                        Err(Errno::EINTR) => {}
                        Err(e) => return Err(format!("reading inotify: {e}")),
                    }
                }
                if ours {
                    return Ok(());
                }
            }
        }
    }
}
