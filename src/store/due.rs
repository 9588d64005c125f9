//! When the daemon's housekeeping next has work: the earliest expiry of a
//! pending action, its next escalation step, and the earliest lease of an
//! executing one, so the daemon
//! can sleep until then instead of sweeping on a fixed cadence. It only
//! reads; the sweeps themselves are `Store::expire_due` and recovery.

use crate::store::engine::Stmt;
use crate::store::{Result, Store};

/// Index ranges on the partial `actions_pending_expiry`,
/// `actions_pending_escalate` and `actions_executing` (live rows only). The
/// same text on both engines (PostgreSQL wants the subquery named).
const DUE: &str = "SELECT MIN(t) FROM (
         SELECT MIN(expires_at) AS t FROM actions
          WHERE status = 'pending' AND expires_at IS NOT NULL
         UNION ALL
         SELECT MIN(escalate_at) FROM actions
          WHERE status = 'pending' AND escalate_at IS NOT NULL
         UNION ALL
         SELECT MIN(lease_until) FROM actions WHERE status = 'executing'
     ) AS due";

impl Store {
    /// The earliest time (ms) at which an expiry sweep or lease recovery
    /// or escalation would change something: a pending action's
    /// `expires_at` or next escalation step, or an executing action's
    /// `lease_until`. `None` when none exists.
    pub async fn next_housekeeping_due(&self) -> Result<Option<i64>> {
        self.first(Stmt::new(DUE)).await
    }
}
