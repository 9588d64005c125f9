//! The scenario's actions, sessions, ledger, wait and event log.

use serde_json::{Value, json};

use super::{Runner, s};

/// Every action command the remote side runs, refusals included.
pub fn actions(r: &mut Runner) {
    let args = r#"{"to":"ops@example.com","n":1,"api_token":"s3cret"}"#;
    let a1 = r.ok(
        "propose",
        &[
            "propose",
            "--kind",
            "email.send",
            "--summary",
            "mail ops",
            "--args",
            args,
            "--dedup-key",
            "mail-1",
            "--project",
            "demo",
            "--as",
            "tester",
        ],
    );
    let a1 = s(&a1["action"]["id"]);
    r.ok(
        "propose again (dedup)",
        &[
            "propose",
            "--kind",
            "email.send",
            "--summary",
            "mail ops",
            "--args",
            args,
            "--dedup-key",
            "mail-1",
            "--project",
            "demo",
            "--as",
            "tester",
        ],
    );
    r.run(
        "propose dedup conflict",
        &[
            "propose",
            "--kind",
            "email.send",
            "--summary",
            "mail ops",
            "--args",
            r#"{"to":"else@example.com"}"#,
            "--dedup-key",
            "mail-1",
            "--project",
            "demo",
            "--as",
            "tester",
        ],
    );
    r.ok("actions", &["actions"]);
    r.ok("action", &["action", &a1[a1.len() - 8..]]);
    r.run("action unknown", &["action", "ffffffff"]);
    r.ok(
        "approve with a patch",
        &["approve", &a1, "--patch", r#"{"n":2}"#, "--as", "tester"],
    );
    r.run("approve again", &["approve", &a1, "--as", "tester"]);
    r.ok("audit", &["audit", &a1]);
    r.text("action (text)", &["action", &a1]);
    let a2 = r.ok(
        "propose to reject",
        &[
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "deploy v2",
            "--project",
            "demo",
            "--as",
            "tester",
        ],
    );
    let a2 = s(&a2["action"]["id"]);
    r.ok(
        "reject",
        &["reject", &a2, "--reason", "not today", "--as", "tester"],
    );
    r.run(
        "approve a rejected action",
        &["approve", &a2, "--as", "tester"],
    );
    r.run(
        "resolve-unknown on a rejected action",
        &["resolve-unknown", &a2, "--failed", "--as", "tester"],
    );
    let a3 = r.ok(
        "propose with a short ttl",
        &[
            "propose",
            "--kind",
            "ping",
            "--summary",
            "ping",
            "--ttl",
            "1ms",
            "--project",
            "demo",
            "--as",
            "tester",
        ],
    );
    let a3 = s(&a3["action"]["id"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // The daemon's own sweep may settle it first: compare only the exit
    // code here, and the action's state after.
    let out = r.output(&["expire", "--json"]);
    r.record("expire", out.status.code(), Value::Null);
    r.ok("the expired action", &["action", &a3]);
    r.ok(
        "actions --status expired",
        &["actions", "--status", "expired"],
    );

    // propose --exec: waits, is approved from another process, runs here.
    let exec = r.spawn(&[
        "propose",
        "--kind",
        "deploy",
        "--summary",
        "deploy v3",
        "--args",
        r#"{"version":"v3"}"#,
        "--project",
        "demo",
        "--as",
        "tester",
        "--exec",
        "--",
        "sh",
        "-c",
        "echo deployed $HANDOFF_ACTION_KIND",
    ]);
    let pending = r.until(
        "the exec action",
        &["actions", "--status", "pending"],
        |v| {
            v["actions"]
                .as_array()
                .is_some_and(|l| l.iter().any(|a| a["summary"] == "deploy v3"))
        },
    );
    let a4 = pending["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["summary"] == "deploy v3")
        .map(|a| s(&a["id"]))
        .unwrap();
    r.ok(
        "approve the exec action",
        &["approve", &a4, "--as", "tester"],
    );
    r.collect("propose --exec ran it", exec);
    r.ok("the executed action", &["action", &a4]);
    r.ok("audit of the run", &["audit", &a4]);
}

/// Sessions, the ledger and `wait`.
pub fn sessions(r: &mut Runner) {
    r.ok(
        "session register",
        &[
            "session",
            "register",
            "--session",
            "s-1",
            "--agent",
            "tester",
            "--project",
            "demo",
            "--cwd",
            "/work",
        ],
    );
    r.ok("session show", &["session", "show", "--session", "s-1"]);
    r.run(
        "session show unknown",
        &["session", "show", "--session", "nobody"],
    );
    r.ok(
        "session checkpoint",
        &[
            "session",
            "checkpoint",
            "--session",
            "s-1",
            "--revision",
            "1",
            "--state",
            r#"{"step":3}"#,
        ],
    );
    r.run(
        "session checkpoint stale",
        &[
            "session",
            "checkpoint",
            "--session",
            "s-1",
            "--revision",
            "1",
            "--state",
            r#"{"step":4}"#,
        ],
    );
    r.ok(
        "ledger begin",
        &[
            "ledger",
            "begin",
            "--session",
            "s-1",
            "--event-id",
            "call-1",
            "--tool",
            "deploy",
            "--payload",
            r#"{"v":3}"#,
        ],
    );
    r.ok(
        "ledger begin again",
        &[
            "ledger",
            "begin",
            "--session",
            "s-1",
            "--event-id",
            "call-1",
            "--tool",
            "deploy",
            "--payload",
            r#"{"v":3}"#,
        ],
    );
    r.run(
        "ledger begin conflict",
        &[
            "ledger",
            "begin",
            "--session",
            "s-1",
            "--event-id",
            "call-1",
            "--tool",
            "deploy",
            "--payload",
            r#"{"v":4}"#,
        ],
    );
    r.ok(
        "ledger begin 2",
        &[
            "ledger",
            "begin",
            "--session",
            "s-1",
            "--event-id",
            "call-2",
            "--tool",
            "read",
            "--replay-safe",
        ],
    );
    r.ok(
        "ledger complete",
        &[
            "ledger",
            "complete",
            "--session",
            "s-1",
            "--event-id",
            "call-1",
            "--ok",
            "--result",
            r#"{"done":true}"#,
        ],
    );
    r.run(
        "ledger complete never begun",
        &[
            "ledger",
            "complete",
            "--session",
            "s-1",
            "--event-id",
            "call-9",
            "--failed",
        ],
    );
    r.ok("ledger list", &["ledger", "list", "--session", "s-1"]);
    r.ok("session resume", &["session", "resume", "--session", "s-1"]);
    r.text(
        "session resume (text)",
        &["session", "resume", "--session", "s-1"],
    );
    r.ok("session list", &["session", "list", "--project", "demo"]);

    // wait: blocks until a reply arrives for the session, claims it.
    let q4 = r.ok(
        "ask for the waiting session",
        &[
            "ask",
            "Merge it?",
            "--project",
            "demo",
            "--agent",
            "tester",
            "--session",
            "s-1",
        ],
    );
    let q4 = s(&q4["question"]["id"]);
    let waiter = r.spawn(&[
        "wait",
        "--session",
        "s-1",
        "--timeout",
        "30s",
        "--exit-code",
        "2",
        "--by",
        "tester",
    ]);
    r.ok(
        "reply for the waiter",
        &["reply", &q4, "merge", "--by", "tester"],
    );
    let got = r.collect("wait got the reply", waiter);
    assert_eq!(got["arrivals"][0]["type"], "reply", "[{}] {got}", r.name);
    r.run(
        "wait times out",
        &[
            "wait",
            "--session",
            "s-1",
            "--timeout",
            "200ms",
            "--by",
            "tester",
        ],
    );
    r.ok("session end", &["session", "end", "--session", "s-1"]);
    r.ok("session end again", &["session", "end", "--session", "s-1"]);
    r.run(
        "checkpoint an ended session",
        &[
            "session",
            "checkpoint",
            "--session",
            "s-1",
            "--revision",
            "2",
            "--state",
            "{}",
        ],
    );
}

/// The event log, compared as what happened (not where the log started).
pub fn events(r: &mut Runner) {
    let (events, code) = r.run("events", &["events", "--limit", "1000"]);
    assert_eq!(code, Some(0));
    // Compare what happened, not where the log started: the daemon's
    // database also holds its token.
    let kinds: Vec<Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["type"].as_str().unwrap_or("").starts_with("token."))
        .map(|e| json!([e["type"], e["entity_kind"], e["actor"], e["channel"]]))
        .collect();
    r.steps.last_mut().unwrap().out = Value::Array(kinds);
}
