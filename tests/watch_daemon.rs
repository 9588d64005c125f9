//! An idle daemon does not poll: a real `handoff serve` learns of writes made
//! by other processes from the database files (inotify), and its slow
//! fallback poll still delivers when notifications are off. Every test sets
//! the fallback interval (the hidden `HANDOFF_WATCH_FALLBACK_MS`) so that
//! only the path under test can pass within the wait, and waits for a
//! positive signal (a wake-up target's file, a stored status) with a
//! generous timeout.

mod common;

use std::path::{Path, PathBuf};

use common::daemon::Daemon;
use common::{TempDb, answer, ask, raw_pool, session_with, wait_for};
use handoff::store::sessions::WakeTarget;

/// Ten minutes: longer than any wait below, so a test that passes did not
/// pass through the fallback poll.
const NEVER: &str = "600000";

/// Register session `s` whose exec wake target writes `<dir>/woken/<event id>`.
async fn woken_dir(db: &TempDb) -> PathBuf {
    let store = db.open().await;
    let out = db.dir.path().join("woken");
    std::fs::create_dir(&out).unwrap();
    let target = WakeTarget::Exec {
        argv: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("touch {}/$HANDOFF_EVENT_ID", out.display()),
        ],
        timeout_secs: Some(10),
    };
    session_with(&store, "s", Some(target)).await;
    store.close().await;
    out
}

fn config(db: &TempDb) -> PathBuf {
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    cfg
}

/// Wait until the daemon's log has a line containing `text`.
async fn logged(daemon: &Daemon, text: &str) {
    wait_for(20, &format!("the daemon to log `{text}`"), || async {
        daemon.log().contains(text).then_some(())
    })
    .await;
}

/// Wait until the exec wake target ran for an event (returns its id).
async fn woken(out: &Path, seen: usize, what: &str) -> String {
    wait_for(30, what, || async {
        let mut ids: Vec<String> = std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        ids.sort();
        (ids.len() > seen).then(|| ids.pop().unwrap())
    })
    .await
}

#[tokio::test]
async fn writes_by_other_processes_wake_the_daemon_through_the_database_files() {
    let db = TempDb::new();
    let out = woken_dir(&db).await;
    let store = db.open().await;
    let first = ask(&store, "Deploy?").await;
    let second = ask(&store, "Migrate?").await;
    let daemon = Daemon::start_with(
        &db.path,
        &config(&db),
        &[("HANDOFF_WATCH_FALLBACK_MS", NEVER)],
    );
    // The watch is set up (and the followers told to look once) before
    // this line: a write from now on is noticed, not polled for.
    logged(&daemon, "watching the database files").await;

    // The real CLI, a process of its own, answers.
    let o = db.cli(&["reply", &first.id, "go"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    woken(&out, 0, "the CLI's answer to wake the session").await;
    // The waiter follower saw it too (it logs every event it applies).
    logged(&daemon, "question.answered").await;

    // A checkpoint that truncates the WAL, then a write from this process:
    // the WAL is written again from its start.
    let raw = raw_pool(&db.path).await;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&raw)
        .await
        .unwrap();
    raw.close().await;
    store
        .reply_inbox(&second.id, &answer("yes"))
        .await
        .unwrap()
        .expect("accepted");
    woken(&out, 1, "an answer written after a truncating checkpoint").await;
    store.close().await;
}

#[tokio::test]
async fn without_file_notifications_the_fallback_poll_still_delivers() {
    let db = TempDb::new();
    let out = woken_dir(&db).await;
    let store = db.open().await;
    let q = ask(&store, "Deploy?").await;
    store.close().await;
    let daemon = Daemon::start_with(
        &db.path,
        &config(&db),
        &[
            ("HANDOFF_WATCH", "poll"),
            ("HANDOFF_WATCH_FALLBACK_MS", "200"),
        ],
    );
    // Said once, at info, with the reason.
    logged(&daemon, "not watching the database files").await;
    assert!(
        daemon.log().contains("HANDOFF_WATCH=poll"),
        "{}",
        daemon.log()
    );
    let o = db.cli(&["reply", &q.id, "go"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    woken(&out, 0, "the fallback poll to deliver the wake-up").await;
}

#[tokio::test]
async fn an_expiry_proposed_by_another_process_is_written_when_due() {
    let db = TempDb::new();
    let daemon = Daemon::start_with(
        &db.path,
        &config(&db),
        &[("HANDOFF_WATCH_FALLBACK_MS", NEVER)],
    );
    logged(&daemon, "watching the database files").await;
    // Housekeeping sleeps until the earliest expiry; this proposal, made
    // after it went to sleep, must bring that time forward.
    let o = db.cli(&[
        "propose",
        "--kind",
        "deploy",
        "--summary",
        "ship",
        "--args",
        "{}",
        "--ttl",
        "2s",
        "--json",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let id = common::json(&o)["action"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let store = db.open().await;
    wait_for(30, "the daemon to write the expiry", || async {
        let a = store.get_action(&id).await.unwrap();
        (a.status.as_str() == "expired").then_some(())
    })
    .await;
    let a = store.get_action(&id).await.unwrap();
    assert_eq!(a.decided_by.as_deref(), Some("expiry"));
}
