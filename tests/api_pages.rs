//! Bounded responses: every list route is paged
//! (`limit`, `after`, `X-Next-Cursor`), action lists carry no arguments, and
//! a daemon holding 100 actions of 1 MB arguments answers 16 concurrent list
//! calls within a stated memory ceiling.

mod api_support;
mod common;

use api_support::Api;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use handoff::store::tokens::Role;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// GET `uri`: status, body, and the next cursor.
async fn get(api: &Api, token: &str, uri: &str) -> (StatusCode, Value, Option<String>) {
    let req = Request::builder()
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let resp = api.app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let next = resp
        .headers()
        .get("x-next-cursor")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap(), next)
}

/// Follow a list route's pages of `limit`; returns the ids and the page sizes.
async fn walk(
    api: &Api,
    token: &str,
    path: &str,
    key: &str,
    limit: usize,
) -> (Vec<String>, Vec<usize>) {
    let (mut ids, mut sizes) = (Vec::new(), Vec::new());
    let mut after: Option<String> = None;
    let sep = if path.contains('?') { '&' } else { '?' };
    loop {
        let mut uri = format!("{path}{sep}limit={limit}");
        if let Some(a) = &after {
            uri.push_str(&format!("&after={a}"));
        }
        let (st, v, next) = get(api, token, &uri).await;
        assert_eq!(st, StatusCode::OK, "{uri}: {v}");
        let items = v.as_array().expect("a page is an array");
        sizes.push(items.len());
        ids.extend(items.iter().map(|i| i[key].to_string()));
        match next {
            Some(n) => after = Some(n),
            None => return (ids, sizes),
        }
    }
}

#[tokio::test]
async fn list_routes_page_with_a_cursor_and_refuse_bad_limits() {
    let api = Api::new().await;
    let admin = api.token("root", Role::Admin, None).await;
    for n in 0..7 {
        let (st, v) = api
            .call(
                "POST",
                "/v1/actions",
                Some(&admin),
                Some(json!({"kind": "k", "summary": format!("a{n}"), "args": {"big": "x".repeat(1000)}})),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED, "{v}");
        let (st, v) = api
            .call(
                "POST",
                "/v1/questions",
                Some(&admin),
                Some(json!({"title": format!("q{n}"), "project": "p"})),
            )
            .await;
        assert!(st.is_success(), "{v}");
    }
    for (path, key) in [("/v1/actions", "id"), ("/v1/questions", "id")] {
        let (ids, sizes) = walk(&api, &admin, path, key, 3).await;
        assert_eq!(sizes, [3, 3, 1], "{path}");
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 7, "{path}: every item once: {ids:?}");
    }
    // The action's audit trail pages by sequence.
    let (_, list, _) = get(&api, &admin, "/v1/actions?limit=1").await;
    let id = list[0]["id"].as_str().unwrap().to_string();
    let (_, sizes) = walk(&api, &admin, &format!("/v1/actions/{id}/audit"), "seq", 1).await;
    assert_eq!(sizes, [1], "one proposed row");

    // A list item carries no arguments; the action itself does.
    assert_eq!(list[0]["args"], Value::Null);
    assert_eq!(list[0]["effective_args"], Value::Null);
    let (_, one, _) = get(&api, &admin, &format!("/v1/actions/{id}")).await;
    assert_eq!(one["args"]["big"].as_str().unwrap().len(), 1000);

    for bad in ["limit=0", "limit=501", "limit=x", "after=nope"] {
        let (st, v, _) = get(&api, &admin, &format!("/v1/actions?{bad}")).await;
        assert!(st.is_client_error(), "{bad}: {st} {v}");
        assert!(v["message"].as_str().is_some(), "{bad}: {v}");
    }
}

/// The daemon's peak resident memory, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// The ceiling this test states: a list of any number of actions, however
/// large their arguments, costs the daemon little more than its baseline.
const CEILING_MIB: u64 = 160;

#[tokio::test]
async fn big_actions_and_concurrent_lists_stay_under_the_memory_ceiling() {
    let db = common::TempDb::new();
    let store = db.open().await;
    let big = json!({"blob": "y".repeat(1024 * 1024 - 20)}).to_string();
    for n in 0..100 {
        let mut a = common::new_action("upload", &big);
        a.summary = format!("upload {n}");
        store.propose(&a).await.unwrap();
    }
    let token = store
        .token_create("reader", Role::Admin, None)
        .await
        .unwrap()
        .secret;
    store.close().await;
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let d = common::daemon::Daemon::start(&db.path, &cfg);
    let client = reqwest::Client::new();
    let calls = (0..16).map(|_| {
        let (client, url, token) = (
            client.clone(),
            format!("http://{}/v1/actions?limit=500", d.addr),
            token.clone(),
        );
        tokio::spawn(async move {
            let resp = client.get(url).bearer_auth(token).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            let body = resp.bytes().await.unwrap();
            let items: Vec<Value> = serde_json::from_slice(&body).unwrap();
            (items.len(), body.len())
        })
    });
    for c in calls {
        let (n, bytes) = c.await.unwrap();
        assert_eq!(n, 100);
        assert!(bytes < 200_000, "a list of 100 is small: {bytes} bytes");
    }
    let peak = peak_rss_kib(d.child.id()) / 1024;
    eprintln!("daemon peak RSS with 100 x 1 MB actions and 16 concurrent lists: {peak} MiB");
    assert!(
        peak < CEILING_MIB,
        "the daemon peaked at {peak} MiB (ceiling {CEILING_MIB} MiB)"
    );
}
