//! Codex permission prompts through the real daemon and the fake Bot API
//! (issue 13 item 2): the message offers the same grant buttons as for
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
    let ev = json!({
        "session_id": session, "turn_id": "t-1", "transcript_path": null,
        "cwd": "/home/dev/shop", "hook_event_name": "PermissionRequest",
        "model": "gpt-5", "permission_mode": "default", "tool_name": "Bash",
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
