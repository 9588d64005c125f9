//! `handoff wait` with the daemon up: a Telegram tap (through the real
//! daemon and teloxide, against the fake Bot API) answers the session's
//! question, and the waiting process returns it, picked up.

mod common;

use std::process::{Command, Stdio};

use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use common::{TempDb, json};

const ME: i64 = 111;

#[tokio::test]
async fn wait_returns_a_chat_answer_with_the_daemon_up() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let _d = Daemon::start(&db.path, &cfg);

    let out = db.cli(&[
        "--json",
        "ask",
        "--session",
        "phone-1",
        "Ship today?",
        "--option",
        "yes",
        "--option",
        "no",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = json(&out)["question"]["id"].as_str().unwrap().to_string();
    let waiter = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "wait",
            "--session",
            "phone-1",
            "--timeout",
            "60s",
            "--exit-code",
            "2",
            "--json",
        ])
        .env("HANDOFF_DB", &db.path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let msg = fake
        .until(30, "the question in chat", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Ship today?"))
        })
        .await;
    fake.tap(ME, ME, msg.message_id, &msg.button("yes"));

    let out = tokio::task::spawn_blocking(move || waiter.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    let arrived = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        arrived.contains("yes") && arrived.contains(&id),
        "{arrived}"
    );
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["source"], "chat", "{v}");
    assert!(
        !v["question"]["reply"]["seen_at"].is_null(),
        "wait marked it picked up: {v}"
    );
}
