//! The HTTP API over real TCP against the real router and a real SQLite
//! file: `POST /v1/questions` requests per second (8 concurrent clients);
//! answer → long-poll wake-up latency with 100 agents waiting at once
//! (`GET /v1/questions/{id}?wait=reply`), for an answer made through the
//! API (an in-process write, which nudges the follower) and for one written
//! by another store handle (as another process would: seen through the
//! database watcher, as in the daemon); and the idle RSS of a real
//! `handoff serve` process.

use std::time::{Duration, Instant};

use handoff::config::Config;
use handoff::shared::Shared;
use handoff::store::Store;
use handoff::store::questions::NewReply;
use handoff::store::tokens::Role;
use serde_json::{Value, json};

use crate::{Table, ms, pct, thousands};

const WAITERS: usize = 100;
const CLIENTS: usize = 8;

async fn serve(store: Store) -> (String, Shared) {
    let shared = Shared::new(
        store.clone(),
        Config::default(),
        tokio_util::sync::CancellationToken::new(),
    );
    let s = shared.clone();
    let start = store.last_event_seq().await.unwrap();
    tokio::spawn(handoff::follow::watch(
        store.clone(),
        shared.nudge.clone(),
        shared.shutdown.clone(),
    ));
    tokio::spawn(async move {
        handoff::follow::follow(
            s.store.clone(),
            start,
            &s.nudge,
            s.shutdown.clone(),
            s.waiters.clone(),
        )
        .await;
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = handoff::api::router(shared.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), shared)
}

async fn flag_rate(base: &str, token: &str, n: usize, t: &mut Table) {
    let http = reqwest::Client::new();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (http, base, token) = (http.clone(), base.to_string(), token.to_string());
        tasks.push(tokio::spawn(async move {
            for i in 0..n / CLIENTS {
                let r = http
                    .post(format!("{base}/v1/questions"))
                    .bearer_auth(&token)
                    .json(&json!({"project": "bench", "title": format!("q {c}-{i}")}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 201);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let el = started.elapsed();
    let done = (n / CLIENTS) * CLIENTS;
    t.row(
        "api",
        format!("POST /v1/questions over TCP, {CLIENTS} clients ({done} requests)"),
        format!("{} req/s", thousands(done as f64 / el.as_secs_f64())),
    );
}

/// 100 waiters; answer each question in turn and time answer → response.
async fn wake_latency(
    base: &str,
    agent: &str,
    human: &str,
    other: Option<&Store>,
    label: &str,
    t: &mut Table,
) {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(WAITERS + 8)
        .build()
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..WAITERS {
        let v: Value = http
            .post(format!("{base}/v1/questions"))
            .bearer_auth(agent)
            .json(&json!({"project": "bench", "title": format!("wait {i}")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(v["question"]["id"].as_str().unwrap().to_string());
    }
    let mut polls = Vec::new();
    for id in &ids {
        let (http, url, agent) = (
            http.clone(),
            format!("{base}/v1/questions/{id}?wait=reply&timeout=120s"),
            agent.to_string(),
        );
        polls.push(tokio::spawn(async move {
            let v: Value = http
                .get(url)
                .bearer_auth(agent)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(v["outcome"], "done");
            Instant::now()
        }));
    }
    // Let every poll reach the daemon and register.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut sent = Vec::new();
    for id in &ids {
        let t0 = Instant::now();
        match other {
            Some(store) => {
                store
                    .reply_inbox(
                        id,
                        &NewReply {
                            text: "ok".into(),
                            by: "bench".into(),
                            ..Default::default()
                        },
                    )
                    .await
                    .unwrap()
                    .unwrap();
            }
            None => {
                let r = http
                    .post(format!("{base}/v1/questions/{id}/reply"))
                    .bearer_auth(human)
                    .json(&json!({"text": "ok"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
            }
        }
        sent.push(t0);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut lat = Vec::new();
    for (p, t0) in polls.into_iter().zip(sent) {
        let t1 = p.await.unwrap();
        lat.push(t1.saturating_duration_since(t0));
    }
    let mut lat: Vec<f64> = lat.into_iter().map(ms).collect();
    lat.sort_by(f64::total_cmp);
    t.row(
        "api",
        format!("answer → long-poll wake-up, {WAITERS} agents waiting, {label}, p50 / p99"),
        format!("{:.1} / {:.1} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}

pub async fn idle_rss(t: &mut Table) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["serve", "--config"])
        .arg(&cfg)
        .args(["--listen", "127.0.0.1:0"])
        .env("HANDOFF_DB", dir.path().join("h.db"))
        .env_remove("HANDOFF_TELEGRAM_TOKEN")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS"))
        .unwrap_or("VmRSS: ?")
        .to_string();
    let kb: f64 = rss
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    t.row(
        "daemon",
        "idle RSS of `handoff serve` (no chat configured), 3 s after start",
        format!("{:.1} MiB", kb / 1024.0),
    );
    let _ = child.kill();
    let _ = child.wait();
}

pub async fn run(quick: bool, t: &mut Table) {
    let n = if quick { 200 } else { 4000 };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let store = Store::open(&path).await.unwrap();
    let agent = store
        .token_create("bench-agent", Role::Agent, None)
        .await
        .unwrap()
        .secret;
    let human = store
        .token_create("bench-human", Role::Human, None)
        .await
        .unwrap()
        .secret;
    let (base, _shared) = serve(store).await;
    flag_rate(&base, &agent, n, t).await;
    wake_latency(&base, &agent, &human, None, "answered through the API", t).await;
    let other = Store::open(&path).await.unwrap();
    wake_latency(
        &base,
        &agent,
        &human,
        Some(&other),
        "answered by another process's write",
        t,
    )
    .await;
}
