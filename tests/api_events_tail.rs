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
