//! `[store]` and which database a command uses: `--db`, `$HANDOFF_DB`, the
//! config's path, or the default location; a PostgreSQL URL where the command
//! takes one.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Config;

/// `[store]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Database file; `$HANDOFF_DB` wins; `~` expands to `$HOME`.
    pub path: Option<String>,
    /// A PostgreSQL database instead (`postgres://user:pass@host/db`),
    /// shared by several daemons; `$HANDOFF_DB` wins. Not with `path`.
    pub url: Option<String>,
}

/// Where a command's database path came from, for messages and `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbSource {
    /// `--db FILE`.
    Flag,
    /// `$HANDOFF_DB`.
    Env,
    /// `[store] path` of this config file.
    Config(PathBuf),
    /// Nothing named one: the default location.
    Default,
}

impl DbSource {
    /// Whether someone named the file (anything but the default location).
    /// A named file that does not exist is an error, never created quietly.
    pub fn is_named(&self) -> bool {
        !matches!(self, DbSource::Default)
    }
}

impl fmt::Display for DbSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbSource::Flag => f.write_str("--db"),
            DbSource::Env => f.write_str("HANDOFF_DB"),
            DbSource::Config(p) => write!(f, "[store] path in {}", p.display()),
            DbSource::Default => f.write_str("the default location"),
        }
    }
}

/// Where a database is: a file (the embedded default), or a PostgreSQL
/// server (several daemons share one; `init`, `backup` and `status` work on
/// files only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseRef {
    /// An SQLite file.
    File(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

/// The database a command uses: `flag` (`--db`), else `$HANDOFF_DB`, else
/// the config's `[store] path` (`config_path` is the file it came from),
/// else the default location. Every command resolves it this way; the
/// commands that work on a file only call this, the others
/// [`database_ref`], which takes a PostgreSQL URL too.
pub fn database(
    flag: Option<&Path>,
    cfg: &Config,
    config_path: Option<&Path>,
) -> Result<(PathBuf, DbSource), crate::store::Error> {
    match database_ref(flag, cfg, config_path)? {
        (DatabaseRef::File(path), source) => Ok((path, source)),
        (DatabaseRef::Postgres(url), source) => Err(crate::store::Error::Invalid(format!(
            "{source} names the PostgreSQL database {}; this command works on an SQLite file (on PostgreSQL, `handoff migrate` prepares the database and pg_dump backs it up): give a file path",
            crate::store::postgres::shown(&url)
        ))),
    }
}

/// [`database`], with a PostgreSQL URL taken as one. Any other
/// `scheme://` is refused: taken as a path, it would become a folder
/// named `scheme:` holding a fresh SQLite file.
pub fn database_ref(
    flag: Option<&Path>,
    cfg: &Config,
    config_path: Option<&Path>,
) -> Result<(DatabaseRef, DbSource), crate::store::Error> {
    let (path, source) = if let Some(p) = flag {
        (p.to_path_buf(), DbSource::Flag)
    } else if let Some(p) = std::env::var_os("HANDOFF_DB").filter(|p| !p.is_empty()) {
        (PathBuf::from(p), DbSource::Env)
    } else if let Some(u) = cfg.store.url.as_deref().filter(|u| !u.trim().is_empty()) {
        let from = config_path.map_or_else(|| PathBuf::from("the config"), Path::to_path_buf);
        let source = DbSource::Config(from);
        if cfg
            .store
            .path
            .as_deref()
            .is_some_and(|p| !p.trim().is_empty())
        {
            return Err(crate::store::Error::Invalid(format!(
                "{source} sets both [store] path and [store] url: keep the one database handoff should use"
            )));
        }
        if !matches!(
            url_scheme(Path::new(u.trim())),
            Some("postgres" | "postgresql")
        ) {
            return Err(crate::store::Error::Invalid(format!(
                "{source} sets [store] url to something other than a postgres:// URL: write postgres://user:password@host/database, or use [store] path for a file"
            )));
        }
        return Ok((DatabaseRef::Postgres(u.trim().to_string()), source));
    } else if let Some(p) = cfg.store.path.as_deref().filter(|p| !p.trim().is_empty()) {
        let from = config_path.map_or_else(|| PathBuf::from("the config"), Path::to_path_buf);
        (expand_home(p), DbSource::Config(from))
    } else {
        let path = crate::store::default_location()?;
        return Ok((DatabaseRef::File(path), DbSource::Default));
    };
    match url_scheme(&path) {
        None => Ok((DatabaseRef::File(path), source)),
        Some("postgres" | "postgresql") => Ok((
            DatabaseRef::Postgres(path.to_string_lossy().into_owned()),
            source,
        )),
        Some(scheme) => Err(crate::store::Error::Invalid(format!(
            "{source} names `{}`, a {scheme}:// URL: handoff keeps its store in an SQLite file, so give a file path",
            path.display()
        ))),
    }
}

/// The scheme of a `scheme://…` database reference (`postgres`, …), if the
/// path is written as a URL rather than a file path.
fn url_scheme(path: &Path) -> Option<&str> {
    let (scheme, _) = path.to_str()?.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
        .then_some(scheme)
}

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}
