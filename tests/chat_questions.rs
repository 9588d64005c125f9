//! The daemon and the Telegram bridge on questions: the real `handoff serve`
//! process, the real teloxide client, and a fake Bot API.

mod common;

use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use common::{TempDb, json};

const ME: i64 = 111;
const STRANGER: i64 = 999;

async fn setup() -> (TempDb, FakeTelegram, Daemon) {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let daemon = Daemon::start(&db.path, &cfg);
    (db, fake, daemon)
}

fn ask(db: &TempDb, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--json", "ask"];
    a.extend_from_slice(args);
    let out = db.cli(&a);
    assert!(out.status.success(), "{}", common::stderr(&out));
    json(&out)
}

fn qid(v: &serde_json::Value) -> String {
    v["question"]["id"]
        .as_str()
        .or(v["id"].as_str())
        .expect("question id")
        .to_string()
}

/// The message showing question `id`.
async fn message_of(fake: &FakeTelegram, id: &str) -> common::fake_telegram::Msg {
    let short = &id[id.len() - 8..];
    fake.until(30, "the question's message", |f| {
        f.messages(ME)
            .into_iter()
            .find(|m| m.text.contains(short) && !m.buttons().is_empty())
    })
    .await
}

#[tokio::test]
async fn a_question_from_another_process_appears_and_a_tap_answers_it() {
    let (db, fake, _d) = setup().await;
    let q = ask(
        &db,
        &[
            "Which database?",
            "--detail",
            "for the cache",
            "--option",
            "Postgres",
            "--option",
            "SQLite",
        ],
    );
    let id = qid(&q);
    let msg = message_of(&fake, &id).await;
    assert!(msg.text.contains("Which database?"), "{}", msg.text);
    let labels: Vec<String> = msg.buttons().into_iter().map(|b| b.0).collect();
    assert!(labels.iter().any(|l| l.contains("Postgres")), "{labels:?}");
    assert!(
        labels.iter().any(|l| l.contains("Clarify"))
            && labels.iter().any(|l| l.contains("Decline"))
    );
    assert!(msg.text.contains("Reply to this message"));
    for (_, data) in msg.buttons() {
        assert!(data.len() <= 64);
    }

    fake.tap(ME, ME, msg.message_id, &msg.button("SQLite"));
    fake.until(30, "a 'Recorded' toast", |f| {
        f.toasts().into_iter().find(|t| t.contains("Recorded"))
    })
    .await;

    let out = db.cli(&["--json", "pending"]);
    let v = json(&out);
    let text = v.to_string();
    assert!(
        text.contains("SQLite") && text.contains("\"chat\""),
        "{text}"
    );
    // The message is edited to say who answered where.
    fake.until(30, "the message to show the answer", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.contains("in Telegram"))
            .map(|_| ())
    })
    .await;
}

#[tokio::test]
async fn an_unread_inbox_answer_beats_a_chat_tap_until_picked_up() {
    let (db, fake, _d) = setup().await;
    let id = qid(&ask(
        &db,
        &["Deploy now?", "--option", "yes", "--option", "no"],
    ));
    let msg = message_of(&fake, &id).await;

    let out = db.cli(&["reply", &id, "wait until Monday"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    fake.tap(ME, ME, msg.message_id, &msg.button("yes"));
    fake.until(30, "the refusal naming the Inbox text", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.contains("Inbox answer") && t.contains("wait until Monday"))
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["text"], "wait until Monday", "{v}");
    assert_eq!(v["question"]["reply"]["source"], "inbox", "{v}");

    // The agent picks the Inbox answer up; now a chat answer is accepted.
    assert!(db.cli(&["pending"]).status.success());
    let msg = message_of(&fake, &id).await;
    fake.tap(ME, ME, msg.message_id, &msg.button("yes"));
    fake.until(30, "the chat answer to be recorded", |f| {
        f.toasts().into_iter().find(|t| t.contains("Recorded: yes"))
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["source"], "chat", "{v}");
    assert_eq!(v["question"]["reply"]["text"], "yes", "{v}");
}

#[tokio::test]
async fn clarify_corrects_a_chat_answer_but_never_an_inbox_answer() {
    let (db, fake, _d) = setup().await;
    let id = qid(&ask(&db, &["Name the release"]));
    let msg = message_of(&fake, &id).await;
    let short = id[id.len() - 8..].to_string();

    common::until_recorded(&db, ME, msg.message_id).await;
    fake.send_text(ME, ME, "v1.2", Some(msg.message_id));
    fake.until(30, "the reply to be recorded", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.starts_with("Recorded"))
    })
    .await;
    fake.send_text(ME, ME, &format!("/clarify {short} v1.3 actually"), None);
    fake.until(30, "the correction", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.starts_with("Correction recorded"))
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["text"], "v1.3 actually", "{v}");
    assert_eq!(v["question"]["reply"]["kind"], "clarify", "{v}");
    // A bare /clarify in reply to the item, or one in reply to a message
    // that is not an item, takes its id from the text like /clarify <id> <text>.
    fake.send_text(ME, ME, "/clarify", Some(msg.message_id));
    fake.until(30, "the usage", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.starts_with("Usage: /clarify <id> <text>"))
    })
    .await;
    // An id without text is not an answer either.
    fake.send_text(ME, ME, "/answer feedbeef", None);
    fake.until(30, "the usage of /answer", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.starts_with("Usage: /answer <id> <text>"))
    })
    .await;
    fake.send_text(ME, ME, "/clarify feedbeef v1.4", Some(1));
    fake.until(30, "the unknown id", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t == "No open item with id feedbeef. /list shows open items.")
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["text"], "v1.3 actually", "{v}");

    // An Inbox answer now stands unclaimed: a clarify from chat must not replace it.
    assert!(db.cli(&["reply", &id, "from the inbox"]).status.success());
    fake.send_text(ME, ME, "/clarify v9", Some(msg.message_id));
    fake.until(30, "the refusal", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.contains("from the inbox") && t.contains("already waiting"))
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["text"], "from the inbox", "{v}");
    assert_eq!(v["question"]["reply"]["source"], "inbox", "{v}");
}

#[tokio::test]
async fn a_stale_revision_tap_is_refused_and_the_message_redrawn() {
    let (db, fake, _d) = setup().await;
    let id = qid(&ask(
        &db,
        &[
            "Pick a port",
            "--key",
            "port",
            "--option",
            "8080",
            "--option",
            "9090",
        ],
    ));
    let msg = message_of(&fake, &id).await;
    let old = msg.button("8080");
    // The agent re-flags the same key with new options: revision 2, same question.
    let again = ask(
        &db,
        &[
            "Pick a port",
            "--key",
            "port",
            "--option",
            "8080",
            "--option",
            "7070",
        ],
    );
    assert_eq!(qid(&again), id);
    fake.until(30, "the redraw with new options", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.is_empty() || m.buttons().iter().any(|b| b.0.contains("7070")))
            .map(|_| ())
    })
    .await;
    fake.tap(ME, ME, msg.message_id, &old);
    fake.until(30, "the stale toast", |f| {
        f.toasts().into_iter().find(|t| t.contains("changed"))
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert!(
        v["question"]["reply"].is_null(),
        "a stale tap must not be stored: {v}"
    );
    assert_eq!(v["question"]["revision"], 2);
}

#[tokio::test]
async fn strangers_foreign_buttons_and_stray_messages_get_clear_answers() {
    let (db, fake, mut d) = setup().await;
    let id = qid(&ask(
        &db,
        &["Ship it?", "--option", "yes", "--option", "no"],
    ));
    let msg = message_of(&fake, &id).await;

    fake.tap(ME, STRANGER, msg.message_id, &msg.button("yes"));
    fake.until(30, "the stranger's refusal", |f| {
        f.toasts().into_iter().find(|t| t.contains("not allowed"))
    })
    .await;
    fake.tap(ME, ME, msg.message_id, "totally|foreign|data");
    fake.until(30, "the foreign-button toast", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("isn't one of mine"))
    })
    .await;
    fake.send_text(ME, ME, "/frobnicate", None);
    fake.until(30, "unknown command", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.contains("don't know that command"))
    })
    .await;
    fake.send_text(ME, ME, "hello?", None);
    fake.until(30, "stray text", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.contains("reply to the item's message"))
    })
    .await;
    fake.send_text(ME, ME, "an answer", Some(1)); // a reply to a message that isn't ours
    fake.until(30, "unrelated reply", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.contains("isn't one of my items"))
    })
    .await;
    common::until_recorded(&db, ME, msg.message_id).await;
    fake.send_text(ME, ME, &"x".repeat(5000), Some(msg.message_id));
    fake.until(30, "over-long answer refused", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.starts_with("Not recorded") || t.starts_with("Recorded"))
    })
    .await;

    // Nothing was stored by the stranger; the refusal was audited.
    let events = json(&db.cli(&["--json", "events", "--limit", "1000"])).to_string();
    assert!(events.contains("chat.refused"), "{events}");
    assert!(
        d.child.try_wait().unwrap().is_none(),
        "daemon still running"
    );
    assert!(!d.log().contains("panicked"), "{}", d.log());
    let status = d.terminate();
    assert!(status.success(), "graceful exit on SIGTERM: {status:?}");
}

#[tokio::test]
async fn retry_after_is_waited_out_and_nothing_is_lost() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    fake.fail_next("sendMessage", 1);
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let _d = Daemon::start(&db.path, &cfg);
    let id = qid(&ask(&db, &["After a 429"]));
    message_of(&fake, &id).await;
    assert_eq!(fake.rejected_429(), 1);
}

#[tokio::test]
async fn the_decline_and_clarify_buttons() {
    let (db, fake, _d) = setup().await;
    // Decline: one tap, recorded as a decline from the chat.
    let declined = qid(&ask(&db, &["Rotate the keys?"]));
    let msg = message_of(&fake, &declined).await;
    fake.tap(ME, ME, msg.message_id, &msg.button("Decline"));
    fake.until(30, "the decline toast", |f| {
        f.toasts().into_iter().find(|t| t == "Declined")
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &declined]));
    assert_eq!(v["question"]["reply"]["kind"], "decline", "{v}");
    assert_eq!(v["question"]["reply"]["source"], "chat", "{v}");

    // Clarify: the bot asks for the correction in a message to reply to.
    let id = qid(&ask(&db, &["Name the branch", "--key", "branch"]));
    let short = id[id.len() - 8..].to_string();
    let msg = message_of(&fake, &id).await;
    let clarify = msg.button("Clarify");
    fake.tap(ME, ME, msg.message_id, &clarify);
    let prompt = fake
        .until(30, "the clarify prompt", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.starts_with(&format!("✏️ Clarify #{short}")))
        })
        .await;
    assert!(
        fake.toasts()
            .contains(&"Send your correction as a reply.".to_string())
    );
    let said = fake
        .reply_to_prompt(ME, ME, prompt.message_id, "feature/tidy")
        .await;
    assert!(said.starts_with("Correction recorded"), "{said}");
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["text"], "feature/tidy", "{v}");
    assert_eq!(v["question"]["reply"]["kind"], "clarify", "{v}");

    // A Clarify button from before the question changed: refused, pointing
    // at the redrawn message, and no prompt.
    let again = ask(
        &db,
        &[
            "Name the branch",
            "--key",
            "branch",
            "--option",
            "main",
            "--option",
            "dev",
        ],
    );
    assert_eq!(qid(&again), id);
    fake.until(30, "the redraw of revision 2", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.buttons().iter().any(|b| b.0.contains("main")))
            .map(|_| ())
    })
    .await;
    let prompts = fake.messages(ME).len();
    fake.tap(ME, ME, msg.message_id, &clarify);
    fake.until(30, "the stale clarify toast", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t == "The question changed — see the updated message.")
    })
    .await;
    assert_eq!(
        fake.messages(ME).len(),
        prompts,
        "no prompt for a stale tap"
    );
}

#[tokio::test]
async fn a_store_failure_during_a_tap_is_told_and_records_nothing() {
    let (db, fake, _d) = setup().await;
    let id = qid(&ask(
        &db,
        &["Ship it?", "--option", "yes", "--option", "no"],
    ));
    let msg = message_of(&fake, &id).await;
    let raw = common::raw_pool(&db.path).await;
    sqlx::query(
        "CREATE TRIGGER refuse_replies BEFORE UPDATE ON questions
         BEGIN SELECT RAISE(ABORT, 'replies are switched off'); END",
    )
    .execute(&raw)
    .await
    .unwrap();
    fake.tap(ME, ME, msg.message_id, &msg.button("yes"));
    fake.until(30, "the trouble toast", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t == "Something went wrong on the host; nothing was recorded. Try again.")
    })
    .await;
    sqlx::query("DROP TRIGGER refuse_replies")
        .execute(&raw)
        .await
        .unwrap();
    let v = json(&db.cli(&["--json", "show", &id]));
    assert!(v["question"]["reply"].is_null(), "{v}");
}

#[tokio::test]
async fn list_shows_this_chats_open_questions_and_which_wait_for_the_agent() {
    let (db, fake, _d) = setup().await;
    fake.send_text(ME, ME, "/list", None);
    fake.until(30, "the empty list", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t == "Nothing open here. 🎉")
    })
    .await;
    let open = qid(&ask(&db, &["Pick a colour"]));
    let answered = qid(&ask(&db, &["Name the cat"]));
    message_of(&fake, &answered).await;
    // An answer the agent has picked up leaves the question open, and no
    // longer waiting for the agent.
    let seen = qid(&ask(&db, &["Seen already"]));
    for args in [vec!["reply", seen.as_str(), "noted"], vec!["pending"]] {
        let out = db.cli(&args);
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
    let out = db.cli(&["reply", &answered, "Ada"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    // Closed and snoozed questions are not listed.
    let closed = qid(&ask(&db, &["Closed already"]));
    let snoozed = qid(&ask(&db, &["Snoozed for now"]));
    for args in [
        vec!["dismiss", closed.as_str()],
        vec!["snooze", "--for", "1h", snoozed.as_str()],
    ] {
        let out = db.cli(&args);
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
    fake.send_text(ME, ME, "/list", None);
    let list = fake
        .until(30, "the list", |f| {
            f.sent_texts(ME)
                .into_iter()
                .find(|t| t.starts_with("Open items"))
        })
        .await;
    let short = |id: &str| id[id.len() - 8..].to_string();
    assert!(list.starts_with("Open items (3):\n"), "{list}");
    assert!(
        list.lines()
            .any(|l| l == format!("❓ #{} Seen already", short(&seen))),
        "{list}"
    );
    assert!(
        list.contains(&format!("❓ #{} Pick a colour", short(&open))),
        "{list}"
    );
    assert!(
        list.contains(&format!(
            "❓ #{} Name the cat (answered, waiting for the agent)",
            short(&answered)
        )),
        "{list}"
    );
    assert!(
        !list.contains("Closed already") && !list.contains("Snoozed for now"),
        "{list}"
    );
    assert!(
        !list.contains("Pick a colour (answered"),
        "an unanswered question is just open: {list}"
    );
}
