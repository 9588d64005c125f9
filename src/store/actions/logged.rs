//! A transition and its log entry in one database call, with nothing
//! about the entry stored on the action's row (docs/design.md §1, §4, §6).
//!
//! The statement that changes the row (the guarded `UPDATE`, or the
//! proposal's `INSERT`) is written once; [`logged`] wraps it with the event
//! it appends (its audit entry) and, for an approval, the approvals row.
//! The entry's values are expressions over the row as the change left it,
//! so nothing is written twice. The shape differs per engine, the text of
//! the change does not:
//!
//! - SQLite, whose `WITH` takes no `UPDATE`: the change, then the inserts,
//!   as statements of one call inside its own savepoint (`SAVEPOINT
//!   one_call; … RELEASE one_call`, [`call_text`]), so they are all or
//!   nothing and no other connection writes between them: without it a
//!   lone writer runs in autocommit, each statement its own transaction,
//!   and another process's approval could land between this change and
//!   its entry. The write turn runs such a call with
//!   [`Turn::savepoint_call`](crate::store::writer::Turn::savepoint_call)
//!   (`Tx::rows` sees the savepoint), which undoes it when a statement
//!   fails. Each insert is guarded by `changes() = 1`, the rows the
//!   statement before it changed: the change won, and the approvals row
//!   exists (one per winning approval). A change of many rows (the expiry
//!   sweep) appends its entries first, from the same predicate over the
//!   same rows, since nothing else writes between two statements of the
//!   write turn.
//! - PostgreSQL: one statement, the change in a data-modifying `WITH` whose
//!   `RETURNING` feeds the inserts.

use super::spelling::Spelling;
use crate::store::writer::call_text;

/// The log entry of a transition: SQL expressions over the action's row
/// after the change (over the row before it, for a change of many rows:
/// then they must read the same on both).
pub(crate) struct Entry<'a> {
    /// The entry's name (the event type without `action.`).
    pub(crate) event: &'a str,
    pub(crate) actor: &'a str,
    pub(crate) channel: &'a str,
    /// The audit details (JSON text, secrets already redacted).
    pub(crate) details: &'a str,
    /// The status after the change (the payload's `status`).
    pub(crate) status: &'a str,
    /// The entry's time.
    pub(crate) at: &'a str,
    /// An approval's patch: its details, an entry of its own before this
    /// one when not NULL.
    pub(crate) patched: Option<&'a str>,
    /// An approval: the approver whose approvals row the change adds.
    pub(crate) approver: Option<&'a str>,
    /// Further condition on appending the entry (a fault that drops it).
    pub(crate) when: &'a str,
    /// A change of many rows: the predicate that picks them (SQLite
    /// appends their entries first). `None`: the change is of `id = $1`.
    pub(crate) many: Option<&'a str>,
}

impl Entry<'_> {
    /// An entry with the defaults: the row's status and `updated_at`, no
    /// patch, no approvals row, always appended, the one row `$1`.
    pub(crate) const fn new<'a>(
        event: &'a str,
        actor: &'a str,
        channel: &'a str,
        details: &'a str,
    ) -> Entry<'a> {
        Entry {
            event,
            actor,
            channel,
            details,
            status: "status",
            at: "updated_at",
            patched: None,
            approver: None,
            when: "1 = 1",
            many: None,
        }
    }
}

/// `change` (no `RETURNING`) with `e` appended in the same call, answering
/// `returning` of the changed rows.
pub(crate) fn logged(s: &Spelling, change: &str, returning: &str, e: &Entry) -> String {
    logged_then(s, change, returning, e, None)
}

/// [`logged`], and on SQLite `then` (one statement) last in the same call,
/// inside its savepoint (PostgreSQL's one statement takes none).
pub(crate) fn logged_then(
    s: &Spelling,
    change: &str,
    returning: &str,
    e: &Entry,
    then: Option<&str>,
) -> String {
    if s.in_one_statement {
        return in_one_statement(s, change, returning, e);
    }
    let from = match e.many {
        Some(pred) => format!("actions WHERE {pred}"),
        None => "actions WHERE id = $1 AND changes() = 1".to_string(),
    };
    let entries = entries(s, e, &from);
    let then = then.map(|t| format!("\n{t};")).unwrap_or_default();
    if e.many.is_some() {
        return call_text(&[format!("{entries};\n{change} RETURNING {returning};{then}")]);
    }
    let approvals = match e.approver {
        Some(who) => format!(
            "INSERT INTO action_approvals (action_id, approver, at)
             SELECT id, {who}, updated_at FROM {from};\n"
        ),
        None => String::new(),
    };
    call_text(&[format!(
        "{change} RETURNING {returning};\n{approvals}{entries};{then}"
    )])
}

/// PostgreSQL's shape: `WITH u AS (change RETURNING *)` and the inserts
/// reading `u`.
fn in_one_statement(s: &Spelling, change: &str, returning: &str, e: &Entry) -> String {
    let approvals = match e.approver {
        Some(who) => format!(
            ",\n a AS (INSERT INTO action_approvals (action_id, approver, at)
                SELECT id, {who}, updated_at FROM u)"
        ),
        None => String::new(),
    };
    format!(
        "WITH u AS ({change} RETURNING *){approvals},\n l AS ({})\n SELECT {returning} FROM u",
        entries(s, e, "u")
    )
}

/// The INSERT of `e`'s events (a patch's first), reading rows `from`.
fn entries(s: &Spelling, e: &Entry, from: &str) -> String {
    let row = |n: u8, event: &str, audit: &str, when: &str| {
        format!(
            "SELECT {n} AS n, {at} AS at, {event} AS type, id, {actor} AS actor, {channel} AS channel,
                    project, session, {status} AS status, kind, summary, {audit} AS audit
             FROM {from}{and} {when}",
            at = e.at,
            actor = e.actor,
            channel = e.channel,
            status = e.status,
            and = if from.contains(" WHERE ") {
                " AND"
            } else {
                " WHERE"
            },
        )
    };
    let main = row(1, &format!("'action.' || {}", e.event), e.details, e.when);
    let rows = match e.patched {
        Some(p) => format!(
            "{}\n UNION ALL {main}",
            row(0, "'action.patched'", p, &format!("{p} IS NOT NULL"))
        ),
        None => main,
    };
    format!(
        "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session,
                             payload, audit)
         SELECT at, type, 'action', id, actor, channel, project, session, {}, audit
         FROM ({rows}) x ORDER BY n",
        s.with_state("audit")
    )
}
