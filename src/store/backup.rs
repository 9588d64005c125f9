//! Online backups: a consistent copy of the live database, taken while the
//! daemon and other processes keep writing.
//!
//! `VACUUM INTO` reads the whole database inside one read transaction, so
//! the copy is the snapshot at its start: every transaction committed before
//! it, none after, and nothing half-written. Writers are not blocked (in WAL
//! mode readers and the one writer proceed side by side). The copy is made
//! under a temporary name next to the destination, switched to a plain
//! rollback journal (one self-contained file), checked with
//! `PRAGMA integrity_check`, flushed to disk, and only then given its name.
//!
//! It does not restore: restoring is stopping the daemon and putting the file
//! in place (docs/deployment.md, "Backup and restore").

use std::path::{Path, PathBuf};

use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use super::{Error, Result, Store};

/// A finished backup.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Backup {
    /// The file written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The newest event `seq` it holds: the copy has every change up to it.
    pub last_event_seq: i64,
}

/// How a backup request ended.
#[derive(Debug)]
pub enum BackupOutcome {
    /// The copy was written and checked.
    Written(Backup),
    /// `dest` exists and replacing it was not asked for; nothing was written.
    Exists,
}

/// Why a PostgreSQL store is not backed up here: this copies one SQLite
/// file (`VACUUM INTO`); a server's database is the server's to dump.
pub(crate) const NO_FILE_TO_BACK_UP: &str = "handoff backup copies an SQLite file, and this database is on PostgreSQL: back it up with pg_dump (e.g. `pg_dump --format=custom --file=handoff.dump <the database URL>`) or your server's own backups";

impl Store {
    /// Copy the live database to `dest` (see the module docs). An existing
    /// `dest` is left alone unless `replace`; a `dest` that is this database
    /// itself, or that has a `-wal` / `-shm` file beside it (a database some
    /// process has open), is refused either way. SQLite only by nature: a
    /// PostgreSQL store is refused, saying to use pg_dump.
    pub async fn backup_to(&self, dest: &Path, replace: bool) -> Result<BackupOutcome> {
        // A PostgreSQL store has no file to copy: refused before any check.
        if self.file().is_none() {
            return Err(Error::Invalid(NO_FILE_TO_BACK_UP.into()));
        }
        let dest = absolute(dest)?;
        let live = absolute(self.path())?;
        let same = match (std::fs::canonicalize(&dest), std::fs::canonicalize(&live)) {
            (Ok(a), Ok(b)) => a == b,
            _ => dest == live,
        };
        if same {
            return Err(Error::Invalid(format!(
                "{} is the live database itself: back up to another file",
                dest.display()
            )));
        }
        for suffix in ["-wal", "-shm"] {
            let side = sidecar(&dest, suffix);
            if side.exists() {
                return Err(Error::Invalid(format!(
                    "{} exists, so {} looks open in a running handoff (or left by one that crashed): \
                     back up to another file, or stop that process and remove the {suffix} file",
                    side.display(),
                    dest.display()
                )));
            }
        }
        if dest.exists() && !replace {
            return Ok(BackupOutcome::Exists);
        }
        let dir = dest.parent().unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(Error::Invalid(format!(
                "cannot write {}: the directory {} does not exist",
                dest.display(),
                dir.display()
            )));
        }
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.backup-{}.tmp", std::process::id()));
        let result = self.copy_checked(&tmp).await;
        let finished = match result {
            Ok(last_event_seq) => place(&tmp, &dest, replace).map(|placed| {
                placed.then(|| Backup {
                    bytes: std::fs::metadata(&dest).map(|m| m.len()).unwrap_or(0),
                    path: dest.clone(),
                    last_event_seq,
                })
            }),
            Err(e) => Err(e),
        };
        // The temporary file is gone after a successful hard link or rename
        // too (removed, or renamed away); removing it again is harmless.
        for suffix in ["", "-journal", "-wal", "-shm"] {
            let _ = std::fs::remove_file(sidecar(&tmp, suffix));
        }
        Ok(match finished? {
            Some(b) => BackupOutcome::Written(b),
            None => BackupOutcome::Exists,
        })
    }

    /// `VACUUM INTO tmp`, then make `tmp` one self-contained, checked,
    /// durable file. Returns the newest event seq it holds.
    async fn copy_checked(&self, tmp: &Path) -> Result<i64> {
        let _ = std::fs::remove_file(tmp);
        let target = tmp.to_string_lossy().into_owned();
        self.retry(|| async {
            sqlx::query("VACUUM INTO ?")
                .bind(&target)
                .execute(self.pool()?)
                .await?;
            Ok(())
        })
        .await?;
        let opts = SqliteConnectOptions::new().filename(tmp);
        let mut conn = SqliteConnection::connect_with(&opts).await?;
        // The copy keeps the source's WAL flag in its header; a rollback
        // journal makes it one self-contained file (no -wal beside it).
        // Opening it with handoff switches it back to WAL.
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode = DELETE")
            .fetch_one(&mut conn)
            .await?;
        if !mode.eq_ignore_ascii_case("delete") {
            return Err(Error::Invalid(format!(
                "the backup copy stayed in {mode} mode instead of a single file"
            )));
        }
        let check: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_all(&mut conn)
            .await?;
        if check != ["ok"] {
            return Err(Error::Corrupt(format!(
                "the backup copy failed its integrity check: {}",
                check.join("; ")
            )));
        }
        let last: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
            .fetch_one(&mut conn)
            .await?;
        conn.close().await?;
        std::fs::File::open(tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error(tmp, e))?;
        Ok(last.unwrap_or(0))
    }
}

/// Give `tmp` the name `dest`: a hard link when not replacing (it fails if
/// `dest` appeared meanwhile, so nothing is ever overwritten by accident),
/// else a rename over it. Returns false when `dest` exists and may not be
/// replaced.
fn place(tmp: &Path, dest: &Path, replace: bool) -> Result<bool> {
    if replace {
        std::fs::rename(tmp, dest).map_err(|e| io_error(dest, e))?;
    } else {
        match std::fs::hard_link(tmp, dest) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(io_error(dest, e)),
        }
    }
    // The new name is durable only once its directory is flushed too.
    if let Some(dir) = dest.parent()
        && let Ok(d) = std::fs::File::open(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
    {
        let _ = d.sync_all();
    }
    Ok(true)
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| io_error(p, e))
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Invalid(format!("cannot write {}: {e}", path.display()))
}
