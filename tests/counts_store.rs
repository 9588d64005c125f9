//! What `/metrics` and `handoff status` count, when the daemon's
//! housekeeping next has work, and forgetting old request ids, at the
//! store level on both engines. Counts of actions through their every
//! change: tests/project_isolation.rs (SQLite, until actions run on
//! PostgreSQL).

mod common;

use common::engine::Db;
use handoff::store::actions::Status;
use handoff::store::questions::NewQuestion;
use handoff::store::{Store, request};

async fn flag(store: &Store, project: &str, title: &str) {
    store
        .flag(&NewQuestion {
            project: project.into(),
            agent: "a".into(),
            // A session belongs to one project: each project its own.
            session: format!("s-{project}"),
            title: title.into(),
            ..Default::default()
        })
        .await
        .expect("flag");
}

async fn counts_are_per_project_and_the_overview_sums_them(db: Db) {
    let store = db.open().await;
    let empty = store.counts(None).await.unwrap();
    assert_eq!(empty.open_questions, 0);
    assert_eq!(empty.actions.len(), Status::ALL.len());
    assert!(empty.actions.iter().all(|(_, n)| *n == 0));
    flag(&store, "p1", "one").await;
    flag(&store, "p1", "two").await;
    flag(&store, "p2", "three").await;
    assert_eq!(store.counts(None).await.unwrap().open_questions, 3);
    assert_eq!(store.counts(Some("p1")).await.unwrap().open_questions, 2);
    assert_eq!(store.counts(Some("p3")).await.unwrap().open_questions, 0);
    let overview = store.overview().await.unwrap();
    assert_eq!(
        (
            overview.open_questions,
            overview.pending_actions,
            overview.blocked_rows,
            overview.live_sessions
        ),
        (3, 0, 0, 0)
    );
    assert_eq!(overview.last_seq, store.last_event_seq().await.unwrap());
    assert!(overview.last_seq >= 3);
}

/// Action counts are read from the actions themselves (an index-only
/// count, no counter rows), per project, and lazily expired actions
/// (still `pending` in their row) count as settled.
async fn action_counts_are_per_project(db: Db) {
    let (store, clock) = db.open_manual(10_000).await;
    assert_eq!(store.next_housekeeping_due().await.unwrap(), None);
    for (project, ttl) in [("p", None), ("p", None), ("p", Some(1_000)), ("q", None)] {
        let new = handoff::store::actions::NewAction {
            project: project.into(),
            session: format!("s-{project}"),
            ttl_ms: ttl,
            ..common::new_action("deploy", r#"{"a":1}"#)
        };
        store.propose(&new).await.unwrap();
    }
    let of = |c: &handoff::store::counts::Counts, s: Status| {
        c.actions.iter().find(|(st, _)| *st == s).unwrap().1
    };
    let all = store.counts(None).await.unwrap();
    assert_eq!(of(&all, Status::Pending), 4);
    assert_eq!(
        of(&store.counts(Some("p")).await.unwrap(), Status::Pending),
        3
    );
    assert_eq!(store.next_housekeeping_due().await.unwrap(), Some(11_000));
    clock.set(11_000);
    let p = store.counts(Some("p")).await.unwrap();
    assert_eq!((of(&p, Status::Pending), of(&p, Status::Expired)), (2, 1));
    assert_eq!(
        of(&store.counts(Some("q")).await.unwrap(), Status::Expired),
        0
    );
}

async fn old_request_ids_are_forgotten(db: Db) {
    let (store, clock) = db.open_manual(1_000_000).await;
    let q = common::ask(&store, "Ship it?").await;
    request::scope(
        "r1".into(),
        store.reply_inbox(&q.id, &common::answer("yes")),
    )
    .await
    .unwrap()
    .expect("taken");
    assert_eq!(
        store.forget_requests().await.unwrap(),
        0,
        "younger than a day"
    );
    clock.advance(25 * 3600 * 1000);
    assert!(store.forget_requests().await.unwrap() >= 1);
    assert_eq!(store.count_rows("requests").await.unwrap(), 0);
}

both_engines!(
    counts_are_per_project_and_the_overview_sums_them,
    action_counts_are_per_project,
    old_request_ids_are_forgotten,
);
