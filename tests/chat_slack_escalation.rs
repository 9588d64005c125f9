//! Escalation steps to Slack (`docs/design.md` §4, §8): a step naming a
//! `[[slack.channels]]` id posts the undecided action to that channel when
//! it fires, its card where it was says where it went, and a tap in the
//! new channel decides it (both messages show it). A step naming a channel
//! that is not configured is refused at start-up, naming file and line.
//! Through a running daemon (in this process, on a manual clock) and the
//! fake Slack.

mod common;

use common::engine::{Db, Engine};
use common::fake_slack::{FakeSlack, Msg};
use common::in_process::{advance, post, start};
use common::wait_for;
use serde_json::json;

const T0: i64 = 1_800_000_000_000;
const MIN: i64 = 60_000;
const TEAM: &str = "C0TEAM";
const OPS: &str = "C0OPS";
const ALICE: &str = "U0ALICE"; // approves in the team channel only
const OLGA: &str = "U0OLGA"; // approves in the ops channel

fn config(url: &str, step: &str) -> String {
    format!(
        "[http]\nopen = true\n\n[slack]\napp_token = \"xapp-1-test\"\nbot_token = \"xoxb-test\"\napi_url = \"{url}\"\n\n\
         [[slack.channels]]\nid = \"{TEAM}\"\nprojects = [\"shop\"]\napprove = [\"{ALICE}\"]\n\n\
         [[slack.channels]]\nid = \"{OPS}\"\nprojects = [\"ops\"]\napprove = [\"{OLGA}\"]\n\n\
         [[approvals.escalate]]\nafter = \"10m\"\n{step}\n\n\
         [[approvals.rule]]\nproject = \"poke\"\nescalate = []\n"
    )
}

#[test]
fn a_step_naming_a_channel_not_configured_is_refused_naming_file_and_line() {
    let text = config("http://127.0.0.1:9/api", "slack = \"C0NOPE\"");
    let err = handoff::config::Config::parse(&text, std::path::Path::new("handoff.toml"))
        .expect_err("an unknown channel")
        .to_string();
    let line = text
        .lines()
        .position(|l| l == "[[approvals.escalate]]")
        .unwrap()
        + 1;
    assert!(
        err.contains("handoff.toml") && err.contains(&format!("line {line}")),
        "{err}"
    );
    assert!(
        err.contains("C0NOPE") && err.contains("[[slack.channels]]"),
        "{err}"
    );
    let good = config("http://127.0.0.1:9/api", &format!("slack = \"{OPS}\""));
    assert!(handoff::config::Config::parse(&good, std::path::Path::new("handoff.toml")).is_ok());
}

fn with(slack: &FakeSlack, channel: &str, short: &str, also: &str) -> Option<Msg> {
    slack
        .messages(channel)
        .into_iter()
        .find(|m| m.text.contains(short) && m.shown().contains(also))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_step_posts_the_action_to_its_channel_where_a_tap_decides_it() {
    let db = Db::new(Engine::Sqlite).await;
    let slack = FakeSlack::start().await;
    let cfg = config(&slack.url, &format!("slack = \"{OPS}\""));
    let d = start(&db, &cfg, T0).await;
    let (addr, store) = (d.addr.clone(), d.store.clone());
    slack
        .until(30, "a Socket Mode connection", |s| {
            s.connected().then_some(())
        })
        .await;

    let v = post(
        &addr,
        "/v1/actions",
        json!({"kind": "deploy", "summary": "v2 to prod", "project": "shop", "ttl": "30m", "on_expire": "reject"}),
    )
    .await;
    let id = v["action"]["id"].as_str().unwrap().to_string();
    let short = handoff::store::short_id(&id).to_string();
    let card = slack
        .until(30, "the card in the team channel", |s| {
            with(s, TEAM, &short, "v2 to prod")
        })
        .await;
    assert!(
        slack.messages(OPS).is_empty(),
        "nothing in ops before the step"
    );

    // Ten minutes on, nobody decided: the step fires (woken by a write).
    let ds = [d];
    let ops = advance(
        &ds,
        T0 + 11 * MIN,
        "the action posted to the ops channel",
        || {
            let (slack, short) = (slack.clone(), short.clone());
            async move { with(&slack, OPS, &short, "v2 to prod") }
        },
    )
    .await;
    slack
        .until(30, "the team card saying where it went", |s| {
            with(s, TEAM, &short, "Escalated to Slack C0OPS").filter(|m| m.ts == card.ts)
        })
        .await;

    // Olga approves in the ops channel: decided, both messages show it.
    slack.send(FakeSlack::tap_frame(
        "e-olga",
        OPS,
        OLGA,
        &ops.ts,
        &ops.button("Approve"),
        "1.0",
    ));
    wait_for(30, "the action approved", || {
        let (store, id) = (store.clone(), id.clone());
        async move {
            let a = store.get_action(&id).await.unwrap();
            (a.status == handoff::store::actions::Status::Approved).then_some(())
        }
    })
    .await;
    for (channel, ts) in [(TEAM, &card.ts), (OPS, &ops.ts)] {
        slack
            .until(30, "both messages decided, no buttons", |s| {
                s.messages(channel)
                    .into_iter()
                    .find(|m| m.ts == *ts && m.buttons().is_empty())
            })
            .await;
    }
    let posts = |channel: &str| {
        slack
            .messages(channel)
            .iter()
            .filter(|m| m.text.contains(&short))
            .count()
    };
    assert_eq!((posts(TEAM), posts(OPS)), (1, 1), "one message per channel");
    let [d] = ds;
    d.stop().await;
}
