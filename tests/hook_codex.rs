//! `handoff hook codex`: the real binary reads Codex CLI
//! hook events on stdin and answers on stdout in Codex's own format. The
//! events are shaped exactly like Codex's `PermissionRequest` sample (openai/codex
//! PR #17563, `codex-rs/hooks/schema/generated/permission-request.command.input.schema.json`)
//! and its `PreToolUse` input; the answers are checked byte for byte.

mod common;

use std::io::Write;
use std::process::{Child, Command, Stdio};

use common::hook::{TIMED_OUT, timed_out};
use common::{TempDb, wait_for};
use handoff::store::Store;
use handoff::store::actions::{Action, Actor, Status};
use handoff::store::grants::{Scope, Terms};
use serde_json::{Value, json};

/// A PermissionRequest as Codex 0.122+ sends it for a shell approval.
fn permission_request(session: &str, command: &str) -> Value {
    json!({
        "session_id": session,
        "turn_id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
        "transcript_path": "/home/dev/.codex/sessions/2026/11/30/rollout.jsonl",
        "cwd": "/home/dev/shop",
        "hook_event_name": "PermissionRequest",
        "model": "gpt-5",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the tests outside the sandbox"}
    })
}

/// A PreToolUse as `codex exec` sends it before every matching tool call.
fn pre_tool_use(session: &str, command: &str) -> Value {
    json!({
        "session_id": session,
        "turn_id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
        "transcript_path": null,
        "cwd": "/home/dev/shop",
        "hook_event_name": "PreToolUse",
        "model": "gpt-5",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "call_Xk2"
    })
}

/// Start `handoff hook codex ARGS` on `db` with `event` on stdin.
fn spawn(db: &TempDb, event: &str, args: &[&str]) -> Child {
    let empty = db.dir.path().join("empty.toml");
    if !empty.exists() {
        std::fs::write(&empty, "").unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["hook", "codex"])
        .args(args)
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_CONFIG", &empty)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .env_remove("HANDOFF_PROJECT")
        // Codex's home (its rules file) is the test's own, never the real one.
        .env("CODEX_HOME", codex_home(db))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run handoff hook codex");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.as_bytes())
        .unwrap();
    child
}

/// The `CODEX_HOME` the hooks of this test run with (not created here).
fn codex_home(db: &TempDb) -> std::path::PathBuf {
    db.dir.path().join("codex-home")
}

/// Exit code, stdout exactly as written, stderr.
fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A PermissionRequest's answer when nobody decided in time.
fn timed_out_answer() -> String {
    format!(
        "{{\"hookSpecificOutput\":{{\"decision\":{{\"behavior\":\"deny\",\"message\":\"{TIMED_OUT}\"}},\"hookEventName\":\"PermissionRequest\"}}}}\n"
    )
}

const ALLOW: &str = "{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"allow\"},\"hookEventName\":\"PermissionRequest\"}}\n";

async fn pending(store: &Store, kind: &str) -> Action {
    wait_for(30, "the hook's pending action", || async {
        store
            .list_actions(Some(Status::Pending))
            .await
            .unwrap()
            .into_iter()
            .find(|a| a.kind == kind)
    })
    .await
}

#[tokio::test]
async fn approved_in_another_process_the_hook_allows() {
    let db = TempDb::new();
    let store = db.open().await;
    let hook = spawn(
        &db,
        &permission_request("th-1", "npm test").to_string(),
        &[],
    );
    let a = pending(&store, "codex.Bash").await;
    assert_eq!(a.session, "th-1");
    assert_eq!(a.project, "shop");
    assert_eq!(a.proposer, "codex");
    assert_eq!(a.args["command"], "npm test");
    assert!(
        a.summary
            .starts_with("Codex wants to use Bash (in /home/dev/shop): npm test"),
        "{}",
        a.summary
    );
    let o = db.cli(&["approve", &a.id, "--as", "alice"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, ALLOW);
}

#[tokio::test]
async fn a_rejection_denies_with_the_reason_for_the_model() {
    let db = TempDb::new();
    let store = db.open().await;
    let hook = spawn(
        &db,
        &permission_request("th-1", "rm -rf build").to_string(),
        &[],
    );
    let a = pending(&store, "codex.Bash").await;
    let o = db.cli(&["reject", &a.id, "--as", "bob", "--reason", "use make clean"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (code, out, _) = finish(hook);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"deny\",\"message\":\"denied in handoff by bob: use make clean\"},\"hookEventName\":\"PermissionRequest\"}}\n"
    );
}

/// Codex refuses `updatedInput` from a PermissionRequest hook, so an
/// approval with an edit must not come back as a plain allow of the
/// original command: it is denied, naming the approved version.
#[tokio::test]
async fn an_edited_approval_is_denied_with_the_approved_version() {
    let db = TempDb::new();
    let store = db.open().await;
    let hook = spawn(
        &db,
        &permission_request("th-1", "npm publish").to_string(),
        &[],
    );
    let a = pending(&store, "codex.Bash").await;
    let o = db.cli(&[
        "approve",
        &a.id,
        "--as",
        "alice",
        "--patch",
        r#"{"command": "npm publish --dry-run"}"#,
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (code, out, _) = finish(hook);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny", "{out}");
    assert!(d.get("updatedInput").is_none(), "{out}");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .ends_with("The approved version is: npm publish --dry-run"),
        "{out}"
    );
}

/// PreToolUse takes an edited approval as `permissionDecision: "allow"`
/// with `updatedInput` (Codex's `permission_decision_allow_can_update_input`),
/// and runs the edited input instead of the original. The answer below is
/// written by hand from Codex's PreToolUse output shape.
#[tokio::test]
async fn a_pre_tool_use_edited_approval_allows_with_the_updated_input() {
    let db = TempDb::new();
    let store = db.open().await;
    let hook = spawn(&db, &pre_tool_use("th-5", "npm publish").to_string(), &[]);
    let a = pending(&store, "codex.Bash").await;
    let o = db.cli(&[
        "approve",
        &a.id,
        "--as",
        "alice",
        "--patch",
        r#"{"command": "npm publish --dry-run"}"#,
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"permissionDecisionReason\":\"approved in handoff by alice, with a change\",\"updatedInput\":{\"command\":\"npm publish --dry-run\"}}}\n"
    );
}

/// PreToolUse: an allow is an empty stdout (Codex treats
/// `permissionDecision: allow` without `updatedInput` as invalid), a deny
/// is `permissionDecision: deny` with the reason.
#[tokio::test]
async fn pre_tool_use_allows_silently_and_denies_in_its_format() {
    let db = TempDb::new();
    let store = db.open().await;
    let hook = spawn(&db, &pre_tool_use("th-2", "cargo build").to_string(), &[]);
    let a = pending(&store, "codex.Bash").await;
    assert_eq!(a.dedup_key.as_deref(), Some("codex:th-2:call_Xk2"));
    assert!(
        db.cli(&["approve", &a.id, "--as", "alice"])
            .status
            .success()
    );
    let (code, out, err) = finish(hook);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");

    let mut ev = pre_tool_use("th-2", "cargo publish");
    ev["tool_use_id"] = json!("call_Yz3");
    let hook = spawn(&db, &ev.to_string(), &["--timeout", "1s"]);
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{{\"hookSpecificOutput\":{{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"{TIMED_OUT}\"}}}}\n"
        ),
        "{err}"
    );
    // It asked, and nobody answered.
    let asked = timed_out(&store, "codex.Bash", "th-2", &ev["tool_input"]).await;
    assert_eq!(asked.dedup_key.as_deref(), Some("codex:th-2:call_Yz3"));
}

/// A "for this session" tap on a Codex prompt saves a `codex` grant: the
/// next covered prompt of that thread is allowed at once (no action waits),
/// audited as `grant:<id>`; another thread, a wider command, or a Claude
/// Code prompt of the same session id is not covered.
#[tokio::test]
async fn a_session_grant_decides_only_that_codex_thread() {
    let db = TempDb::new();
    let store = db.open().await;
    let hook = spawn(
        &db,
        &permission_request("th-1", "npm test").to_string(),
        &[],
    );
    let a = pending(&store, "codex.Bash").await;
    let tap = Actor {
        name: "alice",
        channel: handoff::store::Channel::Chat,
    };
    let (_, grant) = store
        .approve_granting(&a, tap, Terms::scope(Scope::Session))
        .await
        .unwrap();
    let grant = grant.expect("a live grant");
    assert_eq!(
        (grant.agent.as_str(), grant.rule.as_str()),
        ("codex", "Bash(npm test:*)")
    );
    assert_eq!(finish(hook).1, ALLOW);

    let ev = permission_request("th-1", "npm test -- --watch");
    let (code, out, err) = finish(spawn(&db, &ev.to_string(), &[]));
    assert_eq!((code, out.as_str()), (0, ALLOW), "{err}");
    let all = store.list_actions(None).await.unwrap();
    let decided = all
        .iter()
        .find(|a| a.args["command"] == "npm test -- --watch")
        .unwrap();
    assert_eq!(
        decided.decided_by.as_deref(),
        Some(format!("grant:{}", grant.id).as_str())
    );

    for ev in [
        permission_request("th-2", "npm test"),
        permission_request("th-1", "npm test && npm publish"),
    ] {
        let (_, out, err) = finish(spawn(&db, &ev.to_string(), &["--timeout", "1s"]));
        assert_eq!(out, timed_out_answer(), "not covered: {ev}: {err}");
        let session = ev["session_id"].as_str().unwrap();
        timed_out(&store, "codex.Bash", session, &ev["tool_input"]).await;
    }
    // The same session id from Claude Code: a different agent, still asks.
    let mut claude = permission_request("th-1", "npm test");
    claude.as_object_mut().unwrap().remove("turn_id");
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["hook", "claude", "--timeout", "1s"])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_CONFIG", db.dir.path().join("empty.toml"))
        .env_remove("HANDOFF_URL")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map(|mut c| {
            c.stdin
                .take()
                .unwrap()
                .write_all(claude.to_string().as_bytes())
                .unwrap();
            c.wait_with_output().unwrap()
        })
        .unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out, timed_out_answer());
    timed_out(&store, "claude.Bash", "th-1", &claude["tool_input"]).await;
}

/// Stdin that is not a hook event: exit 2 with the reason on stderr, which
/// Codex reads as a deny for PermissionRequest and PreToolUse alike (a hook
/// that merely fails would let a PreToolUse call run). Nothing is proposed.
#[tokio::test]
async fn malformed_stdin_denies_through_the_exit_code() {
    let db = TempDb::new();
    for bad in ["", "not json", "[1]", "{\"tool_name\": \"Bash\"}"] {
        let (code, out, err) = finish(spawn(&db, bad, &[]));
        assert_eq!(code, 2, "{bad}: {err}");
        assert_eq!(out, "", "no answer on stdout for {bad:?}");
        assert!(
            err.starts_with("handoff hook codex: stdin is not a Codex hook event (")
                && err.trim_end().ends_with("handoff denied it (fail closed)")
                && err.lines().count() == 1,
            "{err}"
        );
    }
    // An event that is not a prompt: nothing to do, nothing printed.
    let stop =
        json!({"session_id": "th-1", "hook_event_name": "Stop", "cwd": "/x", "turn_id": "t"});
    let (code, out, _) = finish(spawn(&db, &stop.to_string(), &[]));
    assert_eq!((code, out.as_str()), (0, ""));
    let store = db.open().await;
    assert!(store.list_actions(None).await.unwrap().is_empty());
}

/// A daemon it cannot reach: a deny that says why, never an allow.
#[tokio::test]
async fn an_unreachable_daemon_denies() {
    let db = TempDb::new();
    let empty = db.dir.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    // Port 9 (discard) on loopback: nothing listens there.
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["hook", "codex", "--timeout", "20s"])
        .env("HANDOFF_URL", "http://127.0.0.1:9")
        .env_remove("HANDOFF_TOKEN")
        .env("HANDOFF_CONFIG", &empty)
        .env("HANDOFF_TIMEOUT", "2s")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(permission_request("th-1", "ls").to_string().as_bytes())
        .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"deny\",\"message\":\"handoff denied this (fail closed): "),
        "{out}"
    );
}

/// An "always" tap on a Codex Bash prompt of a command prefix also adds
/// Codex's own rule, in Codex's spelling, to `$CODEX_HOME/rules/default.rules`
/// (folder and file created); a second "always" of the same prefix leaves
/// the file as it was; an exact command's "always" leaves it alone.
#[tokio::test]
async fn an_always_tap_writes_codex_prefix_rule_once() {
    let db = TempDb::new();
    let store = db.open().await;
    let rules = codex_home(&db).join("rules").join("default.rules");
    let line = r#"prefix_rule(pattern=["npm", "run", "lint"], decision="allow")"#;
    let always = |a: Action| {
        let store = store.clone();
        async move {
            let tap = Actor {
                name: "alice",
                channel: handoff::store::Channel::Chat,
            };
            let (_, g) = store
                .approve_granting(&a, tap, Terms::scope(Scope::Always))
                .await
                .unwrap();
            g.expect("a live grant")
        }
    };

    let hook = spawn(
        &db,
        &permission_request("th-1", "npm run lint --fix").to_string(),
        &[],
    );
    let g = always(pending(&store, "codex.Bash").await).await;
    assert_eq!(g.rule, "Bash(npm run lint:*)");
    let (code, out, err) = finish(hook);
    assert_eq!((code, out.as_str()), (0, ALLOW), "{err}");
    assert_eq!(
        std::fs::read_to_string(&rules).unwrap(),
        format!("{line}\n")
    );

    // Codex appended one of its own since; the same "always" again (after
    // a revoke, so it asks): the file is unchanged.
    let theirs = format!("{line}\nprefix_rule(pattern=[\"ls\"], decision=\"allow\")");
    std::fs::write(&rules, &theirs).unwrap();
    store
        .grant_revoke(&g.id, "alice", handoff::store::Channel::Cli)
        .await
        .unwrap();
    let hook = spawn(
        &db,
        &permission_request("th-2", "npm run lint").to_string(),
        &[],
    );
    always(pending(&store, "codex.Bash").await).await;
    assert_eq!(finish(hook).1, ALLOW);
    assert_eq!(
        std::fs::read_to_string(&rules).unwrap(),
        theirs,
        "not twice"
    );

    // A new prefix goes on a line of its own after Codex's unterminated one.
    let hook = spawn(
        &db,
        &permission_request("th-3", "cargo test -p core").to_string(),
        &[],
    );
    always(pending(&store, "codex.Bash").await).await;
    assert_eq!(finish(hook).1, ALLOW);
    assert_eq!(
        std::fs::read_to_string(&rules).unwrap(),
        format!("{theirs}\nprefix_rule(pattern=[\"cargo\", \"test\"], decision=\"allow\")\n")
    );

    // An exact command is no prefix: handoff only, the file untouched.
    let before = std::fs::read_to_string(&rules).unwrap();
    let hook = spawn(
        &db,
        &permission_request("th-4", "rm -rf build").to_string(),
        &[],
    );
    let g = always(pending(&store, "codex.Bash").await).await;
    assert_eq!(g.rule, "Bash(rm -rf build)");
    assert_eq!(finish(hook).1, ALLOW);
    assert_eq!(std::fs::read_to_string(&rules).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(rules.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
}

/// Codex's `apply_patch` prompt (its patch in `tool_input.command`, as
/// Codex sends it) becomes a `codex.apply_patch` action whose preview is a
/// unified diff; no grant is offered for it.
#[tokio::test]
async fn an_apply_patch_prompt_previews_as_a_unified_diff() {
    let db = TempDb::new();
    let store = db.open().await;
    let patch = "*** Begin Patch\n*** Update File: src/greet.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n*** Add File: NOTES.md\n+# Notes\n*** End Patch\n";
    let mut ev = permission_request("th-p", "x");
    ev["tool_name"] = json!("apply_patch");
    ev["tool_input"] = json!({"command": patch});
    let hook = spawn(&db, &ev.to_string(), &[]);
    let a = pending(&store, "codex.apply_patch").await;
    let shown = handoff::ops::claude::preview::preview("apply_patch", &a.args).unwrap();
    assert_eq!(
        shown,
        "--- src/greet.py\n+++ src/greet.py\n@@ -1,1 +1,1 @@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n\
         --- /dev/null\n+++ NOTES.md\n@@ -1,0 +1,1 @@\n+# Notes\n"
    );
    assert_eq!(handoff::store::grants::offer(&a), None);
    let o = db.cli(&["approve", &a.id, "--as", "alice"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(finish(hook).1, ALLOW);
}
