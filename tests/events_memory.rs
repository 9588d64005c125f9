//! The event routes within a stated memory ceiling: a daemon whose log
//! holds a dozen actions of 1 MB arguments and 1 MB results (every
//! `action.proposed` and `action.executed` event carries one) answers 64
//! concurrent `GET /v1/events?tail=500`, and 64 concurrent
//! `GET /v1/events/stream` of the same events, each complete and correct,
//! without its peak resident memory (VmHWM) passing [`CEILING_MIB`]. On
//! both engines, through the real daemon process.

mod common;

use std::path::Path;

use common::daemon::Daemon;
use common::engine::{Db, Engine};
use handoff::store::actions::Actor;
use handoff::store::tokens::Role;
use serde_json::{Value, json};

/// The ceiling this test states: however large the payloads and however
/// many callers read them at once, the event routes cost the daemon
/// little more than its baseline (the list routes' ceiling in
/// `tests/api_pages.rs`).
const CEILING_MIB: u64 = 160;

/// Concurrent callers.
const CALLERS: usize = 64;

/// About 1 MB of JSON made of many small values (the shape that costs most
/// once decoded into a tree): `{"rows": [{"n": …, "name": …, "ok": …}, …]}`.
fn megabyte(tag: &str) -> Value {
    let rows: Vec<Value> = (0..24_000)
        .map(|n| json!({"n": n, "name": format!("{tag}-{n:06}"), "ok": n % 2 == 0}))
        .collect();
    json!({ "rows": rows })
}

/// A log of `n` actions, each proposed with 1 MB of arguments, approved,
/// claimed and completed with a 1 MB result. Returns an admin token's
/// secret.
async fn big_log(db: &Db, n: usize) -> String {
    let store = db.open().await;
    for i in 0..n {
        let mut a = common::new_action("upload", &megabyte(&format!("a{i}")).to_string());
        a.summary = format!("upload {i}");
        let id = store.propose(&a).await.unwrap().action.id;
        store.approve(&id, Actor::cli("alice"), None).await.unwrap();
        store.claim(&id, "exec-1", 60_000).await.unwrap();
        store
            .complete(&id, "exec-1", true, megabyte(&format!("r{i}")), None)
            .await
            .unwrap();
    }
    let secret = store
        .token_create("reader", Role::Admin, None)
        .await
        .unwrap()
        .secret;
    store.close().await;
    secret
}

/// `handoff serve` on `db` with an empty config.
fn daemon(db: &Db, dir: &Path) -> Daemon {
    let cfg = dir.join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let target = match db.engine {
        Engine::Sqlite => db.path().unwrap().to_path_buf(),
        Engine::Postgres => db.pg().unwrap().url.clone().into(),
    };
    Daemon::start(&target, &cfg)
}

/// One line of the daemon's `/proc/PID/status`, in KiB.
fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{key} in /proc/PID/status"))
}

/// The events the tail should answer, as JSON, read from the store.
async fn expected_tail(db: &Db) -> (Vec<Value>, i64) {
    let store = db.open().await;
    let page = store.events_tail(500).await.unwrap();
    store.close().await;
    let events = page
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    (events, page.next_after)
}

/// Check the peak, and say what is still resident once the callers are
/// done.
fn check_memory(d: &Daemon, what: &str) {
    let pid = d.child.id();
    let peak = status_kib(pid, "VmHWM:") / 1024;
    // A moment for the connections to close and the allocator to trim.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let after = status_kib(pid, "VmRSS:") / 1024;
    eprintln!("daemon with {what}: peak RSS {peak} MiB, {after} MiB afterwards");
    assert!(
        peak < CEILING_MIB,
        "{what}: the daemon peaked at {peak} MiB (ceiling {CEILING_MIB} MiB)"
    );
}

async fn tail_pages_stay_under_the_memory_ceiling(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let token = big_log(&db, 12).await;
    let (want, newest) = expected_tail(&db).await;
    let bytes: usize = want.iter().map(|e| e["payload"].to_string().len()).sum();
    assert!(
        bytes > 3_000_000,
        "the page holds several big events: {bytes} bytes"
    );
    let d = daemon(&db, dir.path());
    let client = reqwest::Client::new();
    let url = format!("http://{}/v1/events?tail=500", d.addr);
    let calls: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            tokio::spawn(async move {
                let resp = client.get(url).bearer_auth(token).send().await.unwrap();
                let status = resp.status();
                let body = resp.bytes().await.unwrap();
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                body
            })
        })
        .collect();
    let mut bodies = Vec::new();
    for c in calls {
        bodies.push(c.await.unwrap());
    }
    // Every caller got the same bytes, and they are the newest events, whole.
    assert!(
        bodies.iter().all(|b| *b == bodies[0]),
        "the same page for all"
    );
    let page: Value = serde_json::from_slice(&bodies[0]).unwrap();
    assert_eq!(page["next_after"], newest);
    let got = page["events"].as_array().unwrap();
    assert_eq!(got.len(), want.len());
    assert!(*got == want, "the page is the store's newest events");
    check_memory(&d, "64 concurrent tail pages of 1 MB events");
}

/// Read one SSE stream until the event with id `last` arrived: each
/// event's `(id, data)`.
async fn read_stream(mut resp: reqwest::Response, last: i64) -> Vec<(String, String)> {
    let (mut buf, mut scanned, mut out) = (Vec::<u8>::new(), 0, Vec::new());
    while let Some(chunk) = resp.chunk().await.unwrap() {
        buf.extend_from_slice(&chunk);
        while let Some(end) = buf[scanned..].windows(2).position(|w| w == b"\n\n") {
            let frame: Vec<u8> = buf.drain(..scanned + end + 2).collect();
            scanned = 0;
            let frame = String::from_utf8(frame).unwrap();
            let field = |name: &str| {
                let lines: Vec<&str> = frame
                    .lines()
                    .filter_map(|l| l.strip_prefix(name))
                    .map(|v| v.strip_prefix(' ').unwrap_or(v))
                    .collect();
                lines.join("\n")
            };
            let (id, data) = (field("id:"), field("data:"));
            if data.is_empty() {
                continue; // a keep-alive comment
            }
            let done = id == last.to_string();
            out.push((id, data));
            if done {
                return out;
            }
        }
        scanned = buf.len().saturating_sub(1);
    }
    panic!("the stream ended before event {last}");
}

async fn streams_stay_under_the_memory_ceiling(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let token = big_log(&db, 12).await;
    let (want, newest) = expected_tail(&db).await;
    let from = want[0]["seq"].as_i64().unwrap() - 1;
    let d = daemon(&db, dir.path());
    let client = reqwest::Client::new();
    let url = format!("http://{}/v1/events/stream?after={from}", d.addr);
    let calls: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            tokio::spawn(async move {
                let resp = client.get(url).bearer_auth(token).send().await.unwrap();
                assert_eq!(resp.status(), 200);
                read_stream(resp, newest).await
            })
        })
        .collect();
    let mut streams = Vec::new();
    for c in calls {
        streams.push(c.await.unwrap());
    }
    // Every stream carried the same events, and they are the store's, whole.
    assert!(
        streams.iter().all(|s| *s == streams[0]),
        "the same events for all"
    );
    assert_eq!(streams[0].len(), want.len());
    for ((id, data), want) in streams[0].iter().zip(&want) {
        assert_eq!(*id, want["seq"].to_string(), "id: is the seq");
        let got: Value = serde_json::from_str(data).unwrap();
        assert!(got == *want, "event {id} arrives whole");
    }
    check_memory(&d, "64 concurrent streams of 1 MB events");
}

both_engines!(
    tail_pages_stay_under_the_memory_ceiling,
    streams_stay_under_the_memory_ceiling
);
