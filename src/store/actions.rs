//! Pending actions: calls an agent may make only after a person
//! approves them.
//!
//! States: `pending → approved → executing → executed | failed | unknown`,
//! and `pending → rejected | expired`. Every transition is one guarded
//! `UPDATE … WHERE <state predicate>` inside one `BEGIN IMMEDIATE`
//! transaction that also writes its [audit](AuditEntry) row and its event;
//! the predicate decides races, `rows_affected()` tells who won, and losers
//! get the winner's decision back as a typed result.
//!
//! Exactly-once, stated honestly: never two executions at once — always;
//! exactly one — if the executor survived the call; after a crash mid-call —
//! `unknown`, and shown to a human.
//!
//! Layout:
//! - this file: the model ([`Action`], [`Status`]), the module error, reads
//!   (get, list, audit) and the audit/event writer every transition uses;
//! - [`codec`]: strict JSON, canonical form, fingerprint, patches, redaction;
//! - `outcomes`: the proposal and the typed outcome of each transition;
//! - `transitions`: propose, approve, reject;
//! - `execution`: claim, lease renewal, complete, waits;
//! - `recovery`: expiry sweeps, crash recovery, resolve-unknown, purge;
//! - [`rules`]: auto-decision rules and the external deciders/verifiers.
//!
//! On a PostgreSQL store every method here runs the same guarded
//! statements in PostgreSQL's spelling, each write a transaction of its
//! own (`store/postgres/actions.rs` for the reads, refused attempts and
//! purge; `store/postgres/action_moves.rs` for the transitions).
//!
//! This module does not run executors (the CLI does) and has no background
//! thread: expiry is lazy, and `expire_due()` is called by whoever owns a
//! cadence (the daemon, `handoff expire`).

mod attempts;
pub mod codec;
mod execution;
mod expiry;
mod outcomes;
pub(crate) mod recovery;
pub mod rules;
mod scrub;
pub(crate) mod transitions;

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::{ColumnIndex, Decode, Row, SqliteConnection, Type};

use super::postgres::actions as pg;
use super::{Engine, NewEvent, Store, events};
use crate::store::Channel;

pub use codec::Redactor;
pub use expiry::{expiry_note, timed_out};
pub use outcomes::{
    ApproveOutcome, ClaimOutcome, CompleteOutcome, NewAction, Proposed, RejectOutcome, Settled,
    unknown_duplicate_note,
};
pub use recovery::{PurgeReport, RecoverReport, Resolution};
pub use rules::{Condition, Rule, RuleApplied, RuleDecision, RulesFile, Verdict, kind_matches};

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

/// Where an action stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for approvals.
    Pending,
    /// Approved, not yet claimed by an executor.
    Approved,
    /// Claimed; the executor holds a lease.
    Executing,
    /// The executor reported success.
    Executed,
    /// The executor reported failure.
    Failed,
    /// The executor vanished mid-call: the side effect may or may not have happened.
    Unknown,
    /// A person or a rule said no (or it expired with `on_expire = reject`).
    Rejected,
    /// Nobody decided before `expires_at`.
    Expired,
}

impl Status {
    /// Every status, in lifecycle order.
    pub const ALL: [Status; 8] = [
        Status::Pending,
        Status::Approved,
        Status::Executing,
        Status::Executed,
        Status::Failed,
        Status::Unknown,
        Status::Rejected,
        Status::Expired,
    ];

    /// The SQL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Executing => "executing",
            Status::Executed => "executed",
            Status::Failed => "failed",
            Status::Unknown => "unknown",
            Status::Rejected => "rejected",
            Status::Expired => "expired",
        }
    }

    /// Parse the SQL/CLI spelling.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Final: nothing changes it again (`unknown` waits for a human instead).
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            Status::Executed | Status::Failed | Status::Rejected | Status::Expired
        )
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens when nobody decides in time.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OnExpire {
    /// Status becomes `expired`.
    #[default]
    Expire,
    /// Status becomes `rejected` (reason "expired").
    Reject,
}

impl OnExpire {
    /// The SQL spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnExpire::Expire => "expire",
            OnExpire::Reject => "reject",
        }
    }
}

/// One action as stored. `args` and `effective_args` hold the *real* values
/// (executors need them); render through [`Action::redacted`] or
/// [`Action::display_args`] for people.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Action {
    /// Full id (UUIDv7 hex).
    pub id: String,
    /// What sort of action (`email.send`, `deploy`, …).
    pub kind: String,
    /// One line for the human deciding.
    pub summary: String,
    /// Arguments as proposed.
    pub args: Value,
    /// SHA-256 hex of the canonical `{kind, summary, args}`.
    pub fingerprint: String,
    /// Dedup key, unique among live actions.
    pub dedup_key: Option<String>,
    /// Stored status. See [`Action::effective_status`] for lazy expiry.
    pub status: Status,
    /// Decisions at or after this instant are refused.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<crate::clock::Timestamp>")]
    pub expires_at: Option<i64>,
    /// What expiry turns it into.
    pub on_expire: OnExpire,
    /// Distinct approvals needed.
    pub approvals_required: i64,
    /// Distinct approvals so far.
    pub approvals: i64,
    /// Who decided (the N-th approver, the rejecter, `rule:<name>`, `expiry`).
    pub decided_by: Option<String>,
    /// When it was decided.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<crate::clock::Timestamp>")]
    pub decided_at: Option<i64>,
    /// Why it was rejected, expired or resolved.
    pub reason: Option<String>,
    /// The patch an approver applied, if any.
    pub patch: Option<Value>,
    /// Arguments the executor receives (`args` with the patch applied).
    pub effective_args: Value,
    /// Key patterns redacted in every human-facing rendering.
    pub redact_keys: Vec<String>,
    /// Executor argv recorded at proposal, if any.
    pub exec: Option<Vec<String>>,
    /// Verifier argv recovery runs for an interrupted execution, if any.
    pub verify: Option<Vec<String>>,
    /// The executor holding the claim.
    pub owner: Option<String>,
    /// The claim lapses at this instant unless extended.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<crate::clock::Timestamp>")]
    pub lease_until: Option<i64>,
    /// What the executor reported.
    pub result: Option<Value>,
    /// Why the execution failed or is unknown.
    pub error: Option<String>,
    /// Claims so far.
    pub attempts: i64,
    /// Who proposed it.
    pub proposer: String,
    /// Project of the proposer.
    pub project: String,
    /// Agent session of the proposer.
    pub session: String,
    /// When it was proposed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Last transition.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "crate::clock::Timestamp")]
    pub updated_at: i64,
}

impl Action {
    /// The status as of `now`: a pending action past its expiry shows as
    /// `expired` (or `rejected`) even before `expire_due()` writes it.
    pub fn effective_status(&self, now: i64) -> Status {
        match (self.status, self.expires_at) {
            (Status::Pending, Some(exp)) if exp <= now => match self.on_expire {
                OnExpire::Expire => Status::Expired,
                OnExpire::Reject => Status::Rejected,
            },
            (s, _) => s,
        }
    }

    /// The effective arguments with secrets replaced by `"[redacted]"`.
    pub fn display_args(&self) -> Value {
        self.redactor().redact(&self.effective_args)
    }

    /// A copy safe to show a person: every argument field redacted, and
    /// secrets scrubbed from the free text (result strings, error, reason).
    pub fn redacted(&self) -> Action {
        let r = self.redactor();
        let values = self.secret_values();
        Action {
            args: r.redact(&self.args),
            effective_args: r.redact(&self.effective_args),
            patch: self.patch.as_ref().map(|p| r.redact(p)),
            result: self.result.as_ref().map(|v| scrub::value(&r, &values, v)),
            error: self.error.as_deref().map(|e| scrub::text(&r, &values, e)),
            reason: self.reason.as_deref().map(|e| scrub::text(&r, &values, e)),
            ..self.clone()
        }
    }

    /// The real values of this action's secret arguments (as proposed, as
    /// patched, and as the executor gets them).
    fn secret_values(&self) -> Vec<String> {
        let r = self.redactor();
        let mut out = Vec::new();
        for v in [
            Some(&self.args),
            Some(&self.effective_args),
            self.patch.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            scrub::secret_values(&r, v, &mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    /// `text` with this action's secrets scrubbed: its secret argument
    /// values, and any value written after a secret-looking key.
    pub fn scrub_text(&self, text: &str) -> String {
        scrub::text(&self.redactor(), &self.secret_values(), text)
    }

    /// `v` with secret keys redacted and every string scrubbed as
    /// [`Action::scrub_text`] does.
    pub fn scrub_value(&self, v: &Value) -> Value {
        scrub::value(&self.redactor(), &self.secret_values(), v)
    }

    /// The redactor built from this action's own key patterns.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.redact_keys.clone())
    }

    /// The short id (last 8 characters).
    pub fn short_id(&self) -> &str {
        super::short_id(&self.id)
    }
}

/// One audit row.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct AuditEntry {
    /// Position in the audit log.
    pub seq: i64,
    /// The audited action's id.
    pub action_id: String,
    /// When the transition was written.
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "crate::clock::Timestamp")]
    pub at: i64,
    /// Who (a person, `rule:<name>`, `expiry`, `recovery`, an executor id).
    pub actor: String,
    /// What: `proposed`, `approval_added`, `approved`, `patched`, …
    pub event: String,
    /// Details, secrets redacted.
    pub details: Value,
}

/// Who causes a transition and through which door (for audit and events).
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    /// A person's name, `rule:<name>`, an executor id, …
    pub name: &'a str,
    /// The door it came through.
    pub channel: Channel,
}

impl<'a> Actor<'a> {
    /// An actor on the command line.
    pub fn cli(name: &'a str) -> Self {
        Actor {
            name,
            channel: Channel::Cli,
        }
    }
}

/// Columns every read selects.
pub(crate) const COLUMNS: &str = "id, kind, summary, args, fingerprint, dedup_key, status, expires_at, \
     on_expire, approvals_required, approvals, decided_by, decided_at, reason, patch, effective_args, \
     redact_keys, exec, verify, owner, lease_until, result, error, attempts, proposer, project, \
     session, created_at, updated_at";

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Store(super::Error::Corrupt(format!("action {what}: {e}")))
}

fn parse_json<T: serde::de::DeserializeOwned>(what: &str, s: &str) -> Result<T> {
    serde_json::from_str(s).map_err(|e| corrupt(what, e))
}

fn opt_json<T: serde::de::DeserializeOwned>(what: &str, s: Option<String>) -> Result<Option<T>> {
    s.map(|s| parse_json(what, &s)).transpose()
}

/// A stored row as an action, of either engine (its columns are text and
/// 64-bit integers on both).
pub(crate) fn from_row<'r, R>(r: &'r R) -> Result<Action>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let status: String = r.try_get("status")?;
    let on_expire: String = r.try_get("on_expire")?;
    Ok(Action {
        id: r.try_get("id")?,
        kind: r.try_get("kind")?,
        summary: r.try_get("summary")?,
        args: parse_json("args", &r.try_get::<String, _>("args")?)?,
        fingerprint: r.try_get("fingerprint")?,
        dedup_key: r.try_get("dedup_key")?,
        status: Status::parse(&status).ok_or_else(|| corrupt("status", &status))?,
        expires_at: r.try_get("expires_at")?,
        on_expire: if on_expire == "reject" {
            OnExpire::Reject
        } else {
            OnExpire::Expire
        },
        approvals_required: r.try_get("approvals_required")?,
        approvals: r.try_get("approvals")?,
        decided_by: r.try_get("decided_by")?,
        decided_at: r.try_get("decided_at")?,
        reason: r.try_get("reason")?,
        patch: opt_json("patch", r.try_get("patch")?)?,
        effective_args: parse_json("effective_args", &r.try_get::<String, _>("effective_args")?)?,
        redact_keys: parse_json("redact_keys", &r.try_get::<String, _>("redact_keys")?)?,
        exec: opt_json("exec", r.try_get("exec")?)?,
        verify: opt_json("verify", r.try_get("verify")?)?,
        owner: r.try_get("owner")?,
        lease_until: r.try_get("lease_until")?,
        result: opt_json("result", r.try_get("result")?)?,
        error: r.try_get("error")?,
        attempts: r.try_get("attempts")?,
        proposer: r.try_get("proposer")?,
        project: r.try_get("project")?,
        session: r.try_get("session")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// A stored audit row, of either engine.
pub(crate) fn audit_from_row<'r, R>(r: &'r R) -> Result<AuditEntry>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(AuditEntry {
        seq: r.try_get("seq")?,
        action_id: r.try_get("action_id")?,
        at: r.try_get("at")?,
        actor: r.try_get("actor")?,
        event: r.try_get("event")?,
        details: parse_json("audit details", &r.try_get::<String, _>("details")?)?,
    })
}

/// Read one action by full id on `conn` (inside or outside a transaction).
pub(crate) async fn load(conn: &mut SqliteConnection, id: &str) -> Result<Action> {
    let sql = format!("SELECT {COLUMNS} FROM actions WHERE id = ?");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    match row {
        Some(r) => from_row(&r),
        None => Err(Error::NotFound(id.to_string())),
    }
}

/// The event payload of a transition written by [`record`]: its audit
/// details with the action's status, kind and summary.
pub(crate) fn record_payload(action: &Action, details: Value) -> Value {
    let mut payload = details;
    if let Value::Object(m) = &mut payload {
        m.insert("status".into(), json!(action.status));
        m.insert("kind".into(), json!(action.kind));
        m.insert("summary".into(), json!(action.summary));
    }
    payload
}

/// Write the audit row and the event of one transition, on the connection
/// of the transaction that made it. `details` must already be redacted.
pub(crate) async fn record(
    conn: &mut SqliteConnection,
    now: i64,
    action: &Action,
    actor: Actor<'_>,
    event: &str,
    details: Value,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO action_audit (action_id, at, actor, event, details) VALUES (?, ?, ?, ?, ?)",
    )
    .bind(&action.id)
    .bind(now)
    .bind(actor.name)
    .bind(event)
    .bind(details.to_string())
    .execute(&mut *conn)
    .await?;
    let payload = record_payload(action, details);
    events::append(
        conn,
        now,
        &NewEvent {
            kind: &format!("action.{event}"),
            entity_kind: "action",
            entity_id: &action.id,
            actor: actor.name,
            channel: actor.channel,
            project: &action.project,
            session: &action.session,
            payload,
        },
    )
    .await?;
    Ok(())
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
        if let Engine::Postgres(p) = self.engine() {
            return match pg::ids_like(p, &needle, project).await?.as_slice() {
                [one] => Ok(one.clone()),
                [] => Err(Error::NotFound(id_or_short.to_string())),
                _ => Err(Error::Ambiguous(id_or_short.to_string())),
            };
        }
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM actions
             WHERE (id = ?1 OR (length(?1) < 32 AND substr(id, -length(?1)) = ?1))
               AND (?2 IS NULL OR project = ?2)
             LIMIT 2",
        )
        .bind(&needle)
        .bind(project)
        .fetch_all(self.pool()?)
        .await?;
        match ids.as_slice() {
            [one] => Ok(one.clone()),
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
        if let Engine::Postgres(p) = self.engine() {
            return pg::get(p, &id).await;
        }
        let mut conn = self.pool()?.acquire().await?;
        load(&mut conn, &id).await
    }

    /// Actions, newest first, optionally only those whose *effective*
    /// status (lazy expiry applied) is `status`.
    pub async fn list_actions(&self, status: Option<Status>) -> Result<Vec<Action>> {
        self.list_with(COLUMNS, status, None).await
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
        // Column by column, so a change to COLUMNS cannot silently bring
        // the heavy ones back.
        let light: Vec<String> = COLUMNS
            .split(',')
            .map(str::trim)
            .map(|c| match c {
                "args" | "effective_args" => format!("'null' AS {c}"),
                "patch" | "result" => format!("NULL AS {c}"),
                other => other.to_string(),
            })
            .collect();
        self.list_with(&light.join(", "), status, project).await
    }

    async fn list_with(
        &self,
        columns: &str,
        status: Option<Status>,
        project: Option<&str>,
    ) -> Result<Vec<Action>> {
        let now = self.now();
        let all = match self.engine() {
            Engine::Postgres(p) => pg::list(p, columns, project).await?,
            Engine::Sqlite(_) => {
                let sql = format!(
                    "SELECT {columns} FROM actions WHERE (?1 IS NULL OR project = ?1)
                     ORDER BY created_at DESC, id DESC"
                );
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(project)
                    .fetch_all(self.pool()?)
                    .await?;
                rows.iter().map(from_row).collect::<Result<Vec<_>>>()?
            }
        };
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

    /// The audit trail of one action, oldest first.
    pub async fn action_audit(&self, id: &str) -> Result<Vec<AuditEntry>> {
        let id = self.resolve_action_id(id).await?;
        if let Engine::Postgres(p) = self.engine() {
            return pg::audit(p, &id).await;
        }
        let rows = sqlx::query(
            "SELECT seq, action_id, at, actor, event, details FROM action_audit WHERE action_id = ? ORDER BY seq",
        )
        .bind(&id)
        .fetch_all(self.pool()?)
        .await?;
        rows.iter().map(audit_from_row).collect()
    }
}
