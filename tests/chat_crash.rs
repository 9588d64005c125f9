//! kill -9 the daemon mid-burst: after a restart every item has at least one
//! chat message (pushes interrupted between `sending` and `sent` are resent,
//! and the durable cursor resumes where it stopped).

mod common;

use std::collections::HashSet;

use common::TempDb;
use common::daemon::Daemon;
use common::fake_telegram::FakeTelegram;

const ME: i64 = 111;

#[tokio::test]
async fn kill_9_mid_burst_then_restart_leaves_no_item_without_a_message() {
    let db = TempDb::new();
    let store = db.open().await;
    let fake = FakeTelegram::start().await;
    // Slow sends (5/s) so the kill lands in the middle of the burst.
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(
        &cfg,
        format!(
            "[telegram]\ntoken = \"123:TEST\"\napi_url = \"{}\"\npoll_timeout_secs = 1\ndigest_threshold = 1000\n\
             [telegram.limits]\nper_chat_per_sec = 5\nper_chat_per_min = 6000\nper_group_per_min = 6000\noverall_per_sec = 5\n\
             [[telegram.chats]]\nname = \"me\"\nchat_id = {ME}\nanswer = [{ME}]\napprove = [{ME}]\n",
            fake.url
        ),
    )
    .unwrap();
    let mut ids = Vec::new();
    for i in 0..20 {
        let q = common::ask(&store, &format!("burst question {i}")).await;
        ids.push(q.id);
    }
    let mut d = Daemon::start(&db.path, &cfg);
    fake.until(30, "the first messages", |f| {
        (f.sent_texts(ME).len() >= 3).then_some(())
    })
    .await;
    d.kill9();
    let before = fake.sent_texts(ME).len();
    assert!(before < 20, "the kill landed mid-burst ({before} sent)");

    let _d2 = Daemon::start(&db.path, &cfg);
    let shorts: Vec<String> = ids
        .iter()
        .map(|id| id[id.len() - 8..].to_string())
        .collect();
    fake.until(30, "every question in chat", |f| {
        let texts = f.sent_texts(ME);
        shorts
            .iter()
            .all(|s| texts.iter().any(|t| t.contains(s.as_str())))
            .then_some(())
    })
    .await;
    // Duplicates are allowed (a resend after a crash), losses are not; and
    // the restarted daemon does not push everything twice. Each message has
    // its own task, so the sends in flight at the kill — at most one
    // second's allowance of the throttle, 5 here — may each be sent again.
    let texts = fake.sent_texts(ME);
    let distinct: HashSet<&String> = texts.iter().collect();
    assert!(
        texts.len() <= 20 + 5,
        "at most the sends in flight at the kill are sent again: {} sends",
        texts.len()
    );
    assert!(distinct.len() >= 20);
}

#[tokio::test]
async fn decisions_taken_before_a_kill_9_are_applied_once_after_restart() {
    let db = TempDb::new();
    let store = db.open().await;
    let fake = FakeTelegram::start().await;
    let cfg =
        common::daemon::write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let mut d = Daemon::start(&db.path, &cfg);
    let out = db.cli(&[
        "--json",
        "propose",
        "--kind",
        "deploy",
        "--summary",
        "crash-safe deploy",
        "--args",
        "{}",
        "--approvals",
        "1",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = common::json(&out)["action"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let msg = fake
        .until(30, "the action", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("crash-safe deploy"))
        })
        .await;
    // Tap, and kill the daemon the moment the decision is committed: the
    // update may not be confirmed to Telegram yet, so it can come again.
    fake.tap(ME, ME, msg.message_id, &msg.button("Approve"));
    loop {
        let a = store.get_action(&id).await.unwrap();
        if a.status.as_str() == "approved" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    d.kill9();
    let _d2 = Daemon::start(&db.path, &cfg);
    // A second tap after the restart (a user retrying) is told, not applied.
    fake.tap(ME, ME, msg.message_id, &msg.button("Approve"));
    fake.until(30, "the retry told", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("Already approved"))
    })
    .await;
    let audit = store.action_audit(&id).await.unwrap();
    let approvals = audit.iter().filter(|e| e.event == "approved").count();
    assert_eq!(approvals, 1, "{audit:#?}");
    assert_eq!(store.get_action(&id).await.unwrap().approvals, 1);
}
