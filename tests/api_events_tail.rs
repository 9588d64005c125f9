//! `GET /v1/events?tail=N`: the newest N events, with `next_after` at the
//! newest seq even for a project-scoped token that sees fewer (so a
//! follower starting there never stalls or replays), and its bad inputs.

mod api_support;
mod common;

use api_support::Api;
use axum::http::StatusCode;
use handoff::store::questions::NewQuestion;
use handoff::store::tokens::Role;
use serde_json::Value;

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
