//! Claude Code permission prompts through the real daemon and the fake Bot
//! API: the message shows the exact rule a grant would save
//! before anyone taps; "for this session" decides the next covered prompt
//! of that session without a message; other sessions and wider commands
//! still ask; "always" answers with Claude Code's permission update.

mod common;

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::{FakeTelegram, Msg};
use common::hook::{TIMED_OUT, bash, finish, permission_request, spawn_hook, timed_out};
use serde_json::json;

const ME: i64 = 4242;

async fn setup() -> (TempDb, FakeTelegram, Daemon, String) {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let d = Daemon::start(&db.path, &cfg);
    (db, fake, d, cfg.to_str().unwrap().to_string())
}

async fn message_with(fake: &FakeTelegram, text: &str) -> Msg {
    fake.until(30, "the prompt's message", |f| {
        f.messages(ME)
            .into_iter()
            .find(|m| m.text.contains(text) && !m.buttons().is_empty())
    })
    .await
}

// Multi-threaded: the hook is awaited with a blocking wait while the
// fake Bot API (on this runtime) keeps serving the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_this_session_decides_later_covered_prompts_of_that_session_only() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let ev = permission_request("s-1", "Bash", bash("npm test"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = message_with(&fake, "npm test").await;
    // The exact rule, shown before anyone taps.
    assert!(msg.text.contains("Bash(npm test:*)"), "{}", msg.text);
    let labels: Vec<String> = msg.buttons().into_iter().map(|(t, _)| t).collect();
    for want in [
        "This once",
        "This session",
        "For 1 h",
        "Always here",
        "Reject",
    ] {
        assert!(
            labels.iter().any(|l| l.contains(want)),
            "{want} in {labels:?}"
        );
    }
    fake.tap(ME, ME, msg.message_id, &msg.button("This session"));
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}),
        "a session grant writes nothing into Claude Code's settings"
    );

    // The same session, a covered command: decided at once by the grant.
    let ev = permission_request("s-1", "Bash", bash("npm test -- --ci"));
    let (_, out, _) = finish(spawn_hook(
        &db,
        &ev.to_string(),
        &["--timeout", "20s"],
        &env,
    ));
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
    let store = db.open().await;
    let granted = store
        .list_actions(None)
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.summary.contains("npm test -- --ci"))
        .unwrap();
    assert!(granted.decided_by.as_deref().unwrap().starts_with("grant:"));

    // Another session: still asks (a message), and a reject denies.
    let ev = permission_request("s-2", "Bash", bash("npm test"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let other = message_with(&fake, "s-2").await;
    // The follower takes events in order and records a push before it
    // sends: with this later prompt's message out, the granted prompt's
    // turn is over, and it left no record (and no message).
    let pool = common::raw_pool(&db.path).await;
    let records: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM chat_messages WHERE item_id = ?")
        .bind(&granted.id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(records, 0, "a prompt a grant decided is not pushed");
    let short = &granted.id[granted.id.len() - 8..];
    assert!(fake.messages(ME).iter().all(|m| !m.text.contains(short)));
    fake.tap(ME, ME, other.message_id, &other.button("Reject"));
    let (_, out, _) = finish(hook);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "deny");

    // A wider command in the granted session: still asks.
    let ev = permission_request("s-1", "Bash", bash("npm test && npm publish"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let wider = message_with(&fake, "npm publish").await;
    assert!(
        wider.text.contains("Bash(npm test &amp;&amp; npm publish)"),
        "a chained command is offered only exactly: {}",
        wider.text
    );
    fake.tap(ME, ME, wider.message_id, &wider.button("Reject"));
    let (_, out, _) = finish(hook);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "deny");
}

// Multi-threaded: the hook is awaited with a blocking wait while the
// fake Bot API (on this runtime) keeps serving the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_answers_with_the_permission_update_and_lists_the_grant() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let input =
        json!({"file_path": "/home/dev/shop/src/db.rs", "old_string": "a", "new_string": "b"});
    let ev = permission_request("s-1", "Edit", input);
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = message_with(&fake, "src/db.rs").await;
    assert!(
        msg.text.contains("Edit(//home/dev/shop/src/db.rs)"),
        "{}",
        msg.text
    );
    fake.tap(ME, ME, msg.message_id, &msg.button("Always"));
    let (_, out, _) = finish(hook);
    assert_eq!(
        out["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow", "updatedPermissions": [{
            "type": "addRules",
            "rules": [{"toolName": "Edit", "ruleContent": "//home/dev/shop/src/db.rs"}],
            "behavior": "allow",
            "destination": "localSettings"
        }]})
    );
    let v = common::json(&db.cli(&["--json", "grants"]));
    assert_eq!(v["grants"][0]["rule"], "Edit(//home/dev/shop/src/db.rs)");
    assert_eq!(v["grants"][0]["created_by"], "@user4242");
    // Not another tool on the same file.
    let input = json!({"file_path": "/home/dev/shop/src/db.rs", "content": "x"});
    let ev = permission_request("s-3", "Write", input.clone());
    let (_, out, err) = finish(spawn_hook(&db, &ev.to_string(), &["--timeout", "1s"], &env));
    assert_eq!(
        out["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": TIMED_OUT}),
        "{err}"
    );
    // It asked (the grant did not cover it), and nobody answered.
    timed_out(&db.open().await, "claude.Write", "s-3", &input).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_diff_arrives_as_a_summary_plus_a_document_never_cut() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    // About 30 KB of new lines: far over one message.
    let old: String = (0..600).map(|i| format!("line {i}\n")).collect();
    let new: String = (0..600)
        .map(|i| format!("line {i} changed to a longer text\n"))
        .collect();
    let input =
        json!({"file_path": "/home/dev/shop/src/big.rs", "old_string": old, "new_string": new});
    let ev = permission_request("s-1", "Edit", input);
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = message_with(&fake, "big.rs").await;
    assert!(msg.text.contains("is in the file"), "{}", msg.text);
    assert!(
        !msg.text.contains("(truncated)") && !msg.text.contains("line 599"),
        "{}",
        msg.text
    );
    let doc = fake
        .until(30, "the document", |f| f.documents().into_iter().next())
        .await;
    assert!(
        doc.contains(".diff"),
        "a file name: {}",
        &doc[..200.min(doc.len())]
    );
    assert!(doc.contains("-line 599\n") && doc.contains("+line 599 changed to a longer text"));
    assert!(doc.contains(&ME.to_string()), "sent to the prompt's chat");
    fake.tap(ME, ME, msg.message_id, &msg.button("This once"));
    let (_, out, _) = finish(hook);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
    // Every message with buttons fits as drawn: nothing was cut.
    for m in fake.messages(ME) {
        assert!(!m.text.contains("(truncated)"), "{}", m.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_command_shows_whole_with_its_cwd() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let cmd = "npm run migrate -- --env staging --verbose";
    let ev = permission_request("s-1", "Bash", bash(cmd));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = message_with(&fake, "migrate").await;
    assert!(
        msg.text.contains(&format!("<pre>{cmd}</pre>")),
        "{}",
        msg.text
    );
    assert!(msg.text.contains("/home/dev/shop"), "the cwd: {}", msg.text);
    assert!(fake.documents().is_empty());
    // Stopped at the terminal: the message says so and loses its buttons.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(hook.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let _ = finish(hook);
    let edited = fake
        .until(30, "the message edited", |f| {
            f.message(ME, msg.message_id)
                .filter(|m| m.text.contains("Answered at the terminal"))
        })
        .await;
    assert!(edited.buttons().is_empty(), "{:?}", edited.buttons());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_api_shows_the_rule_and_approves_for_the_session() {
    let (db, fake, d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let o = db.cli(&[
        "--json", "token", "create", "--name", "alice", "--role", "human",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let token = common::json(&o)["secret"].as_str().unwrap().to_string();
    let ev = permission_request("s-1", "Bash", bash("cargo clippy --all-targets"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    message_with(&fake, "cargo clippy").await;
    let store = db.open().await;
    let a = store.list_actions(None).await.unwrap().remove(0);
    let http = reqwest::Client::new();
    let url = format!(
        "http://{}/v1/actions/{}",
        d.addr.trim_start_matches("http://"),
        a.id
    );
    let shown: serde_json::Value = http
        .get(&url)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let shown = if shown.get("action").is_some() {
        shown["action"].clone()
    } else {
        shown
    };
    assert_eq!(shown["grant_rule"], "Bash(cargo clippy:*)", "{shown}");
    // A grant of edited arguments is refused: it would save a rule nobody saw.
    let r = http
        .post(format!("{url}/approve"))
        .bearer_auth(&token)
        .json(&json!({"grant": "session", "patch": {"command": "cargo fmt"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let r = http
        .post(format!("{url}/approve"))
        .bearer_auth(&token)
        .json(&json!({"grant": "session"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let (_, out, _) = finish(hook);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
    let v = common::json(&db.cli(&["--json", "grants"]));
    assert_eq!(v["grants"][0]["rule"], "Bash(cargo clippy:*)");
    assert_eq!(v["grants"][0]["scope"], "session");
    assert_eq!(v["grants"][0]["created_by"], "alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_daemon_grants_decide_on_its_host() {
    let (db, fake, d, _cfg) = setup().await;
    let o = db.cli(&[
        "--json",
        "token",
        "create",
        "--name",
        "claude-hook",
        "--role",
        "agent",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let token = common::json(&o)["secret"].as_str().unwrap().to_string();
    let url = format!("http://{}", d.addr.trim_start_matches("http://"));
    let remote = [
        ("HANDOFF_URL", url.as_str()),
        ("HANDOFF_TOKEN", token.as_str()),
    ];
    // Through the daemon: tapped "For this session" in chat.
    let ev = permission_request("s-r", "Bash", bash("make test"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &remote);
    let msg = message_with(&fake, "make test").await;
    fake.tap(ME, ME, msg.message_id, &msg.button("This session"));
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{out}"
    );
    // The next covered prompt of that session: decided at once on the host.
    let ev = permission_request("s-r", "Bash", bash("make test V=1"));
    let (_, out, err) = finish(spawn_hook(
        &db,
        &ev.to_string(),
        &["--timeout", "20s"],
        &remote,
    ));
    assert_eq!(
        out["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{out} {err}"
    );
    let store = db.open().await;
    let a = store
        .list_actions(None)
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.summary.contains("make test V=1"))
        .unwrap();
    assert!(
        a.decided_by.as_deref().unwrap().starts_with("grant:"),
        "{:?}",
        a.decided_by
    );
}

/// Claude Code neither stops nor tells the PermissionRequest hook when the
/// person answers the same prompt at the terminal; the tool then runs and
/// the session's next hook event (PostToolUse, which `hook install` now
/// writes) closes the card: within a second, in chat, and a tap on it
/// afterwards is told in words that the terminal answered it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_answered_at_the_terminal_closes_within_a_second_of_post_tool_use() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let mut ev = permission_request("s-1", "Bash", bash("cargo publish"));
    ev["tool_use_id"] = json!("toolu_pub");
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = message_with(&fake, "cargo publish").await;

    // Answered at the terminal: the tool ran, Claude Code says PostToolUse.
    let post = json!({
        "session_id": "s-1", "transcript_path": "/t.jsonl", "cwd": "/home/dev/shop",
        "permission_mode": "default", "hook_event_name": "PostToolUse",
        "tool_name": "Bash", "tool_input": bash("cargo publish"),
        "tool_response": {"stdout": "published", "stderr": "", "interrupted": false},
        "tool_use_id": "toolu_pub"
    });
    let start = std::time::Instant::now();
    let (code, _, err) = finish_raw(spawn_hook(&db, &post.to_string(), &[], &env));
    assert_eq!(code, 0, "{err}");
    let closed = fake
        .until(5, "the card closed", |f| {
            f.message(ME, msg.message_id)
                .filter(|m| m.text.contains("Answered at the terminal") && m.buttons().is_empty())
        })
        .await;
    let took = start.elapsed();
    assert!(
        took < std::time::Duration::from_secs(1),
        "closed {took:?} after the PostToolUse event: {}",
        closed.text
    );
    // The waiting hook learns it too, and denies what nobody waits for.
    let (_, out, _) = finish(hook);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "deny");

    // A tap on the closed card (an old button still on a phone): refused in words.
    fake.tap(ME, ME, msg.message_id, &msg.button("This once"));
    let toast = fake
        .until(30, "the tap's answer", |f| {
            f.toasts().into_iter().find(|t| t.contains("terminal"))
        })
        .await;
    assert!(toast.contains("answered at the terminal"), "{toast}");
    let store = db.open().await;
    let a = store
        .list_actions(None)
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.summary.contains("cargo publish"))
        .unwrap();
    assert_eq!(
        a.decided_by.as_deref(),
        Some("terminal"),
        "the tap changed nothing"
    );
}

/// Exit code, stdout and stderr of a hook that prints no decision.
fn finish_raw(child: std::process::Child) -> (i32, String, String) {
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// "For 1 h" saves a grant of the project kept to the prompt's folder with
/// an end an hour away; `/grants` lists it with who gave it, its place and
/// its end, and its Revoke button revokes it (a second tap is told it was
/// revoked already).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_an_hour_then_revoked_from_chat() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let ev = permission_request("s-1", "Bash", bash("git push"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = message_with(&fake, "git push").await;
    assert!(msg.text.contains("/home/dev/shop/**"), "{}", msg.text);
    fake.tap(ME, ME, msg.message_id, &msg.button("For 1 h"));
    let (_, out, _) = finish(hook);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
    let store = db.open().await;
    let g = store.grant_list(false).await.unwrap().remove(0);
    assert_eq!(g.path, "/home/dev/shop/**");
    let left = g.expires_at.unwrap() - store.now();
    assert!((3_500_000..=3_600_000).contains(&left), "{left}");

    fake.send_text(ME, ME, "/grants", None);
    let list = fake
        .until(30, "the grants list", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Grants that hold here"))
        })
        .await;
    assert!(list.text.contains("Bash(git push:*)"), "{}", list.text);
    assert!(list.text.contains("in /home/dev/shop/**"), "{}", list.text);
    assert!(list.text.contains("until 20"), "the end: {}", list.text);
    let revoke = list.button("Revoke");
    fake.tap(ME, ME, list.message_id, &revoke);
    fake.until(30, "revoked", |f| {
        f.toasts().into_iter().find(|t| t.starts_with("Revoked"))
    })
    .await;
    assert!(store.grant_list(false).await.unwrap().is_empty());
    let all = store.grant_list(true).await.unwrap();
    assert_eq!(
        all[0].revoked_by.as_deref().map(|b| !b.is_empty()),
        Some(true)
    );
    fake.tap(ME, ME, list.message_id, &revoke);
    fake.until(30, "told it was revoked already", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("already revoked"))
    })
    .await;
}
