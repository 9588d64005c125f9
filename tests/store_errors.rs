//! How a database failure reaches a user: one line, sqlx's message once.

mod common;

use common::{TempDb, count, raw_pool, stderr};

/// A trigger makes every board insert fail inside SQLite, so `board upsert`
/// hits a plain `store::Error::Db`; its text must appear exactly once
/// (anyhow's `{:#}` used to print it again for each error source).
#[tokio::test]
async fn a_database_error_is_printed_once() {
    let db = TempDb::new();
    let store = db.open().await;
    let raw = raw_pool(&db.path).await;
    sqlx::query(
        "CREATE TRIGGER refuse_boards BEFORE INSERT ON boards
         BEGIN SELECT RAISE(ABORT, 'boards are switched off'); END",
    )
    .execute(&raw)
    .await
    .expect("create trigger");
    raw.close().await;

    let out = db.cli(&["board", "upsert", "proj", "Launch"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.matches("boards are switched off").count(), 1, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("database error"), "{err}");
    assert_eq!(count(&store, "boards").await, 0);
}
