//! The execution ledger: an append-only record of an agent's tool calls.
//!
//! A call's intent is recorded before it runs ([`Store::ledger_begin`], a
//! `started` row) and its result after ([`Store::ledger_complete`], a
//! `completed` or `failed` row with the same client-chosen `event_id`).
//! Rows are never changed (triggers refuse UPDATE and DELETE), so the state
//! of a call is the set of its rows, and UNIQUE indexes — not the
//! application — guarantee one start and at most one outcome per call.
//! Recording the same step twice with the same content is a no-op; with
//! different content it is a typed conflict. This module records; it never
//! runs a tool.

use crate::store::cols::{Cols, rows_by};
use std::fmt::Write as _;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::actions::codec::canonical;
use crate::store::engine::{Stmt, Tx};
use crate::store::{Error, Result, Store};

/// The largest payload or result accepted, in canonical JSON bytes (1 MiB).
pub const MAX_LEDGER_BYTES: usize = 1024 * 1024;

/// One ledger row.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct LedgerEntry {
    /// Position in the ledger.
    pub seq: i64,
    /// The client-chosen idempotency key of the call.
    pub event_id: String,
    /// The session that made the call.
    pub session_id: String,
    /// The tool the agent called (e.g. `Bash`), shown in `ledger list`.
    pub tool: String,
    /// The call's input (canonical JSON).
    pub payload: Value,
    /// SHA-256 hex of the canonical payload.
    pub payload_hash: String,
    /// `started`, `completed` or `failed`.
    pub status: String,
    /// The result, on `completed` / `failed` rows.
    pub result: Option<Value>,
    /// Whether the tool was declared safe to run again after a crash.
    pub replay_safe: bool,
    /// When the row was written.
    #[serde(with = "crate::clock::Timestamp")]
    pub at: i64,
}

/// A call about to start.
#[derive(Debug, Clone)]
pub struct NewCall<'a> {
    /// Client-chosen idempotency key (1 to 200 characters).
    pub event_id: &'a str,
    /// The session making the call.
    pub session_id: &'a str,
    /// Tool name (1 to 200 characters).
    pub tool: &'a str,
    /// The call's input.
    pub payload: &'a Value,
    /// Safe to run again if it was interrupted (idempotent or read-only).
    pub replay_safe: bool,
}

/// What [`Store::ledger_begin`] did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Begin {
    /// A `started` row was written.
    Started {
        /// The new row.
        entry: LedgerEntry,
    },
    /// The same call was begun before: nothing written. `finished` is its
    /// `completed`/`failed` row if it finished (then do not run it again).
    Existing {
        /// The first `started` row.
        entry: LedgerEntry,
        /// Its outcome, if recorded.
        finished: Option<LedgerEntry>,
    },
    /// This `event_id` was begun in this session with another tool, payload or
    /// replay flag. Nothing written.
    Conflict {
        /// The row already recorded under this id.
        existing: LedgerEntry,
        /// Which fields differ.
        differs: Vec<String>,
    },
}

/// What [`Store::ledger_complete`] did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Complete {
    /// The outcome row was written.
    Completed {
        /// The new row.
        entry: LedgerEntry,
    },
    /// The same outcome with the same result was recorded before: nothing written.
    Existing {
        /// The recorded outcome.
        entry: LedgerEntry,
    },
    /// Another outcome or another result was recorded under this id.
    Conflict {
        /// The recorded outcome.
        existing: LedgerEntry,
        /// Which fields differ (`status`, `result`).
        differs: Vec<String>,
    },
    /// No call was begun under this `event_id`.
    NotStarted,
}

fn sha256_hex(text: &str) -> String {
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(text.as_bytes()) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// 1 to 200 characters — characters, as the API's schema says, not bytes.
fn check_name(what: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() || v.chars().count() > 200 {
        return Err(Error::Invalid(format!("{what} is 1 to 200 characters")));
    }
    Ok(())
}

fn canonical_checked(what: &str, v: &Value) -> Result<String> {
    let text = canonical(v);
    if text.len() > MAX_LEDGER_BYTES {
        return Err(Error::Invalid(format!(
            "the {what} is {} bytes; the ledger holds at most {MAX_LEDGER_BYTES} (1 MiB)",
            text.len()
        )));
    }
    Ok(text)
}

fn parse_json(what: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt(format!("ledger {what}: {e}")))
}

// A stored ledger row, on either engine.
rows_by!(LedgerEntry, entry_from);

/// Map an `execution_ledger` row, of either engine (`replay_safe` is 0/1:
/// an INTEGER on SQLite, a BIGINT on PostgreSQL).
fn entry_from(r: &impl Cols) -> Result<LedgerEntry> {
    let payload: String = r.try_get("payload")?;
    let result: Option<String> = r.try_get("result")?;
    Ok(LedgerEntry {
        seq: r.try_get("seq")?,
        event_id: r.try_get("event_id")?,
        session_id: r.try_get("session_id")?,
        tool: r.try_get("tool")?,
        payload: parse_json("payload", &payload)?,
        payload_hash: r.try_get("payload_hash")?,
        status: r.try_get("status")?,
        result: result.map(|t| parse_json("result", &t)).transpose()?,
        replay_safe: r.try_get::<i64>("replay_safe")? != 0,
        at: r.try_get("at")?,
    })
}

/// A call's start (`started`) or its outcome (any other status).
async fn row_of(
    tx: &mut Tx<'_>,
    session_id: &str,
    event_id: &str,
    started: bool,
) -> Result<Option<LedgerEntry>> {
    let sql = if started {
        "SELECT * FROM execution_ledger WHERE session_id = $1 AND event_id = $2 AND status = 'started'"
    } else {
        "SELECT * FROM execution_ledger WHERE session_id = $1 AND event_id = $2 AND status <> 'started'"
    };
    tx.row(&Stmt::new(sql).text(session_id).text(event_id))
        .await
}

/// A call to record as begun, checked and canonical.
#[derive(Debug)]
struct Call {
    event_id: String,
    session_id: String,
    tool: String,
    payload: String,
    hash: String,
    replay_safe: bool,
}

/// An outcome to record, checked and canonical.
#[derive(Debug)]
struct Outcome {
    session_id: String,
    event_id: String,
    status: &'static str,
    text: String,
    hash: String,
}

/// The message of the trigger that refuses a row of an unregistered session.
const UNREGISTERED: &str = "the ledger belongs to a registered session";

/// A start's insert, with the trigger's refusal of an unregistered
/// session said in words rather than as an engine abort (on either engine).
fn registered<T>(row: Result<T>, session_id: &str) -> Result<T> {
    match row {
        Err(Error::Db(e)) if e.to_string().contains(UNREGISTERED) => Err(Error::Invalid(format!(
            "session `{session_id}` is not registered: register it first \
             (`handoff session register --session {session_id}`, POST /v1/sessions, \
             or the SessionStart hook), then record its calls"
        ))),
        other => other,
    }
}

/// Which fields of a repeated start differ from the stored one.
fn begin_differs(existing: &LedgerEntry, tool: &str, hash: &str, replay_safe: bool) -> Vec<String> {
    let mut differs = Vec::new();
    if existing.tool != tool {
        differs.push("tool".to_string());
    }
    if existing.payload_hash != hash {
        differs.push("payload".to_string());
    }
    if existing.replay_safe != replay_safe {
        differs.push("replay_safe".to_string());
    }
    differs
}

/// Record a start: one `INSERT … ON CONFLICT DO NOTHING RETURNING` whose
/// trigger appends `ledger.started` (on PostgreSQL with SQLite's payload
/// text). Nothing inserted: a repeat, compared with the stored row (more
/// reads, on the rare path; on PostgreSQL a racing twin waits for the
/// first insert's commit, inserts nothing and reads the committed row).
fn begin_in(mut tx: Tx<'_>, c: Arc<Call>, now: i64) -> BoxFuture<'_, Result<Begin>> {
    Box::pin(async move {
        // Why ON CONFLICT DO NOTHING: UNIQUE(session_id, event_id, status)
        // decides whether this is the first start; a retry inserts nothing
        // and is compared with the stored row below.
        let insert = Stmt::new(
            "INSERT INTO execution_ledger
                 (event_id, session_id, tool, payload, payload_hash, status, replay_safe, at)
             VALUES ($1, $2, $3, $4, $5, 'started', $6, $7)
             ON CONFLICT DO NOTHING RETURNING *",
        )
        .text(c.event_id.as_str())
        .text(c.session_id.as_str())
        .text(c.tool.as_str())
        .text(c.payload.as_str())
        .text(c.hash.as_str())
        .int(i64::from(c.replay_safe))
        .int(now);
        if let Some(entry) = registered(tx.row(&insert).await, &c.session_id)? {
            return Ok(Begin::Started { entry });
        }
        let existing = row_of(&mut tx, &c.session_id, &c.event_id, true)
            .await?
            .ok_or_else(|| Error::Corrupt("ledger start vanished".into()))?;
        let differs = begin_differs(&existing, &c.tool, &c.hash, c.replay_safe);
        if !differs.is_empty() {
            return Ok(Begin::Conflict { existing, differs });
        }
        let finished = row_of(&mut tx, &c.session_id, &c.event_id, false).await?;
        Ok(Begin::Existing {
            entry: existing,
            finished,
        })
    })
}

/// Record an outcome: one `INSERT … SELECT` whose trigger appends
/// `ledger.completed` / `ledger.failed`. Nothing inserted: not begun, or a
/// repeat compared with the stored outcome.
fn complete_in(mut tx: Tx<'_>, o: Arc<Outcome>, now: i64) -> BoxFuture<'_, Result<Complete>> {
    Box::pin(async move {
        // Why INSERT … SELECT with ON CONFLICT DO NOTHING: the outcome
        // copies the started row (so it exists only if the call was begun),
        // and the UNIQUE indexes let exactly one outcome in — a racing
        // `completed` and `failed` cannot both land.
        let insert = Stmt::new(
            "INSERT INTO execution_ledger
                 (event_id, session_id, tool, payload, payload_hash, status, result, result_hash, replay_safe, at)
             SELECT event_id, session_id, tool, payload, payload_hash, $1, $2, $3, replay_safe, $4
             FROM execution_ledger WHERE session_id = $6 AND event_id = $5 AND status = 'started'
             ON CONFLICT DO NOTHING RETURNING *",
        )
        .text(o.status)
        .text(o.text.as_str())
        .text(o.hash.as_str())
        .int(now)
        .text(o.event_id.as_str())
        .text(o.session_id.as_str());
        if let Some(entry) = tx.row(&insert).await? {
            return Ok(Complete::Completed { entry });
        }
        let Some(existing) = row_of(&mut tx, &o.session_id, &o.event_id, false).await? else {
            return Ok(Complete::NotStarted);
        };
        let hash =
            Stmt::new("SELECT result_hash FROM execution_ledger WHERE seq = $1").int(existing.seq);
        let stored: Option<(Option<String>,)> = tx.row(&hash).await?;
        Ok(complete_refused(
            existing,
            stored.and_then(|(h,)| h).as_deref(),
            &o,
        ))
    })
}

/// A completion that found an outcome already stored (`existing`, whose
/// result hash is `stored_hash`): the same outcome again, or a conflict
/// naming what differs. Shared by both engines.
fn complete_refused(existing: LedgerEntry, stored_hash: Option<&str>, o: &Outcome) -> Complete {
    let mut differs = Vec::new();
    if existing.status != o.status {
        differs.push("status".to_string());
    }
    if stored_hash != Some(o.hash.as_str()) {
        differs.push("result".to_string());
    }
    if differs.is_empty() {
        Complete::Existing { entry: existing }
    } else {
        Complete::Conflict { existing, differs }
    }
}

impl Store {
    /// Record that a call is about to run. The same `event_id` with the same
    /// session, tool, payload and replay flag is a no-op returning the first
    /// row (and its outcome, if any); anything different is a typed
    /// [`Begin::Conflict`]. Appends `ledger.started` in the same transaction.
    pub async fn ledger_begin(&self, call: &NewCall<'_>) -> Result<Begin> {
        check_name("an event id", call.event_id)?;
        check_name("a tool name", call.tool)?;
        let session_id = super::check_id(call.session_id)?;
        let payload = canonical_checked("payload", call.payload)?;
        let hash = sha256_hex(&payload);
        let call = Arc::new(Call {
            event_id: call.event_id.to_string(),
            session_id: session_id.to_string(),
            tool: call.tool.to_string(),
            payload,
            hash,
            replay_safe: call.replay_safe,
        });
        self.write_with(call, begin_in).await
    }

    /// Record a begun call's outcome: `ok` → `completed`, else `failed`,
    /// with `result`. The same outcome with the same result again is a no-op;
    /// another outcome or result is a typed [`Complete::Conflict`]. Appends
    /// `ledger.completed` / `ledger.failed` in the same transaction.
    pub async fn ledger_complete(
        &self,
        session_id: &str,
        event_id: &str,
        ok: bool,
        result: &Value,
    ) -> Result<Complete> {
        check_name("an event id", event_id)?;
        let session_id = super::check_id(session_id)?;
        let text = canonical_checked("result", result)?;
        let hash = sha256_hex(&text);
        let status = if ok { "completed" } else { "failed" };
        let outcome = Arc::new(Outcome {
            session_id: session_id.to_string(),
            event_id: event_id.to_string(),
            status,
            text,
            hash,
        });
        self.write_with(outcome, complete_in).await
    }

    /// The sessions of `project` (all when `None`) that began a call
    /// `event_id` (event ids are unique per session, so there may be
    /// several), at most `limit`.
    pub async fn ledger_sessions(
        &self,
        event_id: &str,
        project: Option<&str>,
        limit: i64,
    ) -> Result<Vec<String>> {
        // A NULL limit: none (SQLite's LIMIT reads -1 so).
        let sessions: Vec<(String,)> = self
            .rows(
                Stmt::spelled(
                    "SELECT l.session_id FROM execution_ledger l
                         JOIN agent_sessions s ON s.session_id = l.session_id
                     WHERE l.event_id = $1 AND l.status = 'started'
                       AND (CAST($2 AS TEXT) IS NULL OR s.project = $2)
                     ORDER BY l.seq LIMIT COALESCE($3, -1)",
                    "SELECT l.session_id FROM execution_ledger l
                         JOIN agent_sessions s ON s.session_id = l.session_id
                     WHERE l.event_id = $1 AND l.status = 'started'
                       AND (CAST($2 AS TEXT) IS NULL OR s.project = $2)
                     ORDER BY l.seq LIMIT $3",
                )
                .text(event_id)
                .text(project)
                .int((limit >= 0).then_some(limit)),
            )
            .await?;
        Ok(sessions.into_iter().map(|(s,)| s).collect())
    }

    /// Ledger rows of a session, oldest first; with `last`, only the newest
    /// `last` rows (still oldest first).
    pub async fn ledger_list(
        &self,
        session_id: &str,
        last: Option<i64>,
    ) -> Result<Vec<LedgerEntry>> {
        self.rows(
            Stmt::spelled(
                "SELECT * FROM (
                     SELECT * FROM execution_ledger WHERE session_id = $1
                     ORDER BY seq DESC LIMIT COALESCE($2, -1)
                 ) tail ORDER BY seq",
                "SELECT * FROM (
                     SELECT * FROM execution_ledger WHERE session_id = $1
                     ORDER BY seq DESC LIMIT $2
                 ) tail ORDER BY seq",
            )
            .text(session_id)
            .int(last.filter(|n| *n >= 0)),
        )
        .await
    }

    /// Calls of a session that were begun and never completed nor failed
    /// (interrupted by a crash, or still running), oldest first.
    pub async fn ledger_interrupted(&self, session_id: &str) -> Result<Vec<LedgerEntry>> {
        self.rows(
            Stmt::new(
                "SELECT s.* FROM execution_ledger s
                 WHERE s.session_id = $1 AND s.status = 'started'
                   AND NOT EXISTS (SELECT 1 FROM execution_ledger o
                                   WHERE o.session_id = s.session_id AND o.event_id = s.event_id
                                     AND o.status <> 'started')
                 ORDER BY s.seq",
            )
            .text(session_id),
        )
        .await
    }
}
