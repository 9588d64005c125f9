//! `GET /v1/events?tail=N`: the newest N events, with `next_after` at the
//! newest seq even for a project-scoped token that sees fewer (so a
//! follower starting there never stalls or replays), and its bad inputs;
//! and the event routes' bytes, written a few events at a time from the
//! stored text, are what writing the events read as trees gives.

mod api_support;
mod common;

use std::time::Duration;

use api_support::Api;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use handoff::store::events::EventPage;
use handoff::store::questions::NewQuestion;
use handoff::store::tokens::Role;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

fn seqs(v: &Value) -> Vec<i64> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn tail_gives_the_newest_events_and_where_to_follow_from() {
    let api = Api::new().await;
    let admin = api.token("admin", Role::Admin, None).await;
    let scoped = api.token("a-only", Role::Human, Some("a")).await;
    for (i, project) in ["a", "b", "a", "b", "b"].iter().enumerate() {
        api.store
            .flag(&NewQuestion {
                project: project.to_string(),
                title: format!("q{i}"),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let newest = api.store.last_event_seq().await.unwrap();

    let (st, v) = api
        .call("GET", "/v1/events?tail=3", Some(&admin), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(seqs(&v), [newest - 2, newest - 1, newest]);
    assert_eq!(v["next_after"], newest);

    // Of the newest four, project a owns one (q2); the cursor still moves
    // to the newest overall.
    let (_, v) = api
        .call("GET", "/v1/events?tail=4", Some(&scoped), None)
        .await;
    assert_eq!(seqs(&v), [newest - 2], "{v}");
    assert_eq!(v["events"][0]["project"], "a");
    assert_eq!(v["next_after"], newest);

    let (_, v) = api
        .call("GET", "/v1/events?tail=0", Some(&admin), None)
        .await;
    assert!(seqs(&v).is_empty());
    assert_eq!(v["next_after"], newest);

    for uri in [
        "/v1/events?tail=2&after=1",
        "/v1/events?tail=2&limit=5",
        "/v1/events?tail=1001",
        "/v1/events?tail=-1",
    ] {
        let (st, v) = api.call("GET", uri, Some(&admin), None).await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {v}");
        assert_eq!(v["reason"], "invalid", "{uri}: {v}");
    }
}

#[tokio::test]
async fn tail_stays_within_the_payload_budget_counting_from_the_newest() {
    let db = common::TempDb::new();
    let store = db.open().await;
    common::ask(&store, "small and old").await;
    // Three events of 1.5 MB each, newest last: two fit the ~4 MiB budget.
    let pool = common::raw_pool(&db.path).await;
    for i in 0..3 {
        sqlx::query(
            "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
             VALUES (1, 'test.big', 'question', ?, '', '', 'p', '', '{\"x\":\"' || hex(zeroblob(750000)) || '\"}')",
        )
        .bind(format!("big{i}"))
        .execute(&pool)
        .await
        .unwrap();
    }
    let newest = store.last_event_seq().await.unwrap();

    let page = store.events_tail(10).await.unwrap();
    let ids: Vec<&str> = page.events.iter().map(|e| e.entity_id.as_str()).collect();
    assert_eq!(ids, ["big1", "big2"], "the newest that fit, oldest first");
    assert_eq!(page.next_after, newest);
    // A tail of one is exactly the newest.
    let page = store.events_tail(1).await.unwrap();
    assert_eq!(page.events.len(), 1);
    assert_eq!(page.events[0].seq, newest);
    // An empty log: nothing, and following starts at 0.
    let empty = common::TempDb::new()
        .open()
        .await
        .events_tail(5)
        .await
        .unwrap();
    assert!(empty.events.is_empty());
    assert_eq!(empty.next_after, 0);
}

/// GET `uri` as `token`: the status and the body's bytes.
async fn get_bytes(api: &Api, token: &str, uri: &str) -> (StatusCode, Vec<u8>) {
    let req = Request::builder()
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let resp = api.app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, bytes.to_vec())
}

/// What the page answered before it was written from the stored text:
/// the store's page with its events read as trees, serialized.
fn as_before(mut page: EventPage, sees: impl Fn(&str) -> bool) -> Vec<u8> {
    page.events.retain(|e| sees(&e.project));
    serde_json::to_vec(&page).unwrap()
}

#[tokio::test]
async fn pages_and_streams_are_the_bytes_the_events_as_trees_give() {
    let api = Api::new().await;
    let admin = api.token("admin", Role::Admin, None).await;
    let scoped = api.token("a-only", Role::Human, Some("a")).await;
    // Payloads of 300 KB, several groups and many frames; an action's
    // stored payload has its trigger's keys last, not in key order.
    let big = serde_json::json!({"z": "y".repeat(300_000), "a": [1.5, 2e10, "\u{e9}\n"]});
    for (i, project) in ["a", "b", "a", "a", "b", "a"].iter().enumerate() {
        let mut a = common::new_action("upload", &big.to_string());
        a.project = project.to_string();
        a.session = format!("sess-{project}");
        a.summary = format!("upload {i} \"quoted\" \u{e9}");
        api.store.propose(&a).await.unwrap();
        common::ask(&api.store, &format!("small {i}")).await;
    }
    let newest = api.store.last_event_seq().await.unwrap();

    for (token, sees) in [(&admin, None), (&scoped, Some("a"))] {
        let sees = |p: &str| sees.is_none_or(|s| s == p);
        let (st, body) = get_bytes(&api, token, "/v1/events?tail=500").await;
        assert_eq!(st, StatusCode::OK);
        let want = as_before(api.store.events_tail(500).await.unwrap(), sees);
        assert!(
            body == want,
            "tail: {} bytes, want {}",
            body.len(),
            want.len()
        );
        let (st, body) = get_bytes(&api, token, "/v1/events?after=1&limit=9").await;
        assert_eq!(st, StatusCode::OK);
        let want = as_before(api.store.events_page(1, 9).await.unwrap(), sees);
        assert!(
            body == want,
            "page: {} bytes, want {}",
            body.len(),
            want.len()
        );
    }

    // The stream: each event `id: seq`, `data:` the event as one line.
    let req = Request::builder()
        .uri("/v1/events/stream?after=0")
        .header("authorization", format!("Bearer {scoped}"))
        .body(Body::empty())
        .unwrap();
    let resp = api.app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.headers()["cache-control"], "no-cache");
    let mut want = Vec::new();
    for ev in api.store.events_after(0, 1000).await.unwrap() {
        if ev.project == "a" {
            want.extend_from_slice(format!("id: {}\ndata: ", ev.seq).as_bytes());
            want.extend_from_slice(&serde_json::to_vec(&ev).unwrap());
            want.extend_from_slice(b"\n\n");
        }
    }
    assert!(want.len() > 1_000_000 && newest > 12);
    let mut body = resp.into_body();
    let mut got = Vec::new();
    while got.len() < want.len() {
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame())
            .await
            .expect("stream stalled")
            .expect("stream ended")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            assert!(data.len() <= 64 * 1024, "frames are small: {}", data.len());
            got.extend_from_slice(&data);
        }
    }
    assert!(
        got == want,
        "stream: {} bytes, want {}",
        got.len(),
        want.len()
    );
}
