//! A daemon that dies while posting an item's Slack message: the next
//! daemon finds what Slack already shows before posting again, so each
//! item has exactly one message in its channel — whether Slack took the
//! post (found in the channel's history by the message's metadata, and
//! adopted) or never saw it (posted now).

mod common;

use std::time::Duration;

use common::daemon::{Daemon, FAULTS_OK};
use common::fake_slack::{FakeSlack, Fault, Msg};
use common::{TempDb, json};
use handoff::store::slack::SlackRecord;

const CH: &str = "C0TEAM";
const ALICE: &str = "U0ALICE";

fn config(db: &TempDb, slack: &FakeSlack) -> std::path::PathBuf {
    let p = db.dir.path().join("handoff.toml");
    let text = format!(
        "[slack]\napp_token = \"xapp-1-test\"\nbot_token = \"xoxb-test\"\napi_url = \"{}\"\ndigest_threshold = 50\n\n[[slack.channels]]\nid = \"{CH}\"\nanswer = [\"{ALICE}\"]\napprove = [\"{ALICE}\"]\n",
        slack.url
    );
    std::fs::write(&p, text).unwrap();
    p
}

fn ask(db: &TempDb, title: &str) -> String {
    let out = db.cli(&["--json", "ask", title, "--option", "Yes", "--option", "No"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v = json(&out);
    v["question"]["id"]
        .as_str()
        .or(v["id"].as_str())
        .expect("question id")
        .to_string()
}

/// The item's messages in the channel (by its short id).
fn messages_of(slack: &FakeSlack, id: &str) -> Vec<Msg> {
    let short = &id[id.len() - 8..];
    slack
        .messages(CH)
        .into_iter()
        .filter(|m| m.text.contains(short))
        .collect()
}

/// The `ts` the store saved for the item's message, once it saved one.
async fn saved_ts(db: &TempDb, id: &str) -> String {
    let store = db.open().await;
    let ts = common::wait_for(30, "the message's saved ts", || {
        let store = store.clone();
        async move {
            match store.slack_message("question", id, CH).await.unwrap() {
                Some(SlackRecord::Posted { ts, .. }) => Some(ts),
                _ => None,
            }
        }
    })
    .await;
    store.close().await;
    ts
}

/// Start a daemon that aborts right after its first post is answered,
/// and wait for it to die.
async fn die_after_post(db: &TempDb, cfg: &std::path::Path) -> Daemon {
    Daemon::start_with(
        &db.path,
        cfg,
        &[("HANDOFF_FAULT", "die-after-slack-post"), FAULTS_OK],
    )
}

async fn exits(mut d: Daemon) {
    let status = tokio::task::spawn_blocking(move || d.child.wait().unwrap())
        .await
        .unwrap();
    assert!(!status.success(), "the fault aborts the daemon");
}

#[tokio::test]
async fn a_post_slack_took_before_the_crash_is_found_and_not_posted_again() {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = config(&db, &slack);
    let dying = die_after_post(&db, &cfg).await;
    let id = ask(&db, "Ship it?");
    exits(dying).await;
    let posted = messages_of(&slack, &id);
    assert_eq!(posted.len(), 1, "Slack took the post before the crash");
    assert_eq!(slack.calls("chat.postMessage").len(), 1);

    // The next daemon looks in the channel before posting; Slack's first
    // answer to that is a 500 (retried).
    slack.fault("conversations.history", Fault::ServerError);
    let _d = Daemon::start(&db.path, &cfg);
    let ts = saved_ts(&db, &id).await;
    // A moment for a second post, were one coming.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let now = messages_of(&slack, &id);
    assert_eq!(
        now.len(),
        1,
        "exactly one message after the restart: {now:#?}"
    );
    assert_eq!(ts, posted[0].ts, "the store adopted the message Slack has");
    assert_eq!(slack.calls("chat.postMessage").len(), 1);
    assert!(
        slack.calls("conversations.history").len() >= 2,
        "the history was looked up, again after the 500"
    );

    // The adopted message is the one kept true: an answer updates it.
    let out = db.cli(&["reply", &id, "go ahead"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    slack
        .until(30, "the adopted message to show the answer", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == ts && m.updates > 0 && m.shown().contains("go ahead"))
        })
        .await;
    assert_eq!(messages_of(&slack, &id).len(), 1);
}

#[tokio::test]
async fn a_post_slack_never_took_is_posted_by_the_next_daemon_once() {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = config(&db, &slack);
    // Slack is slow to answer the post, and the daemon is killed while it
    // waits: the fake drops the call unanswered, never posting it.
    slack.fault("chat.postMessage", Fault::Slow(Duration::from_secs(30)));
    let mut d = Daemon::start(&db.path, &cfg);
    let id = ask(&db, "Ship it?");
    slack
        .until(30, "the post under way", |s| {
            (!s.calls("chat.postMessage").is_empty()).then_some(())
        })
        .await;
    d.kill9();
    assert!(messages_of(&slack, &id).is_empty());

    let _d = Daemon::start(&db.path, &cfg);
    let ts = saved_ts(&db, &id).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let now = messages_of(&slack, &id);
    assert_eq!(now.len(), 1, "exactly one message: {now:#?}");
    assert_eq!(now[0].ts, ts);
}
