//! How an agent's row write becomes changes: which stored rows it
//! mismatches, the insert or guarded update each input row needs, the
//! events they append, and applying the plan in the write's transaction.

use serde_json::json;

use super::input::{Fields, RowInput};
use super::record::confirm_one;
use super::{Decided, Refusal, Row, RowStatus, StaleRow};
use crate::store::engine::{Stmt, Tx};
use crate::store::{Result, new_id};

/// A row event to append once the new board version is known.
pub(super) struct Pending {
    pub(super) kind: &'static str,
    pub(super) row_id: String,
    pub(super) extra: serde_json::Value,
}

/// Check every input row against the stored rows; the refusal lists all
/// mismatches at once.
pub(super) fn mismatches(stored: &[Row], inputs: &[RowInput]) -> Vec<StaleRow> {
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
pub(super) enum Plan {
    /// Create the row `id` with `fields` (`options` as stored) at `position`.
    Insert {
        id: String,
        label: String,
        fields: Fields,
        options: String,
        position: i64,
    },
    /// Change the stored row `old_id` (at `old_revision`) to `after`,
    /// storing `outcome` (`options` as stored); a `fresh` block resets the
    /// human's fields.
    Update {
        old_id: String,
        old_revision: i64,
        after: Fields,
        options: String,
        outcome: String,
        fresh: bool,
    },
}

/// Decide what `inputs` make of the board's `stored` rows, before anything
/// is written (so a refusal writes nothing on either engine): the row
/// writes and the events to append after them, in input order. A row the
/// input would not change is left out.
pub(super) fn plan_rows(stored: &[Row], inputs: &[RowInput]) -> Decided<(Vec<Plan>, Vec<Pending>)> {
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
        options: fields.options_json(),
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
        options: after.options_json(),
        after,
        outcome,
        fresh,
    }))
}

/// Write the planned rows (every refusal was decided before).
pub(super) async fn apply(tx: &mut Tx<'_>, now: i64, board_id: &str, plans: &[Plan]) -> Result<()> {
    for plan in plans {
        let done = tx.change(&plan.stmt(now, board_id)).await?;
        if let Plan::Update { old_id, .. } = plan {
            // Why: the guard was checked under the same lock, so 0 rows
            // here means a bug, not a race.
            confirm_one(done, old_id)?;
        }
    }
    Ok(())
}

/// The rest of a row UPDATE after its `outcome_at` (the same on both
/// engines): a `fresh` block (`$10`) resets the human's fields.
macro_rules! update_row_rest {
    () => {
        "
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
    };
}

impl Plan {
    /// This plan's statement: the INSERT of a new row of `board_id`, or
    /// the guarded UPDATE of a stored one. Why guarded: `revision = $12`
    /// is the row's CAS, checked by the caller under the same lock, so 0
    /// rows here means a bug, not a race. The stored outcome is compared
    /// with SQLite's `IS`, PostgreSQL's `=` (neither side is ever NULL).
    fn stmt<'q>(&'q self, now: i64, board_id: &'q str) -> Stmt<'q> {
        match self {
            Plan::Insert {
                id,
                label,
                fields: f,
                options,
                position,
            } => Stmt::new(
                "INSERT INTO board_rows (id, board_id, label, status, note, next_step, owner, impact,
                    options, context, outcome, outcome_at, action_started_at, position, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $13, $13)",
            )
            .text(id.as_str())
            .text(board_id)
            .text(label.as_str())
            .text(f.status.as_str())
            .text(f.note.as_str())
            .text(f.next_step.as_str())
            .text(f.owner.as_str())
            .text(f.impact.as_str())
            .text(options.as_str())
            .text(f.context.as_str())
            .text(f.outcome.as_str())
            .int((!f.outcome.is_empty()).then_some(now))
            .int(now)
            .int(*position),
            Plan::Update {
                old_id,
                old_revision,
                after,
                options,
                outcome,
                fresh,
            } => Stmt::spelled(
                concat!(
                    "UPDATE board_rows SET status = $1, note = $2, next_step = $3, owner = $4, impact = $5,
                        options = $6, context = $7, outcome = $8,
                        outcome_at = CASE WHEN outcome IS $8 THEN outcome_at WHEN $8 = '' THEN NULL ELSE $9 END,",
                    update_row_rest!()
                ),
                concat!(
                    "UPDATE board_rows SET status = $1, note = $2, next_step = $3, owner = $4, impact = $5,
                        options = $6, context = $7, outcome = $8,
                        outcome_at = CASE WHEN outcome = $8 THEN outcome_at WHEN $8 = '' THEN NULL ELSE $9 END,",
                    update_row_rest!()
                ),
            )
            .text(after.status.as_str())
            .text(after.note.as_str())
            .text(after.next_step.as_str())
            .text(after.owner.as_str())
            .text(after.impact.as_str())
            .text(options.as_str())
            .text(after.context.as_str())
            .text(outcome.as_str())
            .int(now)
            .bool(*fresh)
            .text(old_id.as_str())
            .int(*old_revision),
        }
    }
}
