//! `handoff export --to URL` through the real binary, into a real
//! throw-away PostgreSQL server (tests/common/postgres.rs): an SQLite file
//! with every kind of data written through the store arrives row for row;
//! the copy still behaves (append-only, numbering continues); a database
//! that is not empty is refused and left as it was; a missing file and a
//! URL that is not PostgreSQL are one-line errors; a copy taken while
//! another handle writes is one moment of the file; a value that does not
//! fit its column is named. Helpers: tests/pg_export_support.

mod common;
mod pg_export_support;

use std::process::Command;

use common::TempDb;
use common::postgres::PgDb;
use handoff::store::questions::NewQuestion;
use pg_export_support::{
    both_rows, export, filled, lite_tables, ok_json, one_line_error, open_lite, pg_counts,
};
use serde_json::json;

#[tokio::test]
async fn every_row_of_every_table_arrives_as_it_was() {
    let db = filled().await;
    let pg = PgDb::new().await;
    let out = ok_json(&export(&db.path, &pg.url, true));

    let mut lite = open_lite(&db.path).await;
    let mut conn = pg.connect().await;
    let tables = lite_tables(&mut lite).await;
    assert!(tables.len() >= 25, "{tables:?}");
    let mut total = 0;
    for table in &tables {
        let (a, b) = both_rows(&mut lite, &mut conn, table).await;
        assert_eq!(a, b, "table {table}");
        assert_eq!(out["export"]["tables"][table], json!(a.len()), "{table}");
        total += a.len();
    }
    assert_eq!(out["export"]["rows"], json!(total));
    assert_eq!(
        out["export"]["tables"].as_object().unwrap().len(),
        tables.len()
    );
    assert!(
        out["export"]["to"]
            .as_str()
            .unwrap()
            .starts_with("postgres://"),
        "{out}"
    );
    // The data this test is about is really there, on both sides.
    for table in [
        "events",
        "questions",
        "question_replies",
        "actions",
        "action_approvals",
        "boards",
        "board_rows",
        "board_row_annotations",
        "agent_sessions",
        "execution_ledger",
        "session_wakes",
        "api_tokens",
        "cursors",
    ] {
        assert!(
            out["export"]["tables"][table].as_i64().unwrap() > 0,
            "{table} has rows: {out}"
        );
    }

    // The text form: one line saying what was copied, where.
    let again = PgDb::new().await;
    let text = export(&db.path, &again.url, false);
    assert!(text.status.success(), "{text:?}");
    let line = String::from_utf8_lossy(&text.stdout);
    assert!(
        line.contains(&format!("copied {total} rows in {} tables", tables.len())),
        "{line}"
    );
}

#[tokio::test]
async fn the_copy_keeps_its_rules_and_continues_the_numbering() {
    let db = filled().await;
    let pg = PgDb::new().await;
    ok_json(&export(&db.path, &pg.url, true));
    let mut c = pg.connect().await;

    // Append-only again (the triggers were off only for the copy).
    let update = sqlx::query("UPDATE events SET type = 'forged'")
        .execute(&mut c)
        .await
        .unwrap_err();
    assert!(update.to_string().contains("append-only"), "{update}");
    let delete = sqlx::query("DELETE FROM events WHERE audit IS NOT NULL")
        .execute(&mut c)
        .await
        .unwrap_err();
    assert!(delete.to_string().contains("append-only"), "{delete}");

    // A new event continues after the copied ones.
    let last: i64 = sqlx::query_scalar("SELECT max(seq) FROM events")
        .fetch_one(&mut c)
        .await
        .unwrap();
    let seq: i64 = sqlx::query_scalar(
        "INSERT INTO events (at, type, entity_kind, entity_id) \
         VALUES (1, 'test.after', 'question', 'q') RETURNING seq",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(seq, last + 1);

    // The transition triggers are on again: a new question logs itself
    // (an action's statements append their own entries, `logged.rs`).
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&mut c)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO questions (id, title, created_at, updated_at, t_at, t_event, t_actor, \
         t_channel, t_payload) \
         VALUES ('new', 't', 1, 1, 1, 'question.flagged', 'agent', 'agent', '{}')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(after, events + 1);
}

#[tokio::test]
async fn a_database_that_is_not_empty_is_refused_and_left_as_it_was() {
    let db = filled().await;
    let pg = PgDb::new().await;
    ok_json(&export(&db.path, &pg.url, true));
    let mut lite = open_lite(&db.path).await;
    let tables = lite_tables(&mut lite).await;
    let mut c = pg.connect().await;
    let before = pg_counts(&mut c, &tables).await;

    let err = one_line_error(&export(&db.path, &pg.url, false));
    assert!(
        err.contains("is not empty") && err.contains("events"),
        "{err}"
    );
    assert_eq!(pg_counts(&mut c, &tables).await, before, "nothing changed");

    // No event, but a row the user wrote elsewhere: refused all the same.
    let other = PgDb::new().await;
    let o = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("migrate")
        .env("HANDOFF_DB", &other.url)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_CONFIG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let mut oc = other.connect().await;
    sqlx::query(
        "INSERT INTO api_tokens (id, name, role, hash, created_at) \
         VALUES ('t1', 'kept', 'admin', 'h', 1)",
    )
    .execute(&mut oc)
    .await
    .unwrap();
    let err = one_line_error(&export(&db.path, &other.url, false));
    assert!(err.contains("api_tokens"), "{err}");
    let counts = pg_counts(&mut oc, &tables).await;
    for (t, n) in counts {
        let want = match t.as_str() {
            "api_tokens" | "cursors" => 1,
            _ => 0,
        };
        assert_eq!(n, want, "{t}");
    }
}

#[tokio::test]
async fn a_missing_file_and_a_url_that_is_not_postgres_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let pg = PgDb::new().await;
    let missing = dir.path().join("nope.db");
    let err = one_line_error(&export(&missing, &pg.url, false));
    assert!(
        err.contains("nope.db") && err.contains("nothing to export"),
        "{err}"
    );
    assert!(!missing.exists(), "no file was created");

    let db = filled().await;
    let err = one_line_error(&export(
        &db.path,
        "mysql://root:pw@localhost/handoff",
        false,
    ));
    assert!(
        err.contains("mysql://") && err.contains("PostgreSQL"),
        "{err}"
    );
    assert!(!err.contains("pw@"), "no password shown: {err}");
    // A file to a file is not one of the two ways.
    let err = one_line_error(&export(&db.path, "/tmp/other.db", false));
    assert!(err.contains("postgres:// URL"), "{err}");

    // Host-only: with HANDOFF_URL set it says where to run it.
    let o = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["export", "--to", &pg.url])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_URL", "http://127.0.0.1:9")
        .env_remove("HANDOFF_CONFIG")
        .output()
        .unwrap();
    let err = one_line_error(&o);
    assert!(
        err.contains("`handoff export` must run on the daemon's host"),
        "{err}"
    );
}

/// A writer flagging questions the whole time the export runs: the copy
/// is one moment of the file (a question and its `question.flagged` event
/// are both there or both not), although events are copied before
/// questions, and the file keeps its writes.
#[tokio::test(flavor = "multi_thread")]
async fn a_copy_taken_while_another_process_writes_is_one_moment() {
    let db = TempDb::new();
    // History, so the copy is not over in an instant.
    db.open().await.seed_history(5_000).await.unwrap();
    let pg = PgDb::new().await;
    let store = db.open().await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let q = NewQuestion {
                    project: "proj".into(),
                    title: format!("live {i}"),
                    ..NewQuestion::default()
                };
                store.flag(&q).await.unwrap();
                i += 1;
            }
            i
        })
    };
    common::wait_for(30, "the first writes", || {
        let store = store.clone();
        async move { (common::count(&store, "questions").await > 5_003).then_some(()) }
    })
    .await;
    let path = db.path.clone();
    let url = pg.url.clone();
    let out = tokio::task::spawn_blocking(move || export(&path, &url, true))
        .await
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let written = writer.await.unwrap();
    let out = ok_json(&out);

    let mut c = pg.connect().await;
    let (questions, flagged): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM questions WHERE title LIKE 'live %'), \
                (SELECT count(*) FROM events e JOIN questions q ON q.id = e.entity_id \
                  WHERE e.type = 'question.flagged' AND q.title LIKE 'live %')",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    let events_of_live: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE type = 'question.flagged' AND payload LIKE '%live %'",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert!(questions > 0, "the writes before the export are in it");
    assert_eq!(questions, flagged, "every copied question has its event");
    assert_eq!(events_of_live, questions, "no event without its question");
    assert_eq!(
        out["export"]["tables"]["questions"],
        json!(questions + 5_000)
    );
    assert!(
        written as i64 > questions,
        "the writer carried on after the snapshot ({written} written, {questions} copied)"
    );
    store.close().await;
}

/// SQLite keeps whatever a column is given; PostgreSQL does not. A value
/// that does not fit its column stops the export with the table, column
/// and row named, and nothing is copied.
#[tokio::test]
async fn a_value_that_does_not_fit_its_column_is_named_and_nothing_is_copied() {
    let db = filled().await;
    let pool = common::raw_pool(&db.path).await;
    let id: String = sqlx::query_scalar("SELECT id FROM questions WHERE title = 'Still open'")
        .fetch_one(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE questions SET snoozed_until = 'tomorrow' WHERE id = ?1")
        .bind(&id)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let pg = PgDb::new().await;
    let err = one_line_error(&export(&db.path, &pg.url, false));
    assert!(
        err.contains("questions.snoozed_until")
            && err.contains(&id)
            && err.contains("text does not fit a bigint column"),
        "{err}"
    );
    let mut c = pg.connect().await;
    let mut lite = open_lite(&db.path).await;
    let tables = lite_tables(&mut lite).await;
    for (t, n) in pg_counts(&mut c, &tables).await {
        let seeded = if t == "cursors" { 1 } else { 0 };
        assert_eq!(n, seeded, "{t}: nothing copied");
    }
}
