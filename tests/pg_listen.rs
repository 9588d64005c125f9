//! Cross-process wake-ups on PostgreSQL: `follow::listen`
//! nudges when any connection commits events (the `events_notify` trigger,
//! migrations/postgres/…530_notify.sql), never for a rollback, keeps doing
//! so after its connection is killed, and its fallback poll catches a commit
//! nobody announced. On a real throw-away server (tests/common/postgres.rs).
//!
//! Unless a test is about the poll, the listener polls once an hour, so
//! every nudge seen here came from a notification or a (re)connect. No
//! figure is asserted: waits are generous, and "no nudge" is checked over a
//! short window followed by a real commit that must nudge.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::postgres::PgDb;
use handoff::follow::listen::listen_every;
use sqlx::Connection;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Long enough for anything that does happen on a loaded machine.
const GENEROUS: Duration = Duration::from_secs(30);
/// How long "nothing happens" is watched for.
const QUIET: Duration = Duration::from_millis(300);
/// A fallback poll that never comes during a test.
const NO_POLL: Duration = Duration::from_secs(3600);

/// An event with the real column list, as the store appends them.
const APPEND: &str = "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
     VALUES (1, 'question.answered', 'question', $1, 'test', 'chat', 'proj', 'sess', '{}')";

/// A migrated database and a listener on it, started and listening.
struct Listening {
    db: PgDb,
    nudge: Arc<Notify>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Listening {
    /// Start a listener polling every `every`, and wait for its first
    /// nudge: the one it gives once LISTEN is in place.
    async fn start(every: Duration) -> Listening {
        let db = PgDb::new().await;
        let pool = pool(&db).await;
        common::engines::PG_MIGRATOR
            .run(&pool)
            .await
            .expect("apply migrations/postgres");
        let nudge = Arc::new(Notify::new());
        let cancel = CancellationToken::new();
        let mut first = Box::pin(nudge.notified());
        first.as_mut().enable();
        let task = tokio::spawn(listen_every(pool, nudge.clone(), cancel.clone(), every));
        nudged(first, "the listener's first nudge, once listening").await;
        Listening {
            db,
            nudge,
            cancel,
            task,
        }
    }

    /// A nudge to come, registered now: nothing from here on is missed.
    fn next(&self) -> std::pin::Pin<Box<Notified<'_>>> {
        let mut n = Box::pin(self.nudge.notified());
        n.as_mut().enable();
        n
    }

    /// Stop the listener; it must end.
    async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(GENEROUS, self.task)
            .await
            .expect("the listener ended after cancel")
            .expect("the listener did not panic");
    }
}

async fn pool(db: &PgDb) -> PgPool {
    PgPoolOptions::new()
        .max_connections(2)
        .connect(&db.url)
        .await
        .expect("connect postgres")
}

async fn nudged(n: std::pin::Pin<Box<Notified<'_>>>, what: &str) {
    tokio::time::timeout(GENEROUS, n)
        .await
        .unwrap_or_else(|_| panic!("no nudge within {GENEROUS:?}: {what}"));
}

async fn not_nudged(n: &mut std::pin::Pin<Box<Notified<'_>>>, what: &str) {
    assert!(
        tokio::time::timeout(QUIET, n.as_mut()).await.is_err(),
        "nudged: {what}"
    );
}

async fn append(conn: &mut PgConnection, id: &str) {
    sqlx::query(APPEND)
        .bind(id)
        .execute(conn)
        .await
        .expect("append an event");
}

/// The backend pid of the listener's connection (its last statement was
/// its LISTEN), waiting for it to exist.
async fn listener_pid(conn: &mut PgConnection, not: Option<i32>) -> i32 {
    for _ in 0..3000 {
        let pid: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
             WHERE datname = current_database() AND query LIKE 'LISTEN %'
               AND pid <> pg_backend_pid() AND pid IS DISTINCT FROM $1",
        )
        .bind(not)
        .fetch_optional(&mut *conn)
        .await
        .expect("pg_stat_activity");
        if let Some(pid) = pid {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no listening session (other than {not:?}) in pg_stat_activity");
}

/// (a) A commit on another connection nudges the listener.
#[tokio::test]
async fn a_commit_on_another_connection_nudges_the_listener() {
    let l = Listening::start(NO_POLL).await;
    let mut writer = l.db.connect().await;
    for i in 0..3 {
        let n = l.next();
        append(&mut writer, &format!("q{i}")).await;
        nudged(n, "after a committed event").await;
    }
    // Several events in one transaction, several statements: nudged too.
    let n = l.next();
    let mut tx = writer.begin().await.expect("begin");
    append(&mut tx, "q3").await;
    append(&mut tx, "q4").await;
    tx.commit().await.expect("commit");
    nudged(n, "after a transaction of two events").await;
    l.stop().await;
}

/// (b) A rolled-back insert, and an INSERT that inserted nothing, nudge no
/// one; the next real commit still does.
#[tokio::test]
async fn a_rolled_back_insert_does_not_nudge() {
    let l = Listening::start(NO_POLL).await;
    let mut writer = l.db.connect().await;
    let mut n = l.next();
    let mut tx = writer.begin().await.expect("begin");
    append(&mut tx, "gone").await;
    not_nudged(&mut n, "an event not committed yet").await;
    tx.rollback().await.expect("rollback");
    not_nudged(&mut n, "an event rolled back").await;
    sqlx::query(
        "INSERT INTO events (at, type, entity_kind, entity_id) SELECT 1, 'x', 'x', 'x' WHERE false",
    )
    .execute(&mut writer)
    .await
    .expect("insert nothing");
    not_nudged(&mut n, "an INSERT of no rows").await;
    append(&mut writer, "kept").await;
    nudged(n, "the real commit after the rollback").await;
    l.stop().await;
}

/// (c) After `pg_terminate_backend` of the listener's connection it
/// connects again, nudges once it listens again (with no commit to cause
/// it), and a commit made after that nudges as before.
#[tokio::test]
async fn a_killed_listening_connection_reconnects_and_nudges() {
    let l = Listening::start(NO_POLL).await;
    let mut admin = l.db.connect().await;
    let mut writer = l.db.connect().await;
    let mut pid = listener_pid(&mut admin, None).await;
    for round in 0..2 {
        let old = pid;
        let n = l.next();
        let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(old)
            .fetch_one(&mut admin)
            .await
            .expect("pg_terminate_backend");
        assert!(killed, "terminated the listener's session {old}");
        nudged(n, "the nudge after reconnecting (nothing committed)").await;
        pid = listener_pid(&mut admin, Some(old)).await;
        assert_ne!(pid, old, "round {round}: a new session listens");
        let n = l.next();
        append(&mut writer, &format!("after-kill-{round}")).await;
        nudged(n, "a commit after the reconnect").await;
    }
    l.stop().await;
}

/// (d) 8 writers × 50 committed events on their own connections; a
/// follower that reads `seq > cursor` only when nudged (no poll of its
/// own) ends having seen every seq exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_wake_a_follower_that_sees_every_seq_once() {
    const WRITERS: usize = 8;
    const EACH: usize = 50;
    let l = Listening::start(NO_POLL).await;
    let mut reader = l.db.connect().await;
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let mut conn = l.db.connect().await;
        writers.push(tokio::spawn(async move {
            for i in 0..EACH {
                append(&mut conn, &format!("w{w}-{i}")).await;
                if i % 7 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    let total = (WRITERS * EACH) as i64;
    let (mut cursor, mut seen, mut wakes) = (0i64, Vec::new(), 0u32);
    while cursor < total {
        // Registered before reading: a commit after the read nudges it.
        let n = l.next();
        let batch: Vec<i64> =
            sqlx::query_scalar("SELECT seq FROM events WHERE seq > $1 ORDER BY seq")
                .bind(cursor)
                .fetch_all(&mut reader)
                .await
                .expect("read the log");
        if let Some(last) = batch.last() {
            cursor = *last;
        }
        seen.extend(batch);
        if cursor < total {
            nudged(n, &format!("more events after seq {cursor}")).await;
            wakes += 1;
        }
    }
    for w in writers {
        w.await.expect("writer");
    }
    let expected: Vec<i64> = (1..=total).collect();
    assert_eq!(seen, expected, "every seq exactly once, in order");
    assert_eq!(
        seen.iter().collect::<BTreeSet<_>>().len(),
        seen.len(),
        "nothing twice"
    );
    assert!(wakes >= 1, "the follower was woken by the listener");
    l.stop().await;
}

/// (e) A commit that notifies no one (the trigger off) is still seen, by
/// the fallback poll, which otherwise stays quiet.
#[tokio::test]
async fn the_fallback_poll_catches_an_unannounced_commit() {
    let l = Listening::start(Duration::from_millis(100)).await;
    let mut writer = l.db.connect().await;
    sqlx::query("ALTER TABLE events DISABLE TRIGGER events_notify")
        .execute(&mut writer)
        .await
        .expect("disable the trigger");
    let n = l.next();
    append(&mut writer, "silent").await;
    nudged(n, "the fallback poll after an unannounced commit").await;
    // No new event: the poll stays quiet (it nudges on a change only).
    let mut n = l.next();
    not_nudged(&mut n, "a poll that found nothing new").await;
    sqlx::query("ALTER TABLE events ENABLE TRIGGER events_notify")
        .execute(&mut writer)
        .await
        .expect("enable the trigger");
    append(&mut writer, "loud").await;
    nudged(n, "a notified commit").await;
    l.stop().await;
}

/// A listener whose server cannot be reached keeps trying quietly and
/// still ends at cancel.
#[tokio::test]
async fn a_listener_without_a_server_ends_at_cancel() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!(
        "postgres://postgres@localhost/none?host={}",
        dir.path().display()
    );
    let pool = PgPoolOptions::new()
        .acquire_timeout(Duration::from_secs(1))
        .connect_lazy(&url)
        .expect("a lazy pool");
    let nudge = Arc::new(Notify::new());
    let cancel = CancellationToken::new();
    let task = tokio::spawn(listen_every(
        pool,
        nudge.clone(),
        cancel.clone(),
        Duration::from_millis(50),
    ));
    let mut n = Box::pin(nudge.notified());
    n.as_mut().enable();
    assert!(
        tokio::time::timeout(QUIET, n.as_mut()).await.is_err(),
        "no nudge without a server"
    );
    assert!(!task.is_finished(), "still trying");
    cancel.cancel();
    tokio::time::timeout(GENEROUS, task)
        .await
        .expect("ended after cancel")
        .expect("no panic");
}
