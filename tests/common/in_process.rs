//! A daemon run in the test's own process on a manual clock: started on
//! a store handle of its own and a port-0 listener, woken by writes, its
//! clock moved by the test. For tests whose steps fall due with time
//! (escalation chains), on either fake network.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use handoff::clock::ManualClock;
use handoff::store::Store;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::engine::Db;
use super::wait_for;

/// One daemon, in this process, on its own store handle.
pub struct Running {
    pub addr: String,
    pub store: Store,
    pub clock: Arc<ManualClock>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// Start a daemon with config text `cfg` (its `[http]` open) on `db`, its
/// clock at `at` (ms), and wait until it answers.
pub async fn start(db: &Db, cfg: &str, at: i64) -> Running {
    let config = handoff::config::Config::parse(cfg, std::path::Path::new("handoff.toml")).unwrap();
    let (store, clock) = db.open_manual(at).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let stop = CancellationToken::new();
    let task = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            handoff::daemon::run(config, store, listener, stop)
                .await
                .unwrap()
        })
    };
    wait_for(20, "the daemon answers", || {
        let addr = addr.clone();
        async move {
            reqwest::get(format!("http://{addr}/healthz"))
                .await
                .ok()
                .filter(|r| r.status().is_success())
        }
    })
    .await;
    Running {
        addr,
        store,
        clock,
        stop,
        task,
    }
}

impl Running {
    /// Shut it down and wait for it.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// POST `body` to the daemon at `addr`; its answer (a success).
pub async fn post(addr: &str, path: &str, body: Value) -> Value {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap()
}

/// Set every daemon's clock to `at`, then wake their housekeeping with a
/// write (a `poke` action: the configs give project `poke` no
/// escalation) until `done` holds.
pub async fn advance<T, F, Fut>(ds: &[Running], at: i64, what: &str, mut done: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for d in ds {
        d.clock.set(at);
    }
    let mut n = 0;
    wait_for(30, what, || {
        n += 1;
        let addr = ds[n % ds.len()].addr.clone();
        let check = done();
        async move {
            post(
                &addr,
                "/v1/actions",
                json!({"kind": "poke", "summary": format!("poke {n}"), "project": "poke"}),
            )
            .await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            check.await
        }
    })
    .await
}
