//! The web Inbox without a browser: login links (single use, expiry, a race
//! between two visits), the session cookie's flags, the cookie as a
//! human-role credential on `/v1` (reads and human writes yes, agent routes
//! no), the Origin rule for cookie writes, logout, the login page, and
//! `handoff inbox-link`. In process (router + `oneshot`) except one test
//! against a real `handoff serve` with reqwest.

mod api_support;
mod common;

use api_support::Api;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use handoff::config::Config;
use handoff::store::inbox_sessions::{Login, SESSION_TTL_MS};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const HOST: &str = "127.0.0.1:8642";
const ORIGIN: &str = "http://127.0.0.1:8642";

/// A raw response: status, headers, body text.
struct Raw {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

async fn send(api: &Api, req: Request<Body>) -> Raw {
    let resp = api.app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    Raw {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

async fn get(api: &Api, uri: &str, cookie: Option<&str>) -> Raw {
    let mut r = Request::get(uri).header(header::HOST, HOST);
    if let Some(c) = cookie {
        r = r.header(header::COOKIE, format!("handoff_inbox={c}"));
    }
    send(api, r.body(Body::empty()).unwrap()).await
}

/// A JSON POST carrying the session cookie and, when given, an Origin.
async fn post(api: &Api, uri: &str, cookie: &str, origin: Option<&str>, body: Value) -> Raw {
    let mut r = Request::post(uri)
        .header(header::HOST, HOST)
        .header(header::COOKIE, format!("handoff_inbox={cookie}"))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(o) = origin {
        r = r.header(header::ORIGIN, o);
    }
    send(api, r.body(Body::from(body.to_string())).unwrap()).await
}

/// The login page's form, posted: `code=…`, with `origin` when given.
async fn post_login(api: &Api, code: &str, origin: Option<&str>) -> Raw {
    let mut r = Request::post("/inbox/login")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(o) = origin {
        r = r.header(header::ORIGIN, o);
    }
    send(api, r.body(Body::from(format!("code={code}"))).unwrap()).await
}

/// The `handoff_inbox` Set-Cookie header of a response.
fn set_cookie(r: &Raw) -> Option<String> {
    r.headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("handoff_inbox="))
        .map(str::to_string)
}

/// Log in as `name` through the login route; returns the cookie value.
async fn login(api: &Api, name: &str) -> String {
    let link = api.store.inbox_link_create(name, 600_000).await.unwrap();
    let r = post_login(api, &link.code, Some(ORIGIN)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let c = set_cookie(&r).expect("a session cookie");
    c["handoff_inbox=".len()..]
        .split(';')
        .next()
        .unwrap()
        .to_string()
}

/// A question flagged by an agent token in project `p`.
async fn question(api: &Api) -> String {
    let agent = api
        .token("agent", handoff::store::tokens::Role::Agent, None)
        .await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/questions",
            Some(&agent),
            Some(json!({"project": "p", "title": "Which DB?"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    v["question"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_login_link_works_once_and_sets_a_strict_http_only_cookie() {
    let api = Api::new().await;
    let link = api.store.inbox_link_create("alice", 600_000).await.unwrap();
    // Opening the link (as a chat app's preview would) shows one button and
    // spends nothing: no cookie, no session, no event.
    let events = api.events().await;
    for _ in 0..2 {
        let page = get(&api, &format!("/inbox/login?code={}", link.code), None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        assert!(
            page.body.contains(r#"action="login""#)
                && page.body.contains(&format!(r#"value="{}""#, link.code)),
            "{}",
            page.body
        );
        assert!(set_cookie(&page).is_none());
    }
    assert_eq!(common::count(&api.store, "inbox_sessions").await, 0);
    assert_eq!(api.events().await, events);
    // A form posted from another site is refused and spends nothing either.
    let foreign = post_login(&api, &link.code, Some("https://evil.example")).await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.body);
    assert!(foreign.body.contains("another site"), "{}", foreign.body);
    assert!(set_cookie(&foreign).is_none());
    assert_eq!(common::count(&api.store, "inbox_sessions").await, 0);

    // The button: the page is served with no-referrer, so its own form
    // arrives with `Origin: null`.
    let r = post_login(&api, &link.code, Some("null")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.headers[header::LOCATION], "/");
    let cookie = set_cookie(&r).expect("Set-Cookie");
    for flag in [
        "HttpOnly",
        "SameSite=Strict",
        "Path=/",
        // A browser session lasts 7 days.
        "Max-Age=604800",
    ] {
        assert!(
            cookie.split("; ").any(|f| f == flag),
            "{flag} missing: {cookie}"
        );
    }
    // The code is not the cookie, and neither is stored in the clear.
    assert!(!cookie.contains(&link.code));
    let pool = common::raw_pool(&api.db.path).await;
    let hashes: Vec<String> = sqlx::query_scalar(
        "SELECT hash FROM inbox_login_codes UNION ALL SELECT hash FROM inbox_sessions",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(hashes.len(), 2);
    assert!(
        hashes
            .iter()
            .all(|h| h != &link.code && !cookie.contains(h.as_str()))
    );

    // Second visit: refused, no cookie, no new session.
    let events = api.events().await;
    let again = post_login(&api, &link.code, None).await;
    assert_eq!(again.status, StatusCode::GONE);
    assert!(again.body.contains("used already"), "{}", again.body);
    assert!(set_cookie(&again).is_none());
    assert_eq!(common::count(&api.store, "inbox_sessions").await, 1);
    assert_eq!(api.events().await, events);

    let unknown = post_login(&api, &"0".repeat(64), Some(ORIGIN)).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.body.contains("not one this Inbox issued"));
    // A code that is not hex never reaches the page's HTML, or the store.
    let junk = get(&api, "/inbox/login?code=%22%3E%3Cscript%3E", None).await;
    assert_eq!(junk.status, StatusCode::NOT_FOUND);
    assert!(!junk.body.contains("<script>"), "{}", junk.body);
    let junk = post_login(&api, "%27%20OR%201=1", Some(ORIGIN)).await;
    assert_eq!(junk.status, StatusCode::NOT_FOUND);
    let none = get(&api, "/inbox/login", None).await;
    assert_eq!(none.status, StatusCode::BAD_REQUEST);
    let blank = post_login(&api, "", Some(ORIGIN)).await;
    assert_eq!(blank.status, StatusCode::BAD_REQUEST);
    assert!(blank.body.contains("no code in it"), "{}", blank.body);
    for r in [&unknown, &junk, &none, &blank] {
        assert!(set_cookie(r).is_none());
    }
}

#[tokio::test]
async fn a_login_code_expires_at_its_ttl_to_the_millisecond() {
    let db = common::TempDb::new();
    let (store, clock) = db.open_manual(1_000_000).await;
    let early = store.inbox_link_create("a", 10_000).await.unwrap();
    let late = store.inbox_link_create("b", 10_000).await.unwrap();
    clock.set(1_000_000 + 9_999);
    let ok = store
        .inbox_login(&early.code, SESSION_TTL_MS)
        .await
        .unwrap();
    let Login::Opened { session, secret } = ok else {
        panic!("one ms before expiry the code works: {ok:?}")
    };
    assert_eq!(session.name, "a");
    assert_eq!(session.expires_at, 1_009_999 + SESSION_TTL_MS);
    clock.set(1_000_000 + 10_000);
    let events = common::count(&store, "events").await;
    let refused = store.inbox_login(&late.code, SESSION_TTL_MS).await.unwrap();
    assert!(matches!(refused, Login::Expired), "{refused:?}");
    assert_eq!(common::count(&store, "events").await, events);
    assert_eq!(common::count(&store, "inbox_sessions").await, 1);

    // The session itself ends at its own expiry.
    assert!(store.inbox_session_verify(&secret).await.unwrap().is_some());
    clock.set(1_009_999 + SESSION_TTL_MS);
    assert!(store.inbox_session_verify(&secret).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_visits_racing_on_one_link_open_exactly_one_session() {
    let db = common::TempDb::new();
    let one = db.open().await;
    let two = db.open().await;
    for _ in 0..10 {
        let link = one.inbox_link_create("racer", 600_000).await.unwrap();
        let (a, b) = tokio::join!(
            one.inbox_login(&link.code, SESSION_TTL_MS),
            two.inbox_login(&link.code, SESSION_TTL_MS)
        );
        let opened = [a.unwrap(), b.unwrap()]
            .iter()
            .filter(|l| matches!(l, Login::Opened { .. }))
            .count();
        assert_eq!(opened, 1);
    }
    assert_eq!(common::count(&one, "inbox_sessions").await, 10);
}

#[tokio::test]
async fn the_page_without_a_session_explains_how_to_log_in() {
    let api = Api::new().await;
    let r = get(&api, "/", None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("handoff inbox-link"), "{}", r.body);
    assert!(!r.body.contains("app.js"));
    let bad = get(&api, "/", Some(&"ab".repeat(32))).await;
    assert!(bad.body.contains("handoff inbox-link"));
    assert!(
        set_cookie(&bad).is_some_and(|c| c.contains("Max-Age=0")),
        "a dead cookie is cleared"
    );

    let cookie = login(&api, "alice").await;
    let page = get(&api, "/", Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("/inbox/app.js"));
    let csp = page.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe"),
        "{csp}"
    );
    assert_eq!(page.headers[header::X_FRAME_OPTIONS], "DENY");
    assert_eq!(page.headers[header::REFERRER_POLICY], "no-referrer");

    // Vendored assets only: nothing from the internet.
    for (path, ty) in [
        ("/inbox/app.js", "text/javascript"),
        ("/inbox/app.css", "text/css"),
    ] {
        let a = get(&api, path, None).await;
        assert_eq!(a.status, StatusCode::OK);
        assert!(
            a.headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with(ty)
        );
        assert!(
            !a.body.contains("http://") && !a.body.contains("https://"),
            "{path}"
        );
    }
    // The script never parses data as HTML.
    let js = get(&api, "/inbox/app.js", None).await.body;
    assert!(!js.contains("innerHTML") && !js.contains("insertAdjacentHTML"));

    let me = get(&api, "/inbox/me", Some(&cookie)).await;
    assert_eq!(me.json()["name"], "alice");
    assert_eq!(
        get(&api, "/inbox/me", None).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn without_a_valid_cookie_human_routes_are_401_and_nothing_changes() {
    let api = Api::new().await;
    let id = question(&api).await;
    let events = api.events().await;
    let dead = "cd".repeat(32);
    for cookie in [None, Some(dead.as_str()), Some("not-even-hex")] {
        let r = get(&api, "/v1/questions?status=open", cookie).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{cookie:?}");
    }
    for cookie in [dead.as_str(), "not-even-hex"] {
        let r = post(
            &api,
            &format!("/v1/questions/{id}/reply"),
            cookie,
            Some(ORIGIN),
            json!({"text": "x"}),
        )
        .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
        assert!(r.json()["message"].as_str().unwrap().contains("inbox-link"));
    }
    let (st, _) = api
        .call(
            "POST",
            &format!("/v1/questions/{id}/reply"),
            None,
            Some(json!({"text": "x"})),
        )
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert_eq!(api.events().await, events);
    assert!(
        api.store
            .get_question(&id)
            .await
            .unwrap()
            .unwrap()
            .reply
            .is_none()
    );
}

#[tokio::test]
async fn a_cross_site_post_with_a_valid_cookie_is_403_and_a_same_origin_one_works() {
    let api = Api::new().await;
    let id = question(&api).await;
    let cookie = login(&api, "alice").await;
    let uri = format!("/v1/questions/{id}/reply");
    let events = api.events().await;
    for origin in [
        Some("https://evil.example"),
        Some("http://127.0.0.1:9999"),
        Some("null"),
        None,
    ] {
        let r = post(&api, &uri, &cookie, origin, json!({"text": "evil"})).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{origin:?}: {}", r.body);
        assert_eq!(r.json()["reason"], "cross_site");
    }
    assert_eq!(api.events().await, events, "nothing changed");
    assert!(
        api.store
            .get_question(&id)
            .await
            .unwrap()
            .unwrap()
            .reply
            .is_none()
    );

    let r = post(
        &api,
        &uri,
        &cookie,
        Some(ORIGIN),
        json!({"text": "postgres"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let q = api.store.get_question(&id).await.unwrap().unwrap();
    let reply = q.reply.unwrap();
    assert_eq!(reply.text, "postgres");
    assert_eq!(
        serde_json::to_value(reply.source).unwrap(),
        json!("inbox"),
        "the Inbox channel"
    );
    assert_eq!(reply.by, "alice", "the session's name is the actor");

    // A cookie cannot speak for someone else.
    let r = post(
        &api,
        &format!("/v1/questions/{id}/dismiss"),
        &cookie,
        Some(ORIGIN),
        json!({"by": "mallory"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(r.body.contains("wrong_actor"), "{}", r.body);
}

#[tokio::test]
async fn the_cookie_cannot_use_agent_routes() {
    let api = Api::new().await;
    let id = question(&api).await;
    let cookie = login(&api, "alice").await;
    let events = api.events().await;
    let attempts = [
        ("/v1/questions", json!({"project": "p", "title": "sneaky"})),
        (
            &*format!("/v1/questions/{id}/answer"),
            json!({"text": "as the agent"}),
        ),
        (
            &*format!("/v1/questions/{id}/resolve"),
            json!({"outcome": "done"}),
        ),
        ("/v1/actions", json!({"kind": "x", "summary": "y"})),
    ];
    for (uri, body) in attempts {
        let r = post(&api, uri, &cookie, Some(ORIGIN), body).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{uri}: {}", r.body);
        assert_eq!(r.json()["reason"], "wrong_role");
    }
    let r = get(&api, "/v1/pending", Some(&cookie)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(api.events().await, events);
    // Reads are allowed.
    let r = get(&api, "/v1/questions?status=open", Some(&cookie)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json().as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn logout_ends_the_session_and_needs_the_same_origin() {
    let api = Api::new().await;
    let cookie = login(&api, "alice").await;
    let cross = post(
        &api,
        "/inbox/logout",
        &cookie,
        Some("https://evil.example"),
        json!({}),
    )
    .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN);
    assert_eq!(
        get(&api, "/inbox/me", Some(&cookie)).await.status,
        StatusCode::OK
    );
    let out = post(&api, "/inbox/logout", &cookie, Some(ORIGIN), json!({})).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(set_cookie(&out).is_some_and(|c| c.contains("Max-Age=0")));
    assert_eq!(
        get(&api, "/v1/questions", Some(&cookie)).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn an_open_daemon_refuses_cross_site_posts_without_credentials() {
    let mut cfg = Config::default();
    cfg.http.open = true;
    let api = Api::with_config(cfg).await;
    let req = |origin: Option<&str>| {
        let mut r = Request::post("/v1/questions")
            .header(header::HOST, HOST)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(o) = origin {
            r = r.header(header::ORIGIN, o);
        }
        r.body(Body::from(
            json!({"project": "p", "title": "Q?"}).to_string(),
        ))
        .unwrap()
    };
    let r = send(&api, req(Some("https://evil.example"))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(common::count(&api.store, "questions").await, 0);
    // Tools without an Origin (curl, the CLI) and the daemon's own page work.
    assert_eq!(send(&api, req(None)).await.status, StatusCode::CREATED);
    assert_eq!(
        send(&api, req(Some(ORIGIN))).await.status,
        StatusCode::CREATED
    );
}

#[test]
fn inbox_link_prints_a_one_time_url_and_refuses_bad_input_writing_nothing() {
    let db = common::TempDb::new();
    let out = db.cli(&[
        "--json",
        "inbox-link",
        "--url",
        "http://127.0.0.1:9000/",
        "--as",
        "bob",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v = common::json(&out);
    let url = v["inbox_link"]["url"].as_str().unwrap();
    let code = url
        .strip_prefix("http://127.0.0.1:9000/inbox/login?code=")
        .unwrap_or_else(|| panic!("{url}"));
    assert_eq!(code.len(), 64);
    assert_eq!(v["inbox_link"]["name"], "bob");
    let text = db.cli(&["inbox-link"]);
    let text = common::stdout(&text);
    assert!(
        text.starts_with("http://127.0.0.1:8642/inbox/login?code="),
        "{text}"
    );
    assert!(text.contains("as `inbox`"), "default name: {text}");

    for args in [
        &["inbox-link", "--url", "127.0.0.1:8642"][..],
        &["inbox-link", "--url", "ftp://x"],
        &["inbox-link", "--ttl", "soon"],
        &["inbox-link", "--ttl", "0s"],
        &["inbox-link", "--ttl", "30d"],
        &["inbox-link", "--as", ""],
    ] {
        let o = db.cli(args);
        assert!(!o.status.success(), "{args:?} should fail");
        let err = common::stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: one clear line: {err}");
    }
    let pool_count = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["--json", "events"])
        .env("HANDOFF_DB", &db.path)
        .output()
        .unwrap();
    let created = common::json(&pool_count)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "inbox.link_created")
        .count();
    assert_eq!(created, 2, "refused commands wrote nothing");
}

/// Against a real `handoff serve` that needs tokens: log in with the link
/// over HTTP, then reply with the cookie (same origin) and fail cross-site.
#[tokio::test]
async fn a_real_daemon_takes_the_cookie_from_its_own_login_link() {
    let db = common::TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\n").unwrap();
    let daemon = common::daemon::Daemon::start(&db.path, &cfg);
    let base = format!("http://{}", daemon.addr);
    let q = common::json(&db.cli(&["--json", "ask", "Ship it?", "--project", "p"]));
    let id = q["question"]["id"].as_str().unwrap().to_string();
    let link = common::json(&db.cli(&["--json", "inbox-link", "--url", &base, "--as", "carol"]));

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = link["inbox_link"]["url"].as_str().unwrap();
    let page = http.get(url).send().await.unwrap();
    assert_eq!(page.status(), reqwest::StatusCode::OK);
    assert!(page.headers().get("set-cookie").is_none());
    let code = url.split_once("code=").unwrap().1;
    let r = http
        .post(format!("{base}/inbox/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("code={code}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap().to_string();

    let reply = |origin: &str| {
        http.post(format!("{base}/v1/questions/{id}/reply"))
            .header("cookie", &cookie)
            .header("origin", origin)
            .json(&json!({"text": "yes"}))
            .send()
    };
    let r = reply("https://evil.example").await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::FORBIDDEN);
    let shown = common::json(&db.cli(&["--json", "show", &id]));
    assert_eq!(shown["question"]["reply"], Value::Null, "nothing changed");
    let r = reply(&base).await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    let shown = common::json(&db.cli(&["--json", "show", &id]));
    assert_eq!(shown["question"]["reply"]["source"], "inbox");
    assert_eq!(shown["question"]["reply"]["by"], "carol");
    drop(daemon);
}

#[tokio::test]
async fn a_login_link_may_last_at_most_seven_days() {
    let db = common::TempDb::new();
    let store = db.open().await;
    let week = 7 * 24 * 3600 * 1000;
    let link = store
        .inbox_link_create("alice", week)
        .await
        .expect("7 days is allowed");
    assert_eq!(link.expires_at, link.created_at + week);
    for bad in [week + 1, 0, -1] {
        let e = store.inbox_link_create("alice", bad).await.unwrap_err();
        assert!(e.to_string().contains("at most 7 days"), "{bad}: {e}");
    }
}

#[tokio::test]
async fn a_login_link_names_one_to_64_printable_characters() {
    let db = common::TempDb::new();
    let store = db.open().await;
    for good in ["a".repeat(64), "я".repeat(64)] {
        store
            .inbox_link_create(&good, 600_000)
            .await
            .expect("64 characters is allowed");
    }
    for bad in [
        "a".repeat(65),
        "  ".into(),
        "ann\nlee".into(),
        "tab\there".into(),
    ] {
        let e = store.inbox_link_create(&bad, 600_000).await.unwrap_err();
        assert!(
            e.to_string().contains("1 to 64 printable characters"),
            "{bad:?}: {e}"
        );
    }
}
