//! `handoff wait` as a real process, with no daemon: it returns when another
//! process answers, decides or wakes the session, prints what arrived, marks
//! it picked up, and exits with the chosen code; on timeout it exits 5 with
//! nothing on stdout. Two waiters never both claim one arrival.

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::{TempDb, json, new_action, stderr, stdout};
use handoff::store::boards::{Annotate, BoardUpsert, Channel};
use serde_json::{Value, json};

/// Start `handoff wait` in the background against `db`.
fn spawn_wait(db: &TempDb, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("wait")
        .args(args)
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_SESSION")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn handoff wait")
}

/// Give the waiter a moment to start polling, so the arrival lands while it
/// blocks (the test does not depend on it: an arrival before the first poll
/// is picked up too).
async fn let_it_block() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn finish(child: Child) -> Output {
    tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait for handoff"))
        .await
        .unwrap()
}

fn ask_cli(db: &TempDb, session: &str, title: &str) -> String {
    let out = db.cli(&["--json", "ask", "--session", session, title]);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)["question"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn wait_returns_when_another_process_answers_and_marks_the_reply_picked_up() {
    let db = TempDb::new();
    let id = ask_cli(&db, "sess-w", "Which database?");
    let waiter = spawn_wait(
        &db,
        &[
            "--session",
            "sess-w",
            "--timeout",
            "60s",
            "--exit-code",
            "2",
            "--json",
        ],
    );
    let_it_block().await;
    let r = db.cli(&["reply", &id, "Postgres, please"]);
    assert!(r.status.success(), "{}", stderr(&r));
    let out = finish(waiter).await;
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["session_id"], "sess-w");
    let arrivals = v["arrivals"].as_array().unwrap();
    assert_eq!(arrivals.len(), 1);
    assert_eq!(arrivals[0]["type"], "reply");
    assert_eq!(arrivals[0]["question"]["id"], id.as_str());
    assert_eq!(arrivals[0]["question"]["reply"]["text"], "Postgres, please");

    // Marked picked up: the store says so, and a second wait finds nothing.
    let store = db.open().await;
    let q = store.get_question(&id).await.unwrap().unwrap();
    assert!(!q.has_unseen_reply(), "the reply must be marked seen");
    let pickups: Vec<String> = store
        .events_for("question", &id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "question.picked_up")
        .map(|e| e.actor)
        .collect();
    assert_eq!(pickups, ["handoff wait"]);
    let again = db.cli(&["wait", "--session", "sess-w", "--timeout", "200ms"]);
    assert_eq!(again.status.code(), Some(5));
}

#[tokio::test]
async fn wait_times_out_with_exit_5_and_no_arrivals_on_stdout() {
    let db = TempDb::new();
    ask_cli(&db, "sess-t", "Unanswered");
    let out = db.cli(&[
        "wait",
        "--session",
        "sess-t",
        "--timeout",
        "300ms",
        "--exit-code",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("timeout"), "{}", stderr(&out));
    let json_out = db.cli(&["--json", "wait", "--session", "sess-t", "--timeout", "0s"]);
    assert_eq!(json_out.status.code(), Some(5));
    // With --json a timeout is the error object, like every failure.
    let v = json(&json_out);
    assert_eq!(v["error"]["reason"], "timed_out", "{v}");
    assert!(v.get("arrivals").is_none(), "{v}");
}

#[tokio::test]
async fn wait_on_a_session_nothing_happened_under_exits_4_at_once() {
    let db = TempDb::new();
    ask_cli(&db, "sess-real", "Something");
    let out = db.cli(&["wait", "--session", "sess-typo", "--timeout", "10m"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no session `sess-typo`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
    // Registered, it waits as usual (and times out here).
    let reg = db.cli(&["session", "register", "--session", "sess-typo"]);
    assert!(reg.status.success(), "{}", stderr(&reg));
    let out = db.cli(&["wait", "--session", "sess-typo", "--timeout", "0s"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
}

#[tokio::test]
async fn an_answer_given_before_wait_starts_is_returned_at_once() {
    let db = TempDb::new();
    let id = ask_cli(&db, "sess-early", "Go?");
    assert!(db.cli(&["reply", &id, "yes"]).status.success());
    let out = db.cli(&["wait", "--session", "sess-early", "--timeout", "60s"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("answer on question"), "{text}");
    assert!(text.contains("yes"), "{text}");
}

#[tokio::test]
async fn wait_returns_for_an_action_decision_exactly_once() {
    let db = TempDb::new();
    let store = db.open().await;
    // new_action proposes for session `sess-1`.
    let id = store
        .propose(&new_action("deploy", r#"{"v":"1.2"}"#))
        .await
        .unwrap()
        .action
        .id;
    let waiter = spawn_wait(&db, &["--session", "sess-1", "--timeout", "60s", "--json"]);
    let_it_block().await;
    let ok = db.cli(&["approve", &id, "--as", "alice"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let out = finish(waiter).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let a = &v["arrivals"][0];
    assert_eq!(a["type"], "decision");
    assert_eq!(a["event"]["type"], "action.approved");
    assert_eq!(a["event"]["entity_id"], id.as_str());
    assert_eq!(a["event"]["actor"], "alice");
    // Claimed: the cursor moved past it.
    let again = db.cli(&["wait", "--session", "sess-1", "--timeout", "200ms"]);
    assert_eq!(again.status.code(), Some(5));
    let s = store.get_session("sess-1").await.unwrap().unwrap();
    assert_eq!(s.last_wait_seq, a["event"]["seq"].as_i64().unwrap());
}

#[tokio::test]
async fn wait_returns_for_an_inbound_wake_with_its_body() {
    let db = TempDb::new();
    let store = db.open().await;
    // Registered first (a SessionStart hook does it): `wait` refuses a
    // session nothing ever happened under.
    common::session_with(&store, "sess-gh", None).await;
    let waiter = spawn_wait(
        &db,
        &[
            "--session",
            "sess-gh",
            "--timeout",
            "60s",
            "--exit-code",
            "2",
        ],
    );
    let_it_block().await;
    store
        .record_wake(
            "sess-gh",
            "github",
            "delivery-42",
            json!({"action": "submitted", "review": {"state": "approved"}}),
        )
        .await
        .unwrap();
    let out = finish(waiter).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("wake from github (delivery delivery-42)"),
        "{text}"
    );
    assert!(text.contains(r#""state":"approved""#), "{text}");
    // A replayed delivery is not a second wake.
    let dup = store
        .record_wake("sess-gh", "github", "delivery-42", json!({}))
        .await
        .unwrap();
    assert!(!dup.new);
    let again = db.cli(&["wait", "--session", "sess-gh", "--timeout", "200ms"]);
    assert_eq!(again.status.code(), Some(5));
}

#[tokio::test]
async fn wait_returns_for_a_row_annotation_and_marks_it_delivered() {
    let db = TempDb::new();
    let store = db.open().await;
    let b = store
        .board_upsert(&BoardUpsert {
            project: "proj".into(),
            title: "Release".into(),
            session: "sess-b".into(),
            rows: serde_json::from_value(
                json!([{"label": "notes", "status": "blocked", "next_step": "approve the notes"}]),
            )
            .unwrap(),
            ..BoardUpsert::default()
        })
        .await
        .unwrap()
        .unwrap();
    let waiter = spawn_wait(&db, &["--session", "sess-b", "--timeout", "60s", "--json"]);
    let_it_block().await;
    store
        .annotate(&Annotate {
            board: b.board.id.clone(),
            label: "notes".into(),
            text: "ship it".into(),
            source: Channel::Chat,
            by: "carol".into(),
            ..Annotate::default()
        })
        .await
        .unwrap()
        .unwrap();
    let out = finish(waiter).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = json(&out);
    assert_eq!(v["arrivals"][0]["type"], "row");
    assert_eq!(v["arrivals"][0]["row"]["row"]["annotation"], "ship it");
    let rows = store.pending_rows_peek(None, Some("sess-b")).await.unwrap();
    assert!(rows[0].row.response.annotation_seen_at.is_some());
}

#[tokio::test]
async fn two_waiters_never_both_claim_one_wake() {
    let db = TempDb::new();
    let store = db.open().await;
    common::session_with(&store, "sess-2w", None).await;
    let a = spawn_wait(&db, &["--session", "sess-2w", "--timeout", "3s", "--json"]);
    let b = spawn_wait(&db, &["--session", "sess-2w", "--timeout", "3s", "--json"]);
    let_it_block().await;
    store
        .record_wake("sess-2w", "ci", "run-1", json!({"ok": true}))
        .await
        .unwrap();
    let (oa, ob) = (finish(a).await, finish(b).await);
    let mut codes = [oa.status.code(), ob.status.code()];
    codes.sort();
    assert_eq!(
        codes,
        [Some(0), Some(5)],
        "a: {} b: {}",
        stderr(&oa),
        stderr(&ob)
    );
}

#[tokio::test]
async fn racing_claims_on_two_handles_hand_each_event_out_once() {
    let db = TempDb::new();
    let s1 = db.open().await;
    let s2 = db.open().await;
    for i in 0..5 {
        s1.record_wake("sess-r", "ci", &format!("d{i}"), json!({"i": i}))
            .await
            .unwrap();
    }
    let (x, y) = tokio::join!(
        s1.claim_arrivals("sess-r", "x"),
        s2.claim_arrivals("sess-r", "y")
    );
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(x.len() + y.len(), 5, "x: {x:?}\ny: {y:?}");
    assert!(
        x.is_empty() || y.is_empty(),
        "one claim takes the whole batch"
    );
}

#[tokio::test]
async fn ask_takes_the_session_from_handoff_session() {
    let db = TempDb::new();
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["--json", "ask", "From the environment"])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_SESSION", "env-sess")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["question"]["session"], "env-sess");
}
