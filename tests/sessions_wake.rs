//! Inbound wakes recorded through `Store::record_wake`: one `session.wake`
//! event per delivery, replays deduplicated by `(source, delivery_id)`.

mod common;

use common::{TempDb, count};
use serde_json::json;

#[tokio::test]
async fn a_wake_is_recorded_once_per_delivery_id() {
    let db = TempDb::new();
    let store = db.open().await;
    let first = store
        .record_wake("s1", "github", "d-1", json!({"action": "completed"}))
        .await
        .unwrap();
    assert!(first.new);
    let again = store
        .record_wake("s1", "github", "d-1", json!({"action": "completed"}))
        .await
        .unwrap();
    assert!(!again.new, "a replayed delivery id is not new");
    assert_eq!(again.seq, first.seq, "a replay points at the first event");
    let events = store.events_after(0, 100).await.unwrap();
    let wakes: Vec<_> = events.iter().filter(|e| e.kind == "session.wake").collect();
    assert_eq!(wakes.len(), 1);
    assert_eq!(wakes[0].seq, first.seq);
    assert_eq!(wakes[0].session, "s1");
    assert_eq!(
        wakes[0].payload,
        json!({"source": "github", "delivery_id": "d-1", "body": {"action": "completed"}})
    );
    // Another source may reuse the id; an empty id is never deduplicated.
    assert!(
        store
            .record_wake("s1", "ci", "d-1", json!({}))
            .await
            .unwrap()
            .new
    );
    assert!(
        store
            .record_wake("s1", "ci", "", json!({}))
            .await
            .unwrap()
            .new
    );
    assert!(
        store
            .record_wake("s1", "ci", "", json!({}))
            .await
            .unwrap()
            .new
    );
    assert_eq!(count(&store, "session_wakes").await, 4);
}

#[tokio::test]
async fn a_wake_needs_a_session_id() {
    let db = TempDb::new();
    let store = db.open().await;
    let err = store
        .record_wake("  ", "ci", "d", json!({}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("session id"), "{err}");
    assert_eq!(count(&store, "events").await, 0);
}
