//! Refused attempts: someone who may not decide tried to (a chat member not
//! on the approvers' list). Nothing changes, but the audit keeps the attempt.

use std::sync::Arc;

use serde_json::json;

use super::{Actor, Error, Result, load, record_payload};
use crate::store::{Channel, NewEvent, Store};

impl Store {
    /// Audit a refused decision attempt on action `id` by `actor`, with the
    /// reason it was refused: its event, which is its audit entry, in a
    /// transaction of its own. Changes no state.
    pub async fn audit_refused_attempt(
        &self,
        id: &str,
        actor: Actor<'_>,
        reason: &str,
    ) -> Result<()> {
        let input = Arc::new((
            id.to_string(),
            actor.name.to_string(),
            actor.channel,
            reason.to_string(),
        ));
        let found = self
            .transact_apart(input, |mut tx, input, now| {
                Box::pin(async move {
                    let (id, actor, channel, reason): &(String, String, Channel, String) = &input;
                    let Some(action) = load(&mut tx, id, false).await? else {
                        return Ok(false);
                    };
                    let details = json!({ "reason": reason });
                    let details_text = details.to_string();
                    let ev = NewEvent {
                        kind: "action.refused_attempt",
                        entity_kind: "action",
                        entity_id: &action.id,
                        actor,
                        channel: *channel,
                        project: &action.project,
                        session: &action.session,
                        payload: record_payload(&action, details),
                    };
                    tx.append_audited(now, &ev, &details_text).await?;
                    Ok(true)
                })
            })
            .await?;
        if found {
            Ok(())
        } else {
            Err(Error::NotFound(id.to_string()))
        }
    }
}
