//! Response headers a browser relies on: every `/v1` response says
//! `X-Content-Type-Options: nosniff`, and the Inbox cookie is `Secure`
//! when the daemon is reached over HTTPS (`[http] public_url`), through
//! the real `handoff serve`.

mod common;

use common::TempDb;
use common::daemon::Daemon;

fn daemon(db: &TempDb, http: &str) -> Daemon {
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, format!("[http]\nopen = true\n{http}")).unwrap();
    Daemon::start(&db.path, &cfg)
}

/// Log in through a fresh one-time link; the Set-Cookie header.
async fn login_cookie(db: &TempDb, d: &Daemon) -> String {
    let out = db.cli(&["--json", "inbox-link", "--as", "alice"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let url = common::json(&out)["inbox_link"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let code = url.split("code=").nth(1).unwrap().to_string();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = http
        .post(format!("http://{}/inbox/login", d.addr))
        .form(&[("code", code)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    res.headers()["set-cookie"].to_str().unwrap().to_string()
}

#[tokio::test]
async fn api_responses_say_nosniff() {
    let db = TempDb::new();
    db.open().await.close().await;
    let d = daemon(&db, "");
    let http = reqwest::Client::new();
    let base = format!("http://{}", d.addr);
    let requests = [
        http.get(format!("{base}/v1/questions")),
        http.get(format!("{base}/v1/nothing")),
        http.get(format!("{base}/v1/questions/nope")),
        http.post(format!("{base}/v1/questions"))
            .header("content-type", "application/json")
            .body("[1]"),
        http.get(format!("{base}/v1/openapi.json")),
        http.get(format!("{base}/healthz")),
        http.get(format!("{base}/metrics")),
    ];
    for req in requests {
        let res = req.send().await.unwrap();
        let what = format!("{} {}", res.url(), res.status());
        assert_eq!(
            res.headers()
                .get("x-content-type-options")
                .map(|v| v.to_str().unwrap()),
            Some("nosniff"),
            "{what}"
        );
    }
    let plain = login_cookie(&db, &d).await;
    assert!(plain.contains("HttpOnly"), "{plain}");
    assert!(!plain.contains("Secure"), "plain HTTP: no Secure: {plain}");
}

#[tokio::test]
async fn the_inbox_cookie_is_secure_behind_https() {
    let db = TempDb::new();
    db.open().await.close().await;
    let d = daemon(&db, "public_url = \"https://handoff.example.com\"\n");
    let cookie = login_cookie(&db, &d).await;
    assert!(
        cookie.contains("; Secure") && cookie.contains("HttpOnly"),
        "{cookie}"
    );
}

#[test]
fn a_public_url_that_is_not_http_is_refused_with_what_to_write() {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\npublic_url = \"handoff.example.com\"\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["serve", "--config"])
        .arg(&cfg)
        .args(["--listen", "127.0.0.1:0"])
        .env("HANDOFF_DB", &db.path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = common::stderr(&out);
    assert!(
        err.contains("public_url") && err.contains("https://"),
        "{err}"
    );
}
