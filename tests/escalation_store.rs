//! Escalation chains in the store, on a manual clock and on both engines:
//! steps fire in order and once each, across a reopened store (a daemon
//! restart) and across three stores racing on one database (three
//! daemons); a decision between steps ends the chain; the TTL's outcome
//! (fail-closed) is its end; every step is audited and has its event; the
//! housekeeping due time names the next step.

mod common;

use common::engine::Db;
use common::new_action;
use handoff::config::Escalation;
use handoff::store::Store;
use handoff::store::actions::{Actor, OnExpire, Status, escalation_note};

const T0: i64 = 1_800_000_000_000;
const MIN: i64 = 60_000;

fn step(after_min: i64, to: &str) -> Escalation {
    Escalation {
        at: after_min * MIN,
        to: to.into(),
        chat: Some(to.trim_start_matches('#').into()),
        topic: None,
        slack: None,
        webhook: None,
    }
}

/// An action with a chain of two steps (10 and 30 minutes) and a 60-minute
/// TTL that rejects.
async fn propose_chained(s: &Store) -> String {
    let mut n = new_action("deploy", r#"{"a":1}"#);
    n.ttl_ms = Some(60 * MIN);
    n.on_expire = OnExpire::Reject;
    n.escalation = vec![step(10, "#team"), step(30, "#ops")];
    s.propose(&n).await.unwrap().action.id
}

async fn audit(s: &Store, id: &str) -> Vec<String> {
    s.action_audit(id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}

/// The `action.escalated` events of `id`: each step's number and place.
async fn escalated_events(s: &Store, id: &str) -> Vec<(i64, String)> {
    s.events_for("action", id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "action.escalated")
        .map(|e| {
            (
                e.payload["step"].as_i64().unwrap(),
                e.payload["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

async fn steps_fire_in_order_once_each_and_the_ttl_rejects(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let id = propose_chained(&s).await;
    let a = s.get_action(&id).await.unwrap();
    assert_eq!(a.escalation.len(), 2);
    assert_eq!(a.escalation[0].at, T0 + 10 * MIN, "dated from the proposal");
    assert_eq!(
        s.next_housekeeping_due().await.unwrap(),
        Some(T0 + 10 * MIN)
    );
    assert_eq!(
        escalation_note(&a).unwrap(),
        "Escalates to #team at 08:10 UTC if nobody decides"
    );

    // Not yet due: nothing.
    clock.set(T0 + 10 * MIN - 1);
    assert!(s.escalate_due().await.unwrap().is_empty());

    clock.set(T0 + 10 * MIN);
    let fired = s.escalate_due().await.unwrap();
    assert_eq!(fired.len(), 1);
    assert_eq!((fired[0].step, fired[0].to.to.as_str()), (1, "#team"));
    assert!(s.escalate_due().await.unwrap().is_empty(), "once");
    assert_eq!(
        s.next_housekeeping_due().await.unwrap(),
        Some(T0 + 30 * MIN)
    );
    let a = s.get_action(&id).await.unwrap();
    assert_eq!((a.escalated, a.escalated_at), (1, Some(T0 + 10 * MIN)));
    assert_eq!(
        escalation_note(&a).unwrap(),
        "Escalated to #team at 08:10 UTC; to #ops at 08:30 UTC if still undecided"
    );

    clock.set(T0 + 45 * MIN);
    let fired = s.escalate_due().await.unwrap();
    assert_eq!(fired.iter().map(|e| e.step).collect::<Vec<_>>(), [2]);
    assert!(s.escalate_due().await.unwrap().is_empty());
    // No step left: the next due time is the TTL.
    assert_eq!(
        s.next_housekeeping_due().await.unwrap(),
        Some(T0 + 60 * MIN)
    );
    assert_eq!(
        escalation_note(&s.get_action(&id).await.unwrap()).unwrap(),
        "Escalated to #ops at 08:45 UTC"
    );

    // The chain's end: the TTL's outcome, fail-closed.
    clock.set(T0 + 60 * MIN);
    assert!(s.escalate_due().await.unwrap().is_empty());
    assert_eq!(s.expire_due().await.unwrap().len(), 1);
    let a = s.get_action(&id).await.unwrap();
    assert_eq!(a.status, Status::Rejected);
    assert_eq!(a.decided_by.as_deref(), Some("expiry"));
    assert!(escalation_note(&a).is_none(), "nothing pending to say");
    assert_eq!(
        audit(&s, &id).await,
        ["proposed", "escalated", "escalated", "rejected"]
    );
    assert_eq!(
        escalated_events(&s, &id).await,
        [(1, "#team".to_string()), (2, "#ops".to_string())]
    );
}

async fn overdue_steps_fire_in_order_after_a_restart_and_never_again(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let id = propose_chained(&s).await;
    clock.set(T0 + 10 * MIN);
    assert_eq!(s.escalate_due().await.unwrap().len(), 1);
    s.close().await;

    // "Restarted" long after the second step fell due: it fires once,
    // the first does not fire again.
    let (s, clock) = db.open_manual(T0 + 50 * MIN).await;
    let fired = s.escalate_due().await.unwrap();
    assert_eq!(fired.iter().map(|e| e.step).collect::<Vec<_>>(), [2]);
    s.close().await;
    let (s, _clock2) = db.open_manual(T0 + 55 * MIN).await;
    assert!(s.escalate_due().await.unwrap().is_empty());
    drop(clock);
    assert_eq!(escalated_events(&s, &id).await.len(), 2);

    // Down across both steps: both fire, in order.
    let id2 = propose_chained(&s).await;
    s.close().await;
    let (s, _c) = db.open_manual(T0 + 55 * MIN + 40 * MIN).await;
    let fired = s.escalate_due().await.unwrap();
    let steps: Vec<(i64, &str)> = fired
        .iter()
        .filter(|e| e.action.id == id2)
        .map(|e| (e.step, e.to.to.as_str()))
        .collect();
    assert_eq!(steps, [(1, "#team"), (2, "#ops")]);
}

async fn three_daemons_racing_fire_each_step_once(db: Db) {
    let (a, ca) = db.open_manual(T0).await;
    let (b, cb) = db.open_manual(T0).await;
    let (c, cc) = db.open_manual(T0).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(propose_chained(&a).await);
    }
    for at in [T0 + 10 * MIN, T0 + 30 * MIN] {
        for clock in [&ca, &cb, &cc] {
            clock.set(at);
        }
        let (x, y, z) = tokio::join!(a.escalate_due(), b.escalate_due(), c.escalate_due());
        let won = x.unwrap().len() + y.unwrap().len() + z.unwrap().len();
        assert_eq!(won, ids.len(), "one claim per action and step at {at}");
    }
    for id in &ids {
        assert_eq!(
            escalated_events(&a, id).await,
            [(1, "#team".to_string()), (2, "#ops".to_string())]
        );
        assert_eq!(audit(&a, id).await, ["proposed", "escalated", "escalated"]);
    }
}

async fn a_decision_between_steps_ends_the_chain(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let id = propose_chained(&s).await;
    clock.set(T0 + 10 * MIN);
    assert_eq!(s.escalate_due().await.unwrap().len(), 1);
    clock.set(T0 + 20 * MIN);
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    clock.set(T0 + 45 * MIN);
    assert!(s.escalate_due().await.unwrap().is_empty());
    assert_eq!(
        s.next_housekeeping_due().await.unwrap(),
        None,
        "no step of a decided action is due"
    );
    assert_eq!(audit(&s, &id).await, ["proposed", "escalated", "approved"]);

    // Rejected before the first step: no step at all.
    clock.set(T0 + 50 * MIN);
    let id = propose_chained(&s).await;
    s.reject(&id, Actor::cli("bob"), "no").await.unwrap();
    clock.set(T0 + 200 * MIN);
    assert!(s.escalate_due().await.unwrap().is_empty());
    assert!(escalated_events(&s, &id).await.is_empty());
}

async fn steps_the_ttl_cuts_off_are_not_kept(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let mut n = new_action("deploy", r#"{"a":2}"#);
    n.ttl_ms = Some(20 * MIN);
    n.escalation = vec![step(10, "#team"), step(20, "#ops")];
    let id = s.propose(&n).await.unwrap().action.id;
    let a = s.get_action(&id).await.unwrap();
    assert_eq!(a.escalation.len(), 1, "the step at the TTL never fires");
    // An expired action that no sweep settled yet does not escalate.
    clock.set(T0 + 25 * MIN);
    assert!(s.escalate_due().await.unwrap().is_empty());
    assert_eq!(s.expire_due().await.unwrap().len(), 1);
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Expired);
}

both_engines!(
    steps_fire_in_order_once_each_and_the_ttl_rejects,
    overdue_steps_fire_in_order_after_a_restart_and_never_again,
    a_decision_between_steps_ends_the_chain,
    steps_the_ttl_cuts_off_are_not_kept
);
both_engines!(multi_thread: three_daemons_racing_fire_each_step_once);
