//! Chat delivery never waits behind one message: with the fake Bot API
//! failing one message's edits (5xx), answering `ok` with a body that does
//! not parse, or saying a message is gone or unchanged, other items still
//! reach the chat, the failed edit lands once the fault is lifted, a deleted
//! message of a pending action is sent again, and "not modified" is done
//! (through the real `handoff serve`).

mod common;

use std::time::{Duration, Instant};

use common::daemon::{Daemon, write_config};
use common::fake_telegram::{FakeTelegram, Fault, Msg};
use common::{TempDb, json};

const ME: i64 = 111;

/// How soon after a hang began what must not wait behind it has to reach
/// the fake Bot API. Teloxide's client gives up on a call after 17 s, and
/// a sender queued behind the hung call goes on then: anything arriving
/// after that proves nothing, so the bound stays well below it. Measured
/// from a moment before the hung call was made, so it is never short.
const BEFORE_THE_CLIENT_GIVES_UP: Duration = Duration::from_secs(12);

/// Fail unless `at` (when the fake took a call) came within
/// [`BEFORE_THE_CLIENT_GIVES_UP`] of `hang_from`.
fn while_hung(what: &str, hang_from: Instant, at: Instant) {
    let after = at.saturating_duration_since(hang_from);
    assert!(
        after < BEFORE_THE_CLIENT_GIVES_UP,
        "{what} reached the Bot API {after:?} after the hang began: it waited behind the hung call (teloxide's client gives up on it after 17 s)"
    );
}

async fn setup() -> (TempDb, FakeTelegram, Daemon) {
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
    (db, fake, d)
}

/// Propose an action needing `approvals`; returns its id and its message.
async fn propose(
    db: &TempDb,
    fake: &FakeTelegram,
    summary: &str,
    approvals: &str,
) -> (String, Msg) {
    let out = db.cli(&[
        "--json",
        "propose",
        "--kind",
        "deploy",
        "--summary",
        summary,
        "--approvals",
        approvals,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = json(&out)["action"]["id"].as_str().unwrap().to_string();
    let msg = shown(fake, &id).await;
    common::until_recorded(db, ME, msg.message_id).await;
    (id, msg)
}

/// The item's newest message in the chat.
async fn shown(fake: &FakeTelegram, id: &str) -> Msg {
    let short = id[id.len() - 8..].to_string();
    fake.until(30, "the item's message", |f| {
        f.messages(ME)
            .into_iter()
            .rev()
            .find(|m| m.text.contains(&short))
    })
    .await
}

fn approve(db: &TempDb, id: &str, who: &str) {
    let out = db.cli(&["approve", id, "--as", who]);
    assert!(out.status.success(), "{}", common::stderr(&out));
}

fn ask(db: &TempDb, title: &str) -> String {
    let out = db.cli(&["--json", "ask", title]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v = json(&out);
    v["question"]["id"]
        .as_str()
        .or(v["id"].as_str())
        .expect("question id")
        .to_string()
}

async fn metrics(d: &Daemon) -> String {
    reqwest::get(format!("http://{}/metrics", d.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

fn edits_of(fake: &FakeTelegram, message_id: i64) -> usize {
    fake.calls("editmessagetext")
        .iter()
        .filter(|c| c.body["message_id"] == message_id)
        .count()
}

#[tokio::test]
async fn a_failing_edit_does_not_hold_up_a_new_question_and_lands_later() {
    let (db, fake, _d) = setup().await;
    let (id, msg) = propose(&db, &fake, "Deploy under a 5xx", "1").await;
    fake.fault_message("editMessageText", ME, msg.message_id, Fault::ServerError);
    approve(&db, &id, "alice");
    fake.until(30, "the failed edit", |f| {
        (f.faulted("editmessagetext") >= 1).then_some(())
    })
    .await;

    // Asked while that message keeps failing: it reaches the chat.
    let q = ask(&db, "Asked during the outage?");
    let short = q[q.len() - 8..].to_string();
    fake.until(30, "the new question in chat", |f| {
        f.sent_texts(ME).into_iter().find(|t| t.contains(&short))
    })
    .await;
    assert!(
        !fake
            .message(ME, msg.message_id)
            .unwrap()
            .text
            .contains("Approved"),
        "the edit has not landed during the fault"
    );

    fake.clear_faults();
    fake.until(
        60,
        "the failed edit applied once the fault is lifted",
        |f| {
            f.message(ME, msg.message_id)
                .filter(|m| m.text.contains("Approved"))
                .map(|_| ())
        },
    )
    .await;
}

#[tokio::test]
async fn an_ok_reply_that_does_not_parse_stalls_nothing() {
    let (db, fake, d) = setup().await;
    let (id, msg) = propose(&db, &fake, "Deploy to an emulator", "1").await;
    fake.fault("editMessageText", Fault::UnparsableOk);
    approve(&db, &id, "alice");
    fake.until(30, "the unparsable reply", |f| {
        (f.faulted("editmessagetext") >= 1).then_some(())
    })
    .await;
    let q = ask(&db, "Asked after an odd reply?");
    let short = q[q.len() - 8..].to_string();
    fake.until(30, "the new question in chat", |f| {
        f.sent_texts(ME).into_iter().find(|t| t.contains(&short))
    })
    .await;
    // Counted as delivered: logged once at warn, and not sent again (the
    // follower has applied every event and the question went out after it).
    let line = common::wait_for(30, "the warning", || async {
        d.log()
            .lines()
            .find(|l| l.contains("does not parse; counted as delivered"))
            .map(String::from)
    })
    .await;
    assert!(line.contains("WARN"), "{line}");
    assert_eq!(
        edits_of(&fake, msg.message_id),
        1,
        "{:#?}",
        fake.calls("editmessagetext")
    );
}

#[tokio::test]
async fn a_deleted_message_of_a_pending_action_is_sent_again() {
    let (db, fake, d) = setup().await;
    let (id, msg) = propose(&db, &fake, "Deploy needing two", "2").await;
    fake.delete(ME, msg.message_id);
    // One approval of two: the message must change, but it is gone.
    approve(&db, &id, "alice");
    let fresh = fake
        .until(30, "a fresh message for the still-pending action", |f| {
            let short = id[id.len() - 8..].to_string();
            f.messages(ME)
                .into_iter()
                .find(|m| m.message_id != msg.message_id && m.text.contains(&short))
        })
        .await;
    assert!(fresh.text.contains("1 of 2"), "{}", fresh.text);
    assert!(
        fresh.buttons().iter().any(|(t, _)| t.contains("Approve")),
        "{fresh:?}"
    );
    // The fresh message is the item's now: taps and replies map to it.
    common::until_recorded(&db, ME, fresh.message_id).await;
    let m = metrics(&d).await;
    assert!(m.contains("handoff_chat_permanent_errors_total 1\n"), "{m}");
    let line = d
        .log()
        .lines()
        .find(|l| l.contains("message gone; sending a fresh one"))
        .map(String::from)
        .expect("the permanent error is logged");
    assert!(line.contains("WARN"), "{line}");
}

#[tokio::test]
async fn not_modified_is_done() {
    let (db, fake, d) = setup().await;
    let (id, msg) = propose(&db, &fake, "Deploy already drawn", "2").await;
    fake.fault_message("editMessageText", ME, msg.message_id, Fault::NotModified);
    approve(&db, &id, "alice");
    fake.until(30, "the not-modified answer", |f| {
        (f.faulted("editmessagetext") >= 1).then_some(())
    })
    .await;
    // The record is settled: once the fault is lifted, the next change is
    // drawn with one edit, and the "not modified" one is never sent again.
    let store = db.open().await;
    common::wait_for(30, "the record settled", || async {
        let rec = store
            .chat_message("action", &id, ME)
            .await
            .unwrap()
            .unwrap();
        rec.dirty_at.is_none().then_some(())
    })
    .await;
    fake.clear_faults();
    approve(&db, &id, "bob");
    fake.until(30, "the approval drawn", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.contains("Approved"))
            .map(|_| ())
    })
    .await;
    assert_eq!(
        edits_of(&fake, msg.message_id),
        2,
        "{:#?}",
        fake.calls("editmessagetext")
    );
    let m = metrics(&d).await;
    assert!(
        m.contains("handoff_chat_permanent_errors_total 0\n"),
        "not modified is not an error: {m}"
    );
}

#[tokio::test]
async fn a_slow_edit_does_not_hold_up_a_new_question() {
    let (db, fake, _d) = setup().await;
    let (id, msg) = propose(&db, &fake, "Deploy behind a slow API", "1").await;
    // Slower than the client's own timeout: the edit never completes.
    fake.fault_message(
        "editMessageText",
        ME,
        msg.message_id,
        Fault::Slow(Duration::from_secs(120)),
    );
    // Before the approval that makes the edit: the hang begins after this.
    let hang_from = Instant::now();
    approve(&db, &id, "alice");
    fake.until(30, "the slow edit under way", |f| {
        (f.faulted("editmessagetext") >= 1).then_some(())
    })
    .await;
    let q = ask(&db, "Asked while an edit hangs?");
    let short = q[q.len() - 8..].to_string();
    let sent = fake
        .until(30, "the new question in chat", |f| {
            f.messages(ME).into_iter().find(|m| m.text.contains(&short))
        })
        .await;
    // Sent while the edit hangs, not once the client gave up on it.
    while_hung("the new question", hang_from, sent.sent_at);
}

#[tokio::test]
async fn an_edit_owed_when_the_daemon_dies_is_made_after_a_restart() {
    let (db, fake, mut d) = setup().await;
    let (id, msg) = propose(&db, &fake, "Deploy across a crash", "1").await;
    fake.fault_message("editMessageText", ME, msg.message_id, Fault::ServerError);
    approve(&db, &id, "alice");
    fake.until(30, "the failed edit", |f| {
        (f.faulted("editmessagetext") >= 1).then_some(())
    })
    .await;
    d.kill9();
    fake.clear_faults();
    let cfg = db.dir.path().join("handoff.toml");
    let _d2 = Daemon::start(&db.path, &cfg);
    fake.until(30, "the owed edit made by the restarted daemon", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.contains("Approved"))
            .map(|_| ())
    })
    .await;
}

/// A tap's outcome is drawn by the message's own task: an edit the Bot API
/// sits on for a minute holds up neither the next tap (another person's,
/// on another question) nor that question's redraw: both reach the Bot API
/// while the edit hangs, well before the client gives up on it.
#[tokio::test]
async fn a_hanging_edit_holds_up_no_other_tap() {
    let (db, fake, _d) = setup().await;
    let asked = |title: &str| {
        let out = db.cli(&["--json", "ask", title, "--option", "yes", "--option", "no"]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        json(&out)["question"]["id"].as_str().unwrap().to_string()
    };
    let q1 = asked("First?");
    let q2 = asked("Second?");
    let m1 = shown(&fake, &q1).await;
    let m2 = shown(&fake, &q2).await;
    common::until_recorded(&db, ME, m1.message_id).await;
    common::until_recorded(&db, ME, m2.message_id).await;
    fake.fault_message(
        "editMessageText",
        ME,
        m1.message_id,
        Fault::Slow(Duration::from_secs(60)),
    );

    // Before the tap whose edit hangs: the hang begins after this.
    let hang_from = Instant::now();
    fake.tap(ME, ME, m1.message_id, &m1.button("yes"));
    fake.until(30, "the first tap's edit to hang", |f| {
        (f.faulted("editmessagetext") >= 1).then_some(())
    })
    .await;
    let (cb, _) = fake.tap_traced(ME, ME, m2.message_id, &m2.button("no"));
    // The second tap is recorded and drawn, while the first edit hangs.
    let toast = fake
        .until(30, "the second tap's toast", |f| {
            f.calls("answercallbackquery")
                .into_iter()
                .find(|c| c.body["callback_query_id"] == cb.as_str())
        })
        .await;
    assert!(
        toast.body["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Recorded"),
        "{:?}",
        toast.body
    );
    while_hung("the second tap's toast", hang_from, toast.at);
    let redraw = fake
        .until(
            30,
            "the second question's message to show its answer",
            |f| {
                f.calls("editmessagetext").into_iter().find(|c| {
                    c.body["message_id"] == m2.message_id
                        && c.body["text"]
                            .as_str()
                            .unwrap_or_default()
                            .contains("in Telegram")
                })
            },
        )
        .await;
    while_hung("the second question's redraw", hang_from, redraw.at);
}
