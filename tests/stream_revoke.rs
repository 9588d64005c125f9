//! An open `/v1/events/stream` stops when its credential does: after its
//! token is revoked, or its web Inbox session logs out, the stream sends
//! one `event: end` saying why and closes, and delivers nothing after
//! (through the real `handoff serve`, revoked from another process).

mod common;

use std::time::Duration;

use common::TempDb;
use common::daemon::Daemon;

/// An SSE response read as text.
struct Sse {
    res: reqwest::Response,
    text: String,
}

impl Sse {
    async fn open(d: &Daemon, header: (&str, String)) -> Sse {
        let res = reqwest::Client::new()
            .get(format!("http://{}/v1/events/stream", d.addr))
            .header(header.0, header.1)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
        Sse {
            res,
            text: String::new(),
        }
    }

    /// Read until `text` appears.
    async fn until(&mut self, text: &str) {
        while !self.text.contains(text) {
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.res.chunk())
                .await
                .unwrap_or_else(|_| panic!("stream stalled before {text:?}: {}", self.text))
                .unwrap()
                .unwrap_or_else(|| panic!("stream ended before {text:?}: {}", self.text));
            self.text.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Read until the server closes the stream; everything it sent.
    async fn rest(mut self) -> String {
        let read = async {
            while let Ok(Some(chunk)) = self.res.chunk().await {
                self.text.push_str(&String::from_utf8_lossy(&chunk));
            }
        };
        if tokio::time::timeout(Duration::from_secs(30), read)
            .await
            .is_err()
        {
            panic!("the stream never ended: {}", self.text);
        }
        self.text
    }
}

fn ask(db: &TempDb, title: &str) {
    let out = db.cli(&["ask", title]);
    assert!(out.status.success(), "{}", common::stderr(&out));
}

#[tokio::test]
async fn a_revoked_token_ends_its_stream() {
    let db = TempDb::new();
    db.open().await.close().await;
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let d = Daemon::start(&db.path, &cfg);
    let out = db.cli(&[
        "--json", "token", "create", "--name", "watcher", "--role", "admin",
    ]);
    let token = common::json(&out)["secret"].as_str().unwrap().to_string();
    let mut sse = Sse::open(&d, ("authorization", format!("Bearer {token}"))).await;
    ask(&db, "Before revoke");
    sse.until("Before revoke").await;

    let out = db.cli(&["token", "revoke", "watcher"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    ask(&db, "After revoke");
    let rest = sse.rest().await;
    assert!(rest.contains("event: end"), "{rest}");
    assert!(
        rest.contains("credential_revoked") && rest.contains("token create"),
        "{rest}"
    );
    assert!(
        !rest.contains("After revoke"),
        "delivered after revoke: {rest}"
    );
}

#[tokio::test]
async fn logging_out_of_the_inbox_ends_its_stream() {
    let db = TempDb::new();
    db.open().await.close().await;
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let d = Daemon::start(&db.path, &cfg);
    let out = db.cli(&["--json", "inbox-link", "--as", "alice"]);
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
    let set = res.headers()["set-cookie"].to_str().unwrap();
    let cookie = set.split(';').next().unwrap().to_string();
    let mut sse = Sse::open(&d, ("cookie", cookie.clone())).await;
    ask(&db, "Before logout");
    sse.until("Before logout").await;

    let res = http
        .post(format!("http://{}/inbox/logout", d.addr))
        .header("cookie", cookie)
        .header("origin", format!("http://{}", d.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    ask(&db, "After logout");
    let rest = sse.rest().await;
    assert!(rest.contains("event: end"), "{rest}");
    assert!(rest.contains("inbox-link"), "{rest}");
    assert!(
        !rest.contains("After logout"),
        "delivered after logout: {rest}"
    );
}
