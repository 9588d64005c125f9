//! Remote mode: every CLI command runs the same scenario twice — once on a
//! local database (HANDOFF_DB) and once against a real `handoff serve`
//! through HANDOFF_URL + HANDOFF_TOKEN, with HANDOFF_DB pointing at a file
//! that must never be created — and both runs must print the same JSON
//! (modulo ids, timestamps and sequence numbers) and exit with the same
//! codes, refusals included. Then an MCP session over HANDOFF_URL.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use common::daemon::Daemon;
use common::{TempDb, stderr, stdout};
use serde_json::{Value, json};

/// Where one run's commands go.
struct Runner {
    /// `local` or `remote`, for messages.
    name: &'static str,
    env: Vec<(String, String)>,
    /// An empty working directory (no config file is picked up from it).
    cwd: PathBuf,
    /// What each step printed and how it exited.
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
struct Step {
    label: String,
    code: Option<i32>,
    out: Value,
    /// The first line on stderr (the one-line error of a failure).
    err: String,
}

impl Runner {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
        c.args(args).current_dir(&self.cwd);
        for k in [
            "HANDOFF_URL",
            "HANDOFF_TOKEN",
            "HANDOFF_DB",
            "HANDOFF_SESSION",
            "HANDOFF_PROJECT",
            "HANDOFF_AGENT",
            "HANDOFF_USER",
            "HANDOFF_RULES",
            "HANDOFF_OWNER",
        ] {
            c.env_remove(k);
        }
        c.env("HOME", &self.cwd).env("USER", "tester");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    fn output(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run handoff")
    }

    /// Run `args --json`, record it under `label`, return the raw JSON
    /// (Null when stdout is empty) and the exit code.
    fn run(&mut self, label: &str, args: &[&str]) -> (Value, Option<i32>) {
        // `--json` first: anything after `--` belongs to an exec command.
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.output(&all);
        let text = stdout(&out);
        let err = first_line(&stderr(&out));
        let v = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| {
                panic!(
                    "[{}] {label}: stdout is not JSON ({e})\nstdout: {text}\nstderr: {}",
                    self.name,
                    stderr(&out)
                )
            })
        };
        self.record(label, out.status.code(), v.clone());
        self.steps.last_mut().unwrap().err = err;
        (v, out.status.code())
    }

    /// Like [`run`](Runner::run) but the step must exit 0.
    fn ok(&mut self, label: &str, args: &[&str]) -> Value {
        let (v, code) = self.run(label, args);
        assert_eq!(code, Some(0), "[{}] {label} failed: {v}", self.name);
        v
    }

    /// Run `args` for its text output and record that.
    fn text(&mut self, label: &str, args: &[&str]) {
        let out = self.output(args);
        let t = format!("{}{}", stdout(&out), first_line(&stderr(&out)));
        self.record(label, out.status.code(), Value::String(t));
    }

    fn record(&mut self, label: &str, code: Option<i32>, out: Value) {
        self.steps.push(Step {
            label: label.to_string(),
            code,
            out,
            err: String::new(),
        });
    }

    fn spawn(&self, args: &[&str]) -> Child {
        // `--json` first: anything after `--` belongs to an exec command.
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        self.command(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn handoff")
    }

    /// Wait for a spawned step and record it.
    fn collect(&mut self, label: &str, child: Child) -> Value {
        let out = child.wait_with_output().expect("wait for handoff");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "[{}] {label}: not JSON ({e}): {}\nstderr: {}",
                self.name,
                stdout(&out),
                stderr(&out)
            )
        });
        self.record(label, out.status.code(), v.clone());
        v
    }

    /// Poll (bounded, not timed) until `check` holds for `args --json`.
    fn until(&self, what: &str, args: &[&str], check: impl Fn(&Value) -> bool) -> Value {
        // `--json` first: anything after `--` belongs to an exec command.
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        for _ in 0..400 {
            let out = self.output(&all);
            if let Ok(v) = serde_json::from_slice::<Value>(&out.stdout)
                && check(&v)
            {
                return v;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("[{}] never saw {what}", self.name);
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

fn s(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_string()
}

fn n(v: &Value) -> String {
    v.as_i64()
        .unwrap_or_else(|| panic!("not a number: {v}"))
        .to_string()
}

/// The scenario: every command, through whichever door `r` uses.
fn scenario(r: &mut Runner) {
    // ---- questions ----
    let q1 = r.ok(
        "ask",
        &[
            "ask",
            "Which database?",
            "--detail",
            "for the orders service",
            "--option",
            "Postgres",
            "--option",
            "SQLite",
            "--recommend",
            "1",
            "--project",
            "demo",
            "--agent",
            "tester",
            "--session",
            "s-1",
            "--key",
            "db",
        ],
    );
    let q1 = s(&q1["question"]["id"]);
    let q1_short = &q1[q1.len() - 8..];
    r.ok(
        "ask again in place",
        &[
            "ask",
            "Which DB?",
            "--project",
            "demo",
            "--agent",
            "tester",
            "--session",
            "s-1",
            "--key",
            "db",
        ],
    );
    r.run(
        "ask --wait times out",
        &[
            "ask",
            "Which DB?",
            "--project",
            "demo",
            "--agent",
            "tester",
            "--key",
            "db",
            "--wait",
            "--timeout",
            "300ms",
        ],
    );
    r.ok("questions", &["questions", "--project", "demo"]);
    r.ok("show (short id)", &["show", q1_short]);
    r.run("show unknown", &["show", "ffffffff"]);
    r.ok(
        "reply",
        &[
            "reply",
            q1_short,
            "Postgres",
            "--by",
            "tester",
            "--context",
            "we run it",
        ],
    );
    r.run(
        "answer refused: a human's reply waits",
        &["answer", &q1, "SQLite", "--by", "tester"],
    );
    r.ok(
        "pending",
        &["pending", "--project", "demo", "--by", "tester"],
    );
    r.ok(
        "pending again",
        &["pending", "--project", "demo", "--by", "tester"],
    );
    r.ok("answer", &["answer", &q1, "Postgres 16", "--by", "tester"]);
    r.run(
        "reply stale revision",
        &["reply", &q1, "MySQL", "--by", "tester", "--revision", "1"],
    );
    r.ok("snooze", &["snooze", &q1, "--for", "2h", "--by", "tester"]);
    r.ok(
        "resolve",
        &["resolve", &q1, "--outcome", "Postgres", "--by", "tester"],
    );
    r.run(
        "reply on a resolved question",
        &["reply", &q1, "late", "--by", "tester"],
    );
    r.text("show (text)", &["show", &q1]);
    let q2 = r.ok(
        "ask to dismiss",
        &[
            "ask",
            "Ship on Friday?",
            "--project",
            "demo",
            "--agent",
            "tester",
        ],
    );
    let q2 = s(&q2["question"]["id"]);
    r.ok(
        "dismiss",
        &["dismiss", &q2, "--reason", "moot", "--by", "tester"],
    );
    r.run("dismiss again", &["dismiss", &q2, "--by", "tester"]);
    r.ok("questions all", &["questions", "--status", "all"]);

    // ask --wait picks up a reply given while it waits.
    let waiter = r.spawn(&[
        "ask",
        "Deploy now?",
        "--project",
        "demo",
        "--agent",
        "tester",
        "--key",
        "deploy",
        "--wait",
        "--timeout",
        "30s",
    ]);
    let listed = r.until(
        "the waiting question",
        &["questions", "--project", "demo"],
        |v| {
            v.as_array()
                .is_some_and(|l| l.iter().any(|q| q["key"] == "deploy"))
        },
    );
    let q3 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["key"] == "deploy")
        .map(|q| s(&q["id"]))
        .unwrap();
    r.ok(
        "reply to the waiter",
        &["reply", &q3, "yes", "--by", "tester"],
    );
    r.collect("ask --wait got the reply", waiter);

    // ---- boards ----
    let rows = r#"[{"label":"db","status":"blocked","next_step":"pick a database","owner":"decision"},{"label":"ci","status":"done"}]"#;
    let b = r.ok(
        "board upsert",
        &[
            "board",
            "upsert",
            "demo",
            "Launch",
            "--rows",
            rows,
            "--agent",
            "tester",
            "--session",
            "s-1",
        ],
    );
    let version = n(&b["board_version"]);
    let db_rev = n(&b["rows"][0]["revision"]);
    r.run(
        "board upsert stale",
        &[
            "board",
            "upsert",
            "demo",
            "Launch",
            "--rows",
            "[]",
            "--version",
            "99",
        ],
    );
    let b = r.ok(
        "board row",
        &[
            "board",
            "row",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--note",
            "orders need it",
            "--by",
            "tester",
        ],
    );
    let db_rev = n(&b["rows"][0]["revision"]);
    r.run(
        "board row stale",
        &[
            "board",
            "row",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            "1",
            "--note",
            "x",
            "--by",
            "tester",
        ],
    );
    r.run(
        "board get unknown",
        &["board", "get", "Nope", "--project", "demo"],
    );
    r.ok(
        "board annotate",
        &[
            "board",
            "annotate",
            "Launch",
            "db",
            "use Postgres",
            "--project",
            "demo",
            "--by",
            "tester",
        ],
    );
    r.ok(
        "board handled",
        &[
            "board",
            "handled",
            "Launch",
            "db",
            "--project",
            "demo",
            "--by",
            "tester",
        ],
    );
    r.ok(
        "board handoffs",
        &["board", "handoffs", "--project", "demo"],
    );
    r.ok(
        "board pending --peek",
        &["board", "pending", "--project", "demo", "--peek"],
    );
    r.ok(
        "board pending",
        &[
            "board",
            "pending",
            "--project",
            "demo",
            "--reader",
            "tester",
        ],
    );
    let b = r.ok(
        "board get",
        &["board", "get", "Launch", "--project", "demo"],
    );
    let db_rev = {
        let _ = db_rev;
        n(&b["rows"][0]["revision"])
    };
    let version = {
        let _ = version;
        n(&b["board_version"])
    };
    let b = r.ok(
        "board advance",
        &[
            "board",
            "advance",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--version",
            &version,
            "--outcome",
            "Postgres chosen",
            "--next-step",
            "provision it",
            "--owner",
            "task",
            "--by",
            "tester",
        ],
    );
    let db_rev = n(&b["rows"][0]["revision"]);
    r.run(
        "board advance stale",
        &[
            "board",
            "advance",
            "Launch",
            "db",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--version",
            "1",
            "--next-step",
            "x",
            "--by",
            "tester",
        ],
    );
    let b = r.ok(
        "board outcome",
        &[
            "board",
            "outcome",
            "Launch",
            "db",
            "provisioned",
            "--project",
            "demo",
            "--revision",
            &db_rev,
            "--by",
            "tester",
        ],
    );
    let version = n(&b["board_version"]);
    r.ok(
        "board get summary",
        &["board", "get", "--project", "demo", "--all"],
    );
    r.ok(
        "board get --full",
        &["board", "get", "--project", "demo", "--full", "--all"],
    );
    r.text(
        "board get (text)",
        &["board", "get", "Launch", "--project", "demo"],
    );
    r.run(
        "board archive stale",
        &[
            "board",
            "archive",
            "Launch",
            "--project",
            "demo",
            "--version",
            "1",
            "--by",
            "tester",
        ],
    );
    r.run(
        "board archive an auto-archived board",
        &[
            "board",
            "archive",
            "Launch",
            "--project",
            "demo",
            "--version",
            &version,
            "--by",
            "tester",
        ],
    );
    let later = r.ok(
        "board upsert another",
        &["board", "upsert", "demo", "Later", "--agent", "tester"],
    );
    r.ok(
        "board archive",
        &[
            "board",
            "archive",
            "Later",
            "--project",
            "demo",
            "--version",
            &n(&later["board_version"]),
            "--by",
            "tester",
        ],
    );

    // ---- actions ----
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
    r.ok("approve again", &["approve", &a1, "--as", "tester"]);
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
            v.as_array()
                .is_some_and(|l| l.iter().any(|a| a["summary"] == "deploy v3"))
        },
    );
    let a4 = pending
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

    // ---- sessions, ledger, wait ----
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
            "--event-id",
            "call-1",
            "--ok",
            "--result",
            r#"{"done":true}"#,
        ],
    );
    r.run(
        "ledger complete never begun",
        &["ledger", "complete", "--event-id", "call-9", "--failed"],
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

    // ---- the event log ----
    let (events, code) = r.run("events", &["events", "--limit", "1000"]);
    assert_eq!(code, Some(0));
    // Compare what happened, not where the log started: the daemon's
    // database also holds its token.
    let kinds: Vec<Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["type"].as_str().unwrap_or("").starts_with("token."))
        .map(|e| json!([e["type"], e["entity_kind"], e["actor"], e["channel"]]))
        .collect();
    r.steps.last_mut().unwrap().out = Value::Array(kinds);
}

/// Every 32-hex id in `v`.
fn ids(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => {
            for w in s.split(|c: char| !c.is_ascii_hexdigit()) {
                if w.len() == 32
                    && w.chars()
                        .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
                {
                    out.insert(w.to_string());
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| ids(x, out)),
        Value::Object(m) => m.values().for_each(|x| ids(x, out)),
        _ => {}
    }
}

/// `s` with ids, short ids and RFC 3339 timestamps replaced.
fn norm_text(s: &str, known: &BTreeSet<String>) -> String {
    let mut t = s.to_string();
    for id in known {
        t = t.replace(id.as_str(), "<id>");
    }
    for id in known {
        t = t.replace(&id[24..], "<short>");
    }
    // 2026-11-29T12:00:00.000Z
    let b = t.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let ts = i + 24 <= b.len()
            && b[i..i + 4].iter().all(u8::is_ascii_digit)
            && b[i + 4] == b'-'
            && b[i + 10] == b'T'
            && b[i + 23] == b'Z';
        if ts {
            out.push_str("<ts>");
            i += 24;
        } else {
            let ch = t[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// `v` with ids, timestamps, log positions and executor ids normalized.
/// `exec` (the executor argv) is recorded only locally: a daemon never
/// stores a command it could be made to run.
fn norm(v: &Value, known: &BTreeSet<String>) -> Value {
    match v {
        Value::String(s) if s.starts_with("exec:") => Value::String("exec:<owner>".into()),
        Value::String(s) => Value::String(norm_text(s, known)),
        Value::Array(a) => Value::Array(a.iter().map(|x| norm(x, known)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = match k.as_str() {
                        "seq" | "last_wait_seq" | "next_after" if x.is_number() => json!(0),
                        "exec" => Value::Null,
                        _ => norm(x, known),
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn normalized(steps: &[Step]) -> Vec<(String, Option<i32>, Value)> {
    let mut known = BTreeSet::new();
    for st in steps {
        ids(&st.out, &mut known);
    }
    steps
        .iter()
        .map(|st| {
            let out = json!({"out": st.out, "stderr": st.err});
            (st.label.clone(), st.code, norm(&out, &known))
        })
        .collect()
}

fn token(db: &Path, name: &str, role: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["token", "create", "--name", name, "--role", role, "--json"])
        .env("HANDOFF_DB", db)
        .env_remove("HANDOFF_URL")
        .output()
        .expect("token create");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    s(&v["secret"])
}

/// A daemon on its own database with an admin token named `tester`.
fn daemon() -> (TempDb, Daemon, String) {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let tok = token(&db.path, "tester", "admin");
    let d = Daemon::start(&db.path, &cfg);
    (db, d, tok)
}

#[test]
fn every_command_runs_the_same_locally_and_through_handoff_url() {
    // Local: a database file.
    let local_db = TempDb::new();
    let local_cwd = tempfile::tempdir().unwrap();
    let mut local = Runner {
        name: "local",
        env: vec![("HANDOFF_DB".into(), local_db.path.display().to_string())],
        cwd: local_cwd.path().to_path_buf(),
        steps: Vec::new(),
    };
    scenario(&mut local);

    // Remote: a real daemon; HANDOFF_DB names a file that must stay absent.
    let (_daemon_db, d, tok) = daemon();
    let remote_cwd = tempfile::tempdir().unwrap();
    let unused = remote_cwd.path().join("never.db");
    let mut remote = Runner {
        name: "remote",
        env: vec![
            ("HANDOFF_DB".into(), unused.display().to_string()),
            ("HANDOFF_URL".into(), format!("http://{}", d.addr)),
            ("HANDOFF_TOKEN".into(), tok),
        ],
        cwd: remote_cwd.path().to_path_buf(),
        steps: Vec::new(),
    };
    scenario(&mut remote);
    assert!(
        !unused.exists(),
        "a remote run must not create or touch a local database"
    );

    let l = normalized(&local.steps);
    let r = normalized(&remote.steps);
    if std::env::var("REMOTE_DUMP").is_ok() {
        for (a, b) in l.iter().zip(&r) {
            eprintln!("== {} ({:?}/{:?})\nL {}\nR {}", a.0, a.1, b.1, a.2, b.2);
        }
    }
    assert_eq!(l.len(), r.len());
    for (a, b) in l.iter().zip(&r) {
        assert_eq!(a.0, b.0);
        assert_eq!(
            a.1, b.1,
            "{}: exit codes differ\nlocal:  {}\nremote: {}",
            a.0, a.2, b.2
        );
        assert_eq!(
            a.2,
            b.2,
            "{}: outputs differ\nlocal:  {}\nremote: {}",
            a.0,
            serde_json::to_string_pretty(&a.2).unwrap(),
            serde_json::to_string_pretty(&b.2).unwrap()
        );
    }
    // The refusals really were refusals, with the documented codes.
    let code = |label: &str| l.iter().find(|s| s.0 == label).unwrap().1;
    assert_eq!(code("show unknown"), Some(4));
    assert_eq!(code("action unknown"), Some(4));
    assert_eq!(code("board get unknown"), Some(4));
    assert_eq!(code("board row stale"), Some(3));
    assert_eq!(code("board advance stale"), Some(3));
    assert_eq!(code("answer refused: a human's reply waits"), Some(3));
    assert_eq!(code("reply on a resolved question"), Some(3));
    assert_eq!(code("propose dedup conflict"), Some(3));
    assert_eq!(code("session checkpoint stale"), Some(3));
    assert_eq!(code("ledger begin conflict"), Some(3));
    assert_eq!(code("ask --wait times out"), Some(5));
    assert_eq!(code("wait times out"), Some(5));
    assert_eq!(code("wait got the reply"), Some(2));
    assert_eq!(code("propose --exec ran it"), Some(0));
}

#[test]
fn host_only_commands_say_so_and_bad_tokens_are_clear() {
    let (_db, d, tok) = daemon();
    let cwd = tempfile::tempdir().unwrap();
    let unused = cwd.path().join("never.db");
    let r = Runner {
        name: "remote",
        env: vec![
            ("HANDOFF_DB".into(), unused.display().to_string()),
            ("HANDOFF_URL".into(), format!("http://{}", d.addr)),
            ("HANDOFF_TOKEN".into(), tok),
        ],
        cwd: cwd.path().to_path_buf(),
        steps: Vec::new(),
    };
    for args in [
        vec!["token", "list"],
        vec!["pair", "123456"],
        vec!["recover", "--no-run"],
        vec!["purge", "--before", "2020-01-01"],
    ] {
        let out = r.output(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("must run on the daemon's host"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
    let out = r.output(&[
        "session",
        "register",
        "--session",
        "s-x",
        "--wake-exec",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("daemon's host"), "{}", stderr(&out));
    assert!(!unused.exists());

    // A bad token: one clear line, exit 1, nothing written.
    let mut bad = r.command(&["ask", "Hello?"]);
    bad.env("HANDOFF_TOKEN", format!("hnd_{}", "0".repeat(64)));
    let out = bad.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("token"), "{}", stderr(&out));
    // No daemon at all: says where it tried.
    let mut gone = r.command(&["questions"]);
    gone.env("HANDOFF_URL", "http://127.0.0.1:9");
    let out = gone.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot reach the daemon at http://127.0.0.1:9"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn mcp_over_handoff_url_asks_gets_the_reply_and_picks_it_up() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;

    let (daemon_db, d, tok) = daemon();
    let url = format!("http://{}", d.addr);
    let cwd = tempfile::tempdir().unwrap();
    let unused = cwd.path().join("never.db");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
    cmd.arg("mcp")
        .env("HANDOFF_URL", &url)
        .env("HANDOFF_TOKEN", &tok)
        .env("HANDOFF_DB", &unused)
        .env("HANDOFF_PROJECT", "demo")
        .env("HANDOFF_AGENT", "claude")
        .env("HANDOFF_SESSION", "sess-1")
        .env("HOME", cwd.path())
        .env_remove("HANDOFF_RULES")
        .env_remove("HANDOFF_OWNER")
        .current_dir(cwd.path());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("spawn handoff mcp");
    let client = ().serve(transport).await.expect("MCP initialize");
    let call = |tool: &'static str, args: Value| {
        let client = &client;
        async move {
            let r = client
                .call_tool(
                    CallToolRequestParams::new(tool.to_string())
                        .with_arguments(args.as_object().unwrap().clone()),
                )
                .await
                .expect("tools/call");
            assert_ne!(r.is_error, Some(true), "{tool}: {:?}", r.content);
            r.structured_content.expect("structured content")
        }
    };

    let asked = call("ask", json!({"title": "Which region?"})).await;
    assert_eq!(asked["created"], true);
    let id = s(&asked["question"]["id"]);
    assert_eq!(asked["question"]["project"], "demo");
    assert_eq!(asked["question"]["session"], "sess-1");

    // A human replies through the daemon (the remote CLI's Inbox door).
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["reply", &id, "eu-west", "--json"])
        .env("HANDOFF_URL", &url)
        .env("HANDOFF_TOKEN", &tok)
        .env("HANDOFF_DB", &unused)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let p = call("pending", json!({})).await;
    assert_eq!(p["questions"][0]["new"], true, "{p}");
    assert_eq!(p["questions"][0]["question"]["reply"]["text"], "eu-west");
    let again = call("pending", json!({"new_only": true})).await;
    assert_eq!(again["questions"], json!([]), "picked up once: {again}");
    let done = call("resolve", json!({"id": id, "outcome": "eu-west"})).await;
    assert_eq!(done["status"], "resolved");
    client.cancel().await.ok();

    // It all landed in the daemon's database, under the token's name.
    let store = daemon_db.open().await;
    let q = store.get_question(&id).await.unwrap().unwrap();
    assert_eq!(q.status, handoff::store::questions::Status::Resolved);
    assert!(q.reply.unwrap().seen_at.is_some());
    assert!(!unused.exists());
}
