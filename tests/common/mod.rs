//! Shared test harness: temp-dir databases, a manual clock, and the real
//! `handoff` binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use handoff::clock::ManualClock;
use handoff::store::Store;

/// A temporary directory holding one database file; removed on drop.
pub struct TempDb {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TempDb {
    /// A temp dir with a created database file in it, as `handoff init`
    /// leaves it: commands refuse a named database (`--db`, `HANDOFF_DB`)
    /// that does not exist, so a test's file must exist before it runs one.
    pub fn new() -> Self {
        let db = TempDb::fresh();
        create_db(&db.path);
        db
    }

    /// A temp dir and the path of a database file not created yet, for
    /// tests of creating and opening files.
    pub fn fresh() -> Self {
        let dir = tempfile::tempdir().expect("create temp dir");
        let path = dir.path().join("handoff.db");
        TempDb { dir, path }
    }

    /// Open a store on this file with the system clock.
    pub async fn open(&self) -> Store {
        Store::open(&self.path).await.expect("open store")
    }

    /// Open a store on this file with a manual clock standing at `ms`.
    pub async fn open_manual(&self, ms: i64) -> (Store, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(ms));
        let store = Store::open_with_clock(&self.path, clock.clone())
            .await
            .expect("open store");
        (store, clock)
    }

    /// Run the real `handoff` binary against this database.
    pub fn cli(&self, args: &[&str]) -> Output {
        cli_at(&self.path, args)
    }
}

/// Create the database at `path` (schema applied, pool closed). On its own
/// thread and runtime, so sync and async tests alike can call it.
pub fn create_db(path: &Path) {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async {
                Store::open(&path)
                    .await
                    .expect("create database")
                    .close()
                    .await;
            });
    })
    .join()
    .expect("create database");
}

/// Run the real `handoff` binary with `HANDOFF_DB=db`.
pub fn cli_at(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(args)
        .env("HANDOFF_DB", db)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .output()
        .expect("run handoff")
}

/// Undoes `chattr +i` on drop, even when the test fails, so the temp dir
/// can be removed.
pub struct Immutable(PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// Make `path` unwritable for this process: mode 0444, and, for root (which
/// ignores modes), `chattr +i`. Where neither holds (root without the
/// `LINUX_IMMUTABLE` capability, a filesystem without the attribute, no
/// `chattr`), the calling test fails saying what it needs: a test is never
/// skipped.
pub fn make_read_only(path: &Path) -> Immutable {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let guard = Immutable(path.to_path_buf());
    if writable(path) {
        let tried = Command::new("chattr").arg("+i").arg(path).output();
        let why = match &tried {
            Ok(o) if o.status.success() && !writable(path) => return guard,
            Ok(o) if o.status.success() => {
                "`chattr +i` succeeded but the file still opens for writing".to_string()
            }
            Ok(o) => format!(
                "`chattr +i` failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("`chattr` could not run ({e}): install e2fsprogs"),
        };
        panic!(
            "cannot make {} read-only for this test: it opens for writing at mode 0444 (root ignores modes), and {why}. \
             Run the tests as a user other than root, or as root with the CAP_LINUX_IMMUTABLE capability \
             (e.g. `docker run --cap-add LINUX_IMMUTABLE`) and TMPDIR on a filesystem that keeps the immutable attribute (ext4, xfs, btrfs)",
            path.display()
        );
    }
    guard
}

/// Whether this process can open `path` for writing.
fn writable(path: &Path) -> bool {
    std::fs::OpenOptions::new().append(true).open(path).is_ok()
}

/// stdout of a command as a string.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr of a command as a string.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parse stdout as JSON, panicking with both streams on failure.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); status {:?}\nstdout: {}\nstderr: {}",
            o.status,
            stdout(o),
            stderr(o)
        )
    })
}

/// Count rows of `table` (for "nothing was written" checks).
pub async fn count(store: &Store, table: &str) -> i64 {
    store.count_rows(table).await.expect("count rows")
}
pub mod calls;
pub mod chat_msg;
pub mod daemon;
pub mod engine;
pub mod engines;
pub mod fake_slack;
pub mod fake_telegram;
pub mod hook;
pub mod in_process;
pub mod postgres;

// ---------------------------------------------------------------------------
// Questions helpers (added by the questions work).

use handoff::store::questions::{NewQuestion, NewReply, Question, ReplyKind};

/// Flag a plain question in project `p`, session `s`.
pub async fn ask(store: &Store, title: &str) -> Question {
    store
        .flag(&NewQuestion {
            project: "p".into(),
            agent: "agent-1".into(),
            session: "s".into(),
            title: title.into(),
            ..Default::default()
        })
        .await
        .expect("flag")
        .question
}

/// A reply of `kind` with `text`, by `by`.
pub fn reply_of(kind: ReplyKind, text: &str, by: &str) -> NewReply {
    NewReply {
        text: text.into(),
        kind,
        by: by.into(),
        ..Default::default()
    }
}

/// A plain answer with `text`.
pub fn answer(text: &str) -> NewReply {
    reply_of(ReplyKind::Answer, text, "")
}

// ---------------------------------------------------------------------------
// Actions helpers (branch `actions`).

/// A proposal of `kind` with JSON `args`, summary "do {kind}", proposer "agent".
pub fn new_action(kind: &str, args: &str) -> handoff::store::actions::NewAction {
    handoff::store::actions::NewAction {
        kind: kind.into(),
        summary: format!("do {kind}"),
        args: args.into(),
        proposer: "agent".into(),
        project: "proj".into(),
        session: "sess-1".into(),
        ..Default::default()
    }
}

/// A raw connection pool on the database file, for poking at tables the
/// store API does not expose (append-only checks).
pub async fn raw_pool(path: &Path) -> sqlx::SqlitePool {
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(std::time::Duration::from_secs(5));
    sqlx::SqlitePool::connect_with(opts)
        .await
        .expect("raw pool")
}

/// Wait until the daemon has recorded `message_id` in `chat_id` as one of its
/// items' messages. The fake shows a message the moment `sendMessage` arrives,
/// before the daemon has read the id from the response and written it down; a
/// reply sent in that gap (a race no human wins) would be "not one of my items".
pub async fn until_recorded(db: &TempDb, chat_id: i64, message_id: i64) {
    let store = db.open().await;
    let message_id = i32::try_from(message_id).expect("message id fits i32");
    wait_for(30, "the daemon to record its message", || {
        let store = &store;
        async move {
            store
                .chat_item_of_message(chat_id, message_id)
                .await
                .expect("read chat_messages")
        }
    })
    .await;
}

// ---------------------------------------------------------------------------
// Notify helpers (branch `notify`).

/// Poll `check` every 20 ms until it returns Some, or panic after `secs`
/// saying what was awaited.
pub async fn wait_for<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {secs}s waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Register session `id` (agent `agent-1`, project `p`) with `target`.
pub async fn session_with(
    store: &Store,
    id: &str,
    target: Option<handoff::store::sessions::WakeTarget>,
) {
    store
        .register_session(&handoff::store::sessions::NewSession {
            session_id: id.into(),
            agent: "agent-1".into(),
            project: "p".into(),
            cwd: "/tmp".into(),
            wake_target: target,
        })
        .await
        .expect("register session");
}

/// The notify worker running in this process.
pub struct Worker {
    tracker: tokio_util::task::TaskTracker,
    cancel: tokio_util::sync::CancellationToken,
}

impl Worker {
    /// Start it on `store` with config text and a schedule in ms.
    pub async fn start(store: &Store, config: &str, schedule_ms: &[u64]) -> Worker {
        let config =
            handoff::config::Config::parse(config, Path::new("test.toml")).expect("config");
        let tracker = tokio_util::task::TaskTracker::new();
        let cancel = tokio_util::sync::CancellationToken::new();
        let opts = handoff::notify::Options {
            schedule: schedule_ms
                .iter()
                .map(|m| std::time::Duration::from_millis(*m))
                .collect(),
            idle: std::time::Duration::from_secs(30),
            concurrency: 4,
        };
        // As in the daemon: writes to the file (the test's, through its own
        // store) nudge the worker's follower through the database watcher.
        let nudge = Arc::new(tokio::sync::Notify::new());
        tracker.spawn(handoff::follow::watch(
            store.clone(),
            nudge.clone(),
            cancel.clone(),
        ));
        handoff::notify::spawn(
            store.clone(),
            Arc::new(config),
            opts,
            nudge,
            &tracker,
            cancel.clone(),
        )
        .await
        .expect("spawn notify worker");
        Worker { tracker, cancel }
    }

    /// Cancel and wait for it.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

// ---------------------------------------------------------------------------
// Web Inbox helpers (branch `inbox`).

pub mod webdriver;

/// Property-test cases: `$PROPTEST_CASES` when set (CI's long run sets it
/// higher), else `default`, so the fast run stays fast without pinning it.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}
