//! propose → approve → claim → complete cycles per second on a file
//! database: single-threaded, and contended, where 8 approvers tap the same
//! action at once and then all try to claim it (exactly one may run it).

use std::time::Instant;

use handoff::store::Store;
use handoff::store::actions::{Actor, ApproveOutcome, ClaimOutcome, NewAction};

use crate::{Table, thousands};

pub async fn run(quick: bool, t: &mut Table) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let mut stores = Vec::new();
    for _ in 0..4 {
        stores.push(Store::open(&path).await.unwrap());
    }
    rows(quick, &stores, "", t).await;
}

/// The same rows on PostgreSQL: a throw-away local server on a Unix socket
/// (tests/common/postgres.rs), four stores on it (each a pool of its own).
pub async fn run_postgres(quick: bool, t: &mut Table) {
    let db = crate::postgres::PgDb::new().await;
    let mut stores = Vec::new();
    for _ in 0..4 {
        let clock = std::sync::Arc::new(handoff::clock::SystemClock);
        stores.push(Store::open_postgres(&db.url, clock).await.unwrap());
    }
    rows(quick, &stores, " — PostgreSQL (local, Unix socket)", t).await;
}

async fn rows(quick: bool, stores: &[Store], on: &str, t: &mut Table) {
    let n = if quick { 50 } else { 500 };
    let one = single(&stores[0], n).await;
    t.row(
        "actions",
        format!("propose → approve → claim → complete, single-threaded ({n} cycles){on}"),
        format!("{} cycles/s", thousands(one)),
    );
    let wins = single_transition(&stores[0], 4 * n, 10 * n).await;
    t.row(
        "actions",
        format!("a single winning transition: approve of a pending action, quorum 1 ({} approvals; compare `python3 benches/peer/raw_sqlite.py`){on}", 4 * n),
        format!("{} transitions/s", thousands(wins)),
    );
    let m = if quick { 50 } else { 500 };
    let peer = peer_shape(&stores[0], m, 2 * n).await;
    t.row(
        "actions",
        format!("contended, the peer's shape: {m} actions proposed first, 8 approvers in one process approve each in order, the winner claims, runs a no-op, completes{on}"),
        format!("{} actions/s", thousands(peer)),
    );
    let eight = contended(stores, n, n).await;
    t.row(
        "actions",
        format!("contended approve: 8 approvers + claimers per action on 4 handles ({n} actions, exactly one run each){on}"),
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
        let ClaimOutcome::Claimed { action } = store.claim(&id, "exec", 60_000).await.unwrap()
        else {
            panic!("an approved action is claimable")
        };
        store
            .complete_claimed(&action, "exec", true, serde_json::json!({"ok": true}), None)
            .await
            .unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// `n` actions proposed first (not timed), then approved one after the
/// other: each approval is one winning guarded transition (the UPDATE,
/// its approvals, audit and event rows), the unit the raw SQLite loop of
/// `benches/peer/raw_sqlite.py` measures.
async fn single_transition(store: &Store, n: usize, offset: usize) -> f64 {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let mut p = proposal(offset + i);
        p.approvals_required = 1;
        ids.push(store.propose(&p).await.unwrap().action.id);
    }
    let start = Instant::now();
    for id in &ids {
        let won = store.approve(id, Actor::cli("alice"), None).await.unwrap();
        assert!(matches!(won, ApproveOutcome::Approved { .. }), "{won:?}");
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
                if let ClaimOutcome::Claimed { action } =
                    s.claim(&id, &owner, 60_000).await.unwrap()
                {
                    s.complete_claimed(&action, &owner, true, serde_json::json!(null), None)
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

/// holdpoint's contended shape (`benches/peer/holdpoint_bench.py`): `m`
/// actions proposed first (not timed), then 8 approvers, each a task on one
/// store handle, approve every action in order; the one whose approval
/// decides claims it, runs a no-op and completes. Exactly one run each.
async fn peer_shape(store: &Store, m: usize, offset: usize) -> f64 {
    let mut ids = Vec::with_capacity(m);
    for i in 0..m {
        ids.push(
            store
                .propose(&proposal(offset + i))
                .await
                .unwrap()
                .action
                .id,
        );
    }
    let ids = std::sync::Arc::new(ids);
    let gate = std::sync::Arc::new(tokio::sync::Barrier::new(9));
    let mut tasks = Vec::new();
    for a in 0..8 {
        let (s, ids, gate) = (store.clone(), ids.clone(), gate.clone());
        tasks.push(tokio::spawn(async move {
            let me = format!("approver{a}");
            let mut runs = vec![0u32; ids.len()];
            gate.wait().await;
            for (k, id) in ids.iter().enumerate() {
                if let ApproveOutcome::Approved { .. } =
                    s.approve(id, Actor::cli(&me), None).await.unwrap()
                    && let ClaimOutcome::Claimed { action } =
                        s.claim(id, &me, 60_000).await.unwrap()
                {
                    runs[k] += 1; // the no-op
                    s.complete_claimed(&action, &me, true, serde_json::json!({"ok": true}), None)
                        .await
                        .unwrap();
                }
            }
            runs
        }));
    }
    gate.wait().await;
    let start = Instant::now();
    let mut runs = vec![0u32; m];
    for t in tasks {
        for (k, r) in t.await.unwrap().into_iter().enumerate() {
            runs[k] += r;
        }
    }
    let rate = m as f64 / start.elapsed().as_secs_f64();
    assert!(runs.iter().all(|&r| r == 1), "exactly one run per action");
    rate
}
