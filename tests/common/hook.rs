//! Running `handoff hook claude` with documented Claude Code hook events.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::TempDb;

/// A PermissionRequest as Claude Code sends it.
pub fn permission_request(session: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/home/dev/.claude/projects/shop/abc.jsonl",
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": tool,
        "tool_input": input,
        "permission_suggestions": [
            {"type": "addRules", "rules": [{"toolName": tool}], "behavior": "allow", "destination": "localSettings"}
        ]
    })
}

pub fn bash(cmd: &str) -> Value {
    json!({"command": cmd, "description": "Run it"})
}

/// Start `handoff hook claude ARGS` on `db` with `event` on stdin.
pub fn spawn_hook(db: &TempDb, event: &str, args: &[&str], env: &[(&str, &str)]) -> Child {
    let empty = db.dir.path().join("empty.toml");
    if !empty.exists() {
        std::fs::write(&empty, "").unwrap();
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
    c.args(["hook", "claude"])
        .args(args)
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_CONFIG", &empty)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .env_remove("HANDOFF_PROJECT")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("run handoff hook claude");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.as_bytes())
        .unwrap();
    child
}

/// The hook's exit code and stdout parsed as JSON (Null when empty).
pub fn finish(child: Child) -> (i32, Value, String) {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The reason a hook denies with when nobody decided its prompt within its
/// `--timeout`: the timeout's own, which no error gives (an error's deny
/// says "handoff denied this (fail closed): " and the error).
pub const TIMED_OUT: &str = "handoff denied this (fail closed): nobody decided in time";

/// The prompt a hook filed for `kind` with tool input `input` in `session`
/// and left to time out: exactly one such action, expired by the expiry
/// (the hook's timeout is its time to live), so a late tap finds it
/// decided. Proves the hook asked: a hook failing before it filed the
/// prompt leaves none.
pub async fn timed_out(
    store: &handoff::store::Store,
    kind: &str,
    session: &str,
    input: &Value,
) -> handoff::store::actions::Action {
    let mut filed: Vec<_> = store
        .list_actions(None)
        .await
        .unwrap()
        .into_iter()
        .filter(|a| a.kind == kind && a.session == session && a.args == *input)
        .collect();
    assert_eq!(
        filed.len(),
        1,
        "one {kind} prompt of {session} for {input}: {filed:#?}"
    );
    let a = filed.pop().unwrap();
    assert_eq!(
        (a.status, a.decided_by.as_deref(), a.reason.as_deref()),
        (
            handoff::store::actions::Status::Expired,
            Some("expiry"),
            Some("expired: nobody decided in time")
        ),
        "{a:#?}"
    );
    a
}
