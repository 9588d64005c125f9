//! Property test: random sequences of decisions, executions, clock moves,
//! expiry sweeps and recoveries on one action, checked step by step against
//! a small in-memory model of docs/design.md §4 — CAS decisions with the TTL in the
//! predicate (approving at the expiry millisecond is refused), quorum of
//! distinct approvers, one rejection rejects, claim/complete by the owner
//! only, lapsed leases become `unknown`, only a person resolves `unknown`.
//! After every step the audit trail replays, through the transition table,
//! to the stored status. Over half the cases start with a scripted walk
//! into `unknown` (approve, claim, let the lease lapse, recover, and
//! perhaps a person's verdict), and the
//! run as a whole must have reached the deep transitions — `unknown` →
//! retry → claimed again, `unknown` → executed/failed — or it tested only
//! the shallow end. It runs on both engines (tests/common/engine.rs), each
//! case on a fresh database.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use std::sync::{Arc, Mutex};

use common::engine::{Db, Engine};
use handoff::store::actions::{
    Actor, ApproveOutcome, AuditEntry, ClaimOutcome, CompleteOutcome, NewAction, OnExpire,
    RejectOutcome, Resolution, Status,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::json;

const T0: i64 = 1_700_000_000_000;
const LEASE: i64 = 1_000;
const PEOPLE: [&str; 3] = ["alice", "bob", "carol"];
const OWNERS: [&str; 2] = ["exec-1", "exec-2"];

#[derive(Debug, Clone)]
enum Op {
    Approve(usize),
    Reject(usize),
    Claim(usize),
    Complete(usize, bool),
    Extend(usize),
    Tick(i64),
    /// Put the clock exactly on the expiry millisecond.
    ToExpiry,
    ExpireDue,
    Recover,
    Resolve(Resolution),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3usize).prop_map(Op::Approve),
        1 => (0..3usize).prop_map(Op::Reject),
        3 => (0..2usize).prop_map(Op::Claim),
        3 => ((0..2usize), prop::bool::weighted(0.7)).prop_map(|(o, s)| Op::Complete(o, s)),
        1 => (0..2usize).prop_map(Op::Extend),
        3 => prop::sample::select(vec![1i64, 400, 999, 1_000, 2_500]).prop_map(Op::Tick),
        1 => Just(Op::ToExpiry),
        1 => Just(Op::ExpireDue),
        2 => Just(Op::Recover),
        1 => prop::sample::select(vec![Resolution::Executed, Resolution::Failed, Resolution::Retry])
            .prop_map(Op::Resolve),
    ]
}

#[derive(Debug, Clone)]
struct Model {
    now: i64,
    status: Status,
    required: i64,
    approvers: BTreeSet<usize>,
    expires_at: Option<i64>,
    on_expire: OnExpire,
    owner: Option<usize>,
    lease_until: Option<i64>,
    attempts: i64,
}

impl Model {
    fn expired_now(&self) -> bool {
        self.status == Status::Pending && self.expires_at.is_some_and(|e| e <= self.now)
    }

    fn settle_expiry(&mut self) -> bool {
        if !self.expired_now() {
            return false;
        }
        self.status = match self.on_expire {
            OnExpire::Expire => Status::Expired,
            OnExpire::Reject => Status::Rejected,
        };
        true
    }

    fn approve(&mut self, who: usize) -> &'static str {
        if self.status == Status::Pending && !self.expired_now() && !self.approvers.contains(&who) {
            self.approvers.insert(who);
            if self.approvers.len() as i64 >= self.required {
                self.status = Status::Approved;
                return "approved";
            }
            return "approval_added";
        }
        if self.settle_expiry() {
            return "expired";
        }
        match self.status {
            Status::Expired => "expired",
            Status::Pending => "already_approved_by",
            _ => "already_decided",
        }
    }

    fn reject(&mut self) -> &'static str {
        if self.status == Status::Pending && !self.expired_now() {
            self.status = Status::Rejected;
            return "rejected";
        }
        if self.settle_expiry() {
            return "expired";
        }
        "already_decided"
    }

    fn claim(&mut self, owner: usize) -> &'static str {
        if self.status != Status::Approved {
            return "not_claimable";
        }
        self.status = Status::Executing;
        self.owner = Some(owner);
        self.lease_until = Some(self.now + LEASE);
        self.attempts += 1;
        "claimed"
    }

    fn complete(&mut self, owner: usize, success: bool) -> &'static str {
        if self.status != Status::Executing || self.owner != Some(owner) {
            return "not_owner";
        }
        self.status = if success {
            Status::Executed
        } else {
            Status::Failed
        };
        self.lease_until = None;
        "completed"
    }

    fn extend(&mut self, owner: usize) -> bool {
        if self.status != Status::Executing || self.owner != Some(owner) {
            return false;
        }
        self.lease_until = self.lease_until.max(Some(self.now + LEASE));
        true
    }

    fn recover(&mut self) -> usize {
        if self.status == Status::Executing && self.lease_until.is_some_and(|l| l <= self.now) {
            self.status = Status::Unknown;
            self.lease_until = None;
            1
        } else {
            0
        }
    }

    fn resolve(&mut self, r: Resolution) -> bool {
        if self.status != Status::Unknown {
            return false;
        }
        self.status = match r {
            Resolution::Executed => Status::Executed,
            Resolution::Failed => Status::Failed,
            Resolution::Retry => {
                self.owner = None;
                Status::Approved
            }
        };
        true
    }
}

/// Replay an audit trail through docs/design.md §4's transition table; panics on
/// a transition that does not exist. Returns the state it ends in.
fn replay(audit: &[AuditEntry]) -> Status {
    use Status::*;
    let mut s: Option<Status> = None;
    for e in audit {
        let next = match (s, e.event.as_str()) {
            (None, "proposed") => Pending,
            (Some(Pending), "approval_added" | "patched") => Pending,
            (Some(Pending), "approved") => Approved,
            (Some(Pending), "rejected") => Rejected,
            (Some(Pending), "expired") => Expired,
            (Some(Approved), "claimed") => Executing,
            (Some(Executing), "verifying") => Executing,
            (Some(Executing | Unknown), "executed") => Executed,
            (Some(Executing | Unknown), "failed") => Failed,
            (Some(Executing), "unknown") => Unknown,
            (Some(Executing | Unknown), "retry") => Approved,
            (from, ev) => panic!("no transition {from:?} --{ev}--> in {audit:#?}"),
        };
        s = Some(next);
    }
    s.expect("an audit trail starts with `proposed`")
}

/// A scripted start that reaches `unknown` whatever the quorum: three
/// distinct approvals, a claim, the lease lapsing, a recovery.
fn into_unknown() -> Vec<Op> {
    vec![
        Op::Approve(0),
        Op::Approve(1),
        Op::Approve(2),
        Op::Claim(0),
        Op::Tick(2_500),
        Op::Recover,
    ]
}

/// [`into_unknown`], then `op`.
fn then(op: Op) -> Vec<Op> {
    let mut v = into_unknown();
    v.push(op);
    v
}

/// Run `ops`; returns every status change the store made, in order.
async fn run(
    engine: Engine,
    required: i64,
    ttl: Option<i64>,
    on_expire: OnExpire,
    ops: Vec<Op>,
) -> Vec<(Status, Status)> {
    let mut changes = Vec::new();
    let db = Db::new(engine).await;
    let (store, clock) = db.open_manual(T0).await;
    let new = NewAction {
        approvals_required: required,
        ttl_ms: ttl,
        on_expire,
        ..common::new_action("deploy", r#"{"version":"1.2"}"#)
    };
    let id = store.propose(&new).await.unwrap().action.id;
    let mut m = Model {
        now: T0,
        status: Status::Pending,
        required,
        approvers: BTreeSet::new(),
        expires_at: ttl.map(|t| T0 + t),
        on_expire,
        owner: None,
        lease_until: None,
        attempts: 0,
    };
    let person = |i: usize| Actor {
        name: PEOPLE[i],
        channel: handoff::store::Channel::Chat,
    };
    for (step, op) in ops.iter().enumerate() {
        // The model as it stood before this step, for failure messages.
        let c = format!("step {step} {op:?}\nmodel before {m:#?}");
        let before = m.status;
        match op {
            Op::Approve(who) => {
                let got = match store.approve(&id, person(*who), None).await.unwrap() {
                    ApproveOutcome::Approved { .. } => "approved",
                    ApproveOutcome::ApprovalAdded { .. } => "approval_added",
                    ApproveOutcome::AlreadyApprovedBy { .. } => "already_approved_by",
                    ApproveOutcome::AlreadyDecided { .. } => "already_decided",
                    ApproveOutcome::Expired { .. } => "expired",
                    ApproveOutcome::PatchRefused { .. } => "patch_refused",
                    ApproveOutcome::SelfApproval { .. } => "self_approval",
                };
                assert_eq!(got, m.approve(*who), "{c}");
            }
            Op::Reject(who) => {
                let got = match store.reject(&id, person(*who), "no").await.unwrap() {
                    RejectOutcome::Rejected { .. } => "rejected",
                    RejectOutcome::AlreadyDecided { .. } => "already_decided",
                    RejectOutcome::Expired { .. } => "expired",
                };
                assert_eq!(got, m.reject(), "{c}");
            }
            Op::Claim(o) => {
                let got = match store.claim(&id, OWNERS[*o], LEASE).await.unwrap() {
                    ClaimOutcome::Claimed { .. } => "claimed",
                    ClaimOutcome::NotClaimable { .. } => "not_claimable",
                };
                assert_eq!(got, m.claim(*o), "{c}");
            }
            Op::Complete(o, success) => {
                let got = match store
                    .complete(&id, OWNERS[*o], *success, json!({"ok": success}), None)
                    .await
                    .unwrap()
                {
                    CompleteOutcome::Completed { .. } => "completed",
                    CompleteOutcome::NotOwner { .. } => "not_owner",
                };
                assert_eq!(got, m.complete(*o, *success), "{c}");
            }
            Op::Extend(o) => {
                let got = store.extend_lease(&id, OWNERS[*o], LEASE).await.unwrap();
                assert_eq!(got, m.extend(*o), "{c}");
            }
            Op::Tick(ms) => {
                clock.advance(*ms);
                m.now += ms;
            }
            Op::ToExpiry => {
                if let Some(e) = m.expires_at {
                    clock.set(e.max(m.now));
                    m.now = e.max(m.now);
                }
            }
            Op::ExpireDue => {
                let got = store.expire_due().await.unwrap().len();
                assert_eq!(got, usize::from(m.settle_expiry()), "{c}");
            }
            Op::Recover => {
                let report = handoff::programs::recover(&store).await.unwrap();
                assert_eq!(report.unknown.len(), m.recover(), "{c}");
                let claimable = report.claimable.iter().any(|a| a.id == id);
                assert_eq!(claimable, m.status == Status::Approved, "{c}");
            }
            Op::Resolve(r) => {
                let got = store
                    .resolve_unknown(&id, Actor::cli("alice"), *r)
                    .await
                    .unwrap()
                    .is_ok();
                assert_eq!(got, m.resolve(*r), "{c}");
            }
        }
        let a = store.get_action(&id).await.unwrap();
        assert_eq!(a.status, m.status, "status: {c}\nstored {a:#?}");
        assert_eq!(a.approvals, m.approvers.len() as i64, "approvals: {c}");
        assert_eq!(a.attempts, m.attempts, "attempts: {c}");
        assert_eq!(
            a.lease_until.is_some(),
            m.lease_until.is_some(),
            "lease: {c}"
        );
        if a.status == Status::Executing {
            assert_eq!(a.owner.as_deref(), m.owner.map(|o| OWNERS[o]), "owner: {c}");
            assert_eq!(a.lease_until, m.lease_until, "lease: {c}");
        }
        // Lazy expiry: an unswept pending action past its expiry shows as settled.
        let shown = if m.expired_now() {
            match on_expire {
                OnExpire::Expire => Status::Expired,
                OnExpire::Reject => Status::Rejected,
            }
        } else {
            m.status
        };
        assert_eq!(a.effective_status(m.now), shown, "effective status: {c}");
        let audit = store.action_audit(&id).await.unwrap();
        assert_eq!(replay(&audit), a.status, "audit vs status: {c}");
        let approved = audit.iter().filter(|e| e.event == "approved").count();
        assert!(approved <= 1, "approved at most once: {c}\n{audit:#?}");
        if a.status != before {
            changes.push((before, a.status));
        }
    }
    changes
}

#[test]
fn action_transitions_follow_the_model_on_sqlite() {
    follow_the_model(Engine::Sqlite);
}

#[test]
fn action_transitions_follow_the_model_on_postgres() {
    follow_the_model(Engine::Postgres);
}

/// The runner's settings: `cases`, and this file as the source, so the
/// seeds in `proptest_actions.proptest-regressions` run before any new
/// case and a new failure's seed is saved there — what `proptest!` does
/// for the tests it writes, and a hand-built runner does not.
fn runner_config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    }
}

/// The regressions file is found and read: without a source file the
/// runner reads none, and the saved seeds would never run again.
#[test]
fn the_saved_regressions_are_replayed() {
    let config = runner_config(1);
    let seeds = config
        .failure_persistence
        .as_ref()
        .expect("failures are persisted")
        .load_persisted_failures2(config.source_file);
    assert!(
        !seeds.is_empty(),
        "no seed read from tests/proptest_actions.proptest-regressions"
    );
}

fn follow_the_model(engine: Engine) {
    let cases = common::proptest_cases(64);
    let mut runner = TestRunner::new(runner_config(cases));
    let reached: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let strategy = (
        1..=3i64,
        prop::option::of(prop::sample::select(vec![1_000i64, 3_000])),
        any::<bool>(),
        // Scripted starts into the deep end; each then goes on at random.
        prop_oneof![
            4 => Just(Vec::new()),
            1 => Just(into_unknown()),
            1 => Just(then(Op::Resolve(Resolution::Retry))),
            1 => Just([then(Op::Resolve(Resolution::Retry)), vec![Op::Claim(1)]].concat()),
            1 => Just(then(Op::Resolve(Resolution::Executed))),
            1 => Just(then(Op::Resolve(Resolution::Failed))),
        ],
        prop::collection::vec(op(), 1..32),
    );
    let seen = reached.clone();
    runner
        .run(
            &strategy,
            move |(required, ttl, reject_on_expiry, start, more)| {
                let on_expire = if reject_on_expiry {
                    OnExpire::Reject
                } else {
                    OnExpire::Expire
                };
                let ops: Vec<Op> = start.into_iter().chain(more).collect();
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let changes = rt.block_on(run(engine, required, ttl, on_expire, ops));
                let mut seen = seen.lock().unwrap();
                for (from, to) in &changes {
                    *seen
                        .entry(format!("{} -> {}", from.as_str(), to.as_str()))
                        .or_default() += 1;
                }
                // A retry that was then claimed again, in one case.
                let retry = changes
                    .iter()
                    .position(|c| *c == (Status::Unknown, Status::Approved));
                if retry
                    .is_some_and(|i| changes[i..].contains(&(Status::Approved, Status::Executing)))
                {
                    *seen
                        .entry("retried, then claimed again".into())
                        .or_default() += 1;
                }
                Ok(())
            },
        )
        .unwrap();
    let reached = reached.lock().unwrap();
    println!("transitions reached over {cases} cases: {reached:?}");
    // The deep end, which only a long enough walk gets to. With fewer than
    // 32 cases (a quick local run) coverage is reported, not required.
    if cases >= 32 {
        for deep in [
            "executing -> unknown",
            "unknown -> approved",
            "unknown -> executed",
            "unknown -> failed",
            "retried, then claimed again",
        ] {
            assert!(
                reached.get(deep).is_some_and(|n| *n > 0),
                "no case reached {deep}: {reached:?}"
            );
        }
    }
}
