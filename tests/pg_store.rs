//! The Store on PostgreSQL itself: opening a database migrates
//! it and refuses a newer one, the parts not ported yet say so instead of
//! panicking or writing, a deadlock PostgreSQL breaks by rolling the
//! store's transaction back is retried, a request id replays there as on
//! SQLite, and the same writes leave the same rows (events, payload text,
//! reply history) on both engines. On a real throw-away server
//! (tests/common/postgres.rs).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::engine::{Db, Engine};
use common::postgres::PgDb;
use common::{answer, ask, count, reply_of};
use handoff::clock::{Clock, ManualClock, SystemClock};
use handoff::store::questions::{Channel, Choice, NewQuestion, QuestionOption, ReplyKind};
use handoff::store::{Error, Store, request};
use sqlx::Connection;

async fn open(db: &PgDb) -> Store {
    Store::open_postgres(&db.url, Arc::new(SystemClock))
        .await
        .expect("open the PostgreSQL store")
}

#[tokio::test]
async fn opening_migrates_a_fresh_database_and_again_finds_it_current() {
    let db = PgDb::new().await;
    let store = open(&db).await;
    assert_eq!(store.file(), None, "no file under a PostgreSQL store");
    assert_eq!(count(&store, "questions").await, 0);
    assert_eq!(store.last_event_seq().await.unwrap(), 0);
    let db = &db;
    let applied = |rows: i64| async move {
        let mut c = db.connect().await;
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success")
            .fetch_one(&mut c)
            .await
            .unwrap();
        assert_eq!(n, rows);
    };
    let ours = handoff::store::postgres::schema_version();
    assert!(ours > 0);
    let n = sqlx::migrate!("./migrations/postgres").iter().count() as i64;
    applied(n).await;
    // A second store (another daemon) opens the same database as it is.
    let other = open(db).await;
    applied(n).await;
    ask(&other, "Seen by both?").await;
    assert_eq!(count(&store, "questions").await, 1);
    // Its path is the URL, without a password to leak.
    assert!(store.path().to_string_lossy().starts_with("postgres://"));
}

#[tokio::test]
async fn a_database_from_a_newer_handoff_is_refused() {
    let db = PgDb::new().await;
    open(&db).await.close().await;
    let mut c = db.connect().await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (99991231000000, 'future', true, '\\x00', 0)",
    )
    .execute(&mut c)
    .await
    .unwrap();
    c.close().await.unwrap();
    let e = Store::open_postgres(&db.url, Arc::new(SystemClock))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NewerSchema {
                found: 99991231000000,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("newer handoff"), "{e}");
}

#[tokio::test]
async fn an_unreachable_server_is_named_without_its_password() {
    // Port 1 on loopback: refused at once.
    let e = Store::open_postgres(
        "postgres://handoff:s3cret@127.0.0.1:1/handoff",
        Arc::new(SystemClock),
    )
    .await
    .unwrap_err();
    let shown = e.to_string();
    assert!(matches!(e, Error::Open { .. }), "{e:?}");
    assert!(
        shown.contains("127.0.0.1:1") && !shown.contains("s3cret"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_backup_of_a_postgres_store_says_to_use_pg_dump_and_writes_nothing() {
    let db = PgDb::new().await;
    let store = open(&db).await;
    let dir = tempfile::tempdir().unwrap();
    // A backup copies an SQLite file: SQLite-only by nature, and says what
    // to use instead.
    let e = store
        .backup_to(&dir.path().join("copy.db"), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("pg_dump") && !e.contains("yet"), "{e}");
    assert!(!dir.path().join("copy.db").exists());
    for table in ["actions", "agent_sessions", "api_tokens", "events"] {
        assert_eq!(count(&store, table).await, 0, "{table}: nothing written");
    }
    // Every other part of the store runs there, the benchmarks' seeding
    // included (tests/events_log.rs): nothing is left to port.
    assert!(handoff::store::NOT_ON_POSTGRES_YET.is_empty());
}

/// The store's transaction is the one PostgreSQL picks to break a
/// deadlock (it checks for one 3 s into its wait, the other side after
/// 60 s): it is rolled back with SQLSTATE 40P01, and the store runs it
/// again, whole, once the other side is done. Without the retry the
/// reply would come back as that error.
#[tokio::test]
async fn a_write_rolled_back_to_break_a_deadlock_is_run_again() {
    let db = PgDb::new().await;
    // Before the store connects: its sessions take the database's setting.
    let mut other = db.connect().await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{}\" SET deadlock_timeout = '3s'",
        db.name
    )))
    .execute(&mut other)
    .await
    .unwrap();
    let store = open(&db).await;
    let q = ask(&store, "Which DB?").await;
    sqlx::query("SET deadlock_timeout = '60s'")
        .execute(&mut other)
        .await
        .unwrap();
    let mut tx = other.begin().await.unwrap();
    // Hold the event counter: the store's write will wait for it…
    sqlx::query("UPDATE events_seq SET seq = seq")
        .execute(&mut *tx)
        .await
        .unwrap();
    let writer = {
        let (store, id) = (store.clone(), q.id.clone());
        tokio::spawn(async move { store.reply_inbox(&id, &answer("sqlite")).await })
    };
    // …after it locked the question's row (its UPDATE came first; the
    // trigger appending its event waits on the counter).
    let mut watch = db.connect().await;
    for _ in 0.. {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut watch)
        .await
        .unwrap();
        if waiting == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Now wait for the row it holds: a cycle, broken by failing the store's.
    sqlx::query("UPDATE questions SET title = title WHERE id = $1")
        .bind(&q.id)
        .execute(&mut *tx)
        .await
        .expect("the store's transaction is the victim, not this one");
    tx.commit().await.unwrap();
    let replied = writer.await.unwrap().expect("retried, not an error");
    let replied = replied.expect("the reply landed");
    assert_eq!(replied.reply_seq, 1);
    assert_eq!(store.question_replies(&q.id).await.unwrap().len(), 1);
    let answered = store
        .events_for("question", &q.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "question.answered")
        .count();
    assert_eq!(answered, 1, "the broken attempt left nothing");
}

#[tokio::test]
async fn a_request_id_replays_its_writes_on_postgres_too() {
    let db = PgDb::new().await;
    let (a, b) = (open(&db).await, open(&db).await);
    let nq = NewQuestion {
        project: "p".into(),
        title: "Ship it?".into(),
        ..Default::default()
    };
    let call = |s: Store, nq: NewQuestion| async move {
        let flagged = s.flag(&nq).await.unwrap();
        let replied = s
            .reply_inbox(&flagged.question.id, &answer("yes"))
            .await
            .unwrap()
            .unwrap();
        (flagged, replied)
    };
    let first = request::scope("r1".into(), call(a.clone(), nq.clone())).await;
    // The same call again (its answer was lost), through another pool.
    let again = request::scope("r1".into(), call(b.clone(), nq.clone())).await;
    assert_eq!(again, first, "replayed, not written again");
    assert_eq!(count(&a, "questions").await, 1);
    assert_eq!(count(&a, "question_replies").await, 1);
    assert_eq!(a.last_event_seq().await.unwrap(), 2);
    // Another id is another call.
    request::scope("r2".into(), call(b, nq)).await;
    assert_eq!(count(&a, "questions").await, 2);
}

/// One script of question writes, every door and refusal, at fixed times.
async fn script(s: &Store, clock: &ManualClock) {
    let nq = NewQuestion {
        project: "proj".into(),
        agent: "claude".into(),
        session: "sess-1".into(),
        key: Some("k".into()),
        title: "Which \"DB\"? (é, ✓)".into(),
        options: vec![
            QuestionOption {
                label: "sqlite".into(),
                recommended: true,
            },
            QuestionOption {
                label: "pg".into(),
                recommended: false,
            },
        ],
        ..Default::default()
    };
    let q = s.flag(&nq).await.unwrap().question;
    clock.advance(1);
    s.flag(&nq).await.unwrap();
    clock.advance(1);
    s.snooze_question(&q.id, clock.now_ms() + 60_000, "alice", Channel::Inbox)
        .await
        .unwrap()
        .unwrap();
    let mut r = reply_of(ReplyKind::Answer, "sqlite\n\tv3 \u{1} </é>", "alice");
    r.context = Some("small \\ data".into());
    s.reply_inbox(&q.id, &r).await.unwrap().unwrap();
    s.reply_inbox(&q.id, &answer("")).await.unwrap().unwrap();
    clock.advance(1);
    s.reply_chat(&q.id, &reply_of(ReplyKind::Answer, "pg", "bob"))
        .await
        .unwrap()
        .unwrap();
    s.reply_chat(&q.id, &answer("refused"))
        .await
        .unwrap()
        .unwrap_err();
    s.answer_agent(&q.id, &answer("refused, handed the chat answer"))
        .await
        .unwrap()
        .unwrap_err();
    s.answer_agent(&q.id, &reply_of(ReplyKind::Decline, "", "claude"))
        .await
        .unwrap()
        .unwrap();
    s.resolve_question(&q.id, "pg 16", "claude")
        .await
        .unwrap()
        .unwrap();
    let card = s.flag_card(&nq, Choice::Many).await.unwrap().question;
    s.question_toggle(&card.id, 1, 1, "@ann", Channel::Chat)
        .await
        .unwrap()
        .unwrap();
    s.question_toggle(&card.id, 0, 1, "@bob", Channel::Chat)
        .await
        .unwrap()
        .unwrap_err();
    s.reply_inbox(&card.id, &answer("pg"))
        .await
        .unwrap()
        .unwrap();
    s.pending(None, Some("sess-1"), false, "claude")
        .await
        .unwrap();
    s.dismiss_question(&card.id, Some("done"), "alice", Channel::Chat)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn the_same_writes_leave_the_same_rows_on_both_engines() {
    let mut seen = Vec::new();
    for engine in [Engine::Sqlite, Engine::Postgres] {
        let db = Db::new(engine).await;
        let (s, clock) = db.open_manual(1_800_000_000_000).await;
        script(&s, &clock).await;
        let events = db
            .rows(
                "SELECT CAST(seq AS TEXT), CAST(at AS TEXT), type, entity_kind, actor, channel,
                        project, session, payload
                 FROM events ORDER BY events.seq",
            )
            .await;
        let history = db
            .rows(
                "SELECT CAST(reply_seq AS TEXT), action, reply, reply_context, kind, source, \"by\",
                        CAST(revision AS TEXT), CAST(at AS TEXT)
                 FROM question_replies ORDER BY seq",
            )
            .await;
        let questions = db
            .rows(
                "SELECT title, options, status, outcome, reply, reply_kind, reply_source,
                        replied_by, CAST(reply_seen_at AS TEXT), CAST(reply_seq AS TEXT),
                        CAST(revision AS TEXT), choice, CAST(picked AS TEXT)
                 FROM questions ORDER BY created_at, title",
            )
            .await;
        assert_eq!(events.len(), 14, "{events:?}");
        seen.push((events, history, questions));
    }
    let (lite, pg) = (&seen[0], &seen[1]);
    for (i, (a, b)) in lite.0.iter().zip(&pg.0).enumerate() {
        assert_eq!(a, b, "event {i}: sqlite vs postgres");
    }
    assert_eq!(lite.0.len(), pg.0.len(), "as many events");
    assert_eq!(lite.1, pg.1, "reply history: sqlite vs postgres");
    assert_eq!(lite.2, pg.2, "questions: sqlite vs postgres");
}
