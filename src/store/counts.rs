//! The counts `/metrics` reports, read without scanning items: actions by
//! effective status from the trigger-kept `action_counts` (plus a range over
//! the partial index of pending actions past their expiry, which are still
//! `pending` in their row), and open questions from the status index. Per
//! project, so a scoped caller sees only its own.

use crate::store::actions::Status;
use crate::store::{Result, Store};

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
        let stored: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status, SUM(n) FROM action_counts WHERE (?1 IS NULL OR project = ?1) GROUP BY status",
        )
        .bind(project)
        .fetch_all(self.pool())
        .await?;
        let lapsed: Vec<(String, i64)> = sqlx::query_as(
            "SELECT on_expire, COUNT(*) FROM actions
             WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?2
               AND (?1 IS NULL OR project = ?1)
             GROUP BY on_expire",
        )
        .bind(project)
        .bind(now)
        .fetch_all(self.pool())
        .await?;
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
        let open_questions: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM questions WHERE status = 'open' AND (?1 IS NULL OR project = ?1)",
        )
        .bind(project)
        .fetch_one(self.pool())
        .await?;
        Ok(Counts {
            open_questions,
            actions,
        })
    }
}
