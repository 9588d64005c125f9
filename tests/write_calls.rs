//! One database call per winning transition: every statement the
//! store sends to SQLite goes through sqlx's executor, which reports each
//! one as a `sqlx::query` tracing event (from the connection's worker
//! thread). The layer in `common::calls`, installed for this whole test
//! binary, counts them; the tests take turns (one lock) so the counts are
//! their own.
//!
//! A winning propose, approve, claim and completion is exactly one call:
//! the guarded statement, whose triggers write the approvals, audit and
//! event rows. A refused approval reads its explanation in that same call
//! (7 of 8 racing approvers are refused); other refusals may read more.

mod common;

use common::TempDb;
use common::calls::{TURN, counted, install as calls, warmed};
use handoff::store::Store;
use handoff::store::actions::{
    Actor, ApproveOutcome, ClaimOutcome, CompleteOutcome, Error, NewAction, OnExpire, RejectOutcome,
};

fn proposal(i: u32) -> NewAction {
    NewAction {
        kind: "email.send".into(),
        summary: format!("mail {i}"),
        args: r#"{"to":"bob","api_token":"s3cret"}"#.into(),
        dedup_key: Some(format!("mail-{i}")),
        proposer: "agent".into(),
        approvals_required: 2,
        ..Default::default()
    }
}

async fn audit_events(store: &Store, id: &str) -> Vec<String> {
    store
        .action_audit(id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_winning_transition_is_one_database_call() {
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = warmed(&db).await;

    let (proposed, seen) = counted(store.propose(&proposal(1))).await;
    let action = proposed.unwrap().action;
    assert_eq!(seen.len(), 1, "a proposal is one call, was {seen:?}");
    // The change and its log entry in one savepoint: all or nothing, and
    // no other connection writes between them.
    assert!(
        seen[0].starts_with("SAVEPOINT one_call; INSERT INTO"),
        "{seen:?}"
    );

    let (first, seen) = counted(store.approve(&action.id, Actor::cli("alice"), None)).await;
    assert!(matches!(
        first.unwrap(),
        ApproveOutcome::ApprovalAdded { .. }
    ));
    assert_eq!(
        seen.len(),
        1,
        "a counted approval is one call, was {seen:?}"
    );

    let (second, seen) = counted(store.approve(&action.id, Actor::cli("bob"), None)).await;
    let ApproveOutcome::Approved { action: approved } = second.unwrap() else {
        panic!("the second of two approvals approves")
    };
    assert_eq!(
        seen.len(),
        1,
        "a deciding approval is one call, was {seen:?}"
    );
    assert!(
        seen[0].starts_with("SAVEPOINT one_call; UPDATE"),
        "{seen:?}"
    );
    assert_eq!(approved.decided_by.as_deref(), Some("bob"));

    let (claim, seen) = counted(store.claim(&action.id, "exec-1", 60_000)).await;
    let ClaimOutcome::Claimed { action: claimed } = claim.unwrap() else {
        panic!("an approved action is claimable")
    };
    assert_eq!(seen.len(), 1, "a claim is one call, was {seen:?}");

    let result = serde_json::json!({"sent": true});
    let (done, seen) =
        counted(store.complete_claimed(&claimed, "exec-1", true, result, None)).await;
    assert!(matches!(done.unwrap(), CompleteOutcome::Completed { .. }));
    assert_eq!(seen.len(), 1, "a completion is one call, was {seen:?}");

    // The one calls wrote everything a transition writes, in order.
    assert_eq!(
        audit_events(&store, &action.id).await,
        [
            "proposed",
            "approval_added",
            "approved",
            "claimed",
            "executed"
        ]
    );
    assert_eq!(common::count(&store, "action_approvals").await, 2);
    let kinds: Vec<String> = store
        .events_for("action", &action.id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "action.proposed",
            "action.approval_added",
            "action.approved",
            "action.claimed",
            "action.executed"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_still_explains_itself() {
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let (store, clock) = db.open_manual(1_000_000).await;
    let id = store.propose(&proposal(2)).await.unwrap().action.id;
    store.approve(&id, Actor::cli("alice"), None).await.unwrap();

    // The same approver again: refused, and said why.
    let (again, seen) = counted(store.approve(&id, Actor::cli("alice"), None)).await;
    assert!(
        matches!(again.unwrap(), ApproveOutcome::AlreadyApprovedBy { .. }),
        "a second tap by the same person is named as such"
    );
    assert_eq!(
        seen.len(),
        1,
        "the refused approval reads its explanation in the same call: {seen:?}"
    );
    assert_eq!(common::count(&store, "action_approvals").await, 1);

    // An id nobody wrote: not found, by the id given.
    let missing = "0".repeat(32);
    let err = store
        .approve(&missing, Actor::cli("alice"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotFound(i) if *i == missing),
        "{err:?}"
    );

    // A rejection after the expiry: settled as expired, not rejected.
    let mut late = proposal(3);
    late.ttl_ms = Some(1_000);
    let late = store.propose(&late).await.unwrap().action.id;
    clock.advance(1_000);
    let out = store
        .reject(&late, Actor::cli("carol"), "too late")
        .await
        .unwrap();
    assert!(matches!(out, RejectOutcome::Expired { .. }), "{out:?}");
    assert_eq!(audit_events(&store, &late).await, ["proposed", "expired"]);

    // A claim of a pending action: not claimable, the action shown as is.
    let (claim, _) = counted(store.claim(&id, "exec-1", 60_000)).await;
    match claim.unwrap() {
        ClaimOutcome::NotClaimable { action } => assert_eq!(action.approvals, 1),
        other => panic!("a pending action cannot be claimed: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_winning_reply_and_pickup_is_one_database_call() {
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = warmed(&db).await;
    let q = common::ask(&store, "Which port?").await;

    let (chat, seen) = counted(store.reply_chat(&q.id, &common::answer("8080"))).await;
    let q1 = chat.unwrap().expect("the first reply wins");
    assert_eq!(seen.len(), 1, "a chat reply is one call, was {seen:?}");

    let (marked, seen) = counted(store.mark_reply_seen(&q1, "agent-1")).await;
    assert!(marked.unwrap().is_some(), "the reply read is marked");
    assert_eq!(seen.len(), 1, "a pickup is one call, was {seen:?}");

    let (inbox, seen) = counted(store.reply_inbox(&q.id, &common::answer("9090"))).await;
    inbox.unwrap().expect("the Inbox always wins while open");
    assert_eq!(seen.len(), 1, "an Inbox reply is one call, was {seen:?}");

    // The agent's own answer is refused while the Inbox one is unread, and
    // is handed that reply instead (marked picked up on the way).
    let refused = store
        .answer_agent(&q.id, &common::answer("7070"))
        .await
        .unwrap();
    assert!(
        matches!(&refused, Err(handoff::store::questions::Refusal::UnreadAnswer { reply, .. }) if reply == "9090"),
        "{refused:?}"
    );
    let (agent, seen) = counted(store.answer_agent(&q.id, &common::answer("7070"))).await;
    agent
        .unwrap()
        .expect("the agent's answer wins once the reply was read");
    assert_eq!(seen.len(), 1, "an agent answer is one call, was {seen:?}");

    let kinds: Vec<String> = store
        .events_for("question", &q.id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "question.flagged",
            "question.answered",
            "question.picked_up",
            "question.answered",
            "question.picked_up",
            "question.answered"
        ]
    );
    assert_eq!(common::count(&store, "question_replies").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flag_update_and_close_are_one_database_call_each() {
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = warmed(&db).await;
    let mut new = handoff::store::questions::NewQuestion {
        title: "Deploy now?".into(),
        key: Some("deploy".into()),
        agent: "agent-1".into(),
        ..Default::default()
    };
    let (first, seen) = counted(store.flag(&new)).await;
    let first = first.unwrap();
    assert!(first.created);
    assert_eq!(seen.len(), 1, "a flag is one call, was {seen:?}");

    new.title = "Deploy now? (v2)".into();
    let (again, seen) = counted(store.flag(&new)).await;
    let again = again.unwrap();
    assert!(!again.created, "the same key updates in place");
    assert_eq!(again.question.revision, 2);
    assert_eq!(seen.len(), 1, "a re-flag is one call, was {seen:?}");

    let (closed, seen) =
        counted(store.resolve_question(&first.question.id, "done", "agent-1")).await;
    closed.unwrap().expect("an open question resolves");
    assert_eq!(seen.len(), 1, "a resolve is one call, was {seen:?}");

    let evs = store
        .events_for("question", &first.question.id)
        .await
        .unwrap();
    let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["question.flagged", "question.updated", "question.resolved"]
    );
    assert_eq!(evs[1].payload["revision"], 2);
    assert_eq!(evs[1].payload["title"], "Deploy now? (v2)");
    assert_eq!(evs[2].payload["outcome"], "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_sweep_and_a_lease_renewal_are_one_database_call_each() {
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let (store, clock) = db.open_manual(1_700_000_000_123).await;
    let mut ids = Vec::new();
    for (i, on_expire) in [(10, OnExpire::Expire), (11, OnExpire::Reject)] {
        let mut p = proposal(i);
        p.ttl_ms = Some(1_000);
        p.on_expire = on_expire;
        ids.push(store.propose(&p).await.unwrap().action.id);
    }
    let live = store.propose(&proposal(12)).await.unwrap().action.id;
    clock.advance(1_000);

    // Two actions settled by one statement, each with its audit row and
    // event, the details as the Rust side formats them.
    let (swept, seen) = counted(store.expire_due()).await;
    assert_eq!(swept.unwrap().len(), 2);
    assert_eq!(seen.len(), 1, "a sweep is one call, was {seen:?}");
    for (id, event) in ids.iter().zip(["expired", "rejected"]) {
        let audit = store.action_audit(id).await.unwrap();
        let last = audit.last().unwrap();
        assert_eq!(
            (last.event.as_str(), last.actor.as_str()),
            (event, "expiry")
        );
        let expected = serde_json::json!({
            "expires_at": handoff::clock::format_rfc3339(1_700_000_001_123),
            "on_expire": if event == "expired" { "expire" } else { "reject" },
        });
        assert_eq!(last.details, expected, "{id}");
    }
    let kinds: Vec<String> = store
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds[3..],
        ["action.expired", "action.rejected"],
        "one event per settled action"
    );
    assert_eq!(
        store.get_action(&live).await.unwrap().status,
        handoff::store::actions::Status::Pending,
        "an action without an expiry is left alone"
    );

    // A lease renewal by the owner: one call; by anyone else: refused.
    store.approve(&live, Actor::cli("a"), None).await.unwrap();
    store.approve(&live, Actor::cli("b"), None).await.unwrap();
    store.claim(&live, "exec-1", 60_000).await.unwrap();
    let (renewed, seen) = counted(store.extend_lease(&live, "exec-1", 120_000)).await;
    assert!(renewed.unwrap());
    assert_eq!(seen.len(), 1, "a renewal is one call, was {seen:?}");
    assert!(!store.extend_lease(&live, "exec-2", 120_000).await.unwrap());
    let a = store.get_action(&live).await.unwrap();
    assert_eq!(a.lease_until, Some(1_700_000_001_123 + 120_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_delivery_is_one_database_call_per_step() {
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = warmed(&db).await;
    common::ask(&store, "Wake me").await;
    let seq = store.last_event_seq().await.unwrap();
    let target = |key: &str, program: &str| handoff::store::deliveries::NewDelivery {
        target_key: key.into(),
        origin: "session".into(),
        target: handoff::store::sessions::WakeTarget::Exec {
            argv: vec![program.into()],
            timeout_secs: None,
        },
        lease_ms: 5_000,
    };
    let (n, seen) = counted(store.enqueue_deliveries(seq, &[target("exec:one", "true")], 0)).await;
    assert_eq!(n.unwrap(), 1);
    assert_eq!(
        seen.len(),
        1,
        "enqueueing one wake is one call, was {seen:?}"
    );
    let (claimed, seen) = counted(store.claim_deliveries(10)).await;
    let claimed = claimed.unwrap();
    assert_eq!((claimed.len(), seen.len()), (1, 1), "{seen:?}");
    let (retried, seen) = counted(store.delivery_retry(&claimed[0], 0, "boom")).await;
    assert!(retried.unwrap());
    assert_eq!(seen.len(), 1, "{seen:?}");
    let again = store.claim_deliveries(10).await.unwrap();
    let (done, seen) = counted(store.delivery_delivered(&again[0])).await;
    assert!(done.unwrap());
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        !store.delivery_delivered(&claimed[0]).await.unwrap(),
        "a stale attempt settles nothing"
    );

    // Giving up is one call too: the row, its `delivery.dead` event and,
    // when the target is disabled, the target and its other pending rows.
    store
        .enqueue_deliveries(
            seq,
            &[target("exec:two", "false"), target("exec:three", "false")],
            0,
        )
        .await
        .unwrap();
    let ev = store.event_at(seq).await.unwrap().unwrap();
    let mut claimed = store.claim_deliveries(1).await.unwrap();
    let first = claimed.remove(0);
    let before = store.last_event_seq().await.unwrap();
    let (dead, seen) = counted(store.delivery_dead(&first, &ev, "HTTP 500", false)).await;
    assert!(dead.unwrap());
    assert_eq!(seen.len(), 1, "giving up is one call, was {seen:?}");
    assert!(
        !store
            .delivery_dead(&first, &ev, "HTTP 500", false)
            .await
            .unwrap()
    );
    let second = store.claim_deliveries(1).await.unwrap().remove(0);
    let (dead, seen) = counted(store.delivery_dead(&second, &ev, "HTTP 410", true)).await;
    assert!(dead.unwrap());
    assert_eq!(
        seen.len(),
        1,
        "giving up and disabling is one call, was {seen:?}"
    );
    assert_eq!(
        store
            .target_disabled(&second.target_key)
            .await
            .unwrap()
            .as_deref(),
        Some("HTTP 410")
    );
    assert_eq!(
        store.target_disabled(&first.target_key).await.unwrap(),
        None
    );
    let evs = store.events_after(before, 10).await.unwrap();
    let dead: Vec<(&str, &serde_json::Value)> =
        evs.iter().map(|e| (e.kind.as_str(), &e.payload)).collect();
    assert_eq!(dead.len(), 2, "one event per death: {dead:?}");
    for ((kind, payload), (d, error, disabled)) in dead
        .iter()
        .zip([(&first, "HTTP 500", false), (&second, "HTTP 410", true)])
    {
        assert_eq!(*kind, "delivery.dead");
        assert_eq!(
            **payload,
            serde_json::json!({
                "delivery_id": d.id, "event_seq": seq, "event_type": ev.kind,
                "target": "exec", "origin": "session", "attempts": 1,
                "error": error, "disabled": disabled,
            })
        );
    }
    assert_eq!(evs[0].entity_id, ev.entity_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_start_and_outcome_are_one_database_call_each() {
    use handoff::store::sessions::{Begin, Complete, NewCall};
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = db.open().await;
    store
        .register_session(&handoff::store::sessions::NewSession {
            session_id: "s1".into(),
            agent: "claude".into(),
            project: "web".into(),
            cwd: "/tmp".into(),
            wake_target: None,
        })
        .await
        .unwrap();
    let payload = serde_json::json!({"path": "a.txt"});
    let call = NewCall {
        event_id: "e1",
        session_id: "s1",
        tool: "write",
        payload: &payload,
        replay_safe: true,
    };
    let before = store.last_event_seq().await.unwrap();
    let (begun, seen) = counted(store.ledger_begin(&call)).await;
    let Begin::Started { entry } = begun.unwrap() else {
        panic!("the first start starts")
    };
    assert_eq!(seen.len(), 1, "a start is one call, was {seen:?}");
    let result = serde_json::json!({"bytes": 3});
    let (done, seen) = counted(store.ledger_complete("s1", "e1", true, &result)).await;
    assert!(matches!(done.unwrap(), Complete::Completed { .. }));
    assert_eq!(seen.len(), 1, "an outcome is one call, was {seen:?}");

    // Repeats write nothing and log nothing; a different payload conflicts.
    assert!(matches!(
        store.ledger_begin(&call).await.unwrap(),
        Begin::Existing {
            finished: Some(_),
            ..
        }
    ));
    assert!(matches!(
        store
            .ledger_complete("s1", "e1", true, &result)
            .await
            .unwrap(),
        Complete::Existing { .. }
    ));
    let other = serde_json::json!({"path": "b.txt"});
    assert!(matches!(
        store
            .ledger_begin(&NewCall {
                payload: &other,
                ..call
            })
            .await
            .unwrap(),
        Begin::Conflict { .. }
    ));
    let events = store.events_after(before, 100).await.unwrap();
    let got: Vec<_> = events
        .iter()
        .map(|e| {
            (
                e.kind.as_str(),
                e.entity_id.as_str(),
                e.channel.as_str(),
                e.project.as_str(),
                e.payload.clone(),
            )
        })
        .collect();
    let payload = |seq: i64| serde_json::json!({"event_id": "e1", "tool": "write", "ledger_seq": seq, "replay_safe": true});
    assert_eq!(
        got,
        [
            ("ledger.started", "s1", "agent", "web", payload(entry.seq)),
            (
                "ledger.completed",
                "s1",
                "agent",
                "web",
                payload(entry.seq + 1)
            ),
        ]
    );

    // A session nobody registered: refused in words, nothing written.
    let err = store
        .ledger_begin(&NewCall {
            session_id: "nobody",
            ..call
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is not registered"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_registration_checkpoint_and_end_are_one_database_call_each() {
    use handoff::store::sessions::{Checkpointed, Ended, NewSession, WakeTarget};
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = warmed(&db).await;
    let before = store.last_event_seq().await.unwrap();
    let new = NewSession {
        session_id: "s2".into(),
        agent: "codex".into(),
        project: "api".into(),
        cwd: "/srv".into(),
        wake_target: Some(WakeTarget::Exec {
            argv: vec!["true".into()],
            timeout_secs: None,
        }),
    };
    let (registered, seen) = counted(store.register_session(&new)).await;
    let session = registered.unwrap();
    assert_eq!(seen.len(), 1, "a registration is one call, was {seen:?}");
    // Registering again without a target keeps the stored one.
    let again = store
        .register_session(&NewSession {
            wake_target: None,
            ..new.clone()
        })
        .await
        .unwrap();
    assert_eq!(again.wake_target, session.wake_target);

    let (saved, seen) = counted(store.checkpoint("s2", session.revision, "{\"step\":1}")).await;
    let Checkpointed::Saved { session: saved } = saved.unwrap() else {
        panic!("the current revision saves")
    };
    assert_eq!(seen.len(), 1, "a checkpoint is one call, was {seen:?}");
    // A stale revision is refused with the current one, and logs nothing.
    let stale = store
        .checkpoint("s2", session.revision, "{\"step\":2}")
        .await
        .unwrap();
    assert_eq!(
        stale,
        Checkpointed::Stale {
            expected: session.revision,
            current: saved.revision
        }
    );
    assert_eq!(
        store.checkpoint("nobody", 0, "{}").await.unwrap(),
        Checkpointed::NotFound
    );

    let (ended, seen) = counted(store.end_session("s2")).await;
    assert!(matches!(ended.unwrap(), Ended::Ended { .. }));
    assert_eq!(seen.len(), 1, "ending a session is one call, was {seen:?}");
    assert!(matches!(
        store.end_session("s2").await.unwrap(),
        Ended::AlreadyEnded { .. }
    ));

    let got: Vec<_> = store
        .events_after(before, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.actor, e.channel, e.project, e.session, e.payload))
        .collect();
    let row = |kind: &str, payload| {
        (
            kind.to_string(),
            "codex".to_string(),
            "agent".to_string(),
            "api".to_string(),
            "s2".to_string(),
            payload,
        )
    };
    assert_eq!(
        got,
        [
            row("session.registered", serde_json::json!({"wake": "exec"})),
            row("session.registered", serde_json::json!({"wake": "exec"})),
            row(
                "session.checkpointed",
                serde_json::json!({"revision": saved.revision, "bytes": 10})
            ),
            row("session.ended", serde_json::json!({})),
        ]
    );
}

/// An inbound wake is one call: the delivery's row, its `session.wake`
/// event (with the registered session's project) and the event's seq on
/// the row. A replay of the same delivery id is one call too, writes
/// nothing and answers with the first delivery's seq.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_wake_is_one_database_call() {
    use handoff::store::sessions::NewSession;
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = warmed(&db).await;
    store
        .register_session(&NewSession {
            session_id: "s-w".into(),
            agent: "codex".into(),
            project: "api".into(),
            ..NewSession::default()
        })
        .await
        .unwrap();
    let before = store.last_event_seq().await.unwrap();
    let body = serde_json::json!({"run": 7, "ok": false});
    let (first, seen) = counted(store.record_wake("s-w", "ci", "delivery-1", body.clone())).await;
    let first = first.unwrap();
    assert_eq!(seen.len(), 1, "a wake is one call, was {seen:?}");
    assert!(first.new);
    assert_eq!(first.seq, before + 1);
    let (again, seen) = counted(store.record_wake("s-w", "ci", "delivery-1", body.clone())).await;
    assert_eq!(seen.len(), 1, "a replayed wake is one call, was {seen:?}");
    let again = again.unwrap();
    assert!(!again.new, "{again:?}");
    assert_eq!(again.seq, first.seq, "a replay answers with the first seq");
    // Another source may use the same delivery id; an unregistered session
    // gets its wake too, with no project.
    let other = store
        .record_wake(
            "nobody-yet",
            "github",
            "delivery-1",
            serde_json::json!(null),
        )
        .await
        .unwrap();
    assert!(other.new);
    assert_eq!(other.seq, first.seq + 1);

    let got: Vec<_> = store
        .events_after(before, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.seq, e.kind, e.actor, e.channel, e.project, e.session, e.payload,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                first.seq,
                "session.wake".to_string(),
                "ci".to_string(),
                "webhook".to_string(),
                "api".to_string(),
                "s-w".to_string(),
                serde_json::json!({"source": "ci", "delivery_id": "delivery-1", "body": body}),
            ),
            (
                other.seq,
                "session.wake".to_string(),
                "github".to_string(),
                "webhook".to_string(),
                String::new(),
                "nobody-yet".to_string(),
                serde_json::json!({"source": "github", "delivery_id": "delivery-1", "body": null}),
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_pickup_is_one_database_call_and_a_lost_race_logs_nothing() {
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let store = warmed(&db).await;
    let before = store.last_event_seq().await.unwrap();
    let (moved, seen) = counted(store.advance_wait_cursor("s3", 0, 7, "waiter-1")).await;
    assert!(moved.unwrap(), "the first waiter moves the cursor");
    assert_eq!(seen.len(), 1, "a pickup is one call, was {seen:?}");
    assert!(
        !store
            .advance_wait_cursor("s3", 0, 9, "waiter-2")
            .await
            .unwrap(),
        "a waiter holding the old cursor loses"
    );
    let got: Vec<_> = store
        .events_after(before, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.actor, e.session, e.payload))
        .collect();
    assert_eq!(
        got,
        [(
            "session.picked_up".to_string(),
            "waiter-1".to_string(),
            "s3".to_string(),
            serde_json::json!({"from": 0, "to": 7})
        )]
    );
}

/// Recovery's transitions are one call each too, their audit rows and
/// events as before: a verifier's take-over of a lapsed execution, its
/// re-run verdict (back to `approved`), its failure to decide (`unknown`),
/// a lapse with no verifier (`unknown`), and a person's resolution.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_transitions_are_one_database_call_each() {
    use handoff::store::actions::{Resolution, Status, Verdict};
    let _turn = TURN.lock().await;
    calls();
    let db = TempDb::new();
    let (store, clock) = db.open_manual(1_700_000_000_000).await;
    common::calls::warm(&store).await;
    let mut p = proposal(40);
    p.approvals_required = 1;
    let id = store.propose(&p).await.unwrap().action.id;
    store.approve(&id, Actor::cli("a"), None).await.unwrap();
    // Claimed, then its executor goes silent: the lease lapses.
    let lapse = |owner: &'static str| {
        let (store, clock, id) = (store.clone(), clock.clone(), id.clone());
        async move {
            store.claim(&id, owner, 1_000).await.unwrap();
            clock.advance(1_000);
            let lapsed = store.lapsed().await.unwrap();
            assert_eq!(lapsed.len(), 1);
            lapsed.into_iter().next().unwrap()
        }
    };
    let last_audit = |store: Store, id: String| async move {
        let a = store.action_audit(&id).await.unwrap();
        let e = a.last().unwrap().clone();
        (e.event, e.actor, e.details)
    };

    let action = lapse("exec-1").await;
    let argv = vec!["verify".to_string(), "--mail".to_string()];
    let (took, seen) = counted(store.take_for_verifier(&action, &argv)).await;
    let me = took.unwrap().expect("the first recoverer takes over");
    assert_eq!(seen.len(), 1, "a take-over is one call, was {seen:?}");
    assert!(
        store
            .take_for_verifier(&action, &argv)
            .await
            .unwrap()
            .is_none(),
        "a second recoverer does not"
    );
    let (event, actor, details) = last_audit(store.clone(), id.clone()).await;
    assert_eq!((event.as_str(), actor.as_str()), ("verifying", me.as_str()));
    assert_eq!(
        details,
        serde_json::json!({"previous_owner": "exec-1", "verifier": ["verify", "--mail"]})
    );

    let (rerun, seen) = counted(store.record_verdict(&action, &me, &Ok(Verdict::Rerun))).await;
    assert_eq!(rerun.unwrap().unwrap().status, Status::Approved);
    assert_eq!(seen.len(), 1, "a re-run verdict is one call, was {seen:?}");
    let (event, actor, details) = last_audit(store.clone(), id.clone()).await;
    assert_eq!((event.as_str(), actor.as_str()), ("retry", me.as_str()));
    assert_eq!(
        details,
        serde_json::json!({"attempts": 1, "reason": "verifier: not executed, re-run"})
    );

    let action = lapse("exec-2").await;
    let me = store
        .take_for_verifier(&action, &argv)
        .await
        .unwrap()
        .unwrap();
    let verdict = Err("timed out; the api_token s3cret was refused".to_string());
    let (unknown, seen) = counted(store.record_verdict(&action, &me, &verdict)).await;
    assert_eq!(unknown.unwrap().unwrap().status, Status::Unknown);
    assert_eq!(
        seen.len(),
        1,
        "an undecided verdict is one call, was {seen:?}"
    );
    let (event, actor, details) = last_audit(store.clone(), id.clone()).await;
    assert_eq!((event.as_str(), actor.as_str()), ("unknown", "recovery"));
    assert_eq!(details["owner"], me.as_str());
    let reason = details["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the verifier could not decide: timed out")
            && !reason.contains("s3cret"),
        "the verifier's words are scrubbed: {reason}"
    );

    let (resolved, seen) =
        counted(store.resolve_unknown(&id, Actor::cli("alice"), Resolution::Retry)).await;
    assert_eq!(resolved.unwrap().unwrap().status, Status::Approved);
    assert_eq!(seen.len(), 1, "a resolution is one call, was {seen:?}");
    let (event, actor, details) = last_audit(store.clone(), id.clone()).await;
    assert_eq!((event.as_str(), actor.as_str()), ("retry", "alice"));
    assert_eq!(
        details,
        serde_json::json!({
            "resolved_by": "alice",
            "resolution": "retry",
            "note": "at-least-once: a person chose to run it again after an unknown outcome",
        })
    );
    let again = store
        .resolve_unknown(&id, Actor::cli("bob"), Resolution::Failed)
        .await
        .unwrap();
    assert_eq!(
        again.unwrap_err().status,
        Status::Approved,
        "only unknown is resolved"
    );

    let action = lapse("exec-3").await;
    let (lapsed, seen) = counted(store.lapse_to_unknown(&action)).await;
    let settled = lapsed.unwrap().unwrap();
    assert_eq!(settled.status, Status::Unknown);
    assert_eq!(seen.len(), 1, "a lapse is one call, was {seen:?}");
    let (event, actor, details) = last_audit(store.clone(), id.clone()).await;
    assert_eq!((event.as_str(), actor.as_str()), ("unknown", "recovery"));
    assert_eq!(details["owner"], "exec-3");

    // Every transition appended its event, in order, with the status after it.
    let evs: Vec<(String, String)> = store
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.entity_id == id)
        .map(|e| {
            (
                e.kind,
                e.payload["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let tail: Vec<(&str, &str)> = evs[evs.len() - 5..]
        .iter()
        .map(|(k, s)| (k.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        tail,
        [
            ("action.verifying", "executing"),
            ("action.unknown", "unknown"),
            ("action.retry", "approved"),
            ("action.claimed", "executing"),
            ("action.unknown", "unknown"),
        ]
    );
}
