//! Remote mode: every CLI command runs the same scenario twice — once on a
//! local database (HANDOFF_DB) and once against a real `handoff serve`
//! through HANDOFF_URL + HANDOFF_TOKEN, with HANDOFF_DB pointing at a file
//! that must never be created — and both runs must print the same JSON
//! (modulo ids, timestamps and sequence numbers) and exit with the same
//! codes, refusals included. Then an MCP session over HANDOFF_URL.

mod common;
mod remote_support;

use std::process::Command;

use common::{TempDb, stderr};
use remote_support::{Runner, daemon, normalized, s, scenario};
use serde_json::{Value, json};

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
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
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
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("daemon's host"), "{}", stderr(&out));
    assert!(!unused.exists());

    // A bad token: one clear line, exit 3 (refused), nothing written.
    let mut bad = r.command(&["ask", "Hello?"]);
    bad.env("HANDOFF_TOKEN", format!("hnd_{}", "0".repeat(64)));
    let out = bad.output().unwrap();
    assert_eq!(out.status.code(), Some(3));
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
