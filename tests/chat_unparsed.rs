//! No update vanishes: one the bot cannot parse (a callback query without
//! `chat_instance`) is logged at warn with its update id and the parse
//! error, counted in `/metrics`, answered with a toast and skipped; the
//! updates after it are handled as usual (through the real `handoff serve`).

mod common;

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::{FakeTelegram, user_json};
use serde_json::json;

const ME: i64 = 111;

#[tokio::test]
async fn an_update_that_does_not_parse_is_logged_counted_and_skipped() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("me", ME, &[ME], &[ME])],
        "\n[http]\nopen = true\n",
    );
    let d = Daemon::start(&db.path, &cfg);
    let bad = fake.push_raw(json!({
        "callback_query": {"id": "cb-broken", "from": user_json(ME), "data": "x"}
    }));
    fake.until(30, "the broken update to be confirmed", |f| {
        f.confirmed(bad).then_some(())
    })
    .await;
    // Later updates still work.
    fake.send_text(ME, ME, "/help", None);
    fake.until(30, "the answer to /help", |f| {
        f.sent_texts(ME).into_iter().find(|t| t.contains("/list"))
    })
    .await;

    // The daemon's stderr is read by another thread: wait for the line.
    let line = common::wait_for(30, "the warning in the daemon's log", || async {
        d.log()
            .lines()
            .find(|l| l.contains("cannot parse a Telegram update"))
            .map(String::from)
    })
    .await;
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains(&format!("update_id={bad}")), "{line}");
    assert!(line.contains("chat_instance"), "the parse error: {line}");
    let toast = fake
        .calls("answercallbackquery")
        .into_iter()
        .find(|c| c.body["callback_query_id"] == "cb-broken")
        .expect("the broken tap is answered");
    assert!(toast.body["text"].as_str().unwrap().contains("/list"));
    let metrics = reqwest::get(format!("http://{}/metrics", d.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("handoff_telegram_updates_unparsed_total 1\n"),
        "{metrics}"
    );
}
