//! Wake-ups through the real `handoff serve`: a `kill -9` mid-delivery is
//! finished after restart with the same event id, and a delivery that goes
//! dead is reported in the chat that shows the item.

mod common;

use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use common::{TempDb, answer, ask, session_with, wait_for};
use handoff::store::Store;
use handoff::store::deliveries::Delivery;
use handoff::store::sessions::WakeTarget;

const ME: i64 = 111;

async fn answered_seq(store: &Store, qid: &str) -> i64 {
    store
        .events_for("question", qid)
        .await
        .unwrap()
        .into_iter()
        .rev()
        .find(|e| e.kind == "question.answered")
        .expect("answered event")
        .seq
}

async fn the_delivery(store: &Store, what: &str, pred: impl Fn(&Delivery) -> bool) -> Delivery {
    wait_for(30, what, || async {
        store
            .all_deliveries()
            .await
            .unwrap()
            .into_iter()
            .find(|d| pred(d))
    })
    .await
}

#[tokio::test]
async fn kill_9_mid_delivery_then_restart_completes_with_the_same_event_id() {
    let db = TempDb::new();
    let store = db.open().await;
    let dir = db.dir.path().display().to_string();
    // The first run hangs (the daemon dies under it); later runs finish.
    let script = format!(
        "echo \"start $HANDOFF_EVENT_ID\" >> {dir}/log
         if [ ! -e {dir}/marker ]; then touch {dir}/marker; echo $$ > {dir}/slow.pid; sleep 60; fi
         echo \"done $HANDOFF_EVENT_ID\" >> {dir}/log"
    );
    let target = WakeTarget::Exec {
        argv: vec!["/bin/sh".into(), "-c".into(), script],
        timeout_secs: Some(2),
    };
    session_with(&store, "s", Some(target)).await;
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[wake]\nretry_schedule_ms = [0, 60000]\n").unwrap();
    let mut daemon = Daemon::start(&db.path, &cfg);

    let q = ask(&store, "Deploy now?").await;
    store
        .reply_inbox(&q.id, &answer("go"))
        .await
        .unwrap()
        .expect("accepted");
    let seq = answered_seq(&store, &q.id).await;
    let log = db.dir.path().join("log");
    wait_for(15, "the first attempt to start", || async {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("start"))
    })
    .await;
    daemon.kill9();
    // The orphaned first run is not the daemon's any more: stop it here.
    let slow = wait_for(5, "the slow run's pid", || async {
        std::fs::read_to_string(db.dir.path().join("slow.pid")).ok()
    })
    .await;
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", slow.trim())])
        .status();
    let d = store.all_deliveries().await.unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].status, "delivering", "killed mid-delivery");

    let _daemon = Daemon::start(&db.path, &cfg);
    let d = the_delivery(&store, "delivered after restart", |d| {
        d.status == "delivered"
    })
    .await;
    assert_eq!(d.attempts, 2);
    assert_eq!(d.event_seq, seq);
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        lines,
        format!("start evt_{seq}\nstart evt_{seq}\ndone evt_{seq}\n"),
        "retried once, with the same event id"
    );
}

#[tokio::test]
async fn a_dead_delivery_is_reported_in_the_items_chat() {
    let db = TempDb::new();
    let store = db.open().await;
    let target = WakeTarget::Exec {
        argv: vec![
            "/bin/sh".into(),
            "-c".into(),
            "echo no agent here >&2; exit 1".into(),
        ],
        timeout_secs: Some(5),
    };
    session_with(&store, "s", Some(target)).await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("me", ME, &[ME], &[ME])],
        "\n[wake]\nretry_schedule_ms = [0, 10, 10]\n",
    );
    let _daemon = Daemon::start(&db.path, &cfg);

    let q = ask(&store, "Which region?").await;
    let short = handoff::store::short_id(&q.id).to_string();
    fake.until(30, "the question's message", |f| {
        f.sent_texts(ME).into_iter().find(|t| t.contains(&short))
    })
    .await;
    store
        .reply_inbox(&q.id, &answer("eu-west"))
        .await
        .unwrap()
        .expect("accepted");
    let d = the_delivery(&store, "dead", |d| d.status == "dead").await;
    assert_eq!(d.attempts, 3);
    let notice = fake
        .until(30, "the dead-delivery notice", |f| {
            f.sent_texts(ME)
                .into_iter()
                .find(|t| t.contains("Could not wake"))
        })
        .await;
    assert!(notice.contains(&short), "{notice}");
    assert!(
        notice.contains("question.answered") && notice.contains("exec"),
        "{notice}"
    );
    assert!(notice.contains("no agent here"), "{notice}");
}
