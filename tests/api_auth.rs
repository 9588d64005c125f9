//! Authorisation matrix for every route of the HTTP API, token CLI and
//! the daemon's listen policy.

mod api_support;
mod common;

use api_support::{Api, fixture, sample};
use axum::http::StatusCode;
use common::engine::Db;
use handoff::store::tokens::Role;
use serde_json::{Value, json};

/// Does `v` (a list, or an object holding lists) mention project `p`?
fn mentions_project(v: &Value, p: &str) -> bool {
    match v {
        Value::Object(m) => {
            m.get("project").and_then(Value::as_str) == Some(p)
                || m.values().any(|x| mentions_project(x, p))
        }
        Value::Array(a) => a.iter().any(|x| mentions_project(x, p)),
        _ => false,
    }
}

#[tokio::test]
async fn every_route_refuses_missing_revoked_and_wrong_tokens_without_changing_anything() {
    let api = Api::new().await;
    let fx = fixture(&api).await;
    let agent = api.token("agent-p", Role::Agent, Some("p")).await;
    let human = api.token("human-p", Role::Human, Some("p")).await;
    let agent_other = api.token("agent-other", Role::Agent, Some("other")).await;
    let human_other = api.token("human-other", Role::Human, Some("other")).await;
    let auditor_other = api
        .token("auditor-other", Role::Auditor, Some("other"))
        .await;
    let revoked = api.token("gone", Role::Admin, None).await;
    api.store.token_revoke("gone").await.unwrap().unwrap();
    let mut before = api.events().await;

    let mut checked = 0;
    for (method, path, access) in handoff::api::routes() {
        // Inbound wakes authenticate per wake source, not by token
        // (tests/wake_inbound.rs covers them).
        if access == "public" || access == "wake-source" {
            continue;
        }
        let (uri, body) = sample(method, path, &fx);
        let what = format!("{method} {path}");
        let attempts: Vec<(&str, Option<String>)> = vec![
            ("no token", None),
            ("revoked", Some(revoked.clone())),
            ("unknown", Some(format!("hnd_{}", "0".repeat(64)))),
            ("not hnd", Some("abc".into())),
        ];
        for (label, tok) in attempts {
            let (st, v) = api.call(method, &uri, tok.as_deref(), body.clone()).await;
            assert_eq!(st, StatusCode::UNAUTHORIZED, "{what} with {label}: {v}");
            assert_eq!(v["reason"], "unauthorized", "{what}: {v}");
            assert!(v["message"].as_str().unwrap().contains("token"), "{v}");
        }
        // A header that is not a bearer token at all.
        let req = axum::http::Request::builder()
            .method(method)
            .uri(&uri)
            .header("authorization", format!("Basic {agent}"))
            .body(axum::body::Body::empty())
            .unwrap();
        let (st, _) = api.send(req).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{what} with Basic");

        // Wrong role.
        let wrong_role = match access {
            "agent" => Some(&human),
            "human" | "audit" => Some(&agent),
            _ => None,
        };
        if let Some(tok) = wrong_role {
            let (st, v) = api.call(method, &uri, Some(tok), body.clone()).await;
            assert_eq!(st, StatusCode::FORBIDDEN, "{what} with the wrong role: {v}");
            assert_eq!(v["reason"], "wrong_role", "{what}: {v}");
        }

        // Right role, wrong project: a foreign item is 404, naming the
        // project is 403, lists come back without it.
        let tok = match access {
            "human" => &human_other,
            "audit" => &auditor_other,
            _ => &agent_other,
        };
        if path == "/v1/events/stream" {
            // Streams never end; its filtering is tested with the stream tests.
            continue;
        }
        let (st, v) = api.call(method, &uri, Some(tok), body.clone()).await;
        if path == "/v1/audit/export" {
            // An export records its head in the event log by design: it
            // changes the log, and holds nothing of project p.
            assert_eq!((st, &v["entries"]), (StatusCode::OK, &json!(0)), "{v}");
            checked += 1;
            before = api.events().await;
            continue;
        }
        match st {
            StatusCode::FORBIDDEN => assert_eq!(v["reason"], "wrong_project", "{what}: {v}"),
            StatusCode::NOT_FOUND => assert_eq!(v["reason"], "not_found", "{what}: {v}"),
            StatusCode::OK if method == "GET" => {
                assert!(!mentions_project(&v, "p"), "{what} leaked project p: {v}")
            }
            other => panic!("{what} with a foreign project's token: {other} {v}"),
        }
        assert_eq!(api.events().await, before, "{what} changed something");
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} routes checked");
}

#[tokio::test]
async fn the_right_token_reaches_every_route() {
    let api = Api::new().await;
    let fx = fixture(&api).await;
    let admin = api.token("root", Role::Admin, None).await;
    let agent = api.token("agent-p", Role::Agent, Some("p")).await;
    let human = api.token("human-p", Role::Human, Some("p")).await;
    for (method, path, access) in handoff::api::routes() {
        if path == "/v1/events/stream" || access == "wake-source" {
            continue;
        }
        let (uri, body) = sample(method, path, &fx);
        let tok = match access {
            "agent" => &agent,
            "human" => &human,
            _ => &admin,
        };
        let (st, v) = api.call(method, &uri, Some(tok), body).await;
        assert!(
            !matches!(st.as_u16(), 401 | 403 | 405) && v["reason"] != "no_route",
            "{method} {path}: {st} {v}"
        );
    }
}

#[tokio::test]
async fn agent_tokens_cannot_answer_as_a_human_and_humans_cannot_pick_up() {
    let api = Api::new().await;
    let fx = fixture(&api).await;
    let agent = api.token("a", Role::Agent, None).await;
    let human = api.token("h", Role::Human, None).await;
    let before = api.events().await;
    for (m, u) in [
        ("POST", format!("/v1/questions/{}/reply", fx.question)),
        ("POST", format!("/v1/actions/{}/approve", fx.pending_action)),
    ] {
        let (st, v) = api
            .call(m, &u, Some(&agent), Some(serde_json::json!({"text": "x"})))
            .await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{u}: {v}");
    }
    let (st, _) = api.call("GET", "/v1/pending", Some(&human), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert_eq!(api.events().await, before);
    // The human token's writes are recorded under its name; it cannot
    // claim to be someone else (one token is one approver).
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{}/approve", fx.pending_action),
            Some(&human),
            Some(serde_json::json!({"by": "mallory"})),
        )
        .await;
    // Forbidden, not malformed: the body is well formed, the token may
    // not act as anyone but itself.
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::FORBIDDEN, Some("wrong_actor")),
        "{v}"
    );
    assert_eq!(api.events().await, before);
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/actions/{}/approve", fx.pending_action),
            Some(&human),
            Some(serde_json::json!({})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["action"]["decided_by"], "h");
    assert_eq!(
        v["action"]["args"]["token"], "[redacted]",
        "humans see secrets redacted: {v}"
    );
}

#[tokio::test]
async fn open_mode_serves_without_a_token_but_still_checks_presented_ones() {
    let mut cfg = handoff::config::Config::default();
    cfg.http.open = true;
    let api = Api::with_config(cfg).await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/questions",
            None,
            Some(serde_json::json!({"project": "p", "title": "open?"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    let (st, _) = api
        .call("GET", "/v1/questions", Some("hnd_nope"), None)
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    // Closed by default.
    let closed = Api::new().await;
    let (st, _) = closed.call("GET", "/v1/questions", None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    // Public routes need nothing.
    for u in ["/healthz", "/v1/openapi.json"] {
        let (st, _) = closed.call("GET", u, None, None).await;
        assert_eq!(st, StatusCode::OK, "{u}");
    }
}

#[tokio::test]
async fn token_cli_prints_the_secret_once_and_stores_only_its_hash() {
    let db = common::TempDb::new();
    let out = db.cli(&[
        "--json",
        "token",
        "create",
        "--name",
        "ci",
        "--role",
        "agent",
        "--project",
        "web",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let created = common::json(&out);
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("hnd_") && secret.len() == 68, "{secret}");
    assert_eq!(created["token"]["role"], "agent");
    assert_eq!(created["token"]["project"], "web");

    let out = db.cli(&["token", "list"]);
    let text = common::stdout(&out);
    assert!(text.contains("ci") && text.contains("web"), "{text}");
    assert!(!text.contains(&secret[4..]), "list must not show secrets");
    let raw = std::fs::read(&db.path).unwrap();
    let hay = String::from_utf8_lossy(&raw);
    assert!(
        !hay.contains(&secret[4..]),
        "the database must not hold the secret"
    );

    let store = db.open().await;
    let t = store.token_verify(&secret).await.unwrap().unwrap();
    assert_eq!(t.name, "ci");
    // Same name twice: refused while live.
    let out = db.cli(&["token", "create", "--name", "ci", "--role", "human"]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("revoke it first"));
    // Bad role: a usage error, nothing written.
    let out = db.cli(&["token", "create", "--name", "x", "--role", "root"]);
    assert_eq!(out.status.code(), Some(2));

    let out = db.cli(&["token", "revoke", "ci"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(store.token_verify(&secret).await.unwrap().is_none());
    let out = db.cli(&["token", "revoke", "ci"]);
    assert_eq!(out.status.code(), Some(4), "revoking twice: not found");
}

#[tokio::test]
async fn serve_refuses_a_public_address_without_tokens() {
    let db = common::TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let run = |listen: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
            .args(["serve", "--config"])
            .arg(&cfg)
            .args(["--listen", listen])
            .env("HANDOFF_DB", &db.path)
            .env_remove("HANDOFF_TELEGRAM_TOKEN")
            .output()
            .unwrap()
    };
    let out = run("0.0.0.0:0");
    assert_eq!(out.status.code(), Some(2));
    let err = common::stderr(&out);
    assert!(
        err.contains("refusing to listen") && err.contains("token create"),
        "{err}"
    );

    // open = true is refused off loopback even with tokens.
    std::fs::write(&cfg, "[http]\nopen = true\n").unwrap();
    let store = db.open().await;
    store.token_create("t", Role::Admin, None).await.unwrap();
    let out = run("0.0.0.0:0");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("loopback"),
        "{}",
        common::stderr(&out)
    );
}

async fn a_token_name_is_1_to_64_characters(db: Db) {
    let store = db.open().await;
    for good in ["a".repeat(64), "я".repeat(64)] {
        store
            .token_create(&good, Role::Agent, None)
            .await
            .expect("64 characters is allowed");
    }
    for bad in ["a".repeat(65), "   ".into()] {
        let e = store
            .token_create(&bad, Role::Agent, None)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("1 to 64 characters"), "{bad:?}: {e}");
    }
}

async fn token_lifecycle_is_in_the_event_log_and_tokens_exist_follows_it(db: Db) {
    let store = db.open().await;
    assert!(
        !store.tokens_exist().await.unwrap(),
        "a fresh store has none"
    );
    let start = store.last_event_seq().await.unwrap();
    let created = store
        .token_create("ci", Role::Agent, Some("proj"))
        .await
        .unwrap();
    assert!(store.tokens_exist().await.unwrap());
    store.token_revoke("ci").await.unwrap();
    assert!(
        !store.tokens_exist().await.unwrap(),
        "a revoked token does not count"
    );
    let events = store.events_after(start, 100).await.unwrap();
    let kinds: Vec<_> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["token.created", "token.revoked"]);
    for e in &events {
        assert_eq!(
            (e.payload["name"].as_str(), e.project.as_str()),
            (Some("ci"), "proj")
        );
        assert!(
            !e.payload.to_string().contains(&created.secret),
            "no secret in the log"
        );
    }
}

// The store-level token tests, on both engines.
both_engines!(
    a_token_name_is_1_to_64_characters,
    token_lifecycle_is_in_the_event_log_and_tokens_exist_follows_it,
);
