//! The recipe scripts in `config/` run for real: the Claude Code hooks read
//! the session id from the hook's JSON on stdin, and the Codex notify program
//! registers an exec wake target that resumes the thread.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{TempDb, stderr, stdout};
use handoff::store::sessions::WakeTarget;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config")
        .join(name)
}

/// PATH with the built `handoff` first.
fn path_with_handoff() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_handoff")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run_script(db: &TempDb, name: &str, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg(script(name))
        .args(args)
        .current_dir(db.dir.path())
        .env("PATH", path_with_handoff())
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_SESSION")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run script");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn claude_wait_hook_wakes_with_the_answer_on_stderr_and_exit_2() {
    let db = TempDb::new();
    let asked = db.cli(&["--json", "ask", "--session", "cc-123", "Merge now?"]);
    let id = common::json(&asked)["question"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(db.cli(&["reply", &id, "yes, merge"]).status.success());
    let hook_input = r#"{"session_id":"cc-123","transcript_path":"/tmp/t.jsonl","hook_event_name":"Stop","stop_hook_active":false}"#;
    let out = run_script(&db, "claude-wait-hook.sh", &[], hook_input, &[]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("yes, merge"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");

    // Nothing else waiting: the timeout ends quietly.
    let quiet = run_script(
        &db,
        "claude-wait-hook.sh",
        &[],
        hook_input,
        &[("HANDOFF_WAIT_TIMEOUT", "200ms")],
    );
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "");
}

#[tokio::test]
async fn claude_session_start_hook_registers_and_exports_the_session() {
    let db = TempDb::new();
    let env_file = db.dir.path().join("claude.env");
    let out = run_script(
        &db,
        "claude-session-start-hook.sh",
        &[],
        r#"{"session_id":"cc-456","hook_event_name":"SessionStart","source":"startup"}"#,
        &[("CLAUDE_ENV_FILE", env_file.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        "export HANDOFF_SESSION=cc-456\n"
    );
    let store = db.open().await;
    let s = store
        .get_session("cc-456")
        .await
        .unwrap()
        .expect("registered");
    assert_eq!(s.agent, "claude");
}

#[tokio::test]
async fn codex_notify_registers_an_exec_target_resuming_the_thread() {
    let db = TempDb::new();
    let note = r#"{"type":"agent-turn-complete","thread-id":"th-789","turn-id":"1","cwd":"/w","input-messages":["hi"],"last-assistant-message":"done"}"#;
    let out = run_script(
        &db,
        "codex-notify.sh",
        &[note],
        "",
        &[("HANDOFF_SESSION", "codex-s1")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let store = db.open().await;
    let s = store
        .get_session("codex-s1")
        .await
        .unwrap()
        .expect("registered");
    assert_eq!(s.agent, "codex");
    let Some(WakeTarget::Exec { argv, .. }) = s.wake_target else {
        panic!("exec target expected: {:?}", s.wake_target);
    };
    assert_eq!(argv[0], "sh");
    assert!(argv[2].contains("codex exec resume"), "{argv:?}");
    assert_eq!(argv[5], "th-789");
    assert!(
        argv[6].contains("handoff session resume --session codex-s1"),
        "{argv:?}"
    );
}

#[test]
fn claude_settings_example_is_valid_json_with_an_async_rewake_stop_hook() {
    let text = std::fs::read_to_string(script("claude-settings.example.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let stop = &v["hooks"]["Stop"][0]["hooks"][0];
    assert_eq!(stop["asyncRewake"], true);
    assert!(
        stop["command"]
            .as_str()
            .unwrap()
            .ends_with("claude-wait-hook.sh")
    );
}
