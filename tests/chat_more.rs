//! The bridge's edges: webhook mode with its secret token, bursts coalesced
//! into a digest, `/start` pairing, and long texts within Telegram's limit.

mod common;

use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use common::{TempDb, json};
use serde_json::json as j;

const ME: i64 = 111;

fn telegram_config(db: &TempDb, fake: &FakeTelegram, telegram_extra: &str) -> std::path::PathBuf {
    let p = db.dir.path().join("handoff.toml");
    std::fs::write(
        &p,
        format!(
            "[telegram]\ntoken = \"123:TEST\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n{telegram_extra}\n\
             [telegram.limits]\nper_chat_per_sec = 100\nper_chat_per_min = 6000\nper_group_per_min = 6000\noverall_per_sec = 100\n\
             [[telegram.chats]]\nname = \"me\"\nchat_id = {ME}\nanswer = [{ME}]\napprove = [{ME}]\n",
            fake.url
        ),
    )
    .unwrap();
    p
}

#[tokio::test]
async fn webhook_mode_checks_the_secret_token() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = telegram_config(
        &db,
        &fake,
        "mode = \"webhook\"\nwebhook_url = \"https://bot.example.invalid/telegram\"\nwebhook_secret = \"right-secret\"",
    );
    let d = Daemon::start(&db.path, &cfg);
    fake.until(30, "setWebhook", |f| f.calls("setwebhook").first().cloned())
        .await;
    assert!(
        fake.calls("getupdates").is_empty(),
        "no polling in webhook mode"
    );

    let id = {
        let out = db.cli(&[
            "--json",
            "ask",
            "Webhook question",
            "--option",
            "a",
            "--option",
            "b",
        ]);
        json(&out)["question"]["id"].as_str().unwrap().to_string()
    };
    let msg = fake
        .until(30, "the question's message", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Webhook question"))
        })
        .await;
    let update = j!({
        "update_id": 1,
        "callback_query": {
            "id": "cb1", "chat_instance": "ci", "data": msg.button("a"),
            "from": common::fake_telegram::user_json(ME),
            "message": {"message_id": msg.message_id, "date": 1_700_000_000, "chat": {"id": ME, "type": "private", "first_name": "me"}, "text": msg.text}
        }
    });
    let url = format!("http://{}/telegram", d.addr);
    let http = reqwest::Client::new();
    for bad in [None, Some("wrong-secret")] {
        let mut req = http.post(&url).json(&update);
        if let Some(s) = bad {
            req = req.header("X-Telegram-Bot-Api-Secret-Token", s);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 401, "secret {bad:?}");
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert!(
        v["question"]["reply"].is_null(),
        "nothing stored without the right secret: {v}"
    );

    let res = http
        .post(&url)
        .header("X-Telegram-Bot-Api-Secret-Token", "right-secret")
        .json(&update)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    fake.until(30, "the tap processed", |f| {
        f.toasts().into_iter().find(|t| t.contains("Recorded: a"))
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["text"], "a", "{v}");
}

#[tokio::test]
async fn a_burst_becomes_one_digest_and_every_item_is_covered() {
    let db = TempDb::new();
    let store = db.open().await;
    for i in 0..12 {
        common::ask(&store, &format!("burst {i}")).await;
    }
    let fake = FakeTelegram::start().await;
    let cfg = telegram_config(&db, &fake, "digest_threshold = 3\ndigest_window_secs = 5");
    let _d = Daemon::start(&db.path, &cfg);
    // The singles and the digest are sent by separate tasks, in any order:
    // wait for the digest and for four messages in all.
    let (digest, sent) = fake
        .until(30, "a digest message and the 3 singles", |f| {
            let sent = f.sent_texts(ME);
            let digest = sent.iter().find(|t| t.contains("new items")).cloned();
            digest.filter(|_| sent.len() >= 4).map(|d| (d, sent))
        })
        .await;
    assert_eq!(
        sent.len(),
        4,
        "3 single messages, then one digest for the other 9: {sent:#?}"
    );
    assert!(digest.contains("9 new items"), "{digest}");
    for i in 3..12 {
        assert!(digest.contains(&format!("burst {i}")), "{digest}");
    }
    // Every item has a durable message record: sent or covered by the digest.
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.path.display()))
        .await
        .unwrap();
    // The digest is recorded right after Telegram confirms it: wait for the records.
    let mut states: Vec<String> = Vec::new();
    for _ in 0..300 {
        states = sqlx::query_scalar("SELECT status FROM chat_messages")
            .fetch_all(&pool)
            .await
            .unwrap();
        if states.iter().filter(|s| *s == "digest").count() == 9 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(states.len(), 12);
    assert_eq!(
        states.iter().filter(|s| *s == "digest").count(),
        9,
        "{states:?}"
    );
}

#[tokio::test]
async fn start_pairing_admits_a_new_user_from_the_host() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[])], "");
    let _d = Daemon::start(&db.path, &cfg);
    const NEWBIE: i64 = 777;
    fake.send_text(ME, NEWBIE, "/start", None);
    let hello = fake
        .until(30, "the pairing code", |f| {
            f.sent_texts(ME)
                .into_iter()
                .find(|t| t.contains("handoff pair"))
        })
        .await;
    let code = hello
        .split("handoff pair ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap()
        .to_string();
    assert!(hello.contains("777"), "tells the user their id: {hello}");

    let out = db.cli(&["pair", "WRONGCODE"]);
    assert_eq!(out.status.code(), Some(4), "unknown code");
    let out = db.cli(&["pair", &code, "--role", "answer"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let again = db.cli(&["pair", &code]);
    assert_eq!(again.status.code(), Some(4), "a code works once");

    let out = db.cli(&["--json", "ask", "Paired?"]);
    let id = json(&out)["question"]["id"].as_str().unwrap().to_string();
    let msg = fake
        .until(30, "the question", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("Paired?"))
        })
        .await;
    common::until_recorded(&db, ME, msg.message_id).await;
    fake.send_text(ME, NEWBIE, "yes, paired", Some(msg.message_id));
    fake.until(30, "the newcomer's answer recorded", |f| {
        f.sent_texts(ME)
            .into_iter()
            .find(|t| t.starts_with("Recorded"))
    })
    .await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["by"], "@user777", "{v}");
}

#[tokio::test]
async fn long_texts_stay_within_telegrams_limit() {
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let _d = Daemon::start(&db.path, &cfg);
    let context = "ctx <b>&amp; ".repeat(5000);
    let detail = "d".repeat(490);
    let out = db.cli(&[
        "ask",
        &"T".repeat(120),
        "--detail",
        &detail,
        "--context",
        &context,
        "--option",
        &"o".repeat(60),
        "--option",
        "two",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let msg = fake
        .until(30, "the long question", |f| {
            f.messages(ME).into_iter().find(|m| m.text.contains("TTTT"))
        })
        .await;
    assert!(
        msg.text.chars().count() <= 4096,
        "{}",
        msg.text.chars().count()
    );
    assert!(
        msg.text.contains("&lt;b&gt;"),
        "user text is escaped for HTML mode"
    );
    let big = serde_json::json!({"blob": "x".repeat(20_000)}).to_string();
    let out = db.cli(&[
        "propose",
        "--kind",
        "k",
        "--summary",
        "big args",
        "--args",
        &big,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let a = fake
        .until(30, "the big action", |f| {
            f.messages(ME)
                .into_iter()
                .find(|m| m.text.contains("big args"))
        })
        .await;
    assert!(a.text.chars().count() <= 4096);
}
