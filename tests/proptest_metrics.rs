//! Property test: what `/metrics` counts (`Store::counts`, read from
//! indexes at scrape time, no counter rows) equals a full scan of the
//! actions after a random history — proposals in two projects with and
//! without expiry, decisions, claims, completions, lapses to `unknown`,
//! clock moves with and without a sweep, so some actions are expired only
//! lazily (still `pending` in their row) — for every project and for all,
//! and again after the store is closed and opened anew (a daemon's
//! restart). On both engines (tests/common/engine.rs), each case on a
//! fresh database.

mod common;

use common::engine::{Db, Engine};
use handoff::clock::Clock;
use handoff::store::Store;
use handoff::store::actions::{Actor, NewAction, OnExpire, Status};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::json;

const T0: i64 = 1_700_000_000_000;
const PROJECTS: [&str; 2] = ["alpha", "beta"];

#[derive(Debug, Clone)]
enum Op {
    /// Propose in project `.0`, with this ttl (ms) and on-expiry choice.
    Propose(usize, Option<i64>, bool),
    Approve(usize),
    Reject(usize),
    Claim(usize),
    Complete(usize, bool),
    Tick(i64),
    ExpireDue,
    Recover,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, prop::option::of(prop::sample::select(vec![500i64, 2_000])), any::<bool>())
            .prop_map(|(p, t, r)| Op::Propose(p, t, r)),
        4 => (0..16usize).prop_map(Op::Approve),
        1 => (0..16usize).prop_map(Op::Reject),
        2 => (0..16usize).prop_map(Op::Claim),
        2 => ((0..16usize), any::<bool>()).prop_map(|(i, s)| Op::Complete(i, s)),
        2 => prop::sample::select(vec![100i64, 600, 1_500]).prop_map(Op::Tick),
        1 => Just(Op::ExpireDue),
        1 => Just(Op::Recover),
    ]
}

/// The counts a full scan gives: every action read, its effective status
/// at `now` (lazy expiry applied), tallied for `project` (all when None).
async fn scanned(store: &Store, project: Option<&str>, now: i64) -> Vec<(Status, i64)> {
    let all = store.list_actions(None).await.unwrap();
    Status::ALL
        .into_iter()
        .map(|st| {
            let n = all
                .iter()
                .filter(|a| project.is_none_or(|p| a.project == p))
                .filter(|a| a.effective_status(now) == st)
                .count();
            (st, n as i64)
        })
        .collect()
}

async fn check(store: &Store, now: i64, when: &str) {
    for project in [None, Some(PROJECTS[0]), Some(PROJECTS[1]), Some("none")] {
        let counted = store.counts(project).await.unwrap().actions;
        let scan = scanned(store, project, now).await;
        assert_eq!(counted, scan, "{when}, project {project:?}");
    }
}

async fn run(engine: Engine, ops: Vec<Op>) {
    let db = Db::new(engine).await;
    let (store, clock) = db.open_manual(T0).await;
    let mut ids: Vec<String> = Vec::new();
    let pick = |ids: &[String], i: usize| (!ids.is_empty()).then(|| ids[i % ids.len()].clone());
    for op in &ops {
        match op {
            Op::Propose(p, ttl, reject) => {
                let new = NewAction {
                    project: PROJECTS[*p].into(),
                    session: format!("s-{}", PROJECTS[*p]),
                    ttl_ms: *ttl,
                    on_expire: if *reject {
                        OnExpire::Reject
                    } else {
                        OnExpire::Expire
                    },
                    ..common::new_action("deploy", &format!(r#"{{"n":{}}}"#, ids.len()))
                };
                ids.push(store.propose(&new).await.unwrap().action.id);
            }
            Op::Approve(i) => {
                if let Some(id) = pick(&ids, *i) {
                    store.approve(&id, Actor::cli("alice"), None).await.unwrap();
                }
            }
            Op::Reject(i) => {
                if let Some(id) = pick(&ids, *i) {
                    store.reject(&id, Actor::cli("bob"), "no").await.unwrap();
                }
            }
            Op::Claim(i) => {
                if let Some(id) = pick(&ids, *i) {
                    store.claim(&id, "runner", 1_000).await.unwrap();
                }
            }
            Op::Complete(i, ok) => {
                if let Some(id) = pick(&ids, *i) {
                    store
                        .complete(&id, "runner", *ok, json!({ "ok": ok }), None)
                        .await
                        .unwrap();
                }
            }
            Op::Tick(ms) => clock.advance(*ms),
            Op::ExpireDue => {
                store.expire_due().await.unwrap();
            }
            Op::Recover => {
                handoff::programs::recover(&store).await.unwrap();
            }
        }
    }
    let now = clock.now_ms();
    check(&store, now, "after the history").await;
    store.close().await;
    drop(store);
    let (store, _clock) = db.open_manual(now).await;
    check(&store, now, "after a restart").await;
}

fn metrics_equal_a_full_scan(engine: Engine) {
    let cases = common::proptest_cases(24);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&prop::collection::vec(op(), 1..40), move |ops| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(run(engine, ops));
            Ok(())
        })
        .unwrap();
}

#[test]
fn metrics_equal_a_full_scan_on_sqlite() {
    metrics_equal_a_full_scan(Engine::Sqlite);
}

#[test]
fn metrics_equal_a_full_scan_on_postgres() {
    metrics_equal_a_full_scan(Engine::Postgres);
}
