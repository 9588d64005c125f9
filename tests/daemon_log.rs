//! The daemon's log says what is happening: one start-up line for chat
//! (on, which bot, which mode), one line for the address, one `info` line
//! per state change whichever process made it, and a token Telegram
//! refuses said once as an error instead of retried forever (through the
//! real `handoff serve` and the fake Bot API).

mod common;

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::{FakeTelegram, Fault};

const ME: i64 = 111;

async fn line_with(d: &Daemon, what: &'static str, needle: String) -> String {
    common::wait_for(30, what, || {
        let needle = needle.clone();
        async move {
            d.log()
                .lines()
                .find(|l| l.contains(&needle))
                .map(String::from)
        }
    })
    .await
}

#[tokio::test]
async fn the_log_says_chat_is_on_and_each_state_change_from_any_process() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let d = Daemon::start(&db.path, &cfg);

    let chat = line_with(&d, "the chat start-up line", "chat is on".into()).await;
    assert!(chat.contains("INFO"), "{chat}");
    assert!(chat.contains("@handoff_bot"), "which bot: {chat}");
    assert!(chat.contains("polling"), "which mode: {chat}");
    // One line for the address, not two.
    let serving = d.log().lines().filter(|l| l.contains(&d.addr)).count();
    assert_eq!(serving, 1, "{}", d.log());

    // A question asked by the CLI, another process, is logged by the daemon.
    let out = db.cli(&["ask", "Ship it?", "--project", "p", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = v["question"]["id"].as_str().unwrap().to_string();
    // The follower's line (` id=`), not the store's own `question_id=` line
    // (the CLI's write may run inside the daemon, through its socket).
    let line = line_with(&d, "the question's log line", format!(" id={id}")).await;
    assert!(line.contains("question.flagged"), "{line}");
    assert!(line.contains("INFO"), "{line}");
    assert!(
        line.contains("via=agent"),
        "the door it came through: {line}"
    );
}

#[tokio::test]
async fn a_token_telegram_refuses_is_one_error_and_chat_stays_off() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    fake.fault("getme", Fault::Unauthorized);
    fake.fault("getupdates", Fault::Unauthorized);
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let d = Daemon::start(&db.path, &cfg);

    let line = line_with(
        &d,
        "the refused-token error",
        "refuses the bot token".into(),
    )
    .await;
    assert!(line.contains("ERROR"), "{line}");
    assert!(
        line.contains("HANDOFF_TELEGRAM_TOKEN"),
        "what to do: {line}"
    );
    assert!(!line.contains("Api("), "readable, not a Debug dump: {line}");
    // getMe comes before polling starts: with the token refused, polling
    // never started and nothing was retried.
    assert_eq!(fake.faulted("getme"), 1);
    assert_eq!(fake.faulted("getupdates"), 0);
    assert_eq!(d.log().matches("refuses the bot token").count(), 1);
    // The rest of the daemon serves on.
    let health = reqwest::get(format!("http://{}/healthz", d.addr))
        .await
        .unwrap();
    assert!(health.status().is_success());
}
