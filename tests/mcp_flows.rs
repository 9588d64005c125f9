//! `handoff mcp` tool flows beyond questions, through rmcp's client against
//! the real binary: boards (a stale board_advance returns the current
//! versions), actions (propose → approve in the CLI → claim → complete) and
//! sessions (checkpoint CAS, ledger, resume).

mod common;
mod mcp_support;

use serde_json::json;

use common::{TempDb, stderr};
use mcp_support::{connect, ok, refused};

#[tokio::test]
async fn board_advance_with_a_stale_version_returns_the_current_one() {
    let db = TempDb::new();
    let c = connect(&db).await;
    let b = ok(
        &c,
        "board_upsert",
        json!({"title": "Launch", "rows": [
            {"label": "paddle", "status": "blocked", "next_step": "Create the Paddle account", "owner": "task"},
            {"label": "api", "status": "done"}
        ]}),
    )
    .await;
    assert_eq!(b["project"], "demo");
    assert_eq!(b["session"], "sess-1");
    let v0 = b["board_version"].as_i64().unwrap();
    let row = b["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "paddle")
        .unwrap()
        .clone();
    let r0 = row["revision"].as_i64().unwrap();

    // Advance with the versions read: accepted, both versions move on.
    let adv = ok(
        &c,
        "board_advance",
        json!({"board": "Launch", "label": "paddle", "revision": r0, "board_version": v0,
               "outcome": "account created", "next_step": "Verify the payout bank account"}),
    )
    .await;
    let v1 = adv["board_version"].as_i64().unwrap();
    let paddle = adv["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "paddle")
        .unwrap();
    let r1 = paddle["revision"].as_i64().unwrap();
    assert!(v1 > v0 && r1 > r0);
    assert_eq!(paddle["next_step"], "Verify the payout bank account");
    assert_eq!(paddle["history"][0]["outcome"], "account created");

    // The same call again carries stale versions: refused, with the current ones.
    let stale = refused(
        &c,
        "board_advance",
        json!({"board": "Launch", "label": "paddle", "revision": r0, "board_version": v0,
               "next_step": "Something else"}),
    )
    .await;
    assert_eq!(stale["reason"], "stale");
    assert_eq!(stale["detail"]["board_version"], v1);
    assert_eq!(
        stale["detail"]["rows"],
        json!([{"label": "paddle", "revision": r1}])
    );
    assert!(
        stale["message"].as_str().unwrap().contains("board_get"),
        "says how to recover: {stale}"
    );

    // Nothing changed; board_get hands out the current versions, and a retry
    // with them is accepted.
    let now = ok(&c, "board_get", json!({"board": "Launch"})).await;
    assert_eq!(now["board_version"], v1);
    let retry = ok(
        &c,
        "board_advance",
        json!({"board": "Launch", "label": "paddle", "revision": r1, "board_version": v1,
               "next_step": "Something else"}),
    )
    .await;
    assert!(retry["board_version"].as_i64().unwrap() > v1);

    // A stale board_upsert and board_row are refused the same way.
    let up = refused(
        &c,
        "board_upsert",
        json!({"title": "Launch", "board_version": v0, "rows": [{"label": "api", "status": "partial"}]}),
    )
    .await;
    assert_eq!(up["reason"], "stale");
    let bad = refused(
        &c,
        "board_row",
        json!({"board": "Launch", "row": {"label": "api", "revision": 99, "status": "later"}}),
    )
    .await;
    assert_eq!(
        bad["reason"], "invalid",
        "an unknown status is named: {bad}"
    );
    c.cancel().await.ok();
}

#[tokio::test]
async fn board_row_responses_come_back_in_pending() {
    let db = TempDb::new();
    let c = connect(&db).await;
    ok(
        &c,
        "board_upsert",
        json!({"title": "Launch", "rows": [{"label": "logo", "status": "blocked", "next_step": "Pick a logo", "owner": "decision"}]}),
    )
    .await;
    let o = db.cli(&[
        "board",
        "annotate",
        "Launch",
        "logo",
        "the blue one",
        "--project",
        "demo",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = ok(&c, "pending", json!({})).await;
    assert_eq!(p["rows"][0]["row"]["label"], "logo");
    assert_eq!(p["rows"][0]["row"]["annotation"], "the blue one");
    assert_eq!(p["rows"][0]["new"], true);
    c.cancel().await.ok();
}

#[tokio::test]
async fn propose_approve_claim_complete() {
    let db = TempDb::new();
    let c = connect(&db).await;
    let p = ok(
        &c,
        "propose_action",
        json!({"kind": "email.send", "summary": "Send the launch email",
               "args": {"to": "all@example.com", "api_token": "sekrit"}, "dedup_key": "launch-mail"}),
    )
    .await;
    assert_eq!(p["created"], true);
    let a = &p["action"];
    assert_eq!(a["status"], "pending");
    assert_eq!(a["proposer"], "claude");
    assert_ne!(a["args"]["api_token"], "sekrit", "secrets are redacted");
    let id = a["id"].as_str().unwrap().to_string();

    // A retry with the same dedup key returns the same action.
    let again = ok(
        &c,
        "propose_action",
        json!({"kind": "email.send", "summary": "Send the launch email",
               "args": {"to": "all@example.com", "api_token": "sekrit"}, "dedup_key": "launch-mail"}),
    )
    .await;
    assert_eq!(
        (again["created"].clone(), again["action"]["id"].clone()),
        (json!(false), json!(id))
    );

    // Not approved yet: claiming is refused and says why.
    let r = refused(&c, "claim_action", json!({"id": id})).await;
    assert_eq!(r["reason"], "not_claimable");
    assert_eq!(r["detail"]["status"], "pending");
    let st = ok(&c, "action_status", json!({"id": id})).await;
    assert_eq!(
        (st["action"]["status"].clone(), st["timed_out"].clone()),
        (json!("pending"), json!(false))
    );

    // A human approves in the CLI, patching an argument; the waiting status sees it.
    let o = db.cli(&[
        "approve",
        &id,
        "--as",
        "alice",
        "--patch",
        r#"{"to": "team@example.com"}"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let st = ok(&c, "action_status", json!({"id": id, "wait_seconds": 60})).await;
    assert_eq!(st["action"]["status"], "approved");
    assert_eq!(st["timed_out"], false);

    // Claim: the executor gets the real, patched arguments.
    let claimed = ok(&c, "claim_action", json!({"id": id, "lease_seconds": 60})).await;
    assert_eq!(claimed["status"], "executing");
    assert_eq!(claimed["owner"], "sess-1", "owner defaults to the session");
    assert_eq!(claimed["effective_args"]["to"], "team@example.com");
    assert_eq!(claimed["effective_args"]["api_token"], "sekrit");
    let twice = refused(&c, "claim_action", json!({"id": id})).await;
    assert_eq!(twice["detail"]["status"], "executing");

    // Only the owner completes.
    let stranger = refused(
        &c,
        "complete_action",
        json!({"id": id, "success": true, "owner": "someone-else"}),
    )
    .await;
    assert_eq!(stranger["reason"], "not_owner");
    let done = ok(
        &c,
        "complete_action",
        json!({"id": id, "success": true, "result": {"sent": 42}}),
    )
    .await;
    assert_eq!(done["status"], "executed");
    let st = ok(
        &c,
        "action_status",
        json!({"id": id, "until": "settled", "wait_seconds": 5}),
    )
    .await;
    assert_eq!(st["action"]["status"], "executed");

    let bad = refused(
        &c,
        "propose_action",
        json!({"kind": "x", "summary": "y", "args": [1, 2]}),
    )
    .await;
    assert_eq!(bad["reason"], "invalid");
    let bad = refused(&c, "action_status", json!({"id": "0000dead"})).await;
    assert_eq!(bad["reason"], "not_found");
    c.cancel().await.ok();
}

#[tokio::test]
async fn checkpoint_ledger_and_resume() {
    let db = TempDb::new();
    let c = connect(&db).await;
    // The first checkpoint registers the session.
    let s = ok(
        &c,
        "checkpoint",
        json!({"revision": 0, "state": {"step": 3, "notes": ["a"]}}),
    )
    .await;
    assert_eq!(s["session_id"], "sess-1");
    assert_eq!(s["revision"], 2);
    let stale = refused(
        &c,
        "checkpoint",
        json!({"revision": 0, "state": {"step": 4}}),
    )
    .await;
    assert_eq!(stale["reason"], "stale");
    assert_eq!(stale["detail"]["current"], 2);
    let s = ok(
        &c,
        "checkpoint",
        json!({"revision": 2, "state": {"step": 3, "notes": ["a"]}}),
    )
    .await;
    assert_eq!(s["revision"], 3);

    let started = ok(
        &c,
        "ledger_record",
        json!({"event_id": "call-1", "phase": "started", "tool": "deploy", "payload": {"v": "1.2"}}),
    )
    .await;
    assert_eq!(started["outcome"], "started");
    let same = ok(
        &c,
        "ledger_record",
        json!({"event_id": "call-1", "phase": "started", "tool": "deploy", "payload": {"v": "1.2"}}),
    )
    .await;
    assert_eq!(same["outcome"], "existing", "idempotent");
    let conflict = refused(
        &c,
        "ledger_record",
        json!({"event_id": "call-1", "phase": "started", "tool": "deploy", "payload": {"v": "9"}}),
    )
    .await;
    assert_eq!(conflict["reason"], "conflict");
    ok(
        &c,
        "ledger_record",
        json!({"event_id": "call-2", "phase": "started", "tool": "lookup", "replay_safe": true}),
    )
    .await;
    let fin = ok(
        &c,
        "ledger_record",
        json!({"event_id": "call-2", "phase": "completed", "result": {"ok": true}}),
    )
    .await;
    assert_eq!(fin["outcome"], "completed");
    let nope = refused(
        &c,
        "ledger_record",
        json!({"event_id": "call-9", "phase": "failed"}),
    )
    .await;
    assert_eq!(nope["reason"], "not_started");

    let r = ok(&c, "resume", json!({})).await;
    assert_eq!(r["session_id"], "sess-1");
    assert_eq!(r["revision"], 3);
    assert_eq!(r["state"], json!({"step": 3, "notes": ["a"]}));
    assert_eq!(r["interrupted"].as_array().unwrap().len(), 1);
    assert_eq!(r["interrupted"][0]["event_id"], "call-1");
    assert_eq!(r["interrupted"][0]["disposition"], "unknown");
    assert_eq!(r["ledger_tail"].as_array().unwrap().len(), 3);
    c.cancel().await.ok();
}

#[tokio::test]
async fn a_first_checkpoint_with_revision_0_works_for_a_hook_registered_session() {
    let db = TempDb::new();
    // The SessionStart hook registered the session (revision 1, no state).
    let out = db.cli(&[
        "session",
        "register",
        "--session",
        "sess-1",
        "--agent",
        "claude",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let c = connect(&db).await;
    // The tool's description says 0 the first time: that must hold.
    let s = ok(
        &c,
        "checkpoint",
        json!({"revision": 0, "state": {"step": 1}}),
    )
    .await;
    assert_eq!(s["revision"], 2);
    // Once a state exists, 0 is stale like any old revision.
    let stale = refused(
        &c,
        "checkpoint",
        json!({"revision": 0, "state": {"step": 2}}),
    )
    .await;
    assert_eq!(stale["reason"], "stale");
    assert_eq!(stale["detail"]["current"], 2);
}
