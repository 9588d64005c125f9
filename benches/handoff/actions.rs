//! propose → approve → claim → complete cycles per second on a file
//! database: single-threaded, and contended, where 8 approvers tap the same
//! action at once and then all try to claim it (exactly one may run it).

use std::time::Instant;

use handoff::store::Store;
use handoff::store::actions::{Actor, ClaimOutcome, NewAction};

use crate::{Table, thousands};

pub async fn run(quick: bool, t: &mut Table) {
    let n = if quick { 50 } else { 500 };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let mut stores = Vec::new();
    for _ in 0..4 {
        stores.push(Store::open(&path).await.unwrap());
    }
    let one = single(&stores[0], n).await;
    t.row(
        "actions",
        format!("propose → approve → claim → complete, single-threaded ({n} cycles)"),
        format!("{} cycles/s", thousands(one)),
    );
    let eight = contended(&stores, n, n).await;
    t.row(
        "actions",
        format!("contended approve: 8 approvers + claimers per action on 4 handles ({n} actions, exactly one run each)"),
        format!("{} actions/s", thousands(eight)),
    );
}

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
