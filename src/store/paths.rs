//! Where a database lives by default, the short name `/healthz` shows for
//! it, and the local daemon's socket beside it.

use std::path::{Path, PathBuf};

use super::{Error, Result};

/// The default database location, used when nothing names a file:
/// `$XDG_DATA_HOME/handoff/handoff.db`, else `~/.local/share/handoff/handoff.db`.
/// (`--db`, `$HANDOFF_DB` and the config's `[store] path` come first: see
/// [`crate::config::database`].)
pub fn default_location() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(d).join("handoff").join("handoff.db"));
    }
    match std::env::var_os("HOME").filter(|p| !p.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".local/share/handoff/handoff.db")),
        None => Err(Error::Invalid(
            "cannot find a place for the database: set HANDOFF_DB, --db or HOME".into(),
        )),
    }
}

/// A short name for a database file that does not reveal its path: the
/// first 16 hex digits of the SHA-256 of its canonical path. `/healthz`
/// reports the daemon's, so `handoff status` can tell whether the daemon it
/// reaches serves the same file it would use.
pub fn fingerprint(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The local daemon's socket for the database at `path`: `<path>.sock`,
/// next to it. `handoff serve` listens there (owner only); the CLI on this
/// host sends its calls there when it answers.
pub fn socket_path(path: &Path) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".sock");
    s.into()
}

pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}
