//! propose → approve → claim → complete cycles per second on a file
//! database: single-threaded, and with 8 concurrent approvers contending on
//! the same actions. A plain main (no criterion); prints a table.
//!
//! Run: `cargo bench --bench actions` (optionally `-- CYCLES`, default 500).

use std::time::Instant;

use handoff::store::Store;
use handoff::store::actions::{Actor, ClaimOutcome, NewAction};

fn proposal(i: usize) -> NewAction {
    NewAction {
        kind: "bench".into(),
        summary: "benchmark cycle".into(),
        args: format!(r#"{{"i":{i},"to":"bob","api_token":"x"}}"#),
        dedup_key: Some(format!("bench-{i}")),
        proposer: "bench".into(),
        ..Default::default()
    }
}

async fn single(store: &Store, n: usize) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        let id = store.propose(&proposal(i)).await.unwrap().action.id;
        store.approve(&id, Actor::cli("alice"), None).await.unwrap();
        store.claim(&id, "exec", 60_000).await.unwrap();
        store
            .complete(&id, "exec", true, serde_json::json!({"ok": true}), None)
            .await
            .unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

async fn contended(stores: &[Store], n: usize, offset: usize) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        let id = stores[0]
            .propose(&proposal(offset + i))
            .await
            .unwrap()
            .action
            .id;
        // 8 approvers tap at once; every one then tries to claim; one wins.
        let mut tasks = Vec::new();
        for a in 0..8 {
            let s = stores[a % stores.len()].clone();
            let id = id.clone();
            tasks.push(tokio::spawn(async move {
                s.approve(&id, Actor::cli(&format!("approver{a}")), None)
                    .await
                    .unwrap();
                let owner = format!("exec{a}");
                if let ClaimOutcome::Claimed { .. } = s.claim(&id, &owner, 60_000).await.unwrap() {
                    s.complete(&id, &owner, true, serde_json::json!(null), None)
                        .await
                        .unwrap();
                    1
                } else {
                    0
                }
            }));
        }
        let mut runs = 0;
        for t in tasks {
            runs += t.await.unwrap();
        }
        assert_eq!(runs, 1, "exactly one execution per action");
    }
    n as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(500);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let stores = [
        Store::open(&path).await.unwrap(),
        Store::open(&path).await.unwrap(),
        Store::open(&path).await.unwrap(),
        Store::open(&path).await.unwrap(),
    ];
    let one = single(&stores[0], n).await;
    let eight = contended(&stores, n, n).await;
    println!("| scenario (file db, WAL, synchronous=NORMAL) | cycles | cycles/s |");
    println!("|---|---:|---:|");
    println!("| single-threaded propose→approve→claim→complete | {n} | {one:.0} |");
    println!("| 8 concurrent approvers + claimers per action (4 handles) | {n} | {eight:.0} |");
}
