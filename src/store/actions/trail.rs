//! An action's audit trail, read from the event log (docs/design.md §4).

use serde::Serialize;
use serde_json::Value;

use super::{Result, parse_json};
use crate::store::Store;
use crate::store::engine::Stmt;

/// One action's audit entries (`$1` its id), oldest first: its events
/// that carry audit details, the entry's name the event type without
/// `action.`. Read through `events_entity`.
pub(crate) const AUDIT_OF: &str =
    "SELECT seq, entity_id, at, actor, substr(type, 8), audit FROM events
     WHERE entity_kind = 'action' AND entity_id = $1 AND audit IS NOT NULL ORDER BY seq";

/// One audit entry: an action's event in the log, with its audit details.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct AuditEntry {
    /// Position in the log (the event's seq).
    pub seq: i64,
    /// The audited action's id.
    pub action_id: String,
    /// When the transition was written.
    #[serde(with = "crate::clock::Timestamp")]
    pub at: i64,
    /// Who (a person, `rule:<name>`, `expiry`, `recovery`, an executor id).
    pub actor: String,
    /// What: `proposed`, `approval_added`, `approved`, `patched`, …
    pub event: String,
    /// Details, secrets redacted.
    pub details: Value,
}

impl Store {
    /// The audit trail of one action, oldest first: its entries in the
    /// event log (docs/design.md §4).
    pub async fn action_audit(&self, id: &str) -> Result<Vec<AuditEntry>> {
        let id = self.resolve_action_id(id).await?;
        let rows: Vec<(i64, String, i64, String, String, String)> =
            self.rows(Stmt::new(AUDIT_OF).text(id.as_str())).await?;
        rows.into_iter()
            .map(|(seq, action_id, at, actor, event, details)| {
                Ok(AuditEntry {
                    seq,
                    action_id,
                    at,
                    actor,
                    event,
                    details: parse_json("audit details", &details)?,
                })
            })
            .collect()
    }
}
