//! Time family: TTL edges on a manual clock, on_expire, lazy expiry, and a
//! clock moving backwards. Every test runs on both engines
//! (tests/common/engine.rs).

mod common;

use common::engine::Db;
use common::new_action;
use handoff::store::actions::{Actor, ApproveOutcome, OnExpire, RejectOutcome, Status};

const T0: i64 = 1_800_000_000_000;

async fn propose_ttl(s: &handoff::store::Store, ttl: i64, on_expire: OnExpire) -> String {
    let mut n = new_action("k", r#"{"a":1}"#);
    n.ttl_ms = Some(ttl);
    n.on_expire = on_expire;
    s.propose(&n).await.unwrap().action.id
}

async fn approve_at_the_exact_expiry_millisecond_is_refused_as_expired(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let id = propose_ttl(&s, 1000, OnExpire::Expire).await;
    clock.set(T0 + 1000);
    let out = s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(out, ApproveOutcome::Expired { .. }), "{out:?}");
    let a = s.get_action(&id).await.unwrap();
    assert_eq!(a.status, Status::Expired, "the refusal settles it");
    assert_eq!(a.approvals, 0);
    let events: Vec<_> = s
        .action_audit(&id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert_eq!(events, ["proposed", "expired"]);
}

async fn approve_one_millisecond_before_expiry_is_accepted(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let id = propose_ttl(&s, 1000, OnExpire::Expire).await;
    clock.set(T0 + 999);
    let out = s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(out, ApproveOutcome::Approved { .. }), "{out:?}");
    assert_eq!(out.action().decided_at, Some(T0 + 999));
    // Once approved, expiry no longer applies.
    clock.set(T0 + 5000);
    assert!(s.expire_due().await.unwrap().is_empty());
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Approved);
}

async fn reject_at_expiry_is_refused_too(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let id = propose_ttl(&s, 1000, OnExpire::Expire).await;
    clock.set(T0 + 1000);
    let out = s.reject(&id, Actor::cli("bob"), "no").await.unwrap();
    assert!(matches!(out, RejectOutcome::Expired { .. }), "{out:?}");
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Expired);
}

async fn on_expire_reject_versus_expire(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let e = propose_ttl(&s, 1000, OnExpire::Expire).await;
    let r = propose_ttl(&s, 1000, OnExpire::Reject).await;
    let never = s
        .propose(&new_action("k", r#"{"b":1}"#))
        .await
        .unwrap()
        .action
        .id;
    clock.set(T0 + 999);
    assert!(
        s.expire_due().await.unwrap().is_empty(),
        "nothing is due a ms early"
    );
    clock.set(T0 + 1000);
    // Lazy expiry: lists show the final status before any sweep writes it.
    let listed = s.list_actions(Some(Status::Pending)).await.unwrap();
    assert_eq!(
        listed.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        [never.as_str()]
    );
    let lazily = s.list_actions(Some(Status::Expired)).await.unwrap();
    assert_eq!(lazily.len(), 1);
    assert_eq!(lazily[0].id, e);
    assert_eq!(
        s.get_action(&e).await.unwrap().status,
        Status::Pending,
        "not written yet"
    );

    let settled = s.expire_due().await.unwrap();
    assert_eq!(settled.len(), 2);
    let ea = s.get_action(&e).await.unwrap();
    let ra = s.get_action(&r).await.unwrap();
    assert_eq!((ea.status, ra.status), (Status::Expired, Status::Rejected));
    assert_eq!(ra.decided_by.as_deref(), Some("expiry"));
    assert_eq!(s.action_audit(&r).await.unwrap()[1].event, "rejected");
    assert_eq!(s.get_action(&never).await.unwrap().status, Status::Pending);
    assert!(
        s.expire_due().await.unwrap().is_empty(),
        "a second sweep finds nothing"
    );
}

async fn clock_moving_backwards_does_not_resurrect(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let swept = propose_ttl(&s, 1000, OnExpire::Expire).await;
    let refused = propose_ttl(&s, 1000, OnExpire::Expire).await;
    clock.set(T0 + 1000);
    assert_eq!(s.expire_due().await.unwrap().len(), 2);
    clock.set(T0 + 10);
    for id in [&swept, &refused] {
        let out = s.approve(id, Actor::cli("alice"), None).await.unwrap();
        assert!(matches!(out, ApproveOutcome::Expired { .. }), "{out:?}");
        assert_eq!(s.get_action(id).await.unwrap().status, Status::Expired);
    }
    assert_eq!(
        s.list_actions(Some(Status::Pending)).await.unwrap().len(),
        0
    );

    // A refusal at expiry (no sweep at all) also sticks.
    clock.set(T0);
    let id = propose_ttl(&s, 500, OnExpire::Expire).await;
    clock.set(T0 + 500);
    let out = s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(out, ApproveOutcome::Expired { .. }));
    clock.set(T0 + 100);
    let out = s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(out, ApproveOutcome::Expired { .. }), "{out:?}");
    assert_eq!(s.get_action(&id).await.unwrap().approvals, 0);
}

async fn an_expired_holder_does_not_answer_for_its_dedup_key(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let mut n = new_action("k", r#"{"a":1}"#);
    n.ttl_ms = Some(1000);
    n.dedup_key = Some("d".into());
    let first = s.propose(&n).await.unwrap().action.id;
    clock.set(T0 + 1000);
    let again = s.propose(&n).await.unwrap();
    assert!(again.created, "a fresh action, not the dead one");
    assert_ne!(again.action.id, first);
    assert_eq!(s.get_action(&first).await.unwrap().status, Status::Expired);
}

async fn waiting_on_a_lapsed_action_settles_it_as_expired(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let id = propose_ttl(&s, 1000, OnExpire::Expire).await;
    clock.set(T0 + 5000);
    // Nobody expired it yet: the stored status is still pending.
    let out = s
        .wait_action(&id, std::time::Duration::from_secs(2), |st| st.is_settled())
        .await
        .unwrap();
    match out {
        handoff::store::actions::Settled::Done { action } => {
            assert_eq!(action.status, Status::Expired)
        }
        other => panic!("the wait must settle it as expired: {other:?}"),
    }
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Expired);
    let audit = s.action_audit(&id).await.unwrap();
    assert_eq!(audit.last().unwrap().event, "expired");
}

both_engines!(
    approve_at_the_exact_expiry_millisecond_is_refused_as_expired,
    approve_one_millisecond_before_expiry_is_accepted,
    reject_at_expiry_is_refused_too,
    on_expire_reject_versus_expire,
    clock_moving_backwards_does_not_resurrect,
    an_expired_holder_does_not_answer_for_its_dedup_key,
    waiting_on_a_lapsed_action_settles_it_as_expired
);
