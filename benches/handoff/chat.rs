//! The chat bridge: a 1,000-question burst against a fake Bot API that
//! enforces Telegram's flood limits, and the latency from a button tap
//! reaching the daemon to the answer committed.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use handoff::config::Config;
use handoff::store::Store;
use handoff::store::questions::{NewQuestion, QuestionOption};
use tokio_util::sync::CancellationToken;

use crate::fake_telegram::FakeTelegram;
use crate::{Table, pct, thousands};

const CHAT: i64 = 111;

fn config(api: &str, extra: &str) -> Config {
    let text = format!(
        "[telegram]\ntoken = \"1:B\"\napi_url = \"{api}\"\npoll_timeout_secs = 1\n{extra}\n\
         [[telegram.chats]]\nname = \"me\"\nchat_id = {CHAT}\nanswer = [{CHAT}]\napprove = [{CHAT}]\n"
    );
    Config::parse(&text, Path::new("bench.toml")).expect("bench config")
}

async fn start(store: Store, cfg: Config) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let h = tokio::spawn(async move {
        handoff::daemon::run(cfg, store, listener, c).await.unwrap();
    });
    (cancel, h)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

pub async fn burst(quick: bool, t: &mut Table) {
    let burst = if quick { 100 } else { 1000 };
    let taps = if quick { 30 } else { 200 };
    let dir = tempfile::tempdir().unwrap();

    // 1. Burst under Telegram's limits (30 messages/s overall; the fake
    //    answers 429 to anything faster).
    let fake = FakeTelegram::start().await;
    fake.rate_limit_sends(Duration::from_millis(34));
    let store = Store::open(&dir.path().join("burst.db")).await.unwrap();

    for i in 0..burst {
        store
            .flag(&NewQuestion {
                title: format!("burst question {i}"),
                project: "bench".into(),
                ..Default::default()
            })
            .await
            .unwrap();
    }

    let t1 = Instant::now();
    let (cancel, h) = start(store.clone(), config(&fake.url, "")).await;
    loop {
        let sent = store.count_rows("chat_messages").await.unwrap();
        let pending = count_not_out(&store).await;
        if sent as usize == burst && pending == 0 {
            break;
        }
        if t1.elapsed() > Duration::from_secs(300) {
            panic!("burst not delivered in 300 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let visible = t1.elapsed().as_secs_f64();
    let calls = fake
        .all_calls()
        .iter()
        .filter(|c| c.method != "getupdates")
        .count();
    let sends = fake.calls("sendmessage").len();
    let rejected = fake.rejected_429();
    cancel.cancel();
    let _ = h.await;

    // 2. Tap → commit latency, with generous limits so the pushes are quick.
    let fake2 = FakeTelegram::start().await;
    let store2 = Store::open(&dir.path().join("taps.db")).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..taps {
        let q = store2
            .flag(&NewQuestion {
                title: format!("tap question {i}"),
                options: vec![
                    QuestionOption {
                        label: "yes".into(),
                        recommended: false,
                    },
                    QuestionOption {
                        label: "no".into(),
                        recommended: false,
                    },
                ],
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(q.question.id);
    }
    let extra = "digest_threshold = 100000\n[telegram.limits]\nper_chat_per_sec = 1000\nper_chat_per_min = 100000\nper_group_per_min = 100000\noverall_per_sec = 1000";
    let (cancel2, h2) = start(store2.clone(), config(&fake2.url, extra)).await;
    while fake2.calls("sendmessage").len() < taps {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut lat = Vec::new();
    for id in &ids {
        let short = &id[id.len() - 8..];
        let msg = fake2
            .messages(CHAT)
            .into_iter()
            .find(|m| m.text.contains(short))
            .expect("message");
        let before = now_ms();
        fake2.tap(CHAT, CHAT, msg.message_id, &msg.button("yes"));
        loop {
            if let Some(r) = store2.get_question(id).await.unwrap().and_then(|q| q.reply) {
                lat.push((r.at - before) as f64);
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    cancel2.cancel();
    let _ = h2.await;

    lat.sort_by(f64::total_cmp);
    t.row(
        "chat",
        format!("{}-question burst to one chat, fake Bot API answering 429 above 30 msg/s: every item visible", thousands(burst as f64)),
        format!("{visible:.1} s"),
    );
    t.row(
        "chat",
        "the burst's Bot API calls (sendMessage; 429s answered by the fake, all retried)",
        format!("{calls} ({sends}); {rejected} × 429"),
    );
    t.row(
        "chat",
        format!("callback → commit: button tap reaches the daemon → answer committed ({taps} taps), p50 / p99"),
        format!("{:.0} / {:.0} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}

/// Pushes not yet out: being sent (claimed, not yet confirmed by Telegram),
/// or waiting (for their burst's digest).
async fn count_not_out(store: &Store) -> i64 {
    let sending = store.chat_unsent().await.unwrap().len();
    let waiting = store.chat_held_due(i64::MAX).await.unwrap().len();
    (sending + waiting) as i64
}
