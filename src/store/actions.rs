//! Pending actions: calls an agent may make only after a person
//! approves them.
//!
//! States: `pending → approved → executing → executed | failed | unknown`,
//! and `pending → rejected | expired`. Every transition is one guarded
//! `UPDATE … WHERE <state predicate>` (or the proposal's `INSERT`) whose
//! table triggers append its event, which is its [audit](AuditEntry)
//! entry, in the same statement; the predicate decides races, whether it
//! returned a row tells who won, and losers get the winner's decision back
//! as a typed result.
//!
//! Exactly-once, stated honestly: never two executions at once — always;
//! exactly one — if the executor survived the call; after a crash mid-call —
//! `unknown`, and shown to a human.
//!
//! Layout:
//! - this file: the module error, reads (get, list) and the stored row
//!   every statement decodes;
//! - `model`: [`Action`], [`Status`], [`OnExpire`], [`Actor`];
//! - `trail`: an action's audit ([`AuditEntry`]), read from the event log;
//! - [`codec`]: strict JSON, canonical form, fingerprint, patches, redaction;
//! - `outcomes`: the proposal and the typed outcome of each transition;
//! - `transitions`: propose, approve, reject; `approval`: what an approval
//!   applies and SQLite's one call for it, `postgres` PostgreSQL's steps;
//! - `execution`: claim, lease renewal, complete, waits;
//! - `recovery`: expiry sweeps, crash recovery, resolve-unknown, purge;
//! - `attempts`: the audit of a refused decision attempt;
//! - [`rules`]: auto-decision rules and the external deciders/verifiers.
//!
//! Both engines run the same statements, written once (`$N` values) and
//! run through the store's engine seam (`store/engine.rs`); where
//! PostgreSQL spells a word differently, `spelling` renders each
//! statement for it. One write differs in shape, the approval: SQLite's
//! one call that also reads a refusal's explanation, PostgreSQL's steps
//! under a row lock (`postgres`, beside its twin in `approval`).
//!
//! This module does not run executors (the CLI does) and has no background
//! thread: expiry is lazy, and `expire_due()` is called by whoever owns a
//! cadence (the daemon, `handoff expire`).

mod approval;
mod attempts;
pub mod codec;
mod escalation;
mod execution;
mod expiry;
mod logged;
mod model;
mod outcomes;
mod postgres;
mod proposal;
mod recovery;
pub mod rules;
mod scrub;
mod spelling;
mod trail;
mod transitions;

/// The SQLite text of the sequential cycle's four writes as the store
/// sends them (proposal, approval, claim, completion), by name: the
/// schema floor (`benches/peer/schema_floor.py`) runs them in-thread,
/// with no driver, for the cycle's ceiling. Not an interface.
#[doc(hidden)]
pub fn cycle_statements() -> [(&'static str, &'static str); 4] {
    [
        ("propose", proposal::INSERT.lite()),
        ("approve", approval::APPROVE_ONE_CALL.lite()),
        ("claim", execution::CLAIM.lite()),
        ("complete", execution::COMPLETE.lite()),
    ]
}

use serde_json::{Value, json};

use super::Store;
use super::engine::{Stmt, Tx};
use spelling::{Spelling, Sql};

pub use codec::Redactor;
pub use escalation::Escalation;
pub use escalation::{ESCALATION_ACTOR, Escalated, escalation_note};
pub use expiry::{expiry_note, timed_out};
pub use model::{Action, Actor, OnExpire, Status};
pub use outcomes::{
    ApproveOutcome, ClaimOutcome, CompleteOutcome, NewAction, Proposed, RejectOutcome, Settled,
    self_approval_note, unknown_duplicate_note,
};
pub use recovery::{PurgeReport, RecoverReport, Resolution, VERIFY_RENEW};
pub use rules::{Condition, Rule, RuleApplied, RuleDecision, RulesFile, Verdict, kind_matches};
pub use trail::AuditEntry;
pub use transitions::SELF_APPROVAL;

/// Errors from the actions engine. Lost races, expired or already-decided
/// actions are *not* errors: they come back as typed outcomes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A store failure, or input that breaks a documented limit.
    #[error(transparent)]
    Store(#[from] super::Error),
    /// The dedup key is held by a live action with a different payload.
    #[error(
        "dedup key `{key}` is already held by live action {existing_id} with a different payload \
         (its fingerprint {existing_fingerprint}, yours {new_fingerprint}); wait until it settles \
         or use another key"
    )]
    DedupConflict {
        /// The contested dedup key.
        key: String,
        /// The live action holding the key.
        existing_id: String,
        /// Fingerprint of the live action.
        existing_fingerprint: String,
        /// Fingerprint of the refused proposal.
        new_fingerprint: String,
    },
    /// No action has this id or short id.
    #[error("no action `{0}`; list them with `handoff actions`")]
    NotFound(String),
    /// A short id matches several actions.
    #[error("`{0}` matches several actions; give more characters of the id")]
    Ambiguous(String),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Store(super::Error::Db(e))
    }
}

/// Results of the actions engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Columns every read selects.
pub(crate) const COLUMNS: &str = "id, kind, summary, args, fingerprint, dedup_key, status, expires_at, \
     on_expire, approvals_required, approvals, decided_by, decided_at, reason, patch, effective_args, \
     redact_keys, exec, verify, owner, lease_until, result, error, attempts, proposer, project, \
     session, created_at, updated_at, not_by_proposer, escalation, escalated, escalated_at";

/// One action by full id (`$1`).
static LOAD: Sql = Sql::new(|_| format!("SELECT {COLUMNS} FROM actions WHERE id = $1"));

/// [`LOAD`], the row locked until the write ends (see [`Spelling::lock`]).
static LOAD_LOCKED: Sql =
    Sql::new(|s| format!("SELECT {COLUMNS} FROM actions WHERE id = $1{}", s.lock));

/// Every action of `$1`'s project (all when NULL), newest first, reading
/// the columns `columns` names.
fn list_sql(s: &Spelling, columns: &str) -> String {
    format!(
        "SELECT {columns} FROM actions WHERE ($1 IS NULL OR project = $1)
         ORDER BY created_at DESC, id{} DESC",
        s.bytewise
    )
}

/// [`list_sql`] with every column.
static LIST: Sql = Sql::new(|s| list_sql(s, COLUMNS));

/// [`list_sql`] without the arguments, patch and result (`null`), which
/// may be megabytes each: a list reads and holds only what a list line
/// shows. Column by column, so a change to [`COLUMNS`] cannot silently
/// bring the heavy ones back.
static LIST_SUMMARIES: Sql = Sql::new(|s| {
    let light: Vec<String> = COLUMNS
        .split(',')
        .map(str::trim)
        .map(|c| match c {
            "args" | "effective_args" => format!("'null' AS {c}"),
            "patch" | "result" => format!("NULL AS {c}"),
            other => other.to_string(),
        })
        .collect();
    list_sql(s, &light.join(", "))
});

fn corrupt(what: &str, e: impl std::fmt::Display) -> super::Error {
    super::Error::Corrupt(format!("action {what}: {e}"))
}

fn parse_json<T: serde::de::DeserializeOwned>(what: &str, s: &str) -> super::Result<T> {
    serde_json::from_str(s).map_err(|e| corrupt(what, e))
}

fn opt_json<T: serde::de::DeserializeOwned>(
    what: &str,
    s: Option<String>,
) -> super::Result<Option<T>> {
    s.map(|s| parse_json(what, &s)).transpose()
}

/// An action's row as either engine stores it ([`COLUMNS`]: text and
/// 64-bit integers on both), before its JSON and words are read.
#[derive(sqlx::FromRow)]
pub(crate) struct Stored {
    id: String,
    kind: String,
    summary: String,
    args: String,
    fingerprint: String,
    dedup_key: Option<String>,
    status: String,
    expires_at: Option<i64>,
    on_expire: String,
    approvals_required: i64,
    approvals: i64,
    decided_by: Option<String>,
    decided_at: Option<i64>,
    reason: Option<String>,
    patch: Option<String>,
    effective_args: String,
    redact_keys: String,
    exec: Option<String>,
    verify: Option<String>,
    owner: Option<String>,
    lease_until: Option<i64>,
    result: Option<String>,
    error: Option<String>,
    attempts: i64,
    proposer: String,
    project: String,
    session: String,
    created_at: i64,
    updated_at: i64,
    not_by_proposer: i64,
    escalation: Option<String>,
    escalated: i64,
    escalated_at: Option<i64>,
}

impl Stored {
    /// The action this row holds; [`super::Error::Corrupt`] when its JSON
    /// or a word is not one this build writes.
    pub(crate) fn action(self) -> super::Result<Action> {
        let args = parse_json("args", &self.args)?;
        let status = Status::parse(&self.status).ok_or_else(|| corrupt("status", &self.status))?;
        Ok(Action {
            args,
            status,
            on_expire: if self.on_expire == "reject" {
                OnExpire::Reject
            } else {
                OnExpire::Expire
            },
            patch: opt_json("patch", self.patch)?,
            effective_args: parse_json("effective_args", &self.effective_args)?,
            redact_keys: parse_json("redact_keys", &self.redact_keys)?,
            exec: opt_json("exec", self.exec)?,
            verify: opt_json("verify", self.verify)?,
            result: opt_json("result", self.result)?,
            escalation: opt_json("escalation", self.escalation)?.unwrap_or_default(),
            escalated: self.escalated,
            escalated_at: self.escalated_at,
            id: self.id,
            kind: self.kind,
            summary: self.summary,
            fingerprint: self.fingerprint,
            dedup_key: self.dedup_key,
            expires_at: self.expires_at,
            approvals_required: self.approvals_required,
            approvals: self.approvals,
            not_by_proposer: self.not_by_proposer != 0,
            decided_by: self.decided_by,
            decided_at: self.decided_at,
            reason: self.reason,
            owner: self.owner,
            lease_until: self.lease_until,
            error: self.error,
            attempts: self.attempts,
            proposer: self.proposer,
            project: self.project,
            session: self.session,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// The action the statement `s` returns on `tx`, if any (a read, or a
/// guarded write's `RETURNING`).
pub(crate) async fn one(tx: &mut Tx<'_>, s: &Stmt<'_>) -> super::Result<Option<Action>> {
    // All rows, not the first: a transition's call is several statements
    // on SQLite (`logged.rs`), and a fetch of one row stops at the first.
    let first = tx.rows::<Stored>(s).await?.into_iter().next();
    first.map(Stored::action).transpose()
}

/// Every action the statement `s` returns on `tx`.
pub(crate) async fn all(tx: &mut Tx<'_>, s: &Stmt<'_>) -> super::Result<Vec<Action>> {
    tx.rows::<Stored>(s)
        .await?
        .into_iter()
        .map(Stored::action)
        .collect()
}

/// Read one action by full id on `tx`, its row locked until the write
/// ends when `locked` (see [`Spelling::lock`]); `None` when there is none.
pub(crate) async fn load(tx: &mut Tx<'_>, id: &str, locked: bool) -> super::Result<Option<Action>> {
    let sql = if locked { &LOAD_LOCKED } else { &LOAD };
    one(tx, &sql.stmt().text(id)).await
}

/// The event payload of a transition audited by hand (a refused attempt,
/// as the transition triggers write theirs): its audit details with the
/// action's status, kind and summary.
pub(crate) fn record_payload(action: &Action, details: Value) -> Value {
    let mut payload = details;
    if let Value::Object(m) = &mut payload {
        m.insert("status".into(), json!(action.status));
        m.insert("kind".into(), json!(action.kind));
        m.insert("summary".into(), json!(action.summary));
    }
    payload
}

impl Store {
    /// The id a write names: a full id as given (the write's own statement
    /// finds the row, or its refusal path says it is missing), a short one
    /// resolved first. So the common write needs no read before it.
    pub(crate) async fn write_target(&self, id: &str) -> Result<String> {
        let full = id.trim().to_ascii_lowercase();
        if full.len() == 32 && full.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(full);
        }
        self.resolve_action_id(id).await
    }

    /// The full id of the action `id_or_short` names: an exact id, else a
    /// unique suffix (the 8-character short id shown in chat and the CLI).
    pub async fn resolve_action_id(&self, id_or_short: &str) -> Result<String> {
        self.resolve_action_id_in(id_or_short, None).await
    }

    /// [`Store::resolve_action_id`] among the actions of `project` only (all
    /// when `None`): another project's ids neither match nor make a short
    /// id ambiguous.
    pub async fn resolve_action_id_in(
        &self,
        id_or_short: &str,
        project: Option<&str>,
    ) -> Result<String> {
        let needle = id_or_short.trim().to_ascii_lowercase();
        if needle.is_empty() || !needle.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::NotFound(id_or_short.to_string()));
        }
        // A full id is one primary-key lookup; only a shorter one is matched
        // as a suffix, which reads every id (one `OR` of the two would make
        // every lookup read them all).
        let lookup = if needle.len() >= 32 {
            Stmt::new("SELECT id FROM actions WHERE id = $1 AND ($2 IS NULL OR project = $2)")
        } else {
            Stmt::spelled(
                "SELECT id FROM actions
                 WHERE substr(id, -length($1)) = $1 AND ($2 IS NULL OR project = $2)
                 LIMIT 2",
                "SELECT id FROM actions
                 WHERE right(id, length($1)) = $1 AND ($2 IS NULL OR project = $2)
                 LIMIT 2",
            )
        };
        let ids: Vec<(String,)> = self
            .rows(lookup.text(needle.as_str()).text(project))
            .await?;
        match ids.as_slice() {
            [(one,)] => Ok(one.clone()),
            [] => Err(Error::NotFound(id_or_short.to_string())),
            _ => Err(Error::Ambiguous(id_or_short.to_string())),
        }
    }

    /// One action (full or short id), real argument values included.
    pub async fn get_action(&self, id: &str) -> Result<Action> {
        self.get_action_in(id, None).await
    }

    /// One action of `project` (all projects when `None`).
    pub async fn get_action_in(&self, id: &str, project: Option<&str>) -> Result<Action> {
        let id = self.resolve_action_id_in(id, project).await?;
        match self.row::<Stored>(LOAD.stmt().text(id.as_str())).await? {
            Some(row) => Ok(row.action()?),
            None => Err(Error::NotFound(id)),
        }
    }

    /// The actions `s` reads, decoded.
    pub(crate) async fn read_actions(&self, s: Stmt<'_>) -> Result<Vec<Action>> {
        let rows = self.rows::<Stored>(s).await?;
        Ok(rows
            .into_iter()
            .map(Stored::action)
            .collect::<super::Result<_>>()?)
    }

    /// Actions, newest first, optionally only those whose *effective*
    /// status (lazy expiry applied) is `status`.
    pub async fn list_actions(&self, status: Option<Status>) -> Result<Vec<Action>> {
        self.list_with(&LIST, status, None).await
    }

    /// Actions of `project` (all when `None`) for a list, newest first,
    /// optionally only those whose effective status is `status` — without
    /// their arguments, patch and result (`null`), which may be megabytes
    /// each: a list reads and holds only what a list line shows.
    pub async fn list_action_summaries(
        &self,
        status: Option<Status>,
        project: Option<&str>,
    ) -> Result<Vec<Action>> {
        self.list_with(&LIST_SUMMARIES, status, project).await
    }

    async fn list_with(
        &self,
        list: &'static Sql,
        status: Option<Status>,
        project: Option<&str>,
    ) -> Result<Vec<Action>> {
        let now = self.now();
        let all = self.read_actions(list.stmt().text(project)).await?;
        let mut out = Vec::with_capacity(all.len());
        for mut a in all {
            let eff = a.effective_status(now);
            if status.is_none_or(|s| s == eff) {
                // Show the lazily-expired status; the stored row stays as it is
                // until `expire_due()` or a refused decision settles it.
                a.status = eff;
                out.push(a);
            }
        }
        Ok(out)
    }
}
