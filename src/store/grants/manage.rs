//! Listing and revoking grants, for `handoff grants` and the HTTP API
//! (`GET /v1/grants`, `POST /v1/grants/{id}/revoke`, which the web Inbox
//! uses). Both take an optional project: a project-scoped caller lists
//! and revokes only its own project's grants, and another project's ids
//! neither match nor make a short id ambiguous. Deciding prompts is not
//! here (see the parent module).

use super::{Grant, append_event, grant_from};
use crate::store::postgres::grants as pg_grants;
use crate::store::{Channel, Engine, Error, Result, Store};

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
    /// Grants, newest first; revoked and unconfirmed ones only with `all`.
    pub async fn grant_list(&self, all: bool) -> Result<Vec<Grant>> {
        self.grant_list_in(all, None).await
    }

    /// [`Store::grant_list`] within `project` (`None`: every project).
    pub async fn grant_list_in(&self, all: bool, project: Option<&str>) -> Result<Vec<Grant>> {
        if let Engine::Postgres(pg) = self.engine() {
            return pg_grants::list(pg, all, project).await;
        }
        let rows = sqlx::query(
            "SELECT * FROM grants
             WHERE (?1 OR (revoked_at IS NULL AND confirmed_at IS NOT NULL))
               AND (?2 IS NULL OR project = ?2)
             ORDER BY created_at DESC, id DESC",
        )
        .bind(all)
        .bind(project)
        .fetch_all(self.pool()?)
        .await?;
        rows.iter().map(grant_from).collect()
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
        if let Engine::Postgres(pg) = self.engine() {
            return pg_grants::revoke(self, pg, &key, id, by, channel, project).await;
        }
        self.retry(|| async {
            let now = self.now();
            let mut tx = self.begin_write().await?;
            let ids: Vec<String> = sqlx::query_scalar(
                "SELECT id FROM grants
                 WHERE (id = ?1 OR substr(id, -length(?1)) = ?1) AND (?2 IS NULL OR project = ?2)
                 LIMIT 2",
            )
            .bind(&key)
            .bind(project)
            .fetch_all(&mut *tx)
            .await?;
            let full = match ids.as_slice() {
                [] => return Ok(None),
                [one] => one.clone(),
                _ => return Err(several(id)),
            };
            // Why guarded on revoked_at IS NULL: revoking twice appends no
            // second event and keeps the first revoker.
            let row = sqlx::query(
                "UPDATE grants SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL RETURNING *",
            )
            .bind(now)
            .bind(by)
            .bind(&full)
            .fetch_optional(&mut *tx)
            .await?;
            let out = match row {
                Some(r) => {
                    let g = grant_from(&r)?;
                    append_event(&mut tx, now, "grant.revoked", by, channel, &g).await?;
                    Revoked::Now(g)
                }
                None => {
                    let r = sqlx::query("SELECT * FROM grants WHERE id = ?")
                        .bind(&full)
                        .fetch_one(&mut *tx)
                        .await?;
                    Revoked::Already(grant_from(&r)?)
                }
            };
            tx.commit().await?;
            Ok(Some(out))
        })
        .await
    }
}

/// Refusal of a revocation whose id matches several grants (`id` as given).
pub(crate) fn several(id: &str) -> Error {
    Error::Ambiguous(format!(
        "`{id}` matches several grants: give more characters of the id"
    ))
}
