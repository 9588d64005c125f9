//! The chat bridge's records at the store level, on both engines: follower
//! cursors, one message record per (item, chat) from `sending` to `sent`,
//! dirty marks, waiting (held / quiet) pushes, pairing codes and refused
//! taps; races with two store handles (two pools, as two daemons). The
//! bridge itself against a fake Telegram: tests/chat_*.rs (SQLite files).

mod common;

use common::engine::Db;
use handoff::store::chat::Hold;

async fn a_cursor_only_moves_forward(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    assert_eq!(one.cursor("chat").await.unwrap(), 0);
    one.set_cursor("chat", 7).await.unwrap();
    two.set_cursor("chat", 5).await.unwrap();
    assert_eq!(two.cursor("chat").await.unwrap(), 7, "never rewound");
    two.set_cursor("chat", 9).await.unwrap();
    assert_eq!(one.cursor("chat").await.unwrap(), 9);
    assert_eq!(one.cursor("other").await.unwrap(), 0);
}

async fn a_push_goes_from_sending_to_sent_and_its_edits_are_marked(db: Db) {
    let (store, clock) = db.open_manual(1_000).await;
    assert!(
        store
            .chat_begin_send("question", "q1", -100, Some(3), "sending")
            .await
            .unwrap()
    );
    assert!(
        !store
            .chat_begin_send("question", "q1", -100, None, "sending")
            .await
            .unwrap(),
        "pushed once per chat"
    );
    assert!(
        store
            .chat_begin_send("question", "q1", 42, None, "sending")
            .await
            .unwrap()
    );
    let unsent = store.chat_unsent().await.unwrap();
    assert_eq!(unsent.len(), 2);
    assert_eq!(unsent[0].thread_id, Some(3));
    clock.advance(10);
    store
        .chat_sent("question", "q1", -100, 77, "sent", "h1", 1_005)
        .await
        .unwrap();
    let rec = store
        .chat_message("question", "q1", -100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (rec.status.as_str(), rec.message_id, rec.text_hash.as_str()),
        ("sent", Some(77), "h1")
    );
    assert_eq!(
        store.chat_item_of_message(-100, 77).await.unwrap(),
        Some(("question".to_string(), "q1".to_string()))
    );
    assert_eq!(store.chat_item_of_message(-100, 78).await.unwrap(), None);
    // A change marks both: the sent one and the push still on its way.
    let marked = store.chat_mark_dirty("question", "q1").await.unwrap();
    assert_eq!(marked.len(), 2);
    assert!(marked.iter().all(|m| m.dirty_at == Some(1_010)));
    assert_eq!(store.chat_dirty().await.unwrap().len(), 2);
    // Drawn from a state read before the mark: the mark stays.
    store
        .chat_drawn("question", "q1", -100, "h2", 1_009)
        .await
        .unwrap();
    let rec = store
        .chat_message("question", "q1", -100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((rec.text_hash.as_str(), rec.dirty_at), ("h2", Some(1_010)));
    // Drawn from a later read: settled.
    store
        .chat_drawn("question", "q1", -100, "h3", 1_011)
        .await
        .unwrap();
    let rec = store
        .chat_message("question", "q1", -100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((rec.dirty_at, rec.message_id), (None, Some(77)));
    // Accepted without a readable message: sent, but no id to edit.
    store
        .chat_sent_unconfirmed("question", "q1", 42, "h4")
        .await
        .unwrap();
    let rec = store
        .chat_message("question", "q1", 42)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((rec.status.as_str(), rec.message_id), ("sent", None));
    assert!(store.chat_unsent().await.unwrap().is_empty());
    assert_eq!(
        store
            .chat_messages_of("question", "q1")
            .await
            .unwrap()
            .len(),
        2
    );
    // The message is gone: back to sending, to be pushed afresh.
    store.chat_send_again("question", "q1", -100).await.unwrap();
    let rec = store
        .chat_message("question", "q1", -100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (rec.status.as_str(), rec.message_id, rec.text_hash.as_str()),
        ("sending", None, "")
    );
    assert_eq!(
        store.chat_message("question", "q2", 42).await.unwrap(),
        None
    );
}

async fn two_daemons_claiming_one_push_claim_it_once(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    let (a, b) = tokio::join!(
        one.chat_begin_send("action", "a1", 5, None, "sending"),
        two.chat_hold("action", "a1", 5, Hold::Grace, 10)
    );
    assert_ne!(a.unwrap(), b.unwrap(), "exactly one claim");
    let (a, b) = (
        one.chat_release("action", "a1", 5, None),
        two.chat_skip("action", "a1", 5),
    );
    let (a, b) = tokio::join!(a, b);
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(!(a && b), "a waiting push is released or skipped, not both");
}

async fn a_pairing_code_admits_once_and_is_audited(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    let code = one.pairing_create(11, -5, "ana").await.unwrap();
    assert!(!one.chat_member_has(-5, 11, "answer").await.unwrap());
    // Typed in lower case by one: codes are read case-blind.
    let lower = code.to_lowercase();
    let (a, b) = tokio::join!(
        one.pairing_use(&lower, "approve"),
        two.pairing_use(&code, "approve")
    );
    let won: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(won, [(11, -5, "ana".to_string())], "single use");
    assert!(
        one.chat_member_has(-5, 11, "answer").await.unwrap(),
        "approve covers answer"
    );
    assert!(!one.chat_member_has(-5, 12, "answer").await.unwrap());
    assert_eq!(one.pairing_use("NOPE", "answer").await.unwrap(), None);
    one.chat_refused(-5, 99, "mallory", "question", "q9")
        .await
        .unwrap();
    let events = one.events_after(0, 100).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["chat.paired", "chat.refused"]);
    assert_eq!(
        events[0].payload,
        serde_json::json!({"user_id": 11, "role": "approve", "username": "ana"})
    );
    assert_eq!(
        (events[0].entity_id.as_str(), events[0].actor.as_str()),
        ("-5", "11")
    );
    assert_eq!(
        (events[1].entity_kind.as_str(), events[1].entity_id.as_str()),
        ("question", "q9")
    );
    assert_eq!(events[1].payload["reason"], "not allow-listed");
}

async fn a_stale_pairing_code_admits_nobody(db: Db) {
    let (store, clock) = db.open_manual(5_000_000).await;
    let code = store.pairing_create(1, 2, "bo").await.unwrap();
    clock.advance(3_600_000);
    assert_eq!(store.pairing_use(&code, "answer").await.unwrap(), None);
    assert_eq!(store.count_rows("chat_members").await.unwrap(), 0);
}

async fn a_waiting_push_is_released_or_skipped_once(db: Db) {
    let store = db.open().await;
    assert_eq!(store.chat_next_due().await.unwrap(), None);
    assert!(
        store
            .chat_hold("action", "a", 1, Hold::Grace, 500)
            .await
            .unwrap()
    );
    assert!(
        store
            .chat_hold("action", "b", 1, Hold::Quiet, 900)
            .await
            .unwrap()
    );
    // A replayed event claims nothing twice.
    assert!(
        !store
            .chat_hold("action", "a", 1, Hold::Quiet, 1)
            .await
            .unwrap()
    );
    assert!(
        !store
            .chat_begin_send("action", "a", 1, None, "sending")
            .await
            .unwrap()
    );
    assert_eq!(store.chat_next_due().await.unwrap(), Some(500));
    let due = store.chat_held_due(600).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].item_id.as_str(), due[0].hold), ("a", Hold::Grace));
    // Quiet hours began: it waits again, now for the digest.
    assert!(
        store
            .chat_hold_again("action", "a", 1, (Hold::Quiet, 900), None)
            .await
            .unwrap()
    );
    assert!(store.chat_held_due(600).await.unwrap().is_empty());
    let due = store.chat_held_due(900).await.unwrap();
    assert_eq!(due.iter().filter(|h| h.hold == Hold::Quiet).count(), 2);
    assert!(store.chat_release("action", "a", 1, Some(7)).await.unwrap());
    assert!(
        !store.chat_release("action", "a", 1, None).await.unwrap(),
        "released once"
    );
    assert!(!store.chat_skip("action", "a", 1).await.unwrap());
    let rec = store.chat_message("action", "a", 1).await.unwrap().unwrap();
    assert_eq!((rec.status.as_str(), rec.thread_id), ("sending", Some(7)));
    assert_eq!(
        store.chat_unsent().await.unwrap().len(),
        1,
        "sent like any push"
    );
    assert!(store.chat_skip("action", "b", 1).await.unwrap());
    assert!(
        !store.chat_release("action", "b", 1, None).await.unwrap(),
        "skipped for good"
    );
    assert_eq!(store.chat_next_due().await.unwrap(), None);
}

both_engines!(
    a_cursor_only_moves_forward,
    a_push_goes_from_sending_to_sent_and_its_edits_are_marked,
    a_pairing_code_admits_once_and_is_audited,
    a_stale_pairing_code_admits_nobody,
    a_waiting_push_is_released_or_skipped_once,
);
both_engines!(multi_thread: two_daemons_claiming_one_push_claim_it_once);

async fn the_first_topic_saved_for_a_key_stays(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    assert_eq!(one.topic_get(-5, "project:x").await.unwrap(), None);
    let (a, b) = tokio::join!(
        one.topic_save(-5, "project:x", "x", 10),
        two.topic_save(-5, "project:x", "x", 20)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a, b, "both are told the one that holds");
    assert!(a == 10 || a == 20);
    assert_eq!(two.topic_get(-5, "project:x").await.unwrap(), Some(a));
    assert_eq!(one.topic_save(-5, "project:y", "y", 30).await.unwrap(), 30);
    assert_eq!(one.topic_get(-6, "project:x").await.unwrap(), None);
}

both_engines!(multi_thread: the_first_topic_saved_for_a_key_stays);
