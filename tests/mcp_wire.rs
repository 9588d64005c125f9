//! `handoff mcp` on the wire, with a scripted JSON-RPC peer (newline-delimited
//! JSON over the child's stdin/stdout): stdout carries nothing but JSON-RPC
//! frames even with debug logging on, and malformed tool arguments, an
//! unknown tool or a garbage line give clear errors without a crash.

mod common;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};

use common::TempDb;

/// A guard against a hung server, not a timing assertion.
const HANG: Duration = Duration::from_secs(60);

struct Peer {
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Every stdout line seen, for the frames-only check.
    seen: Vec<String>,
}

impl Peer {
    async fn send(&mut self, frame: &str) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(frame.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
        w.flush().await.unwrap();
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&frame.to_string()).await;
        loop {
            let line = tokio::time::timeout(HANG, self.lines.next_line())
                .await
                .expect("server answered")
                .expect("read stdout")
                .expect("stdout still open");
            self.seen.push(line.clone());
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    async fn call(&mut self, id: i64, tool: &str, args: Option<Value>) -> Value {
        let mut params = json!({"name": tool});
        if let Some(a) = args {
            params["arguments"] = a;
        }
        self.request(id, "tools/call", params).await
    }
}

fn bad_args(resp: &Value) -> String {
    let r = &resp["result"];
    assert_eq!(r["isError"], true, "{resp}");
    assert_eq!(
        r["structuredContent"]["reason"], "invalid_arguments",
        "{resp}"
    );
    r["structuredContent"]["message"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn stdout_has_only_frames_and_bad_input_is_a_clear_error() {
    let db = TempDb::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("mcp")
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_PROJECT", "demo")
        .env("HANDOFF_LOG", "debug")
        .env("HOME", db.dir.path())
        .env_remove("HANDOFF_SESSION")
        .env_remove("HANDOFF_RULES")
        .current_dir(db.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn handoff mcp");
    let mut stderr = child.stderr.take().unwrap();
    let logs = tokio::spawn(async move {
        let mut s = String::new();
        stderr.read_to_string(&mut s).await.ok();
        s
    });
    let mut p = Peer {
        stdin: child.stdin.take(),
        lines: BufReader::new(child.stdout.take().unwrap()).lines(),
        seen: Vec::new(),
    };

    let init = p
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "scripted", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["serverInfo"]["name"], "handoff", "{init}");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;

    let list = p.request(2, "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for n in handoff::mcp::TOOL_NAMES {
        assert!(names.contains(&n), "{n} listed");
    }

    // A line that is not JSON at all: ignored, the session goes on.
    p.send("this is not json {").await;

    let m = bad_args(
        &p.call(3, "ask", Some(json!({"title": "ok", "bogus": 1})))
            .await,
    );
    assert!(
        m.contains("unknown field `bogus`") && m.contains("`ask`"),
        "{m}"
    );
    let m = bad_args(&p.call(4, "ask", Some(json!({"title": 5}))).await);
    assert!(m.contains("invalid type"), "{m}");
    let m = bad_args(&p.call(5, "ask", None).await);
    assert!(m.contains("missing field `title`"), "{m}");
    let m = bad_args(
        &p.call(
            6,
            "board_advance",
            Some(json!({"board": "b", "label": "l", "revision": "one", "board_version": 1, "next_step": "x"})),
        )
        .await,
    );
    assert!(m.contains("revision") || m.contains("invalid type"), "{m}");

    // Valid arguments the store refuses: a tool error, not a protocol error.
    let too_long = p
        .call(7, "ask", Some(json!({"title": "x".repeat(500)})))
        .await;
    assert_eq!(too_long["result"]["isError"], true);
    assert_eq!(too_long["result"]["structuredContent"]["reason"], "invalid");

    let unknown = p.call(8, "nope", Some(json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ask, pending")
    );

    // Still serving after all that: nothing was written by the bad calls.
    let asked = p
        .call(9, "ask", Some(json!({"title": "Still there?"})))
        .await;
    assert_eq!(asked["result"]["isError"], false, "{asked}");
    assert_eq!(
        asked["result"]["structuredContent"]["question"]["project"],
        "demo"
    );
    let store = db.open().await;
    assert_eq!(common::count(&store, "questions").await, 1);

    // Close stdin: the server exits cleanly, and everything it printed was a frame.
    drop(p.stdin.take());
    while let Some(line) = tokio::time::timeout(HANG, p.lines.next_line())
        .await
        .expect("stdout closes")
        .expect("read stdout")
    {
        p.seen.push(line);
    }
    let status = tokio::time::timeout(HANG, child.wait())
        .await
        .expect("server exits")
        .unwrap();
    assert!(status.success(), "exit {status:?}");
    for line in &p.seen {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
    }
    let logs = logs.await.unwrap();
    assert!(
        logs.contains("MCP server starting"),
        "logs went to stderr: {logs}"
    );
    assert!(
        !logs.contains('\u{1b}'),
        "no terminal colour codes in logs written to a pipe: {logs:?}"
    );
}
