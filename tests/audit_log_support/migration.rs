//! The migration that made the log the audit carries every old audit row
//! into it, entry for entry, on both engines: a database at the schema
//! before it gets a history written by the old triggers and writers (a
//! patch, a quorum, two refused attempts in one millisecond, a rejection,
//! a purge that deleted its audit rows, a row with no event), is
//! migrated, and reads back the same audit, through the view and the
//! store, with the old events untouched and one event added for the row
//! that had none.

use handoff::clock::ManualClock;
use handoff::store::Store;
use sqlx::{PgPool, SqlitePool};
use std::sync::Arc;

use crate::common::TempDb;
use crate::common::engines::{PG_MIGRATOR, Rows, texts};
use crate::common::postgres::PgDb;

/// The last version before the log became the audit.
const BEFORE: i64 = 20261211000100;
const A1: &str = "000000000000000000000000000000a1";
const A2: &str = "000000000000000000000000000000a2";

/// The history, as the code before the migration wrote it (the trigger
/// statements, and the refused attempts' and purge's own rows).
const HISTORY: &[&str] = &[
    "INSERT INTO actions (id, kind, summary, args, fingerprint, effective_args, redact_keys,
         approvals_required, created_at, updated_at, project, session, t_event, t_actor, t_channel, t_details)
     VALUES ('000000000000000000000000000000a1', 'k', 's', '{}', 'f', '{}', '[]', 2, 1000, 1000, 'p', 's1',
             'proposed', 'agent', 'agent', '{\"kind\":\"k\"}')",
    "INSERT INTO events (at, type, entity_kind, entity_id) VALUES (1001, 'question.flagged', 'question', 'q1')",
    "UPDATE actions SET approvals = 1, updated_at = 2000, patch = '{\"x\":1}', t_seq = t_seq + 1,
         t_event = 'approval_added', t_actor = 'alice', t_channel = 'cli', t_details = '{\"approvals\":1}',
         t_patched = '{\"patch\":{\"x\":1}}'
     WHERE id = '000000000000000000000000000000a1'",
    "INSERT INTO action_audit (action_id, at, actor, event, details)
     VALUES ('000000000000000000000000000000a1', 3000, 'mallory', 'refused_attempt', '{\"reason\":\"one\"}')",
    "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
     VALUES (3000, 'action.refused_attempt', 'action', '000000000000000000000000000000a1', 'mallory', 'chat',
             'p', 's1', '{\"reason\":\"one\",\"status\":\"pending\"}')",
    "INSERT INTO action_audit (action_id, at, actor, event, details)
     VALUES ('000000000000000000000000000000a1', 3000, 'mallory', 'refused_attempt', '{\"reason\":\"two\"}')",
    "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
     VALUES (3000, 'action.refused_attempt', 'action', '000000000000000000000000000000a1', 'mallory', 'chat',
             'p', 's1', '{\"reason\":\"two\",\"status\":\"pending\"}')",
    "UPDATE actions SET approvals = 2, status = 'approved', updated_at = 4000, t_seq = t_seq + 1,
         t_event = 'approved', t_actor = 'bob', t_channel = 'inbox', t_details = '{\"approvals\":2}',
         t_patched = NULL
     WHERE id = '000000000000000000000000000000a1'",
    "INSERT INTO actions (id, kind, summary, args, fingerprint, effective_args, redact_keys,
         created_at, updated_at, dedup_key, t_event, t_actor, t_channel, t_details)
     VALUES ('000000000000000000000000000000a2', 'k', 's', '{}', 'f2', '{}', '[]', 4000, 4000, 'd',
             'proposed', 'agent', 'agent', '{}')",
    "UPDATE actions SET status = 'rejected', updated_at = 5000, t_seq = t_seq + 1, t_event = 'rejected',
         t_actor = 'carol', t_channel = 'cli', t_details = '{\"reason\":\"no\"}'
     WHERE id = '000000000000000000000000000000a2'",
    "INSERT INTO actions (id, kind, summary, args, fingerprint, effective_args, redact_keys,
         created_at, updated_at, t_event, t_actor, t_channel, t_details)
     VALUES ('000000000000000000000000000000a3', 'k', 's', '{}', 'f3', '{}', '[]', 5000, 5000,
             'proposed', 'agent', 'agent', '{}')",
    "UPDATE actions SET status = 'expired', updated_at = 5500, t_seq = t_seq + 1, t_event = 'expired',
         t_actor = 'expiry', t_channel = 'daemon', t_details = '{}'
     WHERE id = '000000000000000000000000000000a3'",
    "INSERT INTO action_purge_guard (action_id) VALUES ('000000000000000000000000000000a3')",
    "DELETE FROM action_audit WHERE action_id = '000000000000000000000000000000a3'",
    "DELETE FROM actions WHERE id = '000000000000000000000000000000a3'",
    "DELETE FROM action_purge_guard",
    "INSERT INTO action_audit (action_id, at, actor, event, details)
     VALUES ('000000000000000000000000000000a2', 6000, 'migration', 'dedup_key_released', '{\"dedup_key\":\"d\"}')",
];

const AUDIT: &str =
    "SELECT action_id, CAST(at AS TEXT), actor, event, details FROM action_audit ORDER BY seq";
const EVENTS: &str =
    "SELECT CAST(seq AS TEXT) AS n, type, entity_id, actor, payload FROM events ORDER BY seq";

/// A database on one engine, raw.
enum Raw {
    Lite(SqlitePool, TempDb),
    Pg(PgPool, Box<PgDb>),
}

impl Raw {
    async fn exec(&self, sql: &str) {
        let q = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Raw::Lite(p, _) => sqlx::query(q).execute(p).await.map(drop),
            Raw::Pg(p, _) => sqlx::query(q).execute(p).await.map(drop),
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    async fn rows(&self, sql: &str) -> Rows {
        let q = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Raw::Lite(p, _) => texts(&sqlx::query(q).fetch_all(p).await.unwrap()),
            Raw::Pg(p, _) => texts(&sqlx::query(q).fetch_all(p).await.unwrap()),
        }
    }

    async fn migrate_rest(&self) {
        match self {
            Raw::Lite(p, _) => sqlx::migrate!("./migrations/sqlite").run(p).await,
            Raw::Pg(p, _) => PG_MIGRATOR.run(p).await,
        }
        .expect("the rest of the migrations");
    }

    async fn store(&self) -> Store {
        let clock = Arc::new(ManualClock::new(10_000));
        match self {
            Raw::Lite(_, f) => Store::open_with_clock(&f.path, clock).await,
            Raw::Pg(_, db) => Store::open_postgres(&db.url, clock).await,
        }
        .expect("open the migrated store")
    }
}

async fn old_sqlite() -> Raw {
    let file = TempDb::fresh();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&file.path)
        .create_if_missing(true);
    let pool = SqlitePool::connect_with(opts).await.unwrap();
    sqlx::migrate!("./migrations/sqlite")
        .run_to(BEFORE, &pool)
        .await
        .unwrap();
    Raw::Lite(pool, file)
}

async fn old_postgres() -> Raw {
    let db = PgDb::new().await;
    let pool = PgPool::connect(&db.url).await.unwrap();
    PG_MIGRATOR.run_to(BEFORE, &pool).await.unwrap();
    Raw::Pg(pool, Box::new(db))
}

async fn carried_row_for_row(raw: Raw) {
    for sql in HISTORY {
        raw.exec(sql).await;
    }
    let audit = raw.rows(AUDIT).await;
    assert_eq!(audit.len(), 9, "the old table holds the history: {audit:?}");
    let events = raw.rows(EVENTS).await;
    raw.migrate_rest().await;

    assert_eq!(
        raw.rows(AUDIT).await,
        audit,
        "the same audit, entry for entry"
    );
    let after = raw.rows(EVENTS).await;
    assert_eq!(
        after[..events.len()],
        events[..],
        "the old events untouched"
    );
    let added: Vec<_> = after[events.len()..]
        .iter()
        .map(|r| (r[1].clone().unwrap(), r[2].clone().unwrap()))
        .collect();
    assert_eq!(
        added,
        [("action.dedup_key_released".to_string(), A2.to_string())],
        "one event for the row that had none"
    );
    // The purged action's events were never audit entries, and stay so.
    let purged = raw
        .rows("SELECT type FROM events WHERE entity_id = '000000000000000000000000000000a3' AND audit IS NOT NULL")
        .await;
    assert!(purged.is_empty(), "{purged:?}");

    let s = raw.store().await;
    for id in [A1, A2] {
        let got: Rows = s
            .action_audit(id)
            .await
            .unwrap()
            .into_iter()
            .map(|e| {
                vec![
                    Some(e.action_id),
                    Some(e.at.to_string()),
                    Some(e.actor),
                    Some(e.event),
                    Some(e.details.to_string()),
                ]
            })
            .collect();
        let want: Rows = audit
            .iter()
            .filter(|r| r[0].as_deref() == Some(id))
            .cloned()
            .collect();
        assert_eq!(got, want, "{id}: the store reads the carried audit");
    }
}

#[tokio::test]
async fn sqlite() {
    carried_row_for_row(old_sqlite().await).await;
}

#[tokio::test]
async fn postgres() {
    carried_row_for_row(old_postgres().await).await;
}
