//! Slack: a burst of items to one channel within Slack's rate tiers (about
//! one `chat.postMessage` a second per channel) under the digest rule (the
//! first five as their own messages, the rest in one digest), its time and
//! Web API calls; and the latency from a button tap reaching the daemon over
//! Socket Mode to the answer committed. Both against the fake Slack of the
//! tests (Web API and websocket on loopback).

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use handoff::config::Config;
use handoff::store::Store;
use handoff::store::questions::{NewQuestion, QuestionOption};
use tokio_util::sync::CancellationToken;

use crate::fake_slack::FakeSlack;
use crate::{Table, pct, thousands};

/// Channels for the tap run: its questions are spread over them so that
/// the per-channel post tier does not make the set-up the long part.
const TAP_CHANNELS: usize = 10;

fn config(api: &str, channels: usize) -> Config {
    let mut text = format!(
        "[slack]\napp_token = \"xapp-1-bench\"\nbot_token = \"xoxb-bench\"\napi_url = \"{api}\"\n"
    );
    if channels > 1 {
        // The tap run needs every question's own message: no digests.
        text.push_str("digest_threshold = 100000\n");
    }
    for c in 0..channels {
        let projects = if channels == 1 {
            String::new()
        } else {
            format!("projects = [\"p{c}\"]\n")
        };
        text.push_str(&format!(
            "\n[[slack.channels]]\nid = \"C0BENCH{c}\"\n{projects}approve = [\"U0BENCH\"]\n"
        ));
    }
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

/// How many items a digest message lists ("📬 N new items arrived at
/// once."); None for any other message.
fn digest_of(text: &str) -> Option<usize> {
    let head = &text[..text.find(" new items")?];
    head.rsplit(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn yes_no(title: String, project: String) -> NewQuestion {
    let option = |label: &str| QuestionOption {
        label: label.into(),
        recommended: false,
    };
    NewQuestion {
        title,
        project,
        options: vec![option("yes"), option("no")],
        ..Default::default()
    }
}

pub async fn run(quick: bool, t: &mut Table) {
    let burst = if quick { 20 } else { 1000 };
    let taps = if quick { 30 } else { 200 };
    let dir = tempfile::tempdir().unwrap();

    // 1. A burst to one channel: every item posted, within the tier.
    let fake = FakeSlack::start().await;
    let store = Store::open(&dir.path().join("burst.db")).await.unwrap();
    for i in 0..burst {
        let q = NewQuestion {
            title: format!("burst question {i}"),
            project: "bench".into(),
            ..Default::default()
        };
        store.flag(&q).await.unwrap();
    }
    let t1 = Instant::now();
    let (cancel, h) = start(store.clone(), config(&fake.url, 1)).await;
    // Every item shown, as its own message or listed in a digest. The
    // digest rule (`docs/design.md` §8) makes that the first five and one
    // digest of the rest when the daemon takes the burst in within one
    // window; one slower than that (a loaded machine, a debug build) sends
    // a digest per window, and the table says so.
    let (cards, digests) = fake
        .until(600, "the burst shown", |f| {
            let msgs = f.messages("C0BENCH0");
            let listed: Vec<usize> = msgs.iter().filter_map(|m| digest_of(&m.text)).collect();
            let cards = msgs.len() - listed.len();
            (cards + listed.iter().sum::<usize>() >= burst).then_some((cards, listed.len()))
        })
        .await;
    let visible = t1.elapsed().as_secs_f64();
    let posts = fake.calls("chat.postMessage").len();
    let calls: usize = ["chat.postMessage", "chat.update", "chat.postEphemeral"]
        .iter()
        .map(|m| fake.calls(m).len())
        .sum();
    cancel.cancel();
    let _ = h.await;

    // 2. Tap → commit, over Socket Mode.
    let fake2 = FakeSlack::start().await;
    let store2 = Store::open(&dir.path().join("taps.db")).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..taps {
        let q = yes_no(
            format!("tap question {i}"),
            format!("p{}", i % TAP_CHANNELS),
        );
        ids.push(store2.flag(&q).await.unwrap().question.id);
    }
    let (cancel2, h2) = start(store2.clone(), config(&fake2.url, TAP_CHANNELS)).await;
    fake2
        .until(600, "every tap question posted", |f| {
            (f.connected() && f.calls("chat.postMessage").len() >= taps).then_some(())
        })
        .await;
    let mut lat = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let short = &id[id.len() - 8..];
        let channel = format!("C0BENCH{}", n % TAP_CHANNELS);
        let msg = fake2
            .messages(&channel)
            .into_iter()
            .find(|m| m.text.contains(short))
            .expect("message");
        let before = now_ms();
        fake2.send(FakeSlack::tap_frame(
            &format!("bench-{n}"),
            &channel,
            "U0BENCH",
            &msg.ts,
            &msg.button("yes"),
            &format!("{n}.0"),
        ));
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
        "slack",
        format!(
            "{}-item burst to one Slack channel within the post tier (about 1/s, bursts of 4): every item shown ({cards} cards + {digests} digest{}, 3 s window; by design 5 + 1)",
            thousands(burst as f64),
            if digests == 1 { "" } else { "s" }
        ),
        format!("{visible:.1} s"),
    );
    t.row(
        "slack",
        "the burst's Web API calls (chat.postMessage)",
        format!("{calls} ({posts})"),
    );
    t.row(
        "slack",
        format!("tap → commit: a Socket Mode tap reaches the daemon → answer committed ({taps} taps), p50 / p99"),
        format!("{:.0} / {:.0} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}
