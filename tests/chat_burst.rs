//! Bursts and documents through the real daemon, the real `handoff` binary
//! and the fake Bot API, under Telegram's default flood limits (one message
//! a second per chat):
//!
//! - a burst of asks gives the first `digest_threshold` items as their own
//!   messages and the rest as one digest, in a private chat and in a forum
//!   topic; no item is shown twice in one (chat, topic);
//! - a message whose whole text travels as a file offers no Approve button
//!   before the file has arrived: a failed upload is retried, and one that
//!   keeps failing leaves a card that says the file is missing.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::daemon::Daemon;
use common::fake_telegram::{FakeTelegram, Fault, Msg};
use common::{TempDb, json};

const ME: i64 = 111;
const GROUP: i64 = -100_777;

/// A config with the default digest rule (more than 5 within the window)
/// and Telegram's default flood limits. `window` is the digest window: the
/// asks of one test must all land inside it on a busy machine.
fn config(
    db: &TempDb,
    fake: &FakeTelegram,
    chat: i64,
    window: u64,
    extra: &str,
) -> std::path::PathBuf {
    let p = db.dir.path().join("handoff.toml");
    std::fs::write(
        &p,
        format!(
            "[telegram]\ntoken = \"123:TEST\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n\
             digest_window_secs = {window}\n\
             [[telegram.chats]]\nname = \"here\"\nchat_id = {chat}\nanswer = [{ME}]\napprove = [{ME}]\n{extra}",
            fake.url
        ),
    )
    .unwrap();
    p
}

/// Seven `handoff ask "Burst item N" --project P`, started together.
fn seven_asks(db: &TempDb) {
    let children: Vec<_> = (0..7)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_handoff"))
                .args(["ask", &format!("Burst item {i}"), "--project", "P"])
                .env("HANDOFF_DB", &db.path)
                .env_remove("HANDOFF_URL")
                .env_remove("HANDOFF_CONFIG")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn handoff ask")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
}

/// The message records' statuses, once none is still on its way (sending,
/// or waiting for its digest).
async fn settled_records(db: &TempDb, n: usize) -> Vec<String> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.path.display()))
        .await
        .unwrap();
    for _ in 0..1500 {
        let states: Vec<String> = sqlx::query_scalar("SELECT status FROM chat_messages")
            .fetch_all(&pool)
            .await
            .unwrap();
        if states.len() == n && states.iter().all(|s| s == "sent" || s == "digest") {
            pool.close().await;
            return states;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the records never settled");
}

/// Check the burst as the chat shows it: five messages of one item each,
/// then one digest of the other two, every item in exactly one message,
/// all in `thread`.
fn check_burst(msgs: &[Msg], thread: Option<i64>) {
    common::chat_msg::check_burst(msgs);
    for m in msgs {
        assert_eq!(
            m.thread_id, thread,
            "every message in the item's topic: {m:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_in_a_private_chat_is_five_cards_and_one_digest_each_item_once() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = config(&db, &fake, ME, 10, "");
    let _d = Daemon::start(&db.path, &cfg);
    fake.until(30, "the daemon polling", |f| {
        f.calls("getupdates").first().cloned()
    })
    .await;
    seven_asks(&db);
    let states = settled_records(&db, 7).await;
    assert_eq!(
        states.iter().filter(|s| *s == "digest").count(),
        2,
        "{states:?}"
    );
    // Past the sender's sweep for owed messages (every 2 s): nothing more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    check_burst(&fake.messages(ME), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_in_a_forum_topic_is_five_cards_and_one_digest_in_that_topic() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = config(&db, &fake, GROUP, 10, "topics = \"project\"\n");
    let _d = Daemon::start(&db.path, &cfg);
    fake.until(30, "the daemon polling", |f| {
        f.calls("getupdates").first().cloned()
    })
    .await;
    seven_asks(&db);
    settled_records(&db, 7).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let topics = fake.calls("createforumtopic");
    assert_eq!(topics.len(), 1, "one topic for project P: {topics:#?}");
    let thread = fake.messages(GROUP).iter().find_map(|m| m.thread_id);
    assert!(thread.is_some(), "the project's topic");
    check_burst(&fake.messages(GROUP), thread);
}

/// Propose an action whose arguments are about 9 kB (far over one
/// message): its whole text goes as a file.
fn propose_long(db: &TempDb) -> String {
    let blob: String = (0..300)
        .map(|i| format!("step {i:04} of the plan; "))
        .collect();
    let args = serde_json::json!({ "plan": blob }).to_string();
    let out = db.cli(&[
        "--json",
        "propose",
        "--kind",
        "deploy.plan",
        "--summary",
        "Roll out the long plan",
        "--args",
        &args,
        "--timeout",
        "10m",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    json(&out)["action"]["id"].as_str().unwrap().to_string()
}

fn approvable(msgs: &[Msg]) -> Vec<&Msg> {
    msgs.iter()
        .filter(|m| m.buttons().iter().any(|(l, _)| l.contains("Approve")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_upload_is_sent_again_and_the_card_is_approvable_only_after_it() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    fake.fault("sendDocument", Fault::ServerError);
    let cfg = config(&db, &fake, ME, 3, "");
    let _d = Daemon::start(&db.path, &cfg);
    let id = propose_long(&db);
    // Two refused uploads: the second is a retry.
    fake.until(30, "the upload tried again", |f| {
        (f.faulted("senddocument") >= 2).then_some(())
    })
    .await;
    assert!(
        approvable(&fake.messages(ME)).is_empty(),
        "no Approve before the file arrived: {:#?}",
        fake.messages(ME)
    );
    fake.clear_faults();
    let card = fake
        .until(60, "the card, approvable", |f| {
            approvable(&f.messages(ME)).first().map(|m| (*m).clone())
        })
        .await;
    let uploads = fake.calls("senddocument");
    let arrived = uploads.last().expect("an upload");
    assert_eq!(
        uploads.len() as u64,
        fake.faulted("senddocument") + 1,
        "one upload after the fault cleared"
    );
    assert!(arrived.at < card.sent_at, "the file first, then the card");
    let body = arrived.body["multipart"].as_str().unwrap_or_default();
    assert!(
        body.contains("step 0299 of the plan"),
        "the whole text in the file"
    );
    assert!(card.text.contains(&id[id.len() - 8..]), "{}", card.text);
    assert!(card.text.contains("file"), "{}", card.text);
    assert!(!card.text.contains("missing"), "{}", card.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_that_keeps_failing_leaves_a_card_saying_so_without_approve() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    fake.fault("sendDocument", Fault::ServerError);
    let cfg = config(&db, &fake, ME, 3, "");
    let _d = Daemon::start(&db.path, &cfg);
    let id = propose_long(&db);
    let short = id[id.len() - 8..].to_string();
    let card = fake
        .until(60, "the card, after the uploads were given up", |f| {
            f.messages(ME).into_iter().find(|m| m.text.contains(&short))
        })
        .await;
    assert!(
        fake.faulted("senddocument") >= 2,
        "retried before giving up"
    );
    assert!(card.text.contains("could not be sent"), "{}", card.text);
    assert!(card.text.contains("Inbox"), "{}", card.text);
    assert!(!card.text.contains("attached file"), "{}", card.text);
    let labels: Vec<String> = card.buttons().into_iter().map(|(l, _)| l).collect();
    assert!(
        !labels
            .iter()
            .any(|l| l.contains("Approve") || l.contains("Edit")),
        "nothing that approves unread text: {labels:?}"
    );
    assert!(labels.iter().any(|l| l.contains("Reject")), "{labels:?}");
}
