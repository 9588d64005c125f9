//! Pending actions' transitions on PostgreSQL: propose (with dedup),
//! approve (quorum, patches), reject, the expiry sweep, claim, lease
//! renewal, complete, and recovery's guarded moves. Each is one
//! transaction of its own ([`Store::pg_write`]).
//!
//! The statements are SQLite's (`store/actions/`) in PostgreSQL's spelling
//! (see `questions.rs`): the same predicates, and the same `t_*` columns so
//! the same triggers (migration 20261201000520) append the same audit rows,
//! events and approvals rows. `handoff_json_set(json_build_object(…)::text,
//! '{}', '{}')` is SQLite's `json_object(…)`, byte for byte.
//!
//! Where PostgreSQL differs in a way the statements must know:
//! - An approval locks the action's row before its guarded UPDATE. Why:
//!   at READ COMMITTED an UPDATE that waited for another approver's
//!   re-checks the row's own columns but reads `action_approvals` as of
//!   its start, so the same approver racing itself would pass the
//!   "not counted yet" check and fail on the approvals row's unique index.
//!   Under the row lock every approval of this action has committed (only
//!   an UPDATE of that row writes one), so the check sees them all.
//! - A proposal whose dedup key is held does not fail its INSERT (a failed
//!   statement aborts the whole transaction): `ON CONFLICT … DO NOTHING`
//!   on the live-key index, then the holder is read, or settled when its
//!   expiry passed and the INSERT tried again.

use std::sync::Arc;

use sqlx::PgConnection;
use sqlx::postgres::PgRow;

use super::Pg;
use super::actions::{into_store, load_on};
use crate::store::actions::transitions::{Approval, Approving, Proposal};
use crate::store::actions::{
    Action, COLUMNS, Error, NewAction, Proposed, Result, Status, from_row,
};
use crate::store::{Channel, Store};

/// SQLite's `json_object(…)` around `members` (json_build_object's
/// arguments), as text.
macro_rules! json_object {
    ($members:literal) => {
        concat!(
            "handoff_json_set(json_build_object(",
            $members,
            ")::text, '{}', '{}')"
        )
    };
}

fn one(row: Option<PgRow>) -> crate::store::Result<Option<Action>> {
    row.as_ref().map(from_row).transpose().map_err(into_store)
}

/// What a proposal found: its new action (or the live one with the same
/// key and payload), or a live holder with another payload.
#[derive(serde::Serialize, serde::Deserialize)]
enum Proposing {
    Made(Box<Proposed>),
    Conflict {
        existing_id: String,
        existing_fingerprint: String,
    },
}

/// Propose `p` (checked and derived by [`Store::propose`]).
pub(crate) async fn propose(s: &Store, pg: &Pg, p: Arc<Proposal>) -> Result<Proposed> {
    let out = s
        .pg_write(pg, p.clone(), |conn, p, now| {
            Box::pin(async move { propose_in(conn, &p, now).await })
        })
        .await?;
    match out {
        Proposing::Made(made) => Ok(*made),
        Proposing::Conflict {
            existing_id,
            existing_fingerprint,
        } => Err(Error::DedupConflict {
            key: p.new.dedup_key.clone().unwrap_or_default(),
            existing_id,
            existing_fingerprint,
            new_fingerprint: p.fingerprint.clone(),
        }),
    }
}

async fn propose_in(
    conn: &mut PgConnection,
    p: &Proposal,
    now: i64,
) -> crate::store::Result<Proposing> {
    let new = &p.new;
    let key = new.dedup_key.as_deref().unwrap_or_default();
    // Why a bounded loop: a holder may settle between the INSERT that met
    // it and the read that looks for it; then the key is free again. Three
    // rounds outlast any such race but a pathological one, which is then
    // retried whole as busy.
    for _ in 0..3 {
        if let Some(action) = insert_proposal(conn, p, now).await? {
            return Ok(Proposing::Made(Box::new(Proposed {
                action,
                created: true,
            })));
        }
        // A holder past its expiry neither blocks nor answers for the key.
        if !expire_matching(conn, now, None, Some(key), Some(&new.project))
            .await?
            .is_empty()
        {
            continue;
        }
        if let Some(existing) = dedup_holder(conn, new).await? {
            return Ok(if existing.fingerprint == p.fingerprint {
                Proposing::Made(Box::new(Proposed {
                    action: existing,
                    created: false,
                }))
            } else {
                Proposing::Conflict {
                    existing_id: existing.id,
                    existing_fingerprint: existing.fingerprint,
                }
            });
        }
    }
    Err(crate::store::Error::Write {
        reason: "the dedup key's holder kept changing".into(),
        busy: true,
    })
}

/// Insert the proposal, whose trigger writes the audit row and the event;
/// `None` when a live action holds its dedup key.
async fn insert_proposal(
    conn: &mut PgConnection,
    p: &Proposal,
    now: i64,
) -> crate::store::Result<Option<Action>> {
    let sql = format!(
        "INSERT INTO actions (id, kind, summary, args, fingerprint, dedup_key, status, expires_at,
             on_expire, approvals_required, effective_args, redact_keys, exec, verify, proposer,
             project, session, created_at, updated_at, t_event, t_actor, t_channel, t_details)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $4, $10, $11, $12, $13, $14, $15,
                 $16, $16, 'proposed', $13, $17, $18)
         ON CONFLICT (project, dedup_key)
             WHERE dedup_key IS NOT NULL AND status IN ('pending', 'approved', 'executing', 'unknown')
             DO NOTHING
         RETURNING {COLUMNS}"
    );
    let row = p
        .bind(sqlx::query(sqlx::AssertSqlSafe(sql)), now)
        .fetch_optional(conn)
        .await?;
    one(row)
}

/// The live action holding `new`'s dedup key, locked (an `unknown`
/// outcome counts as live: it may have happened).
async fn dedup_holder(
    conn: &mut PgConnection,
    new: &NewAction,
) -> crate::store::Result<Option<Action>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM actions WHERE project = $1 AND dedup_key = $2
           AND status IN ('pending','approved','executing','unknown') FOR UPDATE"
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&new.project)
        .bind(new.dedup_key.as_deref().unwrap_or_default())
        .fetch_optional(conn)
        .await?;
    one(row)
}

/// Settle pending actions past their expiry (all, one `id`, or the holder
/// of `dedup_key`, in `project` or all): one guarded UPDATE whose trigger
/// appends each one's audit row and event. See `actions/recovery.rs`.
pub(crate) async fn expire_matching(
    conn: &mut PgConnection,
    now: i64,
    id: Option<&str>,
    dedup_key: Option<&str>,
    project: Option<&str>,
) -> crate::store::Result<Vec<Action>> {
    // The expiry as `format_rfc3339` writes it (milliseconds, `Z`), from
    // exact interval arithmetic rather than a float timestamp.
    let sql = format!(
        r#"UPDATE actions SET
             status = CASE on_expire WHEN 'reject' THEN 'rejected' ELSE 'expired' END,
             decided_by = 'expiry', decided_at = $1,
             reason = 'expired: nobody decided in time', updated_at = $1,
             t_seq = t_seq + 1,
             t_event = CASE on_expire WHEN 'reject' THEN 'rejected' ELSE 'expired' END,
             t_actor = 'expiry', t_channel = 'daemon', t_patched = NULL,
             t_details = {}
         WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1
           AND ($2::TEXT IS NULL OR id = $2) AND ($3::TEXT IS NULL OR dedup_key = $3)
           AND ($4::TEXT IS NULL OR project = $4)
         RETURNING {COLUMNS}"#,
        json_object!(
            r#"'expires_at', to_char(TIMESTAMP 'epoch' + expires_at * INTERVAL '1 millisecond',
                                     'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'on_expire', on_expire"#
        )
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .bind(id)
        .bind(dedup_key)
        .bind(project)
        .fetch_all(conn)
        .await?;
    rows.iter()
        .map(from_row)
        .collect::<Result<Vec<_>>>()
        .map_err(into_store)
}

/// The expiry sweep: every pending action of `project` (all when `None`)
/// past its expiry, settled.
pub(crate) async fn expire_due(s: &Store, pg: &Pg, project: Option<String>) -> Result<Vec<Action>> {
    Ok(s.pg_write(pg, project, |conn, project, now| {
        Box::pin(async move { expire_matching(conn, now, None, None, project.as_deref()).await })
    })
    .await?)
}

/// Settle `id` if it is pending past its expiry, and return it as it
/// stands.
pub(crate) async fn settle_expired(s: &Store, pg: &Pg, id: &str) -> Result<Action> {
    let found = s
        .pg_write(pg, Arc::new(id.to_string()), |conn, id, now| {
            Box::pin(async move {
                expire_matching(conn, now, Some(&id), None, None).await?;
                match load_on(conn, &id, false).await {
                    Ok(a) => Ok(Some(a)),
                    Err(Error::NotFound(_)) => Ok(None),
                    Err(e) => Err(into_store(e)),
                }
            })
        })
        .await?;
    found.ok_or_else(|| Error::NotFound(id.to_string()))
}

/// Apply one approval (see the module docs on the row lock taken first).
pub(crate) async fn approve(s: &Store, pg: &Pg, a: Arc<Approval>) -> Result<Approving> {
    Ok(s.pg_write(pg, a, |conn, a, now| {
        Box::pin(async move { approve_in(conn, &a, now).await })
    })
    .await?)
}

async fn approve_in(
    conn: &mut PgConnection,
    a: &Approval,
    now: i64,
) -> crate::store::Result<Approving> {
    let locked = match load_on(conn, &a.id, true).await {
        Ok(action) => action,
        Err(Error::NotFound(_)) => return Ok(Approving::Missing),
        Err(e) => return Err(into_store(e)),
    };
    // Why guarded: the state, the TTL, "not counted yet" and (for a patch)
    // "nobody approved these arguments yet" in one predicate, as on SQLite.
    let sql = format!(
        "UPDATE actions SET
             approvals = approvals + 1,
             status = CASE WHEN $5 OR approvals + 1 + $8 >= approvals_required THEN 'approved' ELSE 'pending' END,
             decided_by = CASE WHEN $5 OR approvals + 1 + $8 >= approvals_required THEN $2 ELSE decided_by END,
             decided_at = CASE WHEN $5 OR approvals + 1 + $8 >= approvals_required THEN $3 ELSE decided_at END,
             patch = COALESCE($4::TEXT, patch),
             effective_args = COALESCE($6::TEXT, effective_args),
             updated_at = $3,
             t_seq = t_seq + 1,
             t_event = CASE WHEN $5 OR approvals + 1 + $8 >= approvals_required THEN 'approved' ELSE 'approval_added' END,
             t_actor = $2, t_channel = $9, t_patched = $10::TEXT,
             t_details = {}
         WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $3)
           AND NOT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = $1 AND approver = $2)
           AND ($7::TEXT IS NULL OR (approvals = 0 AND effective_args = $7))
         RETURNING {COLUMNS}",
        json_object!("'approvals', approvals + 1, 'approver', $2::TEXT, 'required', approvals_required")
    );
    let row = a
        .bind(sqlx::query(sqlx::AssertSqlSafe(sql)), now)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(action) = one(row)? {
        return Ok(Approving::won(action));
    }
    // Refused: explained by the row as locked, which nothing changed since.
    let counted: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM action_approvals WHERE action_id = $1 AND approver = $2)",
    )
    .bind(&a.id)
    .bind(&a.actor)
    .fetch_one(conn)
    .await?;
    Ok(Approving::Refused {
        action: Box::new(locked),
        counted,
    })
}

/// One rejection to apply: id, rejecter, channel, scrubbed reason.
pub(crate) type Rejection = (String, String, Channel, String);

/// Apply one rejection; `None` when refused (the caller explains why).
pub(crate) async fn reject(s: &Store, pg: &Pg, r: Arc<Rejection>) -> Result<Option<Action>> {
    Ok(s
        .pg_write(pg, r, |conn, r, now| {
            Box::pin(async move {
                let (id, actor, channel, reason) = &*r;
                // Why guarded: only a still-pending, unexpired action can be
                // rejected; a concurrent approval or expiry keeps its decision.
                let sql = format!(
                    "UPDATE actions SET status = 'rejected', decided_by = $2, decided_at = $3,
                         reason = $4, updated_at = $3,
                         t_seq = t_seq + 1, t_event = 'rejected', t_actor = $2, t_channel = $5,
                         t_patched = NULL, t_details = {}
                     WHERE id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $3)
                     RETURNING {COLUMNS}",
                    json_object!("'reason', $4::TEXT, 'rejecter', $2::TEXT")
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .bind(actor)
                    .bind(now)
                    .bind(reason)
                    .bind(channel.as_str())
                    .fetch_optional(conn)
                    .await?;
                one(row)
            })
        })
        .await?)
}

/// Claim one action (id, owner, lease in ms); `None`: not claimable.
pub(crate) async fn claim(
    s: &Store,
    pg: &Pg,
    c: Arc<(String, String, i64)>,
) -> Result<Option<Action>> {
    Ok(s.pg_write(pg, c, |conn, c, now| {
        Box::pin(async move { claim_in(conn, &c, now).await })
    })
    .await?)
}

async fn claim_in(
    conn: &mut PgConnection,
    c: &(String, String, i64),
    now: i64,
) -> crate::store::Result<Option<Action>> {
    let (id, owner, lease_ms) = c;
    let lease_until = now.saturating_add(*lease_ms);
    let skip_event = crate::fault::on("skip-event"); // FAULT(skip-event)
    // Why guarded: of several executors exactly one moves it out of
    // `approved`; the others see it already executing.
    let sql = format!(
        "UPDATE actions SET status = 'executing', owner = $2, lease_until = $3,
             attempts = attempts + 1, updated_at = $4,
             t_seq = t_seq + 1 - $6, t_event = 'claimed', t_actor = $2, t_channel = 'cli',
             t_patched = NULL, t_details = {}
         WHERE id = $1 AND (status = 'approved' OR ($5 AND status = 'executing'))
         RETURNING {COLUMNS}",
        json_object!("'attempt', attempts + 1, 'lease_until', $7::TEXT, 'owner', $2::TEXT")
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .bind(owner)
        .bind(lease_until)
        .bind(now)
        .bind(crate::fault::on("double-claim")) // FAULT(double-claim)
        .bind(i64::from(skip_event))
        .bind(crate::clock::format_rfc3339(lease_until))
        .fetch_optional(&mut *conn)
        .await?;
    let Some(action) = one(row)? else {
        return Ok(None);
    };
    if skip_event {
        // The fault writes the audit row alone: its event is missing.
        sqlx::query(
            "INSERT INTO action_audit (action_id, at, actor, event, details)
             SELECT id, updated_at, owner, 'claimed', '{}' FROM actions WHERE id = $1",
        )
        .bind(id)
        .execute(conn)
        .await?;
    }
    Ok(Some(action))
}

/// Push the lease of `id`, executing and held by `owner`, to now +
/// `lease_ms`; whether it was.
pub(crate) async fn extend_lease(
    s: &Store,
    pg: &Pg,
    id: String,
    owner: String,
    lease_ms: i64,
) -> Result<bool> {
    Ok(s.pg_write(pg, Arc::new((id, owner)), move |conn, c, now| {
        Box::pin(async move {
            // Why guarded: a lease recovery already turned into
            // `unknown` (or another owner's claim) must not be revived.
            let done = sqlx::query(
                "UPDATE actions SET lease_until = GREATEST(COALESCE(lease_until, 0), $3)
                     WHERE id = $1 AND status = 'executing' AND owner = $2",
            )
            .bind(&c.0)
            .bind(&c.1)
            .bind(now.saturating_add(lease_ms))
            .execute(conn)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    })
    .await?)
}

/// One end of an execution: id, owner, executed or failed, the scrubbed
/// result (canonical JSON) and error.
pub(crate) type Completion = (String, String, Status, String, Option<String>);

/// Record one completion; `None`: not the owner of an executing claim.
pub(crate) async fn complete(s: &Store, pg: &Pg, c: Arc<Completion>) -> Result<Option<Action>> {
    Ok(s.pg_write(pg, c, |conn, c, now| {
        Box::pin(async move {
            let (id, owner, status, result, error) = &*c;
            // Why guarded: only the executor holding the claim reports.
            let sql = format!(
                "UPDATE actions SET status = $3, result = $4, error = $5, lease_until = NULL,
                         updated_at = $6, t_seq = t_seq + 1, t_event = $3, t_actor = $2,
                         t_channel = 'cli', t_patched = NULL, t_details = {}
                     WHERE id = $1 AND status = 'executing' AND owner = $2
                     RETURNING {COLUMNS}",
                json_object!("'error', $5::TEXT, 'owner', $2::TEXT, 'result', $4::JSON")
            );
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .bind(owner)
                .bind(status.as_str())
                .bind(result)
                .bind(error)
                .bind(now)
                .fetch_optional(conn)
                .await?;
            one(row)
        })
    })
    .await?)
}

/// One of recovery's guarded moves: `$1` the action id, `$2` the owner or
/// actor, `$3` a text (a reason, the details), `$4` now and, when `ms` is
/// given, `$5` a number of ms. `None` when the guard matched nothing.
pub(crate) async fn transition(
    s: &Store,
    pg: &Pg,
    sql: String,
    id: &str,
    who: Option<&str>,
    text: &str,
    ms: Option<i64>,
) -> Result<Option<Action>> {
    let args = Arc::new((
        sql,
        id.to_string(),
        who.map(str::to_string),
        text.to_string(),
    ));
    Ok(s.pg_write(pg, args, move |conn, args, now| {
        Box::pin(async move {
            let (sql, id, who, text) = &*args;
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                .bind(id)
                .bind(who)
                .bind(text)
                .bind(now);
            if let Some(ms) = ms {
                q = q.bind(ms);
            }
            one(q.fetch_optional(conn).await?)
        })
    })
    .await?)
}

/// [`transition`]'s statement taking over a lapsed claim for a verifier.
pub(crate) fn take_for_verifier_sql() -> String {
    format!(
        "UPDATE actions SET owner = $2, lease_until = $4 + $5, updated_at = $4,
             t_seq = t_seq + 1, t_event = 'verifying', t_actor = $2, t_channel = 'daemon',
             t_patched = NULL, t_details = $3
         WHERE id = $1 AND status = 'executing' AND lease_until <= $4
         RETURNING {COLUMNS}"
    )
}

/// [`transition`]'s statement for `executing → unknown` (lapsed, or on
/// behalf of the recoverer holding it).
pub(crate) fn mark_unknown_sql() -> String {
    format!(
        "UPDATE actions SET status = 'unknown', error = $3, lease_until = NULL, updated_at = $4,
             t_seq = t_seq + 1, t_event = 'unknown', t_actor = 'recovery', t_channel = 'daemon',
             t_patched = NULL, t_details = {}
         WHERE id = $1 AND status = 'executing'
           AND (($2::TEXT IS NULL AND lease_until <= $4) OR owner = $2)
         RETURNING {COLUMNS}",
        json_object!("'owner', owner, 'reason', $3::TEXT")
    )
}

/// [`transition`]'s statement handing a verifier's claim back for a re-run.
pub(crate) fn back_to_approved_sql() -> String {
    format!(
        "UPDATE actions SET status = 'approved', owner = NULL, lease_until = NULL, updated_at = $4,
             t_seq = t_seq + 1, t_event = 'retry', t_actor = $2, t_channel = 'daemon',
             t_patched = NULL, t_details = {}
         WHERE id = $1 AND status = 'executing' AND owner = $2
         RETURNING {COLUMNS}",
        json_object!("'attempts', attempts, 'reason', $3::TEXT")
    )
}

/// [`transition`]'s statement for a person settling an `unknown` action
/// as `status` (a fixed word) with the audit `event`, through `channel`.
pub(crate) fn resolve_unknown_sql(status: &str, event: &str, channel: &str) -> String {
    format!(
        "UPDATE actions SET status = '{status}',
             owner = CASE WHEN '{status}' = 'approved' THEN NULL ELSE owner END,
             lease_until = NULL, reason = 'resolved by ' || $2 || ': {status}', updated_at = $4,
             t_seq = t_seq + 1, t_event = '{event}', t_actor = $2, t_channel = '{channel}',
             t_patched = NULL, t_details = $3
         WHERE id = $1 AND status = 'unknown'
         RETURNING {COLUMNS}"
    )
}
