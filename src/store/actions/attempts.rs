//! Refused attempts: someone who may not decide tried to (a chat member not
//! on the approvers' list). Nothing changes, but the audit keeps the attempt.

use serde_json::json;

use super::{Actor, Result, load, record};
use crate::store::postgres::actions as pg;
use crate::store::{Engine, Store};

impl Store {
    /// Audit a refused decision attempt on action `id` by `actor`, with the
    /// reason it was refused. Changes no state.
    pub async fn audit_refused_attempt(
        &self,
        id: &str,
        actor: Actor<'_>,
        reason: &str,
    ) -> Result<()> {
        if let Engine::Postgres(p) = self.engine() {
            let a = pg::Attempt {
                id: id.to_string(),
                actor: actor.name.to_string(),
                channel: actor.channel,
                reason: reason.to_string(),
            };
            return pg::refused_attempt(self, p, a).await;
        }
        self.retry_actions(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            let action = load(&mut tx, id).await?;
            record(
                &mut tx,
                now,
                &action,
                actor,
                "refused_attempt",
                json!({ "reason": reason }),
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }
}
