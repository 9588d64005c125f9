//! The remote-mode test harness: a [`Runner`] that runs the real binary
//! locally or through HANDOFF_URL and records every step, the output
//! normalizer, and a daemon with an admin token. The scenario itself is in
//! `items` (questions, boards) and `agents` (actions, sessions, events).
#![allow(dead_code)]

mod agents;
mod items;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::common::daemon::Daemon;
use crate::common::{TempDb, stderr, stdout};
use serde_json::{Value, json};

/// Where one run's commands go.
pub struct Runner {
    /// `local` or `remote`, for messages.
    pub name: &'static str,
    pub env: Vec<(String, String)>,
    /// An empty working directory (no config file is picked up from it).
    pub cwd: PathBuf,
    /// What each step printed and how it exited.
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
pub struct Step {
    label: String,
    code: Option<i32>,
    out: Value,
    /// The first line on stderr (the one-line error of a failure).
    err: String,
}

impl Runner {
    pub fn command(&self, args: &[&str]) -> Command {
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

    pub fn output(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run handoff")
    }

    /// Run `args --json`, record it under `label`, return the raw JSON
    /// (Null when stdout is empty) and the exit code.
    pub fn run(&mut self, label: &str, args: &[&str]) -> (Value, Option<i32>) {
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
    pub fn ok(&mut self, label: &str, args: &[&str]) -> Value {
        let (v, code) = self.run(label, args);
        assert_eq!(code, Some(0), "[{}] {label} failed: {v}", self.name);
        v
    }

    /// Run `args` for its text output and record that.
    pub fn text(&mut self, label: &str, args: &[&str]) {
        let out = self.output(args);
        let t = format!("{}{}", stdout(&out), first_line(&stderr(&out)));
        self.record(label, out.status.code(), Value::String(t));
    }

    pub fn record(&mut self, label: &str, code: Option<i32>, out: Value) {
        self.steps.push(Step {
            label: label.to_string(),
            code,
            out,
            err: String::new(),
        });
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
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
    pub fn collect(&mut self, label: &str, child: Child) -> Value {
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
    pub fn until(&self, what: &str, args: &[&str], check: impl Fn(&Value) -> bool) -> Value {
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

pub fn s(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_string()
}

pub fn n(v: &Value) -> String {
    v.as_i64()
        .unwrap_or_else(|| panic!("not a number: {v}"))
        .to_string()
}

/// The scenario: every command, through whichever door `r` uses.
pub fn scenario(r: &mut Runner) {
    items::questions(r);
    items::boards(r);
    agents::actions(r);
    agents::sessions(r);
    agents::events(r);
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

pub fn normalized(steps: &[Step]) -> Vec<(String, Option<i32>, Value)> {
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

pub fn token(db: &Path, name: &str, role: &str) -> String {
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
pub fn daemon() -> (TempDb, Daemon, String) {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let tok = token(&db.path, "tester", "admin");
    let d = Daemon::start(&db.path, &cfg);
    (db, d, tok)
}
