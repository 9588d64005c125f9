//! Helpers for tests/pg_export.rs: running `handoff export`, an SQLite file
//! with one of everything written through the store, and each table's rows
//! on both engines as JSON by column.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{TempDb, new_action};
use handoff::store::Store;
use handoff::store::actions::Actor;
use handoff::store::boards::{Advance, Annotate, BoardUpsert, Channel, NextStep};
use handoff::store::questions::{NewQuestion, NewReply};
use handoff::store::sessions::{NewCall, NewSession};
use handoff::store::tokens::Role;
use serde_json::{Value, json};
use sqlx::postgres::{PgConnection, PgRow};
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{Column, Row, TypeInfo, ValueRef};

/// `handoff [--json] export --to URL` on the database file `db`, with
/// nothing else from the environment.
pub fn export(db: &Path, url: &str, json: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
    if json {
        c.arg("--json");
    }
    c.args(["export", "--to", url]).env("HANDOFF_DB", db);
    for k in ["HANDOFF_URL", "HANDOFF_CONFIG", "HANDOFF_TOKEN"] {
        c.env_remove(k);
    }
    c.output().expect("run handoff")
}

/// A store with one of everything: questions flagged and answered (from
/// the Inbox, the chat and by the agent), actions proposed, approved,
/// claimed and completed (and one rejected), a board with rows, an
/// annotation and an advance, a session with a checkpoint and ledger
/// entries, an inbound wake, and a token.
pub async fn fill(store: &Store) {
    let ask = |title: &'static str| NewQuestion {
        project: "proj".into(),
        agent: "claude".into(),
        session: "sess-1".into(),
        title: title.into(),
        options: serde_json::from_value(
            json!([{"label": "yes", "recommended": true}, {"label": "no"}]),
        )
        .unwrap(),
        ..NewQuestion::default()
    };
    let reply = |text: &str| NewReply {
        text: text.into(),
        by: "alice".into(),
        ..NewReply::default()
    };
    let a = store.flag(&ask("Which DB?")).await.unwrap().question.id;
    store
        .reply_inbox(&a, &reply("Postgres"))
        .await
        .unwrap()
        .unwrap();
    let b = store.flag(&ask("Ship it?")).await.unwrap().question.id;
    store.reply_chat(&b, &reply("yes")).await.unwrap().unwrap();
    store
        .resolve_question(&b, "shipped", "claude")
        .await
        .unwrap()
        .unwrap();
    let c = store.flag(&ask("Self-answered")).await.unwrap().question.id;
    store
        .answer_agent(&c, &reply("found it"))
        .await
        .unwrap()
        .unwrap();
    store.flag(&ask("Still open")).await.unwrap();

    let done = store
        .propose(&new_action("deploy", r#"{"env":"prod","n":3}"#))
        .await
        .unwrap()
        .action
        .id;
    store
        .approve(&done, Actor::cli("alice"), None)
        .await
        .unwrap();
    store.claim(&done, "exec-1", 60_000).await.unwrap();
    store
        .complete(&done, "exec-1", true, json!({"ok": true}), None)
        .await
        .unwrap();
    let rejected = store
        .propose(&new_action("drop.table", "{}"))
        .await
        .unwrap()
        .action
        .id;
    store
        .reject(&rejected, Actor::cli("bob"), "too risky")
        .await
        .unwrap();
    store
        .propose(&new_action("still.pending", "{}"))
        .await
        .unwrap();

    let board = store
        .board_upsert(&BoardUpsert {
            project: "proj".into(),
            title: "Launch".into(),
            agent: "claude".into(),
            session: "sess-1".into(),
            rows: serde_json::from_value(json!([
                {"label": "dns", "status": "blocked", "next_step": "point it", "owner": "task"},
                {"label": "tls", "status": "done", "note": "issued"},
                {"label": "docs", "status": "tracked"}
            ]))
            .unwrap(),
            ..BoardUpsert::default()
        })
        .await
        .unwrap()
        .unwrap();
    store
        .annotate(&Annotate {
            board: board.board.id.clone(),
            label: "dns".into(),
            text: "done at the registrar".into(),
            source: Channel::Inbox,
            by: "bob".into(),
            ..Annotate::default()
        })
        .await
        .unwrap()
        .unwrap();
    let now = store
        .board_get(&board.board.id, None)
        .await
        .unwrap()
        .unwrap();
    let tls = now.row("tls").unwrap();
    store
        .board_advance(&Advance {
            board: board.board.id.clone(),
            label: "tls".into(),
            expected_revision: tls.revision,
            board_version: now.board.board_version,
            outcome: Some("issued by the CA".into()),
            next: NextStep {
                next_step: "renew in 90 days".into(),
                ..NextStep::default()
            },
            by: "claude".into(),
            ..Advance::default()
        })
        .await
        .unwrap()
        .unwrap();

    store
        .register_session(&NewSession {
            session_id: "sess-1".into(),
            agent: "claude".into(),
            project: "proj".into(),
            cwd: "/tmp/work".into(),
            ..NewSession::default()
        })
        .await
        .unwrap();
    store
        .checkpoint("sess-1", 1, r#"{"plan":["a","b"],"done":1}"#)
        .await
        .unwrap();
    for (event_id, safe) in [("send-mail", false), ("read-file", true)] {
        store
            .ledger_begin(&NewCall {
                event_id,
                session_id: "sess-1",
                tool: "tool",
                payload: &json!({"id": event_id}),
                replay_safe: safe,
            })
            .await
            .unwrap();
    }
    store
        .ledger_complete("sess-1", "read-file", true, &json!("contents"))
        .await
        .unwrap();
    store
        .record_wake("sess-1", "ci", "run-7", json!({"conclusion": "success"}))
        .await
        .unwrap();
    store
        .token_create("ci-agent", Role::Agent, Some("proj"))
        .await
        .unwrap();
}

/// A TempDb holding [`fill`]'s rows, closed again (so the export reads a
/// file no other handle has open).
pub async fn filled() -> TempDb {
    let db = TempDb::new();
    let store = db.open().await;
    fill(&store).await;
    store.close().await;
    db
}

/// Every table the SQLite file has (as the export sees them).
pub async fn lite_tables(lite: &mut SqliteConnection) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name NOT IN ('sqlite_sequence', '_sqlx_migrations') ORDER BY name",
    )
    .fetch_all(lite)
    .await
    .unwrap()
}

/// One SQLite row as JSON, by column, from the values' storage classes.
pub fn lite_json(row: &SqliteRow) -> Value {
    let mut out = serde_json::Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let raw = row.try_get_raw(i).unwrap();
        let v = if raw.is_null() {
            Value::Null
        } else {
            match raw.type_info().name() {
                "INTEGER" => json!(row.try_get_unchecked::<i64, _>(i).unwrap()),
                "TEXT" => json!(row.try_get_unchecked::<String, _>(i).unwrap()),
                other => panic!("{}: unexpected SQLite value {other}", col.name()),
            }
        };
        out.insert(col.name().to_string(), v);
    }
    Value::Object(out)
}

/// One PostgreSQL row as JSON, by column, from the columns' types.
pub fn pg_json(row: &PgRow) -> Value {
    let mut out = serde_json::Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let v = match col.type_info().name() {
            "INT8" => json!(row.try_get::<Option<i64>, _>(i).unwrap()),
            "TEXT" => json!(row.try_get::<Option<String>, _>(i).unwrap()),
            other => panic!("{}: unexpected PostgreSQL type {other}", col.name()),
        };
        out.insert(col.name().to_string(), v);
    }
    Value::Object(out)
}

/// `table`'s rows on each side, as JSON objects in one order (sorted by
/// their text, which covers every column).
pub async fn both_rows(
    lite: &mut SqliteConnection,
    pg: &mut PgConnection,
    table: &str,
) -> (Vec<Value>, Vec<Value>) {
    let sql = format!("SELECT * FROM \"{table}\"");
    let mut a: Vec<Value> = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
        .fetch_all(&mut *lite)
        .await
        .unwrap()
        .iter()
        .map(lite_json)
        .collect();
    let mut b: Vec<Value> = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(&mut *pg)
        .await
        .unwrap()
        .iter()
        .map(pg_json)
        .collect();
    a.sort_by_key(|v| v.to_string());
    b.sort_by_key(|v| v.to_string());
    (a, b)
}

pub async fn open_lite(path: &Path) -> SqliteConnection {
    use sqlx::ConnectOptions;
    sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .connect()
        .await
        .unwrap()
}

pub fn ok_json(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

/// One line on stderr, a failing exit; the line.
pub fn one_line_error(o: &Output) -> String {
    assert!(!o.status.success(), "must fail: {o:?}");
    let err = String::from_utf8_lossy(&o.stderr).trim_end().to_string();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

/// Rows per table on the PostgreSQL side.
pub async fn pg_counts(pg: &mut PgConnection, tables: &[String]) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for t in tables {
        let n: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM \"{t}\"")))
                .fetch_one(&mut *pg)
                .await
                .unwrap();
        out.push((t.clone(), n));
    }
    out
}
