//! Webhook wake targets against a real axum receiver on 127.0.0.1:0 that
//! checks the Standard Webhooks signature with its own HMAC code (not the
//! signer under test): signature and stable id, 410 disabling the target,
//! `Retry-After`, and session URLs outside `[wake] allowed_webhook_urls`.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use common::{TempDb, Worker, answer, ask, session_with, wait_for};
use handoff::store::Store;
use handoff::store::deliveries::Delivery;
use handoff::store::sessions::WakeTarget;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const T0: i64 = 1_800_000_000_000;
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One received POST: headers, body, and whether *our* check of the
/// signature passed.
#[derive(Clone, Debug)]
struct Got {
    id: String,
    timestamp: String,
    body: serde_json::Value,
    signature_ok: bool,
}

/// A scripted reply: status and optional `Retry-After`.
type Reply = (u16, Option<&'static str>);

#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<Got>>>,
    /// Responses to give, in order; then 200.
    script: Arc<Mutex<VecDeque<Reply>>>,
}

/// An independent Standard Webhooks check: HMAC-SHA256 over
/// `id.timestamp.body` keyed with the base64-decoded secret.
fn check_signature(secret: &str, h: &HeaderMap, body: &[u8]) -> bool {
    let key = B64.decode(secret.trim_start_matches("whsec_")).unwrap();
    let get = |k: &str| h.get(k).unwrap().to_str().unwrap().to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(get("webhook-id").as_bytes());
    mac.update(b".");
    mac.update(get("webhook-timestamp").as_bytes());
    mac.update(b".");
    mac.update(body);
    let want = format!("v1,{}", B64.encode(mac.finalize().into_bytes()));
    get("webhook-signature").split(' ').any(|s| s == want)
}

async fn hook(State(r): State<Receiver>, h: HeaderMap, body: Bytes) -> Response {
    let got = Got {
        id: h["webhook-id"].to_str().unwrap().into(),
        timestamp: h["webhook-timestamp"].to_str().unwrap().into(),
        body: serde_json::from_slice(&body).unwrap(),
        signature_ok: check_signature(SECRET, &h, &body),
    };
    r.got.lock().unwrap().push(got);
    let next = r.script.lock().unwrap().pop_front();
    match next {
        Some((code, retry_after)) => {
            let mut res = StatusCode::from_u16(code).unwrap().into_response();
            if let Some(ra) = retry_after {
                res.headers_mut().insert("retry-after", ra.parse().unwrap());
            }
            res
        }
        None => StatusCode::OK.into_response(),
    }
}

async fn receiver() -> (Receiver, String) {
    let r = Receiver::default();
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(r.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (r, url)
}

fn webhook(url: &str) -> WakeTarget {
    WakeTarget::Webhook {
        url: url.into(),
        secret: SECRET.into(),
    }
}

async fn only_delivery(store: &Store, what: &str, pred: impl Fn(&Delivery) -> bool) -> Delivery {
    wait_for(15, what, || async {
        let all = store.all_deliveries().await.unwrap();
        all.into_iter().find(|d| pred(d))
    })
    .await
}

async fn answer_one(store: &Store, title: &str) -> (String, i64) {
    let q = ask(store, title).await;
    store
        .reply_inbox(&q.id, &answer("yes"))
        .await
        .unwrap()
        .expect("accepted");
    let seq = store
        .events_for("question", &q.id)
        .await
        .unwrap()
        .into_iter()
        .rev()
        .find(|e| e.kind == "question.answered")
        .unwrap()
        .seq;
    (q.id, seq)
}

fn allow(url: &str) -> String {
    let prefix = &url[..url.len() - "hook".len()];
    format!("[wake]\nallowed_webhook_urls = [\"{prefix}\"]\n")
}

#[tokio::test]
async fn a_webhook_is_signed_per_the_spec_with_the_stable_event_id() {
    let (recv, url) = receiver().await;
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    session_with(&store, "s", Some(webhook(&url))).await;
    let w = Worker::start(&store, &allow(&url), &[0, 1000]).await;
    let (qid, seq) = answer_one(&store, "Ship it?").await;
    only_delivery(&store, "delivered", |d| d.status == "delivered").await;
    w.stop().await;

    let got = recv.got.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    let g = &got[0];
    assert!(g.signature_ok, "independent signature check failed: {g:?}");
    assert_eq!(g.id, format!("evt_{seq}"));
    assert_eq!(g.timestamp, (T0 / 1000).to_string());
    assert_eq!(g.body["event_id"], g.id);
    assert_eq!(g.body["type"], "question.answered");
    assert_eq!(g.body["item"]["id"], qid);
    assert_eq!(g.body["session"], "s");
    assert_eq!(
        g.body["payload"]["text"], "yes",
        "the reply itself: {}",
        g.body
    );
}

#[tokio::test]
async fn retry_after_is_honoured_and_the_retry_keeps_the_event_id() {
    let (recv, url) = receiver().await;
    recv.script.lock().unwrap().push_back((429, Some("7")));
    let db = TempDb::new();
    let (store, clock) = db.open_manual(T0).await;
    session_with(&store, "s", Some(webhook(&url))).await;
    // The schedule alone would retry after 10 ms.
    let w = Worker::start(&store, &allow(&url), &[0, 10, 10]).await;
    let (_qid, seq) = answer_one(&store, "Merge?").await;
    let d = only_delivery(&store, "the 429", |d| {
        d.attempts == 1 && d.status == "pending"
    })
    .await;
    assert_eq!(
        d.next_attempt_at,
        T0 + 7000,
        "Retry-After: 7 wins over 10 ms"
    );
    assert!(d.last_error.as_deref().unwrap().contains("429"), "{d:?}");
    clock.advance(7000);
    only_delivery(&store, "delivered", |d| d.status == "delivered").await;
    w.stop().await;
    let got = recv.got.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert!(
        got.iter()
            .all(|g| g.id == format!("evt_{seq}") && g.signature_ok)
    );
    assert_eq!(got[1].timestamp, ((T0 + 7000) / 1000).to_string());
}

#[tokio::test]
async fn a_410_disables_the_target_for_later_events() {
    let (recv, url) = receiver().await;
    recv.script.lock().unwrap().push_back((410, None));
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    session_with(&store, "s", Some(webhook(&url))).await;
    let w = Worker::start(&store, &allow(&url), &[0, 10, 10]).await;
    let (qid, _) = answer_one(&store, "First?").await;
    let d = only_delivery(&store, "dead", |d| d.status == "dead").await;
    assert_eq!(d.attempts, 1, "410 is not retried");
    assert!(
        store
            .target_disabled(&d.target_key)
            .await
            .unwrap()
            .is_some()
    );
    let dead = store.events_for("question", &qid).await.unwrap();
    assert!(
        dead.iter()
            .any(|e| e.kind == "delivery.dead" && e.payload["disabled"] == true)
    );

    // A later event for the same target is not even enqueued.
    let (_q2, seq2) = answer_one(&store, "Second?").await;
    wait_for(
        15,
        "the notify cursor to pass the second answer",
        || async { (store.cursor("notify").await.unwrap() >= seq2).then_some(()) },
    )
    .await;
    w.stop().await;
    assert!(store.deliveries_of_event(seq2).await.unwrap().is_empty());
    assert_eq!(recv.got.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_session_webhook_outside_the_allowed_urls_is_dead_with_a_clear_error() {
    let (recv, url) = receiver().await;
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    session_with(&store, "s", Some(webhook(&url))).await;
    let w = Worker::start(
        &store,
        "[wake]\nallowed_webhook_urls = [\"https://ci.example.com/\"]\n",
        &[0, 10],
    )
    .await;
    answer_one(&store, "Allowed?").await;
    let d = only_delivery(&store, "dead", |d| d.status == "dead").await;
    w.stop().await;
    let err = d.last_error.unwrap();
    assert!(
        err.contains("not allowed") && err.contains("allowed_webhook_urls"),
        "{err}"
    );
    assert!(recv.got.lock().unwrap().is_empty(), "nothing was posted");
}

#[tokio::test]
async fn a_rule_webhook_needs_no_allow_list() {
    let (recv, url) = receiver().await;
    let db = TempDb::new();
    let (store, _clock) = db.open_manual(T0).await;
    session_with(&store, "s", None).await;
    let cfg = format!(
        "[[notify]]\nevents = [\"question.answered\"]\nwebhook = \"{url}\"\nsecret = \"{SECRET}\"\n"
    );
    let w = Worker::start(&store, &cfg, &[0]).await;
    answer_one(&store, "Rule?").await;
    let d = only_delivery(&store, "delivered", |d| d.status == "delivered").await;
    w.stop().await;
    assert_eq!(d.origin, "rule:#1");
    assert!(recv.got.lock().unwrap()[0].signature_ok);
}

#[test]
fn the_spec_test_vector_passes() {
    let secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    let (id, ts) = ("msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553);
    let body = br#"{"email":"test@example.com","username":"test_user"}"#;
    let want = "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=";
    let key = handoff::sign::decode_whsec(secret).unwrap();
    assert_eq!(handoff::sign::sign(&key, id, ts, body), want);
    // And the independent check agrees with the published value.
    let mut h = HeaderMap::new();
    h.insert("webhook-id", id.parse().unwrap());
    h.insert("webhook-timestamp", ts.to_string().parse().unwrap());
    h.insert("webhook-signature", want.parse().unwrap());
    assert!(check_signature(secret, &h, body));
}
