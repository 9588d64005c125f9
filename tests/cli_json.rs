//! The one JSON contract and the one exit-code rule, pinned through the real
//! binary for every command.
//!
//! Each success prints ONE object whose top-level keys are written out
//! here (not computed from the code under test); each entity carries `id`
//! and `short_id`. Each failure class — bad input (2), refused / already
//! decided (3), unknown id (4), timed out (5) — prints
//! `{"error": {"reason", "message", "detail"}}` on stdout with its code.

mod common;

use std::collections::BTreeSet;
use std::process::Output;

use common::{TempDb, stderr, stdout};
use serde_json::Value;

/// Run `handoff --json ARGS` against `db`, with a fixed user and no agent
/// environment leaking in.
fn run(db: &TempDb, args: &[&str]) -> Output {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(&all)
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_USER", "alice")
        .env_remove("HANDOFF_CONFIG")
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .env_remove("HANDOFF_SESSION")
        .env_remove("HANDOFF_PROJECT")
        .env_remove("HANDOFF_AGENT")
        .current_dir(db.dir.path())
        .output()
        .expect("run handoff")
}

/// stdout as exactly one JSON object (a second document fails to parse).
fn doc(o: &Output) -> Value {
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}); status {:?}\nstdout: {}\nstderr: {}",
            o.status,
            stdout(o),
            stderr(o)
        )
    });
    assert!(v.is_object(), "not an object: {v}");
    v
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn set(ks: &[&str]) -> BTreeSet<String> {
    ks.iter().map(|k| k.to_string()).collect()
}

/// A success with exactly `top` as top-level keys; returns the document.
fn ok(o: &Output, top: &[&str]) -> Value {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    let v = doc(o);
    assert_eq!(keys(&v), set(top), "{v:#}");
    v
}

/// An entity: has a string `id` and `short_id` (the id's last 8 characters).
fn entity(v: &Value) {
    let id = v["id"].as_str().unwrap_or_else(|| panic!("no id: {v:#}"));
    let short = v["short_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no short_id: {v:#}"));
    assert!(id.ends_with(short) && !short.is_empty(), "{v:#}");
}

/// A failure: exit `code`, `{"error": {reason, message, detail}}` on
/// stdout with the expected reason, and one `handoff: …` line on stderr.
fn err(o: &Output, code: i32, reason: &str) -> Value {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
    let v = doc(o);
    assert_eq!(keys(&v), set(&["error"]), "{v:#}");
    let e = &v["error"];
    assert_eq!(keys(e), set(&["reason", "message", "detail"]), "{e:#}");
    assert_eq!(e["reason"], reason, "{e:#}");
    let msg = e["message"].as_str().unwrap();
    assert!(!msg.is_empty() && !msg.contains('\n'), "one line: {msg:?}");
    assert!(stderr(o).contains(msg), "stderr says it too: {}", stderr(o));
    e.clone()
}

#[test]
fn questions_print_one_object_per_entity() {
    let db = TempDb::new();
    let v = ok(
        &run(
            &db,
            &["ask", "Ship it?", "--project", "p", "--session", "s1"],
        ),
        &["question", "created"],
    );
    entity(&v["question"]);
    assert_eq!(v["created"], true);
    let id = v["question"]["id"].as_str().unwrap().to_string();
    let short = v["question"]["short_id"].as_str().unwrap().to_string();

    let v = ok(&run(&db, &["reply", &short, "yes"]), &["question"]);
    entity(&v["question"]);
    let v = ok(&run(&db, &["show", &id]), &["question", "replies"]);
    entity(&v["question"]);
    assert!(v["replies"].is_array());
    let v = ok(
        &run(&db, &["pending", "--session", "s1"]),
        &["replies", "next"],
    );
    assert_eq!(v["next"], Value::Null);
    entity(&v["replies"][0]["question"]);
    let v = ok(&run(&db, &["questions"]), &["questions", "next"]);
    entity(&v["questions"][0]);
    let v = ok(&run(&db, &["snooze", &id, "--for", "1h"]), &["question"]);
    entity(&v["question"]);
    let v = ok(
        &run(&db, &["resolve", &id, "--outcome", "shipped"]),
        &["question"],
    );
    entity(&v["question"]);

    let q2 = ok(
        &run(&db, &["ask", "Again?", "--project", "p"]),
        &["question", "created"],
    );
    let id2 = q2["question"]["id"].as_str().unwrap();
    let v = ok(&run(&db, &["answer", id2, "no"]), &["question"]);
    entity(&v["question"]);
    let v = ok(&run(&db, &["dismiss", id2]), &["question"]);
    entity(&v["question"]);

    // Already closed: refused, with the store's reason and its detail.
    let e = err(&run(&db, &["reply", &id, "late"]), 3, "not_open");
    assert_eq!(e["detail"]["status"], "resolved", "{e:#}");
    // Unknown id.
    let e = err(&run(&db, &["show", "nosuchid"]), 4, "not_found");
    assert_eq!(e["detail"], Value::Null);
    err(&run(&db, &["reply", "nosuchid", "x"]), 4, "not_found");
}

#[test]
fn ask_wait_prints_the_question_or_an_error_never_nothing() {
    let db = TempDb::new();
    // Timed out: exit 5 and the error object carries the question, which
    // stays open.
    let o = run(
        &db,
        &[
            "ask",
            "Anyone?",
            "--project",
            "p",
            "--wait",
            "--timeout",
            "1ms",
        ],
    );
    let e = err(&o, 5, "timed_out");
    entity(&e["detail"]["question"]);
    assert_eq!(e["detail"]["question"]["status"], "open");

    // A reply already waiting: picked up and printed as the question.
    let id = e["detail"]["question"]["id"].as_str().unwrap().to_string();
    ok(&run(&db, &["reply", &id, "here"]), &["question"]);
    let o = run(
        &db,
        &[
            "ask",
            "Anyone?",
            "--project",
            "p",
            "--key",
            "k",
            "--wait",
            "--timeout",
            "1ms",
        ],
    );
    // A new question (no key matched before), so it times out too; the
    // keyed re-ask below updates it and finds the reply once given.
    let e = err(&o, 5, "timed_out");
    let kid = e["detail"]["question"]["id"].as_str().unwrap().to_string();
    ok(&run(&db, &["reply", &kid, "yes"]), &["question"]);
    let v = ok(
        &run(
            &db,
            &[
                "ask",
                "Anyone?",
                "--project",
                "p",
                "--key",
                "k",
                "--wait",
                "--timeout",
                "5s",
            ],
        ),
        &["question", "created", "answered"],
    );
    entity(&v["question"]);
    assert_eq!(v["answered"], true);
    assert_eq!(v["question"]["reply"]["text"], "yes", "{v:#}");
}

#[test]
fn bad_input_exits_2_with_an_error_object() {
    let db = TempDb::new();
    // Too many options: a value error from the store's rules.
    let o = run(
        &db,
        &[
            "ask", "Pick", "--option", "a", "--option", "b", "--option", "c", "--option", "d",
            "--option", "e",
        ],
    );
    err(&o, 2, "invalid");
    // One option is too few.
    err(&run(&db, &["ask", "Pick", "--option", "a"]), 2, "invalid");
    // A recommendation that names no option.
    let o = run(
        &db,
        &[
            "ask",
            "Pick",
            "--option",
            "a",
            "--option",
            "b",
            "--recommend",
            "z",
        ],
    );
    err(&o, 2, "invalid");
    // Bad JSON in every flag that takes JSON.
    let o = run(
        &db,
        &[
            "propose",
            "--kind",
            "k",
            "--summary",
            "s",
            "--args",
            "{nope",
        ],
    );
    err(&o, 2, "invalid");
    err(
        &run(&db, &["board", "upsert", "p", "B", "--rows", "[{"]),
        2,
        "malformed_json",
    );
    ok(
        &run(&db, &["session", "register", "--session", "s-bad"]),
        &["session"],
    );
    let o = run(
        &db,
        &[
            "session",
            "checkpoint",
            "--session",
            "s-bad",
            "--revision",
            "0",
            "--state",
            "{x",
        ],
    );
    err(&o, 2, "malformed_json");
    // A bad duration is a bad value; an unknown flag or command, usage.
    err(&run(&db, &["snooze", "x", "--for", "soon"]), 2, "invalid");
    err(&run(&db, &["questions", "--status", "later"]), 2, "invalid");
    err(&run(&db, &["questions", "--colour"]), 2, "usage");
    err(&run(&db, &["frobnicate"]), 2, "usage");
    // A named database that does not exist.
    let gone = db.dir.path().join("missing.db");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["--json", "--db", gone.to_str().unwrap(), "questions"])
        .env_remove("HANDOFF_URL")
        .output()
        .unwrap();
    err(&o, 2, "invalid");
    assert!(!gone.exists());
}

/// Propose an action; returns its full id.
fn propose(db: &TempDb, kind: &str) -> String {
    let v = ok(
        &run(
            db,
            &[
                "propose",
                "--kind",
                kind,
                "--summary",
                "do it",
                "--args",
                "{\"n\":1}",
            ],
        ),
        &["action", "created"],
    );
    entity(&v["action"]);
    v["action"]["id"].as_str().unwrap().to_string()
}

#[test]
fn actions_print_one_object_and_deciding_twice_exits_3() {
    let db = TempDb::new();
    let id = propose(&db, "a.one");
    let v = ok(&run(&db, &["action", &id]), &["action"]);
    entity(&v["action"]);
    let v = ok(&run(&db, &["actions"]), &["actions", "next"]);
    entity(&v["actions"][0]);
    let v = ok(&run(&db, &["approve", &id]), &["action", "outcome"]);
    entity(&v["action"]);
    assert_eq!(v["outcome"], "approved");
    let v = ok(&run(&db, &["audit", &id]), &["audit", "next"]);
    assert!(v["audit"].as_array().unwrap().len() >= 2, "{v:#}");

    // Approving or rejecting an action already decided is refused: 3,
    // whichever command, with the action in the detail.
    let e = err(&run(&db, &["approve", &id]), 3, "already_decided");
    entity(&e["detail"]["action"]);
    let e = err(
        &run(&db, &["reject", &id, "--reason", "no"]),
        3,
        "already_decided",
    );
    entity(&e["detail"]["action"]);

    let r = propose(&db, "a.two");
    let v = ok(
        &run(&db, &["reject", &r, "--reason", "no"]),
        &["action", "outcome"],
    );
    assert_eq!(v["outcome"], "rejected");
    err(
        &run(&db, &["reject", &r, "--reason", "again"]),
        3,
        "already_decided",
    );
    err(&run(&db, &["approve", &r]), 3, "already_decided");

    // Not unknown: resolve-unknown is refused.
    let e = err(
        &run(&db, &["resolve-unknown", &r, "--failed"]),
        3,
        "not_unknown",
    );
    entity(&e["detail"]["action"]);
    // Unknown ids.
    err(&run(&db, &["approve", "nosuchid"]), 4, "not_found");
    err(&run(&db, &["action", "nosuchid"]), 4, "not_found");
    err(
        &run(&db, &["reject", "nosuchid", "--reason", "x"]),
        4,
        "not_found",
    );

    ok(&run(&db, &["expire"]), &["actions", "next"]);
    let v = ok(&run(&db, &["recover", "--no-run"]), &["recovery"]);
    assert_eq!(
        keys(&v["recovery"]),
        set(&["unknown", "verified_executed", "rerun", "claimable", "ran"])
    );
    ok(&run(&db, &["purge", "--before", "2000-01-01"]), &["purge"]);
}

#[test]
fn approve_or_reject_on_an_executed_action_exits_3() {
    let db = TempDb::new();
    // An agent proposes with --exec and waits for the decision.
    let agent = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "propose",
            "--kind",
            "a.run",
            "--summary",
            "run",
            "--exec",
            "--",
            "true",
        ])
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_CONFIG")
        .env_remove("HANDOFF_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The proposal is stored before the agent waits: poll for it.
    let mut id = None;
    for _ in 0..600 {
        let v = ok(&run(&db, &["actions"]), &["actions", "next"]);
        if let Some(a) = v["actions"].as_array().unwrap().first() {
            id = Some(a["id"].as_str().unwrap().to_string());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let id = id.expect("the proposal appears");
    let v = ok(&run(&db, &["approve", &id]), &["action", "outcome"]);
    assert_eq!(v["outcome"], "approved");
    // The agent runs `true` and exits 0 with one document: the action.
    let out = agent.wait_with_output().unwrap();
    let v = ok(
        &out,
        &["action", "action_id", "claimed", "exit_code", "status"],
    );
    entity(&v["action"]);
    assert_eq!(v["action"]["status"], "executed", "{v:#}");

    let e = err(&run(&db, &["approve", &id]), 3, "already_decided");
    assert_eq!(e["detail"]["action"]["status"], "executed", "{e:#}");
    let e = err(&run(&db, &["approve", &id, "--wait"]), 3, "already_decided");
    assert_eq!(e["detail"]["action"]["status"], "executed", "{e:#}");
    err(
        &run(&db, &["reject", &id, "--reason", "late"]),
        3,
        "already_decided",
    );
}

#[test]
fn wait_on_an_unknown_session_exits_4_at_once() {
    let db = TempDb::new();
    // With a timeout far shorter than a human's reply, the old behaviour
    // (waiting it out) would exit 5; an unknown session is 4.
    let e = err(
        &run(&db, &["wait", "--session", "nosuch", "--timeout", "2s"]),
        4,
        "not_found",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("no session `nosuch`"),
        "{e:#}"
    );

    // A known session with nothing for it times out: 5, an error object.
    ok(
        &run(&db, &["session", "register", "--session", "s-w"]),
        &["session"],
    );
    err(
        &run(&db, &["wait", "--session", "s-w", "--timeout", "1ms"]),
        5,
        "timed_out",
    );
    // Something waiting: the arrivals, as a list.
    let q = ok(
        &run(&db, &["ask", "Q?", "--project", "p", "--session", "s-w"]),
        &["question", "created"],
    );
    let qid = q["question"]["id"].as_str().unwrap();
    ok(&run(&db, &["reply", qid, "A"]), &["question"]);
    let v = ok(
        &run(&db, &["wait", "--session", "s-w", "--timeout", "10s"]),
        &["arrivals", "next", "session_id"],
    );
    assert_eq!(v["arrivals"][0]["type"], "reply");
    entity(&v["arrivals"][0]["question"]);
}

#[test]
fn boards_print_one_object_per_entity() {
    let db = TempDb::new();
    let rows = r#"[{"label":"acct","status":"blocked","next_step":"Create the account","owner":"task"},
                   {"label":"docs","status":"missing"}]"#;
    let v = ok(
        &run(&db, &["board", "upsert", "p", "Launch", "--rows", rows]),
        &["board"],
    );
    entity(&v["board"]);
    entity(&v["board"]["rows"][0]);
    let bv = v["board"]["board_version"].as_i64().unwrap().to_string();
    let rev = v["board"]["rows"][0]["revision"]
        .as_i64()
        .unwrap()
        .to_string();

    let v = ok(
        &run(&db, &["board", "get", "Launch", "--project", "p"]),
        &["board"],
    );
    entity(&v["board"]);
    let v = ok(&run(&db, &["board", "get"]), &["boards", "next"]);
    entity(&v["boards"][0]);
    ok(&run(&db, &["board", "get", "--full"]), &["boards", "next"]);

    let v = ok(
        &run(
            &db,
            &[
                "board",
                "annotate",
                "Launch",
                "acct",
                "done it",
                "--project",
                "p",
            ],
        ),
        &["row", "board_version", "changed"],
    );
    entity(&v["row"]);
    let v = ok(
        &run(&db, &["board", "pending", "--project", "p"]),
        &["rows", "next"],
    );
    entity(&v["rows"][0]["row"]);
    ok(&run(&db, &["board", "handoffs"]), &["rows", "next"]);

    // A stale version is refused with the store's reason.
    let e = err(
        &run(
            &db,
            &[
                "board",
                "row",
                "Launch",
                "acct",
                "--project",
                "p",
                "--revision",
                &rev,
                "--version",
                "0",
                "--note",
                "x",
            ],
        ),
        3,
        "stale",
    );
    assert!(e["detail"].is_object(), "{e:#}");
    let _ = bv;
    let v = ok(
        &run(&db, &["board", "get", "Launch", "--project", "p"]),
        &["board"],
    );
    let bv = v["board"]["board_version"].as_i64().unwrap().to_string();
    let rev = v["board"]["rows"][0]["revision"]
        .as_i64()
        .unwrap()
        .to_string();
    let v = ok(
        &run(
            &db,
            &[
                "board",
                "outcome",
                "Launch",
                "acct",
                "account live",
                "--project",
                "p",
                "--revision",
                &rev,
            ],
        ),
        &["board"],
    );
    entity(&v["board"]);
    let v = ok(
        &run(&db, &["board", "get", "Launch", "--project", "p"]),
        &["board"],
    );
    let bv2 = v["board"]["board_version"].as_i64().unwrap().to_string();
    assert_ne!(bv, bv2);
    let v = ok(
        &run(
            &db,
            &[
                "board",
                "archive",
                "Launch",
                "--project",
                "p",
                "--version",
                &bv2,
            ],
        ),
        &["board"],
    );
    entity(&v["board"]);
    err(
        &run(&db, &["board", "get", "Nope", "--project", "p"]),
        4,
        "not_found",
    );
}

#[test]
fn sessions_ledger_tokens_and_the_rest_print_one_object() {
    let db = TempDb::new();
    let v = ok(
        &run(
            &db,
            &[
                "session",
                "register",
                "--session",
                "agent-7",
                "--project",
                "p",
            ],
        ),
        &["session"],
    );
    entity(&v["session"]);
    assert_eq!(v["session"]["id"], "agent-7");
    let rev = v["session"]["revision"].as_i64().unwrap().to_string();
    let v = ok(
        &run(&db, &["session", "show", "--session", "agent-7"]),
        &["session"],
    );
    entity(&v["session"]);
    let v = ok(&run(&db, &["session", "list"]), &["sessions", "next"]);
    entity(&v["sessions"][0]);
    let v = ok(
        &run(
            &db,
            &[
                "session",
                "checkpoint",
                "--session",
                "agent-7",
                "--revision",
                &rev,
                "--state",
                "{\"step\":1}",
            ],
        ),
        &["session"],
    );
    entity(&v["session"]);
    let e = err(
        &run(
            &db,
            &[
                "session",
                "checkpoint",
                "--session",
                "agent-7",
                "--revision",
                &rev,
                "--state",
                "{}",
            ],
        ),
        3,
        "stale",
    );
    assert_eq!(e["detail"]["current"], v["session"]["revision"], "{e:#}");
    let v = ok(
        &run(&db, &["session", "resume", "--session", "agent-7"]),
        &["resume"],
    );
    entity(&v["resume"]);

    let v = ok(
        &run(
            &db,
            &[
                "ledger",
                "begin",
                "--session",
                "agent-7",
                "--event-id",
                "ev-1",
                "--tool",
                "t",
                "--payload",
                "{}",
            ],
        ),
        &["ledger_entry", "outcome"],
    );
    entity(&v["ledger_entry"]);
    let v = ok(
        &run(
            &db,
            &[
                "ledger",
                "complete",
                "--session",
                "agent-7",
                "--event-id",
                "ev-1",
                "--ok",
                "--result",
                "{}",
            ],
        ),
        &["ledger_entry", "outcome"],
    );
    entity(&v["ledger_entry"]);
    let v = ok(
        &run(&db, &["ledger", "list", "--session", "agent-7"]),
        &["ledger_entries", "next"],
    );
    entity(&v["ledger_entries"][0]);
    err(
        &run(
            &db,
            &[
                "ledger",
                "complete",
                "--session",
                "agent-7",
                "--event-id",
                "ev-nope",
                "--ok",
                "--result",
                "{}",
            ],
        ),
        4,
        "not_started",
    );
    let v = ok(
        &run(&db, &["session", "end", "--session", "agent-7"]),
        &["session", "outcome"],
    );
    entity(&v["session"]);
    err(
        &run(&db, &["session", "show", "--session", "nosuch"]),
        4,
        "not_found",
    );

    let v = ok(
        &run(
            &db,
            &["token", "create", "--name", "bot", "--role", "agent"],
        ),
        &["token", "secret"],
    );
    entity(&v["token"]);
    let v = ok(&run(&db, &["token", "list"]), &["tokens", "next"]);
    entity(&v["tokens"][0]);
    let v = ok(&run(&db, &["token", "revoke", "bot"]), &["token"]);
    entity(&v["token"]);
    err(&run(&db, &["token", "revoke", "bot"]), 4, "not_found");

    let v = ok(&run(&db, &["events"]), &["events", "next"]);
    assert!(v["next"].is_i64(), "the cursor to continue from: {v:#}");
    ok(&run(&db, &["events", "--tail", "3"]), &["events", "next"]);
    let v = ok(&run(&db, &["status"]), &["status"]);
    assert!(v["status"]["database"].is_object(), "{v:#}");
    ok(&run(&db, &["init"]), &["database"]);
    ok(
        &run(&db, &["inbox-link", "--url", "http://127.0.0.1:1"]),
        &["inbox_link"],
    );
    err(&run(&db, &["pair", "000000"]), 4, "not_found");
    let file = db.dir.path().join("copy.db");
    ok(&run(&db, &["backup", file.to_str().unwrap()]), &["backup"]);
    err(&run(&db, &["backup", file.to_str().unwrap()]), 2, "invalid");
    let dir = db.dir.path().join("man");
    ok(
        &run(&db, &["man", "--out", dir.to_str().unwrap()]),
        &["man_pages"],
    );
}

/// A second approver with `--wait` follows the run the first approval
/// started (as the "already approved" message suggests) and still exits 3:
/// its own approval changed nothing. The detail holds the action as the
/// run left it.
#[tokio::test]
async fn a_losing_approve_wait_follows_the_run_and_exits_3() {
    let db = TempDb::new();
    let id = propose(&db, "a.follow");
    ok(&run(&db, &["approve", &id]), &["action", "outcome"]);
    let bob = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "approve",
            &id,
            "--as",
            "bob",
            "--wait",
            "--timeout",
            "10m",
        ])
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_CONFIG")
        .current_dir(db.dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // An executor runs it (whether bob is already waiting or not, he ends
    // up seeing the executed action).
    let store = db.open().await;
    store.claim(&id, "exec-1", 60_000).await.unwrap();
    store
        .complete(&id, "exec-1", true, serde_json::json!({"ok": true}), None)
        .await
        .unwrap();
    let out = tokio::task::spawn_blocking(move || bob.wait_with_output().unwrap())
        .await
        .unwrap();
    let e = err(&out, 3, "already_decided");
    assert_eq!(e["detail"]["action"]["status"], "executed", "{e:#}");
    entity(&e["detail"]["action"]);
}
