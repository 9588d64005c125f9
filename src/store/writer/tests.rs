//! The write turn's own tests: group commit, savepoint calls, panics and
//! errors inside one operation.

use std::sync::atomic::Ordering;

use super::*;
use crate::store::actions::{Actor, ApproveOutcome, NewAction, RejectOutcome};

fn proposal(i: usize) -> NewAction {
    NewAction {
        kind: "test".into(),
        summary: format!("action {i}"),
        args: format!(r#"{{"i":{i}}}"#),
        proposer: "agent".into(),
        ..Default::default()
    }
}

/// What one of the 64 queued writers asked for, and got.
#[derive(Debug, PartialEq)]
enum Got {
    Approved,
    Refused,
    Rejected,
    Proposed,
    Failed,
}

/// The most writes the store's write turn committed in one batch so far.
fn largest_batch(store: &Store) -> usize {
    store
        .lite()
        .unwrap()
        .writer
        .largest_batch
        .load(Ordering::Relaxed)
}

/// Begin the turn's transaction and append a bare event of type `kind`
/// in it (which must not survive when the write is undone).
async fn begun_with_event(
    turn: &mut super::turn::Turn,
    kind: &str,
) -> std::result::Result<(), Error> {
    turn.begin().await?;
    sqlx::query(
        "INSERT INTO events (at, type, entity_kind, entity_id) VALUES (1, $1, 'test', 'x')",
    )
    .bind(kind)
    .execute(turn.conn())
    .await?;
    Ok(())
}

/// A raw write that inserts an event and then fails or panics: its
/// event must not survive, and nobody else's write may be lost.
async fn broken(store: &Store, panic: bool) -> std::result::Result<(), Error> {
    store
        .write_at(Location::caller(), move |turn| {
            Box::pin(async move {
                begun_with_event(turn, "broken").await?;
                if panic {
                    panic!("a write that panics");
                }
                Err::<(), Error>(Error::Invalid("a write that fails".into()))
            })
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_writers_share_one_commit_and_each_gets_its_own_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("h.db")).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..24 {
        ids.push(store.propose(&proposal(i)).await.unwrap().action.id);
    }
    let before: i64 = store.count_rows("events").await.unwrap();

    // Hold the turn so all 64 queue up, then let them go as one batch.
    let hold = store.write_lock().unwrap().clone().lock_owned().await;
    let mut tasks = Vec::new();
    for k in 0..64usize {
        let (s, ids) = (store.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let me = format!("person{k}");
            let got = match k % 8 {
                // Two approvers race for each of actions 0..16: one wins.
                0..=3 => match s
                    .approve(&ids[((k / 8) * 4 + k % 8) % 16], Actor::cli(&me), None)
                    .await
                {
                    Ok(ApproveOutcome::Approved { .. }) => Got::Approved,
                    Ok(_) => Got::Refused,
                    Err(e) => panic!("{e}"),
                },
                4 | 5 => match s
                    .reject(
                        &ids[16 + ((k / 8) * 2 + k % 8 - 4) % 8],
                        Actor::cli(&me),
                        "no",
                    )
                    .await
                {
                    Ok(RejectOutcome::Rejected { .. }) => Got::Rejected,
                    Ok(_) => Got::Refused,
                    Err(e) => panic!("{e}"),
                },
                6 => match s.propose(&proposal(100 + k)).await {
                    Ok(p) if p.created => Got::Proposed,
                    other => panic!("{other:?}"),
                },
                _ => match broken(&s, k % 16 == 7).await {
                    Ok(()) => panic!("a broken write succeeded"),
                    Err(_) => Got::Failed,
                },
            };
            (k, got)
        }));
    }
    while store.lite().unwrap().writer.queued() < 64 {
        tokio::task::yield_now().await;
    }
    drop(hold);
    let mut got = Vec::new();
    for t in tasks {
        got.push(t.await.unwrap());
    }
    assert_eq!(largest_batch(&store), 64);

    let count = |g: Got| got.iter().filter(|(_, x)| *x == g).count();
    // 32 approvers on 16 actions: exactly one approval each.
    assert_eq!(count(Got::Approved), 16);
    // 16 rejecters on 8 actions: exactly one rejection each.
    assert_eq!(count(Got::Rejected), 8);
    assert_eq!(count(Got::Refused), 16 + 8);
    assert_eq!(count(Got::Proposed), 8);
    assert_eq!(count(Got::Failed), 8);

    // The log holds exactly the kept writes, with no gap, and no
    // event of the failed or panicking writes.
    let evs = store.events_after(0, 1000).await.unwrap();
    let seqs: Vec<i64> = evs.iter().map(|e| e.seq).collect();
    let want: Vec<i64> = (1..=seqs.len() as i64).collect();
    assert_eq!(seqs, want, "the event log has no gaps");
    assert!(evs.iter().all(|e| e.kind != "broken"));
    assert_eq!(evs.len() as i64, before + 16 + 8 + 8);
    assert_eq!(store.count_rows("action_approvals").await.unwrap(), 16);
}

#[tokio::test]
async fn a_lone_writer_runs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("h.db")).await.unwrap();
    store.propose(&proposal(1)).await.unwrap();
    assert!(broken(&store, false).await.is_err());
    assert_eq!(largest_batch(&store), 1);
    assert_eq!(store.count_rows("events").await.unwrap(), 1);
}

#[tokio::test]
async fn a_savepoint_call_that_fails_midway_leaves_nothing_and_no_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("h.db")).await.unwrap();
    let failed = store
        .write_at(Location::caller(), |turn| {
            Box::pin(async move {
                turn.savepoint_call(sqlx::query(
                    "SAVEPOINT one_call;
                     INSERT INTO events (at, type, entity_kind, entity_id) VALUES (1, 'half', 'test', 'x');
                     SELECT json('not json');
                     RELEASE one_call;",
                ))
                .await
                .map(|_| ())
            })
        })
        .await;
    assert!(failed.is_err(), "malformed JSON fails the call");
    assert_eq!(store.count_rows("events").await.unwrap(), 0);
    // The writer's kept connection is in no transaction: its next write
    // commits, and another store on the file can write after it.
    store.propose(&proposal(1)).await.unwrap();
    let other = Store::open(&dir.path().join("h.db")).await.unwrap();
    other.propose(&proposal(2)).await.unwrap();
    assert_eq!(store.count_rows("events").await.unwrap(), 2);
}

#[tokio::test]
async fn a_caller_that_gives_up_mid_transaction_leaves_nothing_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("h.db")).await.unwrap();
    // Alone, inside its own transaction, then stuck: the caller gives up.
    let stuck = store.write_at(Location::caller(), |turn| {
        Box::pin(async move {
            begun_with_event(turn, "half").await?;
            std::future::pending::<()>().await;
            Ok::<(), Error>(())
        })
    });
    let gave_up = tokio::time::timeout(std::time::Duration::from_millis(200), stuck).await;
    assert!(gave_up.is_err(), "the stuck write never answers");
    // The next writers are not inside that transaction, and it is gone.
    store.propose(&proposal(1)).await.unwrap();
    let other = Store::open(&dir.path().join("h.db")).await.unwrap();
    other.propose(&proposal(2)).await.unwrap();
    assert_eq!(store.count_rows("events").await.unwrap(), 2);
    let kinds: Vec<String> = store
        .events_after(0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["action.proposed", "action.proposed"]);
}
