//! Escalation chains through running daemons (in this process, on a
//! manual clock): a chat step pushes the action to the next chat and
//! redraws its card there and where it was ("Escalated to #team at …"), a
//! webhook step POSTs the signed `action.escalated` event to a receiver on
//! 127.0.0.1:0, the TTL rejects at the end; a decision between steps
//! stops the chain; a chat's quiet hours hold the step's push. On SQLite
//! across a daemon restart between the steps, on PostgreSQL with three
//! daemons at once.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::daemon::write_config;
use common::engine::Db;
use common::fake_telegram::FakeTelegram;
use common::in_process::{advance, post, start};
use common::wait_for;
use handoff::store::Store;
use serde_json::{Value, json};

const T0: i64 = 1_800_000_000_000; // 08:00 UTC
const MIN: i64 = 60_000;
const ME: i64 = 111;
const TEAM: i64 = -1_000_222;
const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// A webhook receiver on 127.0.0.1:0: its URL and the bodies it took.
async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route(
            "/hook",
            axum::routing::post(
                |axum::extract::State(got): axum::extract::State<Arc<Mutex<Vec<Value>>>>,
                 headers: axum::http::HeaderMap,
                 body: String| async move {
                    assert!(headers.contains_key("webhook-signature"), "signed");
                    got.lock()
                        .unwrap()
                        .push(serde_json::from_str(&body).unwrap());
                    "ok"
                },
            ),
        )
        .with_state(got.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

/// The config: chats `me` (routed first) and `team`; the chain is `team`
/// after 10 minutes, the webhook after 20; `poke` actions never escalate.
fn config(dir: &std::path::Path, fake: &FakeTelegram, hook: &str, team_extra: &str) -> String {
    let path = write_config(
        dir,
        &fake.url,
        &[("me", ME, &[ME], &[ME]), ("team", TEAM, &[ME], &[ME])],
        &format!(
            "{team_extra}\n[http]\nopen = true\n\n[[approvals.escalate]]\nafter = \"10m\"\nchat = \"team\"\n\n[[approvals.escalate]]\nafter = \"20m\"\nwebhook = \"{hook}\"\nsecret = \"{SECRET}\"\nto = \"pager\"\n\n[[approvals.rule]]\nproject = \"poke\"\nescalate = []\n"
        ),
    );
    std::fs::read_to_string(path).unwrap()
}

async fn propose(addr: &str, summary: &str) -> String {
    let v = post(
        addr,
        "/v1/actions",
        json!({"kind": "deploy", "summary": summary, "project": "shop", "ttl": "30m", "on_expire": "reject"}),
    )
    .await;
    v["action"]["id"].as_str().unwrap().to_string()
}

async fn escalations(s: &Store, id: &str) -> Vec<i64> {
    s.events_for("action", id)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == "action.escalated")
        .map(|e| e.payload["step"].as_i64().unwrap())
        .collect()
}

fn shows(fake: &FakeTelegram, chat: i64, short: &str) -> Vec<String> {
    fake.messages(chat)
        .into_iter()
        .map(|m| fake.message(chat, m.message_id).unwrap_or(m).text)
        .filter(|t| t.contains(short))
        .collect()
}

/// The whole chain on `n` daemons; with `restart`, the (only) daemon is
/// stopped after the first step and a new one started.
async fn the_chain(db: Db, n: usize, restart: bool) {
    let fake = FakeTelegram::start().await;
    let (hook, got) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &fake, &hook, "");
    let mut ds = Vec::new();
    for _ in 0..n {
        ds.push(start(&db, &cfg, T0).await);
    }
    let a = propose(&ds[0].addr, "v2 to prod").await;
    let b = propose(&ds[0].addr, "v3 to prod").await;
    let (sa, sb) = (handoff::store::short_id(&a), handoff::store::short_id(&b));
    wait_for(20, "both cards in the first chat", || async {
        (shows(&fake, ME, sa).len() == 1 && shows(&fake, ME, sb).len() == 1).then_some(())
    })
    .await;
    assert!(shows(&fake, TEAM, sa).is_empty(), "not before its step");

    // Step 1 (10 minutes): both go to #team; the first chat's cards say so.
    let store = ds[0].store.clone();
    advance(&ds, T0 + 10 * MIN, "step 1 in #team", || {
        let ok = shows(&fake, TEAM, sa).len() == 1 && shows(&fake, TEAM, sb).len() == 1;
        let ok = ok
            && shows(&fake, ME, sa)
                .iter()
                .any(|t| t.contains("Escalated to #team at 08:10 UTC"));
        async move { ok.then_some(()) }
    })
    .await;
    assert_eq!(escalations(&store, &a).await, [1]);
    assert_eq!(escalations(&store, &b).await, [1]);
    // The Inbox's view of it says the same.
    let v: Value = reqwest::get(format!("http://{}/v1/actions/{a}", ds[0].addr))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let note = v["escalation_note"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        note.starts_with("Escalated to #team at 08:10 UTC; to pager at 08:20 UTC"),
        "{v}"
    );

    if restart {
        let d = ds.pop().unwrap();
        d.stop().await;
        ds.push(start(&db, &cfg, T0 + 10 * MIN).await);
    }

    // A decision between the steps ends b's chain.
    post(
        &ds[0].addr,
        &format!("/v1/actions/{b}/approve"),
        json!({"by": "alice"}),
    )
    .await;

    // Step 2 (20 minutes): the webhook gets a's escalation, once; not b's.
    let store = ds[0].store.clone();
    advance(&ds, T0 + 20 * MIN, "step 2 at the webhook", || {
        let bodies = got.lock().unwrap().clone();
        async move { (!bodies.is_empty()).then_some(()) }
    })
    .await;
    let bodies = got.lock().unwrap().clone();
    assert_eq!(bodies[0]["type"], "action.escalated");
    assert_eq!(bodies[0]["item"]["id"], a.as_str());
    assert_eq!(bodies[0]["payload"]["to"], "pager");
    assert_eq!(escalations(&store, &a).await, [1, 2]);
    assert_eq!(escalations(&store, &b).await, [1], "decided: no more steps");

    // The end: the TTL (30 minutes) rejects a, fail-closed.
    advance(&ds, T0 + 30 * MIN, "a rejected at its TTL", || {
        let store = store.clone();
        let a = a.clone();
        async move {
            let x = store.get_action(&a).await.unwrap();
            (x.status == handoff::store::actions::Status::Rejected).then_some(())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(got.lock().unwrap().len(), 1, "each step once");
    assert_eq!(shows(&fake, TEAM, sa).len(), 1, "pushed to #team once");
    let audit: Vec<String> = store
        .action_audit(&a)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert_eq!(audit, ["proposed", "escalated", "escalated", "rejected"]);
    for d in ds {
        d.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_across_a_daemon_restart_on_sqlite() {
    the_chain(Db::new(common::engine::Engine::Sqlite).await, 1, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_chain_across_three_daemons_on_postgres() {
    the_chain(Db::new(common::engine::Engine::Postgres).await, 3, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_hold_a_chat_step() {
    let fake = FakeTelegram::start().await;
    let (hook, _got) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    // #team is quiet from 08:05 to 09:00 UTC.
    let cfg = config(dir.path(), &fake, &hook, "quiet_hours = \"08:05-09:00\"\n");
    let db = Db::new(common::engine::Engine::Sqlite).await;
    let d = start(&db, &cfg, T0).await;
    let a = propose(&d.addr, "v2 to prod").await;
    let store = d.store.clone();
    let ds = [d];
    advance(&ds, T0 + 10 * MIN, "step 1 fired", || {
        let (store, a) = (store.clone(), a.clone());
        async move { (escalations(&store, &a).await == [1]).then_some(()) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        shows(&fake, TEAM, handoff::store::short_id(&a)).is_empty(),
        "held in quiet hours"
    );
    let held = store.chat_held_due(T0 + 60 * MIN).await.unwrap();
    assert!(
        held.iter().any(|h| h.item_id == a && h.chat_id == TEAM),
        "waiting for the quiet hours' end: {held:?}"
    );
    let [d] = ds;
    d.stop().await;
}
