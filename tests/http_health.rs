//! `/healthz` through the real `handoff serve`: without a credential it
//! says only that the daemon is up and an opaque id of it; a valid token,
//! the owner-only socket or an open loopback daemon get where it runs,
//! its database and its jobs. `handoff status` still tells a daemon that
//! serves its database from one that serves another file.

mod common;

use common::TempDb;
use common::daemon::Daemon;
use serde_json::Value;

async fn health(addr: &str, token: Option<&str>) -> Value {
    let mut req = reqwest::Client::new().get(format!("http://{addr}/healthz"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.expect("healthz answers");
    assert_eq!(res.status(), 200);
    res.json().await.expect("healthz JSON")
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[tokio::test]
async fn healthz_tells_a_caller_without_a_token_only_that_it_is_up() {
    let db = TempDb::new();
    let out = db.cli(&[
        "--json", "token", "create", "--name", "me", "--role", "agent",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let token = common::json(&out)["secret"].as_str().unwrap().to_string();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let d = Daemon::start(&db.path, &cfg);

    let bare = health(&d.addr, None).await;
    assert_eq!(keys(&bare), ["daemon", "ok"], "{bare}");
    assert_eq!(bare["ok"], true);
    let bad = health(&d.addr, Some("hnd_not-a-real-token")).await;
    assert_eq!(keys(&bad), ["daemon", "ok"], "{bad}");

    let full = health(&d.addr, Some(&token)).await;
    assert_eq!(
        keys(&full),
        ["daemon", "database", "instance", "last_seq", "ok", "roles"],
        "{full}"
    );
    assert_eq!(full["daemon"], bare["daemon"], "one daemon, one id");
    assert_eq!(
        full["database"],
        handoff::store::fingerprint(&db.path),
        "{full}"
    );
    let instance = full["instance"].as_str().unwrap();
    assert!(
        !bare.to_string().contains(instance)
            && !bare
                .to_string()
                .contains(full["database"].as_str().unwrap()),
        "{bare}"
    );

    // An open loopback daemon's own host counts as a credential.
    let open = db.dir.path().join("open.toml");
    std::fs::write(&open, "[http]\nopen = true\n").unwrap();
    let other = TempDb::new();
    let o = Daemon::start(&other.path, &open);
    assert!(health(&o.addr, None).await["instance"].is_string());
}
