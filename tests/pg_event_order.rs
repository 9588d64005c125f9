//! The event log never skips on PostgreSQL: `events.seq`
//! is handed out in commit order (migrations/postgres/…510_event_order.sql),
//! so a follower reading `seq > cursor` sees every committed event once,
//! under many concurrent writers, where a plain sequence would let a late
//! commit slip behind its cursor.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::postgres::PgDb;
use sqlx::Connection;
use sqlx::postgres::PgConnection;

/// A fresh PostgreSQL database with migrations/postgres applied.
async fn migrated() -> PgDb {
    let db = PgDb::new().await;
    let mut conn = db.connect().await;
    common::engines::PG_MIGRATOR
        .run(&mut conn)
        .await
        .expect("apply migrations/postgres");
    db
}

const APPEND: &str =
    "INSERT INTO events (at, type, entity_kind, entity_id) VALUES (1, 'test', 'test', $1)";

/// (seq, entity_id) of the events above `cursor`, as a follower reads them.
async fn follow(conn: &mut PgConnection, table: &str, cursor: i64) -> Vec<(i64, String)> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT seq, entity_id FROM {table} WHERE seq > $1 ORDER BY seq"
    )))
    .bind(cursor)
    .fetch_all(conn)
    .await
    .expect("follow")
}

/// A small deterministic generator (splitmix64): each writer its own stream.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 16 writers on their own connections append events in transactions held
/// open for random short times, a quarter of them rolled back, while a
/// follower reads `seq > cursor`. The follower must see every committed
/// event exactly once, in seq order, and never a hole: the seqs it reads are
/// always cursor + 1, + 2, … (a hole would be a lower seq still to commit,
/// which it would then skip). Rolled-back events never appear.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_never_let_a_follower_skip_an_event() {
    let db = migrated().await;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..16u64 {
        let mut conn = db.connect().await;
        writers.push(tokio::spawn(async move {
            let mut rng = w + 1;
            let mut committed = Vec::new();
            for round in 0..25 {
                let mut tx = conn.begin().await.expect("begin");
                let rows = 1 + next(&mut rng) % 3;
                let ids: Vec<String> = (0..rows).map(|k| format!("{w}-{round}-{k}")).collect();
                for id in &ids {
                    tokio::time::sleep(Duration::from_micros(next(&mut rng) % 2000)).await;
                    sqlx::query(APPEND)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .expect("append");
                }
                tokio::time::sleep(Duration::from_micros(next(&mut rng) % 3000)).await;
                if next(&mut rng).is_multiple_of(4) {
                    tx.rollback().await.expect("rollback");
                } else {
                    tx.commit().await.expect("commit");
                    committed.extend(ids);
                }
            }
            committed
        }));
    }
    let follower = {
        let mut conn = db.connect().await;
        let done = done.clone();
        tokio::spawn(async move {
            let (mut cursor, mut seen, mut reads) = (0i64, Vec::new(), 0u64);
            loop {
                // Read `done` before reading: a read after every writer
                // finished that finds nothing is the end.
                let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                let batch = follow(&mut conn, "events", cursor).await;
                reads += 1;
                for (seq, id) in &batch {
                    assert_eq!(
                        *seq,
                        cursor + 1,
                        "a hole before {seq} after {cursor}: skipped"
                    );
                    cursor = *seq;
                    seen.push(id.clone());
                }
                if finished && batch.is_empty() {
                    return (seen, reads);
                }
            }
        })
    };
    let mut committed = Vec::new();
    for w in writers {
        committed.extend(w.await.expect("writer"));
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (seen, reads) = follower.await.expect("follower");

    let mut conn = db.connect().await;
    let all: Vec<String> = follow(&mut conn, "events", 0)
        .await
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert!(
        committed.len() >= 200,
        "enough committed events: {}",
        committed.len()
    );
    assert!(
        reads > 10,
        "the follower read while writers wrote ({reads} reads)"
    );
    assert_eq!(seen, all, "the follower saw exactly the log, in order");
    let seen_set: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(seen_set.len(), seen.len(), "no event seen twice");
    let committed_set: BTreeSet<&String> = committed.iter().collect();
    assert_eq!(
        seen_set, committed_set,
        "every committed event, and nothing rolled back"
    );
}

/// Wait until the session `pid` waits on a lock (its INSERT queued behind
/// another transaction).
async fn until_waiting_on_lock(conn: &mut PgConnection, pid: i32) {
    for _ in 0..3000 {
        let waiting: bool = sqlx::query_scalar(
            "SELECT COALESCE(bool_or(wait_event_type = 'Lock'), false)
             FROM pg_stat_activity WHERE pid = $1",
        )
        .bind(pid)
        .fetch_one(&mut *conn)
        .await
        .expect("pg_stat_activity");
        if waiting {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("session {pid} never waited on the event counter's lock");
}

/// Why the counter row: with a plain sequence a transaction holding seq 1
/// commits after seq 2 was read, and the follower skips it for good; with
/// events.seq the second writer waits for the first, takes the next seq
/// only once the first committed, and reuses a seq the first rolled back.
#[tokio::test]
async fn a_lower_seq_cannot_commit_after_a_follower_read_past_it() {
    let db = migrated().await;
    let (mut a, mut b, mut follower) = (db.connect().await, db.connect().await, db.connect().await);

    // A plain sequence skips.
    sqlx::query("CREATE TABLE plain (seq BIGSERIAL PRIMARY KEY, entity_id TEXT NOT NULL)")
        .execute(&mut a)
        .await
        .expect("create plain");
    let mut tx = a.begin().await.expect("begin");
    sqlx::query("INSERT INTO plain (entity_id) VALUES ('first')")
        .execute(&mut *tx)
        .await
        .expect("insert first");
    sqlx::query("INSERT INTO plain (entity_id) VALUES ('second')")
        .execute(&mut b)
        .await
        .expect("insert second");
    let read = follow(&mut follower, "plain", 0).await;
    assert_eq!(read, [(2, "second".to_string())]);
    tx.commit().await.expect("commit first");
    assert_eq!(
        follow(&mut follower, "plain", 2).await,
        [],
        "seq 1 is behind the cursor"
    );
    assert_eq!(
        follow(&mut follower, "plain", 0).await.len(),
        2,
        "yet seq 1 committed"
    );

    // events: the second writer waits, and its seq follows the first's commit.
    let b_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut b)
        .await
        .expect("pid");
    for (outcome, first_seq) in [("commit", Some(1)), ("rollback", None)] {
        let base = follow(&mut follower, "events", 0).await.len() as i64;
        let mut tx = a.begin().await.expect("begin");
        sqlx::query(APPEND)
            .bind("first")
            .execute(&mut *tx)
            .await
            .expect("append first");
        let second = tokio::spawn(async move {
            sqlx::query(APPEND)
                .bind("second")
                .execute(&mut b)
                .await
                .expect("append second");
            b
        });
        until_waiting_on_lock(&mut follower, b_pid).await;
        assert_eq!(
            follow(&mut follower, "events", base).await,
            [],
            "nothing visible yet"
        );
        match outcome {
            "commit" => tx.commit().await.expect("commit"),
            _ => tx.rollback().await.expect("rollback"),
        }
        b = second.await.expect("second writer");
        let mut expected = Vec::new();
        if let Some(seq) = first_seq {
            expected.push((base + seq, "first".to_string()));
        }
        expected.push((base + expected.len() as i64 + 1, "second".to_string()));
        assert_eq!(
            follow(&mut follower, "events", base).await,
            expected,
            "after {outcome}"
        );
    }
}
