//! Codex permission prompts through the real daemon and the fake Bot API
//! (the message offers the same grant buttons as for
//! Claude Code, shows the exact line "Always" adds to Codex's own rules
//! file (Codex takes no rule back from a hook), and an "Always" tap answers
//! Codex with a plain allow and writes that line, after which another
//! thread of the project is allowed at once.

mod common;

use std::io::Write;
use std::process::{Child, Command, Stdio};

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use serde_json::json;

const ME: i64 = 4242;

fn spawn(db: &TempDb, cfg: &str, session: &str, command: &str) -> Child {
    spawn_tool(db, cfg, session, "Bash", command)
}

/// A PermissionRequest of Codex's `tool` whose input is `{"command": …}`.
fn spawn_tool(db: &TempDb, cfg: &str, session: &str, tool: &str, command: &str) -> Child {
    let ev = json!({
        "session_id": session, "turn_id": "t-1", "transcript_path": null,
        "cwd": "/home/dev/shop", "hook_event_name": "PermissionRequest",
        "model": "gpt-5", "permission_mode": "default", "tool_name": tool,
        "tool_input": {"command": command}
    });
    let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["hook", "codex", "--timeout", "60s"])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_CONFIG", cfg)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_PROJECT")
        // Codex's home (its rules file) is the test's own, never the real one.
        .env("CODEX_HOME", db.dir.path().join("codex-home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(ev.to_string().as_bytes())
        .unwrap();
    c
}

// Multi-threaded: the hook is awaited with a blocking wait while the
// fake Bot API (on this runtime) keeps serving the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_on_a_codex_prompt_allows_plainly_and_covers_other_threads() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let cfg = cfg.to_str().unwrap().to_string();
    let _d = Daemon::start(&db.path, std::path::Path::new(&cfg));

    let hook = spawn(&db, &cfg, "th-1", "cargo test --lib");
    let msg = fake
        .until(30, "the prompt's message", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("cargo test --lib") && !m.buttons().is_empty())
        })
        .await;
    assert!(msg.text.contains("codex.Bash"), "{}", msg.text);
    assert!(msg.text.contains("Bash(cargo test:*)"), "{}", msg.text);
    assert!(
        !msg.text.contains("Claude Code"),
        "no rule in Claude Code's settings: {}",
        msg.text
    );
    let line = r#"prefix_rule(pattern=["cargo", "test"], decision="allow")"#;
    assert!(
        msg.text.contains(&line.replace('"', "&quot;")) || msg.text.contains(line),
        "the exact line for Codex's rules file: {}",
        msg.text
    );
    fake.tap(ME, ME, msg.message_id, &msg.button("Always"));
    let out = hook.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"allow\"},\"hookEventName\":\"PermissionRequest\"}}\n",
        "never updatedPermissions: Codex would discard the whole answer"
    );
    let rules = db.dir.path().join("codex-home/rules/default.rules");
    assert_eq!(std::fs::read_to_string(rules).unwrap(), format!("{line}\n"));

    // Another thread of the same project: allowed at once by the grant.
    let out = spawn(&db, &cfg, "th-9", "cargo test")
        .wait_with_output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"behavior\":\"allow\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o = db.cli(&["grants", "--json"]);
    let v = common::json(&o);
    assert_eq!(v["grants"][0]["agent"], "codex");
    assert_eq!(v["grants"][0]["scope"], "always");
}

/// A Codex `apply_patch` prompt reads as a unified diff: whole in the
/// message when it fits; a long one as a summary with the diff attached,
/// its buttons under the summary, never under a cut text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_patch_prompt_shows_a_unified_diff_and_a_long_one_as_a_file() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let cfg = cfg.to_str().unwrap().to_string();
    let _d = Daemon::start(&db.path, std::path::Path::new(&cfg));
    let message = |needle: &'static str| {
        let fake = &fake;
        async move {
            fake.until(30, "the prompt's message", |f| {
                f.messages(ME)
                    .into_iter()
                    .find(|m| m.text.contains(needle) && !m.buttons().is_empty())
            })
            .await
        }
    };

    let short = "*** Begin Patch\n*** Update File: src/greet.py\n@@ def greet():\n-    print('Hi')\n+    print('Hello')\n*** End Patch\n";
    let hook = spawn_tool(&db, &cfg, "th-p", "apply_patch", short);
    let msg = message("codex.apply_patch").await;
    assert!(
        msg.text.contains("--- src/greet.py\n+++ src/greet.py\n@@ -1,1 +1,1 @@ def greet():\n-    print(&#39;Hi&#39;)\n+    print(&#39;Hello&#39;)")
            || msg.text.contains("--- src/greet.py\n+++ src/greet.py\n@@ -1,1 +1,1 @@ def greet():\n-    print('Hi')\n+    print('Hello')"),
        "{}",
        msg.text
    );
    assert!(msg.text.contains("No grant is offered"), "{}", msg.text);
    fake.tap(ME, ME, msg.message_id, &msg.button("This once"));
    let out = hook.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"behavior\":\"allow\""));

    // About 30 KB of added lines: far over one message.
    let body: String = (0..800)
        .map(|i| format!("+line {i} of the new module\n"))
        .collect();
    let long = format!("*** Begin Patch\n*** Add File: src/big.py\n{body}*** End Patch\n");
    let hook = spawn_tool(&db, &cfg, "th-q", "apply_patch", &long);
    let msg = message("is in the file").await;
    assert!(!msg.text.contains("line 799"), "{}", msg.text);
    let doc = fake
        .until(30, "the document", |f| f.documents().into_iter().next())
        .await;
    assert!(
        doc.contains(".diff"),
        "a diff file: {}",
        &doc[..200.min(doc.len())]
    );
    assert!(doc.contains("+++ src/big.py") && doc.contains("+line 799 of the new module"));
    fake.tap(ME, ME, msg.message_id, &msg.button("This once"));
    let out = hook.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"behavior\":\"allow\""));
}
