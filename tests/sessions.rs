//! Sessions and the execution ledger through the store and the real binary:
//! checkpoint CAS, end, ledger idempotency and conflicts, and the ledger's
//! append-only triggers. Every store test runs on both engines
//! (tests/common/engine.rs); the CLI one and the one proposing an action
//! stay on SQLite (see each).

mod common;

use common::engine::{Db, Engine};
use common::{TempDb, count, json, stderr};
use handoff::store::Store;
use handoff::store::sessions::{Begin, Checkpointed, Complete, Ended, NewCall, NewSession};
use serde_json::{Value, json};

async fn register(store: &Store, id: &str) {
    store
        .register_session(&NewSession {
            session_id: id.into(),
            agent: "claude".into(),
            project: "proj".into(),
            ..NewSession::default()
        })
        .await
        .unwrap();
}

fn call<'a>(
    event_id: &'a str,
    tool: &'a str,
    payload: &'a Value,
    replay_safe: bool,
) -> NewCall<'a> {
    NewCall {
        event_id,
        session_id: "s1",
        tool,
        payload,
        replay_safe,
    }
}

async fn checkpoint_cas_refuses_a_stale_revision_and_writes_nothing(db: Db) {
    let store = db.open().await;
    register(&store, "s1").await;
    let saved = store.checkpoint("s1", 1, r#"{"step":1}"#).await.unwrap();
    let Checkpointed::Saved { session } = saved else {
        panic!("first checkpoint must be saved: {saved:?}");
    };
    assert_eq!(session.revision, 2);
    // A twin still holding revision 1 loses, and is told the current one.
    let events_before = count(&store, "events").await;
    let stale = store
        .checkpoint("s1", 1, r#"{"step":"twin"}"#)
        .await
        .unwrap();
    assert_eq!(
        stale,
        Checkpointed::Stale {
            expected: 1,
            current: 2
        }
    );
    let s = store.get_session("s1").await.unwrap().unwrap();
    assert_eq!(s.state_blob.as_deref(), Some(r#"{"step":1}"#));
    assert_eq!(s.revision, 2);
    assert_eq!(count(&store, "events").await, events_before);
    assert_eq!(
        store.checkpoint("nobody", 1, "{}").await.unwrap(),
        Checkpointed::NotFound
    );
}

async fn two_handles_racing_on_one_revision_have_exactly_one_winner(db: Db) {
    let a = db.open().await;
    let b = db.open().await;
    register(&a, "s1").await;
    let (ra, rb) = tokio::join!(
        a.checkpoint("s1", 1, r#""a""#),
        b.checkpoint("s1", 1, r#""b""#)
    );
    let saved = [ra.unwrap(), rb.unwrap()]
        .into_iter()
        .filter(|r| matches!(r, Checkpointed::Saved { .. }))
        .count();
    assert_eq!(saved, 1);
    assert_eq!(a.get_session("s1").await.unwrap().unwrap().revision, 2);
}

async fn an_ended_session_refuses_checkpoints_until_registered_again(db: Db) {
    let store = db.open().await;
    register(&store, "s1").await;
    assert!(matches!(
        store.end_session("s1").await.unwrap(),
        Ended::Ended { .. }
    ));
    assert!(matches!(
        store.end_session("s1").await.unwrap(),
        Ended::AlreadyEnded { .. }
    ));
    assert!(matches!(
        store.checkpoint("s1", 1, "{}").await.unwrap(),
        Checkpointed::Ended { .. }
    ));
    register(&store, "s1").await;
    let s = store.get_session("s1").await.unwrap().unwrap();
    assert_eq!((s.status.as_str(), s.ended_at), ("active", None));
    assert!(matches!(
        store.checkpoint("s1", 1, "{}").await.unwrap(),
        Checkpointed::Saved { .. }
    ));
    let kinds: Vec<String> = store
        .events_for("session", "s1")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "session.registered",
            "session.ended",
            "session.registered",
            "session.checkpointed"
        ]
    );
}

async fn ledger_begin_twice_with_the_same_payload_is_a_no_op(db: Db) {
    let store = db.open().await;
    register(&store, "s1").await;
    let p = json!({"to": "a@example.com", "n": [1, 2]});
    let Begin::Started { entry } = store
        .ledger_begin(&call("e1", "send", &p, false))
        .await
        .unwrap()
    else {
        panic!("first begin starts");
    };
    // Same content, keys in another order: the canonical payload is equal.
    let same = json!({"n": [1, 2], "to": "a@example.com"});
    let again = store
        .ledger_begin(&call("e1", "send", &same, false))
        .await
        .unwrap();
    assert_eq!(
        again,
        Begin::Existing {
            entry: entry.clone(),
            finished: None
        }
    );
    assert_eq!(count(&store, "execution_ledger").await, 1);
    let started_events = store
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "ledger.started")
        .count();
    assert_eq!(started_events, 1, "a no-op appends no event");

    // Completed: a later begin tells the caller not to run it again.
    let done = store
        .ledger_complete("s1", "e1", true, &json!({"id": 7}))
        .await
        .unwrap();
    let Complete::Completed { entry: outcome } = done else {
        panic!("first complete records: {done:?}");
    };
    assert_eq!(
        store
            .ledger_begin(&call("e1", "send", &p, false))
            .await
            .unwrap(),
        Begin::Existing {
            entry,
            finished: Some(outcome.clone())
        }
    );
    assert_eq!(
        store
            .ledger_complete("s1", "e1", true, &json!({"id": 7}))
            .await
            .unwrap(),
        Complete::Existing { entry: outcome }
    );
    assert_eq!(count(&store, "execution_ledger").await, 2);
}

async fn ledger_conflicts_are_typed_and_write_nothing(db: Db) {
    let store = db.open().await;
    register(&store, "s1").await;
    let p = json!({"to": "a"});
    store
        .ledger_begin(&call("e1", "send", &p, false))
        .await
        .unwrap();
    let rows = count(&store, "execution_ledger").await;
    let events = count(&store, "events").await;

    let other = json!({"to": "b"});
    match store
        .ledger_begin(&call("e1", "send", &other, false))
        .await
        .unwrap()
    {
        Begin::Conflict { existing, differs } => {
            assert_eq!(differs, ["payload"]);
            assert_eq!(existing.payload, p);
        }
        r => panic!("expected a conflict, got {r:?}"),
    }
    match store
        .ledger_begin(&call("e1", "mail", &p, true))
        .await
        .unwrap()
    {
        Begin::Conflict { differs, .. } => assert_eq!(differs, ["tool", "replay_safe"]),
        r => panic!("expected a conflict, got {r:?}"),
    }
    // Completing twice with another result or status: a conflict.
    store
        .ledger_complete("s1", "e1", true, &json!("ok"))
        .await
        .unwrap();
    match store
        .ledger_complete("s1", "e1", true, &json!("other"))
        .await
        .unwrap()
    {
        Complete::Conflict { differs, .. } => assert_eq!(differs, ["result"]),
        r => panic!("expected a conflict, got {r:?}"),
    }
    match store
        .ledger_complete("s1", "e1", false, &json!("ok"))
        .await
        .unwrap()
    {
        Complete::Conflict { differs, existing } => {
            assert_eq!(differs, ["status"]);
            assert_eq!(existing.status, "completed");
        }
        r => panic!("expected a conflict, got {r:?}"),
    }
    assert_eq!(
        store
            .ledger_complete("s1", "never", true, &json!(null))
            .await
            .unwrap(),
        Complete::NotStarted
    );
    assert_eq!(count(&store, "execution_ledger").await, rows + 1);
    assert_eq!(count(&store, "events").await, events + 1);
}

async fn racing_completed_and_failed_record_exactly_one_outcome(db: Db) {
    let a = db.open().await;
    register(&a, "s1").await;
    let b = db.open().await;
    a.ledger_begin(&call("e1", "deploy", &json!({}), false))
        .await
        .unwrap();
    let (done, boom) = (json!("done"), json!("boom"));
    let (ra, rb) = tokio::join!(
        a.ledger_complete("s1", "e1", true, &done),
        b.ledger_complete("s1", "e1", false, &boom)
    );
    let outcomes = [ra.unwrap(), rb.unwrap()];
    let won = outcomes
        .iter()
        .filter(|o| matches!(o, Complete::Completed { .. }))
        .count();
    let lost = outcomes
        .iter()
        .filter(|o| matches!(o, Complete::Conflict { .. }))
        .count();
    assert_eq!((won, lost), (1, 1));
    assert_eq!(count(&a, "execution_ledger").await, 2);
}

async fn the_ledger_refuses_update_and_delete(db: Db) {
    let store = db.open().await;
    register(&store, "s1").await;
    store
        .ledger_begin(&call("e1", "send", &json!({}), false))
        .await
        .unwrap();
    let upd = db
        .exec("UPDATE execution_ledger SET status = 'completed'", &[])
        .await
        .unwrap_err();
    assert!(upd.contains("append-only"), "{upd}");
    let del = db
        .exec("DELETE FROM execution_ledger", &[])
        .await
        .unwrap_err();
    assert!(del.contains("append-only"), "{del}");
    assert_eq!(count(&store, "execution_ledger").await, 1);
}

// SQLite only: it runs the CLI, which still refuses a PostgreSQL URL.
#[tokio::test]
async fn cli_checkpoint_and_ledger_exit_codes() {
    let db = TempDb::new();
    let out = db.cli(&[
        "--json",
        "session",
        "register",
        "--session",
        "cli-session-1",
        "--agent",
        "codex",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["session"]["revision"], 1);

    // A short suffix names the session; a stale revision exits 3 with the current one.
    let ok = db.cli(&[
        "--json",
        "session",
        "checkpoint",
        "--session",
        "ion-1",
        "--revision",
        "1",
        "--state",
        r#"{"at":"step 1"}"#,
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert_eq!(json(&ok)["session"]["revision"], 2);
    let stale = db.cli(&[
        "--json",
        "session",
        "checkpoint",
        "--session",
        "cli-session-1",
        "--revision",
        "1",
        "--state",
        "{}",
    ]);
    assert_eq!(stale.status.code(), Some(3));
    assert_eq!(
        json(&stale)["error"]["detail"],
        json!({"outcome": "stale", "expected": 1, "current": 2})
    );
    assert_eq!(json(&stale)["error"]["reason"], "stale");
    assert!(
        stderr(&stale).contains("--revision 2"),
        "{}",
        stderr(&stale)
    );
    let bad = db.cli(&[
        "session",
        "checkpoint",
        "--session",
        "cli-session-1",
        "--revision",
        "2",
        "--state",
        "{nope",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not valid JSON"), "{}", stderr(&bad));
    let missing = db.cli(&[
        "session",
        "checkpoint",
        "--session",
        "ghost",
        "--revision",
        "1",
        "--state",
        "{}",
    ]);
    assert_eq!(missing.status.code(), Some(4));

    let begin = [
        "--json",
        "ledger",
        "begin",
        "--session",
        "cli-session-1",
        "--event-id",
        "ev-1",
        "--tool",
        "http.post",
        "--payload",
        r#"{"url":"x"}"#,
    ];
    assert_eq!(json(&db.cli(&begin))["outcome"], "started");
    assert_eq!(json(&db.cli(&begin))["outcome"], "existing");
    let mut conflict = begin.to_vec();
    conflict[10] = r#"{"url":"y"}"#;
    let c = db.cli(&conflict);
    assert_eq!(c.status.code(), Some(3));
    assert_eq!(json(&c)["error"]["reason"], "conflict");
    assert_eq!(json(&c)["error"]["detail"]["outcome"], "conflict");
    let done = db.cli(&[
        "--json",
        "ledger",
        "complete",
        "--session",
        "cli-session-1",
        "--event-id",
        "ev-1",
        "--ok",
        "--result",
        r#"{"status":200}"#,
    ]);
    assert_eq!(json(&done)["outcome"], "completed");
    let twice = db.cli(&[
        "ledger",
        "complete",
        "--session",
        "cli-session-1",
        "--event-id",
        "ev-1",
        "--failed",
        "--result",
        "{}",
    ]);
    assert_eq!(twice.status.code(), Some(3));
    let none = db.cli(&[
        "ledger",
        "complete",
        "--session",
        "cli-session-1",
        "--event-id",
        "ev-404",
        "--ok",
    ]);
    assert_eq!(none.status.code(), Some(4));
    let list = json(&db.cli(&["--json", "ledger", "list", "--session", "cli-session-1"]));
    let statuses: Vec<&str> = list["ledger_entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["started", "completed"]);
}

async fn wake_targets_are_checked_before_anything_is_stored(db: Db) {
    use handoff::store::sessions::{WakeTarget, target_kind};
    let store = db.open().await;
    let with = |id: &str, t: &WakeTarget| NewSession {
        session_id: id.into(),
        agent: "claude".into(),
        project: "proj".into(),
        wake_target: Some(t.clone()),
        ..NewSession::default()
    };
    let exec = |argv: &[&str]| WakeTarget::Exec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        timeout_secs: None,
    };
    let hook = |url: &str, secret: &str| WakeTarget::Webhook {
        url: url.into(),
        secret: secret.into(),
    };
    let tmux = |pane: &str| WakeTarget::Tmux {
        pane: pane.into(),
        agent: Some("claude".into()),
    };
    for (t, words) in [
        (exec(&[]), "needs a program"),
        (exec(&[" "]), "needs a program"),
        (
            hook("ftp://example.com/x", "whsec_abc"),
            "not an http(s) URL",
        ),
        (hook("example.com/x", "whsec_abc"), "not an http(s) URL"),
        (hook("https://example.com/x", "abc"), "`whsec_…` secret"),
        (tmux(" "), "needs a pane"),
    ] {
        let e = store.register_session(&with("s1", &t)).await.unwrap_err();
        assert!(
            matches!(&e, handoff::store::Error::Invalid(m) if m.contains(words)),
            "{t:?}: {e}"
        );
    }
    assert_eq!(count(&store, "agent_sessions").await, 0);
    assert_eq!(count(&store, "events").await, 0);

    // Every good target is stored as given, and the registration event
    // names its kind.
    for (i, (t, kind)) in [
        (exec(&["true"]), "exec"),
        (hook("http://127.0.0.1:9/x", "whsec_abc"), "webhook"),
        (hook("https://example.com/x", "whsec_abc"), "webhook"),
        (tmux("%3"), "tmux"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("good{i}");
        let s = store.register_session(&with(&id, &t)).await.unwrap();
        assert_eq!(s.wake_target.as_ref(), Some(&t));
        assert_eq!(target_kind(&t), kind);
        let payload = db
            .rows(&format!(
                "SELECT payload FROM events
                 WHERE type = 'session.registered' AND entity_id = '{id}'"
            ))
            .await;
        assert_eq!(
            payload,
            [[Some(format!(r#"{{"wake":"{kind}"}}"#))]],
            "SQLite's json_object text"
        );
    }
}

async fn ledger_names_and_sizes_stop_at_their_exact_limits(db: Db) {
    const MAX: usize = 1024 * 1024; // the ledger's 1 MiB
    let store = db.open().await;
    register(&store, "s1").await;
    let events_before = count(&store, "events").await;
    fn invalid<T: std::fmt::Debug>(r: handoff::store::Result<T>, words: &str) {
        match r {
            Err(handoff::store::Error::Invalid(m)) => assert!(m.contains(words), "{m}"),
            other => panic!("expected Invalid mentioning {words}, got {other:?}"),
        }
    }
    let p = json!({});
    let long = "x".repeat(201);
    for id in ["", " ", long.as_str()] {
        invalid(
            store.ledger_begin(&call(id, "send", &p, false)).await,
            "an event id is 1 to 200 characters",
        );
        invalid(
            store.ledger_complete("s1", id, true, &p).await,
            "an event id is 1 to 200 characters",
        );
    }
    for tool in ["", long.as_str()] {
        invalid(
            store.ledger_begin(&call("e1", tool, &p, false)).await,
            "a tool name is 1 to 200 characters",
        );
    }
    // `{"p":""}` is 8 bytes around the filler.
    let sized = |n: usize| json!({ "p": "x".repeat(n - 8) });
    invalid(
        store
            .ledger_begin(&call("e1", "send", &sized(MAX + 1), false))
            .await,
        "the payload is 1048577 bytes",
    );
    assert_eq!(count(&store, "execution_ledger").await, 0);
    assert_eq!(count(&store, "events").await, events_before);

    let edge = "y".repeat(200);
    let big = sized(MAX);
    match store
        .ledger_begin(&call(&edge, &edge, &big, false))
        .await
        .unwrap()
    {
        Begin::Started { entry } => assert_eq!(entry.payload, big),
        r => panic!("200-character names and a 1 MiB payload are accepted: {r:?}"),
    }
    invalid(
        store
            .ledger_complete("s1", &edge, true, &sized(MAX + 1))
            .await,
        "the result is 1048577 bytes",
    );
    assert!(matches!(
        store
            .ledger_complete("s1", &edge, true, &big)
            .await
            .unwrap(),
        Complete::Completed { .. }
    ));
}

async fn a_session_id_is_1_to_200_characters_trimmed(db: Db) {
    let store = db.open().await;
    let new = |id: &str| NewSession {
        session_id: id.into(),
        agent: "claude".into(),
        ..NewSession::default()
    };
    for bad in [String::new(), "  ".into(), "s".repeat(201)] {
        match store.register_session(&new(&bad)).await {
            Err(handoff::store::Error::Invalid(m)) => {
                assert!(m.contains("a session id is 1 to 200 characters"), "{m}")
            }
            other => panic!("{} characters: {other:?}", bad.len()),
        }
    }
    assert_eq!(count(&store, "agent_sessions").await, 0);
    let edge = "s".repeat(200);
    let s = store
        .register_session(&new(&format!(" {edge} ")))
        .await
        .unwrap();
    assert_eq!(s.session_id, edge, "stored trimmed");
}

async fn a_checkpoint_holds_exactly_one_mebibyte(db: Db) {
    const MAX: usize = 1024 * 1024;
    let store = db.open().await;
    register(&store, "s1").await;
    match store.checkpoint("s1", 1, &"x".repeat(MAX + 1)).await {
        Err(handoff::store::Error::Invalid(m)) => {
            assert!(m.contains("the state is 1048577 bytes"), "{m}")
        }
        other => panic!("one byte over: {other:?}"),
    }
    let full = "x".repeat(MAX);
    let saved = store.checkpoint("s1", 1, &full).await.unwrap();
    assert!(
        matches!(&saved, Checkpointed::Saved { session } if session.revision == 2),
        "exactly 1 MiB is kept"
    );
}

async fn sessions_list_newest_first_filtered_by_status_and_project(db: Db) {
    let (store, clock) = db.open_manual(1_800_000_000_000).await;
    for (id, project) in [("a", "p1"), ("b", "p2"), ("c", "p1")] {
        store
            .register_session(&NewSession {
                session_id: id.into(),
                agent: "claude".into(),
                project: project.into(),
                ..NewSession::default()
            })
            .await
            .unwrap();
        clock.advance(1);
    }
    store.end_session("c").await.unwrap();
    let ids = |v: Vec<handoff::store::sessions::Session>| {
        v.into_iter().map(|s| s.session_id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.list_sessions(None, None).await.unwrap()),
        ["c", "b", "a"]
    );
    assert_eq!(
        ids(store.list_sessions(Some("active"), None).await.unwrap()),
        ["b", "a"]
    );
    assert_eq!(
        ids(store.list_sessions(None, Some("p1")).await.unwrap()),
        ["c", "a"]
    );
    assert_eq!(
        ids(store
            .list_sessions(Some("ended"), Some("p1"))
            .await
            .unwrap()),
        ["c"]
    );
    assert!(
        store
            .list_sessions(Some("ended"), Some("p2"))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_ledger_call_names_the_sessions_that_began_it(db: Db) {
    let store = db.open().await;
    register(&store, "s1").await;
    let none: Vec<String> = Vec::new();
    assert_eq!(store.ledger_sessions("e1", None, 5).await.unwrap(), none);
    store
        .ledger_begin(&call("e1", "send", &json!({}), false))
        .await
        .unwrap();
    store
        .ledger_complete("s1", "e1", true, &json!("ok"))
        .await
        .unwrap();
    assert_eq!(
        store.ledger_sessions("e1", None, 5).await.unwrap(),
        ["s1"],
        "still after it finished"
    );
    // Event ids are per session: another session may use e1 too, and a
    // project filter sees only its own.
    store
        .register_session(&NewSession {
            session_id: "s2".into(),
            project: "other".into(),
            ..NewSession::default()
        })
        .await
        .unwrap();
    let payload = json!({"x": 1});
    let mut c = call("e1", "send", &payload, false);
    c.session_id = "s2";
    assert!(matches!(
        store.ledger_begin(&c).await.unwrap(),
        Begin::Started { .. }
    ));
    assert_eq!(
        store.ledger_sessions("e1", None, 5).await.unwrap(),
        ["s1", "s2"]
    );
    assert_eq!(
        store.ledger_sessions("e1", Some("other"), 5).await.unwrap(),
        ["s2"]
    );
    assert_eq!(store.ledger_sessions("e2", None, 5).await.unwrap(), none);
}

async fn a_session_id_in_any_script_registers_and_ends(db: Db) {
    let store = db.open().await;
    let id = "Ⱦ½íe\u{104a00}";
    store
        .register_session(&NewSession {
            session_id: id.into(),
            agent: "a".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        handoff::store::short_id(id),
        id,
        "fewer than 8 characters: all of it"
    );
    assert_eq!(handoff::store::short_id("0123456789ab"), "456789ab");
    assert!(matches!(
        store.end_session(id).await.unwrap(),
        Ended::Ended { .. }
    ));
}

async fn a_ledger_event_id_of_200_characters_in_any_script_is_taken(db: Db) {
    let store = db.open().await;
    store
        .register_session(&NewSession {
            session_id: "s".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let payload = json!({});
    let long: String = "Ω".repeat(200); // 200 characters, 400 bytes
    let call = |event_id| NewCall {
        event_id,
        session_id: "s",
        tool: "t",
        payload: &payload,
        replay_safe: false,
    };
    assert!(matches!(
        store.ledger_begin(&call(&long)).await.unwrap(),
        Begin::Started { .. }
    ));
    let longer = "Ω".repeat(201);
    let err = store.ledger_begin(&call(&longer)).await.unwrap_err();
    assert!(err.to_string().contains("1 to 200 characters"), "{err}");
}

// SQLite only for now: it proposes an action, a part of the store not on
// PostgreSQL in this slice (its session-id half is
// `a_session_id_is_1_to_200_characters_trimmed`, on both engines).
#[tokio::test]
async fn limits_stated_in_characters_count_characters() {
    let db = TempDb::new();
    let store = db.open().await;
    // A session id of 200 characters (400 bytes) is taken, 201 refused.
    let id = "Ω".repeat(200);
    store
        .register_session(&NewSession {
            session_id: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    let err = store
        .register_session(&NewSession {
            session_id: "Ω".repeat(201),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("1 to 200 characters"), "{err}");
    // An action's kind (100) and summary (500) likewise.
    let mut new = common::new_action(&"ø".repeat(100), "{}");
    new.summary = "é".repeat(500);
    store.propose(&new).await.unwrap();
    new.kind = "ø".repeat(101);
    new.dedup_key = None;
    let err = store.propose(&new).await.unwrap_err();
    assert!(err.to_string().contains("1 to 100 characters"), "{err}");
}

/// Make the event log refuse `session.*` events (`on`), or accept them
/// again, with a trigger of the engine's own kind.
async fn refuse_session_events(db: &Db, on: bool) {
    let sql: &[&str] = match (db.engine, on) {
        (Engine::Sqlite, true) => &[
            "CREATE TRIGGER refuse_session_events BEFORE INSERT ON events
             WHEN NEW.type LIKE 'session.%'
             BEGIN SELECT RAISE(ABORT, 'the event log refuses this'); END",
        ],
        (Engine::Sqlite, false) => &["DROP TRIGGER refuse_session_events"],
        (Engine::Postgres, true) => &[
            "CREATE FUNCTION refuse_session_events() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'the event log refuses this'; END $$",
            "CREATE TRIGGER refuse_session_events BEFORE INSERT ON events
             FOR EACH ROW WHEN (NEW.type LIKE 'session.%')
             EXECUTE FUNCTION refuse_session_events()",
        ],
        (Engine::Postgres, false) => &["DROP TRIGGER refuse_session_events ON events"],
    };
    for sql in sql {
        db.exec(sql, &[]).await.unwrap();
    }
}

/// A session write and its event are one call, all or nothing: when the
/// event cannot be written (here a trigger refuses it, as a full disk or
/// a broken file would), the session keeps its old state. The calls ran
/// each statement in autocommit, so the checkpoint, the end, the
/// registration and the wait cursor's move stayed without their events.
async fn a_session_write_whose_event_fails_leaves_the_session_as_it_was(db: Db) {
    let store = db.open().await;
    register(&store, "s-1").await;
    let before = store.get_session("s-1").await.unwrap().unwrap();
    refuse_session_events(&db, true).await;
    let events = count(&store, "events").await;

    let cp = store
        .checkpoint("s-1", before.revision, "{\"step\":2}")
        .await;
    assert!(cp.is_err(), "{cp:?}");
    let ended = store.end_session("s-1").await;
    assert!(ended.is_err(), "{ended:?}");
    let moved = store
        .advance_wait_cursor(
            "s-1",
            before.last_wait_seq,
            before.last_wait_seq + 5,
            "agent",
        )
        .await;
    assert!(moved.is_err(), "{moved:?}");
    let again = store
        .register_session(&NewSession {
            session_id: "s-2".into(),
            agent: "codex".into(),
            project: "other".into(),
            ..NewSession::default()
        })
        .await;
    assert!(again.is_err(), "{again:?}");
    let wake = store
        .record_wake("s-1", "ci", "d-1", serde_json::json!({"ok": true}))
        .await;
    assert!(wake.is_err(), "{wake:?}");
    assert_eq!(
        count(&store, "session_wakes").await,
        0,
        "the wake was undone"
    );

    let after = store.get_session("s-1").await.unwrap().unwrap();
    assert_eq!(after.revision, before.revision, "the checkpoint was undone");
    assert_eq!(after.state_blob, before.state_blob);
    assert_eq!(after.status, "active", "the end was undone");
    assert_eq!(
        after.last_wait_seq, before.last_wait_seq,
        "the cursor did not move"
    );
    assert!(
        store.get_session("s-2").await.unwrap().is_none(),
        "the registration was undone"
    );
    assert_eq!(count(&store, "events").await, events);

    // The next write, once events are accepted again, goes through whole.
    refuse_session_events(&db, false).await;
    let cp = store
        .checkpoint("s-1", before.revision, "{\"step\":2}")
        .await
        .unwrap();
    assert!(matches!(cp, Checkpointed::Saved { .. }), "{cp:?}");
    assert_eq!(count(&store, "events").await, events + 1);
    // The undone wake's delivery id is new again: recorded, with its event.
    let wake = store
        .record_wake("s-1", "ci", "d-1", serde_json::json!({"ok": true}))
        .await
        .unwrap();
    assert!(wake.new, "{wake:?}");
    assert_eq!(wake.seq, store.last_event_seq().await.unwrap());
}

/// A call retried under its request id (the daemon's answer lost, the
/// call sent again) replays the first checkpoint's outcome instead of
/// being refused as stale by its own first write.
async fn a_repeated_checkpoint_under_one_request_id_replays_its_outcome(db: Db) {
    use handoff::store::request;
    let (store, clock) = db.open_manual(1_800_000_000_000).await;
    register(&store, "s1").await;
    let call = || request::scope("req-1".into(), store.checkpoint("s1", 1, r#"{"step":1}"#));
    let first = call().await.unwrap();
    assert!(matches!(&first, Checkpointed::Saved { session } if session.revision == 2));
    let events = count(&store, "events").await;
    assert_eq!(call().await.unwrap(), first, "replayed, not stale");
    assert_eq!(
        count(&store, "events").await,
        events,
        "nothing written twice"
    );
    // Without the id the same call is a stale twin.
    assert!(matches!(
        store.checkpoint("s1", 1, "{}").await.unwrap(),
        Checkpointed::Stale { current: 2, .. }
    ));
    // Kept for a day: then forgotten, and the id is a new call (stale).
    assert_eq!(store.forget_requests().await.unwrap(), 0);
    clock.advance(request::KEEP_MS + 1);
    assert_eq!(store.forget_requests().await.unwrap(), 1);
    assert!(matches!(call().await.unwrap(), Checkpointed::Stale { .. }));
}

/// A call recorded for a session that never registered is refused in
/// words saying how to register it (the trigger's abort, on either
/// engine), and nothing is written.
async fn a_ledger_call_of_an_unregistered_session_is_refused_in_words(db: Db) {
    let store = db.open().await;
    let payload = json!({});
    let err = store
        .ledger_begin(&call("e1", "send", &payload, false))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, handoff::store::Error::Invalid(m)
            if m.contains("session `s1` is not registered: register it first")),
        "{err}"
    );
    assert_eq!(count(&store, "execution_ledger").await, 0);
    assert_eq!(count(&store, "events").await, 0);
    // Registered, the same call starts.
    register(&store, "s1").await;
    assert!(matches!(
        store
            .ledger_begin(&call("e1", "send", &payload, false))
            .await
            .unwrap(),
        Begin::Started { .. }
    ));
}

both_engines!(
    a_ledger_call_of_an_unregistered_session_is_refused_in_words,
    a_repeated_checkpoint_under_one_request_id_replays_its_outcome,
    checkpoint_cas_refuses_a_stale_revision_and_writes_nothing,
    two_handles_racing_on_one_revision_have_exactly_one_winner,
    an_ended_session_refuses_checkpoints_until_registered_again,
    ledger_begin_twice_with_the_same_payload_is_a_no_op,
    ledger_conflicts_are_typed_and_write_nothing,
    racing_completed_and_failed_record_exactly_one_outcome,
    the_ledger_refuses_update_and_delete,
    wake_targets_are_checked_before_anything_is_stored,
    ledger_names_and_sizes_stop_at_their_exact_limits,
    a_session_id_is_1_to_200_characters_trimmed,
    a_checkpoint_holds_exactly_one_mebibyte,
    sessions_list_newest_first_filtered_by_status_and_project,
    a_ledger_call_names_the_sessions_that_began_it,
    a_session_id_in_any_script_registers_and_ends,
    a_ledger_event_id_of_200_characters_in_any_script_is_taken,
    a_session_write_whose_event_fails_leaves_the_session_as_it_was,
);
