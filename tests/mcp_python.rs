//! `handoff mcp`'s `wait` tool with the official MCP Python SDK (the `mcp`
//! package from PyPI) as the client, over stdio, as an agent that talks
//! only MCP uses it: a call blocks until the answer comes and returns it,
//! and with nothing arriving returns `{"waiting": true}` before the SDK's
//! 60 s tool-call timeout could trip (after at most 50 s).
//!
//! The client is `tests/mcp_support/wait_client.py`, run by the Python in
//! `$HANDOFF_MCP_PYTHON`, else `target/mcp-venv/bin/python` (`./test`
//! installs the SDK there).

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::TempDb;
use serde_json::Value;

/// The Python with the MCP SDK, or a panic saying how to get one.
fn python() -> PathBuf {
    let p = std::env::var_os("HANDOFF_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-venv/bin/python")
        });
    let ok = Command::new(&p)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "no Python with the MCP SDK at {}: run ./test (it installs it), or `python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp`, or point HANDOFF_MCP_PYTHON at one",
        p.display()
    );
    p
}

/// Start the Python client in `mode` against `db`, session `sess-1`.
fn client(db: &TempDb, mode: &str, wait_args: &str) -> Child {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_support/wait_client.py");
    Command::new(python())
        .arg(script)
        .args([env!("CARGO_BIN_EXE_handoff"), mode, wait_args])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_PROJECT", "demo")
        .env("HANDOFF_AGENT", "claude")
        .env("HANDOFF_SESSION", "sess-1")
        .env("HOME", db.dir.path())
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .current_dir(db.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the MCP Python client")
}

/// The client's `asked <id>` line, then its JSON result line.
fn lines(child: &mut Child) -> (String, impl FnOnce() -> Value) {
    let out = child.stdout.take().unwrap();
    let mut r = BufReader::new(out);
    let mut first = String::new();
    r.read_line(&mut first).unwrap();
    let asked = first
        .trim()
        .strip_prefix("asked ")
        .unwrap_or_else(|| panic!("the client did not get as far as waiting: {first:?}"))
        .to_string();
    (asked, move || {
        let mut last = String::new();
        r.read_line(&mut last).unwrap();
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("{e}: {last:?}"))
    })
}

/// A database where session `sess-1` is registered (a wait for a session
/// nothing ever named is refused, as `handoff wait --session` refuses it).
fn registered() -> TempDb {
    let db = TempDb::new();
    let o = db.cli(&["session", "register", "--session", "sess-1"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    db
}

#[test]
fn wait_returns_the_answer_when_it_comes() {
    let db = TempDb::new();
    let mut c = client(&db, "ask", "{}");
    let (qid, result) = lines(&mut c);
    // The human answers while the agent is blocked in `wait`.
    std::thread::sleep(Duration::from_millis(500));
    let o = db.cli(&["reply", &qid, "yes, ship it", "--kind", "answer"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v = result();
    let st = c.wait_with_output().unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(v["is_error"], false, "{v}");
    let s = &v["structured"];
    assert_eq!(s["waiting"], false, "{v}");
    assert_eq!(s["session_id"], "sess-1");
    assert_eq!(s["arrivals"][0]["type"], "reply", "{v}");
    assert_eq!(s["arrivals"][0]["question"]["id"], qid.as_str());
    assert_eq!(
        s["arrivals"][0]["question"]["reply"]["text"],
        "yes, ship it"
    );
    assert!(v["elapsed"].as_f64().unwrap() < 30.0, "{v}");
    let desc = v["description"].as_str().unwrap();
    assert!(desc.contains("CALL `wait` AGAIN"), "{desc}");
    // Picked up: a second wait would not see it again.
    let again = db.cli(&["wait", "--session", "sess-1", "--timeout", "1s"]);
    assert_eq!(again.status.code(), Some(5), "{}", common::stderr(&again));
}

#[test]
fn with_nothing_arriving_wait_says_waiting_before_55_seconds() {
    let db = registered();
    let start = Instant::now();
    let mut c = client(&db, "wait-only", "{}");
    let (_, result) = lines(&mut c);
    let v = result();
    let st = c.wait_with_output().unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(v["is_error"], false, "{v}");
    assert_eq!(v["structured"]["waiting"], true, "{v}");
    let elapsed = v["elapsed"].as_f64().unwrap();
    assert!((45.0..55.0).contains(&elapsed), "blocked {elapsed}s: {v}");
    assert!(start.elapsed() < Duration::from_secs(120));
}

#[test]
fn a_wait_longer_than_50_seconds_is_refused_in_words() {
    let db = registered();
    let mut c = client(&db, "wait-only", r#"{"wait_seconds": 120}"#);
    let (_, result) = lines(&mut c);
    let v = result();
    let _ = c.wait_with_output();
    assert_eq!(v["is_error"], true, "{v}");
    let msg = v["structured"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("call `wait` again"), "{v}");
}
