//! Listing and revoking grants, for `handoff grants` and the HTTP API
//! (`GET /v1/grants`, `POST /v1/grants/{id}/revoke`, which the web Inbox
//! uses). Both take an optional project: a project-scoped caller lists
//! and revokes only its own project's grants, and another project's ids
//! neither match nor make a short id ambiguous. Deciding prompts is not
//! here (see the parent module).

use std::sync::Arc;

use super::{Grant, grant_event};
use crate::store::engine::Stmt;
use crate::store::{Channel, Error, Result, Store};

/// What revoking a grant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    /// Revoked by this call: it matches nothing from now on.
    Now(Grant),
    /// It was revoked before (the first revoker is kept); nothing changed.
    Already(Grant),
}

impl Revoked {
    /// The grant as it stands.
    pub fn grant(&self) -> &Grant {
        match self {
            Revoked::Now(g) | Revoked::Already(g) => g,
        }
    }
}

impl Store {
    /// Grants, newest first; revoked, ended and unconfirmed ones only with `all`.
    pub async fn grant_list(&self, all: bool) -> Result<Vec<Grant>> {
        self.grant_list_in(all, None).await
    }

    /// [`Store::grant_list`] within `project` (`None`: every project).
    pub async fn grant_list_in(&self, all: bool, project: Option<&str>) -> Result<Vec<Grant>> {
        let list = Stmt::spelled(
            "SELECT * FROM grants
             WHERE ($1 OR (revoked_at IS NULL AND confirmed_at IS NOT NULL
                           AND (expires_at IS NULL OR expires_at > $3)))
               AND (CAST($2 AS TEXT) IS NULL OR project = $2)
             ORDER BY created_at DESC, id DESC",
            "SELECT * FROM grants
             WHERE ($1 OR (revoked_at IS NULL AND confirmed_at IS NOT NULL
                           AND (expires_at IS NULL OR expires_at > $3)))
               AND (CAST($2 AS TEXT) IS NULL OR project = $2)
             ORDER BY created_at DESC, id COLLATE \"C\" DESC",
        )
        .bool(all)
        .text(project)
        .int(self.now());
        self.rows(list).await
    }

    /// Revoke the grant `id` (full or short id). `Ok(None)` when no grant
    /// has that id; a grant revoked already comes back unchanged.
    pub async fn grant_revoke(
        &self,
        id: &str,
        by: &str,
        channel: Channel,
    ) -> Result<Option<Grant>> {
        Ok(self
            .grant_revoke_in(id, by, channel, None)
            .await?
            .map(|r| r.grant().clone()))
    }

    /// Revoke the grant `id` (full or short id) of `project` (`None`: any
    /// project) as `by`. `Ok(None)` when no grant there has that id.
    pub async fn grant_revoke_in(
        &self,
        id: &str,
        by: &str,
        channel: Channel,
        project: Option<&str>,
    ) -> Result<Option<Revoked>> {
        let key = id.trim().to_ascii_lowercase();
        if key.len() < 8 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::Invalid(format!(
                "`{id}` is not a grant id: give at least its 8-character short id (see `handoff grants`)"
            )));
        }
        let input = Arc::new((
            key,
            id.to_string(),
            by.to_string(),
            project.map(str::to_string),
        ));
        // (revoked now, the grant): what a write remembers under a request id.
        let out: Option<(bool, Grant)> = self
            .transact(input, move |mut tx, input, now| {
                Box::pin(async move {
                    let (key, shown, by, project) = &*input;
                    let find = Stmt::spelled(
                        "SELECT id FROM grants
                     WHERE (id = $1 OR substr(id, -length($1)) = $1)
                       AND (CAST($2 AS TEXT) IS NULL OR project = $2)
                     LIMIT 2",
                        "SELECT id FROM grants
                     WHERE (id = $1 OR right(id, length($1)) = $1)
                       AND (CAST($2 AS TEXT) IS NULL OR project = $2)
                     LIMIT 2",
                    )
                    .text(key.as_str())
                    .text(project.as_deref());
                    let ids: Vec<(String,)> = tx.rows(&find).await?;
                    let full = match ids.as_slice() {
                        [] => return Ok(None),
                        [(one,)] => one.clone(),
                        _ => return Err(several(shown)),
                    };
                    // Why guarded on revoked_at IS NULL: revoking twice appends
                    // no second event and keeps the first revoker (on
                    // PostgreSQL the second, re-checking the guard on the
                    // locked row, changes nothing and reads the first's).
                    let revoke = Stmt::new(
                        "UPDATE grants SET revoked_at = $1, revoked_by = $2
                     WHERE id = $3 AND revoked_at IS NULL RETURNING *",
                    )
                    .int(now)
                    .text(by.as_str())
                    .text(full.as_str());
                    match tx.row::<Grant>(&revoke).await? {
                        Some(g) => {
                            tx.append(now, &grant_event("grant.revoked", by, channel, &g))
                                .await?;
                            Ok(Some((true, g)))
                        }
                        None => {
                            let read =
                                Stmt::new("SELECT * FROM grants WHERE id = $1").text(full.as_str());
                            let g: Option<Grant> = tx.row(&read).await?;
                            Ok(Some((false, g.ok_or(sqlx::Error::RowNotFound)?)))
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
}

/// Refusal of a revocation whose id matches several grants (`id` as given).
fn several(id: &str) -> Error {
    Error::Ambiguous(format!(
        "`{id}` matches several grants: give more characters of the id"
    ))
}
