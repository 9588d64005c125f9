//! The wake-up delivery queue through the store: enqueue (once per event and
//! target, due after the first delay), claim, outcomes that only the attempt
//! holding the claim may write, and the worker's next-work time. Every
//! test runs on both engines (tests/common/engine.rs).

mod common;

use common::ask;
use common::engine::Db;
use handoff::store::deliveries::NewDelivery;
use handoff::store::sessions::WakeTarget;

const T0: i64 = 1_800_000_000_000;
const LEASE: i64 = 5_000;

fn target(key: &str) -> NewDelivery {
    NewDelivery {
        target_key: format!("exec:{key}"),
        origin: "session".into(),
        target: WakeTarget::Exec {
            argv: vec!["true".into(), key.into()],
            timeout_secs: None,
        },
        lease_ms: LEASE,
    }
}

async fn deliveries_are_enqueued_once_claimed_when_due_and_settled_only_by_their_attempt(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    assert_eq!(s.next_delivery_work().await.unwrap(), None, "nothing to do");
    ask(&s, "Wake me").await;
    let seq = s.last_event_seq().await.unwrap();

    let targets = [target("a"), target("b")];
    assert_eq!(s.enqueue_deliveries(seq, &targets, 500).await.unwrap(), 2);
    assert_eq!(
        s.enqueue_deliveries(seq, &targets, 500).await.unwrap(),
        0,
        "replaying the event enqueues nothing"
    );
    let rows = s.deliveries_of_event(seq).await.unwrap();
    assert_eq!(rows.len(), 2);
    for (row, t) in rows.iter().zip(&targets) {
        assert_eq!(row.event_seq, seq);
        assert_eq!(row.target_key, t.target_key);
        assert_eq!(row.target, t.target);
        assert_eq!(row.status, "pending");
        assert_eq!(row.next_attempt_at, T0 + 500, "due after the first delay");
    }
    assert_eq!(s.next_delivery_work().await.unwrap(), Some(T0 + 500));
    assert!(s.claim_deliveries(10).await.unwrap().is_empty(), "not due");

    clock.advance(500);
    let claimed = s.claim_deliveries(10).await.unwrap();
    assert_eq!(claimed.len(), 2);
    assert!(claimed.iter().all(|d| d.attempts == 1));
    assert_eq!(
        s.next_delivery_work().await.unwrap(),
        Some(T0 + 500 + LEASE),
        "the leases lapse next"
    );
    let (a, b) = (&claimed[0], &claimed[1]);
    assert!(s.delivery_delivered(a).await.unwrap());
    assert!(!s.delivery_delivered(a).await.unwrap(), "settled already");
    assert!(s.delivery_retry(b, T0 + 9_000, "boom").await.unwrap());
    assert!(!s.delivery_retry(b, T0 + 9_500, "again").await.unwrap());
    assert_eq!(s.next_delivery_work().await.unwrap(), Some(T0 + 9_000));
    let retried = &s.deliveries_of_event(seq).await.unwrap()[1];
    assert_eq!(
        (retried.status.as_str(), retried.last_error.as_deref()),
        ("pending", Some("boom"))
    );

    // The retry's attempt holds the row now: the first attempt's copy may
    // neither deliver it nor reschedule it.
    clock.set(T0 + 9_000);
    let again = s.claim_deliveries(10).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].id, again[0].attempts), (b.id, 2));
    assert!(!s.delivery_delivered(b).await.unwrap(), "a stale attempt");
    assert!(!s.delivery_retry(b, T0, "stale").await.unwrap());
    assert!(s.delivery_delivered(&again[0]).await.unwrap());
    assert_eq!(s.next_delivery_work().await.unwrap(), None);
    let rows = s.deliveries_of_event(seq).await.unwrap();
    assert!(rows.iter().all(|d| d.status == "delivered"), "{rows:?}");
}

async fn a_dead_delivery_can_disable_its_target_for_every_later_event(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let last_seq = || async { s.last_event_seq().await.unwrap() };
    ask(&s, "first").await;
    let first = last_seq().await;
    s.enqueue_deliveries(first, &[target("a")], 0)
        .await
        .unwrap();
    clock.advance(1);
    ask(&s, "second").await;
    let second = last_seq().await;
    s.enqueue_deliveries(second, &[target("a"), target("b")], 0)
        .await
        .unwrap();

    let d = s.claim_deliveries(1).await.unwrap().remove(0);
    assert_eq!((d.event_seq, d.target_key.as_str()), (first, "exec:a"));
    assert_eq!(s.target_disabled("exec:a").await.unwrap(), None);
    let ev = s.event_at(first).await.unwrap().unwrap();
    assert!(s.delivery_dead(&d, &ev, "HTTP 410", true).await.unwrap());
    assert!(!s.delivery_dead(&d, &ev, "HTTP 410", true).await.unwrap());

    assert_eq!(
        s.target_disabled("exec:a").await.unwrap().as_deref(),
        Some("HTTP 410")
    );
    assert_eq!(s.target_disabled("exec:b").await.unwrap(), None);
    let later: Vec<_> = s
        .deliveries_of_event(second)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.target_key, d.status, d.last_error))
        .collect();
    assert_eq!(
        later,
        [
            (
                "exec:a".to_string(),
                "dead".to_string(),
                Some("target disabled: HTTP 410".to_string())
            ),
            ("exec:b".into(), "pending".into(), None),
        ]
    );
    ask(&s, "third").await;
    let third = last_seq().await;
    assert_eq!(
        s.enqueue_deliveries(third, &[target("a")], 0)
            .await
            .unwrap(),
        0,
        "a disabled target gets nothing new"
    );
    let dead: Vec<_> = s
        .events_for("question", &ev.entity_id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "delivery.dead")
        .collect();
    assert_eq!(dead.len(), 1, "one event, from the attempt that gave up");
    let payload = &dead[0].payload;
    assert_eq!(
        (
            &payload["target"],
            &payload["disabled"],
            &payload["error"],
            &payload["event_seq"]
        ),
        (
            &serde_json::json!("exec"),
            &serde_json::json!(true),
            &serde_json::json!("HTTP 410"),
            &serde_json::json!(first)
        )
    );
}

/// Two daemons (two handles) claiming due deliveries at once, over and
/// over: every row is claimed by exactly one of them, once.
async fn racing_claims_take_each_delivery_exactly_once(db: Db) {
    let (a, clock) = db.open_manual(T0).await;
    let b = db.open_with_clock(clock.clone()).await;
    let mut expected = 0;
    for i in 0..4 {
        ask(&a, &format!("event {i}")).await;
        let seq = a.last_event_seq().await.unwrap();
        let targets: Vec<_> = (0..5).map(|t| target(&format!("t{t}"))).collect();
        expected += a.enqueue_deliveries(seq, &targets, 0).await.unwrap();
    }
    let mut ids = Vec::new();
    loop {
        let (x, y) = tokio::join!(a.claim_deliveries(3), b.claim_deliveries(3));
        let (x, y) = (x.unwrap(), y.unwrap());
        if x.is_empty() && y.is_empty() {
            break;
        }
        assert!(x.iter().chain(&y).all(|d| d.attempts == 1));
        ids.extend(x.iter().chain(&y).map(|d| d.id));
    }
    let total = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!((ids.len(), total as u64), (total, expected), "each once");
    // A lapsed lease hands them all out again, once more each.
    clock.advance(LEASE);
    assert_eq!(a.recover_deliveries().await.unwrap(), expected);
    assert_eq!(b.recover_deliveries().await.unwrap(), 0);
    let all = a.all_deliveries().await.unwrap();
    assert!(
        all.iter().all(|d| d.status == "pending"
            && d.last_error.as_deref() == Some("interrupted (the daemon stopped mid-delivery)")),
        "{all:?}"
    );
}

both_engines!(
    deliveries_are_enqueued_once_claimed_when_due_and_settled_only_by_their_attempt,
    a_dead_delivery_can_disable_its_target_for_every_later_event,
    racing_claims_take_each_delivery_exactly_once,
);
