//! Concurrent first opens: many processes of the real binary opening one
//! fresh database file at the same moment all succeed (switching a new
//! file to WAL takes an exclusive lock; the open path must retry it).
//! Only the default location is created by any command, so the racers find
//! their file there (`XDG_DATA_HOME` points into the test's temp dir).

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use sqlx::Connection;

/// How many processes race.
const N: usize = 16;

#[test]
fn sixteen_processes_open_one_fresh_file_at_once() {
    for round in 0..3 {
        let db = common::TempDb::fresh();
        let data = db.dir.path().join("data");
        let file = data.join("handoff/handoff.db");
        // The barrier: every process waits on a shared flock of `gate`
        // while this test holds it exclusively, then all start together.
        let gate_path = db.dir.path().join("gate");
        let gate = std::fs::File::create(&gate_path).unwrap();
        gate.lock().unwrap();
        let children: Vec<_> = (0..N)
            .map(|_| {
                Command::new("flock")
                    .arg("-s")
                    .arg(&gate_path)
                    .arg(env!("CARGO_BIN_EXE_handoff"))
                    .args(["--json", "questions"])
                    .env_remove("HANDOFF_DB")
                    .env_remove("HANDOFF_CONFIG")
                    .env("XDG_DATA_HOME", &data)
                    .env("HOME", db.dir.path())
                    .env_remove("HANDOFF_URL")
                    .env_remove("HANDOFF_TOKEN")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn flock handoff")
            })
            .collect();
        for c in &children {
            wait_blocked_on_gate(c.id());
        }
        assert!(!file.exists(), "nobody opened the file before the gate");
        gate.unlock().unwrap();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: a concurrent first open failed: {}",
                common::stderr(&out)
            );
            assert_eq!(
                common::json(&out),
                serde_json::json!({"questions": [], "next": null})
            );
        }
        assert!(file.exists(), "the racers shared the default location");
    }
}

/// The deterministic form of the race: another opener of the new file is
/// half-way through its own switch to WAL (it holds the write lock of the
/// still rollback-mode file) while sixteen processes start theirs. Each
/// reads the header, then must upgrade its read to a write: SQLite refuses
/// that upgrade at once, without its busy handler (waiting could deadlock),
/// so every process must retry until the other opener is done.
#[tokio::test]
async fn opens_retry_while_another_opener_holds_the_new_file() {
    let db = common::TempDb::fresh();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&db.path)
        .create_if_missing(true);
    let mut reader = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut reader)
        .await
        .unwrap();
    let mut children: Vec<Child> = (0..N)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_handoff"))
                .args(["--json", "questions"])
                .env("HANDOFF_DB", &db.path)
                .env_remove("HANDOFF_URL")
                .env_remove("HANDOFF_TOKEN")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn handoff")
        })
        .collect();
    // Hold the lock until every process has the file open (or gave up),
    // but never longer than a few seconds: on a loaded 2-core machine the
    // last of 16 processes may take that long just to start, and the first
    // ones are retrying all the while. A late one opens an unlocked file,
    // which is fine; the early ones are the race this test is about.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(4);
    for c in &mut children {
        wait_opened_or_exited(c, &db.path, until);
    }
    sqlx::query("COMMIT").execute(&mut reader).await.unwrap();
    reader.close().await.unwrap();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "an open racing another opener's WAL switch failed: {}",
            common::stderr(&out)
        );
    }
}

/// Wait until `child` has `db` open, has exited, or `until` passed.
fn wait_opened_or_exited(child: &mut Child, db: &Path, until: std::time::Instant) {
    let db = db.canonicalize().unwrap();
    loop {
        if child.try_wait().unwrap().is_some() || std::time::Instant::now() >= until {
            return;
        }
        let fds = std::fs::read_dir(format!("/proc/{}/fd", child.id()));
        let open = fds
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == db));
        if open {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Wait until process `pid` is `flock` asleep on the gate.
fn wait_blocked_on_gate(pid: u32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Field 3 of stat, after the parenthesised command name.
        let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
        if cmd.starts_with(b"flock\0") && state == Some('S') {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} never blocked on the gate"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
