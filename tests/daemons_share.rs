//! Several daemons on one database: a job only one may do
//! (polling Telegram, pushing and editing chat messages) is held by a lease
//! in the database and moves to another daemon when its holder dies; a
//! Telegram update that reaches two daemons is applied once. Daemons are
//! real `handoff serve` processes on one file against the fake Bot API,
//! whose `getUpdates` ends an older poll with 409 Conflict when a second
//! consumer polls, as Telegram does. The leases themselves, on both
//! engines: tests/leases.rs.

mod common;

use std::time::Duration;

use common::daemon::{Daemon, FAULTS_OK, write_config};
use common::fake_telegram::{FakeTelegram, user_json};
use common::{TempDb, wait_for};
use serde_json::json as j;

const ME: i64 = 111;
/// The header Telegram sends a webhook's secret in.
const SECRET: &str = "X-Telegram-Bot-Api-Secret-Token";

/// Open on loopback: `/healthz` shows a daemon's name and jobs only to a
/// caller with credentials, and an open daemon's own host is one.
const OPEN: &str = "\n[http]\nopen = true\n";

/// `/healthz` of the daemon at `addr`.
async fn health(addr: &str) -> serde_json::Value {
    reqwest::get(format!("http://{addr}/healthz"))
        .await
        .expect("healthz answers")
        .json()
        .await
        .expect("healthz JSON")
}

fn polls(v: &serde_json::Value) -> bool {
    holds(v, "telegram.poll")
}

/// Whether the `/healthz` answer `v` lists `role`.
fn holds(v: &serde_json::Value, role: &str) -> bool {
    v["roles"]
        .as_array()
        .expect("roles listed")
        .iter()
        .any(|r| r == role)
}

/// Which of the daemons at `addrs` holds `role`, once exactly one does.
async fn holder_of(addrs: &[String], role: &'static str) -> usize {
    wait_for(30, role, || async move {
        let mut holding = Vec::new();
        for (i, a) in addrs.iter().enumerate() {
            if holds(&health(a).await, role) {
                holding.push(i);
            }
        }
        assert!(holding.len() < 2, "two daemons hold {role}");
        holding.first().copied()
    })
    .await
}

/// Ask a question with two options through the CLI; its message in chat.
async fn ask(db: &TempDb, fake: &FakeTelegram, title: &str) -> common::fake_telegram::Msg {
    ask_id(db, fake, title).await.1
}

/// [`ask`], with the question's id.
async fn ask_id(
    db: &TempDb,
    fake: &FakeTelegram,
    title: &str,
) -> (String, common::fake_telegram::Msg) {
    let out = db.cli(&["--json", "ask", title, "--option", "yes", "--option", "no"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = common::json(&out)["question"]["id"]
        .as_str()
        .expect("question id")
        .to_string();
    (id, message_of(fake, title).await)
}

/// The message of the question titled `title`, once it is in chat.
async fn message_of(fake: &FakeTelegram, title: &str) -> common::fake_telegram::Msg {
    let title = title.to_string();
    fake.until(30, "the question's message", move |f| {
        f.messages(ME)
            .into_iter()
            .find(|m| m.text.contains(&title) && !m.buttons().is_empty())
    })
    .await
}

/// Two daemons on one fresh database file, chat against a fresh fake Bot
/// API, with a short lease (1.5 s); their addresses.
async fn two_daemons() -> (TempDb, FakeTelegram, [Daemon; 2], Vec<String>) {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], OPEN);
    let env = [("HANDOFF_LEASE_MS", "1500")];
    let daemons = [
        Daemon::start_with(&db.path, &cfg, &env),
        Daemon::start_with(&db.path, &cfg, &env),
    ];
    let addrs = daemons.iter().map(|d| d.addr.clone()).collect();
    (db, fake, daemons, addrs)
}

#[tokio::test]
async fn two_daemons_poll_telegram_one_at_a_time_and_the_survivor_takes_over() {
    let (db, fake, mut daemons, addrs) = two_daemons().await;
    let holder = wait_for(30, "one daemon to hold telegram.poll", || {
        let addrs = addrs.clone();
        async move {
            let a = polls(&health(&addrs[0]).await);
            let b = polls(&health(&addrs[1]).await);
            match (a, b) {
                (true, false) => Some(0),
                (false, true) => Some(1),
                (true, true) => panic!("both daemons hold telegram.poll"),
                (false, false) => None,
            }
        }
    })
    .await;
    let names: Vec<String> = {
        let mut n = Vec::new();
        for a in &addrs {
            n.push(health(a).await["instance"].as_str().unwrap().to_string());
        }
        n
    };
    assert_ne!(names[0], names[1], "each daemon names itself");

    // A question is pushed once and a tap is applied once.
    let msg = ask(&db, &fake, "Ship it?").await;
    let (cb, _) = fake.tap_traced(ME, ME, msg.message_id, &msg.button("yes"));
    fake.until(30, "the tap answered", |f| {
        f.answers_to(&cb).first().cloned()
    })
    .await;
    // Several polls' worth of time with both alive: never two consumers.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(fake.conflicts(), 0, "two daemons polled at once");
    assert_eq!(fake.answers_to(&cb).len(), 1);
    assert_eq!(
        fake.messages(ME)
            .iter()
            .filter(|m| m.text.contains("Ship it?"))
            .count(),
        1,
        "pushed once"
    );
    let polled_before = fake.calls("getupdates").len();

    // The holder dies: the other takes the role within a few lease periods
    // and answers taps.
    daemons[holder].kill9();
    let other = 1 - holder;
    wait_for(30, "the survivor to hold telegram.poll", || {
        let addr = addrs[other].clone();
        async move { polls(&health(&addr).await).then_some(()) }
    })
    .await;
    let msg = ask(&db, &fake, "Roll back?").await;
    let (cb, _) = fake.tap_traced(ME, ME, msg.message_id, &msg.button("no"));
    fake.until(30, "the survivor answers the tap", |f| {
        f.answers_to(&cb).first().cloned()
    })
    .await;
    assert!(fake.calls("getupdates").len() > polled_before);
    assert!(
        daemons[other].log().contains("this daemon took the role"),
        "{}",
        daemons[other].log()
    );
}

#[tokio::test]
async fn a_webhook_update_delivered_to_two_daemons_is_applied_once() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], OPEN);
    // Webhook mode, behind one URL: the same update may reach either daemon.
    let text = std::fs::read_to_string(&cfg).unwrap().replacen(
        "poll_timeout_secs = 1\n",
        "poll_timeout_secs = 1\nmode = \"webhook\"\nwebhook_url = \"https://bot.example.invalid/telegram\"\nwebhook_secret = \"s3cret\"\n",
        1,
    );
    std::fs::write(&cfg, text).unwrap();
    let a = Daemon::start(&db.path, &cfg);
    let b = Daemon::start(&db.path, &cfg);
    for d in [&a, &b] {
        let h = health(&d.addr).await;
        assert!(!polls(&h), "webhook mode: no daemon polls: {h}");
    }
    let msg = ask(&db, &fake, "Deploy now?").await;
    let tap = j!({
        "update_id": 9001,
        "callback_query": {
            "id": "cb-twice", "chat_instance": "ci", "data": msg.button("yes"),
            "from": user_json(ME),
            "message": {"message_id": msg.message_id, "date": 1_700_000_000,
                        "chat": {"id": ME, "type": "private", "first_name": "me"}, "text": msg.text}
        }
    });
    let http = reqwest::Client::new();
    for d in [&a, &b] {
        let res = http
            .post(format!("http://{}/telegram", d.addr))
            .header(SECRET, "s3cret")
            .json(&tap)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
    }
    // A later update to each daemon, answered: both have dealt with the tap
    // by then (each handles its updates one at a time, in order).
    for (n, d) in [&a, &b].into_iter().enumerate() {
        let later = j!({
            "update_id": 9002 + n as i64,
            "callback_query": {
                "id": format!("cb-later-{n}"), "chat_instance": "ci", "data": "garbage",
                "from": user_json(ME),
                "message": {"message_id": msg.message_id, "date": 1_700_000_000,
                            "chat": {"id": ME, "type": "private", "first_name": "me"}, "text": msg.text}
            }
        });
        http.post(format!("http://{}/telegram", d.addr))
            .header(SECRET, "s3cret")
            .json(&later)
            .send()
            .await
            .unwrap();
        let id = format!("cb-later-{n}");
        fake.until(30, "the later update answered", move |f| {
            f.answers_to(&id).first().cloned()
        })
        .await;
    }
    assert_eq!(
        fake.answers_to("cb-twice").len(),
        1,
        "the tap was applied by both daemons: {:?}",
        fake.answers_to("cb-twice")
    );
}

/// Send `signal` (`STOP`, `CONT`) to the daemon's process.
fn signal(d: &Daemon, signal: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &d.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success(), "kill -{signal}");
}

/// Which of the daemons at `addrs` holds telegram.poll, once exactly one does.
async fn poller(addrs: &[String]) -> usize {
    wait_for(
        30,
        "exactly one daemon to hold telegram.poll",
        || async move {
            let mut holding = Vec::new();
            for (i, a) in addrs.iter().enumerate() {
                if polls(&health(a).await) {
                    holding.push(i);
                }
            }
            assert!(holding.len() < 2, "both daemons hold telegram.poll");
            holding.first().copied()
        },
    )
    .await
}

#[tokio::test]
async fn a_paused_poller_loses_the_role_and_stops_polling_when_it_resumes() {
    let (db, fake, daemons, addrs) = two_daemons().await;
    let held = poller(&addrs).await;
    let other = 1 - held;

    // Paused past its lease (its process alive, so nobody takes the role
    // from it as from a dead one): the other daemon takes it when it lapses.
    signal(&daemons[held], "STOP");
    let survivor = addrs[other].clone();
    wait_for(30, "the other daemon to take telegram.poll", || {
        let addr = survivor.clone();
        async move { polls(&health(&addr).await).then_some(()) }
    })
    .await;
    signal(&daemons[held], "CONT");
    // Resumed, it learns it lost the role, and polls no more.
    let resumed = addrs[held].clone();
    wait_for(30, "the resumed daemon to give the role up", || {
        let addr = resumed.clone();
        async move { (!polls(&health(&addr).await)).then_some(()) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        fake.conflicts(),
        0,
        "the resumed daemon polled beside the new holder"
    );
    assert_eq!(poller(&addrs).await, other);
    let msg = ask(&db, &fake, "Still there?").await;
    let (cb, _) = fake.tap_traced(ME, ME, msg.message_id, &msg.button("yes"));
    fake.until(30, "the tap answered", |f| {
        f.answers_to(&cb).first().cloned()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fake.answers_to(&cb).len(), 1);
}

#[tokio::test]
async fn a_daemon_restarted_after_a_crash_takes_the_role_from_its_dead_predecessor() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], OPEN);
    // The default lease period: without the take-over, the restarted daemon
    // would wait it out.
    let mut first = Daemon::start(&db.path, &cfg);
    poller(std::slice::from_ref(&first.addr)).await;
    first.kill9();
    let second = Daemon::start(&db.path, &cfg);
    poller(std::slice::from_ref(&second.addr)).await;
    assert!(
        second
            .log()
            .contains("took the role from a daemon on this host that died"),
        "{}",
        second.log()
    );
    let msg = ask(&db, &fake, "Back up?").await;
    let (cb, _) = fake.tap_traced(ME, ME, msg.message_id, &msg.button("yes"));
    fake.until(30, "the tap answered", |f| {
        f.answers_to(&cb).first().cloned()
    })
    .await;
}

/// The edits made to message `id` so far.
fn edits(fake: &FakeTelegram, id: i64) -> usize {
    fake.calls("editmessagetext")
        .iter()
        .filter(|c| c.body["message_id"].as_i64() == Some(id))
        .count()
}

#[tokio::test]
async fn of_two_live_daemons_one_draws_each_change_in_chat() {
    let (db, fake, _daemons, addrs) = two_daemons().await;
    holder_of(&addrs, "chat.send").await;
    let (id, msg) = ask_id(&db, &fake, "Merge the branch?").await;
    let out = db.cli(&["reply", &id, "after lunch"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    fake.until(30, "the message to show the answer", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.contains("after lunch"))
            .map(|_| ())
    })
    .await;
    // Both daemons saw the change; one drew it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        edits(&fake, msg.message_id),
        1,
        "one change, one edit: {:?}",
        fake.calls("editmessagetext")
    );
}

#[tokio::test]
async fn a_redraw_owed_by_a_sender_that_died_is_drawn_by_the_daemon_taking_over() {
    let (db, fake, mut daemons, addrs) = two_daemons().await;
    let sender = holder_of(&addrs, "chat.send").await;
    let (id, msg) = ask_id(&db, &fake, "Rotate the keys?").await;
    // Every edit fails, so the sender owes the redraw when it dies.
    fake.fault("editMessageText", common::fake_telegram::Fault::ServerError);
    let out = db.cli(&["reply", &id, "tonight"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    fake.until(30, "the sender to try the edit", |f| {
        (f.faulted("editmessagetext") > 0).then_some(())
    })
    .await;
    daemons[sender].kill9();
    fake.clear_faults();
    let other = 1 - sender;
    assert_eq!(holder_of(&addrs[other..=other], "chat.send").await, 0);
    fake.until(30, "the survivor to draw the answer", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.text.contains("tonight"))
            .map(|_| ())
    })
    .await;
}

/// A daemon that dies after taking a Telegram update and before handling
/// it (the `die-mid-update` crash point) leaves its take unfinished: the
/// next daemon on this host, seeing the taker's process gone, takes the
/// update over when Telegram serves it again, and applies it once.
#[tokio::test]
async fn an_update_whose_daemon_died_taking_it_is_applied_by_the_next() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], OPEN);
    let mut a = Daemon::start_with(
        &db.path,
        &cfg,
        &[("HANDOFF_FAULT", "die-mid-update"), FAULTS_OK],
    );
    let (id, msg) = ask_id(&db, &fake, "Ship it?").await;
    let (cb, _) = fake.tap_traced(ME, ME, msg.message_id, &msg.button("yes"));
    wait_for(30, "the daemon to die taking the tap", || {
        let exited = a.child.try_wait().expect("try_wait").is_some();
        async move { exited.then_some(()) }
    })
    .await;
    assert!(
        fake.answers_to(&cb).is_empty(),
        "the dead daemon answered the tap"
    );
    let _b = Daemon::start(&db.path, &cfg);
    let toast = fake
        .until(30, "the tap applied by the next daemon", |f| {
            f.answers_to(&cb).first().cloned()
        })
        .await;
    assert!(toast.contains("yes"), "{toast}");
    let store = db.open().await;
    let q = store
        .get_question(&id)
        .await
        .expect("read the question")
        .expect("the question");
    assert_eq!(q.reply.map(|r| r.text).as_deref(), Some("yes"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.answers_to(&cb).len(), 1, "applied once");
}

/// The config of webhook mode behind one URL, without a `webhook_secret`.
fn webhook_config(db: &TempDb, fake: &FakeTelegram) -> std::path::PathBuf {
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], OPEN);
    let text = std::fs::read_to_string(&cfg).unwrap().replacen(
        "poll_timeout_secs = 1\n",
        "poll_timeout_secs = 1\nmode = \"webhook\"\nwebhook_url = \"https://bot.example.invalid/telegram\"\n",
        1,
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// A tap on `msg` as Telegram posts it to a webhook.
fn webhook_tap(
    update_id: i64,
    callback: &str,
    msg: &common::fake_telegram::Msg,
    data: &str,
) -> serde_json::Value {
    j!({
        "update_id": update_id,
        "callback_query": {
            "id": callback, "chat_instance": "ci", "data": data,
            "from": user_json(ME),
            "message": {"message_id": msg.message_id, "date": 1_700_000_000,
                        "chat": {"id": ME, "type": "private", "first_name": "me"}, "text": msg.text}
        }
    })
}

/// Without a configured secret, daemons behind one URL register one and
/// the same secret (derived from the bot token; a random one each would
/// leave all but the last refusing every update), and each takes updates
/// carrying it.
#[tokio::test]
async fn daemons_behind_one_webhook_url_agree_on_the_secret_without_one_configured() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = webhook_config(&db, &fake);
    let a = Daemon::start(&db.path, &cfg);
    let b = Daemon::start(&db.path, &cfg);
    let secrets = fake
        .until(30, "both daemons' setWebhook", |f| {
            let secrets = f.webhook_secrets();
            (secrets.len() >= 2).then_some(secrets)
        })
        .await;
    let secret = secrets[0].clone().expect("a secret token registered");
    assert_eq!(
        secrets[1].as_deref(),
        Some(secret.as_str()),
        "two daemons, two secrets"
    );
    let msg = ask(&db, &fake, "Agree?").await;
    let http = reqwest::Client::new();
    for (n, d) in [&a, &b].into_iter().enumerate() {
        let cb = format!("cb-agree-{n}");
        let res = http
            .post(format!("http://{}/telegram", d.addr))
            .header(SECRET, &secret)
            .json(&webhook_tap(7000 + n as i64, &cb, &msg, &msg.button("yes")))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "daemon {n}: {}", res.status());
        // Answered only once handled: the toast is already there.
        assert_eq!(
            fake.answers_to(&cb).len(),
            1,
            "daemon {n} answered before handling"
        );
    }
}

/// A webhook update is answered only once it is handled: a daemon that
/// dies taking it (the `die-mid-update` crash point) gives Telegram no 200,
/// so Telegram sends it again, to another daemon, which takes the dead
/// daemon's unfinished claim over and applies it once.
#[tokio::test]
async fn a_webhook_update_whose_daemon_died_is_not_acknowledged_and_the_retry_applies_it() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = webhook_config(&db, &fake);
    let a = Daemon::start_with(
        &db.path,
        &cfg,
        &[("HANDOFF_FAULT", "die-mid-update"), FAULTS_OK],
    );
    let b = Daemon::start(&db.path, &cfg);
    let secret = fake
        .until(30, "setWebhook", |f| {
            f.webhook_secrets().first().cloned().flatten()
        })
        .await;
    let (id, msg) = ask_id(&db, &fake, "Retry me?").await;
    let tap = webhook_tap(8001, "cb-retry", &msg, &msg.button("yes"));
    let http = reqwest::Client::new();
    let first = http
        .post(format!("http://{}/telegram", a.addr))
        .header(SECRET, &secret)
        .json(&tap)
        .send()
        .await;
    assert!(
        first.as_ref().map_or(true, |r| !r.status().is_success()),
        "the dying daemon acknowledged the update: {:?}",
        first.map(|r| r.status())
    );
    // Telegram's retries reach the other daemon behind the URL. Until the
    // dead daemon's claim is stale (it is not reaped here, so it does not
    // look gone), that daemon answers 503, and Telegram sends it again.
    let url = format!("http://{}/telegram", b.addr);
    wait_for(30, "a retry to be acknowledged", || {
        let (http, url, secret, tap) = (http.clone(), url.clone(), secret.clone(), tap.clone());
        async move {
            let res = http
                .post(url)
                .header(SECRET, &secret)
                .json(&tap)
                .send()
                .await
                .expect("the live daemon answers");
            if res.status().is_success() {
                return Some(());
            }
            assert_eq!(res.status(), 503, "busy, not refused");
            tokio::time::sleep(Duration::from_millis(250)).await;
            None
        }
    })
    .await;
    assert_eq!(
        fake.answers_to("cb-retry").len(),
        1,
        "applied once, by a retry"
    );
    let q = db
        .open()
        .await
        .get_question(&id)
        .await
        .expect("read the question")
        .expect("the question");
    assert_eq!(q.reply.map(|r| r.text).as_deref(), Some("yes"));
}

/// A redraw owed because of a tap another daemon took (a stale button: a
/// mark in the database, no event) is drawn by the chat sender, which
/// looks for such marks now and then, not only at take-over.
#[tokio::test]
async fn a_redraw_marked_by_a_daemon_that_does_not_send_is_drawn_by_the_sender() {
    let db = TempDb::new();
    let fake = FakeTelegram::start().await;
    let cfg = webhook_config(&db, &fake);
    let daemons = [Daemon::start(&db.path, &cfg), Daemon::start(&db.path, &cfg)];
    let addrs: Vec<String> = daemons.iter().map(|d| d.addr.clone()).collect();
    let sender = holder_of(&addrs, "chat.send").await;
    let other = &addrs[1 - sender];
    let secret = fake
        .until(30, "setWebhook", |f| {
            f.webhook_secrets().first().cloned().flatten()
        })
        .await;
    let ask_port = |second: &'static str| {
        let out = db.cli(&[
            "--json",
            "ask",
            "Pick a port",
            "--key",
            "port",
            "--option",
            "8080",
            "--option",
            second,
        ]);
        assert!(out.status.success(), "{}", common::stderr(&out));
    };
    ask_port("9090");
    let msg = message_of(&fake, "Pick a port").await;
    let old = msg.button("8080");
    // Revision 2, drawn by the sender: the old buttons are stale now.
    ask_port("7070");
    fake.until(30, "the redraw with new options", |f| {
        f.message(ME, msg.message_id)
            .filter(|m| m.buttons().iter().any(|b| b.0.contains("7070")))
            .map(|_| ())
    })
    .await;
    let tap = webhook_tap(9100, "cb-stale", &msg, &old);
    let res = reqwest::Client::new()
        .post(format!("http://{other}/telegram"))
        .header(SECRET, &secret)
        .json(&tap)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let toast = fake
        .answers_to("cb-stale")
        .first()
        .cloned()
        .unwrap_or_default();
    assert!(toast.contains("changed"), "{toast}");
    let pool = common::raw_pool(&db.path).await;
    wait_for(30, "the owed redraw drawn", || {
        let pool = pool.clone();
        async move {
            let owed: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM chat_messages WHERE dirty_at IS NOT NULL")
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            (owed == 0).then_some(())
        }
    })
    .await;
}
