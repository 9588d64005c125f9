//! Inbound wakes recorded through `Store::record_wake`: one `session.wake`
//! event per delivery, replays deduplicated by `(source, delivery_id)`;
//! the `wait` cursor's claim; and the session writes' events, the same
//! rows on both engines. Every test runs on both engines
//! (tests/common/engine.rs).

mod common;

use common::count;
use common::engine::{Db, Engine};
use handoff::clock::ManualClock;
use handoff::store::Store;
use handoff::store::actions::{Actor, ClaimOutcome, NewAction};
use handoff::store::deliveries::NewDelivery;
use handoff::store::sessions::{NewCall, NewSession, WakeTarget};
use serde_json::json;

async fn a_wake_is_recorded_once_per_delivery_id(db: Db) {
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

async fn a_wake_needs_a_session_id(db: Db) {
    let store = db.open().await;
    let err = store
        .record_wake("  ", "ci", "d", json!({}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("session id"), "{err}");
    assert_eq!(count(&store, "events").await, 0);
}

/// One delivery sent twice at once, through two handles (two processes):
/// one is new, the other a replay pointing at the same event, and the
/// log holds one wake.
async fn one_delivery_racing_itself_is_recorded_once(db: Db) {
    let a = db.open().await;
    let b = db.open().await;
    for i in 0..5 {
        let id = format!("d-{i}");
        let (x, y) = tokio::join!(
            a.record_wake("s1", "ci", &id, json!({"i": i})),
            b.record_wake("s1", "ci", &id, json!({"i": i}))
        );
        let (x, y) = (x.unwrap(), y.unwrap());
        assert_eq!(u8::from(x.new) + u8::from(y.new), 1, "{x:?} {y:?}");
        assert_eq!(x.seq, y.seq, "both name the one event");
    }
    assert_eq!(count(&a, "session_wakes").await, 5);
    assert_eq!(count(&a, "events").await, 5);
}

/// Two waiters on one session read the same cursor and race to move it:
/// exactly one claims the events, and one `session.picked_up` is written.
async fn racing_cursor_claims_hand_each_event_out_once(db: Db) {
    let a = db.open().await;
    let b = db.open().await;
    for i in 0..3 {
        a.record_wake("sess-r", "ci", &format!("d{i}"), json!({}))
            .await
            .unwrap();
    }
    for round in 0..3 {
        let (ca, ea) = a.unclaimed_events("sess-r").await.unwrap();
        let (cb, eb) = b.unclaimed_events("sess-r").await.unwrap();
        assert_eq!((ca, ea.len()), (cb, eb.len()), "round {round}");
        let to = ea.last().map_or(ca + 1, |e| e.seq);
        let (x, y) = tokio::join!(
            a.advance_wait_cursor("sess-r", ca, to, "x"),
            b.advance_wait_cursor("sess-r", cb, to, "y")
        );
        assert_eq!(
            u8::from(x.unwrap()) + u8::from(y.unwrap()),
            1,
            "round {round}"
        );
        assert!(a.unclaimed_events("sess-r").await.unwrap().1.is_empty());
        // A later wake moves the next round's cursor on.
        a.record_wake("sess-r", "ci", &format!("later{round}"), json!({}))
            .await
            .unwrap();
    }
    let picked = a
        .events_for("session", "sess-r")
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "session.picked_up")
        .count();
    assert_eq!(picked, 3, "one pickup per round");
    assert!(a.session_known("sess-r").await.unwrap());
    assert!(!a.session_known("nobody").await.unwrap());
    assert_eq!(
        a.session_event_mark("sess-r").await.unwrap(),
        a.last_event_seq().await.unwrap()
    );
}

/// The decision events a session's `wait` claims (reading after its
/// cursor, then moving it), as (type, action id).
async fn claimed(s: &Store, session: &str) -> Vec<(String, String)> {
    let (cursor, evs) = s.unclaimed_events(session).await.unwrap();
    if let Some(last) = evs.last() {
        assert!(
            s.advance_wait_cursor(session, cursor, last.seq, "w")
                .await
                .unwrap()
        );
    }
    evs.into_iter().map(|e| (e.kind, e.entity_id)).collect()
}

/// An action proposed with `--exec` wakes its session once, on its
/// outcome: its approval is no arrival (its proposer runs it). A plain
/// action's approval still is.
async fn an_exec_action_wakes_its_session_once_on_its_outcome(db: Db) {
    let s = db.open().await;
    let new = |kind: &str, exec: Option<Vec<String>>| NewAction {
        kind: kind.into(),
        summary: kind.into(),
        session: "sess-x".into(),
        exec,
        ..NewAction::default()
    };
    let run = s
        .propose(&new("deploy.run", Some(vec!["true".into()])))
        .await
        .unwrap()
        .action
        .id;
    let plain = s
        .propose(&new("deploy.plain", None))
        .await
        .unwrap()
        .action
        .id;
    s.approve(&run, Actor::cli("alice"), None).await.unwrap();
    s.approve(&plain, Actor::cli("alice"), None).await.unwrap();
    assert_eq!(
        claimed(&s, "sess-x").await,
        [("action.approved".to_string(), plain.clone())]
    );
    assert!(matches!(
        s.claim(&run, "runner", 60_000).await.unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
    assert!(
        claimed(&s, "sess-x").await.is_empty(),
        "a claim is no arrival"
    );
    s.complete(&run, "runner", true, json!({}), None)
        .await
        .unwrap();
    assert_eq!(
        claimed(&s, "sess-x").await,
        [("action.executed".to_string(), run.clone())]
    );
    assert!(claimed(&s, "sess-x").await.is_empty());
}

both_engines!(
    an_exec_action_wakes_its_session_once_on_its_outcome,
    a_wake_is_recorded_once_per_delivery_id,
    a_wake_needs_a_session_id,
    one_delivery_racing_itself_is_recorded_once,
    racing_cursor_claims_hand_each_event_out_once,
);

/// Every session write that appends an event, refusals among them, at
/// fixed times.
async fn script(s: &Store, clock: &ManualClock) {
    let session = |id: &str, wake: Option<WakeTarget>| NewSession {
        session_id: id.into(),
        agent: "claude \"code\"".into(),
        project: "proj é".into(),
        cwd: "/w".into(),
        wake_target: wake,
    };
    let hook = WakeTarget::Webhook {
        url: "https://example.com/h".into(),
        secret: "whsec_x".into(),
    };
    s.register_session(&session("s1", Some(hook)))
        .await
        .unwrap();
    s.register_session(&session("s2", None)).await.unwrap();
    clock.advance(1);
    s.checkpoint("s1", 1, "{\"step\": \"é\"}").await.unwrap();
    s.checkpoint("s1", 1, "stale").await.unwrap();
    s.end_session("s2").await.unwrap();
    s.end_session("s2").await.unwrap();
    clock.advance(1);
    let payload = json!({"z": 1.5, "a": [1, "✓"]});
    let call = NewCall {
        event_id: "e1",
        session_id: "s1",
        tool: "http \"post\"",
        payload: &payload,
        replay_safe: true,
    };
    s.ledger_begin(&call).await.unwrap();
    s.ledger_begin(&call).await.unwrap();
    s.ledger_complete("s1", "e1", false, &json!({"err": "boom"}))
        .await
        .unwrap();
    let wake = s
        .record_wake("s1", "github", "gh-1", json!({"b": 2.25, "a": "x\ny"}))
        .await
        .unwrap();
    s.record_wake("s1", "github", "gh-1", json!({}))
        .await
        .unwrap();
    s.record_wake("loose", "ci", "c-1", json!(null))
        .await
        .unwrap();
    s.advance_wait_cursor("s1", 0, wake.seq, "claude")
        .await
        .unwrap();
    s.advance_wait_cursor("s1", 0, wake.seq, "claude")
        .await
        .unwrap();
    let target = NewDelivery {
        target_key: "webhook:1".into(),
        origin: "session".into(),
        target: WakeTarget::Exec {
            argv: vec!["true".into()],
            timeout_secs: Some(5),
        },
        lease_ms: 1_000,
    };
    s.enqueue_deliveries(wake.seq, &[target], 0).await.unwrap();
    let d = s.claim_deliveries(5).await.unwrap().remove(0);
    let ev = s.event_at(wake.seq).await.unwrap().unwrap();
    s.delivery_dead(&d, &ev, "HTTP 410 \"gone\"", true)
        .await
        .unwrap();
}

/// The same session, ledger, wake and delivery writes leave the same
/// events on both engines, payload text included (SQLite's `json_object`
/// and the triggers' text), and the same session rows.
#[tokio::test]
async fn the_same_session_writes_leave_the_same_rows_on_both_engines() {
    let mut seen = Vec::new();
    for engine in [Engine::Sqlite, Engine::Postgres] {
        let db = Db::new(engine).await;
        let (s, clock) = db.open_manual(1_800_000_000_000).await;
        script(&s, &clock).await;
        let events = db
            .rows(
                "SELECT CAST(seq AS TEXT), CAST(at AS TEXT), type, entity_kind, entity_id, actor,
                        channel, project, session, payload
                 FROM events ORDER BY events.seq",
            )
            .await;
        let sessions = db
            .rows(
                "SELECT session_id, agent, project, cwd, wake_target, state_blob, status,
                        CAST(revision AS TEXT), CAST(last_wait_seq AS TEXT),
                        CAST(ended_at AS TEXT), CAST(updated_at AS TEXT)
                 FROM agent_sessions ORDER BY session_id",
            )
            .await;
        let rest = db
            .rows(
                "SELECT status, last_error FROM deliveries
                 UNION ALL SELECT target_key, reason FROM disabled_targets
                 UNION ALL SELECT source || '/' || delivery_id, CAST(event_seq AS TEXT)
                           FROM session_wakes
                 ORDER BY 1",
            )
            .await;
        assert_eq!(events.len(), 10, "{events:#?}");
        seen.push((events, sessions, rest));
    }
    let (lite, pg) = (&seen[0], &seen[1]);
    for (i, (a, b)) in lite.0.iter().zip(&pg.0).enumerate() {
        assert_eq!(a, b, "event {i}: sqlite vs postgres");
    }
    assert_eq!(lite.1, pg.1, "sessions: sqlite vs postgres");
    assert_eq!(lite.2, pg.2, "deliveries and wakes: sqlite vs postgres");
}
