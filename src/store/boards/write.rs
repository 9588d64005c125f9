//! The agent's row writes: `board_upsert` (many rows, all or nothing) and
//! `board_row` (one row), and the shared row-merge logic `step` reuses.
//!
//! A write that wins is one database call (`call_many`). The transactions
//! here are what runs when that call did not win: each is one `BEGIN
//! IMMEDIATE` transaction that re-decides with the reads it always made,
//! so a refusal (or an unchanged board) is explained exactly as before.
//! Because the write lock is held from the first statement, versions read
//! inside the transaction are the versions the writes land on; every row
//! UPDATE still carries its `revision = ?` guard, so a bug here can only
//! refuse, never overwrite.
//! Human fields (annotation, handled) are never written here, except that a
//! *fresh* block (a row that was not blocked and now is) starts from nothing.

use serde::Deserialize;
use serde_json::json;
use sqlx::SqliteConnection;

use super::{
    BoardFull, Decided, MAX_CONTEXT, MAX_ROWS, MAX_TEXT, Refusal, Row, RowOption, RowOwner,
    RowStatus, StaleRow, Who, board_event, bump_version, check_len, check_name, check_options,
    confirm_one, load_board, load_full, load_row, load_rows, not_found, resolve_board, row_event,
    settle,
};
use crate::store::Channel;
use crate::store::{Engine, Error, Result, Store, new_id, postgres};

/// One row as an agent writes it. Omitted fields keep their stored value
/// (a new row gets the default), so a partial write never erases anything.
#[derive(Debug, Clone, Default, serde::Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowInput {
    /// The row's name, unique in the board (a new label adds a row).
    pub label: String,
    /// The revision read; required for an existing row, absent for a new one.
    #[serde(default)]
    pub revision: Option<i64>,
    /// Status (new rows default to `tracked`).
    #[serde(default)]
    pub status: Option<RowStatus>,
    /// The agent's note.
    #[serde(default)]
    pub note: Option<String>,
    /// What is asked of the human next.
    #[serde(default)]
    pub next_step: Option<String>,
    /// Who must act.
    #[serde(default)]
    pub owner: Option<RowOwner>,
    /// What depends on it.
    #[serde(default)]
    pub impact: Option<String>,
    /// The choices offered to the human (at most 4).
    #[serde(default)]
    pub options: Option<Vec<RowOption>>,
    /// Longer background for the human.
    #[serde(default)]
    pub context: Option<String>,
    /// The result of the current step.
    #[serde(default)]
    pub outcome: Option<String>,
}

impl RowInput {
    pub(super) fn validate(&self) -> Result<()> {
        check_name("a row label", &self.label)?;
        for (what, v) in [
            ("the note", &self.note),
            ("the next step", &self.next_step),
            ("the impact", &self.impact),
            ("the outcome", &self.outcome),
        ] {
            if let Some(v) = v {
                check_len(what, v, MAX_TEXT)?;
            }
        }
        if let Some(c) = &self.context {
            check_len("the context", c, MAX_CONTEXT)?;
        }
        if let Some(o) = &self.options {
            check_options(o)?;
        }
        Ok(())
    }
}

/// A whole-board write (`board_upsert`).
#[derive(Debug, Clone, Default)]
pub struct BoardUpsert {
    /// The project the board belongs to.
    pub project: String,
    /// Title, unique in the project.
    pub title: String,
    /// The `board_version` read; `None` only to create a new board.
    pub board_version: Option<i64>,
    /// Owning agent (recorded on creation; updated when given).
    pub agent: String,
    /// Owning session (recorded on creation; updated when given).
    pub session: String,
    /// Rows to create or change; rows not named are left alone.
    pub rows: Vec<RowInput>,
}

/// A single-row write (`board_row`).
#[derive(Debug, Clone, Default)]
pub struct RowWrite {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title.
    pub project: Option<String>,
    /// The `board_version` read; `None` checks only the row's revision.
    pub board_version: Option<i64>,
    /// The row (its `revision` is the CAS token).
    pub row: RowInput,
    /// The agent writing (recorded on the event).
    pub by: String,
}

/// Row fields after merging an input onto the stored row.
#[derive(PartialEq)]
pub(crate) struct Fields {
    pub(crate) status: RowStatus,
    pub(crate) note: String,
    pub(crate) next_step: String,
    pub(crate) owner: RowOwner,
    pub(crate) impact: String,
    pub(crate) options: Vec<RowOption>,
    pub(crate) context: String,
    pub(crate) outcome: String,
}

impl Fields {
    fn of(r: &Row) -> Fields {
        Fields {
            status: r.status,
            note: r.note.clone(),
            next_step: r.next_step.clone(),
            owner: r.owner,
            impact: r.impact.clone(),
            options: r.options.clone(),
            context: r.context.clone(),
            outcome: r.outcome.clone(),
        }
    }

    fn merged(base: Fields, i: &RowInput) -> Fields {
        Fields {
            status: i.status.unwrap_or(base.status),
            note: i.note.clone().unwrap_or(base.note),
            next_step: i.next_step.clone().unwrap_or(base.next_step),
            owner: i.owner.unwrap_or(base.owner),
            impact: i.impact.clone().unwrap_or(base.impact),
            options: i.options.clone().unwrap_or(base.options),
            context: i.context.clone().unwrap_or(base.context),
            outcome: i
                .outcome
                .as_deref()
                .map(str::trim)
                .map_or(base.outcome, str::to_owned),
        }
    }

    fn empty() -> Fields {
        Fields {
            status: RowStatus::Tracked,
            note: String::new(),
            next_step: String::new(),
            owner: RowOwner::None,
            impact: String::new(),
            options: Vec::new(),
            context: String::new(),
            outcome: String::new(),
        }
    }

    /// The fields a human reads in a blocked row's chat message.
    fn same_step(&self, o: &Fields) -> bool {
        self.note == o.note
            && self.next_step == o.next_step
            && self.owner == o.owner
            && self.impact == o.impact
            && self.options == o.options
            && self.context == o.context
    }

    /// The options as stored (JSON text).
    pub(crate) fn options_json(&self) -> String {
        serde_json::to_string(&self.options).unwrap_or_else(|_| "[]".into())
    }
}

/// A row event to append once the new board version is known.
pub(crate) struct Pending {
    pub(crate) kind: &'static str,
    pub(crate) row_id: String,
    pub(crate) extra: serde_json::Value,
}

/// Check every input row against the stored rows; the refusal lists all
/// mismatches at once.
pub(crate) fn mismatches(stored: &[Row], inputs: &[RowInput]) -> Vec<StaleRow> {
    inputs
        .iter()
        .filter_map(|i| {
            let cur = stored
                .iter()
                .find(|r| r.label == i.label)
                .map(|r| r.revision);
            (cur != i.revision).then(|| StaleRow {
                label: i.label.clone(),
                revision: cur,
            })
        })
        .collect()
}

/// One row write an agent's write makes (versions already checked).
pub(crate) enum Plan {
    /// Create the row `id` with `fields` at `position`.
    Insert {
        id: String,
        label: String,
        fields: Fields,
        position: i64,
    },
    /// Change the stored row `old_id` (at `old_revision`) to `after`,
    /// storing `outcome`; a `fresh` block resets the human's fields.
    Update {
        old_id: String,
        old_revision: i64,
        after: Fields,
        outcome: String,
        fresh: bool,
    },
}

/// Decide what `inputs` make of the board's `stored` rows, before anything
/// is written (so a refusal writes nothing on either engine): the row
/// writes and the events to append after them, in input order. A row the
/// input would not change is left out.
pub(crate) fn plan_rows(stored: &[Row], inputs: &[RowInput]) -> Decided<(Vec<Plan>, Vec<Pending>)> {
    let mut plans = Vec::new();
    let mut events = Vec::new();
    // New rows go after every stored one, in input order (gaps are fine).
    let first_pos = stored.iter().map(|r| r.position).max().unwrap_or(0) + 1;
    for (position, input) in (first_pos..).zip(inputs) {
        match stored.iter().find(|r| r.label == input.label) {
            None => plans.push(plan_insert(input, position, &mut events)),
            Some(old) => {
                if let Some(plan) = plan_update(old, input, &mut events)? {
                    plans.push(plan);
                }
            }
        }
    }
    Ok((plans, events))
}

/// Create the row `input` describes at `position`, with its events.
fn plan_insert(input: &RowInput, position: i64, events: &mut Vec<Pending>) -> Plan {
    let fields = Fields::merged(Fields::empty(), input);
    let id = new_id();
    events.push(Pending {
        kind: "row.updated",
        row_id: id.clone(),
        extra: json!({"created": true}),
    });
    if fields.status == RowStatus::Blocked {
        events.push(Pending {
            kind: "row.blocked",
            row_id: id.clone(),
            extra: json!({"fresh": true}),
        });
    }
    Plan::Insert {
        id,
        label: input.label.clone(),
        fields,
        position,
    }
}

/// Merge `input` onto the stored row `old`, with its events; a write that
/// changes nothing plans nothing.
fn plan_update(old: &Row, input: &RowInput, events: &mut Vec<Pending>) -> Decided<Option<Plan>> {
    let before = Fields::of(old);
    let after = Fields::merged(Fields::of(old), input);
    if after == before {
        return Ok(None);
    }
    let leaving_block = before.status == RowStatus::Blocked && after.status != RowStatus::Blocked;
    if leaving_block && old.response.handled_at.is_some() && after.outcome.is_empty() {
        return Err(Refusal::OutcomeRequired {
            label: old.label.clone(),
        });
    }
    if leaving_block && old.has_unread_annotation() {
        return Err(Refusal::UnreadResponse {
            label: old.label.clone(),
        });
    }
    let fresh = before.status != RowStatus::Blocked && after.status == RowStatus::Blocked;
    // A fresh block is a new ask: the human's mark and the old outcome
    // die, and so does an annotation an agent already received. An
    // annotation nobody picked up yet stays, so it is still delivered.
    let outcome = if fresh && input.outcome.is_none() {
        String::new()
    } else {
        after.outcome.clone()
    };
    events.push(Pending {
        kind: "row.updated",
        row_id: old.id.clone(),
        extra: json!({"from_status": before.status}),
    });
    if after.status == RowStatus::Blocked && (fresh || !after.same_step(&before)) {
        events.push(Pending {
            kind: "row.blocked",
            row_id: old.id.clone(),
            extra: json!({"fresh": fresh}),
        });
    }
    if !outcome.is_empty() && outcome != before.outcome {
        events.push(Pending {
            kind: "row.outcome",
            row_id: old.id.clone(),
            extra: json!({"outcome": outcome}),
        });
    }
    Ok(Some(Plan::Update {
        old_id: old.id.clone(),
        old_revision: old.revision,
        after,
        outcome,
        fresh,
    }))
}

/// Apply `inputs` to the board `board_id` (versions already checked).
/// Returns the events to append, or a refusal that aborts the transaction.
async fn apply_rows(
    conn: &mut SqliteConnection,
    now: i64,
    board_id: &str,
    stored: &[Row],
    inputs: &[RowInput],
) -> Result<Decided<Vec<Pending>>> {
    let (plans, events) = decided!(plan_rows(stored, inputs));
    for plan in &plans {
        let done = plan
            .query(now, board_id, UPDATE_ROW)
            .execute(&mut *conn)
            .await?;
        if let Plan::Update { old_id, .. } = plan {
            // Why: the guard was checked under the same write lock, so 0
            // rows here means a bug, not a race.
            confirm_one(done.rows_affected(), old_id)?;
        }
    }
    Ok(Ok(events))
}

/// The guarded UPDATE of an agent's row write, as a literal, with
/// `$eq` comparing the stored outcome to the new one: SQLite's `IS`,
/// PostgreSQL's `=` (neither side is ever NULL). Bound by [`Plan::query`].
/// Why guarded: `revision = $12` is the row's CAS, checked by the caller
/// under the same lock, so 0 rows here means a bug, not a race.
macro_rules! update_row {
    ($eq:literal) => {
        concat!(
            "UPDATE board_rows SET status = $1, note = $2, next_step = $3, owner = $4, impact = $5,
        options = $6, context = $7, outcome = $8,
        outcome_at = CASE WHEN outcome ",
            $eq,
            " $8 THEN outcome_at WHEN $8 = '' THEN NULL ELSE $9 END,
        handled_at = CASE WHEN $10 THEN NULL ELSE handled_at END,
        handled_by = CASE WHEN $10 THEN NULL ELSE handled_by END,
        handled_seen_at = CASE WHEN $10 THEN NULL ELSE handled_seen_at END,
        annotation = CASE WHEN $10 AND annotation_seen_at IS NOT NULL THEN NULL ELSE annotation END,
        annotation_kind = CASE WHEN $10 AND annotation_seen_at IS NOT NULL THEN NULL ELSE annotation_kind END,
        annotation_source = CASE WHEN $10 AND annotation_seen_at IS NOT NULL THEN NULL ELSE annotation_source END,
        annotated_by = CASE WHEN $10 AND annotation_seen_at IS NOT NULL THEN NULL ELSE annotated_by END,
        annotated_at = CASE WHEN $10 AND annotation_seen_at IS NOT NULL THEN NULL ELSE annotated_at END,
        annotation_seen_at = CASE WHEN $10 THEN NULL ELSE annotation_seen_at END,
        response_open = CASE WHEN annotation IS NOT NULL AND annotation_seen_at IS NULL
                             THEN response_open ELSE 0 END,
        revision = revision + 1, updated_at = $9
     WHERE id = $11 AND revision = $12"
        )
    };
}
pub(crate) use update_row;

/// SQLite's spelling of [`update_row!`].
const UPDATE_ROW: &str = update_row!("IS");

/// A planned row's INSERT; the same text runs on both engines.
const INSERT_ROW: &str =
    "INSERT INTO board_rows (id, board_id, label, status, note, next_step, owner, impact,
        options, context, outcome, outcome_at, action_started_at, position, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $13, $13)";

impl Plan {
    /// This plan's statement, bound, on either engine: the INSERT of a new
    /// row of `board_id`, or `update` (the engine's spelling of the
    /// guarded row UPDATE, placeholders `$1`–`$12` as [`UPDATE_ROW`]'s:
    /// `after`, the outcome, now, `fresh`, the old id and revision).
    pub(crate) fn query<DB>(
        &self,
        now: i64,
        board_id: &str,
        update: &'static str,
    ) -> sqlx::query::Query<'static, DB, <DB as sqlx::Database>::Arguments>
    where
        DB: sqlx::Database,
        for<'t> &'t str: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        for<'t> String: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        for<'t> i64: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        for<'t> Option<i64>: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        for<'t> bool: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    {
        match self {
            Plan::Insert {
                id,
                label,
                fields: f,
                position,
            } => sqlx::query(INSERT_ROW)
                .bind(id.as_str())
                .bind(board_id)
                .bind(label.as_str())
                .bind(f.status.as_str())
                .bind(f.note.as_str())
                .bind(f.next_step.as_str())
                .bind(f.owner.as_str())
                .bind(f.impact.as_str())
                .bind(f.options_json())
                .bind(f.context.as_str())
                .bind(f.outcome.as_str())
                .bind((!f.outcome.is_empty()).then_some(now))
                .bind(now)
                .bind(*position),
            Plan::Update {
                old_id,
                old_revision,
                after,
                outcome,
                fresh,
            } => sqlx::query(update)
                .bind(after.status.as_str())
                .bind(after.note.as_str())
                .bind(after.next_step.as_str())
                .bind(after.owner.as_str())
                .bind(after.impact.as_str())
                .bind(after.options_json())
                .bind(after.context.as_str())
                .bind(outcome.as_str())
                .bind(now)
                .bind(*fresh)
                .bind(old_id.as_str())
                .bind(*old_revision),
        }
    }
}

/// Bump the board, append `on_board` (an event about the board, if any) and the row events, settle
/// auto-archive (not for a board this write created: one created with every
/// row done stays in the list until a later write leaves it complete, rather
/// than vanishing into the archive the moment it appears), and read the board back.
pub(super) async fn finish(
    conn: &mut SqliteConnection,
    now: i64,
    board_id: &str,
    on_board: Option<(&str, serde_json::Value)>,
    events: Vec<Pending>,
    who: Who<'_>,
) -> Result<BoardFull> {
    let board = bump_version(conn, now, board_id).await?;
    let created = on_board.as_ref().is_some_and(|(_, p)| p["created"] == true);
    if let Some((kind, payload)) = on_board {
        board_event(conn, now, kind, &board, who, payload).await?;
    }
    for ev in events {
        let row = load_row(conn, &ev.row_id).await?;
        row_event(conn, now, ev.kind, &board, &row, who, ev.extra).await?;
    }
    if !created {
        settle(conn, now, board, who).await?;
    }
    load_full(conn, board_id).await
}

/// The board an upsert writes to, checked against the versions the
/// caller read, or created when it names no version: its id, whether this
/// write created it, and its stored rows.
async fn open_board(
    conn: &mut SqliteConnection,
    now: i64,
    up: &BoardUpsert,
) -> Result<Decided<(String, bool, Vec<Row>)>> {
    let existing: Option<(String, i64)> =
        sqlx::query_as("SELECT id, revision FROM boards WHERE project = ? AND title = ?")
            .bind(&up.project)
            .bind(&up.title)
            .fetch_optional(&mut *conn)
            .await?;
    let Some((id, current)) = existing else {
        if up.board_version.is_some() {
            return Ok(Err(not_found(format!(
                "board `{}` in project `{}` (a new board is written without a version)",
                up.title, up.project
            ))));
        }
        let stale = mismatches(&[], &up.rows);
        if !stale.is_empty() {
            return Ok(Err(Refusal::Stale {
                board_version: 0,
                rows: stale,
            }));
        }
        let id = new_id();
        sqlx::query(
            "INSERT INTO boards (id, project, title, revision, agent, session, created_at, updated_at)
             VALUES (?, ?, ?, 0, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(&up.project)
        .bind(&up.title)
        .bind(&up.agent)
        .bind(&up.session)
        .bind(now)
        .bind(now)
        .execute(&mut *conn)
        .await?;
        return Ok(Ok((id, true, Vec::new())));
    };
    let stored = load_rows(conn, &id).await?;
    let stale = mismatches(&stored, &up.rows);
    if up.board_version != Some(current) || !stale.is_empty() {
        return Ok(Err(Refusal::Stale {
            board_version: current,
            rows: stale,
        }));
    }
    Ok(Ok((id, false, stored)))
}

fn check_inputs(rows: &[RowInput]) -> Result<()> {
    if rows.len() > MAX_ROWS {
        return Err(Error::Invalid(format!(
            "{} rows given; one write takes at most {MAX_ROWS}",
            rows.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for r in rows {
        r.validate()?;
        if !seen.insert(r.label.as_str()) {
            return Err(Error::Invalid(format!(
                "row `{}` appears twice in one write",
                r.label
            )));
        }
    }
    Ok(())
}

impl Store {
    /// Create or update a board and some of its rows, all or nothing.
    ///
    /// An existing board needs its current `board_version`, and every
    /// existing row named needs its current `revision` (a new row none). Any
    /// mismatch refuses the whole write with [`Refusal::Stale`] carrying the
    /// current board version and the current revision of every mismatched
    /// row. Rows not named are left alone; a write that changes nothing
    /// changes no version and appends no event.
    pub async fn board_upsert(&self, up: &BoardUpsert) -> Result<Decided<BoardFull>> {
        check_name("the project", &up.project)?;
        check_name("the board title", &up.title)?;
        check_inputs(&up.rows)?;
        // Filed in its session's project (see `sessions/home.rs`).
        let project = self.session_home(&up.session, &up.project).await?;
        let claimed;
        let up = if project == up.project {
            up
        } else {
            claimed = BoardUpsert {
                project,
                ..up.clone()
            };
            &claimed
        };
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_writes::upsert(self, pg, up).await;
        }
        if let Some(full) = self.board_upsert_call(up).await? {
            return Ok(Ok(full));
        }
        self.retry(|| self.board_upsert_once(up)).await
    }

    /// The write as one transaction of several calls. It runs when the one
    /// call (`call_many`) did not win, so a refusal is explained (or an
    /// unchanged board returned) by the same reads and words as ever.
    async fn board_upsert_once(&self, up: &BoardUpsert) -> Result<Decided<BoardFull>> {
        let mut tx = self.begin_write().await?;
        let now = self.now();
        let (board_id, created, stored) = decided!(open_board(&mut tx, now, up).await?);
        let events = decided!(apply_rows(&mut tx, now, &board_id, &stored, &up.rows).await?);
        if !created && events.is_empty() {
            // Nothing changed: no version bump, no event (an idempotent refresh).
            return Ok(Ok(load_full(&mut tx, &board_id).await?));
        }
        if !created && (!up.agent.is_empty() || !up.session.is_empty()) {
            sqlx::query(
                "UPDATE boards SET agent = CASE WHEN ? = '' THEN agent ELSE ? END,
                    session = CASE WHEN ? = '' THEN session ELSE ? END WHERE id = ?",
            )
            .bind(&up.agent)
            .bind(&up.agent)
            .bind(&up.session)
            .bind(&up.session)
            .bind(&board_id)
            .execute(&mut *tx)
            .await?;
        }
        let labels: Vec<&str> = up.rows.iter().map(|r| r.label.as_str()).collect();
        let who = Who {
            actor: &up.agent,
            channel: Channel::Agent,
        };
        let board_event = (
            "board.upserted",
            json!({"title": up.title, "created": created, "rows": labels}),
        );
        let full = finish(&mut tx, now, &board_id, Some(board_event), events, who).await?;
        tx.commit().await?;
        Ok(Ok(full))
    }

    /// Write one row (create it, or change it with its `revision`), checking
    /// the board version too when given.
    pub async fn board_row(&self, w: &RowWrite) -> Result<Decided<BoardFull>> {
        w.row.validate()?;
        if let Engine::Postgres(pg) = self.engine() {
            return postgres::board_writes::row(self, pg, w, false).await;
        }
        if let Some(full) = self.board_row_call(w, false).await? {
            return Ok(Ok(full));
        }
        self.retry(|| self.board_row_once(w)).await
    }

    pub(super) async fn board_row_once(&self, w: &RowWrite) -> Result<Decided<BoardFull>> {
        let mut tx = self.begin_write().await?;
        let now = self.now();
        let board_id = decided!(resolve_board(&mut tx, &w.board, w.project.as_deref()).await?);
        let board = load_board(&mut tx, &board_id).await?;
        let stored = load_rows(&mut tx, &board_id).await?;
        let rows = std::slice::from_ref(&w.row);
        let stale = mismatches(&stored, rows);
        let board_stale = w.board_version.is_some_and(|v| v != board.board_version);
        if board_stale || !stale.is_empty() {
            return Ok(Err(Refusal::Stale {
                board_version: board.board_version,
                rows: stale,
            }));
        }
        let events = decided!(apply_rows(&mut tx, now, &board_id, &stored, rows).await?);
        if events.is_empty() {
            return Ok(Ok(load_full(&mut tx, &board_id).await?));
        }
        let who = Who {
            actor: &w.by,
            channel: Channel::Agent,
        };
        let full = finish(&mut tx, now, &board_id, None, events, who).await?;
        tx.commit().await?;
        Ok(Ok(full))
    }
}
