//! Rules, verifier and retention family: auto-decisions audited as
//! `rule:<name>`, verifiers that settle interrupted executions, and purge.
//! Every test but the CLI ones runs on both engines (tests/common/engine.rs).

mod common;

use common::engine::Db;
use common::{TempDb, count, new_action};
use handoff::store::Store;
use handoff::store::actions::{Actor, ClaimOutcome, RuleDecision, RulesFile, Status};

const RULES: &str = r#"
[[rule]]
name = "small-refunds"
kind = "refund"
decide = "approve"
when = [{ pointer = "/amount", less_than = 100 }, { pointer = "/currency", one_of = ["EUR", "USD"] }]

[[rule]]
name = "no-prod-drops"
kind = "db.*"
decide = "reject"
reason = "never drop production tables"
when = [{ pointer = "/env", equals = "prod" }]

[[rule]]
name = "oracle"
kind = "email.send"
command = ["sh", "-c", "grep -q '\"to\":\"boss\"' && echo reject || echo ask"]
"#;

async fn trail(s: &Store, id: &str) -> Vec<(String, String)> {
    s.action_audit(id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.event, e.actor))
        .collect()
}

async fn rules_approve_routine_actions_and_reject_others(db: Db) {
    let s = db.open().await;
    let rules = RulesFile::parse(RULES).unwrap().rule;

    let mut n = new_action("refund", r#"{"amount":40,"currency":"EUR"}"#);
    n.approvals_required = 2; // a rule decides outright
    let a = s.propose(&n).await.unwrap().action;
    let applied = handoff::programs::apply_rules(&s, &a, &rules)
        .await
        .unwrap()
        .expect("a rule decides");
    assert_eq!(
        (applied.rule.as_str(), applied.decision),
        ("small-refunds", RuleDecision::Approve)
    );
    assert_eq!(applied.action.status, Status::Approved);
    assert_eq!(
        applied.action.decided_by.as_deref(),
        Some("rule:small-refunds")
    );
    assert_eq!(
        trail(&s, &a.id).await,
        [
            ("proposed".into(), "agent".into()),
            ("approved".into(), "rule:small-refunds".into())
        ]
    );

    let big = s
        .propose(&new_action("refund", r#"{"amount":400,"currency":"EUR"}"#))
        .await
        .unwrap()
        .action;
    assert!(
        handoff::programs::apply_rules(&s, &big, &rules)
            .await
            .unwrap()
            .is_none(),
        "no rule matches: a person decides"
    );
    assert_eq!(s.get_action(&big.id).await.unwrap().status, Status::Pending);

    let drop = s
        .propose(&new_action("db.drop", r#"{"env":"prod","table":"users"}"#))
        .await
        .unwrap()
        .action;
    let applied = handoff::programs::apply_rules(&s, &drop, &rules)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(applied.action.status, Status::Rejected);
    assert_eq!(
        applied.action.reason.as_deref(),
        Some("never drop production tables")
    );
    assert_eq!(
        trail(&s, &drop.id).await[1],
        ("rejected".into(), "rule:no-prod-drops".into())
    );

    // The external decider: reject for the boss, ask otherwise.
    let boss = s
        .propose(&new_action("email.send", r#"{"to":"boss"}"#))
        .await
        .unwrap()
        .action;
    let applied = handoff::programs::apply_rules(&s, &boss, &rules)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (applied.decision, applied.action.status),
        (RuleDecision::Reject, Status::Rejected)
    );
    assert_eq!(trail(&s, &boss.id).await[1].1, "rule:oracle");
    let friend = s
        .propose(&new_action("email.send", r#"{"to":"friend"}"#))
        .await
        .unwrap()
        .action;
    assert!(
        handoff::programs::apply_rules(&s, &friend, &rules)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        s.get_action(&friend.id).await.unwrap().status,
        Status::Pending
    );
}

// SQLite only: it runs the CLI, which still refuses a PostgreSQL URL.
#[tokio::test]
async fn the_cli_applies_a_rules_file_at_propose_time() {
    let db = TempDb::new();
    let rules = db.dir.path().join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    let out = db.cli(&[
        "--json",
        "propose",
        "--kind",
        "refund",
        "--summary",
        "refund",
        "--args",
        r#"{"amount":5,"currency":"USD"}"#,
        "--rules",
        rules.to_str().unwrap(),
        "--wait",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(common::json(&out)["action"]["status"], "approved");
    assert_eq!(
        common::json(&out)["action"]["decided_by"],
        "rule:small-refunds"
    );
    // A broken rules file is refused before anything is written.
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"x\"\ndecide = \"approve\"\ncolour = 1\n",
    )
    .unwrap();
    let s = db.open().await;
    let before = count(&s, "actions").await;
    let out = db.cli(&[
        "propose",
        "--kind",
        "refund",
        "--summary",
        "r",
        "--rules",
        rules.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("colour"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(count(&s, "actions").await, before);
}

async fn interrupted(s: &Store, clock: &handoff::clock::ManualClock, verify: &str) -> String {
    let mut n = new_action("deploy", r#"{"v":"1"}"#);
    n.verify = Some(vec!["sh".into(), "-c".into(), verify.into()]);
    let id = s.propose(&n).await.unwrap().action.id;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(
        s.claim(&id, "dead-executor", 1000).await.unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
    clock.advance(1000);
    id
}

async fn a_verifier_turns_an_interruption_into_executed(db: Db) {
    let (s, clock) = db.open_manual(1_800_000_000_000).await;
    // The verifier sees the action (and its id) and confirms the side effect.
    let id = interrupted(
        &s,
        &clock,
        "grep -q \"$HANDOFF_ACTION_ID\" && echo executed",
    )
    .await;
    let rep = handoff::programs::recover(&s).await.unwrap();
    assert!(rep.unknown.is_empty());
    assert_eq!(rep.verified_executed.len(), 1);
    let a = s.get_action(&id).await.unwrap();
    assert_eq!((a.status, a.attempts), (Status::Executed, 1));
    let events: Vec<String> = trail(&s, &id).await.into_iter().map(|e| e.0).collect();
    assert_eq!(
        events,
        ["proposed", "approved", "claimed", "verifying", "executed"]
    );
}

async fn a_verifier_turns_an_interruption_into_one_rerun(db: Db) {
    let (s, clock) = db.open_manual(1_800_000_000_000).await;
    let id = interrupted(&s, &clock, "echo rerun").await;
    let rep = handoff::programs::recover(&s).await.unwrap();
    assert_eq!(rep.rerun.len(), 1);
    assert_eq!(rep.claimable.len(), 1);
    let again = handoff::programs::recover(&s).await.unwrap();
    assert!(again.rerun.is_empty(), "the verifier ran once");
    assert!(matches!(
        s.claim(&id, "second", 1000).await.unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
    assert!(matches!(
        s.claim(&id, "third", 1000).await.unwrap(),
        ClaimOutcome::NotClaimable { .. }
    ));
    s.complete(&id, "second", true, serde_json::json!("ok"), None)
        .await
        .unwrap();
    let a = s.get_action(&id).await.unwrap();
    assert_eq!((a.status, a.attempts), (Status::Executed, 2));
    let events: Vec<String> = trail(&s, &id).await.into_iter().map(|e| e.0).collect();
    assert_eq!(
        events,
        [
            "proposed",
            "approved",
            "claimed",
            "verifying",
            "retry",
            "claimed",
            "executed"
        ]
    );

    // A verifier that cannot tell leaves it unknown, for a person.
    let id = interrupted(&s, &clock, "echo unknown").await;
    assert_eq!(
        handoff::programs::recover(&s).await.unwrap().unknown.len(),
        1
    );
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Unknown);
}

async fn purge_deletes_settled_actions_with_their_audit_and_refuses_live_ones(db: Db) {
    let (s, clock) = db.open_manual(1_800_000_000_000).await;
    let old_rejected = s
        .propose(&new_action("k", r#"{"i":1}"#))
        .await
        .unwrap()
        .action
        .id;
    s.reject(&old_rejected, Actor::cli("r"), "no")
        .await
        .unwrap();
    let old_executed = s
        .propose(&new_action("k", r#"{"i":2}"#))
        .await
        .unwrap()
        .action
        .id;
    s.approve(&old_executed, Actor::cli("a"), None)
        .await
        .unwrap();
    s.claim(&old_executed, "o", 1000).await.unwrap();
    s.complete(&old_executed, "o", true, serde_json::json!(null), None)
        .await
        .unwrap();
    let old_pending = s
        .propose(&new_action("k", r#"{"i":3}"#))
        .await
        .unwrap()
        .action
        .id;
    let old_unknown = s
        .propose(&new_action("k", r#"{"i":4}"#))
        .await
        .unwrap()
        .action
        .id;
    s.approve(&old_unknown, Actor::cli("a"), None)
        .await
        .unwrap();
    s.claim(&old_unknown, "o", 10).await.unwrap();
    clock.advance(20);
    handoff::programs::recover(&s).await.unwrap();
    clock.advance(86_400_000);
    let recent = s
        .propose(&new_action("k", r#"{"i":5}"#))
        .await
        .unwrap()
        .action
        .id;
    s.reject(&recent, Actor::cli("r"), "no").await.unwrap();
    let audit_before = count(&s, "action_audit").await;

    let rep = s
        .purge_actions(1_800_000_000_000 + 3_600_000)
        .await
        .unwrap();
    let mut purged = rep.purged.clone();
    purged.sort();
    let mut want = vec![old_rejected.clone(), old_executed.clone()];
    want.sort();
    assert_eq!(purged, want);
    // The log is the audit and keeps the purged actions' entries.
    assert_eq!(rep.audit_rows, 0);
    assert_eq!(rep.kept_live, 2);
    assert_eq!(count(&s, "action_audit").await, audit_before);
    let export = s
        .audit_export(None, None, "t", handoff::store::Channel::Cli)
        .await
        .unwrap();
    for id in [&old_rejected, &old_executed] {
        let n = export
            .lines
            .iter()
            .filter(|l| l.contains(id.as_str()))
            .count();
        assert!(n >= 2, "{id}'s audit entries stay in the log: {n}");
    }
    assert_eq!(count(&s, "action_purge_guard").await, 0);
    for id in [&old_pending, &old_unknown, &recent] {
        assert!(!s.action_audit(id).await.unwrap().is_empty());
    }
    assert!(s.get_action(&old_rejected).await.is_err());

    // Outside purge too the log stays append-only, even for settled actions.
    let err = db
        .exec("DELETE FROM events WHERE entity_id = $1", &[&recent])
        .await
        .unwrap_err();
    assert!(err.contains("events are append-only"), "{err}");
}

// SQLite only: it runs the CLI, which still refuses a PostgreSQL URL.
#[tokio::test]
async fn purge_on_the_cli_refuses_a_date_it_cannot_read() {
    let db = TempDb::new();
    let out = db.cli(&["purge", "--before", "not-a-date"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Wait until a recoverer has taken `id` over for its verifier.
async fn held_for_verifier(s: &Store, id: &str) -> handoff::store::actions::Action {
    loop {
        let a = s.get_action(id).await.unwrap();
        if a.owner
            .as_deref()
            .is_some_and(|o| o.starts_with("recovery:"))
        {
            return a;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

async fn a_running_verifier_holds_a_renewed_lease_that_a_second_recovery_respects(db: Db) {
    let (s, clock) = db.open_manual(1_800_000_000_000).await;
    // Runs longer than a renewal period (2 s): its hold must be renewed.
    let id = interrupted(&s, &clock, "sleep 3; echo executed").await;
    let now = handoff::clock::Clock::now_ms(&*clock);
    let first = {
        let s = s.clone();
        tokio::spawn(async move { handoff::programs::recover(&s).await.unwrap() })
    };
    let held = held_for_verifier(&s, &id).await;
    assert_eq!(held.lease_until, Some(now + 6_000), "a 6 s verifier lease");
    // Past the first lease's end the verifier still holds it: renewed
    // from the (moved) clock while it runs.
    clock.advance(5_000);
    let renewed = loop {
        let a = s.get_action(&id).await.unwrap();
        if a.lease_until == Some(now + 5_000 + 6_000) {
            break a;
        }
        assert_eq!(a.status, Status::Executing, "{a:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(renewed.owner, held.owner);
    clock.advance(3_000);
    // Another recovery meanwhile leaves it alone.
    let second = handoff::programs::recover(&s).await.unwrap();
    assert!(
        second.unknown.is_empty() && second.verified_executed.is_empty() && second.rerun.is_empty(),
        "{second:?}"
    );
    let rep = first.await.unwrap();
    assert_eq!(rep.verified_executed.len(), 1);
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Executed);
}

async fn a_verifier_whose_recoverer_died_is_asked_again_once_its_lease_lapses(db: Db) {
    let (s, clock) = db.open_manual(1_800_000_000_000).await;
    // The first time the verifier hangs; asked again, it answers.
    let dir = tempfile::tempdir().unwrap();
    let asked = dir.path().join("asked");
    let verify = format!(
        "if [ -e '{f}' ]; then echo executed; else : > '{f}'; sleep 30; fi",
        f = asked.display()
    );
    let id = interrupted(&s, &clock, &verify).await;
    // The first recoverer dies mid-verify (its task dropped, its verifier
    // killed with it) and never answers.
    let dying = {
        let s = s.clone();
        tokio::spawn(async move { handoff::programs::recover(&s).await.unwrap() })
    };
    held_for_verifier(&s, &id).await;
    while !asked.exists() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    dying.abort();
    let _ = dying.await;
    // Its hold lapses within a lease, not minutes later: the next
    // recovery takes the action over and asks the verifier again.
    clock.advance(6_000);
    let rep = handoff::programs::recover(&s).await.unwrap();
    assert_eq!(
        rep.verified_executed.len(),
        1,
        "a dead recoverer's hold lapses within its 6 s lease: {rep:?}"
    );
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Executed);
    let verifying = trail(&s, &id)
        .await
        .into_iter()
        .filter(|(event, _)| event == "verifying")
        .count();
    assert_eq!(verifying, 2, "taken over twice");
}

async fn a_rule_for_one_project_leaves_other_projects_to_people(db: Db) {
    let s = db.open().await;
    let rules = RulesFile::parse(
        "[[rule]]\nname = \"billing-refunds\"\nkind = \"refund\"\nproject = \"billing\"\ndecide = \"approve\"\n",
    )
    .unwrap()
    .rule;
    let mut n = new_action("refund", r#"{"amount":1}"#);
    n.project = "billing".into();
    let billing = s.propose(&n).await.unwrap().action;
    let applied = handoff::programs::apply_rules(&s, &billing, &rules)
        .await
        .unwrap();
    assert_eq!(
        applied.map(|a| a.action.status),
        Some(Status::Approved),
        "in its project"
    );
    n.project = "shop".into();
    n.session = "sess-shop".into();
    let shop = s.propose(&n).await.unwrap().action;
    assert!(
        handoff::programs::apply_rules(&s, &shop, &rules)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        s.get_action(&shop.id).await.unwrap().status,
        Status::Pending
    );
}

both_engines!(
    rules_approve_routine_actions_and_reject_others,
    a_verifier_turns_an_interruption_into_executed,
    a_verifier_turns_an_interruption_into_one_rerun,
    purge_deletes_settled_actions_with_their_audit_and_refuses_live_ones,
    a_running_verifier_holds_a_renewed_lease_that_a_second_recovery_respects,
    a_verifier_whose_recoverer_died_is_asked_again_once_its_lease_lapses,
    a_rule_for_one_project_leaves_other_projects_to_people
);
