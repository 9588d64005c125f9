//! No stored event can stop the daemon: a body nested past what the log can
//! read back is refused at the door, and a row that still does not decode
//! (written here with raw SQL) is skipped by every follower with a warning
//! and a metric, while later events still reach chat, wake targets and
//! `GET /v1/events` (through the real `handoff serve`).

mod common;

use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;
use common::{TempDb, raw_pool, session_with, wait_for};
use handoff::store::sessions::WakeTarget;
use serde_json::Value;

const ME: i64 = 111;
const TOKEN: &str = "ci-token-0123456789abcdef";

fn nested(n: usize) -> String {
    format!("{}{}", "[".repeat(n), "]".repeat(n))
}

#[tokio::test]
async fn an_unreadable_event_is_skipped_and_later_events_still_flow() {
    let db = TempDb::new();
    let store = db.open().await;
    let woken = db.dir.path().join("woken");
    let target = WakeTarget::Exec {
        argv: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("cat >> {}; echo >> {}", woken.display(), woken.display()),
        ],
        timeout_secs: Some(10),
    };
    session_with(&store, "s", Some(target)).await;
    let fake = FakeTelegram::start().await;
    let extra = format!(
        "\n[http]\nopen = true\n\n[wake]\nretry_schedule_ms = [0, 100]\n\
         [[wake.sources]]\nname = \"ci\"\nkind = \"bearer\"\nsecret = \"{TOKEN}\"\n"
    );
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("me", ME, &[ME], &[ME])],
        &extra,
    );
    let d = Daemon::start(&db.path, &cfg);
    let http = reqwest::Client::new();
    let base = format!("http://{}", d.addr);
    let wake = |body: String| {
        http.post(format!("{base}/v1/sessions/s/wake"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(body)
            .send()
    };

    // The door: 127 levels parse, but stored one level deeper inside the
    // event payload they could never be read back.
    let last = store.last_event_seq().await.unwrap();
    let res = wake(nested(127)).await.unwrap();
    assert_eq!(res.status().as_u16(), 422);
    let v: Value = res.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("flatter"), "{v}");
    assert_eq!(
        store.last_event_seq().await.unwrap(),
        last,
        "nothing stored"
    );

    // Rows that do not decode anyway (a hand-edited file, a bug): one past
    // the reader's recursion limit, one not JSON at all.
    let raw = raw_pool(&db.path).await;
    let mut poison = Vec::new();
    for payload in [format!("{{\"body\":{}}}", nested(130)), "{not json".into()] {
        let seq: i64 = sqlx::query_scalar(
            "INSERT INTO events (at, type, entity_kind, entity_id, project, session, payload)
             VALUES (1, 'session.wake', 'session', 's', 'p', 's', ?) RETURNING seq",
        )
        .bind(payload)
        .fetch_one(&raw)
        .await
        .unwrap();
        poison.push(seq);
    }

    // Later events still reach the chat and the wake target.
    let out = db.cli(&["ask", "After the poison"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    fake.until(30, "the later question in chat", |f| {
        f.messages(ME)
            .into_iter()
            .find(|m| m.text.contains("After the poison"))
    })
    .await;
    let res = wake(r#"{"ci":"after-poison"}"#.into()).await.unwrap();
    assert_eq!(res.status().as_u16(), 202);
    wait_for(30, "the later wake to reach its target", || async {
        std::fs::read_to_string(&woken)
            .ok()
            .filter(|t| t.contains("after-poison"))
    })
    .await;

    // The log is still readable over HTTP and in the CLI; the bad rows show
    // as `event.unreadable` with the reason.
    let page: Value = http
        .get(format!("{base}/v1/events?after=0&limit=100"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let events = page["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"));
    for seq in &poison {
        let ev = events
            .iter()
            .find(|e| e["seq"] == *seq)
            .unwrap_or_else(|| panic!("seq {seq} missing: {page}"));
        assert_eq!(ev["type"], "event.unreadable", "{ev}");
        assert_eq!(ev["payload"]["type"], "session.wake", "{ev}");
        assert!(
            ev["payload"]["error"]
                .as_str()
                .unwrap()
                .contains("event payload")
        );
    }
    assert!(events.iter().any(|e| e["type"] == "question.flagged"));
    let out = db.cli(&["--json", "events"]);
    assert!(out.status.success(), "{}", common::stderr(&out));

    // Said so, loudly, and counted, by each follower that met them.
    // The daemon's stderr is read by another thread: wait for the lines.
    for seq in &poison {
        let line = wait_for(30, "a warning naming the seq", || async {
            d.log()
                .lines()
                .find(|l| {
                    l.contains("skipping an event that cannot be read")
                        && l.contains(&format!("seq={seq}"))
                })
                .map(String::from)
        })
        .await;
        assert!(
            line.contains("WARN") && line.contains("event payload"),
            "{line}"
        );
    }
    // Each follower polls on its own: wait until all three have passed.
    let metrics = wait_for(30, "every follower to count both skips", || async {
        let m = http
            .get(format!("{base}/metrics"))
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        ["chat", "notify", "waiters"]
            .iter()
            .all(|f| {
                m.contains(&format!(
                    "handoff_events_skipped_total{{follower=\"{f}\"}} 2"
                ))
            })
            .then_some(m)
    })
    .await;
    assert!(metrics.contains("# TYPE handoff_events_skipped_total counter"));
}
