//! Bursts on Slack through the real daemon, the real `handoff` binary and
//! the fake Slack (Web API + Socket Mode), under the one digest rule
//! (`docs/design.md` §8): a burst to one channel is the first
//! `digest_threshold` items as their own messages and one digest of the
//! rest, each item shown once in the channel, also when the daemon is
//! killed while the rest wait for their digest.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::TempDb;
use common::daemon::Daemon;
use common::fake_slack::{FakeSlack, Msg};

const CH: &str = "C0TEAM";

/// Slack only, the default threshold (more than 5 within the window), a
/// 10 s window: the asks of one test land inside it on a busy machine.
fn config(db: &TempDb, slack: &FakeSlack) -> std::path::PathBuf {
    let p = db.dir.path().join("handoff.toml");
    std::fs::write(
        &p,
        format!(
            "[slack]\napp_token = \"xapp-1-test\"\nbot_token = \"xoxb-test\"\napi_url = \"{}\"\ndigest_window_secs = 10\n\n[[slack.channels]]\nid = \"{CH}\"\napprove = [\"U0ALICE\"]\n",
            slack.url
        ),
    )
    .unwrap();
    p
}

async fn start(db: &TempDb, slack: &FakeSlack) -> Daemon {
    let d = Daemon::start(&db.path, &config(db, slack));
    slack
        .until(30, "a Socket Mode connection", |s| {
            s.connected().then_some(())
        })
        .await;
    d
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

/// The Slack message records' `ts`, once `done` holds for them.
async fn records(db: &TempDb, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.path.display()))
        .await
        .unwrap();
    for _ in 0..1500 {
        let ts: Vec<String> = sqlx::query_scalar("SELECT ts FROM slack_messages")
            .fetch_all(&pool)
            .await
            .unwrap();
        if done(&ts) {
            pool.close().await;
            return ts;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the Slack records never came to: {what}");
}

/// Every record posted or covered by a digest.
async fn settled(db: &TempDb) -> Vec<String> {
    records(db, "all shown", |ts| {
        ts.len() == 7 && ts.iter().all(|t| !t.is_empty())
    })
    .await
}

/// The burst as the channel shows it: five messages of one item each,
/// then one digest of the other two (no buttons), every item in exactly
/// one message.
fn check_burst(msgs: &[Msg]) {
    common::chat_msg::check_burst(msgs);
    let digest = msgs.iter().find(|m| m.text.contains("new items")).unwrap();
    assert!(
        !digest.shown().contains('<'),
        "mrkdwn, not HTML: {}",
        digest.shown()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_to_a_slack_channel_is_five_cards_and_one_digest_each_item_once() {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let _d = start(&db, &slack).await;
    seven_asks(&db);
    let ts = settled(&db).await;
    assert_eq!(
        ts.iter().filter(|t| t.starts_with("digest:")).count(),
        2,
        "{ts:?}"
    );
    // Past the window and a redraw pass: nothing more is posted.
    tokio::time::sleep(Duration::from_secs(3)).await;
    check_burst(&slack.messages(CH));
    assert_eq!(slack.calls("chat.postMessage").len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_waiting_for_their_digest_survive_a_daemon_kill_and_are_shown_once() {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let mut d = start(&db, &slack).await;
    seven_asks(&db);
    // Five cards posted and recorded, two waiting for the digest (no
    // `ts` yet): then the daemon dies.
    records(&db, "5 cards posted and 2 waiting", |ts| {
        ts.len() == 7
            && ts
                .iter()
                .filter(|t| t.contains('.') && !t.starts_with("digest:"))
                .count()
                == 5
    })
    .await;
    d.kill9();
    assert!(
        slack
            .messages(CH)
            .iter()
            .all(|m| !m.text.contains("new items")),
        "killed before the digest went out"
    );
    let _d = start(&db, &slack).await;
    settled(&db).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    check_burst(&slack.messages(CH));
}
