//! A long poll outlives neither its token: `GET /v1/questions/{id}?wait=reply`,
//! `GET /v1/sessions/{id}/wait` and `GET /v1/actions/{id}?wait=…`, open when
//! the token is revoked, end with 401 — at the next write they would have
//! answered, and within a few seconds without one — and nothing is marked
//! seen for the revoked caller. (Event streams: `tests/stream_revoke.rs`.)

mod api_support;
mod common;

use std::time::Duration;

use api_support::Api;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use handoff::store::tokens::Role;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// A poll by `token` on `uri`, started now, and a moment for it to be open.
async fn poll(api: &Api, uri: String, token: &str) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let req = Request::builder()
        .method("GET")
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let app = api.app.clone();
    let handle = tokio::spawn(async move {
        let resp = app.oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, v)
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    handle
}

async fn setup() -> (Api, String, String) {
    let api = Api::new().await;
    api.follow();
    let agent = api.token("agent-a", Role::Agent, Some("pa")).await;
    let human = api.token("alice", Role::Human, None).await;
    (api, agent, human)
}

async fn ask(api: &Api, agent: &str, session: &str) -> String {
    if !session.is_empty() {
        let (st, v) = api
            .call(
                "POST",
                "/v1/sessions",
                Some(agent),
                Some(json!({"session_id": session, "project": "pa"})),
            )
            .await;
        assert_eq!(st, StatusCode::OK, "{v}");
    }
    let (st, v) = api
        .call(
            "POST",
            "/v1/questions",
            Some(agent),
            Some(json!({"project": "pa", "session": session, "title": "which database?"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    v["question"]["id"].as_str().unwrap().to_string()
}

async fn reply(api: &Api, human: &str, q: &str) {
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/questions/{q}/reply"),
            Some(human),
            Some(json!({"text": "postgres, password hunter2"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
}

fn assert_revoked(out: &(StatusCode, Value)) {
    assert_eq!(out.0, StatusCode::UNAUTHORIZED, "{}", out.1);
    assert!(!out.1.to_string().contains("hunter2"), "{}", out.1);
    assert!(out.1.to_string().contains("revoked"), "{}", out.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_poll_ends_401_when_its_token_is_revoked_before_the_reply() {
    let (api, agent, human) = setup().await;
    let q = ask(&api, &agent, "").await;
    let open = poll(
        &api,
        format!("/v1/questions/{q}?wait=reply&timeout=30s"),
        &agent,
    )
    .await;
    api.store
        .token_revoke("agent-a")
        .await
        .unwrap()
        .expect("revoked");
    reply(&api, &human, &q).await;
    assert_revoked(&open.await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_wait_ends_401_and_marks_nothing_seen_once_its_token_is_revoked() {
    let (api, agent, human) = setup().await;
    let q = ask(&api, &agent, "sess-r1").await;
    let open = poll(&api, "/v1/sessions/sess-r1/wait?timeout=30s".into(), &agent).await;
    api.store
        .token_revoke("agent-a")
        .await
        .unwrap()
        .expect("revoked");
    reply(&api, &human, &q).await;
    assert_revoked(&open.await.unwrap());
    let stored = api.store.get_question(&q).await.unwrap().unwrap();
    let r = stored.reply.expect("the reply is stored");
    assert_eq!(
        r.seen_at, None,
        "a revoked caller's wait marked the reply seen"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_poll_ends_401_when_its_token_is_revoked_before_the_decision() {
    let (api, agent, human) = setup().await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/actions",
            Some(&agent),
            Some(json!({"project": "pa", "kind": "deploy", "summary": "ship", "args": {}})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    let id = v["action"]["id"].as_str().unwrap().to_string();
    let open = poll(
        &api,
        format!("/v1/actions/{id}?wait=settled&timeout=30s"),
        &agent,
    )
    .await;
    api.store
        .token_revoke("agent-a")
        .await
        .unwrap()
        .expect("revoked");
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/approve"),
            Some(&human),
            Some(json!({})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let out = open.await.unwrap();
    assert_eq!(out.0, StatusCode::UNAUTHORIZED, "{}", out.1);
}

/// With nothing written, a poll still ends at its next re-check (about a
/// second), long before its timeout: the answer is 401, not `timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_poll_ends_401_without_any_write() {
    let (api, agent, _) = setup().await;
    let q = ask(&api, &agent, "sess-r2").await;
    let polls = [
        poll(
            &api,
            format!("/v1/questions/{q}?wait=reply&timeout=8s"),
            &agent,
        )
        .await,
        poll(&api, "/v1/sessions/sess-r2/wait?timeout=8s".into(), &agent).await,
    ];
    api.store
        .token_revoke("agent-a")
        .await
        .unwrap()
        .expect("revoked");
    for p in polls {
        assert_revoked(&p.await.unwrap());
    }
}
