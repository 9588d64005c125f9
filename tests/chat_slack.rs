//! The daemon and the Slack adapter against a fake Slack (Web API +
//! Socket Mode): pushes, taps, thread replies, quorum, outsiders, rate
//! limits and failures, a crash before the write, and Telegram and Slack
//! at once.

mod common;

use std::time::Duration;

use common::daemon::{Daemon, FAULTS_OK, write_config};
use common::fake_slack::{FakeSlack, Fault, Msg};
use common::fake_telegram::FakeTelegram;
use common::{TempDb, json};

const CH: &str = "C0TEAM";
const ALICE: &str = "U0ALICE";
const BOB: &str = "U0BOB";
const CAROL: &str = "U0CAROL"; // may answer, may not approve
const EVE: &str = "U0EVE"; // on no list

fn slack_section(url: &str) -> String {
    format!(
        "\n[slack]\napp_token = \"xapp-1-test\"\nbot_token = \"xoxb-test\"\napi_url = \"{url}\"\ndigest_threshold = 50\n\n[[slack.channels]]\nid = \"{CH}\"\nanswer = [\"{CAROL}\"]\napprove = [\"{ALICE}\", \"{BOB}\"]\n"
    )
}

/// A config with Slack only (no Telegram token).
fn slack_config(db: &TempDb, slack: &FakeSlack) -> std::path::PathBuf {
    let p = db.dir.path().join("handoff.toml");
    std::fs::write(&p, slack_section(&slack.url)).unwrap();
    p
}

async fn setup() -> (TempDb, FakeSlack, Daemon) {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = slack_config(&db, &slack);
    let d = Daemon::start(&db.path, &cfg);
    connected(&slack).await;
    (db, slack, d)
}

async fn connected(slack: &FakeSlack) {
    slack
        .until(30, "a Socket Mode connection", |s| {
            s.connected().then_some(())
        })
        .await;
}

fn propose(db: &TempDb, args: &[&str]) -> String {
    let mut a = vec!["--json", "propose"];
    a.extend_from_slice(args);
    let out = db.cli(&a);
    assert!(out.status.success(), "{}", common::stderr(&out));
    json(&out)["action"]["id"]
        .as_str()
        .expect("action id")
        .to_string()
}

fn ask(db: &TempDb, args: &[&str]) -> String {
    let mut a = vec!["--json", "ask"];
    a.extend_from_slice(args);
    let out = db.cli(&a);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v = json(&out);
    v["question"]["id"]
        .as_str()
        .or(v["id"].as_str())
        .expect("question id")
        .to_string()
}

fn action(db: &TempDb, id: &str) -> serde_json::Value {
    let v = json(&db.cli(&["--json", "action", id]));
    if v.get("action").is_some() {
        v["action"].clone()
    } else {
        v
    }
}

/// The item's message in the channel (found by its short id).
async fn message_of(slack: &FakeSlack, id: &str) -> Msg {
    let short = id[id.len() - 8..].to_string();
    slack
        .until(30, "the item's Slack message", |s| {
            s.messages(CH).into_iter().find(|m| m.text.contains(&short))
        })
        .await
}

async fn told(slack: &FakeSlack, user: &str, what: &str) -> String {
    slack
        .until(30, what, |s| {
            s.ephemeral()
                .into_iter()
                .find(|(_, u, t)| u == user && t.contains(what))
                .map(|(_, _, t)| t)
        })
        .await
}

async fn acked(slack: &FakeSlack, envelope: &str) {
    slack
        .until(30, "the envelope's ack", |s| {
            s.acks().iter().any(|a| a == envelope).then_some(())
        })
        .await;
}

#[tokio::test]
async fn quorum_outsiders_and_a_duplicate_envelope_on_one_message_updated_in_place() {
    let (db, slack, _d) = setup().await;
    let id = propose(
        &db,
        &[
            "--kind",
            "deploy",
            "--summary",
            "Deploy v1.2",
            "--args",
            r#"{"version":"1.2"}"#,
            "--approvals",
            "2",
        ],
    );
    let msg = message_of(&slack, &id).await;
    assert!(msg.shown().contains("Deploy v1.2"), "{}", msg.shown());
    let approve = msg.button("Approve");

    // Carol may answer but not approve; Eve is on no list: both refused,
    // both audited, nothing counted.
    for (n, who) in [CAROL, EVE].into_iter().enumerate() {
        let env = format!("e-out-{n}");
        slack.send(FakeSlack::tap_frame(
            &env,
            CH,
            who,
            &msg.ts,
            &approve,
            &format!("1.{n}"),
        ));
        acked(&slack, &env).await;
        told(&slack, who, "not allowed to decide actions").await;
    }
    let audit = json(&db.cli(&["--json", "audit", &id])).to_string();
    assert!(
        audit.contains("refused_attempt") && audit.contains(&format!("slack:{EVE}")),
        "{audit}"
    );
    assert_eq!(action(&db, &id)["approvals"], 0);

    // Alice approves: 1 of 2. Bob's tap arrives twice (a redelivered
    // envelope): it counts once, and both copies are acknowledged.
    slack.send(FakeSlack::tap_frame(
        "e-alice", CH, ALICE, &msg.ts, &approve, "2.0",
    ));
    acked(&slack, "e-alice").await;
    assert_eq!(action(&db, &id)["approvals"], 1);
    let bob = FakeSlack::tap_frame("e-bob", CH, BOB, &msg.ts, &approve, "3.0");
    slack.send(bob.clone());
    slack.send(bob);
    slack
        .until(30, "both copies acked", |s| {
            (s.acks().iter().filter(|a| *a == "e-bob").count() == 2).then_some(())
        })
        .await;
    let a = action(&db, &id);
    assert_eq!(a["status"], "approved");
    assert_eq!(a["approvals"], 2);
    // Applied once: a second application would have told Bob again
    // (that the action is already approved).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let notes: Vec<String> = slack
        .ephemeral()
        .into_iter()
        .filter(|(_, u, _)| u == BOB)
        .map(|(_, _, t)| t)
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");

    // The same message, updated in place: no buttons, who approved.
    slack
        .until(30, "the message updated to approved", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == msg.ts && m.buttons().is_empty() && m.updates > 0)
        })
        .await;
    let short = &id[id.len() - 8..];
    let posts = slack
        .calls("chat.postMessage")
        .into_iter()
        .filter(|c| c.body["text"].as_str().unwrap_or("").contains(short))
        .count();
    assert_eq!(posts, 1, "one message per item per channel");
}

#[tokio::test]
async fn a_question_takes_an_option_tap_and_another_a_thread_reply() {
    let (db, slack, _d) = setup().await;
    let id = ask(
        &db,
        &[
            "Which database?",
            "--option",
            "Postgres",
            "--option",
            "SQLite",
        ],
    );
    let msg = message_of(&slack, &id).await;
    slack.send(FakeSlack::tap_frame(
        "e-q",
        CH,
        CAROL,
        &msg.ts,
        &msg.button("SQLite"),
        "4.0",
    ));
    told(&slack, CAROL, "Recorded: SQLite").await;
    let pending = json(&db.cli(&["--json", "pending"])).to_string();
    assert!(
        pending.contains("SQLite") && pending.contains("\"chat\""),
        "{pending}"
    );
    slack
        .until(30, "the question's message to show the answer", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == msg.ts && m.shown().contains("in Slack"))
        })
        .await;

    // A free-text question answered by a reply in its message's thread;
    // a reply from someone on no list is refused and records nothing.
    let id2 = ask(&db, &["Name the release"]);
    let msg2 = message_of(&slack, &id2).await;
    slack.send(FakeSlack::reply_frame(
        "e-r0", "Ev0", CH, EVE, &msg2.ts, "sneaky",
    ));
    told(&slack, EVE, "not allowed to answer").await;
    slack.send(FakeSlack::reply_frame(
        "e-r1", "Ev1", CH, CAROL, &msg2.ts, "Aurora",
    ));
    told(&slack, CAROL, "Recorded for").await;
    let pending = json(&db.cli(&["--json", "pending"])).to_string();
    assert!(
        pending.contains("Aurora") && !pending.contains("sneaky"),
        "{pending}"
    );
}

#[tokio::test]
async fn rate_limits_failures_and_a_deleted_message_hold_up_nothing() {
    let (db, slack, _d) = setup().await;
    // The first post is rate-limited for 1 s, the next fails with a 500:
    // the message still arrives, not before Retry-After.
    slack.fault("chat.postMessage", Fault::RateLimit(1));
    slack.fault("chat.postMessage", Fault::ServerError);
    let id = propose(&db, &["--kind", "deploy", "--summary", "First"]);
    let msg = message_of(&slack, &id).await;
    let posts = slack.calls("chat.postMessage");
    assert!(posts.len() >= 3, "{posts:#?}");
    assert!(
        posts[1].at.duration_since(posts[0].at) >= Duration::from_millis(900),
        "the retry waited out Retry-After"
    );

    // A slow update of one message does not hold up another item's post.
    slack.fault("chat.update", Fault::Slow(Duration::from_secs(4)));
    let approve = msg.button("Approve");
    slack.send(FakeSlack::tap_frame(
        "e-ap1", CH, ALICE, &msg.ts, &approve, "5.0",
    ));
    acked(&slack, "e-ap1").await;
    let id2 = propose(&db, &["--kind", "deploy", "--summary", "Second"]);
    let second = message_of(&slack, &id2).await;
    let first_update = slack
        .until(10, "the slow update to finish", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == msg.ts && m.updates > 0)
        })
        .await;
    assert!(first_update.buttons().is_empty());
    assert!(!second.buttons().is_empty());

    // Someone deleted the second message in Slack: the next change posts
    // it again instead of failing forever.
    slack.delete(CH, &second.ts);
    slack.send(FakeSlack::tap_frame(
        "e-ap",
        CH,
        ALICE,
        &second.ts,
        &second.button("Approve"),
        "6.0",
    ));
    acked(&slack, "e-ap").await;
    let short = &id2[id2.len() - 8..];
    slack
        .until(30, "the deleted message posted again", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.text.contains(short) && m.ts != second.ts && m.buttons().is_empty())
        })
        .await;
    assert_eq!(action(&db, &id2)["status"], "approved");
}

#[tokio::test]
async fn a_daemon_dying_before_the_write_leaves_the_tap_unacknowledged_and_it_is_applied_once_later()
 {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = slack_config(&db, &slack);
    let mut d = Daemon::start(&db.path, &cfg);
    connected(&slack).await;
    let id = propose(&db, &["--kind", "deploy", "--summary", "Crashy"]);
    let msg = message_of(&slack, &id).await;
    d.kill9();

    let mut dying = Daemon::start_with(
        &db.path,
        &cfg,
        &[("HANDOFF_FAULT", "die-mid-update"), FAULTS_OK],
    );
    let before = slack.connections();
    slack
        .until(30, "the dying daemon's connection", |s| {
            (s.connections() > before && s.connected()).then_some(())
        })
        .await;
    let tap = FakeSlack::tap_frame("e-crash", CH, ALICE, &msg.ts, &msg.button("Approve"), "7.0");
    slack.send(tap.clone());
    let status = tokio::task::spawn_blocking(move || dying.child.wait().unwrap())
        .await
        .unwrap();
    assert!(!status.success(), "the fault aborts the daemon");
    assert!(
        !slack.acks().contains(&"e-crash".to_string()),
        "no ack before the write"
    );
    assert_eq!(action(&db, &id)["status"], "pending");

    // Slack redelivers the unacknowledged envelope to the next daemon.
    let _d = Daemon::start(&db.path, &cfg);
    let before = slack.connections();
    slack
        .until(30, "the next daemon's connection", |s| {
            (s.connections() > before && s.connected()).then_some(())
        })
        .await;
    slack.send(tap);
    acked(&slack, "e-crash").await;
    let a = action(&db, &id);
    assert_eq!(a["status"], "approved");
    assert_eq!(a["approvals"], 1);
}

#[tokio::test]
async fn telegram_and_slack_at_once_the_first_decision_wins_and_both_messages_show_it() {
    const TEAM: i64 = -100_500;
    let db = TempDb::new();
    db.open().await.close().await;
    let tg = FakeTelegram::start().await;
    let slack = FakeSlack::start().await;
    let cfg = write_config(
        db.dir.path(),
        &tg.url,
        &[("ops", TEAM, &[1], &[1])],
        &slack_section(&slack.url),
    );
    let _d = Daemon::start(&db.path, &cfg);
    connected(&slack).await;
    let id = propose(&db, &["--kind", "deploy", "--summary", "Both"]);
    let short = id[id.len() - 8..].to_string();
    let smsg = message_of(&slack, &id).await;
    let tmsg = tg
        .until(30, "the Telegram message", |f| {
            f.messages(TEAM)
                .into_iter()
                .find(|m| m.text.contains(&short))
        })
        .await;

    // Approved in Telegram first; a Reject tap in Slack then loses.
    tg.tap(TEAM, 1, tmsg.message_id, &tmsg.button("Approve"));
    tg.until(30, "the approval toast", |f| {
        f.toasts().into_iter().find(|t| t.contains("Approved"))
    })
    .await;
    slack.send(FakeSlack::tap_frame(
        "e-late",
        CH,
        BOB,
        &smsg.ts,
        &smsg.button("Reject"),
        "8.0",
    ));
    told(&slack, BOB, "Already approved").await;
    assert_eq!(action(&db, &id)["status"], "approved");

    tg.until(30, "Telegram's message to show the approval", |f| {
        f.message(TEAM, tmsg.message_id)
            .filter(|m| m.buttons().is_empty() && m.text.contains("Approved by"))
            .map(|_| ())
    })
    .await;
    slack
        .until(30, "Slack's message to show the approval", |s| {
            s.messages(CH).into_iter().find(|m| {
                m.ts == smsg.ts && m.buttons().is_empty() && m.shown().contains("Approved by")
            })
        })
        .await;
}

#[tokio::test]
async fn of_two_daemons_one_holds_the_connection_and_a_kill_moves_it() {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = slack_config(&db, &slack);
    let env = [("HANDOFF_LEASE_MS", "1500")];
    let mut first = Daemon::start_with(&db.path, &cfg, &env);
    connected(&slack).await;
    let _second = Daemon::start_with(&db.path, &cfg, &env);
    // Three lease periods: the second daemon never opens a connection of
    // its own while the first holds the role.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    assert_eq!(slack.connections(), 1, "one Socket Mode connection");
    let id = propose(&db, &["--kind", "deploy", "--summary", "Moves"]);
    let msg = message_of(&slack, &id).await;

    first.kill9();
    slack
        .until(30, "the second daemon's connection", |s| {
            (s.connections() == 2 && s.connected()).then_some(())
        })
        .await;
    slack.send(FakeSlack::tap_frame(
        "e-moved",
        CH,
        ALICE,
        &msg.ts,
        &msg.button("Approve"),
        "9.0",
    ));
    acked(&slack, "e-moved").await;
    assert_eq!(action(&db, &id)["status"], "approved");
    slack
        .until(30, "the message updated by the second daemon", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == msg.ts && m.buttons().is_empty())
        })
        .await;
}

#[tokio::test]
async fn a_message_slack_kept_failing_is_sent_by_the_next_daemon() {
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = slack_config(&db, &slack);
    let mut d = Daemon::start(&db.path, &cfg);
    connected(&slack).await;
    // Five 500s in a row: the sender gives up on this message for now.
    for _ in 0..5 {
        slack.fault("chat.postMessage", Fault::ServerError);
    }
    let id = propose(&db, &["--kind", "deploy", "--summary", "Owed"]);
    slack
        .until(30, "five failed posts", |s| {
            (s.calls("chat.postMessage").len() == 5).then_some(())
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(slack.messages(CH).is_empty());
    d.kill9();

    // The next daemon finds the message still owed and sends it.
    let _d = Daemon::start(&db.path, &cfg);
    let msg = message_of(&slack, &id).await;
    assert!(!msg.buttons().is_empty());
}

#[tokio::test]
async fn an_edit_sent_in_the_thread_when_the_form_cannot_open_is_checked_first_then_approves() {
    let (db, slack, _d) = setup().await;
    // Slack will not open the form (an expired trigger): the tap falls
    // back to a reply in the item's thread.
    slack.fault("views.open", Fault::NotFound);
    let id = propose(
        &db,
        &[
            "--kind",
            "email.send",
            "--summary",
            "Mail the report",
            "--args",
            r#"{"to":"a@example.com"}"#,
        ],
    );
    let msg = message_of(&slack, &id).await;
    slack.send(FakeSlack::tap_frame(
        "e-ed",
        CH,
        ALICE,
        &msg.ts,
        &msg.button("Edit"),
        "10.0",
    ));
    told(&slack, ALICE, "Send the changes").await;

    // Not a patch: nothing changes, and the next reply may fix it.
    slack.send(FakeSlack::reply_frame(
        "e-ed1",
        "Ev-ed1",
        CH,
        ALICE,
        &msg.ts,
        "{not json",
    ));
    told(&slack, ALICE, "Not applied: that is not valid JSON").await;
    assert_eq!(action(&db, &id)["status"], "pending");

    slack.send(FakeSlack::reply_frame(
        "e-ed2",
        "Ev-ed2",
        CH,
        ALICE,
        &msg.ts,
        "to: b@example.com",
    ));
    slack
        .until(30, "the edit applied", |s| {
            s.ephemeral()
                .into_iter()
                .find(|(_, u, t)| u == ALICE && t.contains("Approved"))
        })
        .await;
    let a = action(&db, &id);
    assert_eq!(a["status"], "approved", "{a}");
    assert_eq!(a["effective_args"]["to"], "b@example.com", "{a}");
    slack
        .until(30, "the message to show the edited approval", |s| {
            s.messages(CH).into_iter().find(|m| {
                m.ts == msg.ts && m.buttons().is_empty() && m.shown().contains("b@example.com")
            })
        })
        .await;
}

/// The form a tap opened (the `n`th, from 1), as Slack answered `views.open`.
async fn form(slack: &FakeSlack, n: usize) -> serde_json::Value {
    slack
        .until(30, "a modal opened", |s| s.views().get(n - 1).cloned())
        .await
}

/// Submit `text` in `view` and wait for the acknowledgement's payload.
async fn submit(
    slack: &FakeSlack,
    env: &str,
    user: &str,
    view: &serde_json::Value,
    text: &str,
) -> serde_json::Value {
    slack.send(FakeSlack::submit_frame(env, user, view, text));
    slack
        .until(30, "the submission's ack", |s| s.ack_payload(env))
        .await
}

#[tokio::test]
async fn a_reject_asks_for_its_reason_in_a_form_and_outsiders_are_refused_there_too() {
    let (db, slack, _d) = setup().await;
    let id = propose(&db, &["--kind", "deploy", "--summary", "Deploy v9"]);
    let msg = message_of(&slack, &id).await;
    slack.send(FakeSlack::tap_frame(
        "e-rj",
        CH,
        ALICE,
        &msg.ts,
        &msg.button("Reject"),
        "11.0",
    ));
    let view = form(&slack, 1).await;
    assert_eq!(view["callback_id"], "handoff.reject", "{view:#}");
    acked(&slack, "e-rj").await;
    assert_eq!(
        action(&db, &id)["status"],
        "pending",
        "a form changes nothing"
    );

    // Eve is on no list: the form stays open with the refusal, audited.
    let out = submit(&slack, "e-s0", EVE, &view, "nope").await;
    assert_eq!(out["response_action"], "errors", "{out}");
    assert!(
        out["errors"]["text"]
            .as_str()
            .unwrap()
            .contains("not allowed")
    );
    assert_eq!(action(&db, &id)["status"], "pending");
    let audit = json(&db.cli(&["--json", "audit", &id])).to_string();
    assert!(audit.contains(&format!("slack:{EVE}")), "{audit}");

    // Alice's reason is the rejection's; a redelivered copy applies once.
    let out = submit(&slack, "e-s1", ALICE, &view, "wrong region").await;
    assert_eq!(out["response_action"], "clear", "{out}");
    let a = action(&db, &id);
    assert_eq!(a["status"], "rejected", "{a}");
    assert_eq!(a["reason"], "wrong region", "{a}");
    assert_eq!(a["decided_by"], format!("slack:{ALICE}"), "{a}");
    told(&slack, ALICE, "Rejected").await;
    let again = submit(&slack, "e-s1", ALICE, &view, "wrong region").await;
    assert_eq!(again["response_action"], "clear");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let notes = slack
        .ephemeral()
        .into_iter()
        .filter(|(_, u, t)| u == ALICE && t.contains("Rejected"))
        .count();
    assert_eq!(notes, 1, "applied once");
    slack
        .until(30, "the message updated to rejected", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == msg.ts && m.buttons().is_empty() && m.updates > 0)
        })
        .await;
}

#[tokio::test]
async fn an_edit_form_checks_the_patch_before_any_state_change() {
    let (db, slack, _d) = setup().await;
    let id = propose(
        &db,
        &[
            "--kind",
            "email.send",
            "--summary",
            "Mail the report",
            "--args",
            r#"{"to":"a@example.com"}"#,
        ],
    );
    let msg = message_of(&slack, &id).await;
    slack.send(FakeSlack::tap_frame(
        "e-ed",
        CH,
        ALICE,
        &msg.ts,
        &msg.button("Edit"),
        "12.0",
    ));
    let view = form(&slack, 1).await;
    assert_eq!(view["callback_id"], "handoff.edit", "{view:#}");

    // Not a patch, then a patch the store refuses (a key the action does
    // not have): each is the field's error, and nothing changed.
    for (env, text, says) in [
        ("e-p1", "{not json", "not valid JSON"),
        ("e-p2", "cc: x@example.com", "does not have"),
    ] {
        let out = submit(&slack, env, ALICE, &view, text).await;
        assert_eq!(out["response_action"], "errors", "{text}: {out}");
        let error = out["errors"]["text"].as_str().unwrap_or("");
        assert!(error.contains(says), "{text}: {error}");
        let a = action(&db, &id);
        assert_eq!(a["status"], "pending", "{a}");
        assert_eq!(a["effective_args"]["to"], "a@example.com", "{a}");
        assert_eq!(a["approvals"], 0, "{a}");
    }

    let out = submit(&slack, "e-p3", ALICE, &view, "to: b@example.com").await;
    assert_eq!(out["response_action"], "clear", "{out}");
    let a = action(&db, &id);
    assert_eq!(a["status"], "approved", "{a}");
    assert_eq!(a["effective_args"]["to"], "b@example.com", "{a}");
    told(&slack, ALICE, "Approved").await;
    slack
        .until(30, "the message to show the edited approval", |s| {
            s.messages(CH).into_iter().find(|m| {
                m.ts == msg.ts && m.buttons().is_empty() && m.shown().contains("b@example.com")
            })
        })
        .await;
}

/// The message in the channel whose text contains `text`.
async fn message_with(slack: &FakeSlack, text: &str) -> Msg {
    let text = text.to_string();
    slack
        .until(30, "the item's Slack message", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.text.contains(&text) && !m.buttons().is_empty())
        })
        .await
}

#[tokio::test]
async fn a_question_is_declined_and_clarified_from_its_buttons() {
    let (db, slack, _d) = setup().await;
    let declined = ask(&db, &["Rotate the keys?"]);
    let msg = message_of(&slack, &declined).await;
    slack.send(FakeSlack::tap_frame(
        "e-dq",
        CH,
        CAROL,
        &msg.ts,
        &msg.button("Decline"),
        "13.0",
    ));
    told(&slack, CAROL, "Declined").await;
    let v = json(&db.cli(&["--json", "show", &declined]));
    assert_eq!(v["question"]["reply"]["kind"], "decline", "{v}");
    assert_eq!(v["question"]["reply"]["source"], "chat", "{v}");

    // Clarify asks for the correction in the message's thread; the next
    // reply there by that person is the correction, not an answer.
    let id = ask(&db, &["Name the branch", "--key", "branch"]);
    let msg = message_of(&slack, &id).await;
    slack.send(FakeSlack::tap_frame(
        "e-cq",
        CH,
        CAROL,
        &msg.ts,
        &msg.button("Clarify"),
        "14.0",
    ));
    told(&slack, CAROL, "Send your correction").await;
    slack.send(FakeSlack::reply_frame(
        "e-cr",
        "Ev-cr",
        CH,
        CAROL,
        &msg.ts,
        "feature/tidy",
    ));
    told(&slack, CAROL, "Correction recorded").await;
    let v = json(&db.cli(&["--json", "show", &id]));
    assert_eq!(v["question"]["reply"]["text"], "feature/tidy", "{v}");
    assert_eq!(v["question"]["reply"]["kind"], "clarify", "{v}");
}

#[tokio::test]
async fn a_blocked_rows_buttons_answer_decline_and_mark_handled() {
    let (db, slack, _d) = setup().await;
    let rows = r#"[{"label":"dns","status":"blocked","next_step":"Create the CNAME","owner":"task"},{"label":"tls","status":"blocked","next_step":"Upload the certificate","owner":"task"}]"#;
    let out = db.cli(&[
        "--json", "board", "upsert", "infra", "Launch", "--rows", rows,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let dns = message_with(&slack, "Create the CNAME").await;
    slack.send(FakeSlack::tap_frame(
        "e-ra",
        CH,
        CAROL,
        &dns.ts,
        &dns.button("Answer"),
        "15.0",
    ));
    told(&slack, CAROL, "Send your answer").await;
    slack.send(FakeSlack::reply_frame(
        "e-rr",
        "Ev-rr",
        CH,
        CAROL,
        &dns.ts,
        "CNAME created",
    ));
    told(&slack, CAROL, "Recorded for").await;
    slack.send(FakeSlack::tap_frame(
        "e-rh",
        CH,
        CAROL,
        &dns.ts,
        &dns.button("Mark handled"),
        "16.0",
    ));
    told(&slack, CAROL, "Marked handled").await;

    let tls = message_with(&slack, "Upload the certificate").await;
    slack.send(FakeSlack::tap_frame(
        "e-rd",
        CH,
        CAROL,
        &tls.ts,
        &tls.button("Decline"),
        "17.0",
    ));
    told(&slack, CAROL, "Declined.").await;
    let v = json(&db.cli(&[
        "--json",
        "board",
        "get",
        "Launch",
        "--project",
        "infra",
        "--full",
    ]))
    .to_string();
    assert!(v.contains("CNAME created"), "{v}");
    assert!(v.contains("declined in Slack"), "{v}");
    assert!(v.contains(&format!("slack:{CAROL}")), "{v}");
}

#[tokio::test]
async fn an_unknown_outcome_is_settled_from_its_slack_buttons() {
    let (db, slack, _d) = setup().await;
    let store = db.open().await;
    let mut ids = Vec::new();
    for n in 1..=3 {
        let args = format!(r#"{{"n":{n}}}"#);
        let id = propose(
            &db,
            &[
                "--kind",
                "deploy",
                "--summary",
                &format!("Deploy {n}"),
                "--args",
                &args,
            ],
        );
        let out = db.cli(&["approve", &id, "--as", "alice"]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        // An executor claims it and dies: its 1 ms lease lapses.
        store.claim(&id, "exec-1", 1).await.unwrap();
        ids.push(id);
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let out = db.cli(&["recover", "--no-run"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    for (n, (id, (button, said, status))) in ids
        .iter()
        .zip([
            ("Mark executed", "Marked executed.", "executed"),
            ("Mark failed", "Marked failed.", "failed"),
            ("Retry", "Approved for one more run", "approved"),
        ])
        .enumerate()
    {
        assert_eq!(action(&db, id)["status"], "unknown");
        let short = id[id.len() - 8..].to_string();
        let msg = slack
            .until(30, "the unknown outcome's buttons", |s| {
                s.messages(CH).into_iter().find(|m| {
                    m.text.contains(&short) && m.buttons().iter().any(|b| b.0.contains(button))
                })
            })
            .await;
        slack.send(FakeSlack::tap_frame(
            &format!("e-u{n}"),
            CH,
            BOB,
            &msg.ts,
            &msg.button(button),
            &format!("18.{n}"),
        ));
        told(&slack, BOB, said).await;
        assert_eq!(action(&db, id)["status"], status, "{button}");
    }
}

// Multi-threaded: the hook is awaited with a blocking wait while the
// fake Slack (on this runtime) keeps serving the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_prompt_is_granted_this_once_this_session_or_always_from_slack() {
    use common::hook::{bash, finish, permission_request, spawn_hook};
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = slack_config(&db, &slack);
    let _d = Daemon::start(&db.path, &cfg);
    connected(&slack).await;
    let env = [("HANDOFF_CONFIG", cfg.to_str().unwrap())];
    let cases = [
        ("s-1", "npm test", "This once", None),
        ("s-2", "cargo test", "This session", Some("session")),
        ("s-3", "make lint", "Always here", Some("always")),
    ];
    for (n, (session, cmd, button, scope)) in cases.into_iter().enumerate() {
        let ev = permission_request(session, "Bash", bash(cmd));
        let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
        let msg = message_with(&slack, cmd).await;
        let labels: Vec<String> = msg.buttons().into_iter().map(|(l, _)| l).collect();
        for want in [
            "This once",
            "This session",
            "For 1 h",
            "Always here",
            "Reject",
        ] {
            assert!(
                labels.iter().any(|l| l.contains(want)),
                "{want} in {labels:?}"
            );
        }
        slack.send(FakeSlack::tap_frame(
            &format!("e-g{n}"),
            CH,
            ALICE,
            &msg.ts,
            &msg.button(button),
            &format!("19.{n}"),
        ));
        let (code, out, err) = finish(hook);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out["hookSpecificOutput"]["decision"]["behavior"], "allow",
            "{button}: {out}"
        );
        let grants = json(&db.cli(&["--json", "grants"]));
        let mine: Vec<&serde_json::Value> = grants["grants"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| {
                g["rule"]
                    .as_str()
                    .unwrap_or("")
                    .contains(cmd.split(' ').next().unwrap())
            })
            .collect();
        match scope {
            None => assert!(mine.is_empty(), "this once saves no grant: {grants}"),
            Some(scope) => {
                assert_eq!(mine.len(), 1, "{grants}");
                assert_eq!(mine[0]["scope"], scope, "{grants}");
                assert_eq!(mine[0]["created_by"], format!("slack:{ALICE}"), "{grants}");
            }
        }
    }
}

/// An AskUserQuestion call as Claude Code sends it to a PermissionRequest
/// hook, with one multiple-choice question.
fn ask_many(session: &str, question: &str, labels: &[&str]) -> serde_json::Value {
    let options: Vec<serde_json::Value> = labels
        .iter()
        .map(|l| serde_json::json!({"label": l, "description": format!("{l}, described")}))
        .collect();
    serde_json::json!({
        "session_id": session,
        "transcript_path": "/home/dev/.claude/projects/shop/abc.jsonl",
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "AskUserQuestion",
        "tool_input": {"questions": [{
            "question": question, "header": "Choice", "multiSelect": true, "options": options
        }]},
        "tool_use_id": format!("toolu_{session}")
    })
}

/// Tap `label` on `msg` as Carol and wait to be told `said`.
async fn tap_card(slack: &FakeSlack, msg: &Msg, label: &str, stamp: &str, said: &str) {
    slack.send(FakeSlack::tap_frame(
        &format!("e-{stamp}"),
        CH,
        CAROL,
        &msg.ts,
        &msg.button(label),
        stamp,
    ));
    told(slack, CAROL, said).await;
}

/// `msg` redrawn so that a button reads exactly `label`.
async fn redrawn(slack: &FakeSlack, msg: &Msg, label: &str) -> Msg {
    slack
        .until(30, "the card redrawn", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == msg.ts && m.buttons().iter().any(|(l, _)| l == label))
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multiple_choice_is_ticked_then_done_or_answered_in_words_from_slack() {
    use common::hook::{finish, spawn_hook};
    let db = TempDb::new();
    db.open().await.close().await;
    let slack = FakeSlack::start().await;
    let cfg = slack_config(&db, &slack);
    let _d = Daemon::start(&db.path, &cfg);
    connected(&slack).await;
    let env = [("HANDOFF_CONFIG", cfg.to_str().unwrap())];

    let q = "Which checks should CI run?";
    let ev = ask_many("s-1", q, &["Lint", "Unit", "E2E"]);
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let first = message_with(&slack, "Which checks").await;
    tap_card(
        &slack,
        &first,
        "Done",
        "20.0",
        "Tick at least one option first",
    )
    .await;
    tap_card(&slack, &first, "Lint", "20.1", "✓ Lint").await;
    let second = redrawn(&slack, &first, "✓ Lint").await;
    // A tap on the drawing before that toggle: refused, nothing applied.
    tap_card(&slack, &first, "E2E", "20.2", "The question changed").await;
    tap_card(&slack, &second, "E2E", "20.3", "✓ E2E").await;
    let third = redrawn(&slack, &first, "☑️ Done (2)").await;
    tap_card(&slack, &third, "Done", "20.4", "Recorded: Lint, E2E").await;
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    let d = &out["hookSpecificOutput"]["decision"];
    assert_eq!(
        d["updatedInput"]["answers"],
        serde_json::json!({q: "Lint, E2E"})
    );

    // Other…: the answer in words is the next reply in the card's thread,
    // after the ticked options.
    let q = "Which region should staging run in?";
    let ev = ask_many("s-2", q, &["eu-west-1", "us-east-1"]);
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "60s"], &env);
    let card = message_with(&slack, "Which region").await;
    tap_card(&slack, &card, "eu-west-1", "21.0", "✓ eu-west-1").await;
    let ticked = redrawn(&slack, &card, "✓ eu-west-1").await;
    tap_card(&slack, &ticked, "Other", "21.1", "Send your answer").await;
    slack.send(FakeSlack::reply_frame(
        "e-ot",
        "Ev-ot",
        CH,
        CAROL,
        &card.ts,
        "ap-south-1 too",
    ));
    told(&slack, CAROL, "Recorded for").await;
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out["hookSpecificOutput"]["decision"]["updatedInput"]["answers"],
        serde_json::json!({q: "eu-west-1, ap-south-1 too"})
    );
}

#[tokio::test]
async fn a_burst_to_one_channel_is_spread_within_the_post_tier() {
    let (db, slack, _d) = setup().await;
    let ids: Vec<String> = (0..7)
        .map(|n| {
            propose(
                &db,
                &["--kind", "deploy", "--summary", &format!("Burst {n}")],
            )
        })
        .collect();
    for id in &ids {
        message_of(&slack, id).await;
    }
    let posts = slack.calls("chat.postMessage");
    assert_eq!(posts.len(), 7, "one post per item, no 429 needed");
    // Four at once, then about one a second (Slack's per-channel limit).
    let span = posts[6].at.duration_since(posts[0].at);
    assert!(span >= Duration::from_millis(2500), "{span:?}");
}

#[tokio::test]
async fn changes_during_a_slow_update_become_one_more_update_of_that_message() {
    let (db, slack, _d) = setup().await;
    let id = propose(
        &db,
        &[
            "--kind",
            "deploy",
            "--summary",
            "Coalesced",
            "--approvals",
            "5",
        ],
    );
    let msg = message_of(&slack, &id).await;
    slack.fault("chat.update", Fault::Slow(Duration::from_secs(2)));
    let approve = |who: &str| {
        let out = db.cli(&["approve", &id, "--as", who]);
        assert!(out.status.success(), "{}", common::stderr(&out));
    };
    approve("a1");
    slack
        .until(30, "the slow update under way", |s| {
            (!s.calls("chat.update").is_empty()).then_some(())
        })
        .await;
    for who in ["a2", "a3", "a4"] {
        approve(who);
    }
    slack
        .until(30, "the message to show 4 of 5", |s| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == msg.ts && m.shown().contains("4 of 5 approvals"))
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        slack.calls("chat.update").len(),
        2,
        "three changes during the slow update: one more chat.update"
    );
}

#[tokio::test]
async fn a_rate_limit_pauses_the_method_and_a_failing_message_holds_up_no_other() {
    let (db, slack, _d) = setup().await;
    let a = propose(
        &db,
        &[
            "--kind",
            "deploy",
            "--summary",
            "Failing",
            "--approvals",
            "3",
        ],
    );
    let b = propose(
        &db,
        &[
            "--kind",
            "deploy",
            "--summary",
            "Healthy",
            "--approvals",
            "3",
        ],
    );
    let (ma, mb) = (message_of(&slack, &a).await, message_of(&slack, &b).await);
    // Every update of A's message fails with a 500; B's go through.
    for _ in 0..5 {
        slack.fault_when("chat.update", &ma.ts, Fault::ServerError);
    }
    let approve = |id: &str, who: &str| {
        let out = db.cli(&["approve", id, "--as", who]);
        assert!(out.status.success(), "{}", common::stderr(&out));
    };
    approve(&a, "a1");
    approve(&b, "b1");
    let shown = |m: &Msg, what: &str| {
        let (ts, what) = (m.ts.clone(), what.to_string());
        move |s: &FakeSlack| {
            s.messages(CH)
                .into_iter()
                .find(|m| m.ts == ts && m.shown().contains(&what))
        }
    };
    slack.until(10, "B updated", shown(&mb, "1 of 3")).await;
    let failed = slack
        .calls("chat.update")
        .iter()
        .filter(|c| c.body.to_string().contains(&ma.ts))
        .count();
    assert!(
        failed < 5,
        "B was drawn while A was still failing ({failed})"
    );
    // A is still owed: its next change draws it.
    slack
        .until(30, "A's five failures", |s| {
            (s.calls("chat.update").len() >= 6).then_some(())
        })
        .await;
    approve(&a, "a2");
    slack.until(30, "A updated", shown(&ma, "2 of 3")).await;

    // A 429 with Retry-After pauses chat.update for every message.
    slack.fault("chat.update", Fault::RateLimit(2));
    let before = slack.calls("chat.update").len();
    approve(&a, "a3");
    slack
        .until(30, "A's rate-limited update", |s| {
            (s.calls("chat.update").len() > before).then_some(())
        })
        .await;
    let limited = slack.calls("chat.update").last().unwrap().at;
    approve(&b, "b2");
    slack
        .until(30, "B updated after the pause", shown(&mb, "2 of 3"))
        .await;
    let b_at = slack
        .calls("chat.update")
        .into_iter()
        .rfind(|c| c.body.to_string().contains(&mb.ts))
        .unwrap()
        .at;
    assert!(
        b_at.duration_since(limited) >= Duration::from_millis(1500),
        "B's update waited out A's Retry-After"
    );
}
