//! Request ids: a call repeated under the same request
//! id — the CLI retrying on the file a call whose answer the daemon never
//! sent — gets the first attempt's outcome and writes nothing again. The
//! store remembers each write's value in that write's own transaction.

mod common;

use common::engine::Db;
use common::{TempDb, count, new_action};
use handoff::store::actions::{Actor, ApproveOutcome, RejectOutcome};
use handoff::store::request;
use handoff::store::{Channel, questions::ReplyKind};

fn bob() -> Actor<'static> {
    Actor {
        name: "bob",
        channel: Channel::Cli,
    }
}

#[tokio::test]
async fn a_repeated_call_replays_its_first_outcome_and_writes_nothing_twice() {
    let db = TempDb::new();
    let store = db.open().await;
    let new = new_action("deploy", r#"{"v":1}"#);

    // Propose twice under one id: one action, the same one both times.
    let first = request::scope("p1".into(), store.propose(&new))
        .await
        .unwrap();
    let again = request::scope("p1".into(), store.propose(&new))
        .await
        .unwrap();
    assert_eq!(first.action.id, again.action.id);
    assert_eq!(count(&store, "actions").await, 1);
    let id = first.action.id;
    let events = count(&store, "events").await;

    // Approve twice under one id: "approved" both times, one approval row,
    // no new event the second time.
    let won = request::scope("a1".into(), store.approve(&id, bob(), None))
        .await
        .unwrap();
    assert!(matches!(won, ApproveOutcome::Approved { .. }), "{won:?}");
    let events_after = count(&store, "events").await;
    assert!(events_after > events);
    let replayed = request::scope("a1".into(), store.approve(&id, bob(), None))
        .await
        .unwrap();
    assert!(
        matches!(replayed, ApproveOutcome::Approved { .. }),
        "the repeat answers as the first attempt did: {replayed:?}"
    );
    assert_eq!(count(&store, "action_approvals").await, 1);
    assert_eq!(count(&store, "events").await, events_after);

    // Another id is another call: refused as a second approval by bob.
    let other = request::scope("a2".into(), store.approve(&id, bob(), None))
        .await
        .unwrap();
    assert!(
        matches!(other, ApproveOutcome::AlreadyDecided { .. }),
        "{other:?}"
    );
    // And a call without an id is never replayed.
    let rejected = store.reject(&id, bob(), "changed my mind").await.unwrap();
    assert!(
        matches!(rejected, RejectOutcome::AlreadyDecided { .. }),
        "{rejected:?}"
    );
}

async fn a_repeated_reply_is_one_reply(db: Db) {
    let store = db.open().await;
    let q = common::ask(&store, "Ship it?").await;
    let reply = common::reply_of(ReplyKind::Answer, "yes", "alice");
    for _ in 0..3 {
        request::scope("r1".into(), store.reply_inbox(&q.id, &reply))
            .await
            .unwrap()
            .expect("the Inbox reply is taken");
    }
    assert_eq!(count(&store, "question_replies").await, 1);
    // Forgetting keeps what is younger than a day.
    assert_eq!(store.forget_requests().await.unwrap(), 0);
    assert!(count(&store, "requests").await >= 1);
}

// Replies and request ids run on both engines; the actions above do not yet.
both_engines!(a_repeated_reply_is_one_reply);
