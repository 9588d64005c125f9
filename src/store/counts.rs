//! The counts `/metrics` reports, read from indexes, never from rows:
//! actions by effective status counted at scrape time over
//! `actions_project_status` (one project's range of it, or all of it for
//! every project), minus the pending actions past their expiry (still
//! `pending` in their row: a range over the partial `actions_pending_expiry`),
//! and open questions from the status index. Per project, so a scoped caller
//! sees only its own. No transition writes a counter (docs/design.md §4).
//! Every statement here is the same text on both engines.

use crate::store::actions::Status;
use crate::store::engine::Stmt;
use crate::store::{Result, Store};

/// Blocked rows of boards not archived, and sessions not ended: the same
/// text on both engines.
const OVERVIEW: &str = "SELECT
     (SELECT COUNT(*) FROM board_rows r JOIN boards b ON b.id = r.board_id
       WHERE r.status = 'blocked' AND b.archived_at IS NULL),
     (SELECT COUNT(*) FROM agent_sessions WHERE status <> 'ended')";

/// What `/metrics` shows of the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Open questions.
    pub open_questions: i64,
    /// Actions by effective status, in [`Status::ALL`] order.
    pub actions: Vec<(Status, i64)>,
}

/// Action counts by (project, stored status), every project: the whole of
/// `actions_project_status` in its own order, read without a row (grouped
/// by status alone, SQLite sorts every entry again: twice the time).
const STORED_ALL: &str = "SELECT status, COUNT(*) FROM actions GROUP BY project, status";

/// Action counts by stored status of project `$1`: its range of
/// `actions_project_status` (the index-only count; a `$1 IS NULL OR`
/// would lose the range).
const STORED_IN: &str = "SELECT status, COUNT(*) FROM actions WHERE project = $1 GROUP BY status";

/// Pending actions past their expiry at `$2`, by `on_expire`.
const LAPSED: &str = "SELECT on_expire, COUNT(*) FROM actions
     WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $2
       AND (CAST($1 AS TEXT) IS NULL OR project = $1)
     GROUP BY on_expire";

/// Open questions.
const OPEN: &str = "SELECT COUNT(*) FROM questions
     WHERE status = 'open' AND (CAST($1 AS TEXT) IS NULL OR project = $1)";

impl Store {
    /// The counts of `project` (all projects when `None`): the three reads
    /// in one snapshot, so they agree.
    pub async fn counts(&self, project: Option<&str>) -> Result<Counts> {
        let now = self.now();
        let mut snap = self.snapshot().await?;
        let stored: Vec<(String, i64)> = match project {
            Some(p) => snap.tx().rows(&Stmt::new(STORED_IN).text(p)).await?,
            None => snap.tx().rows(&Stmt::new(STORED_ALL)).await?,
        };
        let lapsed: Vec<(String, i64)> = snap
            .tx()
            .rows(&Stmt::new(LAPSED).text(project).int(now))
            .await?;
        let open: Option<(i64,)> = snap.tx().row(&Stmt::new(OPEN).text(project)).await?;
        snap.end().await?;
        let open_questions = open.map_or(0, |(n,)| n);
        // A status may come once per project: sum them.
        let of = |v: &[(String, i64)], k: &str| {
            v.iter()
                .filter(|(s, _)| s == k)
                .map(|(_, n)| *n)
                .sum::<i64>()
        };
        let (lapsed_expire, lapsed_reject) = (of(&lapsed, "expire"), of(&lapsed, "reject"));
        let actions = Status::ALL
            .into_iter()
            .map(|st| {
                let n = of(&stored, st.as_str())
                    + match st {
                        Status::Pending => -(lapsed_expire + lapsed_reject),
                        Status::Expired => lapsed_expire,
                        Status::Rejected => lapsed_reject,
                        _ => 0,
                    };
                (st, n)
            })
            .collect();
        Ok(Counts {
            open_questions,
            actions,
        })
    }
}

/// What `handoff status` shows of a database: what waits on people and agents.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Overview {
    /// Open questions.
    pub open_questions: i64,
    /// Actions waiting for a decision.
    pub pending_actions: i64,
    /// Actions whose outcome is unknown (a person must settle them).
    pub unknown_actions: i64,
    /// Blocked rows of boards not archived.
    pub blocked_rows: i64,
    /// Sessions not ended.
    pub live_sessions: i64,
    /// The event log's last sequence number.
    pub last_seq: i64,
}

impl Store {
    /// The [`Overview`] of every project.
    pub async fn overview(&self) -> Result<Overview> {
        let counts = self.counts(None).await?;
        let of = |s: Status| {
            counts
                .actions
                .iter()
                .find(|(st, _)| *st == s)
                .map_or(0, |(_, n)| *n)
        };
        let (blocked_rows, live_sessions): (i64, i64) = self
            .row(Stmt::new(OVERVIEW))
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        Ok(Overview {
            open_questions: counts.open_questions,
            pending_actions: of(Status::Pending),
            unknown_actions: of(Status::Unknown),
            blocked_rows,
            live_sessions,
            last_seq: self.last_event_seq().await?,
        })
    }
}
