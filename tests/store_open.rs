//! Opening the store: pragmas, idempotent re-open, newer-schema refusal,
//! unusable paths, and the append-only event log.

mod common;

use common::TempDb;
use handoff::store::{Error, Store};

#[tokio::test]
async fn reopen_is_idempotent_and_uses_wal() {
    let db = TempDb::new();
    let a = db.open().await;
    let b = db.open().await; // a second process-like handle, migrations already applied
    assert_eq!(a.count_rows("events").await.unwrap(), 0);
    assert_eq!(b.count_rows("events").await.unwrap(), 0);
    assert!(
        db.dir.path().join("handoff.db-wal").exists(),
        "WAL journal in use"
    );
    a.close().await;
    b.close().await;
    let c = db.open().await;
    assert_eq!(c.last_event_seq().await.unwrap(), 0);
}

#[tokio::test]
async fn concurrent_first_open_of_a_fresh_file() {
    let db = TempDb::fresh();
    let opens = (0..6).map(|_| {
        let p = db.path.clone();
        tokio::spawn(async move { Store::open(&p).await })
    });
    for h in opens {
        h.await.unwrap().expect("every concurrent open succeeds");
    }
}

#[tokio::test]
async fn refuses_a_database_from_a_newer_schema() {
    let db = TempDb::new();
    let s = db.open().await;
    // Pretend a newer handoff applied a migration this build does not know.
    sqlx_insert_future_migration(&db.path).await;
    s.close().await;
    let err = Store::open(&db.path).await.unwrap_err();
    assert!(matches!(err, Error::NewerSchema { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("newer handoff") && msg.contains("upgrade"),
        "{msg}"
    );
}

async fn sqlx_insert_future_migration(path: &std::path::Path) {
    use sqlx::Connection;
    let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations(version, description, installed_on, success, checksum, execution_time)
         VALUES (99991231000000, 'future', CURRENT_TIMESTAMP, 1, x'00', 0)",
    )
    .execute(&mut c)
    .await
    .unwrap();
}

#[tokio::test]
async fn unusable_paths_give_clear_errors() {
    let db = TempDb::new();
    // A directory where the file should be.
    let err = Store::open(db.dir.path()).await.unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
    // A file that is not a database.
    let junk = db.dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let err = Store::open(&junk).await.unwrap_err();
    assert!(err.to_string().contains("not a SQLite database"), "{err}");
    // A path under that file: nothing can be opened there.
    let err = Store::open(&junk.join("inner.db")).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot be opened (check the path and permissions)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_new_file_that_cannot_be_written_is_refused_as_read_only() {
    let db = TempDb::fresh();
    std::fs::write(&db.path, b"").unwrap();
    let _guard = common::make_read_only(&db.path);
    match Store::open(&db.path).await {
        Err(e) => assert!(e.to_string().contains("the file is read-only"), "{e}"),
        Ok(_) => panic!("a file that cannot be written must be refused"),
    }
    // A WAL-mode SQLite file with no tables opens, then fails to take the
    // schema: that is read-only too, not a schema error.
    let wal = db.dir.path().join("wal.db");
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&wal)
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
    sqlx::SqlitePool::connect_with(opts)
        .await
        .unwrap()
        .close()
        .await;
    let _wal_guard = common::make_read_only(&wal);
    match Store::open(&wal).await {
        Err(e) => assert!(e.to_string().contains("the file is read-only"), "{e}"),
        Ok(_) => panic!("a file that cannot be written must be refused"),
    }
}

/// Every change appends its event through one function, which refuses a
/// payload nested deeper than 100 levels (serde_json reads at most 127, and
/// an event it cannot read would stop every follower of the log); the
/// change is refused with it.
#[tokio::test]
async fn an_event_payload_nested_past_100_levels_is_refused_with_its_change() {
    let db = TempDb::new();
    let store = db.open().await;
    let nested = |depth: usize| format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    // A proposal's event holds the arguments one level down.
    let ok = store
        .propose(&common::new_action("deep.ok", &nested(99)))
        .await
        .unwrap();
    assert!(ok.created);
    let err = store
        .propose(&common::new_action("deep.no", &nested(100)))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the data is nested 101 levels deep; at most 100 can be stored: flatten it"),
        "{err}"
    );
    assert_eq!(common::count(&store, "actions").await, 1, "nothing written");
}

#[tokio::test]
async fn creates_parent_directories_private() {
    let db = TempDb::new();
    let nested = db.dir.path().join("a/b/handoff.db");
    Store::open(&nested).await.unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(db.dir.path().join("a/b"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

#[tokio::test]
async fn close_checkpoints_the_wal_into_the_database_file() {
    let db = TempDb::new();
    let store = db.open().await;
    common::ask(&store, "kept").await;
    let wal = db.path.with_extension("db-wal");
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    assert!(size(&wal) > 0, "the write sits in the WAL");
    store.close().await;
    assert_eq!(size(&wal), 0, "close moved it into {}", db.path.display());
    let again = db.open().await;
    assert_eq!(common::count(&again, "questions").await, 1);
}

/// `HANDOFF_DB`, then `$XDG_DATA_HOME/handoff/handoff.db`, then
/// `~/.local/share/handoff/handoff.db`; a variable set but empty counts as
/// unset. Only the default location is created on first use: a file
/// `HANDOFF_DB` names must exist (`handoff init` creates it).
#[test]
fn the_default_database_path_skips_empty_variables() {
    let dir = tempfile::tempdir().unwrap();
    let (xdg, home) = (dir.path().join("xdg"), dir.path().join("home"));
    let run = |cmd: &str, db: &str, xdg_value: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
            .arg(cmd)
            .env("HANDOFF_DB", db)
            .env("XDG_DATA_HOME", xdg_value)
            .env("HOME", &home)
            .env_remove("HANDOFF_URL")
            .env_remove("HANDOFF_CONFIG")
            .output()
            .unwrap()
    };
    let pending = |db: &str, xdg_value: &std::path::Path| {
        let out = run("pending", db, xdg_value);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    pending("", &xdg);
    assert!(xdg.join("handoff/handoff.db").exists(), "XDG_DATA_HOME");
    pending("", std::path::Path::new(""));
    assert!(
        home.join(".local/share/handoff/handoff.db").exists(),
        "HOME, when XDG_DATA_HOME is empty"
    );
    let named = dir.path().join("named.db");
    let out = run("pending", named.to_str().unwrap(), &xdg);
    assert_eq!(out.status.code(), Some(2), "a named file that is missing");
    assert!(!named.exists(), "is not created by a command");
    let out = run("init", named.to_str().unwrap(), &xdg);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pending(named.to_str().unwrap(), &xdg);
    assert!(named.exists(), "HANDOFF_DB first");
}

/// Another program's SQLite file whose tables clash with ours: the schema
/// cannot be applied, and the error says so (not "read-only").
#[tokio::test]
async fn a_file_whose_tables_clash_is_refused_with_the_migration_error() {
    let db = TempDb::fresh();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&db.path)
        .create_if_missing(true);
    let raw = sqlx::SqlitePool::connect_with(opts).await.unwrap();
    sqlx::query("CREATE TABLE events (someone_else TEXT)")
        .execute(&raw)
        .await
        .unwrap();
    raw.close().await;
    match Store::open(&db.path).await {
        Err(Error::Migrate(m)) => assert!(m.contains("already exists"), "{m}"),
        Err(e) => panic!("expected a migration error, got: {e}"),
        Ok(_) => panic!("a clashing file must be refused"),
    }
}

/// The migrations this build carries, as `sqlx::migrate!` embeds them.
fn our_migrations() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations/sqlite")
}

/// A file at `path` as an older handoff left it (every migration of this
/// build but the newest), with the pool that wrote it; and this build's
/// migration versions, ascending.
async fn older_handoffs_file(path: &std::path::Path) -> (Vec<i64>, sqlx::SqlitePool) {
    let ours = our_migrations();
    let versions: Vec<i64> = ours.iter().map(|m| m.version).collect();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let raw = sqlx::SqlitePool::connect_with(opts).await.unwrap();
    ours.run_to(versions[versions.len() - 2], &raw)
        .await
        .unwrap();
    (versions, raw)
}

/// A file migrated by an older handoff (every migration but the newest)
/// is not taken as current: opening it applies the rest.
#[tokio::test]
async fn an_older_schema_is_migrated_on_open() {
    let db = TempDb::fresh();
    let (versions, raw) = older_handoffs_file(&db.path).await;
    let (newest, older) = versions.split_last().expect("migrations");
    let applied = |pool: sqlx::SqlitePool| async move {
        let v: Vec<i64> = sqlx::query_scalar(
            "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        pool.close().await;
        v
    };
    assert_eq!(applied(raw).await, older, "the older handoff's schema");
    Store::open(&db.path).await.expect("open").close().await;
    let now = applied(common::raw_pool(&db.path).await).await;
    assert_eq!(now.last(), Some(newest), "the newest migration applied");
    assert_eq!(now, versions);
}

/// `handoff migrate` (the real binary): a named file that is not there is
/// refused in one line and not created; an older handoff's file gets the
/// missing migrations, listed in `--json`, and a second run has nothing
/// to apply; a newer handoff's file is refused, as every command does.
#[tokio::test]
async fn handoff_migrate_applies_what_is_missing_and_creates_nothing() {
    let db = TempDb::fresh();
    let migrate = |json: bool| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
        if json {
            c.arg("--json");
        }
        c.args(["migrate"])
            .env("HANDOFF_DB", &db.path)
            .env_remove("HANDOFF_URL")
            .env_remove("HANDOFF_CONFIG")
            .output()
            .expect("run handoff migrate")
    };
    let o = migrate(false);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("does not exist") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    assert!(!db.path.exists(), "migrate created nothing");

    let (versions, raw) = older_handoffs_file(&db.path).await;
    let newest = versions.last().expect("migrations");
    raw.close().await;

    let o = migrate(true);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["database"]["applied"], serde_json::json!([newest]));
    assert_eq!(v["database"]["schema_version"], serde_json::json!(newest));
    let o = migrate(false);
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("nothing to apply"), "{out}");

    sqlx_insert_future_migration(&db.path).await;
    let o = migrate(false);
    assert!(!o.status.success(), "a newer schema is refused: {o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("newer handoff"), "{err}");
}

/// The quick check that a file is current compares every applied
/// migration, not only the newest version: a newer handoff's migration
/// next to all of ours is refused (not opened as current), and an applied
/// migration whose checksum differs from ours is reported, not ignored.
#[tokio::test]
async fn only_exactly_our_applied_migrations_count_as_current() {
    let db = TempDb::new();
    db.open().await.close().await;
    sqlx_insert_future_migration(&db.path).await;
    let err = Store::open(&db.path).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NewerSchema {
                found: 99991231000000,
                ..
            }
        ),
        "{err:?}"
    );

    let db = TempDb::new();
    db.open().await.close().await;
    let pool = common::raw_pool(&db.path).await;
    sqlx::query(
        "UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    match Store::open(&db.path).await {
        Err(Error::Migrate(m)) => assert!(m.contains("modified"), "{m}"),
        Err(e) => panic!("expected the migrator's checksum error, got: {e}"),
        Ok(_) => panic!("an edited migration must not pass as current"),
    }
}
