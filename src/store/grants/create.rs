//! Saving a grant: its input checked, then one INSERT that two taps racing
//! on one prompt settle through the unique index on the prompt's action.

use std::sync::Arc;

use super::{Grant, NewGrant, OF_ACTION, Scope, grant_event, pattern};
use crate::store::engine::Stmt;
use crate::store::{Channel, Error, Result, Store, new_id};

impl Store {
    /// Save a grant, unconfirmed (it matches nothing until
    /// [`Store::grant_confirm`]). A prompt already carrying a grant keeps
    /// the first one: a double tap never saves two. Refused when the
    /// pattern is not what [`pattern::derive`] gives for the tool.
    pub async fn grant_create(&self, g: &NewGrant<'_>, channel: Channel) -> Result<Grant> {
        let session = checked(g, self.now())?;
        let input = Arc::new((
            [
                g.agent,
                session,
                g.project,
                g.tool,
                g.pattern,
                g.action_id,
                g.by,
                g.path,
            ]
            .map(str::to_string),
            g.scope,
            g.expires_at,
        ));
        self.transact(input, move |mut tx, input, now| {
            Box::pin(async move {
                let ([agent, session, project, tool, pattern, action_id, by, path], scope, end) =
                    &*input;
                let id = new_id();
                // Why ON CONFLICT DO NOTHING: the unique index on action_id
                // decides two taps racing on one prompt; the loser (on
                // PostgreSQL after waiting for the winner's insert) reads
                // the winner's grant.
                let insert = Stmt::new(
                    "INSERT INTO grants (id, scope, agent, session, project, tool, pattern, action_id, created_by, created_at, expires_at, path)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                     ON CONFLICT (action_id) DO NOTHING RETURNING *",
                )
                .text(id.as_str())
                .text(scope.as_str())
                .text(agent.as_str())
                .text(session.as_str())
                .text(project.as_str())
                .text(tool.as_str())
                .text(pattern.as_str())
                .text(action_id.as_str())
                .text(by.as_str())
                .int(now)
                .int(*end)
                .text(path.as_str());
                match tx.row::<Grant>(&insert).await? {
                    Some(grant) => {
                        tx.append(now, &grant_event("grant.created", by, channel, &grant))
                            .await?;
                        Ok(grant)
                    }
                    None => {
                        let first = Stmt::new(OF_ACTION).text(action_id.as_str());
                        let grant: Option<Grant> = tx.row(&first).await?;
                        Ok(grant.ok_or(sqlx::Error::RowNotFound)?)
                    }
                }
            })
        })
        .await
    }
}

/// A grant's input checked before anything is written: its session (empty
/// for an "always" grant), or what to fix.
fn checked<'a>(g: &NewGrant<'a>, now: i64) -> Result<&'a str> {
    if g.pattern.trim().is_empty() || g.tool.trim().is_empty() {
        return Err(Error::Invalid("a grant needs a tool and a pattern".into()));
    }
    let session = match g.scope {
        Scope::Session if g.session.trim().is_empty() => {
            return Err(Error::Invalid(
                "a session grant needs the agent's session id (the prompt carried none)".into(),
            ));
        }
        Scope::Session => g.session,
        Scope::Always => "",
    };
    if let Some(end) = g.expires_at
        && end <= now
    {
        return Err(Error::Invalid(format!(
            "the grant's end ({}) is not in the future: give a later time",
            crate::clock::format_rfc3339(end)
        )));
    }
    if !g.path.is_empty() {
        pattern::check_glob(g.path).map_err(Error::Invalid)?;
    }
    Ok(session)
}
