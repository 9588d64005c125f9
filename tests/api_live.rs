//! Long polls and the event stream: in process (router + waiter follower)
//! and against a real `handoff serve` process woken by another process.

mod api_support;
mod common;

use std::time::Duration;

use api_support::Api;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use handoff::store::questions::{NewQuestion, NewReply};
use handoff::store::tokens::Role;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// Wait (bounded) until `f` holds; a test helper for "the long poll is
/// registered", not a timing assertion.
async fn until(mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..500 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition never held");
}

#[tokio::test]
async fn long_poll_returns_the_reply_written_by_another_store_handle() {
    let api = Api::new().await;
    api.follow();
    let agent = api.token("agent", Role::Agent, None).await;
    let (_, v) = api
        .call(
            "POST",
            "/v1/questions",
            Some(&agent),
            Some(json!({"project": "p", "title": "Go?"})),
        )
        .await;
    let id = v["question"]["id"].as_str().unwrap().to_string();

    let app = api.app.clone();
    let uri = format!("/v1/questions/{id}?wait=reply&timeout=60s");
    let tok = agent.clone();
    let poll = tokio::spawn(async move {
        let req = Request::builder()
            .uri(uri)
            .header("authorization", format!("Bearer {tok}"))
            .body(Body::empty())
            .unwrap();
        let resp = app.oneshot(req).await.unwrap();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    });
    let w = api.shared.waiters.clone();
    until(async || !w.is_empty()).await;

    // Another connection pool on the same file: the follower sees the event
    // through the log, not through an in-process hand-off.
    let other = api.db.open().await;
    other
        .reply_inbox(
            &id,
            &NewReply {
                text: "yes".into(),
                by: "bob".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .unwrap();
    let v = poll.await.unwrap();
    assert_eq!(v["outcome"], "done", "{v}");
    assert_eq!(v["question"]["reply"]["text"], "yes");

    // Nothing new: a short wait times out, as a status.
    let (st, v) = api
        .call(
            "GET",
            &format!("/v1/questions/{id}?wait=change&timeout=150ms"),
            Some(&agent),
            None,
        )
        .await;
    assert_eq!(
        (st, v["outcome"].as_str()),
        (StatusCode::OK, Some("timeout")),
        "{v}"
    );
}

#[tokio::test]
async fn action_long_poll_sees_the_approval() {
    let api = Api::new().await;
    api.follow();
    let agent = api.token("agent", Role::Agent, None).await;
    let human = api.token("alice", Role::Human, None).await;
    let (_, v) = api
        .call(
            "POST",
            "/v1/actions",
            Some(&agent),
            Some(json!({"kind": "deploy", "summary": "v2"})),
        )
        .await;
    let id = v["action"]["id"].as_str().unwrap().to_string();
    let app = api.app.clone();
    let uri = format!("/v1/actions/{id}?wait=approved&timeout=60s");
    let tok = agent.clone();
    let poll = tokio::spawn(async move {
        let req = Request::builder()
            .uri(uri)
            .header("authorization", format!("Bearer {tok}"))
            .body(Body::empty())
            .unwrap();
        let bytes = app
            .oneshot(req)
            .await
            .unwrap()
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    });
    let w = api.shared.waiters.clone();
    until(async || !w.is_empty()).await;
    let (st, _) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/approve"),
            Some(&human),
            Some(json!({})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let v = poll.await.unwrap();
    assert_eq!(
        (v["outcome"].as_str(), v["action"]["status"].as_str()),
        (Some("done"), Some("approved")),
        "{v}"
    );
}

/// Read SSE frames from `body` until `n` events arrived; returns their
/// (id, data) in arrival order.
async fn read_sse(body: &mut Body, n: usize) -> Vec<(i64, Value)> {
    let mut buf = String::new();
    let mut out = Vec::new();
    while out.len() < n {
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame())
            .await
            .expect("stream stalled")
            .expect("stream ended")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buf.push_str(&String::from_utf8_lossy(&data));
        }
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut id = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().parse::<i64>().unwrap());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = Some(serde_json::from_str::<Value>(v.trim()).unwrap());
                }
            }
            if let (Some(i), Some(d)) = (id, data) {
                out.push((i, d));
            }
        }
    }
    out
}

#[tokio::test]
async fn sse_delivers_every_event_in_seq_order_and_resumes_from_last_event_id() {
    let api = Api::new().await;
    api.follow();
    let agent = api.token("agent", Role::Agent, Some("p")).await;
    let admin = api.token("root", Role::Admin, None).await;
    for i in 0..5 {
        let (st, _) = api
            .call("POST", "/v1/questions", Some(&admin), Some(json!({"project": if i % 2 == 0 { "p" } else { "q" }, "title": format!("q{i}")})))
            .await;
        assert_eq!(st, StatusCode::CREATED);
    }
    let req = Request::builder()
        .uri("/v1/events/stream?after=0")
        .header("authorization", format!("Bearer {admin}"))
        .body(Body::empty())
        .unwrap();
    let resp = api.app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = resp.into_body();
    let first = read_sse(&mut body, 7).await; // two token.created + five flags
    // Then live events written by another store handle, while streaming.
    let other = api.db.open().await;
    let writer = tokio::spawn(async move {
        for i in 0..20 {
            other
                .flag(&NewQuestion {
                    project: "p".into(),
                    title: format!("live {i}"),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
    });
    let live = read_sse(&mut body, 20).await;
    writer.await.unwrap();
    let all: Vec<i64> = first.iter().chain(&live).map(|(i, _)| *i).collect();
    assert_eq!(
        all,
        (1..=27).collect::<Vec<_>>(),
        "every event, in seq order, no gaps"
    );
    for (id, data) in first.iter().chain(&live) {
        assert_eq!(data["seq"].as_i64(), Some(*id));
    }

    // Resume: Last-Event-ID wins; a project-scoped token sees only its project.
    let req = Request::builder()
        .uri("/v1/events/stream")
        .header("authorization", format!("Bearer {agent}"))
        .header("last-event-id", "3")
        .body(Body::empty())
        .unwrap();
    let mut body = api.app.clone().oneshot(req).await.unwrap().into_body();
    let got = read_sse(&mut body, 12).await;
    let ids: Vec<i64> = got.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        ids[0], 5,
        "after 3 the next event of project p is 5: {ids:?}"
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(got.iter().all(|(_, d)| d["project"] == "p"));
}

mod real_daemon {
    use super::*;
    use crate::common::daemon::Daemon;

    fn start(db: &common::TempDb) -> Daemon {
        let cfg = db.dir.path().join("handoff.toml");
        std::fs::write(&cfg, "").unwrap();
        Daemon::start(&db.path, &cfg)
    }

    fn token(db: &common::TempDb, name: &str, role: &str) -> String {
        let out = db.cli(&["--json", "token", "create", "--name", name, "--role", role]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        common::json(&out)["secret"].as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn long_poll_wakes_when_another_process_replies() {
        let db = common::TempDb::new();
        let agent = token(&db, "agent", "agent");
        let admin = token(&db, "root", "admin");
        let mut d = start(&db);
        let base = format!("http://{}", d.addr);
        let http = reqwest::Client::new();
        let v: Value = http
            .post(format!("{base}/v1/questions"))
            .bearer_auth(&agent)
            .json(&json!({"project": "p", "title": "Deploy now?"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = v["question"]["id"].as_str().unwrap().to_string();

        let poll = {
            let (http, base, agent, id) = (http.clone(), base.clone(), agent.clone(), id.clone());
            tokio::spawn(async move {
                http.get(format!("{base}/v1/questions/{id}?wait=reply&timeout=60s"))
                    .bearer_auth(&agent)
                    .send()
                    .await
                    .unwrap()
                    .json::<Value>()
                    .await
                    .unwrap()
            })
        };
        // The poll is registered once the daemon counts a waiter.
        until(async || {
            let m = http
                .get(format!("{base}/metrics"))
                .bearer_auth(&admin)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            !m.contains("handoff_waiters 0")
        })
        .await;
        // Another process: the CLI's Inbox reply.
        let out = db.cli(&["reply", &id, "yes, ship it", "--by", "alice"]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        let v = poll.await.unwrap();
        assert_eq!(
            v["outcome"], "done",
            "returned the answer, not a timeout: {v}"
        );
        assert_eq!(v["question"]["reply"]["text"], "yes, ship it");
        assert_eq!(v["question"]["reply"]["by"], "alice");

        // A pending long poll does not hold up shutdown.
        let pending = {
            let (http, base, agent, id) = (http.clone(), base.clone(), agent.clone(), id.clone());
            tokio::spawn(async move {
                http.get(format!("{base}/v1/questions/{id}?wait=change&timeout=300s"))
                    .bearer_auth(&agent)
                    .send()
                    .await
            })
        };
        until(async || {
            let m = http
                .get(format!("{base}/metrics"))
                .bearer_auth(&admin)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            !m.contains("handoff_waiters 0")
        })
        .await;
        let started = std::time::Instant::now();
        let status = tokio::task::spawn_blocking(move || d.terminate())
            .await
            .unwrap();
        assert!(status.success(), "daemon exit: {status:?}");
        assert!(
            started.elapsed() < handoff::daemon::SHUTDOWN_GRACE,
            "shutdown waited out the grace period"
        );
        let _ = pending.await;
    }

    #[tokio::test]
    async fn sse_from_the_daemon_carries_another_process_s_writes_in_order() {
        let db = common::TempDb::new();
        let admin = token(&db, "root", "admin");
        let d = start(&db);
        let mut resp = reqwest::Client::new()
            .get(format!("http://{}/v1/events/stream?after=0", d.addr))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        for i in 0..3 {
            let out = db.cli(&["ask", &format!("question {i}"), "--project", "p"]);
            assert!(out.status.success(), "{}", common::stderr(&out));
        }
        let mut text = String::new();
        let mut ids = Vec::new();
        while ids.len() < 4 {
            let chunk = tokio::time::timeout(Duration::from_secs(30), resp.chunk())
                .await
                .expect("stream stalled")
                .unwrap()
                .expect("stream ended");
            text.push_str(&String::from_utf8_lossy(&chunk));
            ids = text
                .lines()
                .filter_map(|l| l.strip_prefix("id:"))
                .map(|v| v.trim().parse::<i64>().unwrap())
                .collect();
        }
        assert_eq!(ids, vec![1, 2, 3, 4], "{text}");
        assert_eq!(text.matches("question.flagged").count(), 3, "{text}");
    }
}
