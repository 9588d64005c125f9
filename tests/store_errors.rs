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
    assert!(
        err.contains("database error: boards are switched off (code 1811)"),
        "SQLite's message and its extended code (SQLITE_CONSTRAINT_TRIGGER): {err}"
    );
    assert_eq!(count(&store, "boards").await, 0);
}

/// `handoff … | head`: a reader that goes away early is not a crash.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    common::create_db(&db);
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["ask", "Something to list"])
        .env("HANDOFF_DB", &db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["--json", "events", "--limit", "1000"])
        .env("HANDOFF_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is read
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// A write lock held past one 5 s busy timeout (another process in a long
/// transaction) is waited out by the store's bounded retry: the write lands
/// once the lock goes, and no `SQLITE_BUSY` reaches the caller.
#[tokio::test]
async fn a_write_outlasts_a_lock_held_past_the_busy_timeout() {
    let db = TempDb::new();
    let store = db.open().await;
    let raw = raw_pool(&db.path).await;
    let mut conn = raw.acquire().await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *conn)
        .await
        .unwrap();
    let holder = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(6_500)).await;
        sqlx::query("COMMIT").execute(&mut *conn).await.unwrap();
    });
    common::ask(&store, "written after the lock").await;
    holder.await.unwrap();
    assert_eq!(count(&store, "questions").await, 1);
}
