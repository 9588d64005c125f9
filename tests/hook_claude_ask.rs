//! Claude Code's AskUserQuestion through `handoff hook claude`, the real
//! daemon and the fake Bot API: a single choice tapped,
//! a multiple choice ticked and Done, "Other…" answered in words through a
//! force-reply prompt, stale taps refused; and (item 4) a later
//! PostToolUse / Stop event of a session settling its pending prompt.

mod common;

use std::process::Child;

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::{FakeTelegram, Msg};
use common::hook::{bash, finish, permission_request, spawn_hook};
use serde_json::{Value, json};

const ME: i64 = 4242;

async fn setup() -> (TempDb, FakeTelegram, Daemon, String) {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let d = Daemon::start(&db.path, &cfg);
    (db, fake, d, cfg.to_str().unwrap().to_string())
}

/// An AskUserQuestion call as Claude Code sends it to a hook of `event`
/// (PreToolUse or PermissionRequest), with one question.
fn ask_event(event: &str, session: &str, question: &str, multi: bool, labels: &[&str]) -> Value {
    let options: Vec<Value> = labels
        .iter()
        .map(|l| json!({"label": l, "description": format!("{l}, described")}))
        .collect();
    json!({
        "session_id": session,
        "transcript_path": "/home/dev/.claude/projects/shop/abc.jsonl",
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": "AskUserQuestion",
        "tool_input": {"questions": [{
            "question": question, "header": "Choice", "multiSelect": multi, "options": options
        }]},
        "tool_use_id": format!("toolu_{session}")
    })
}

/// The card whose text contains `text`, once it has buttons.
async fn card(fake: &FakeTelegram, text: &str) -> Msg {
    fake.until(30, "the question card", |f| {
        f.messages(ME)
            .into_iter()
            .find(|m| m.text.contains(text) && !m.buttons().is_empty())
    })
    .await
}

/// The hook's exit code and exact stdout.
fn raw(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Tap `data` on message `id` and return the toast the bot answered with.
async fn tap(fake: &FakeTelegram, id: i64, data: &str) -> String {
    let (cb, _) = fake.tap_traced(ME, ME, id, data);
    fake.until(30, "the tap's toast", |f| {
        f.answers_to(&cb).into_iter().next()
    })
    .await
}

// Multi-threaded: the hook is awaited with a blocking wait while the
// fake Bot API (on this runtime) keeps serving the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_choice_tapped_answers_the_tool_in_its_own_format() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let q = "Which database should the service use?";
    let ev = ask_event("PreToolUse", "s-1", q, false, &["Postgres", "SQLite"]);
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = card(&fake, "Which database").await;
    let labels: Vec<String> = msg.buttons().into_iter().map(|(t, _)| t).collect();
    assert_eq!(labels, ["Postgres", "SQLite", "✏️ Other…", "🚫 Decline"]);
    assert!(
        msg.text.contains("SQLite — SQLite, described"),
        "{}",
        msg.text
    );
    assert_eq!(
        tap(&fake, msg.message_id, &msg.button("SQLite")).await,
        "Recorded: SQLite"
    );
    let (code, out, err) = raw(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        concat!(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","#,
            r#""permissionDecisionReason":"answered in handoff by @user4242","updatedInput":{"#,
            r#""answers":{"Which database should the service use?":"SQLite"},"#,
            r#""questions":[{"header":"Choice","multiSelect":false,"options":["#,
            r#"{"description":"Postgres, described","label":"Postgres"},"#,
            r#"{"description":"SQLite, described","label":"SQLite"}],"#,
            r#""question":"Which database should the service use?"}]}}}"#,
            "\n"
        )
    );
    // The card is closed: no buttons, and a late tap is refused.
    let done = fake
        .until(30, "the card redrawn without buttons", |f| {
            f.message(ME, msg.message_id)
                .filter(|m| m.buttons().is_empty())
        })
        .await;
    assert!(done.text.contains("SQLite"), "{}", done.text);
    let late = tap(&fake, msg.message_id, &msg.button("Postgres")).await;
    assert!(late.contains("already resolved"), "{late}");
    let store = db.open().await;
    let qs = store.list_questions(&Default::default()).await.unwrap();
    assert_eq!(qs.len(), 1);
    assert_eq!(
        qs[0].reply.as_ref().unwrap().text,
        "SQLite",
        "the late tap changed nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multiple_choice_is_ticked_then_done_and_a_stale_tap_is_refused() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let q = "Which checks should CI run?";
    let ev = ask_event(
        "PermissionRequest",
        "s-1",
        q,
        true,
        &["Lint", "Unit", "E2E"],
    );
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let first = card(&fake, "Which checks").await;
    let labels: Vec<String> = first.buttons().into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        labels,
        [
            "Lint",
            "Unit",
            "E2E",
            "☑️ Done (0)",
            "✏️ Other…",
            "🚫 Decline"
        ]
    );
    assert_eq!(
        tap(&fake, first.message_id, &first.button("Done")).await,
        "Tick at least one option first, or use Other… to answer in words."
    );
    assert_eq!(
        tap(&fake, first.message_id, &first.button("Lint")).await,
        "✓ Lint"
    );
    let second = fake
        .until(30, "the card redrawn with Lint ticked", |f| {
            f.message(ME, first.message_id)
                .filter(|m| m.buttons().iter().any(|(t, _)| t == "✓ Lint"))
        })
        .await;
    // A tap on the drawing before that toggle: refused, nothing applied.
    let stale = tap(&fake, first.message_id, &first.button("E2E")).await;
    assert_eq!(stale, "The question changed — see the updated message.");
    assert_eq!(
        tap(&fake, second.message_id, &second.button("E2E")).await,
        "✓ E2E"
    );
    let third = fake
        .until(30, "the card redrawn with E2E ticked", |f| {
            f.message(ME, first.message_id)
                .filter(|m| m.buttons().iter().any(|(t, _)| t == "✓ E2E"))
        })
        .await;
    assert!(third.buttons().iter().any(|(t, _)| t == "☑️ Done (2)"));
    assert!(third.buttons().iter().any(|(t, _)| t == "Unit"));
    assert_eq!(
        tap(&fake, third.message_id, &third.button("Done")).await,
        "Recorded: Lint, E2E"
    );
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    let d = &out["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "allow", "{out}");
    assert_eq!(d["updatedInput"]["answers"], json!({q: "Lint, E2E"}));
    assert_eq!(d["updatedInput"]["questions"][0]["multiSelect"], true);
    // Done on the answered card: refused.
    let late = tap(&fake, third.message_id, &third.button("Done")).await;
    assert!(late.contains("already closed"), "{late}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_answers_in_words_through_a_force_reply_prompt() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let q = "Which region should staging run in?";
    let ev = ask_event(
        "PermissionRequest",
        "s-1",
        q,
        true,
        &["eu-west-1", "us-east-1"],
    );
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = card(&fake, "Which region").await;
    assert_eq!(
        tap(&fake, msg.message_id, &msg.button("eu-west-1")).await,
        "✓ eu-west-1"
    );
    let ticked = fake
        .until(30, "the card redrawn", |f| {
            f.message(ME, msg.message_id)
                .filter(|m| m.buttons().iter().any(|(t, _)| t == "✓ eu-west-1"))
        })
        .await;
    assert_eq!(
        tap(&fake, ticked.message_id, &ticked.button("Other")).await,
        "Send your answer as a reply."
    );
    let prompt = fake
        .until(30, "the force-reply prompt", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("reply to this message with your answer"))
        })
        .await;
    assert_eq!(prompt.markup["force_reply"], true, "{:?}", prompt.markup);
    let said = fake
        .reply_to_prompt(ME, ME, prompt.message_id, "ap-south-1 too")
        .await;
    assert!(said.starts_with("Recorded"), "{said}");
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out["hookSpecificOutput"]["decision"]["updatedInput"]["answers"],
        json!({q: "eu-west-1, ap-south-1 too"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_event_settles_its_sessions_pending_prompt_only() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let mut mine = permission_request("s-1", "Bash", bash("npm run deploy"));
    mine["tool_use_id"] = json!("toolu_deploy");
    let hook = spawn_hook(&db, &mine.to_string(), &["--timeout", "60s"], &env);
    // Another session's prompt of the very same command.
    let theirs = permission_request("s-2", "Bash", bash("npm run deploy"));
    let other = spawn_hook(&db, &theirs.to_string(), &["--timeout", "60s"], &env);
    let msg = fake
        .until(30, "both prompts in chat", |f| {
            let m: Vec<Msg> = f
                .messages(ME)
                .into_iter()
                .filter(|m| m.text.contains("npm run deploy") && !m.buttons().is_empty())
                .collect();
            (m.len() == 2).then_some(m)
        })
        .await;
    let store = db.open().await;
    let pending = store.list_actions(None).await.unwrap();
    let id_of = |s: &str| pending.iter().find(|a| a.session == s).unwrap().id.clone();
    let (a1, a2) = (id_of("s-1"), id_of("s-2"));
    let msg1 = msg
        .iter()
        .find(|m| m.text.contains(&a1[a1.len() - 8..]))
        .unwrap();

    // The terminal answered s-1's prompt; the tool ran: PostToolUse.
    let post = json!({
        "session_id": "s-1", "transcript_path": "/t.jsonl", "cwd": "/home/dev/shop",
        "permission_mode": "default", "hook_event_name": "PostToolUse",
        "tool_name": "Bash", "tool_input": {"command": "npm run deploy"},
        "tool_response": {"stdout": "deployed", "stderr": "", "interrupted": false},
        "tool_use_id": "toolu_deploy"
    });
    let (code, out, err) = raw(spawn_hook(&db, &post.to_string(), &[], &env));
    assert_eq!(
        (code, out.as_str()),
        (0, ""),
        "no decision for a later event: {err}"
    );
    assert!(err.contains("1 prompt"), "{err}");
    let a = store.get_action(&a1).await.unwrap();
    assert_eq!(a.decided_by.as_deref(), Some("terminal"));
    assert_eq!(
        store.get_action(&a2).await.unwrap().status,
        handoff::store::actions::Status::Pending,
        "another session's prompt still waits"
    );
    let (_, out1, _) = finish(hook);
    assert_eq!(out1["hookSpecificOutput"]["decision"]["behavior"], "deny");
    let edited = fake
        .until(30, "s-1's message edited", |f| {
            f.message(ME, msg1.message_id)
                .filter(|m| m.text.contains("Answered at the terminal"))
        })
        .await;
    assert!(edited.buttons().is_empty(), "{:?}", edited.buttons());

    // s-2's turn ends: Stop settles what it still had pending.
    let stop = json!({
        "session_id": "s-2", "transcript_path": "/t.jsonl", "cwd": "/home/dev/shop",
        "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": false
    });
    let (code, out, err) = raw(spawn_hook(&db, &stop.to_string(), &[], &env));
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert_eq!(
        store.get_action(&a2).await.unwrap().decided_by.as_deref(),
        Some("terminal")
    );
    let _ = finish(other);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_event_closes_an_open_question_card_of_its_session() {
    let (db, fake, _d, cfg) = setup().await;
    let env = [("HANDOFF_CONFIG", cfg.as_str())];
    let ev = ask_event(
        "PermissionRequest",
        "s-9",
        "Ship it today?",
        false,
        &["Yes", "No"],
    );
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let msg = card(&fake, "Ship it today?").await;
    let stop =
        json!({"session_id": "s-9", "hook_event_name": "UserPromptSubmit", "prompt": "yes, ship"});
    let (code, out, err) = raw(spawn_hook(&db, &stop.to_string(), &[], &env));
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(err.contains("1 question"), "{err}");
    // The waiting hook sees its card closed elsewhere: no answer at all.
    let (code, out, err) = raw(hook);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let closed = fake
        .until(30, "the card closed", |f| {
            f.message(ME, msg.message_id)
                .filter(|m| m.buttons().is_empty())
        })
        .await;
    assert!(
        closed.text.contains("answered at the terminal"),
        "{}",
        closed.text
    );
}

/// The open question card of session `s`, once the hook has asked it.
async fn asked(store: &handoff::store::Store, s: &str) -> handoff::store::questions::Question {
    for _ in 0..1500 {
        let qs = store.list_questions(&Default::default()).await.unwrap();
        let key = format!("claude:ask:{s}:");
        if let Some(q) = qs
            .into_iter()
            .find(|q| q.key.as_deref().is_some_and(|k| k.starts_with(&key)))
        {
            // No session: the hook delivers the answer, not a wake-up.
            assert_eq!(q.session, "");
            return q;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the hook never asked its question");
}

#[tokio::test]
async fn decline_denies_with_a_reason_and_nobody_answering_fails_closed() {
    let db = TempDb::new();
    let store = db.open().await;
    let ev = ask_event(
        "PreToolUse",
        "s-d",
        "Rewrite the history?",
        false,
        &["Yes", "No"],
    );
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &[]);
    let q = asked(&store, "s-d").await;
    let decline = handoff::store::questions::NewReply {
        kind: handoff::store::questions::ReplyKind::Decline,
        by: "ann".into(),
        ..Default::default()
    };
    store.reply_inbox(&q.id, &decline).await.unwrap().unwrap();
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
    let why = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(why.starts_with("ann declined to answer"), "{why}");

    // Nobody answers within --timeout: deny (fail closed), card closed.
    let ev = ask_event(
        "PermissionRequest",
        "s-t",
        "Rewrite it now?",
        false,
        &["Yes", "No"],
    );
    let (code, out, err) = finish(spawn_hook(&db, &ev.to_string(), &["--timeout", "1s"], &[]));
    assert_eq!(code, 0, "{err}");
    // The timeout's own reason, which no error gives.
    assert_eq!(
        out["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": "handoff denied this (fail closed): nobody answered within 1s; ask again, or answer at the terminal"}),
        "{err}"
    );
    // It asked: its card is filed, and closed as unanswered.
    let q = asked(&store, "s-t").await;
    assert_eq!(q.title, "Rewrite it now?");
    assert_eq!(q.status, handoff::store::questions::Status::Resolved);
    assert_eq!(q.outcome.as_deref(), Some("nobody answered in time"));
}

#[tokio::test]
async fn a_stopped_ask_hook_closes_its_card_and_a_remote_one_leaves_it_to_the_terminal() {
    let db = TempDb::new();
    let store = db.open().await;
    let ev = ask_event("PreToolUse", "s-k", "Keep the cache?", true, &["Yes", "No"]);
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &[]);
    let q = asked(&store, "s-k").await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(hook.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (_, out, _) = raw(hook);
    assert_eq!(out, "", "no answer: Claude Code stopped listening");
    let q = store.get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(q.status, handoff::store::questions::Status::Resolved);
    assert_eq!(q.outcome.as_deref(), Some("answered at the terminal"));

    // Through HANDOFF_URL: no card, no answer; Claude Code asks itself.
    let remote = [
        ("HANDOFF_URL", "http://127.0.0.1:9"),
        ("HANDOFF_TOKEN", "hk_nothing"),
    ];
    let ev = ask_event("PreToolUse", "s-r", "Keep it?", false, &["Yes", "No"]);
    let (code, out, err) = raw(spawn_hook(&db, &ev.to_string(), &[], &remote));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("Claude Code asks at the terminal"), "{err}");
    let qs = store.list_questions(&Default::default()).await.unwrap();
    assert!(
        qs.iter()
            .all(|q| !q.key.as_deref().unwrap().contains("s-r"))
    );
}
