//! Inbound wakes through the real `handoff serve`: `POST
//! /v1/sessions/{id}/wake` with a bearer token, a Standard Webhooks
//! signature or GitHub's `X-Hub-Signature-256`. Bad credentials are 401
//! and store nothing; replays are deduplicated; oversize bodies are 413;
//! an accepted wake reaches the session's exec target.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use common::daemon::Daemon;
use common::{TempDb, count, session_with, wait_for};
use handoff::store::Store;
use handoff::store::sessions::WakeTarget;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const TOKEN: &str = "ci-token-0123456789abcdef";
const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const GH: &str = "gh-secret-0123456789";

struct Setup {
    db: TempDb,
    store: Store,
    daemon: Daemon,
    http: reqwest::Client,
}

impl Setup {
    async fn new() -> Setup {
        let db = TempDb::new();
        let store = db.open().await;
        let log = db.dir.path().join("woken");
        let target = WakeTarget::Exec {
            argv: vec![
                "/bin/sh".into(),
                "-c".into(),
                format!(
                    "echo \"$HANDOFF_EVENT $HANDOFF_EVENT_ID $(cat)\" >> {}",
                    log.display()
                ),
            ],
            timeout_secs: Some(10),
        };
        session_with(&store, "s", Some(target)).await;
        let cfg = db.dir.path().join("handoff.toml");
        std::fs::write(
            &cfg,
            format!(
                r#"
[wake]
retry_schedule_ms = [0, 100]
[[wake.sources]]
name = "ci"
kind = "bearer"
secret = "{TOKEN}"
[[wake.sources]]
name = "hooks"
kind = "standard"
secret = "{WHSEC}"
[[wake.sources]]
name = "github"
kind = "github"
secret = "{GH}"
"#
            ),
        )
        .unwrap();
        let daemon = Daemon::start(&db.path, &cfg);
        Setup {
            db,
            store,
            daemon,
            http: reqwest::Client::new(),
        }
    }

    fn url(&self, session: &str) -> String {
        format!("http://{}/v1/sessions/{session}/wake", self.daemon.addr)
    }

    async fn post(
        &self,
        session: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> (u16, serde_json::Value) {
        let mut req = self.http.post(self.url(session)).body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let v = res.json().await.unwrap_or(serde_json::Value::Null);
        (status, v)
    }

    async fn wakes(&self) -> usize {
        self.store
            .events_for("session", "s")
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == "session.wake")
            .count()
    }
}

/// Standard Webhooks headers, signed here with the hmac crate directly.
fn standard(id: &str, ts: i64, body: &str, secret: &str) -> Vec<(&'static str, String)> {
    let key = B64.decode(secret.trim_start_matches("whsec_")).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.{body}").as_bytes());
    let sig = B64.encode(mac.finalize().into_bytes());
    vec![
        ("webhook-id", id.to_string()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", format!("v1,{sig}")),
    ]
}

fn github(delivery: &str, body: &str, secret: &str) -> Vec<(&'static str, String)> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    vec![
        ("x-hub-signature-256", format!("sha256={hex}")),
        ("x-github-delivery", delivery.to_string()),
        ("x-github-event", "check_suite".to_string()),
    ]
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn a_bearer_wake_reaches_the_target_once_per_delivery_id() {
    let s = Setup::new().await;
    let auth = ("authorization", format!("Bearer {TOKEN}"));
    let key = ("idempotency-key", "build-42".to_string());
    let (code, v) = s
        .post("s", &[auth.clone(), key.clone()], r#"{"ci":"green"}"#)
        .await;
    assert_eq!(code, 202, "{v}");
    assert_eq!(v["new"], true);
    let (code, again) = s.post("s", &[auth, key], r#"{"ci":"green"}"#).await;
    assert_eq!(code, 200, "{again}");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["seq"], v["seq"]);
    assert_eq!(s.wakes().await, 1);

    let log = s.db.dir.path().join("woken");
    let line = wait_for(15, "the exec target to run", || async {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.ends_with('\n'))
    })
    .await;
    let seq = v["seq"].as_i64().unwrap();
    assert!(
        line.starts_with(&format!("session.wake evt_{seq} ")),
        "{line}"
    );
    assert!(
        line.contains(r#""ci":"green""#) && line.contains(r#""source":"ci""#),
        "{line}"
    );
}

#[tokio::test]
async fn bad_credentials_are_401_and_store_nothing() {
    let s = Setup::new().await;
    let body = r#"{"x":1}"#;
    let now = now_secs();
    let mut bad_sig = standard("msg_1", now, body, WHSEC);
    bad_sig[2].1 = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into();
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("no credentials", vec![]),
        (
            "wrong token",
            vec![("authorization", "Bearer nope-nope-nope-nope".into())],
        ),
        ("bad standard signature", bad_sig),
        (
            "other key",
            standard("msg_2", now, body, "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        ),
        ("stale timestamp", standard("msg_3", now - 301, body, WHSEC)),
        (
            "future timestamp",
            standard("msg_4", now + 310, body, WHSEC),
        ),
        ("signed other body", standard("msg_5", now, "{}", WHSEC)),
        ("bad github signature", github("gh-1", "{}", GH)),
        (
            "github wrong secret",
            github("gh-2", body, "wrong-secret-000000"),
        ),
    ];
    for (what, headers) in cases {
        let (code, v) = s.post("s", &headers, body).await;
        assert_eq!(code, 401, "{what}: {v}");
        assert!(
            v["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{what}: {v}"
        );
    }
    // Even for an unknown session, bad credentials are 401 (no probing).
    let (code, _) = s.post("nobody", &[], body).await;
    assert_eq!(code, 401);
    assert_eq!(s.wakes().await, 0);
    assert_eq!(count(&s.store, "session_wakes").await, 0);
}

#[tokio::test]
async fn signed_wakes_are_accepted_and_replays_deduplicated() {
    let s = Setup::new().await;
    let body = r#"{"pr":7,"review":"approved"}"#;
    let h = standard("msg_abc", now_secs(), body, WHSEC);
    let (code, first) = s.post("s", &h, body).await;
    assert_eq!(code, 202, "{first}");
    let (code, replay) = s.post("s", &h, body).await;
    assert_eq!((code, replay["duplicate"].clone()), (200, true.into()));
    assert_eq!(replay["seq"], first["seq"]);

    let gh = github("72d3162e-cc78-11e3-81ab-4c9367dc0958", body, GH);
    let (code, v) = s.post("s", &gh, body).await;
    assert_eq!(code, 202, "{v}");
    let (code, v2) = s.post("s", &gh, body).await;
    assert_eq!((code, v2["seq"].clone()), (200, v["seq"].clone()));
    assert_eq!(s.wakes().await, 2);
    let ev = s
        .store
        .event_at(v["seq"].as_i64().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.payload["body"]["review"], "approved");
    assert_eq!(ev.actor, "github");
}

#[tokio::test]
async fn oversize_is_413_and_an_unknown_session_404() {
    let s = Setup::new().await;
    let auth = vec![("authorization", format!("Bearer {TOKEN}"))];
    let big = "x".repeat(1024 * 1024 + 1);
    let (code, _) = s.post("s", &auth, &big).await;
    assert_eq!(code, 413);
    let just = "y".repeat(1024 * 1024);
    let (code, v) = s.post("s", &auth, &just).await;
    assert_eq!(code, 202, "exactly 1 MiB is fine: {v}");
    let (code, v) = s.post("nobody", &auth, "{}").await;
    assert_eq!(code, 404, "{v}");
    assert!(v["error"].as_str().unwrap().contains("nobody"));
    assert_eq!(s.wakes().await, 1);
}
