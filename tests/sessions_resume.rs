//! `resume(session)`: last checkpoint, ledger tail, interrupted calls
//! (replay-safe vs unknown), and every unclaimed answer, row response,
//! decision and wake of the session — read without marking anything.
//!
//! SQLite only for now: `resume` and `claim_arrivals` read the session's
//! board rows (`pending_rows_peek`), and the busy session proposes actions
//! and writes a board, parts of the store another slice ports to
//! PostgreSQL; the session, ledger, wake and cursor parts they read run on
//! both engines in tests/sessions.rs and tests/sessions_wake.rs. The
//! unregistered-session test runs the CLI, which refuses a URL.

mod common;

use common::{TempDb, new_action};
use handoff::store::Store;
use handoff::store::actions::Actor;
use handoff::store::boards::{Annotate, BoardUpsert, Channel};
use handoff::store::questions::{NewQuestion, NewReply};
use handoff::store::sessions::{NewCall, NewSession};
use serde_json::{Value, json};

async fn ask(store: &Store, session: &str, title: &str) -> String {
    store
        .flag(&NewQuestion {
            project: "proj".into(),
            agent: "claude".into(),
            session: session.into(),
            title: title.into(),
            ..NewQuestion::default()
        })
        .await
        .unwrap()
        .question
        .id
}

async fn reply(store: &Store, id: &str, text: &str) {
    store
        .reply_inbox(
            id,
            &NewReply {
                text: text.into(),
                by: "alice".into(),
                ..NewReply::default()
            },
        )
        .await
        .unwrap()
        .unwrap();
}

async fn begin(store: &Store, event_id: &str, replay_safe: bool) {
    store
        .ledger_begin(&NewCall {
            event_id,
            session_id: "sess-1",
            tool: "tool",
            payload: &json!({"id": event_id}),
            replay_safe,
        })
        .await
        .unwrap();
}

/// A session with one of everything waiting for it.
async fn busy_session(store: &Store) -> (String, String) {
    store
        .register_session(&NewSession {
            session_id: "sess-1".into(),
            agent: "claude".into(),
            project: "proj".into(),
            ..NewSession::default()
        })
        .await
        .unwrap();
    store
        .checkpoint("sess-1", 1, r#"{"plan":["a","b"],"done":1}"#)
        .await
        .unwrap();
    begin(store, "send-mail", false).await;
    begin(store, "read-file", true).await;
    begin(store, "finished", false).await;
    store
        .ledger_complete("sess-1", "finished", true, &json!("ok"))
        .await
        .unwrap();

    // A reply the agent already picked up (and has not resolved).
    let picked = ask(store, "sess-1", "Already read").await;
    reply(store, &picked, "seen").await;
    store
        .pending(None, Some("sess-1"), false, "agent")
        .await
        .unwrap();
    let answered = ask(store, "sess-1", "Which DB?").await;
    reply(store, &answered, "Postgres").await;
    let other = ask(store, "sess-2", "Someone else's").await;
    reply(store, &other, "not yours").await;
    ask(store, "sess-1", "No reply yet").await;

    let b = store
        .board_upsert(&BoardUpsert {
            project: "proj".into(),
            title: "Launch".into(),
            session: "sess-1".into(),
            rows: serde_json::from_value(
                json!([{"label": "dns", "status": "blocked", "next_step": "point it"}]),
            )
            .unwrap(),
            ..BoardUpsert::default()
        })
        .await
        .unwrap()
        .unwrap();
    store
        .annotate(&Annotate {
            board: b.board.id.clone(),
            label: "dns".into(),
            text: "done at the registrar".into(),
            source: Channel::Inbox,
            by: "bob".into(),
            ..Annotate::default()
        })
        .await
        .unwrap()
        .unwrap();

    let approved = store
        .propose(&new_action("deploy", "{}"))
        .await
        .unwrap()
        .action
        .id;
    store
        .approve(&approved, Actor::cli("alice"), None)
        .await
        .unwrap();
    store
        .propose(&new_action("still.pending", "{}"))
        .await
        .unwrap();
    store
        .record_wake(
            "sess-1",
            "github",
            "gh-1",
            json!({"workflow": "ci", "conclusion": "success"}),
        )
        .await
        .unwrap();
    (answered, approved)
}

#[tokio::test]
async fn resume_reports_everything_unclaimed_and_marks_nothing() {
    let db = TempDb::new();
    let store = db.open().await;
    let (answered, approved) = busy_session(&store).await;

    let r = store.resume("sess-1", 20).await.unwrap();
    assert_eq!(r.revision, Some(2));
    assert_eq!(r.state, Some(json!({"plan": ["a", "b"], "done": 1})));
    assert_eq!(r.ledger_tail.len(), 4);
    assert_eq!(
        store.resume("sess-1", 2).await.unwrap().ledger_tail.len(),
        2
    );

    let interrupted: Vec<(&str, bool, &str)> = r
        .interrupted
        .iter()
        .map(|i| (i.entry.event_id.as_str(), i.replay, i.disposition.as_str()))
        .collect();
    assert_eq!(
        interrupted,
        [
            ("send-mail", false, "unknown"),
            ("read-file", true, "replay")
        ]
    );

    // Every reply the agent has not resolved, the one it already picked up
    // marked as delivered.
    let answers: Vec<(&str, bool)> = r
        .answers
        .iter()
        .map(|q| {
            (
                q.title.as_str(),
                q.reply.as_ref().unwrap().seen_at.is_some(),
            )
        })
        .collect();
    assert_eq!(answers, [("Already read", true), ("Which DB?", false)]);
    assert_eq!(r.answers[1].id, answered);
    assert_eq!(r.rows.len(), 1);
    assert_eq!(
        r.rows[0].row.response.annotation.as_deref(),
        Some("done at the registrar")
    );
    let decisions: Vec<(&str, &str)> = r
        .decisions
        .iter()
        .map(|e| (e.kind.as_str(), e.entity_id.as_str()))
        .collect();
    assert_eq!(decisions, [("action.approved", approved.as_str())]);
    assert_eq!(r.wakes.len(), 1);
    assert_eq!(r.wakes[0].payload["body"]["conclusion"], "success");

    // A read: a second resume sees the same, and the reply is still unseen.
    let again = store.resume("sess-1", 20).await.unwrap();
    assert_eq!(again, r);
    let q = store.get_question(&answered).await.unwrap().unwrap();
    assert!(q.has_unseen_reply());

    // JSON shape an agent reads.
    let v: Value = serde_json::to_value(&r).unwrap();
    assert_eq!(v["interrupted"][0]["disposition"], "unknown");
    assert_eq!(v["interrupted"][0]["event_id"], "send-mail");
}

#[tokio::test]
async fn after_a_pickup_resume_no_longer_lists_the_claimed_items() {
    let db = TempDb::new();
    let store = db.open().await;
    busy_session(&store).await;
    let claimed = store.claim_arrivals("sess-1", "test").await.unwrap();
    // answer + row + decision + wake
    assert_eq!(claimed.len(), 4, "{claimed:#?}");
    let r = store.resume("sess-1", 20).await.unwrap();
    // Answers stay until resolved, all delivered now.
    assert_eq!(r.answers.len(), 2);
    assert!(
        r.answers
            .iter()
            .all(|q| q.reply.as_ref().unwrap().seen_at.is_some())
    );
    assert!(r.decisions.is_empty());
    assert!(r.wakes.is_empty());
    // A blocked row with a response stays listed until its status changes
    // (at-least-once), but it is no longer new.
    assert!(r.rows.iter().all(|p| !p.new));
    // Interrupted calls are not "claimed": they stay until completed.
    assert_eq!(r.interrupted.len(), 2);
    // Nothing left to claim.
    assert!(
        store
            .claim_arrivals("sess-1", "test")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn resume_of_an_unregistered_session_still_reports_its_answers() {
    let db = TempDb::new();
    let store = db.open().await;
    let id = ask(&store, "loose", "Proceed?").await;
    reply(&store, &id, "yes").await;
    let r = store.resume("loose", 20).await.unwrap();
    assert!(r.session.is_none());
    assert_eq!(r.state, None);
    assert_eq!(r.answers.len(), 1);
    let cli = db.cli(&["--json", "session", "resume", "--session", "loose"]);
    assert!(cli.status.success(), "{}", common::stderr(&cli));
    assert_eq!(common::json(&cli)["resume"]["answers"][0]["id"], id);
}

#[tokio::test]
async fn a_resume_is_quiet_only_when_no_list_has_anything() {
    let db = TempDb::new();
    let store = db.open().await;
    busy_session(&store).await;
    let busy = store.resume("sess-1", 20).await.unwrap();
    assert!(!busy.is_quiet());
    let mut none = busy.clone();
    none.interrupted.clear();
    none.answers.clear();
    none.rows.clear();
    none.decisions.clear();
    none.wakes.clear();
    assert!(none.is_quiet(), "the ledger tail and state are not news");
    // Any one list with something in it is enough to be worth a look.
    let only = |fill: &dyn Fn(&mut handoff::store::sessions::Resume)| {
        let mut r = none.clone();
        fill(&mut r);
        r
    };
    for (list, only) in [
        (
            "interrupted",
            only(&|r| r.interrupted = busy.interrupted.clone()),
        ),
        ("answers", only(&|r| r.answers = busy.answers.clone())),
        ("rows", only(&|r| r.rows = busy.rows.clone())),
        ("decisions", only(&|r| r.decisions = busy.decisions.clone())),
        ("wakes", only(&|r| r.wakes = busy.wakes.clone())),
    ] {
        assert!(!only.is_quiet(), "{list} alone is not quiet");
    }
}
