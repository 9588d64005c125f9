//! The Inbox side of grants over HTTP (no browser): permission grants
//! listed and revoked through `GET /v1/grants` and
//! `POST /v1/grants/{id}/revoke` with the Inbox's session cookie (the same
//! grants `handoff grants` prints; a revoked one stops deciding a real
//! `handoff hook claude`), the project scope of tokens, clear answers for
//! an unknown or already revoked grant, and a question card that refuses a
//! second answer. In process (router + `oneshot`) over a real temp store.

mod api_support;
mod common;

use api_support::Api;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::hook::{bash, finish, permission_request, spawn_hook};
use handoff::store::grants::{NewGrant, Scope};
use handoff::store::questions::{Choice, NewQuestion, QuestionOption};
use handoff::store::tokens::Role;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const HOST: &str = "127.0.0.1:8642";
const ORIGIN: &str = "http://127.0.0.1:8642";

/// A request with the Inbox cookie (and the page's Origin on writes).
async fn inbox(
    api: &Api,
    method: &str,
    uri: &str,
    cookie: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut r = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, HOST)
        .header(header::COOKIE, format!("handoff_inbox={cookie}"));
    let req = match body {
        Some(b) => r
            .header(header::ORIGIN, ORIGIN)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string())),
        None => {
            r = r.header(header::ACCEPT, "application/json");
            r.body(Body::empty())
        }
    }
    .unwrap();
    let resp = api.app.clone().oneshot(req).await.unwrap();
    let st = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (st, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// An Inbox session for `name`: its cookie value.
async fn login(api: &Api, name: &str) -> String {
    let link = api.store.inbox_link_create(name, 600_000).await.unwrap();
    let req = Request::post("/inbox/login")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, ORIGIN)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("code={}", link.code)))
        .unwrap();
    let resp = api.app.clone().oneshot(req).await.unwrap();
    let set = resp
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("handoff_inbox="))
        .expect("a session cookie")
        .to_string();
    set["handoff_inbox=".len()..]
        .split(';')
        .next()
        .unwrap()
        .to_string()
}

/// A live grant of `tool` covering `input` in `project`, saved as a tap saves it.
async fn grant(api: &Api, project: &str, session: &str, input: Value) -> String {
    let mut new = common::new_action("claude.Bash", &input.to_string());
    new.project = project.into();
    new.session = session.into();
    let a = api.store.propose(&new).await.unwrap().action;
    let pattern = handoff::store::grants::pattern::derive("Bash", &input).unwrap();
    let g = api
        .store
        .grant_create(
            &NewGrant {
                scope: Scope::Session,
                agent: "claude",
                session,
                project,
                tool: "Bash",
                pattern: &pattern,
                action_id: &a.id,
                by: "bob",
                expires_at: None,
                path: "",
            },
            handoff::store::Channel::Chat,
        )
        .await
        .unwrap();
    api.store
        .approve(&a.id, handoff::store::actions::Actor::cli("bob"), None)
        .await
        .unwrap();
    assert!(api.store.grant_confirm(&g.id).await.unwrap());
    g.id
}

/// The hook's decision for a PermissionRequest of `cmd` in session `s-1`.
fn hook_says(api: &Api, cmd: &str) -> String {
    let ev = permission_request("s-1", "Bash", bash(cmd));
    let (code, out, err) = finish(spawn_hook(
        &api.db,
        &ev.to_string(),
        &["--timeout", "1s"],
        &[],
    ));
    assert_eq!(code, 0, "{err}");
    out["hookSpecificOutput"]["decision"]["behavior"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn the_inbox_lists_the_grants_the_cli_shows_and_a_revoked_one_stops_matching() {
    let api = Api::new().await;
    let cookie = login(&api, "alice").await;
    // Saved by an Inbox tap: approve the prompt "for this session".
    let mut new = common::new_action("claude.Bash", &bash("npm test").to_string());
    new.project = "shop".into();
    new.session = "s-1".into();
    let a = api.store.propose(&new).await.unwrap().action;
    let (st, v) = inbox(&api, "GET", &format!("/v1/actions/{}", a.id), &cookie, None).await;
    assert_eq!(
        (st, v["grant_rule"].as_str()),
        (StatusCode::OK, Some("Bash(npm test:*)"))
    );
    let (st, v) = inbox(
        &api,
        "POST",
        &format!("/v1/actions/{}/approve", a.id),
        &cookie,
        Some(json!({"grant": "session"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");

    let (st, list) = inbox(&api, "GET", "/v1/grants", &cookie, None).await;
    assert_eq!(st, StatusCode::OK, "{list}");
    let g = &list[0];
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(
        (
            &g["tool"],
            &g["rule"],
            &g["scope"],
            &g["session"],
            &g["project"],
            &g["created_by"]
        ),
        (
            &json!("Bash"),
            &json!("Bash(npm test:*)"),
            &json!("session"),
            &json!("s-1"),
            &json!("shop"),
            &json!("alice")
        )
    );
    assert!(g["created_at"].is_string());
    let id = g["id"].as_str().unwrap().to_string();
    // `handoff grants` shows the same grants.
    let o = api.db.cli(&["--json", "grants"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let cli = common::json(&o);
    let ids: Vec<&str> = cli["grants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id.as_str()]);

    // It decides a real hook's covered prompt at once.
    assert_eq!(hook_says(&api, "npm test -- --watch"), "allow");

    // A cross-site revoke is refused; the page's own one works.
    let uri = format!("/v1/grants/{id}/revoke");
    let req = Request::post(&uri)
        .header(header::HOST, HOST)
        .header(header::COOKIE, format!("handoff_inbox={cookie}"))
        .header(header::ORIGIN, "https://evil.example")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let (st, _) = api.send(req).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, v) = inbox(&api, "POST", &uri, &cookie, Some(json!({}))).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        (v["id"].as_str(), v["revoked_by"].as_str()),
        (Some(id.as_str()), Some("alice"))
    );
    let (_, list) = inbox(&api, "GET", "/v1/grants", &cookie, None).await;
    assert_eq!(list, json!([]));
    let (_, all) = inbox(&api, "GET", "/v1/grants?all=true", &cookie, None).await;
    assert_eq!(all[0]["revoked_by"], "alice", "{all}");
    let cli = common::json(&api.db.cli(&["--json", "grants"]));
    assert_eq!(cli["grants"], json!([]));

    // The next covered prompt asks again (and, nobody deciding, is denied).
    assert_eq!(hook_says(&api, "npm test -- --watch"), "deny");

    // Revoking again, or an id that is no grant, answers clearly.
    let events = api.events().await;
    let (st, v) = inbox(&api, "POST", &uri, &cookie, Some(json!({}))).await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("already_revoked")),
        "{v}"
    );
    let msg = v["message"].as_str().unwrap();
    assert!(
        msg.contains("already revoked by alice") && msg.contains("nothing changed"),
        "{msg}"
    );
    assert_eq!(v["detail"]["id"], id.as_str());
    let (st, v) = inbox(
        &api,
        "POST",
        "/v1/grants/0123abcd0123abcd/revoke",
        &cookie,
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found")),
        "{v}"
    );
    assert!(
        v["message"].as_str().unwrap().contains("GET /v1/grants"),
        "{v}"
    );
    let (st, v) = inbox(
        &api,
        "POST",
        "/v1/grants/nope/revoke",
        &cookie,
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found")),
        "{v}"
    );
    assert!(
        v["message"].as_str().unwrap().contains("last 8 characters"),
        "{v}"
    );
    assert_eq!(api.events().await, events, "nothing changed");
}

#[tokio::test]
async fn a_project_token_lists_and_revokes_only_its_projects_grants() {
    let api = Api::new().await;
    let mine = grant(&api, "p", "s-1", bash("npm test")).await;
    let theirs = grant(&api, "q", "s-2", bash("cargo build")).await;
    let human_p = api.token("human-p", Role::Human, Some("p")).await;
    let agent_p = api.token("agent-p", Role::Agent, Some("p")).await;
    let admin = api.token("root", Role::Admin, None).await;

    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (st, v) = api.call("GET", "/v1/grants", Some(&human_p), None).await;
    assert_eq!((st, ids(&v)), (StatusCode::OK, vec![mine.clone()]));
    let (_, v) = api.call("GET", "/v1/grants", Some(&agent_p), None).await;
    assert_eq!(ids(&v), vec![mine.clone()], "reading is open to any token");
    let (st, v) = api
        .call("GET", "/v1/grants?project=q", Some(&human_p), None)
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::FORBIDDEN, Some("wrong_project"))
    );
    let (_, v) = api.call("GET", "/v1/grants", Some(&admin), None).await;
    assert_eq!(ids(&v).len(), 2);
    let (_, v) = api
        .call("GET", "/v1/grants?project=q", Some(&admin), None)
        .await;
    assert_eq!(ids(&v), vec![theirs.clone()]);

    // Another project's grant is not there, by full or short id.
    let events = api.events().await;
    for id in [theirs.as_str(), &theirs[theirs.len() - 8..]] {
        let (st, v) = api
            .call(
                "POST",
                &format!("/v1/grants/{id}/revoke"),
                Some(&human_p),
                Some(json!({})),
            )
            .await;
        assert_eq!(
            (st, v["reason"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found")),
            "{v}"
        );
    }
    // Agents decide no actions, so they revoke no grants.
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/grants/{mine}/revoke"),
            Some(&agent_p),
            Some(json!({})),
        )
        .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::FORBIDDEN, Some("wrong_role"))
    );
    assert_eq!(api.events().await, events, "nothing changed");
    let live = api.store.grant_list(false).await.unwrap();
    assert_eq!(live.len(), 2);

    // Its own, by short id: revoked, as the token's name.
    let (st, v) = api
        .call(
            "POST",
            &format!("/v1/grants/{}/revoke", &mine[mine.len() - 8..]),
            Some(&human_p),
            Some(json!({})),
        )
        .await;
    assert_eq!(
        (st, v["revoked_by"].as_str()),
        (StatusCode::OK, Some("human-p")),
        "{v}"
    );
    let live = api.store.grant_list(false).await.unwrap();
    assert_eq!(
        live.iter().map(|g| g.id.clone()).collect::<Vec<_>>(),
        vec![theirs]
    );
}

#[tokio::test]
async fn a_question_card_takes_one_answer_and_refuses_a_stale_one() {
    let api = Api::new().await;
    let cookie = login(&api, "alice").await;
    let card = NewQuestion {
        project: "p".into(),
        agent: "claude".into(),
        key: Some("claude:ask:s:t:0".into()),
        title: "Which checks?".into(),
        options: ["Lint", "Unit", "E2E"]
            .iter()
            .map(|l| QuestionOption {
                label: (*l).into(),
                recommended: false,
            })
            .collect(),
        ..Default::default()
    };
    let q = api
        .store
        .flag_card(&card, Choice::Many)
        .await
        .unwrap()
        .question;
    let uri = format!("/v1/questions/{}/reply", q.id);
    // The Inbox sees the card's shape.
    let (_, v) = inbox(
        &api,
        "GET",
        &format!("/v1/questions/{}", q.id),
        &cookie,
        None,
    )
    .await;
    assert_eq!(v["choice"], "many", "{v}");

    // A drawing older than a chat tick is stale.
    api.store
        .question_toggle(&q.id, 1, q.revision, "@bob", handoff::store::Channel::Chat)
        .await
        .unwrap()
        .unwrap();
    let (st, v) = inbox(
        &api,
        "POST",
        &uri,
        &cookie,
        Some(json!({"text": "Lint", "kind": "answer", "expected_revision": q.revision})),
    )
    .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("stale")),
        "{v}"
    );

    let now = api.store.get_question(&q.id).await.unwrap().unwrap();
    let (st, v) = inbox(
        &api,
        "POST",
        &uri,
        &cookie,
        Some(json!({"text": "Lint, E2E, and a smoke run", "kind": "answer", "expected_revision": now.revision})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    // Answered: a second answer is refused, saying what stands.
    let (st, v) = inbox(
        &api,
        "POST",
        &uri,
        &cookie,
        Some(json!({"text": "Unit", "kind": "answer", "expected_revision": now.revision})),
    )
    .await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("unread_answer")),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("Lint, E2E, and a smoke run"),
        "{v}"
    );
    let stands = api.store.get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(stands.reply.unwrap().text, "Lint, E2E, and a smoke run");

    // Once its hook has it and closed it: closed.
    api.store
        .resolve_question(&q.id, "answered", "claude")
        .await
        .unwrap()
        .unwrap();
    let (st, v) = inbox(&api, "POST", &uri, &cookie, Some(json!({"text": "Unit"}))).await;
    assert_eq!(
        (st, v["reason"].as_str()),
        (StatusCode::CONFLICT, Some("not_open")),
        "{v}"
    );

    // A plain question still takes the Inbox's word over an earlier one.
    let plain = common::ask(&api.store, "Plain?").await;
    let uri = format!("/v1/questions/{}/reply", plain.id);
    for text in ["first", "second"] {
        let (st, v) = inbox(&api, "POST", &uri, &cookie, Some(json!({"text": text}))).await;
        assert_eq!(st, StatusCode::OK, "{v}");
    }
}

/// Before anyone taps "Always" on a Codex prompt, the Inbox is told the
/// exact line it adds to Codex's rules file, or that it adds none.
#[tokio::test]
async fn a_codex_prompt_shows_the_rule_always_adds_to_codex() {
    let api = Api::new().await;
    let cookie = login(&api, "alice").await;
    let shown = |cmd: &'static str| {
        let api = &api;
        let cookie = cookie.clone();
        async move {
            let a = api
                .store
                .propose(&common::new_action("codex.Bash", &bash(cmd).to_string()))
                .await
                .unwrap()
                .action;
            let (st, v) = inbox(api, "GET", &format!("/v1/actions/{}", a.id), &cookie, None).await;
            assert_eq!(st, StatusCode::OK, "{v}");
            v
        }
    };
    let v = shown("npm test --coverage").await;
    assert_eq!(v["grant_rule"], "Bash(npm test:*)");
    assert_eq!(
        v["codex_rule"],
        r#"prefix_rule(pattern=["npm", "test"], decision="allow")"#
    );
    let v = shown("rm -rf build").await;
    assert_eq!(v["grant_rule"], "Bash(rm -rf build)");
    assert_eq!(v["codex_rule"], Value::Null, "{v}");
    assert!(v.as_object().unwrap().contains_key("codex_rule"));
    // A Claude Code prompt has its own write-back, not Codex's.
    let a = api
        .store
        .propose(&common::new_action(
            "claude.Bash",
            &bash("npm test").to_string(),
        ))
        .await
        .unwrap()
        .action;
    let (_, v) = inbox(&api, "GET", &format!("/v1/actions/{}", a.id), &cookie, None).await;
    assert!(v.get("codex_rule").is_none(), "{v}");
}

#[tokio::test]
async fn a_prompt_shows_in_the_inbox_as_the_chat_shows_it_whole() {
    let api = Api::new().await;
    let cookie = login(&api, "alice").await;
    let view = |kind: &'static str, args: Value| {
        let api = &api;
        let cookie = cookie.clone();
        async move {
            let a = api
                .store
                .propose(&common::new_action(kind, &args.to_string()))
                .await
                .unwrap()
                .action;
            let (st, v) = inbox(api, "GET", &format!("/v1/actions/{}", a.id), &cookie, None).await;
            assert_eq!(st, StatusCode::OK, "{v}");
            v
        }
    };
    // An edit: the unified diff, every line of it (a long one too).
    let old: String = (0..400).map(|i| format!("line {i}\n")).collect();
    let new = old.replace("line 399\n", "line 399 changed\n");
    let v = view(
        "claude.Edit",
        json!({"file_path": "src/db.rs", "old_string": old, "new_string": new}),
    )
    .await;
    let preview = v["preview"].as_str().expect("an edit has a preview");
    assert!(
        preview.starts_with("--- src/db.rs\n+++ src/db.rs\n"),
        "{preview}"
    );
    assert!(preview.contains("-line 399\n") && preview.contains("+line 399 changed"));
    assert!(preview.contains(" line 0\n"), "nothing is cut");
    // A command: the whole command.
    let v = view("claude.Bash", bash("npm publish --tag next")).await;
    assert_eq!(v["preview"], "npm publish --tag next");
    // Anything else: its arguments only.
    let v = view("email.send", json!({"to": "bob"})).await;
    assert!(v.get("preview").is_none(), "{v}");
}
