//! The way back: `HANDOFF_DB=postgres://… handoff export --to FILE`
//! through the real binary, from a real throw-away PostgreSQL server
//! (tests/common/postgres.rs) into a new SQLite file. A store with every
//! kind of data, exported and imported again, arrives row for row; the new
//! file works (the CLI lists its questions, numbering continues, the
//! append-only triggers are back); an existing file is refused and left
//! untouched; a pair of source and target that is not one of the two ways
//! is a one-line error. Helpers: tests/pg_export_support.

mod common;
mod pg_export_support;

use std::path::Path;

use common::postgres::PgDb;
use handoff::store::Store;
use handoff::store::questions::NewQuestion;
use pg_export_support::{
    export, filled, lite_json, lite_tables, ok_json, one_line_error, open_lite,
};
use serde_json::{Value, json};
use sqlx::SqliteConnection;

/// `table`'s rows as JSON objects, in one order (by their text).
async fn rows(lite: &mut SqliteConnection, table: &str) -> Vec<Value> {
    let sql = format!("SELECT * FROM \"{table}\"");
    let mut out: Vec<Value> = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(lite)
        .await
        .unwrap()
        .iter()
        .map(lite_json)
        .collect();
    out.sort_by_key(|v| v.to_string());
    out
}

/// A PostgreSQL database holding an export of [`filled`]'s file; the file.
async fn exported() -> (common::TempDb, PgDb) {
    let db = filled().await;
    let pg = PgDb::new().await;
    ok_json(&export(&db.path, &pg.url, true));
    (db, pg)
}

#[tokio::test]
async fn a_round_trip_brings_back_every_row_of_every_table() {
    let (db, pg) = exported().await;
    let dir = tempfile::tempdir().unwrap();
    let back = dir.path().join("back.db");
    let out = ok_json(&export(Path::new(&pg.url), back.to_str().unwrap(), true));
    assert_eq!(out["export"]["to"], json!(back), "{out}");

    let mut was = open_lite(&db.path).await;
    let mut now = open_lite(&back).await;
    let tables = lite_tables(&mut was).await;
    assert!(tables.len() >= 25, "{tables:?}");
    assert_eq!(lite_tables(&mut now).await, tables);
    let mut total = 0;
    for table in &tables {
        let (a, b) = (rows(&mut was, table).await, rows(&mut now, table).await);
        assert_eq!(a, b, "table {table}");
        assert_eq!(out["export"]["tables"][table], json!(a.len()), "{table}");
        total += a.len();
    }
    assert_eq!(out["export"]["rows"], json!(total));
    assert_eq!(
        out["export"]["tables"].as_object().unwrap().len(),
        tables.len()
    );
    for table in ["events", "questions", "actions", "board_rows", "cursors"] {
        assert!(
            out["export"]["tables"][table].as_i64().unwrap() > 0,
            "{table} has rows: {out}"
        );
    }
    // The triggers are all back, as the migrations made them.
    let triggers = "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name";
    let a: Vec<(String, String)> = sqlx::query_as(triggers).fetch_all(&mut was).await.unwrap();
    let b: Vec<(String, String)> = sqlx::query_as(triggers).fetch_all(&mut now).await.unwrap();
    assert!(!a.is_empty());
    assert_eq!(a, b);

    // The text form: one line saying what was copied, where.
    let text_file = dir.path().join("text.db");
    let o = export(Path::new(&pg.url), text_file.to_str().unwrap(), false);
    assert!(o.status.success(), "{o:?}");
    let line = String::from_utf8_lossy(&o.stdout);
    assert_eq!(line.trim_end().lines().count(), 1, "{line}");
    assert!(
        line.contains(&format!("copied {total} rows in {} tables", tables.len()))
            && line.contains("text.db"),
        "{line}"
    );
}

#[tokio::test]
async fn the_new_file_works_numbering_continues_and_the_log_is_append_only_again() {
    let (_db, pg) = exported().await;
    let dir = tempfile::tempdir().unwrap();
    let back = dir.path().join("back.db");
    ok_json(&export(Path::new(&pg.url), back.to_str().unwrap(), true));

    // The CLI reads the copied questions and the replies on them.
    let o = common::cli_at(&back, &["questions", "--json", "--status", "all"]);
    let mut titles: Vec<String> = common::json(&o)["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["title"].as_str().unwrap().to_string())
        .collect();
    titles.sort();
    assert_eq!(
        titles,
        ["Self-answered", "Ship it?", "Still open", "Which DB?"]
    );
    let o = common::cli_at(&back, &["pending", "--project", "proj", "--json"]);
    let replies = common::json(&o)["replies"].to_string();
    assert!(replies.contains("Postgres"), "{replies}");

    // A new event continues after the copied ones (AUTOINCREMENT).
    let mut c = open_lite(&back).await;
    let last: i64 = sqlx::query_scalar("SELECT max(seq) FROM events")
        .fetch_one(&mut c)
        .await
        .unwrap();
    drop(c);
    let store = Store::open(&back).await.unwrap();
    store
        .flag(&NewQuestion {
            project: "proj".into(),
            agent: "claude".into(),
            session: "sess-2".into(),
            title: "After the copy".into(),
            ..NewQuestion::default()
        })
        .await
        .unwrap();
    store.close().await;
    let mut c = open_lite(&back).await;
    let seqs: Vec<i64> = sqlx::query_scalar("SELECT seq FROM events WHERE seq > ?1 ORDER BY seq")
        .bind(last)
        .fetch_all(&mut c)
        .await
        .unwrap();
    assert_eq!(seqs.first(), Some(&(last + 1)), "{seqs:?}");
    drop(c);

    // Append-only again: the dropped triggers were re-created.
    use sqlx::ConnectOptions;
    let mut w = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&back)
        .connect()
        .await
        .unwrap();
    let update = sqlx::query("UPDATE events SET type = 'forged'")
        .execute(&mut w)
        .await
        .unwrap_err();
    assert!(update.to_string().contains("append-only"), "{update}");
    let delete = sqlx::query("DELETE FROM events WHERE audit IS NOT NULL")
        .execute(&mut w)
        .await
        .unwrap_err();
    assert!(delete.to_string().contains("append-only"), "{delete}");
}

#[tokio::test]
async fn an_existing_file_is_refused_and_left_untouched() {
    let (db, pg) = exported().await;
    let before = std::fs::read(&db.path).unwrap();
    let err = one_line_error(&export(
        Path::new(&pg.url),
        db.path.to_str().unwrap(),
        false,
    ));
    assert!(
        err.contains("already exists") && err.contains(db.path.to_str().unwrap()),
        "{err}"
    );
    assert_eq!(std::fs::read(&db.path).unwrap(), before, "left untouched");

    // An empty file someone made is theirs too.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let err = one_line_error(&export(Path::new(&pg.url), empty.to_str().unwrap(), false));
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
}

#[tokio::test]
async fn a_failed_import_leaves_no_file_behind() {
    // A database without handoff's schema: nothing to copy, and no file.
    let pg = PgDb::new().await;
    let dir = tempfile::tempdir().unwrap();
    let back = dir.path().join("back.db");
    let err = one_line_error(&export(Path::new(&pg.url), back.to_str().unwrap(), false));
    assert!(err.contains("no handoff schema"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_pair_that_is_not_one_of_the_two_ways_is_a_one_line_error() {
    let pg = PgDb::new().await;
    let other = format!("{}x", pg.url);
    let err = one_line_error(&export(Path::new(&pg.url), &other, false));
    assert!(
        err.contains("export copies an SQLite file to a postgres:// URL")
            && err.contains("to a new SQLite file"),
        "{err}"
    );

    let db = filled().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("copy.db");
    let err = one_line_error(&export(&db.path, file.to_str().unwrap(), false));
    assert!(
        err.contains("export copies an SQLite file to a postgres:// URL"),
        "{err}"
    );
    assert!(!file.exists(), "no file was created");
}
