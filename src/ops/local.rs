//! The local implementation of [`super::Ops`]: a store handle plus the
//! action policy from the config (auto-decision rules, redaction keys).
//! Store errors and typed refusals are mapped to [`super::Error`] in
//! `super::error`, once, for every door.
//! The primitives themselves are in `questions`, `boards`, `actions` and
//! `sessions`: one `Run` impl each, by area, as in `super::backend`.

mod access;
mod actions;
mod boards;
mod chat;
mod chat_slack;
mod chat_voice;
mod questions;
mod sessions;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Error;
use crate::store::actions::Rule;
use crate::store::{self, Store};

/// How `propose_action` treats new actions: the config's `[[rule]]`
/// auto-decisions, `[redact] keys` and `[approvals]`.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// First matching rule decides a freshly proposed action.
    pub rules: Vec<Rule>,
    /// Secret key patterns (None: the store's defaults).
    pub redact_keys: Option<Vec<String>>,
    /// Who may approve (`[approvals]`: separation of duties).
    pub approvals: crate::config::ApprovalsConfig,
}

impl Policy {
    /// The policy `cfg` gives (`[[rule]]`, `[redact]`), or the rules of
    /// `rules_file` (TOML with `[[rule]]` entries) when given.
    pub fn from_config(
        cfg: &crate::config::Config,
        rules_file: Option<&std::path::Path>,
    ) -> Result<Policy, Error> {
        let rules = match rules_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::invalid(format!("cannot read rules {}: {e}", path.display()))
                })?;
                store::actions::RulesFile::parse(&text)
                    .map_err(|e| Error::invalid(format!("rules {}: {e}", path.display())))?
                    .rule
            }
            None => cfg.rules.clone(),
        };
        Ok(Policy {
            rules,
            ..Policy::of(cfg)
        })
    }

    /// The policy `cfg` gives: its `[[rule]]`s, `[redact]` and `[approvals]`
    /// (what the daemon decides by).
    pub fn of(cfg: &crate::config::Config) -> Policy {
        Policy {
            rules: cfg.rules.clone(),
            redact_keys: Some(cfg.redact.keys.clone()),
            approvals: cfg.approvals.clone(),
        }
    }
}

/// How often the local waits look at the store.
const POLL: Duration = Duration::from_millis(200);

/// Operations against a store on this machine.
#[derive(Debug, Clone)]
pub struct Local {
    pub(super) store: Store,
    pub(super) policy: Arc<Policy>,
    /// The one project these operations resolve ids in and list, for a
    /// caller scoped to it (an HTTP token's project); `None`: every project.
    pub(super) scope: Option<String>,
    /// On PostgreSQL, nudged on every commit of any process once a local
    /// wait has started listening (see [`Local::pause`]).
    changes: Arc<OnceLock<Arc<Notify>>>,
}

impl Local {
    /// Operations on `store` with `policy` for proposed actions.
    pub fn new(store: Store, policy: Policy) -> Local {
        Local {
            store,
            policy: Arc::new(policy),
            scope: None,
            changes: Arc::default(),
        }
    }

    /// The same operations for a caller who sees only `project`'s items
    /// (`None`: every project's): ids resolve, and lists and sweeps run,
    /// within it, so another project's ids neither match nor make a short
    /// id ambiguous.
    pub fn within(&self, project: Option<&str>) -> Local {
        Local {
            scope: project.map(str::to_string),
            ..self.clone()
        }
    }

    /// The store's clock, in ms since the epoch.
    pub fn now(&self) -> i64 {
        self.store.now()
    }

    /// The project these operations are scoped to, if one.
    pub(super) fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Pause a local wait for at most `at_most`. On PostgreSQL it ends at
    /// the next commit of any process: the first wait opens a LISTEN
    /// session of its own (`follow::listen`, the daemon's listener, kept
    /// for this process's life), so `handoff wait`, `ask --wait` and
    /// `propose` without a daemon see a decision within a round trip, not
    /// a poll interval. On a SQLite file, the pause itself: the daemon's
    /// socket is the fast path there, and a wait without a daemon polls.
    pub(super) async fn pause(&self, at_most: Duration) {
        let Some(pool) = self.store.notifications() else {
            tokio::time::sleep(at_most).await;
            return;
        };
        let nudge = self.changes.get_or_init(|| {
            let nudge = Arc::new(Notify::new());
            // Never cancelled: it ends with the process (a CLI call, an
            // MCP server), as its connection does.
            tokio::spawn(crate::follow::listen(
                pool,
                nudge.clone(),
                CancellationToken::new(),
            ));
            nudge
        });
        // FAULT(no-recheck): the pause ends only at a nudge (or the
        // listener's fallback interval), so a test can tell a wake by
        // another process's commit from the wait's own re-read.
        let at_most = if crate::fault::on("no-recheck") {
            crate::follow::watch::fallback()
        } else {
            at_most
        };
        let _ = tokio::time::timeout(at_most, nudge.notified()).await;
    }

    /// Operations on a fresh store file at `path` with no policy, for the
    /// in-module tests of the doors above the operations.
    #[cfg(test)]
    pub(crate) async fn open_for_test(path: &std::path::Path) -> Local {
        Local::new(Store::open(path).await.unwrap(), Policy::default())
    }

    /// The store underneath (for tests and the daemon).
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// Serialize a refusal or outcome for the `detail` of an error.
pub(super) fn detail<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A string field that must not be blank.
pub(super) fn required(what: &str, v: &str) -> Result<(), Error> {
    if v.trim().is_empty() {
        return Err(Error::invalid(format!("`{what}` is required")));
    }
    Ok(())
}

/// Parse a store enum spelled as a string, mapping its error to `Invalid`.
pub(super) fn parse<T>(what: &str, v: &str) -> Result<T, Error>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    v.trim()
        .parse()
        .map_err(|e: T::Err| Error::invalid(format!("{what}: {e}")))
}
