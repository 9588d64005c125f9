//! One text rule at every door of the API, on both engines (through the
//! real `handoff serve`): a control character (U+0000 above all, which
//! PostgreSQL cannot store) or a bidirectional override in any text field,
//! nested argument, key, path segment or query parameter is refused with
//! 422 naming the field, and nothing is written; a path that is not UTF-8
//! gets the API's JSON refusal. Tab and newline stay allowed where a field
//! takes several lines.

mod common;

use std::path::Path;

use common::daemon::Daemon;
use common::engine::Db;
use serde_json::{Value, json};

/// A daemon on `db`, open on loopback (no token needed).
fn daemon(db: &Db, dir: &Path) -> Daemon {
    let cfg = dir.join("handoff.toml");
    std::fs::write(&cfg, "[http]\nopen = true\n").unwrap();
    match (db.path(), db.pg()) {
        (Some(file), _) => Daemon::start(file, &cfg),
        (_, Some(pg)) => Daemon::start(Path::new(&pg.url), &cfg),
        _ => unreachable!("a Db holds one of the two"),
    }
}

struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    /// `method path` with `body` (a JSON text, sent as is): status and JSON.
    async fn call(&self, method: &str, path: &str, body: Option<String>) -> (u16, Value, String) {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "GET" => self.http.get(url),
            "PUT" => self.http.put(url),
            _ => self.http.post(url),
        };
        let req = match body {
            Some(b) => req.header("content-type", "application/json").body(b),
            None => req,
        };
        let res = req.send().await.expect("the daemon answers");
        let status = res.status().as_u16();
        let ct = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = res.text().await.unwrap();
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, v, ct)
    }

    async fn ok(&self, method: &str, path: &str, body: Value) -> Value {
        let (status, v, _) = self.call(method, path, Some(body.to_string())).await;
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {v}"
        );
        v
    }

    async fn last_seq(&self) -> i64 {
        let (_, v, _) = self.call("GET", "/v1/events?tail=1", None).await;
        v["next_after"].as_i64().expect("a page of events")
    }
}

async fn every_door_refuses_control_and_bidi_characters(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(&db, dir.path());
    let api = Api {
        http: reqwest::Client::new(),
        base: format!("http://{}", d.addr),
    };
    // Items to write to, made with clean text.
    api.ok(
        "POST",
        "/v1/sessions",
        json!({"session_id": "s-text", "project": "p"}),
    )
    .await;
    let q = api
        .ok(
            "POST",
            "/v1/questions",
            json!({"title": "Clean?", "project": "p", "session": "s-text"}),
        )
        .await;
    let qid = q["question"]["id"].as_str().unwrap().to_string();
    let board = api
        .ok(
            "PUT",
            "/v1/boards",
            json!({"title": "Clean board", "project": "p", "rows": [{"label": "one", "status": "blocked"}]}),
        )
        .await;
    let bid = board["id"].as_str().unwrap().to_string();
    let before = api.last_seq().await;
    assert!(before > 0, "the seeds wrote events");

    let nul = "a\u{0}b";
    let rlo = "safe \u{202e}txt.exe";
    let cases: Vec<(&str, String, Option<Value>, &str, &str)> = vec![
        (
            "POST",
            "/v1/questions".into(),
            Some(json!({"title": nul})),
            "title",
            "U+0000",
        ),
        (
            "POST",
            "/v1/questions".into(),
            Some(json!({"title": "t", "detail": "x\u{1b}[31m"})),
            "detail",
            "U+001B",
        ),
        (
            "POST",
            "/v1/questions".into(),
            Some(json!({"title": "t", "session": nul})),
            "session",
            "U+0000",
        ),
        (
            "POST",
            "/v1/questions".into(),
            Some(json!({"title": "t", "context": nul})),
            "context",
            "U+0000",
        ),
        (
            "POST",
            "/v1/questions".into(),
            Some(json!({"title": rlo})),
            "title",
            "U+202E",
        ),
        (
            "POST",
            "/v1/questions".into(),
            Some(json!({"title": "t", "options": [{"label": "ok"}, {"label": "b\u{2066}d"}]})),
            "options[1].label",
            "U+2066",
        ),
        (
            "POST",
            "/v1/actions".into(),
            Some(json!({"kind": "deploy", "summary": "s", "args": {"to": {"env": ["ok", nul]}}})),
            "args.to.env[1]",
            "U+0000",
        ),
        (
            "POST",
            "/v1/actions".into(),
            Some(json!({"kind": "deploy", "summary": "s", "args": {"a\u{0}": 1}})),
            "a key of args",
            "U+0000",
        ),
        (
            "POST",
            "/v1/actions".into(),
            Some(json!({"kind": "deploy", "summary": rlo})),
            "summary",
            "U+202E",
        ),
        (
            "PUT",
            "/v1/boards".into(),
            Some(json!({"title": nul})),
            "title",
            "U+0000",
        ),
        (
            "PUT",
            "/v1/boards".into(),
            Some(
                json!({"title": "b", "rows": [{"label": "r", "status": "blocked", "next_step": rlo}]}),
            ),
            "rows[0].next_step",
            "U+202E",
        ),
        (
            "POST",
            format!("/v1/boards/{bid}/rows"),
            Some(json!({"label": "one", "status": "blocked", "next_step": nul})),
            "next_step",
            "U+0000",
        ),
        (
            "POST",
            "/v1/sessions/s-text/ledger".into(),
            Some(json!({"event_id": "e1", "tool": "t", "payload": {"cmd": nul}})),
            "payload.cmd",
            "U+0000",
        ),
        (
            "POST",
            "/v1/sessions/s-text/checkpoint".into(),
            Some(json!({"revision": 0, "state": nul})),
            "state",
            "U+0000",
        ),
        (
            "POST",
            format!("/v1/questions/{qid}/answer"),
            Some(json!({"text": nul})),
            "text",
            "U+0000",
        ),
        (
            "POST",
            format!("/v1/questions/{qid}/reply"),
            Some(json!({"text": "x\u{85}y"})),
            "text",
            "U+0085",
        ),
        (
            "POST",
            format!("/v1/questions/{qid}/resolve"),
            Some(json!({"outcome": nul})),
            "outcome",
            "U+0000",
        ),
        (
            "GET",
            "/v1/questions/abc%00def".into(),
            None,
            "id",
            "U+0000",
        ),
        (
            "POST",
            "/v1/questions/abc%00def/answer".into(),
            Some(json!({"text": "fine"})),
            "id",
            "U+0000",
        ),
        (
            "GET",
            "/v1/sessions/s%00x/wait?timeout=0".into(),
            None,
            "id",
            "U+0000",
        ),
        (
            "GET",
            "/v1/boards/b%E2%80%AEx".into(),
            None,
            "board",
            "U+202E",
        ),
        (
            "POST",
            format!("/v1/boards/{bid}/rows/o%09ne/annotate"),
            Some(json!({"text": "fine"})),
            "label",
            "U+0009",
        ),
        (
            "GET",
            "/v1/questions?session=s%00".into(),
            None,
            "query parameter session",
            "U+0000",
        ),
        (
            "GET",
            "/v1/actions?project=p%0A".into(),
            None,
            "query parameter project",
            "U+000A",
        ),
    ];
    // Every case is tried before failing, so a failure lists them all.
    let mut wrong = Vec::new();
    for (method, path, body, field, code) in cases {
        let (status, v, ct) = api
            .call(method, &path, body.as_ref().map(Value::to_string))
            .await;
        let msg = v["message"].as_str().unwrap_or_default();
        let right = status == 422
            && v["reason"] == "invalid"
            && ct.starts_with("application/json")
            && msg.starts_with(&format!("{field} contains "))
            && msg.contains(code);
        if !right {
            wrong.push(format!(
                "{method} {path} {body:?} (want 422 naming {field} and {code}): {status} {v}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} refused wrongly:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(api.last_seq().await, before, "nothing was written");

    // Not UTF-8 once percent-decoded: the API's JSON refusal, naming the
    // segment.
    for (path, field) in [
        ("/v1/questions/%FF%FE", "id"),
        ("/v1/boards/b/rows/%C3/handled", "label"),
    ] {
        let body = path.ends_with("handled").then(|| "{}".to_string());
        let method = if body.is_some() { "POST" } else { "GET" };
        let (status, v, ct) = api.call(method, path, body).await;
        assert_eq!(
            (status, v["reason"].as_str()),
            (400, Some("bad_path")),
            "{path}: {v}"
        );
        assert!(ct.starts_with("application/json"), "{path}: {ct}");
        assert!(v["message"].as_str().unwrap().starts_with(field), "{v}");
    }

    // Tabs and newlines stay where a field takes several lines, and plain
    // non-ASCII text (marks, not overrides) is stored as sent.
    let q = api
        .ok(
            "POST",
            "/v1/questions",
            json!({"title": "Café — ‘ok’ \u{200f}", "detail": "two\nlines\tand a tab", "context": "a\r\nb"}),
        )
        .await;
    assert_eq!(q["question"]["detail"], "two\nlines\tand a tab");
    assert_eq!(q["question"]["title"], "Café — ‘ok’ \u{200f}");
}

both_engines!(every_door_refuses_control_and_bidi_characters);
