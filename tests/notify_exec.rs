//! The notify worker in-process with a manual clock: exec targets get the
//! exact JSON and environment, failures are retried on the schedule and end
//! dead with a `delivery.dead` event, a hanging target's whole process group
//! is killed at its timeout, and events reach only targets they match.

mod common;

use std::time::Duration;

use common::{TempDb, Worker, answer, ask, session_with, wait_for};
use handoff::store::Store;
use handoff::store::actions::{Actor, NewAction};
use handoff::store::deliveries::Delivery;
use handoff::store::sessions::WakeTarget;

const T0: i64 = 1_800_000_000_000;

fn sh(script: &str) -> WakeTarget {
    WakeTarget::Exec {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        timeout_secs: Some(10),
    }
}

/// The only delivery, once `pred` holds for it.
async fn delivery_when(store: &Store, what: &str, pred: impl Fn(&Delivery) -> bool) -> Delivery {
    wait_for(15, what, || async {
        let all = store.all_deliveries().await.unwrap();
        assert!(all.len() <= 1, "{all:#?}");
        all.into_iter().find(|d| pred(d))
    })
    .await
}

async fn answered_seq(store: &Store, qid: &str) -> i64 {
    store
        .events_for("question", qid)
        .await
        .unwrap()
        .into_iter()
        .rev()
        .find(|e| e.kind == "question.answered")
        .expect("answered event")
        .seq
}

#[tokio::test]
async fn an_exec_target_receives_the_exact_json_and_environment() {
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    let dir = db.dir.path().display().to_string();
    let script = format!("cat > {dir}/in.json; env | grep '^HANDOFF_' | sort > {dir}/env.txt");
    session_with(&store, "s", Some(sh(&script))).await;
    let w = Worker::start(&store, "", &[0, 1000]).await;

    let q = ask(&store, "Which database?").await;
    store
        .reply_inbox(&q.id, &answer("SQLite"))
        .await
        .unwrap()
        .expect("accepted");
    let d = delivery_when(&store, "delivered", |d| d.status == "delivered").await;
    w.stop().await;

    let seq = answered_seq(&store, &q.id).await;
    assert_eq!(d.event_seq, seq);
    assert_eq!(d.attempts, 1);
    let ev = store.event_at(seq).await.unwrap().unwrap();
    let got: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(db.dir.path().join("in.json")).unwrap())
            .unwrap();
    let want = serde_json::json!({
        "event_id": format!("evt_{seq}"),
        "type": "question.answered",
        "session": "s",
        "item": {"kind": "question", "id": q.id},
        "payload": ev.payload,
        "at": handoff::clock::format_rfc3339(T0),
    });
    assert_eq!(got, want);
    assert_eq!(got["payload"]["kind"], "answer");
    // The answer itself, so a receiver without API access can act on it.
    assert_eq!(got["payload"]["text"], "SQLite");
    assert_eq!(got["payload"]["source"], "inbox");
    let env = std::fs::read_to_string(db.dir.path().join("env.txt")).unwrap();
    let want_env = format!(
        "HANDOFF_EVENT=question.answered\nHANDOFF_EVENT_ID=evt_{seq}\nHANDOFF_ITEM=question:{}\nHANDOFF_SESSION=s\n",
        q.id
    );
    assert_eq!(env, want_env);
}

#[tokio::test]
async fn a_failing_target_is_retried_on_schedule_then_dead_with_an_event() {
    let db = TempDb::new();
    let (store, clock) = db.open_manual(T0).await;
    let log = db.dir.path().join("attempts");
    let script = format!(
        "echo $HANDOFF_EVENT_ID >> {}; echo boom >&2; exit 3",
        log.display()
    );
    session_with(&store, "s", Some(sh(&script))).await;
    let w = Worker::start(&store, "", &[0, 1000, 5000]).await;

    let q = ask(&store, "Deploy?").await;
    store
        .reply_inbox(&q.id, &answer("yes"))
        .await
        .unwrap()
        .expect("accepted");
    let d = delivery_when(&store, "first failure", |d| {
        d.status == "pending" && d.attempts == 1
    })
    .await;
    assert_eq!(d.next_attempt_at, T0 + 1000, "second attempt 1 s later");
    let err = d.last_error.clone().unwrap();
    assert!(err.contains("exit") && err.contains("boom"), "{err}");

    // Not due yet: a few ticks pass without a second attempt.
    clock.advance(999);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(store.all_deliveries().await.unwrap()[0].attempts, 1);

    clock.advance(1);
    let d = delivery_when(&store, "second failure", |d| {
        d.status == "pending" && d.attempts == 2
    })
    .await;
    assert_eq!(
        d.next_attempt_at,
        T0 + 1000 + 5000,
        "third attempt 5 s later"
    );

    clock.advance(5000);
    let d = delivery_when(&store, "dead", |d| d.status == "dead").await;
    w.stop().await;
    assert_eq!(d.attempts, 3);
    assert!(
        d.last_error
            .as_deref()
            .unwrap()
            .contains("gave up after 3 attempts"),
        "{d:?}"
    );
    let seq = answered_seq(&store, &q.id).await;
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        lines,
        format!("evt_{seq}\nevt_{seq}\nevt_{seq}\n"),
        "same id each time"
    );
    let dead: Vec<_> = store
        .events_for("question", &q.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "delivery.dead")
        .collect();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].payload["event_type"], "question.answered");
    assert_eq!(dead[0].payload["target"], "exec");
}

fn alive(pid: &str) -> bool {
    // A zombie (not yet reaped by init) counts as dead.
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_hanging_target_and_its_children_are_killed_at_the_timeout() {
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    let dir = db.dir.path().display().to_string();
    let script = format!("sleep 300 & echo $! > {dir}/child.pid; echo $$ > {dir}/parent.pid; wait");
    let target = WakeTarget::Exec {
        argv: vec!["/bin/sh".into(), "-c".into(), script],
        timeout_secs: Some(1),
    };
    session_with(&store, "s", Some(target)).await;
    let w = Worker::start(&store, "", &[0, 3_600_000]).await;

    let q = ask(&store, "Hang?").await;
    store
        .reply_inbox(&q.id, &answer("ok"))
        .await
        .unwrap()
        .expect("accepted");
    let d = delivery_when(&store, "the timeout", |d| {
        d.status == "pending" && d.attempts == 1
    })
    .await;
    w.stop().await;
    assert!(
        d.last_error.as_deref().unwrap().contains("timed out"),
        "{d:?}"
    );
    let child = std::fs::read_to_string(db.dir.path().join("child.pid")).unwrap();
    let parent = std::fs::read_to_string(db.dir.path().join("parent.pid")).unwrap();
    wait_for(10, "the target's process group to die", || async {
        (!alive(&child) && !alive(&parent)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn events_reach_only_the_targets_they_match() {
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    let dir = db.dir.path().display().to_string();
    // The session has no target; rules decide.
    session_with(&store, "s", None).await;
    let config = format!(
        r#"
        [[notify]]
        name = "other-project"
        events = ["question.answered"]
        project = "other"
        exec = ["/bin/sh", "-c", "touch {dir}/other"]
        [[notify]]
        name = "other-agent"
        events = ["question.answered"]
        agent = "codex"
        exec = ["/bin/sh", "-c", "touch {dir}/codex"]
        [[notify]]
        name = "dismissals"
        events = ["question.dismissed"]
        exec = ["/bin/sh", "-c", "touch {dir}/dismissed"]
        [[notify]]
        name = "answers-here"
        events = ["question.answered"]
        project = "p"
        agent = "agent-1"
        exec = ["/bin/sh", "-c", "touch {dir}/answered"]
        "#
    );
    let w = Worker::start(&store, &config, &[0]).await;
    let q = ask(&store, "Colour?").await; // question.flagged wakes nobody
    store
        .reply_inbox(&q.id, &answer("blue"))
        .await
        .unwrap()
        .expect("accepted");
    let d = delivery_when(&store, "delivered", |d| d.status == "delivered").await;
    w.stop().await;
    assert_eq!(d.origin, "rule:answers-here");
    assert!(db.dir.path().join("answered").exists());
    for f in ["other", "codex", "dismissed"] {
        assert!(!db.dir.path().join(f).exists(), "{f} must not run");
    }
    assert_eq!(store.all_deliveries().await.unwrap().len(), 1);
}

/// An action proposed with `--exec` wakes its session once, on its
/// outcome: the approval enqueues nothing, since the proposer runs it. A
/// plain action's approval still wakes it.
#[tokio::test]
async fn an_exec_action_wakes_its_session_once_on_its_outcome() {
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    session_with(&store, "s", Some(sh("true"))).await;
    let w = Worker::start(&store, "", &[0]).await;
    let new = |kind: &str, exec: Option<Vec<String>>| NewAction {
        kind: kind.into(),
        summary: kind.into(),
        session: "s".into(),
        exec,
        ..NewAction::default()
    };
    let run = store
        .propose(&new("deploy.run", Some(vec!["true".into()])))
        .await
        .unwrap()
        .action
        .id;
    store
        .approve(&run, Actor::cli("alice"), None)
        .await
        .unwrap();
    store.claim(&run, "runner", 60_000).await.unwrap();
    store
        .complete(&run, "runner", true, serde_json::json!({}), None)
        .await
        .unwrap();
    let d = delivery_when(&store, "delivered", |d| d.status == "delivered").await;
    let ev = store.event_at(d.event_seq).await.unwrap().unwrap();
    assert_eq!(
        (ev.kind.as_str(), ev.entity_id.as_str()),
        ("action.executed", run.as_str())
    );

    let plain = store
        .propose(&new("deploy.plain", None))
        .await
        .unwrap()
        .action
        .id;
    store
        .approve(&plain, Actor::cli("alice"), None)
        .await
        .unwrap();
    wait_for(15, "the plain approval's wake", || async {
        let all = store.all_deliveries().await.unwrap();
        (all.len() == 2).then_some(all)
    })
    .await;
    w.stop().await;
    let all = store.all_deliveries().await.unwrap();
    let kinds: Vec<String> = {
        let mut k = Vec::new();
        for d in &all {
            k.push(store.event_at(d.event_seq).await.unwrap().unwrap().kind);
        }
        k
    };
    assert_eq!(kinds, ["action.executed", "action.approved"]);
}

/// The session's own wake skips an `--exec` action's approval, but a
/// `[[notify]]` rule that lists `action.approved` asked for that event and
/// still gets it.
#[tokio::test]
async fn a_rule_listing_approvals_still_hears_an_exec_actions_approval() {
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    session_with(&store, "s", Some(sh("true"))).await;
    let config = r#"
        [[notify]]
        name = "approvals"
        events = ["action.approved"]
        exec = ["true"]
        "#;
    let w = Worker::start(&store, config, &[0]).await;
    let run = store
        .propose(&NewAction {
            kind: "deploy.run".into(),
            summary: "deploy".into(),
            session: "s".into(),
            exec: Some(vec!["true".into()]),
            ..NewAction::default()
        })
        .await
        .unwrap()
        .action
        .id;
    store
        .approve(&run, Actor::cli("alice"), None)
        .await
        .unwrap();
    let d = delivery_when(&store, "delivered", |d| d.status == "delivered").await;
    w.stop().await;
    assert_eq!(d.origin, "rule:approvals");
    let all = store.all_deliveries().await.unwrap();
    assert_eq!(all.len(), 1, "the session is not woken by it: {all:?}");
}
