//! The HTTP API's operations end to end through the router (real store,
//! no socket): questions, boards, actions; refusals as 4xx with a reason;
//! bad input; the OpenAPI document against the route table.

mod api_support;
mod common;

use api_support::{Api, fixture};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use handoff::store::tokens::Role;
use serde_json::{Value, json};

async fn tokens(api: &Api) -> (String, String) {
    (
        api.token("agent-1", Role::Agent, None).await,
        api.token("alice", Role::Human, None).await,
    )
}

#[tokio::test]
async fn question_flow_flag_reply_pickup_resolve() {
    let api = Api::new().await;
    let (agent, human) = tokens(&api).await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/questions",
            Some(&agent),
            Some(
                json!({"project": "p", "session": "s", "key": "db", "title": "Which DB?",
            "options": [{"label": "postgres", "recommended": true}, {"label": "sqlite"}]}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    let id = v["question"]["id"].as_str().unwrap().to_string();
    let short = v["question"]["short_id"].as_str().unwrap().to_string();
    // Same key: updated in place, 200, no twin.
    let (st, v) = api
        .call(
            "POST",
            "/v1/questions",
            Some(&agent),
            Some(json!({"project": "p", "key": "db", "title": "Which database?"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["question"]["id"], id.as_str());
    assert_eq!(v["question"]["revision"], 2);

    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/questions/{short}/reply"),
            Some(&human),
            Some(json!({"text": "postgres"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["reply"]["source"], "inbox");
    assert_eq!(v["reply"]["by"], "alice");

    // The agent's own answer loses to the unread Inbox reply, and is handed it.
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/questions/{id}/answer"),
            Some(&agent),
            Some(json!({"text": "sqlite"})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["reason"], "unread_answer");
    assert_eq!(v["detail"]["reply"], "postgres");
    assert!(v["message"].as_str().unwrap().contains("Inbox"), "{v}");

    let (st, v) = api
        .call("GET", "/v1/pending?project=p", Some(&agent), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let qs = v["questions"].as_array().unwrap();
    assert_eq!(qs.len(), 1, "{v}");
    assert_eq!(qs[0]["question"]["reply"]["text"], "postgres");

    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/questions/{id}/resolve"),
            Some(&agent),
            Some(json!({"outcome": "went with postgres"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "resolved");
    let before = api.events().await;
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/questions/{id}/reply"),
            Some(&human),
            Some(json!({"text": "late"})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT);
    assert_eq!(v["reason"], "not_open");
    assert_eq!(api.events().await, before);

    let (st, v) = api
        .call("GET", "/v1/questions?status=resolved", Some(&human), None)
        .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(v.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn boards_refuse_stale_versions_with_the_current_ones() {
    let api = Api::new().await;
    let (agent, human) = tokens(&api).await;
    let (st, b) = api
        .call("PUT", "/v1/boards", Some(&agent), Some(json!({"project": "p", "title": "Launch",
            "rows": [{"label": "domain", "status": "blocked", "next_step": "buy it", "owner": "task"}]})))
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let version = b["board_version"].as_i64().unwrap();
    let rev = b["rows"][0]["revision"].as_i64().unwrap();

    let (st, v) = api
        .call(
            "POST",
            "/v1/boards/Launch/rows/domain/annotate?",
            Some(&human),
            Some(json!({"project": "p", "text": "bought example.com"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["row"]["annotation"], "bought example.com");

    let before = api.events().await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/boards/Launch/advance",
            Some(&agent),
            Some(json!({"project": "p", "label": "domain",
            "expected_revision": rev, "board_version": version, "next": {"next_step": "set DNS"}})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["reason"], "stale");
    let current = v["detail"]["board_version"].as_i64().unwrap();
    assert!(current > version, "{v}");
    assert_eq!(
        api.events().await,
        before,
        "a stale advance changes nothing"
    );

    let (_, b) = api
        .call("GET", "/v1/boards/Launch?project=p", Some(&agent), None)
        .await;
    let rev = b["rows"][0]["revision"].as_i64().unwrap();
    let advance = json!({"project": "p", "label": "domain",
        "expected_revision": rev, "board_version": b["board_version"], "outcome": "bought", "next": {"next_step": "set DNS"}});
    // The annotation was never picked up: advancing would bury it unread.
    let (st, v) = api
        .call(
            "POST",
            "/v1/boards/Launch/advance",
            Some(&agent),
            Some(advance.clone()),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["reason"], "unread_response");
    let (st, v) = api
        .call("GET", "/v1/pending?project=p", Some(&agent), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let (st, v) = api
        .call(
            "POST",
            "/v1/boards/Launch/advance",
            Some(&agent),
            Some(advance),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["rows"][0]["next_step"], "set DNS");
    assert_eq!(v["rows"][0]["history"].as_array().unwrap().len(), 1);

    let (st, v) = api
        .call(
            "POST",
            &format!(
                "/v1/boards/{}/rows/domain/handled",
                v["id"].as_str().unwrap()
            ),
            Some(&human),
            Some(json!({})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert!(v["row"]["handled_at"].is_string());
    let (st, v) = api
        .call("GET", "/v1/boards?project=p", Some(&human), None)
        .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(v[0]["title"], "Launch");
    let (st, v) = api
        .call("GET", "/v1/boards/Nope?project=p", Some(&human), None)
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

#[tokio::test]
async fn actions_propose_approve_with_patch_claim_complete() {
    let api = Api::new().await;
    let (agent, human) = tokens(&api).await;
    let (st, v) = api
        .call("POST", "/v1/actions", Some(&agent), Some(json!({"kind": "email.send", "summary": "mail bob",
            "args": {"to": "bob@x", "api_key": "k-123"}, "dedup_key": "mail-1", "ttl": "1h", "project": "p"})))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    assert_eq!(
        v["action"]["args"]["api_key"], "k-123",
        "agents see real args"
    );
    let id = v["action"]["id"].as_str().unwrap().to_string();
    // Same key and payload: the same action back.
    let (st, v) = api
        .call("POST", "/v1/actions", Some(&agent), Some(json!({"kind": "email.send", "summary": "mail bob",
            "args": {"to": "bob@x", "api_key": "k-123"}, "dedup_key": "mail-1", "ttl": "1h", "project": "p"})))
        .await;
    assert_eq!(
        (st, v["created"].as_bool()),
        (StatusCode::OK, Some(false)),
        "{v}"
    );
    // Same key, other payload: a loud conflict.
    let before = api.events().await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/actions",
            Some(&agent),
            Some(json!({"kind": "email.send", "summary": "mail eve",
            "args": {"to": "eve@x"}, "dedup_key": "mail-1", "project": "p"})),
        )
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("dedup_conflict")),
        "{v}"
    );
    assert_eq!(api.events().await, before);

    // A broken patch (unknown key) leaves it pending and untouched.
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/approve"),
            Some(&human),
            Some(json!({"patch": {"cc": "x"}})),
        )
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(api.events().await, before);

    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/approve"),
            Some(&human),
            Some(json!({"patch": {"to": "robert@x"}})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["outcome"], "approved");
    assert_eq!(v["action"]["args"]["api_key"], "[redacted]");
    // A second approval: not an error, the winner's decision.
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/reject"),
            Some(&human),
            Some(json!({"reason": "changed my mind"})),
        )
        .await;
    assert_eq!(
        (st, v["outcome"].as_str()),
        (StatusCode::OK, Some("already_decided")),
        "{v}"
    );

    let (st, v) = api
        .call(
            "GET",
            &format!("/v1/actions/{id}?wait=approved&timeout=1s"),
            Some(&agent),
            None,
        )
        .await;
    assert_eq!(
        (st, v["outcome"].as_str()),
        (StatusCode::OK, Some("done")),
        "{v}"
    );
    assert_eq!(v["action"]["effective_args"]["to"], "robert@x");

    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/claim"),
            Some(&agent),
            Some(json!({"owner": "w1", "lease": "30s"})),
        )
        .await;
    assert_eq!(
        (st, v["outcome"].as_str()),
        (StatusCode::OK, Some("claimed")),
        "{v}"
    );
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/claim"),
            Some(&agent),
            Some(json!({"owner": "w2"})),
        )
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("not_claimable")),
        "{v}"
    );
    let (st, _) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/extend"),
            Some(&agent),
            Some(json!({"owner": "w1", "lease": "1m"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/complete"),
            Some(&agent),
            Some(json!({"owner": "w2", "success": true})),
        )
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("not_owner")),
        "{v}"
    );
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/complete"),
            Some(&agent),
            Some(json!({"owner": "w1", "success": true, "result": {"msg_id": 7}})),
        )
        .await;
    assert_eq!(
        (st, v["action"]["status"].as_str()),
        (StatusCode::OK, Some("executed")),
        "{v}"
    );
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{id}/resolve-unknown"),
            Some(&human),
            Some(json!({"resolution": "retry"})),
        )
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("not_unknown")),
        "{v}"
    );
    let (st, v) = api
        .call("GET", "/v1/actions?status=executed", Some(&human), None)
        .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(v.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn config_rules_decide_proposals_made_over_http() {
    let cfg = handoff::config::Config::parse(
        "[[rule]]\nname = \"reads\"\nkind = \"db.read\"\ndecide = \"approve\"\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let api = Api::with_config(cfg).await;
    let (agent, _) = tokens(&api).await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/actions",
            Some(&agent),
            Some(json!({"kind": "db.read", "summary": "select"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    assert_eq!(v["action"]["status"], "approved", "{v}");
    assert_eq!(v["rule"]["rule"], "reads");
}

/// Requests that must be refused with a clear 4xx and change nothing.
#[tokio::test]
async fn bad_input_is_refused_clearly_and_changes_nothing() {
    let api = Api::new().await;
    let fx = fixture(&api).await;
    let (agent, human) = tokens(&api).await;
    let before = api.events().await;
    let raw = |uri: String, tok: &str, ctype: &str, body: Vec<u8>| {
        Request::builder()
            .method("POST")
            .uri(uri)
            .header("authorization", format!("Bearer {tok}"))
            .header("content-type", ctype)
            .body(Body::from(body))
            .unwrap()
    };
    let cases: Vec<(&str, Request<Body>, u16, &str)> = vec![
        (
            "malformed JSON",
            raw(
                "/v1/questions".into(),
                &agent,
                "application/json",
                b"{\"title\": ".to_vec(),
            ),
            400,
            "malformed_json",
        ),
        (
            "not JSON at all",
            raw(
                "/v1/questions".into(),
                &agent,
                "application/json",
                b"title=x".to_vec(),
            ),
            400,
            "malformed_json",
        ),
        (
            "unknown field",
            raw(
                "/v1/questions".into(),
                &agent,
                "application/json",
                br#"{"title":"x","colour":"red"}"#.to_vec(),
            ),
            422,
            "invalid",
        ),
        (
            "wrong type",
            raw(
                "/v1/questions".into(),
                &agent,
                "application/json",
                br#"{"title":42}"#.to_vec(),
            ),
            422,
            "invalid",
        ),
        (
            "missing field",
            raw(
                "/v1/questions".into(),
                &agent,
                "application/json",
                br#"{"project":"p"}"#.to_vec(),
            ),
            422,
            "invalid",
        ),
        (
            "store limit",
            raw(
                "/v1/questions".into(),
                &agent,
                "application/json",
                json!({"title": "x".repeat(500)}).to_string().into_bytes(),
            ),
            422,
            "invalid",
        ),
        (
            "no content type",
            raw(
                "/v1/questions".into(),
                &agent,
                "text/plain",
                br#"{"title":"x"}"#.to_vec(),
            ),
            415,
            "unsupported_media_type",
        ),
        (
            "oversized",
            raw(
                "/v1/actions".into(),
                &agent,
                "application/json",
                json!({"kind": "k", "summary": "s", "args": {"blob": "x".repeat(1_100_000)}})
                    .to_string()
                    .into_bytes(),
            ),
            413,
            "too_large",
        ),
        (
            "args not an object",
            raw(
                "/v1/actions".into(),
                &agent,
                "application/json",
                br#"{"kind":"k","summary":"s","args":[1]}"#.to_vec(),
            ),
            422,
            "invalid",
        ),
        (
            "bad ttl",
            raw(
                "/v1/actions".into(),
                &agent,
                "application/json",
                br#"{"kind":"k","summary":"s","ttl":"soon"}"#.to_vec(),
            ),
            422,
            "invalid",
        ),
        (
            "bad enum",
            raw(
                format!("/v1/questions/{}/reply", fx.question),
                &human,
                "application/json",
                br#"{"text":"x","kind":"maybe"}"#.to_vec(),
            ),
            422,
            "invalid",
        ),
        (
            "unknown question",
            raw(
                "/v1/questions/deadbeef/reply".into(),
                &human,
                "application/json",
                br#"{"text":"x"}"#.to_vec(),
            ),
            404,
            "not_found",
        ),
        (
            "unknown action",
            raw(
                "/v1/actions/0123456789abcdef/approve".into(),
                &human,
                "application/json",
                b"{}".to_vec(),
            ),
            404,
            "not_found",
        ),
        (
            "unknown board",
            raw(
                "/v1/boards/nope/rows/r1/annotate".into(),
                &human,
                "application/json",
                br#"{"text":"x"}"#.to_vec(),
            ),
            404,
            "not_found",
        ),
        (
            "unknown row",
            raw(
                format!("/v1/boards/{}/rows/zz/annotate", fx.board),
                &human,
                "application/json",
                br#"{"text":"x"}"#.to_vec(),
            ),
            404,
            "not_found",
        ),
        (
            "no such route",
            raw(
                "/v1/nothing".into(),
                &human,
                "application/json",
                b"{}".to_vec(),
            ),
            404,
            "no_route",
        ),
    ];
    for (what, req, status, reason) in cases {
        let (st, v) = api.send(req).await;
        assert_eq!(st.as_u16(), status, "{what}: {v}");
        assert_eq!(v["reason"], reason, "{what}: {v}");
        assert!(
            !v["message"].as_str().unwrap_or("").is_empty(),
            "{what}: {v}"
        );
        assert_eq!(api.events().await, before, "{what} changed something");
    }
    for (uri, reason) in [
        (
            format!("/v1/questions/{}?wait=soon", fx.question),
            "invalid",
        ),
        (
            // Not a duration (a long one is cut to 300 s, not refused).
            format!("/v1/questions/{}?wait=reply&timeout=2%20h", fx.question),
            "invalid",
        ),
        ("/v1/questions?status=maybe".to_string(), "invalid"),
        ("/v1/questions?limit=abc".to_string(), "invalid"),
        ("/v1/events?limit=0".to_string(), "invalid"),
        ("/v1/questions?project=p&bogus=1".to_string(), "invalid"),
    ] {
        let (st, v) = api.call("GET", &uri, Some(&human), None).await;
        assert_eq!(
            (st, v["reason"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(reason)),
            "{uri}: {v}"
        );
    }
    let (st, v) = api
        .call("DELETE", "/v1/questions", Some(&human), None)
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
    let exec = json!({"session_id": "s9", "wake_target": {"type": "exec", "argv": ["/bin/sh", "-c", "id"]}});
    let (st, v) = api
        .call("POST", "/v1/sessions", Some(&agent), Some(exec))
        .await;
    assert_eq!(
        st,
        StatusCode::UNPROCESSABLE_ENTITY,
        "exec wake targets are local only: {v}"
    );
    assert_eq!(api.events().await, before);
}

#[tokio::test]
async fn openapi_documents_exactly_the_routes() {
    let api = Api::new().await;
    let (st, doc) = api.call("GET", "/v1/openapi.json", None, None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(doc, handoff::api::openapi_document());
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            documented.push((method.to_uppercase(), path.clone()));
            assert!(
                op["summary"].is_string() && op["operationId"].is_string(),
                "{path}"
            );
        }
    }
    documented.sort();
    let mut routed: Vec<(String, String)> = handoff::api::routes()
        .into_iter()
        .map(|(m, p, _)| (m.to_string(), p.to_string()))
        .collect();
    routed.sort();
    assert_eq!(documented, routed);
    // And every documented operation is served (not the router's 404 / 405).
    let admin = api.token("root", Role::Admin, None).await;
    for (method, path) in &documented {
        if path.ends_with("/stream") {
            continue;
        }
        let mut uri = path.replace(['{', '}'], "");
        if path.ends_with("/wait") {
            // A long poll by design: don't hold the test up.
            uri.push_str("?timeout=1ms");
        }
        let body = (method != "GET").then(|| json!({}));
        let (st, v) = api.call(method, &uri, Some(&admin), body).await;
        assert!(
            st != StatusCode::METHOD_NOT_ALLOWED && v["reason"] != "no_route",
            "{method} {path}: {st} {v}"
        );
    }
    // Something not documented is not served.
    let (st, v) = api.call("GET", "/v1/question", Some(&admin), None).await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::NOT_FOUND, Some("no_route"))
    );
}

#[tokio::test]
async fn metrics_and_event_pages() {
    let api = Api::new().await;
    let _fx = fixture(&api).await;
    let admin = api.token("root", Role::Admin, None).await;
    let req = Request::builder()
        .uri("/metrics")
        .header("authorization", format!("Bearer {admin}"))
        .body(Body::empty())
        .unwrap();
    let (st, text) = api.send(req).await;
    assert_eq!(st, StatusCode::OK);
    let text = text.as_str().unwrap().to_string();
    let last = api.store.last_event_seq().await.unwrap();
    assert!(
        text.contains(&format!("handoff_events_total {last}")),
        "{text}"
    );
    assert!(text.contains("handoff_questions_open 1"), "{text}");
    assert!(
        text.contains("handoff_actions{status=\"approved\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("handoff_http_responses_total{class=\"2xx\"}"),
        "{text}"
    );

    let (st, v) = api
        .call("GET", "/v1/events?after=0&limit=3", Some(&admin), None)
        .await;
    assert_eq!(st, StatusCode::OK);
    let seqs: Vec<i64> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs.len(), 3);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(v["next_after"], seqs[2]);
    let (_, v2) = api
        .call(
            "GET",
            &format!("/v1/events?after={}", seqs[2]),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(v2["events"][0]["seq"].as_i64().unwrap(), seqs[2] + 1);
    let _: Value = v2;
}

/// Whether `v` fits `schema` (the OpenAPI 3.0 subset handoff's document
/// uses: `$ref`, `type`, `nullable`, `enum`, `required`, `properties`,
/// `additionalProperties: false`, `items`, `anyOf`, `oneOf`); the first
/// misfit as a path and reason.
fn misfit(doc: &Value, schema: &Value, v: &Value, at: &str) -> Option<String> {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        return misfit(doc, &doc["components"]["schemas"][name], v, at);
    }
    if v.is_null() && schema["nullable"] == true {
        return None;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = schema[key].as_array() {
            let fits = alts
                .iter()
                .filter(|s| misfit(doc, s, v, at).is_none())
                .count();
            let ok = if key == "oneOf" { fits == 1 } else { fits >= 1 };
            if !ok {
                return Some(format!("{at}: fits {fits} of the {key} alternatives: {v}"));
            }
        }
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(v)
    {
        return Some(format!("{at}: {v} is not one of {allowed:?}"));
    }
    let ty = schema["type"].as_str().unwrap_or("");
    let type_ok = match ty {
        "" => true,
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        other => return Some(format!("{at}: unknown type {other}")),
    };
    if !type_ok {
        return Some(format!("{at}: {v} is not {ty}"));
    }
    if let Some(o) = v.as_object() {
        for req in schema["required"].as_array().into_iter().flatten() {
            if !o.contains_key(req.as_str().unwrap()) {
                return Some(format!("{at}: `{req}` is missing"));
            }
        }
        for (k, field) in o {
            match schema["properties"].get(k) {
                Some(s) => {
                    if let Some(m) = misfit(doc, s, field, &format!("{at}.{k}")) {
                        return Some(m);
                    }
                }
                None if schema["additionalProperties"] == false => {
                    return Some(format!("{at}: `{k}` is not documented"));
                }
                None => {}
            }
        }
    }
    if let Some(items) = v.as_array() {
        for (i, item) in items.iter().enumerate() {
            if let Some(m) = misfit(doc, &schema["items"], item, &format!("{at}[{i}]")) {
                return Some(m);
            }
        }
    }
    None
}

/// The OpenAPI document tells the truth: every operation's real answer
/// fits the schema it documents for that status; list answers are arrays;
/// request bodies name their fields and required ones; query parameters
/// (`wait`, `timeout`, `limit`, …) are declared; `/metrics` and the event
/// stream are not JSON; a route that takes no body declares none; the wake
/// route's refusal has the common error shape.
#[tokio::test]
async fn openapi_describes_what_each_route_takes_and_answers() {
    let api = Api::new().await;
    let fx = fixture(&api).await;
    let admin = api.token("root", Role::Admin, None).await;
    let doc = handoff::api::openapi_document();
    let op = |m: &str, p: &str| doc["paths"][p][m].clone();

    // Lists answer arrays, paged.
    for p in [
        "/v1/questions",
        "/v1/actions",
        "/v1/boards",
        "/v1/sessions",
        "/v1/handoffs",
        "/v1/grants",
    ] {
        let ok = &op("get", p)["responses"]["200"];
        assert_eq!(
            ok["content"]["application/json"]["schema"]["type"], "array",
            "{p}"
        );
        assert!(ok["headers"]["x-next-cursor"].is_object(), "{p}");
    }
    // Bodies name their fields.
    let flag = &op("post", "/v1/questions")["requestBody"]["content"]["application/json"]["schema"];
    assert!(flag["properties"]["title"].is_object(), "{flag}");
    assert_eq!(flag["required"], json!(["title"]));
    assert_eq!(flag["additionalProperties"], false);
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, o) in ops.as_object().unwrap() {
            let Some(body) = o["requestBody"]["content"]["application/json"]["schema"].as_object()
            else {
                continue;
            };
            if path.ends_with("/wake") {
                continue; // any payload, by design
            }
            assert!(
                body.contains_key("properties"),
                "{method} {path}: a bare object body"
            );
        }
    }
    assert!(op("post", "/v1/sessions/{id}/end")["requestBody"].is_null());
    // Query parameters are declared.
    let names = |m: &str, p: &str| -> Vec<String> {
        op(m, p)["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    for (p, want) in [
        ("/v1/questions/{id}", ["wait", "timeout"]),
        ("/v1/actions/{id}", ["wait", "timeout"]),
        ("/v1/sessions/{id}/wait", ["timeout", "by"]),
        ("/v1/questions", ["limit", "after"]),
    ] {
        let got = names("get", p);
        for w in want {
            assert!(got.contains(&w.to_string()), "{p}: {w} not in {got:?}");
        }
    }
    // Not JSON.
    let media = |p: &str| -> Vec<String> {
        op("get", p)["responses"]["200"]["content"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(media("/metrics"), ["text/plain"]);
    assert_eq!(media("/v1/events/stream"), ["text/event-stream"]);

    // Every operation's real answer fits what the document says of it.
    let mut checked = 0;
    for (method, path, _) in handoff::api::routes() {
        if path.ends_with("/stream") || path == "/metrics" || path.ends_with("/wake") {
            continue;
        }
        let (uri, body) = api_support::sample(method, path, &fx);
        let (st, v) = api.call(method, &uri, Some(&admin), body).await;
        let responses = &doc["paths"][path][method.to_lowercase()]["responses"];
        let class = format!("{}XX", st.as_u16() / 100);
        let answer = match responses.get(st.as_str()) {
            Some(a) => a,
            None => &responses[class.as_str()],
        };
        let Some(schema) = answer["content"]["application/json"].get("schema") else {
            panic!("{method} {path}: answered {st}, which the document does not list: {v}");
        };
        if let Some(m) = misfit(&doc, schema, &v, "$") {
            panic!("{method} {path} ({st}) does not fit its schema: {m}");
        }
        checked += st.is_success() as usize;
    }
    assert!(checked >= 35, "only {checked} operations answered 2xx");

    // The wake route's refusal has the error shape every route uses.
    let (st, v) = api
        .call("POST", "/v1/sessions/s1/wake", None, Some(json!({"x": 1})))
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let error = json!({"$ref": "#/components/schemas/Error"});
    assert_eq!(misfit(&doc, &error, &v, "$"), None, "{v}");
}

/// A write's `channel` is one of the names the schema's enum lists, exactly:
/// an empty or padded name is refused (it used to be read as "left out",
/// which schemathesis caught as a schema-violating request accepted), while
/// a left-out or `null` channel takes the default.
#[tokio::test]
async fn a_channel_outside_the_schemas_enum_is_refused() {
    let api = Api::new().await;
    let (agent, _) = tokens(&api).await;
    for bad in ["", " cli", "chat"] {
        let (st, v) = api
            .call(
                "POST",
                "/v1/actions",
                Some(&agent),
                Some(json!({"kind": "k", "summary": "s", "channel": bad})),
            )
            .await;
        assert_eq!(
            (st, v["reason"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid")),
            "{bad:?}: {v}"
        );
    }
    let before = api.events().await;
    for ok in [json!(null), json!("cli"), json!("agent")] {
        let (st, v) = api
            .call(
                "POST",
                "/v1/actions",
                Some(&agent),
                Some(json!({"kind": "k", "summary": format!("s {ok}"), "channel": ok})),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED, "{ok}: {v}");
    }
    assert!(api.events().await > before);
}
