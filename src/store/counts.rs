//! The counts `/metrics` reports, read without scanning items: actions by
//! effective status from the trigger-kept `action_counts` (plus a range over
//! the partial index of pending actions past their expiry, which are still
//! `pending` in their row), and open questions from the status index. Per
//! project, so a scoped caller sees only its own.

use crate::store::actions::Status;
use crate::store::postgres::counts as pg_counts;
use crate::store::{Engine, Result, Store};

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

impl Store {
    /// The counts of `project` (all projects when `None`).
    pub async fn counts(&self, project: Option<&str>) -> Result<Counts> {
        let now = self.now();
        let (stored, lapsed, open_questions) = match self.engine() {
            Engine::Postgres(pg) => pg_counts::counts(pg, project, now).await?,
            Engine::Sqlite(_) => self.lite_counts(project, now).await?,
        };
        let of =
            |v: &[(String, i64)], k: &str| v.iter().find(|(s, _)| s == k).map_or(0, |(_, n)| *n);
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

    /// The three reads of [`Store::counts`] on SQLite: action counts by
    /// stored status, pending actions past their expiry by `on_expire`,
    /// and open questions.
    async fn lite_counts(&self, project: Option<&str>, now: i64) -> Result<RawCounts> {
        let stored: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status, SUM(n) FROM action_counts WHERE (?1 IS NULL OR project = ?1) GROUP BY status",
        )
        .bind(project)
        .fetch_all(self.pool()?)
        .await?;
        let lapsed: Vec<(String, i64)> = sqlx::query_as(
            "SELECT on_expire, COUNT(*) FROM actions
             WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?2
               AND (?1 IS NULL OR project = ?1)
             GROUP BY on_expire",
        )
        .bind(project)
        .bind(now)
        .fetch_all(self.pool()?)
        .await?;
        let open_questions: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM questions WHERE status = 'open' AND (?1 IS NULL OR project = ?1)",
        )
        .bind(project)
        .fetch_one(self.pool()?)
        .await?;
        Ok((stored, lapsed, open_questions))
    }
}

/// What [`Store::counts`] reads before it sums: (stored status, n),
/// (`on_expire` of lapsed pending actions, n) and the open questions.
pub(crate) type RawCounts = (Vec<(String, i64)>, Vec<(String, i64)>, i64);

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
        let (blocked_rows, live_sessions): (i64, i64) = match self.engine() {
            Engine::Postgres(pg) => sqlx::query_as(OVERVIEW).fetch_one(pg.pool()).await?,
            Engine::Sqlite(_) => sqlx::query_as(OVERVIEW).fetch_one(self.pool()?).await?,
        };
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
