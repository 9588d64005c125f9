//! The approval: what one approval applies, the guarded UPDATE that
//! counts it, and SQLite's one call that runs it — beside its PostgreSQL
//! twin in `postgres.rs`, joined by `Store::write_split` in
//! `transitions.rs`.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::logged::{Entry, logged_then};
use super::spelling::{Spelling, Sql};
use super::{Action, ApproveOutcome, COLUMNS, Status};
use crate::store::engine::{Stmt, Tx};
use crate::store::writer::Turn;

/// An approval patch, checked against the arguments it was made for.
pub(crate) struct Patched {
    /// The patch (canonical JSON).
    pub(crate) patch: String,
    /// The arguments with the patch applied (canonical JSON).
    pub(crate) effective: String,
    /// The arguments the patch was checked against (canonical JSON).
    pub(crate) expected: String,
    /// The audit details of `patched` (redacted JSON).
    pub(crate) details: String,
}

/// One approval to apply.
pub(crate) struct Approval {
    pub(crate) id: String,
    pub(crate) actor: String,
    pub(crate) channel: crate::store::Channel,
    pub(crate) patched: Option<Patched>,
    pub(crate) outright: bool,
}

impl Approval {
    /// `sql` (an approval's guarded UPDATE) with its values (`$1`–`$10`:
    /// id, approver, now, patch, outright, patched arguments, the
    /// arguments patched, the early-quorum fault, channel, the patch's
    /// audit details).
    pub(crate) fn bind(&self, sql: &'static Sql, now: i64) -> Stmt<'_> {
        let patched = self.patched.as_ref();
        sql.stmt()
            .text(self.id.as_str())
            .text(self.actor.as_str())
            .int(now)
            .text(patched.map(|p| p.patch.as_str()))
            .bool(self.outright)
            .text(patched.map(|p| p.effective.as_str()))
            .text(patched.map(|p| p.expected.as_str()))
            .int(i64::from(crate::fault::on("early-quorum"))) // FAULT(early-quorum)
            .text(self.channel.as_str())
            .text(patched.map(|p| p.details.as_str()))
    }
}

/// What one approval call found: it counted, or it was refused (the row
/// as it stands and whether this approver already counted), or there is
/// no such action.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) enum Approving {
    Won(Box<ApproveOutcome>),
    Refused { action: Box<Action>, counted: bool },
    Missing,
}

impl Approving {
    /// A counted approval, as `action` stands after it.
    pub(crate) fn won(action: Action) -> Self {
        Approving::Won(Box::new(if action.status == Status::Approved {
            ApproveOutcome::Approved { action }
        } else {
            ApproveOutcome::ApprovalAdded { action }
        }))
    }
}

/// An approval's guarded UPDATE (`$1`–`$10`, see [`Approval::bind`]).
/// Why guarded: the state, the TTL, the "not counted yet" check, the
/// separation of duties (not the proposer, when the action says so) and
/// (for a patch) "nobody approved these arguments yet" are all in the one
/// predicate, so of N concurrent approvers exactly the right ones count
/// and approving at or after the expiry millisecond cannot happen.
pub(crate) fn approve_sql(s: &Spelling, returning: &str, then: Option<&str>) -> String {
    let change = "UPDATE actions SET
             approvals = approvals + 1,
             status = CASE WHEN $5 OR approvals + 1 + $8 >= approvals_required THEN 'approved' ELSE 'pending' END,
             decided_by = CASE WHEN $5 OR approvals + 1 + $8 >= approvals_required THEN $2 ELSE decided_by END,
             decided_at = CASE WHEN $5 OR approvals + 1 + $8 >= approvals_required THEN $3 ELSE decided_at END,
             patch = COALESCE($4, patch),
             effective_args = COALESCE($6, effective_args),
             updated_at = $3
         WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $3)
           AND NOT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = $1 AND approver = $2)
           AND NOT (not_by_proposer <> 0 AND proposer = $2)
           AND ($7 IS NULL OR (approvals = 0 AND effective_args = $7))";
    let details =
        s.object("'approvals', approvals, 'approver', $2, 'required', approvals_required");
    let entry = Entry {
        patched: Some("$10"),
        approver: Some("$2"),
        ..Entry::new(
            "CASE status WHEN 'approved' THEN 'approved' ELSE 'approval_added' END",
            "$2",
            "$9",
            &details,
        )
    };
    logged_then(s, change, returning, &entry, then)
}

/// SQLite's approval in one call: [`approve_sql`] and a read of the row
/// that answers only when the UPDATE changed nothing.
pub(super) static APPROVE_ONE_CALL: Sql = Sql::new(|s| {
    let explain = format!(
        "SELECT {COLUMNS}, 0 AS won, EXISTS (SELECT 1 FROM action_approvals
                 WHERE action_id = $1 AND approver = $2) AS counted
         FROM actions WHERE id = $1 AND changes() = 0"
    );
    approve_sql(
        s,
        &format!("{COLUMNS}, 1 AS won, 0 AS counted"),
        Some(&explain),
    )
});

/// A row of [`APPROVE_ONE_CALL`]: the action, whether this approval won
/// and, refused, whether this approver already counted.
#[derive(sqlx::FromRow)]
struct Judged {
    #[sqlx(flatten)]
    row: super::Stored,
    won: bool,
    counted: bool,
}

/// Apply one approval on SQLite: one guarded `UPDATE … RETURNING`, the
/// approvals row and the events (its audit entries) after it (`logged.rs`)
/// — and, in the same call, a read of the row that only answers when the UPDATE
/// changed nothing (`changes() = 0`), so a refusal explains itself
/// without a second round trip. Why it matters: of 8 approvers racing on
/// one action 7 are refused.
pub(super) fn approve_in_one_call(
    turn: &mut Turn,
    a: Arc<Approval>,
    now: i64,
) -> BoxFuture<'_, crate::store::Result<Approving>> {
    Box::pin(async move {
        let rows: Vec<Judged> = Tx::Turn(turn).rows(&a.bind(&APPROVE_ONE_CALL, now)).await?;
        let Some(first) = rows.into_iter().next() else {
            return Ok(Approving::Missing);
        };
        let action = first.row.action()?;
        if !first.won {
            return Ok(Approving::Refused {
                counted: first.counted,
                action: Box::new(action),
            });
        }
        Ok(Approving::won(action))
    })
}
