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
    fake.until(15, "the first messages", |f| {
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
    // the restarted daemon does not push everything twice.
    let texts = fake.sent_texts(ME);
    let distinct: HashSet<&String> = texts.iter().collect();
    assert!(
        texts.len() <= 20 + 2,
        "at most a couple of resends: {} sends",
        texts.len()
    );
    assert!(distinct.len() >= 20);
}
