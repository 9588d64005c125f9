//! handoff's schema on PostgreSQL against the SQLite one it
//! mirrors, on a real throw-away server (tests/common/postgres.rs): the same
//! tables, columns, keys, indexes and triggers, and append-only tables
//! refused with the same messages. tests/pg_rows.rs checks that the same
//! statements write the same rows on both engines, tests/pg_event_order.rs
//! that a follower of the event log never skips an event.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::engines::{Both, texts};
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;

// ---------------------------------------------------------------- parity ---

/// Tables only one engine has, each with why.
const ONLY_SQLITE_TABLES: &[&str] = &[
    "sqlite_sequence", // SQLite's AUTOINCREMENT bookkeeping; PostgreSQL uses identity columns
];
const ONLY_PG_TABLES: &[&str] = &[
    "events_seq", // the one-row counter that makes events.seq commit-ordered
];
/// Triggers only PostgreSQL has: TRUNCATE skips DELETE triggers there (SQLite
/// has no TRUNCATE), the seq assignment SQLite's AUTOINCREMENT does, and the
/// NOTIFY that wakes other daemons (SQLite's are woken by inotify on the file).
const ONLY_PG_TRIGGERS: &[&str] = &[
    "events_no_truncate",
    "question_replies_no_truncate",
    "board_row_annotations_no_truncate",
    "execution_ledger_no_truncate",
    "events_commit_order",
    "events_notify",
];
/// sqlx's own bookkeeping table: present on both, shaped per engine.
const MIGRATIONS_TABLE: &str = "_sqlx_migrations";

async fn lite_strings(pool: &SqlitePool, sql: &str, bind: &str) -> Vec<Vec<String>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .bind(bind.to_string())
        .fetch_all(pool)
        .await
        .expect("read sqlite schema");
    texts(&rows)
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect()
}

async fn pg_strings(pool: &PgPool, sql: &str, bind: &str) -> Vec<Vec<String>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .bind(bind.to_string())
        .fetch_all(pool)
        .await
        .expect("read postgres schema");
    texts(&rows)
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect()
}

/// Every SQLite table, column (name, order, type, NOT NULL), primary and
/// unique key, foreign key, index (name, table, columns, unique, partial)
/// and trigger has its PostgreSQL counterpart, and PostgreSQL has nothing
/// else beyond the listed exceptions; a fresh database holds the same rows.
#[tokio::test]
async fn postgres_schema_has_every_sqlite_table_column_index_and_trigger() {
    let both = Both::new().await;
    let (lite, pg) = (&both.lite, &both.pg);

    // Tables.
    let lite_tables: BTreeSet<String> = lite_strings(
        lite,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> ?1",
        MIGRATIONS_TABLE,
    )
    .await
    .into_iter()
    .map(|r| r[0].clone())
    .filter(|t| !ONLY_SQLITE_TABLES.contains(&t.as_str()))
    .collect();
    let pg_tables: BTreeSet<String> = pg_strings(
        pg,
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> $1",
        MIGRATIONS_TABLE,
    )
    .await
    .into_iter()
    .map(|r| r[0].clone())
    .filter(|t| !ONLY_PG_TABLES.contains(&t.as_str()))
    .collect();
    assert!(
        lite_tables.len() >= 25,
        "read the SQLite tables: {lite_tables:?}"
    );
    assert_eq!(lite_tables, pg_tables, "tables: sqlite vs postgres");
    // Views: the old audit table's name, a view of the log, on both.
    let lite_views = lite_strings(
        lite,
        "SELECT name FROM sqlite_master WHERE type = 'view' AND name <> ?1 ORDER BY name",
        MIGRATIONS_TABLE,
    )
    .await;
    let pg_views = pg_strings(
        pg,
        "SELECT table_name::text FROM information_schema.views
         WHERE table_schema = 'public' AND table_name <> $1 ORDER BY table_name",
        MIGRATIONS_TABLE,
    )
    .await;
    assert_eq!(lite_views, vec![vec!["action_audit".to_string()]]);
    assert_eq!(lite_views, pg_views, "views: sqlite vs postgres");

    for table in &lite_tables {
        // Columns in order: name, type, NOT NULL (a SQLite primary key column
        // reports nullable but never holds NULL: PostgreSQL's is NOT NULL),
        // default (PostgreSQL's without its `::text` / `::bigint` cast).
        type Column = (String, String, bool, String);
        let lite_cols: Vec<Column> = lite_strings(
            lite,
            "SELECT name, type, CAST(\"notnull\" OR pk > 0 AS TEXT), dflt_value
             FROM pragma_table_info(?1) ORDER BY cid",
            table,
        )
        .await
        .into_iter()
        .map(|r| {
            let ty = match r[1].as_str() {
                "INTEGER" => "bigint",
                "TEXT" => "text",
                other => panic!(
                    "{table}.{}: a column type this test does not map: {other}",
                    r[0]
                ),
            };
            (r[0].clone(), ty.to_string(), r[2] == "1", r[3].clone())
        })
        .collect();
        let pg_cols: Vec<Column> = pg_strings(
            pg,
            "SELECT column_name::text, data_type::text, (is_nullable = 'NO')::int::text,
                    regexp_replace(column_default, '::(text|bigint)$', '')
             FROM information_schema.columns
             WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
            table,
        )
        .await
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[2] == "1", r[3].clone()))
        .collect();
        assert_eq!(
            lite_cols, pg_cols,
            "{table}: columns (name, type, not null, default)"
        );

        // As many CHECK constraints (SQLite keeps them only in the table's
        // text, ADD COLUMN ones included; comments say `checkpoint`, so the
        // count is of `CHECK (` as the migrations write it).
        let lite_checks = lite_strings(
            lite,
            "SELECT CAST((length(sql) - length(replace(sql, 'CHECK (', ''))) / 7 AS TEXT)
             FROM sqlite_master WHERE type = 'table' AND name = ?1",
            table,
        )
        .await;
        let pg_checks = pg_strings(
            pg,
            "SELECT COUNT(*)::text FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c'",
            table,
        )
        .await;
        assert_eq!(lite_checks, pg_checks, "{table}: CHECK constraints");

        // Primary key, unique constraints and foreign keys.
        let lite_pk = lite_strings(
            lite,
            "SELECT group_concat(name, ',') FROM
               (SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk)",
            table,
        )
        .await;
        let pg_pk = pg_strings(
            pg,
            "SELECT string_agg(a.attname, ',' ORDER BY k.ord)
             FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY k(attnum, ord), pg_attribute a
             WHERE c.conrelid = $1::regclass AND c.contype = 'p'
               AND a.attrelid = c.conrelid AND a.attnum = k.attnum",
            table,
        )
        .await;
        assert_eq!(lite_pk, pg_pk, "{table}: primary key");
        let mut lite_unique: Vec<String> = lite_strings(
            lite,
            "SELECT (SELECT group_concat(name, ',') FROM
                       (SELECT name FROM pragma_index_info(l.name) ORDER BY seqno))
             FROM pragma_index_list(?1) l WHERE l.origin = 'u'",
            table,
        )
        .await
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
        let mut pg_unique: Vec<String> = pg_strings(
            pg,
            "SELECT (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
                     FROM unnest(c.conkey) WITH ORDINALITY k(attnum, ord)
                     JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum)
             FROM pg_constraint c WHERE c.conrelid = $1::regclass AND c.contype = 'u'",
            table,
        )
        .await
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
        lite_unique.sort();
        pg_unique.sort();
        assert_eq!(lite_unique, pg_unique, "{table}: unique constraints");
        let mut lite_fk = lite_strings(
            lite,
            "SELECT \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list(?1)",
            table,
        )
        .await;
        let mut pg_fk = pg_strings(
            pg,
            "SELECT c.confrelid::regclass::text, a.attname::text, af.attname::text,
                    CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'a' THEN 'NO ACTION' ELSE 'other' END
             FROM pg_constraint c
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
             JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = c.confkey[1]
             WHERE c.conrelid = $1::regclass AND c.contype = 'f'",
            table,
        )
        .await;
        lite_fk.sort();
        pg_fk.sort();
        assert_eq!(lite_fk, pg_fk, "{table}: foreign keys");
    }

    // Named indexes (those behind PRIMARY KEY / UNIQUE constraints are
    // compared above): table, columns, unique, partial.
    let lite_indexes: BTreeMap<String, Vec<String>> = lite_strings(
        lite,
        "SELECT m.name, m.tbl_name,
                (SELECT group_concat(name, ',') FROM
                   (SELECT name FROM pragma_index_info(m.name) ORDER BY seqno)),
                CAST(l.\"unique\" AS TEXT), CAST(l.partial AS TEXT)
         FROM sqlite_master m JOIN pragma_index_list(m.tbl_name) l ON l.name = m.name
         WHERE m.type = 'index' AND m.name NOT LIKE ?1",
        "sqlite_autoindex_%",
    )
    .await
    .into_iter()
    .map(|r| (r[0].clone(), r[1..].to_vec()))
    .collect();
    let pg_indexes: BTreeMap<String, Vec<String>> = pg_strings(
        pg,
        "SELECT i.relname::text, t.relname::text,
                (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
                 FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum),
                x.indisunique::int::text, (x.indpred IS NOT NULL)::int::text
         FROM pg_index x
         JOIN pg_class i ON i.oid = x.indexrelid
         JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
         WHERE n.nspname = 'public' AND t.relname <> $1
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
        MIGRATIONS_TABLE,
    )
    .await
    .into_iter()
    .map(|r| (r[0].clone(), r[1..].to_vec()))
    .collect();
    assert!(
        lite_indexes.len() >= 25,
        "read the SQLite indexes: {lite_indexes:?}"
    );
    assert_eq!(lite_indexes, pg_indexes, "indexes: sqlite vs postgres");

    // Triggers, by name and table.
    let lite_triggers: BTreeSet<Vec<String>> = lite_strings(
        lite,
        "SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' AND name <> ?1",
        "",
    )
    .await
    .into_iter()
    .collect();
    let pg_triggers: BTreeSet<Vec<String>> = pg_strings(
        pg,
        "SELECT tgname::text, tgrelid::regclass::text FROM pg_trigger
         WHERE NOT tgisinternal AND tgname <> $1",
        "",
    )
    .await
    .into_iter()
    .filter(|r| !ONLY_PG_TRIGGERS.contains(&r[0].as_str()))
    .collect();
    assert!(
        lite_triggers.len() >= 12,
        "read the SQLite triggers: {lite_triggers:?}"
    );
    assert_eq!(lite_triggers, pg_triggers, "triggers: sqlite vs postgres");

    // A fresh database's rows: the notify cursor at 0, every other table empty.
    both.same("SELECT name, CAST(seq AS TEXT), CAST(updated_at AS TEXT) FROM cursors")
        .await;
    for table in &lite_tables {
        let (a, b) = both
            .rows(&format!("SELECT CAST(COUNT(*) AS TEXT) FROM {table}"))
            .await;
        assert_eq!(a, b, "{table}: rows in a fresh database");
    }
}

// ----------------------------------------------------------- append-only ---

/// UPDATE and DELETE on every append-only table are refused on both engines
/// with the same message; on PostgreSQL TRUNCATE too. The rows stay.
#[tokio::test]
async fn append_only_tables_refuse_update_delete_and_truncate() {
    let both = Both::new().await;
    // One row in each append-only table, through the triggers where they write.
    for sql in [
        "INSERT INTO agent_sessions (session_id, created_at, updated_at) VALUES ('s1', 1, 1)",
        "INSERT INTO execution_ledger (event_id, session_id, tool, payload, payload_hash, status, at)
         VALUES ('e1', 's1', 'Bash', '{}', 'h', 'started', 2)",
        "INSERT INTO questions (id, title, created_at, updated_at) VALUES ('q1', 't', 3, 3)",
        "UPDATE questions SET reply = 'r', reply_seq = 1, t_seq = 1, t_at = 4, t_event = 'question.answered',
             t_history = 'reply', t_by = 'ann', t_actor = 'ann', t_channel = 'chat', t_payload = '{}'",
        "INSERT INTO board_row_annotations (row_id, board_id, action_version, annotation, source, at)
         VALUES ('r1', 'b1', 1, 'note', 'inbox', 5)",
        "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, payload, audit)
         VALUES (6, 'action.proposed', 'action', 'a1', 'agent', 'agent', '{}', '{}')",
    ] {
        both.ok(sql, &[]).await;
    }
    // A proposal's event is its audit entry: the log holds the audit.
    let audited = both
        .same("SELECT CAST(COUNT(*) AS TEXT) FROM events WHERE audit IS NOT NULL")
        .await;
    assert_eq!(
        audited[0][0].as_deref(),
        Some("1"),
        "the audit is in the log"
    );
    for (table, message) in [
        ("events", "events are append-only"),
        ("question_replies", "question replies are append-only"),
        ("board_row_annotations", "annotation history is append-only"),
        ("execution_ledger", "the execution ledger is append-only"),
    ] {
        let count = format!("SELECT CAST(COUNT(*) AS TEXT) FROM {table}");
        let before = both.same(&count).await;
        assert_ne!(
            before[0][0].as_deref(),
            Some("0"),
            "{table} has a row to protect"
        );
        for sql in [
            format!("UPDATE {table} SET at = at + 1"),
            format!("DELETE FROM {table}"),
        ] {
            let refused = both.exec(&sql, &[]).await;
            assert_eq!(refused, Err(message.to_string()), "{sql}");
        }
        let truncate = sqlx::query(sqlx::AssertSqlSafe(format!("TRUNCATE {table} CASCADE")))
            .execute(&both.pg)
            .await
            .map_err(common::engines::message);
        assert_eq!(
            truncate.map(drop),
            Err(message.to_string()),
            "TRUNCATE {table}"
        );
        assert_eq!(both.same(&count).await, before, "{table}: rows unchanged");
    }
}
