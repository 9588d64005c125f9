//! `handoff backup FILE`: an online copy of the live database, taken by the
//! real binary while a real daemon and other processes keep writing, then
//! opened with the binary and checked for consistency; and its refusals.

mod common;

use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::TempDb;
use common::daemon::Daemon;
use sqlx::Connection;

/// The real binary on `db`, with `HANDOFF_URL` when `url` is given.
fn run(db: &Path, url: Option<&str>, args: &[&str]) -> Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
    c.args(args)
        .env("HANDOFF_DB", db)
        .env_remove("HANDOFF_TOKEN");
    match url {
        Some(u) => c.env("HANDOFF_URL", u),
        None => c.env_remove("HANDOFF_URL"),
    };
    c.output().expect("run handoff")
}

/// `PRAGMA integrity_check` and the journal mode of a database file, read
/// without going through handoff.
async fn inspect(path: &Path) -> (Vec<String>, String) {
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true);
    let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
    let check: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut c)
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
    (check, mode)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_backup_taken_while_the_daemon_writes_is_consistent_and_complete() {
    let db = TempDb::new();
    // Months of history, so the copy is not over in an instant.
    let seeded = db.open().await.seed_history(30_000).await.unwrap();
    assert!(seeded > 0);
    let seed_last = db.open().await.last_event_seq().await.unwrap();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\nopen = true\n").unwrap();
    let d = Daemon::start(&db.path, &cfg);
    let url = format!("http://{}", d.addr);

    // Another process keeps writing: `handoff ask` through the daemon and
    // straight into the file, alternately; each title is recorded once its
    // command has returned, i.e. once the write has committed.
    let written = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (written, stop, path, url) =
            (written.clone(), stop.clone(), db.path.clone(), url.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let title = format!("written {i}");
                let via = (i % 2 == 0).then_some(url.as_str());
                let o = run(&path, via, &["ask", &title, "--project", "p"]);
                assert!(o.status.success(), "ask: {}", common::stderr(&o));
                written.lock().unwrap().push(title);
                i += 1;
            }
        })
    };
    let count = || written.lock().unwrap().len();
    common::wait_for(60, "the first writes", || async {
        (count() >= 6).then_some(())
    })
    .await;
    let before: Vec<String> = written.lock().unwrap().clone();

    let dest = db.dir.path().join("backup.db");
    let o = run(
        &db.path,
        None,
        &["backup", dest.to_str().unwrap(), "--json"],
    );
    assert!(o.status.success(), "backup: {}", common::stderr(&o));
    let report = common::json(&o);
    let done_at = count();
    eprintln!(
        "backup of {} bytes; {} writes committed while it ran",
        report["backup"]["bytes"],
        done_at - before.len()
    );
    // The daemon and the writer carry on after the copy.
    common::wait_for(60, "writes after the backup", || async {
        (count() >= done_at + 4).then_some(())
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();

    let (check, mode) = inspect(&dest).await;
    assert_eq!(check, ["ok"], "integrity_check of the copy");
    assert_eq!(mode, "delete", "one self-contained file, no -wal beside it");
    assert!(!Path::new(&format!("{}-wal", dest.display())).exists());

    // Opened with the binary: every question written before the backup
    // began is there, with the seeded history.
    let o = run(&dest, None, &["questions", "--json", "--status", "all"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let qs = common::json(&o);
    let qs = qs["questions"].as_array().unwrap();
    let title_of = |q: &serde_json::Value| q["title"].as_str().unwrap().to_string();
    let titles: Vec<String> = qs.iter().map(title_of).collect();
    for t in &before {
        assert!(
            titles.contains(t),
            "{t} was written before the backup and is missing"
        );
    }
    assert!(titles.len() as u64 >= 30_000, "the history is there too");

    // One snapshot: every question in the copy has its `question.flagged`
    // event and every flagged event its question — no write half in.
    let mut flagged = Vec::new();
    let mut after = seed_last;
    loop {
        let a = after.to_string();
        let o = run(
            &dest,
            None,
            &["events", "--after", &a, "--limit", "1000", "--json"],
        );
        assert!(o.status.success(), "{}", common::stderr(&o));
        let page = common::json(&o);
        let page = page["events"].as_array().unwrap().clone();
        let Some(last) = page.last() else { break };
        after = last["seq"].as_i64().unwrap();
        flagged.extend(
            page.iter()
                .filter(|e| e["type"] == "question.flagged")
                .map(|e| e["entity_id"].as_str().unwrap().to_string()),
        );
    }
    let mut written_ids: Vec<String> = qs
        .iter()
        .filter(|q| title_of(q).starts_with("written "))
        .map(|q| q["id"].as_str().unwrap().to_string())
        .collect();
    written_ids.sort();
    flagged.sort();
    assert_eq!(written_ids, flagged, "questions and their events agree");
    assert_eq!(
        report["backup"]["last_event_seq"].as_i64().unwrap(),
        after,
        "the report names the copy's newest event"
    );
    // The live database moved on meanwhile; the copy is a snapshot of it.
    let live_last = db.open().await.last_event_seq().await.unwrap();
    assert!(live_last > after, "writes continued after the snapshot");
    drop(d);
}

#[tokio::test]
async fn backup_refuses_to_overwrite_or_copy_onto_the_live_file_and_says_what_to_do() {
    let db = TempDb::new();
    common::ask(&db.open().await, "first").await;
    let dest = db.dir.path().join("b.db");
    let d = dest.to_str().unwrap();

    assert!(db.cli(&["backup", d]).status.success());
    let first = std::fs::read(&dest).unwrap();
    common::ask(&db.open().await, "second").await;

    let o = db.cli(&["backup", d]);
    assert_eq!(o.status.code(), Some(2));
    let err = common::stderr(&o);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
    assert_eq!(std::fs::read(&dest).unwrap(), first, "left untouched");

    let o = db.cli(&["backup", d, "--force"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::cli_at(&dest, &["questions", "--json"]);
    let titles: Vec<String> = common::json(&o)["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(titles, ["first", "second"], "replaced with a fresh copy");

    // The live file itself, even with --force.
    let live = db.path.to_str().unwrap();
    let o = db.cli(&["backup", live, "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::stderr(&o).contains("live database"),
        "{}",
        common::stderr(&o)
    );

    // A file some process has open (a -wal beside it), even with --force.
    let busy = db.dir.path().join("busy.db");
    std::fs::write(&busy, b"").unwrap();
    std::fs::write(db.dir.path().join("busy.db-wal"), b"").unwrap();
    let o = db.cli(&["backup", busy.to_str().unwrap(), "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::stderr(&o).contains("-wal"),
        "{}",
        common::stderr(&o)
    );

    // No database yet: nothing is created, at either end.
    let none = db.dir.path().join("none.db");
    let out = db.dir.path().join("out.db");
    let o = common::cli_at(&none, &["backup", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("nothing to back up"));
    assert!(!none.exists() && !out.exists());

    // Against a daemon: it is a host-only command.
    let o = run(
        &db.path,
        Some("http://127.0.0.1:9"),
        &["backup", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("daemon's host"));

    // Nothing but the copies was left in the directory (no temporary files).
    let mut names: Vec<String> = std::fs::read_dir(db.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("handoff.db"))
        // The copy's own WAL files, from opening it with the CLI above.
        .filter(|n| n != "b.db-wal" && n != "b.db-shm")
        .collect();
    names.sort();
    assert_eq!(names, ["b.db", "busy.db", "busy.db-wal"]);
}
