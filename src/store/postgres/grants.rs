//! Permission grants on PostgreSQL: `store/grants.rs` and its `manage.rs`
//! in PostgreSQL's spelling (`$N` placeholders, `right()` for SQLite's
//! negative `substr`, `COLLATE "C"` where an id breaks a tie so the order
//! is SQLite's). Each write is a transaction of its own
//! ([`Store::pg_write`]) appending its event last. The races are decided as
//! on SQLite: the unique index on `action_id` between two taps on one
//! prompt (the loser waits for the winner's insert and reads its grant),
//! `revoked_at IS NULL` between two revokers (the second, re-checking the
//! guard on the locked row, changes nothing and reads the first's).
//! Deciding prompts by grants needs pending actions, not ported yet.

use std::sync::Arc;

use super::Pg;
use super::write::append;
use crate::store::grants::{Grant, NewGrant, Revoked, grant_event, grant_from, several};
use crate::store::{Channel, Result, Store, new_id};

/// [`Store::grant_create`] after its checks (`session` as it is stored).
pub(crate) async fn create(
    s: &Store,
    pg: &Pg,
    g: &NewGrant<'_>,
    session: &str,
    channel: Channel,
) -> Result<Grant> {
    let input = Arc::new((
        [
            g.agent,
            session,
            g.project,
            g.tool,
            g.pattern,
            g.action_id,
            g.by,
        ]
        .map(str::to_string),
        g.scope,
    ));
    s.pg_write(pg, input, move |conn, input, now| {
        Box::pin(async move {
            let ([agent, session, project, tool, pattern, action_id, by], scope) = &*input;
            let row = sqlx::query(
                "INSERT INTO grants (id, scope, agent, session, project, tool, pattern, action_id, created_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (action_id) DO NOTHING RETURNING *",
            )
            .bind(new_id())
            .bind(scope.as_str())
            .bind(agent)
            .bind(session)
            .bind(project)
            .bind(tool)
            .bind(pattern)
            .bind(action_id)
            .bind(by)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
            match row {
                Some(r) => {
                    let grant = grant_from(&r)?;
                    append(conn, now, &grant_event("grant.created", by, channel, &grant)).await?;
                    Ok(grant)
                }
                None => {
                    let r = sqlx::query("SELECT * FROM grants WHERE action_id = $1")
                        .bind(action_id)
                        .fetch_one(&mut *conn)
                        .await?;
                    grant_from(&r)
                }
            }
        })
    })
    .await
}

/// [`Store::grant_confirm`]: one guarded UPDATE.
pub(crate) async fn confirm(s: &Store, pg: &Pg, id: &str) -> Result<bool> {
    s.pg_write(pg, Arc::new(id.to_string()), move |conn, id, now| {
        Box::pin(async move {
            let done = sqlx::query(
                "UPDATE grants SET confirmed_at = $1
                 WHERE id = $2 AND confirmed_at IS NULL AND revoked_at IS NULL",
            )
            .bind(now)
            .bind(&*id)
            .execute(conn)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    })
    .await
}

/// The grant given on prompt `action_id`.
pub(crate) async fn for_action(pg: &Pg, action_id: &str) -> Result<Option<Grant>> {
    let row = sqlx::query("SELECT * FROM grants WHERE action_id = $1")
        .bind(action_id)
        .fetch_optional(pg.pool())
        .await?;
    row.as_ref().map(grant_from).transpose()
}

/// The live grants of `agent` for `tool` in `session` or `project`, oldest
/// first; the caller picks the first whose pattern covers the input.
pub(crate) async fn live(
    pg: &Pg,
    agent: &str,
    session: &str,
    project: &str,
    tool: &str,
) -> Result<Vec<Grant>> {
    let rows = sqlx::query(
        "SELECT * FROM grants
         WHERE revoked_at IS NULL AND confirmed_at IS NOT NULL
           AND agent = $1 AND tool = $2 AND project = $3
           AND ((scope = 'session' AND session = $4 AND $4 <> '') OR scope = 'always')
         ORDER BY created_at, id COLLATE \"C\"",
    )
    .bind(agent)
    .bind(tool)
    .bind(project)
    .bind(session)
    .fetch_all(pg.pool())
    .await?;
    rows.iter().map(grant_from).collect()
}

/// [`Store::grant_list_in`].
pub(crate) async fn list(pg: &Pg, all: bool, project: Option<&str>) -> Result<Vec<Grant>> {
    let rows = sqlx::query(
        "SELECT * FROM grants
         WHERE ($1 OR (revoked_at IS NULL AND confirmed_at IS NOT NULL))
           AND ($2::TEXT IS NULL OR project = $2)
         ORDER BY created_at DESC, id COLLATE \"C\" DESC",
    )
    .bind(all)
    .bind(project)
    .fetch_all(pg.pool())
    .await?;
    rows.iter().map(grant_from).collect()
}

/// [`Store::grant_revoke_in`] after its checks (`key`: the id as looked
/// up, `shown`: as given).
pub(crate) async fn revoke(
    s: &Store,
    pg: &Pg,
    key: &str,
    shown: &str,
    by: &str,
    channel: Channel,
    project: Option<&str>,
) -> Result<Option<Revoked>> {
    let input = Arc::new((
        key.to_string(),
        shown.to_string(),
        by.to_string(),
        project.map(str::to_string),
    ));
    let out: Option<(bool, Grant)> = s
        .pg_write(pg, input, move |conn, input, now| {
            Box::pin(async move {
                let (key, shown, by, project) = &*input;
                let ids: Vec<String> = sqlx::query_scalar(
                    "SELECT id FROM grants
                     WHERE (id = $1 OR right(id, length($1)) = $1)
                       AND ($2::TEXT IS NULL OR project = $2)
                     LIMIT 2",
                )
                .bind(key)
                .bind(project.as_deref())
                .fetch_all(&mut *conn)
                .await?;
                let full = match ids.as_slice() {
                    [] => return Ok(None),
                    [one] => one.clone(),
                    _ => return Err(several(shown)),
                };
                let row = sqlx::query(
                    "UPDATE grants SET revoked_at = $1, revoked_by = $2
                     WHERE id = $3 AND revoked_at IS NULL RETURNING *",
                )
                .bind(now)
                .bind(by)
                .bind(&full)
                .fetch_optional(&mut *conn)
                .await?;
                match row {
                    Some(r) => {
                        let g = grant_from(&r)?;
                        append(conn, now, &grant_event("grant.revoked", by, channel, &g)).await?;
                        Ok(Some((true, g)))
                    }
                    None => {
                        let r = sqlx::query("SELECT * FROM grants WHERE id = $1")
                            .bind(&full)
                            .fetch_one(&mut *conn)
                            .await?;
                        Ok(Some((false, grant_from(&r)?)))
                    }
                }
            })
        })
        .await?;
    Ok(out.map(|(now, g)| {
        if now {
            Revoked::Now(g)
        } else {
            Revoked::Already(g)
        }
    }))
}
