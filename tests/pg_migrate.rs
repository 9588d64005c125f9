//! `handoff migrate` against a real throw-away PostgreSQL server
//! (tests/common/postgres.rs), through the real binary: the schema of
//! `migrations/postgres` applied and listed, nothing left to apply the
//! second time, two deploy steps at once applying each migration once, a
//! newer handoff's database refused, and an unreachable server named
//! without its password.

mod common;

use std::process::{Command, Output, Stdio};

use common::postgres::PgDb;
use sqlx::Connection;

/// `handoff --json migrate` with `HANDOFF_DB=url`, nothing else set.
fn migrate(url: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
    c.args(["--json", "migrate"]).env("HANDOFF_DB", url);
    for k in ["HANDOFF_URL", "HANDOFF_CONFIG", "HANDOFF_TOKEN"] {
        c.env_remove(k);
    }
    c
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

/// Every PostgreSQL migration this build carries, ascending.
fn ours() -> Vec<i64> {
    let m = sqlx::migrate!("./migrations/postgres");
    m.iter().map(|m| m.version).collect()
}

#[tokio::test]
async fn migrate_applies_the_postgres_schema_once_and_then_nothing() {
    let db = PgDb::new().await;
    let versions = ours();
    let first = json(&migrate(&db.url).output().unwrap());
    assert_eq!(first["database"]["applied"], serde_json::json!(versions));
    assert_eq!(
        first["database"]["schema_version"],
        serde_json::json!(versions.last().unwrap())
    );
    assert!(
        first["database"]["url"]
            .as_str()
            .unwrap()
            .starts_with("postgres://")
    );
    // The schema is there: the event log's commit-order counter included.
    let mut c = db.connect().await;
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables
          WHERE table_schema = 'public' AND table_name IN ('events', 'actions', 'events_seq')",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(tables, 3);

    let again = json(&migrate(&db.url).output().unwrap());
    assert_eq!(again["database"]["applied"], serde_json::json!([]));
    let plain = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("migrate")
        .env("HANDOFF_DB", &db.url)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_CONFIG")
        .output()
        .unwrap();
    assert!(plain.status.success());
    let out = String::from_utf8_lossy(&plain.stdout);
    assert!(out.contains("nothing to apply"), "{out}");

    // A newer handoff's migration in the table: refused, nothing applied.
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (99991231000000, 'future', true, '\\x00', 0)",
    )
    .execute(&mut c)
    .await
    .unwrap();
    c.close().await.unwrap();
    let o = migrate(&db.url).output().unwrap();
    assert!(!o.status.success(), "a newer schema is refused: {o:?}");
    let err: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the error object");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("newer handoff") && message.contains("99991231000000"),
        "{message}"
    );
}

/// Two deploy steps started at once on a fresh database: both succeed, and
/// between them every migration was applied exactly once (sqlx's migrator
/// holds PostgreSQL's advisory lock while it applies).
#[tokio::test]
async fn two_migrates_at_once_apply_each_migration_once() {
    let db = PgDb::new().await;
    let start = || {
        migrate(&db.url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let mut applied: Vec<i64> = [json(&a), json(&b)]
        .iter()
        .flat_map(|v| {
            v["database"]["applied"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    applied.sort_unstable();
    assert_eq!(applied, ours(), "each migration applied by exactly one");
    let mut c = db.connect().await;
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(rows as usize, ours().len());
}

/// A server that is not there: one line naming the database, without the
/// password in the URL, and a failing exit.
#[test]
fn an_unreachable_server_is_named_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "postgres://handoff:s3cret@localhost/handoff?host={}",
        dir.path().display()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("migrate")
        .env("HANDOFF_DB", &url)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_CONFIG")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("cannot open the database postgres://handoff:***@"),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
}
