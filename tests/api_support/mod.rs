//! Helpers for the HTTP API tests: an in-process router over a real temp
//! store (`oneshot` requests, no socket), tokens, fixtures.
#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use handoff::config::Config;
use handoff::shared::Shared;
use handoff::store::Store;
use handoff::store::tokens::Role;

use crate::common::TempDb;

/// A router over a fresh database.
pub struct Api {
    pub db: TempDb,
    pub store: Store,
    pub shared: Shared,
    pub app: Router,
}

impl Api {
    pub async fn new() -> Api {
        Self::with_config(Config::default()).await
    }

    pub async fn with_config(cfg: Config) -> Api {
        let db = TempDb::new();
        let store = db.open().await;
        let shared = Shared::new(
            store.clone(),
            cfg,
            tokio_util::sync::CancellationToken::new(),
        );
        let app = handoff::api::router(shared.clone());
        Api {
            db,
            store,
            shared,
            app,
        }
    }

    /// Run the waiter follower and the database watcher (what the daemon
    /// does), so long polls and streams are woken by events, also by those
    /// written through another store handle.
    pub fn follow(&self) {
        let s = self.shared.clone();
        tokio::spawn(handoff::follow::watch(
            s.store.clone(),
            s.nudge.clone(),
            s.shutdown.clone(),
        ));
        tokio::spawn(async move {
            let start = s.store.last_event_seq().await.unwrap();
            handoff::follow::follow(
                s.store.clone(),
                start,
                &s.nudge,
                s.shutdown.clone(),
                s.waiters.clone(),
            )
            .await;
        });
    }

    /// A new token's secret.
    pub async fn token(&self, name: &str, role: Role, project: Option<&str>) -> String {
        self.store
            .token_create(name, role, project)
            .await
            .expect("create token")
            .secret
    }

    /// Send a request; returns the status and the body parsed as JSON
    /// (`Value::Null` for an empty body, a string for non-JSON text).
    pub async fn call(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        }
        .unwrap();
        self.send(req).await
    }

    /// Send a prepared request.
    pub async fn send(&self, req: Request<Body>) -> (StatusCode, Value) {
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        (status, v)
    }

    /// Number of events in the log (the "nothing changed" check).
    pub async fn events(&self) -> i64 {
        self.store.count_rows("events").await.unwrap()
    }
}

/// Ids of the items [`fixture`] creates in project `p`.
pub struct Fixture {
    pub question: String,
    pub board: String,
    pub pending_action: String,
    pub approved_action: String,
    pub session: String,
    /// A live "for this session" grant of `Bash(npm test:*)`.
    pub grant: String,
}

/// A question (with an Inbox reply waiting), a board with a blocked row
/// `r1`, a pending and an approved action, and a session, all in project `p`.
pub async fn fixture(api: &Api) -> Fixture {
    let admin = api.token("fixture-admin", Role::Admin, None).await;
    let call = |m: &'static str, u: String, b: Value| {
        let admin = admin.clone();
        async move {
            let (st, v) = api.call(m, &u, Some(&admin), Some(b)).await;
            assert!(st.is_success(), "{m} {u}: {st} {v}");
            v
        }
    };
    let q = call(
        "POST",
        "/v1/questions".into(),
        json!({"project": "p", "session": "s1", "title": "Which DB?"}),
    )
    .await;
    let question = q["question"]["id"].as_str().unwrap().to_string();
    call(
        "POST",
        format!("/v1/questions/{question}/reply"),
        json!({"text": "postgres"}),
    )
    .await;
    let b = call(
        "PUT",
        "/v1/boards".into(),
        json!({"project": "p", "title": "Launch", "session": "s1",
               "rows": [{"label": "r1", "status": "blocked", "next_step": "create the account"}]}),
    )
    .await;
    let board = b["id"].as_str().unwrap().to_string();
    let a = call(
        "POST",
        "/v1/actions".into(),
        json!({"kind": "email.send", "summary": "send it", "args": {"to": "a@b.c", "token": "s3cret"}, "project": "p"}),
    )
    .await;
    let pending_action = a["action"]["id"].as_str().unwrap().to_string();
    let a = call(
        "POST",
        "/v1/actions".into(),
        json!({"kind": "deploy", "summary": "deploy v1", "args": {"v": 1}, "project": "p"}),
    )
    .await;
    let approved_action = a["action"]["id"].as_str().unwrap().to_string();
    call(
        "POST",
        format!("/v1/actions/{approved_action}/approve"),
        json!({}),
    )
    .await;
    call(
        "POST",
        "/v1/sessions".into(),
        json!({"session_id": "s1", "agent": "claude", "project": "p"}),
    )
    .await;
    // A live grant, saved through the store without its prompt (no FK: a
    // purge of old actions keeps grants), so the action lists stay as they were.
    let grant = api
        .store
        .grant_create(
            &handoff::store::grants::NewGrant {
                scope: handoff::store::grants::Scope::Session,
                agent: "claude",
                session: "s1",
                project: "p",
                tool: "Bash",
                pattern: "npm test:*",
                action_id: "fixture-prompt",
                by: "fixture-admin",
                expires_at: None,
                path: "",
            },
            handoff::store::Channel::Chat,
        )
        .await
        .unwrap();
    assert!(api.store.grant_confirm(&grant.id).await.unwrap());
    Fixture {
        grant: grant.id,
        question,
        board,
        pending_action,
        approved_action,
        session: "s1".into(),
    }
}

/// A request for every route: the URI (placeholders filled from `fx`) and
/// a valid body for project `p`.
pub fn sample(method: &str, path: &str, fx: &Fixture) -> (String, Option<Value>) {
    let id = if path.starts_with("/v1/questions/") {
        fx.question.as_str()
    } else if path.starts_with("/v1/actions/{id}/claim")
        || path.starts_with("/v1/actions/{id}/extend")
        || path.starts_with("/v1/actions/{id}/complete")
    {
        fx.approved_action.as_str()
    } else if path.starts_with("/v1/actions/") {
        fx.pending_action.as_str()
    } else if path.starts_with("/v1/grants/") {
        fx.grant.as_str()
    } else {
        fx.session.as_str()
    };
    let mut uri = path
        .replace("{id}", id)
        .replace("{board}", &fx.board)
        .replace("{label}", "r1");
    if path.ends_with("/wait") {
        // A long poll: don't hold the matrix up.
        uri.push_str("?timeout=1ms");
    }
    let body = match (method, path) {
        ("POST", p) if p.starts_with("/v1/ledger/") => json!({"ok": true}),
        ("POST", "/v1/questions") => json!({"project": "p", "title": "Another?"}),
        ("POST", p) if p.ends_with("/answer") => json!({"text": "from my terminal"}),
        ("POST", p) if p.ends_with("/resolve") => json!({"outcome": "done"}),
        ("POST", p) if p.ends_with("/reply") => json!({"text": "mysql"}),
        ("POST", p) if p.ends_with("/dismiss") => json!({"reason": "no longer needed"}),
        ("PUT", "/v1/boards") => json!({"project": "p", "title": "Other board"}),
        ("POST", p) if p.ends_with("/rows") => json!({"row": {"label": "r2"}}),
        ("POST", p) if p.ends_with("/advance") => {
            json!({"label": "r1", "expected_revision": 1, "board_version": 1, "next": {"next_step": "then this"}})
        }
        ("POST", p) if p.ends_with("/outcome") => {
            json!({"label": "r1", "expected_revision": 1, "outcome": "done"})
        }
        ("POST", p) if p.ends_with("/annotate") => json!({"text": "use the team account"}),
        ("POST", p) if p.ends_with("/handled") => json!({}),
        ("POST", "/v1/actions") => json!({"kind": "x", "summary": "y", "project": "p"}),
        ("POST", p) if p.ends_with("/claim") || p.ends_with("/extend") => {
            json!({"owner": "exec-1"})
        }
        ("POST", p) if p.ends_with("/complete") => json!({"owner": "exec-1", "success": true}),
        ("POST", p) if p.ends_with("/approve") => json!({}),
        ("POST", p) if p.ends_with("/grant") => json!({}),
        ("POST", p) if p.ends_with("/revoke") => json!({}),
        ("POST", p) if p.ends_with("/reject") => json!({"reason": "no"}),
        ("POST", p) if p.ends_with("/resolve-unknown") => json!({"resolution": "failed"}),
        ("POST", "/v1/sessions") => json!({"session_id": "s1", "project": "p"}),
        ("POST", p) if p.ends_with("/pickup") => json!({"reply_seq": 1}),
        ("POST", p) if p.ends_with("/snooze") => json!({"for": "1h"}),
        ("POST", p) if p.ends_with("/archive") => json!({"board_version": 1}),
        ("POST", "/v1/actions/expire") => json!({"project": "p"}),
        ("POST", p) if p.ends_with("/checkpoint") => json!({"revision": 1, "state": "{}"}),
        ("POST", p) if p.ends_with("/end") => json!({}),
        ("POST", p) if p.ends_with("/ledger") => {
            json!({"event_id": "e1", "tool": "t", "payload": {}})
        }
        ("GET", _) => return (uri, None),
        other => panic!("no sample body for {other:?}: add one"),
    };
    (uri, Some(body))
}
