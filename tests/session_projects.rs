//! A session belongs to one project, through the real HTTP API on both
//! engines: a session id named by one project's agent cannot be taken or
//! named by another project's, `wait` and `resume` hand a session only its
//! own project's items, a project-scoped token resolves session ids only in
//! its project (one refusal for "another project's" and "does not exist"),
//! and a token's `agent` cannot name someone else.

mod common;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use common::engine::Db;
use handoff::config::Config;
use handoff::shared::Shared;
use handoff::store::Store;
use handoff::store::tokens::Role;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// The router over `db` and tokens of two projects' agents and a human.
struct Two {
    db: Db,
    store: Store,
    app: Router,
    a: String,
    b: String,
    human: String,
}

impl Two {
    async fn new(db: Db) -> Two {
        let store = db.open().await;
        let shared = Shared::new(
            store.clone(),
            Config::default(),
            tokio_util::sync::CancellationToken::new(),
        );
        let app = handoff::api::router(shared);
        let tok = |name: &'static str, role, project: Option<&'static str>| {
            let store = store.clone();
            async move {
                store
                    .token_create(name, role, project)
                    .await
                    .unwrap()
                    .secret
            }
        };
        let a = tok("agent-a", Role::Agent, Some("pa")).await;
        let b = tok("agent-b", Role::Agent, Some("pb")).await;
        let human = tok("alice", Role::Human, None).await;
        Two {
            db,
            store,
            app,
            a,
            b,
            human,
        }
    }

    async fn call(
        &self,
        method: &str,
        uri: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {token}"));
        let req = match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        }
        .unwrap();
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, v)
    }

    /// Project A's agent asks under session `s`; the question's id.
    async fn ask_a(&self, s: &str) -> String {
        let (st, v) = self
            .call(
                "POST",
                "/v1/questions",
                &self.a,
                Some(json!({"project": "pa", "session": s, "title": "which database?"})),
            )
            .await;
        assert_eq!(st, 201, "{v}");
        v["question"]["id"].as_str().unwrap().to_string()
    }

    async fn reply(&self, q: &str, text: &str) {
        let (st, v) = self
            .call(
                "POST",
                &format!("/v1/questions/{q}/reply"),
                &self.human,
                Some(json!({"text": text})),
            )
            .await;
        assert_eq!(st, 200, "{v}");
    }

    async fn events(&self) -> i64 {
        self.store.count_rows("events").await.unwrap()
    }
}

const S: &str = "claude-abc123";

/// The reported attack, first way round: A's agent registers a session and
/// asks under it; B's agent tries to register the same id in B (and to name
/// it in a question of its own); the human's answer reaches A's agent and
/// never B's. The same when A never registered the id: its question made A
/// the session's home.
async fn a_session_named_by_one_project_is_never_another_projects(db: Db) {
    let t = Two::new(db).await;
    let (st, v) = t
        .call(
            "POST",
            "/v1/sessions",
            &t.a,
            Some(json!({"session_id": S, "project": "pa"})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let q = t.ask_a(S).await;
    let unregistered = "claude-def456";
    t.ask_a(unregistered).await;

    for id in [S, unregistered] {
        let before = t.events().await;
        let (st, v) = t
            .call(
                "POST",
                "/v1/sessions",
                &t.b,
                Some(json!({"session_id": id, "project": "pb"})),
            )
            .await;
        assert_eq!(st, 409, "B registered A's session {id}: {v}");
        assert_eq!(v["reason"], "session_in_other_project", "{v}");
        let (st, v) = t
            .call(
                "POST",
                "/v1/questions",
                &t.b,
                Some(json!({"project": "pb", "session": id, "title": "mine now?"})),
            )
            .await;
        assert_eq!(st, 409, "B filed a question under A's session {id}: {v}");
        assert_eq!(v["reason"], "session_in_other_project", "{v}");
        assert!(
            !v.to_string().contains("`pa`"),
            "the other project leaked: {v}"
        );
        assert_eq!(t.events().await, before, "a refused write wrote");
    }

    t.reply(&q, "use postgres: the password is hunter2").await;

    for id in [S, unregistered] {
        for path in ["wait?timeout=1s", "resume"] {
            let (st, v) = t
                .call("GET", &format!("/v1/sessions/{id}/{path}"), &t.b, None)
                .await;
            assert_eq!(st, 404, "B's {path} reached A's session: {v}");
            assert!(!v.to_string().contains("hunter2"), "{v}");
        }
    }
    // A's agent still gets its answer, once, by its session.
    let (st, v) = t
        .call(
            "GET",
            &format!("/v1/sessions/{S}/wait?timeout=5s"),
            &t.a,
            None,
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["outcome"], "done", "{v}");
    assert_eq!(v["arrivals"][0]["question"]["id"], q.as_str(), "{v}");
    assert!(v.to_string().contains("hunter2"), "{v}");
}

/// The other way round: B registered the id first. A's agent can file no
/// question, board or action under it, and nothing is written.
async fn a_write_naming_another_projects_session_is_refused(db: Db) {
    let t = Two::new(db).await;
    let (st, v) = t
        .call(
            "POST",
            "/v1/sessions",
            &t.b,
            Some(json!({"session_id": S, "project": "pb"})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let before = t.events().await;
    let writes = [
        (
            "POST",
            "/v1/questions",
            json!({"project": "pa", "session": S, "title": "which database?"}),
        ),
        (
            "PUT",
            "/v1/boards",
            json!({"project": "pa", "title": "release", "session": S,
                   "rows": [{"label": "sign-off", "status": "blocked", "next_step": "approve"}]}),
        ),
        (
            "POST",
            "/v1/actions",
            json!({"project": "pa", "session": S, "kind": "deploy", "summary": "ship", "args": {}}),
        ),
    ];
    for (method, path, body) in writes {
        let (st, v) = t.call(method, path, &t.a, Some(body)).await;
        assert_eq!(st, 409, "{method} {path} under B's session: {v}");
        assert_eq!(v["reason"], "session_in_other_project", "{v}");
    }
    assert_eq!(t.events().await, before, "a refused write wrote");
    // B's own session is B's as before.
    let (st, v) = t
        .call("GET", &format!("/v1/sessions/{S}"), &t.b, None)
        .await;
    assert_eq!((st, v["project"].as_str()), (200, Some("pb")), "{v}");
}

/// Items of one project that name a session of another (as a database
/// written before sessions were claimed may hold): `wait` and `resume` of
/// that session hand it none of them, through any token.
async fn wait_and_resume_hand_a_session_only_its_own_projects_items(db: Db) {
    let t = Two::new(db).await;
    let q = t.ask_a(S).await;
    let (st, v) = t
        .call(
            "POST",
            "/v1/actions",
            &t.a,
            Some(json!({"project": "pa", "session": S, "kind": "deploy", "summary": "ship", "args": {}})),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let action = v["action"]["id"].as_str().unwrap().to_string();
    // The session is B's now, by hand: A's question and action name it.
    t.db.exec(
        "INSERT INTO agent_sessions (session_id, project, created_at, updated_at)
             VALUES ($1, 'pb', 1, 1)
             ON CONFLICT (session_id) DO UPDATE SET project = 'pb'",
        &[S],
    )
    .await
    .unwrap();
    t.reply(&q, "the secret answer").await;
    let (st, v) = t
        .call(
            "POST",
            &format!("/v1/actions/{action}/approve"),
            &t.human,
            Some(json!({})),
        )
        .await;
    assert_eq!(st, 200, "{v}");

    let (st, v) = t
        .call("GET", &format!("/v1/sessions/{S}/resume"), &t.b, None)
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["answers"], json!([]), "{v}");
    assert_eq!(v["decisions"], json!([]), "{v}");
    let (st, v) = t
        .call(
            "GET",
            &format!("/v1/sessions/{S}/wait?timeout=1s"),
            &t.b,
            None,
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["outcome"], "timeout", "B was handed A's items: {v}");
    // An unscoped caller's wait on the session gets none of them either.
    let admin = t
        .store
        .token_create("ops", Role::Admin, None)
        .await
        .unwrap()
        .secret;
    let (st, v) = t
        .call(
            "GET",
            &format!("/v1/sessions/{S}/wait?timeout=1s"),
            &admin,
            None,
        )
        .await;
    assert_eq!((st, v["outcome"].as_str()), (200, Some("timeout")), "{v}");
    // A's answer is still A's: its pickup hands it over as new.
    let (st, v) = t.call("GET", "/v1/pending?new=true", &t.a, None).await;
    assert_eq!(st, 200, "{v}");
    assert!(
        v.to_string().contains("the secret answer"),
        "A lost its answer: {v}"
    );
}

/// A project-scoped token cannot tell another project's session from one
/// that does not exist, on any session route, by full id or by suffix.
async fn another_projects_session_and_a_missing_one_get_one_refusal(db: Db) {
    let t = Two::new(db).await;
    let theirs = "codex-7f3a9c2e51";
    let (st, v) = t
        .call(
            "POST",
            "/v1/sessions",
            &t.b,
            Some(json!({"session_id": theirs, "project": "pb"})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let mine = "claude-0b1d4e9a77";
    let (st, v) = t
        .call(
            "POST",
            "/v1/sessions",
            &t.a,
            Some(json!({"session_id": mine, "project": "pa"})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    // The same length as `theirs` and its suffix, so the texts can match.
    let missing = "codex-00000000ff";
    let routes = [
        ("GET", "/v1/sessions/{}", None),
        ("GET", "/v1/sessions/{}/resume", None),
        ("GET", "/v1/sessions/{}/wait?timeout=1s", None),
        ("GET", "/v1/sessions/{}/ledger", None),
        ("POST", "/v1/sessions/{}/end", Some(json!({}))),
        (
            "POST",
            "/v1/sessions/{}/checkpoint",
            Some(json!({"revision": 1, "state": "{}"})),
        ),
        (
            "POST",
            "/v1/sessions/{}/ledger",
            Some(json!({"event_id": "e1", "tool": "bash"})),
        ),
    ];
    for (method, path, body) in routes {
        let mut answers = Vec::new();
        for id in [
            theirs,
            missing,
            &theirs[theirs.len() - 6..],
            &missing[missing.len() - 6..],
        ] {
            let (st, v) = t
                .call(method, &path.replace("{}", id), &t.a, body.clone())
                .await;
            let text = v.to_string().replace(id, "<id>");
            answers.push((st, text));
        }
        assert_eq!(answers[0].0, 404, "{method} {path}: {answers:?}");
        assert!(
            answers.iter().all(|a| *a == answers[0]),
            "{method} {path} tells a foreign session from a missing one: {answers:?}"
        );
    }
    // Its own session still resolves by suffix.
    let (st, v) = t
        .call(
            "GET",
            &format!("/v1/sessions/{}", &mine[mine.len() - 6..]),
            &t.a,
            None,
        )
        .await;
    assert_eq!((st, v["session_id"].as_str()), (200, Some(mine)), "{v}");
}

/// A token's items name its own agent: another agent's name is refused as
/// `by` and `proposer` are.
async fn a_token_cannot_file_items_as_another_agent(db: Db) {
    let t = Two::new(db).await;
    let before = t.events().await;
    let writes = [
        (
            "POST",
            "/v1/questions",
            json!({"project": "pa", "agent": "agent-b", "title": "which database?"}),
        ),
        (
            "PUT",
            "/v1/boards",
            json!({"project": "pa", "agent": "agent-b", "title": "release"}),
        ),
        (
            "POST",
            "/v1/sessions",
            json!({"session_id": "s-1", "project": "pa", "agent": "agent-b"}),
        ),
    ];
    for (method, path, body) in writes {
        let (st, v) = t.call(method, path, &t.a, Some(body)).await;
        assert_eq!(st, 403, "{method} {path}: {v}");
        assert_eq!(v["reason"], "wrong_actor", "{v}");
    }
    assert_eq!(t.events().await, before);
    // Its own name, or none, is fine.
    let (st, v) = t
        .call(
            "POST",
            "/v1/questions",
            &t.a,
            Some(json!({"project": "pa", "agent": "agent-a", "title": "which database?"})),
        )
        .await;
    assert_eq!(st, 201, "{v}");
}

both_engines!(
    a_session_named_by_one_project_is_never_another_projects,
    a_write_naming_another_projects_session_is_refused,
    wait_and_resume_hand_a_session_only_its_own_projects_items,
    another_projects_session_and_a_missing_one_get_one_refusal,
    a_token_cannot_file_items_as_another_agent,
);
