//! Audit family: the exact trail of a full lifecycle, an engine-enforced
//! append-only table, and secrets that never reach the audit, the events or
//! any rendering — while the executor gets the real values. Every test but
//! the one reading the CLI's output runs on both engines
//! (tests/common/engine.rs).

mod common;

use common::engine::Db;
use common::{TempDb, new_action};
use handoff::store::actions::{Actor, Status};
use serde_json::json;

const T0: i64 = 1_800_000_000_000;

async fn exact_audit_trail_for_a_full_lifecycle(db: Db) {
    let (s, clock) = db.open_manual(T0).await;
    let mut n = new_action(
        "email.send",
        r#"{"to":"bob","subject":"hi","api_token":"s3cr3t"}"#,
    );
    n.approvals_required = 2;
    n.ttl_ms = Some(60_000);
    n.dedup_key = Some("m1".into());
    let a = s.propose(&n).await.unwrap().action;
    clock.advance(1);
    s.approve(&a.id, Actor::cli("alice"), None).await.unwrap();
    clock.advance(1);
    // A second approver may not patch arguments the first already approved…
    let refused = s
        .approve(&a.id, Actor::cli("bob"), Some(r#"{"subject":"hello"}"#))
        .await
        .unwrap();
    let handoff::store::actions::ApproveOutcome::PatchRefused { reason, .. } = refused else {
        panic!("a patch after an approval is refused: {refused:?}");
    };
    assert!(
        reason.starts_with("1 approval(s) were already given for the current arguments"),
        "the refusal says why: {reason}"
    );
    s.approve(&a.id, Actor::cli("bob"), None).await.unwrap();
    clock.advance(1);
    s.claim(&a.id, "exec-1", 5000).await.unwrap();
    clock.advance(1);
    s.complete(
        &a.id,
        "exec-1",
        true,
        json!({"message_id": "42", "token": "t0k"}),
        None,
    )
    .await
    .unwrap();

    let trail: Vec<_> = s
        .action_audit(&a.id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.at - T0, e.event, e.actor, e.details))
        .collect();
    let fp = a.fingerprint.clone();
    assert_eq!(
        trail,
        vec![
            (
                0,
                "proposed".into(),
                "agent".into(),
                json!({
                "kind": "email.send", "summary": "do email.send",
                "args": {"to": "bob", "subject": "hi", "api_token": "[redacted]"},
                "fingerprint": fp, "dedup_key": "m1",
                "expires_at": handoff::clock::format_rfc3339(T0 + 60_000), "on_expire": "expire",
                "approvals_required": 2, "proposer": "agent"})
            ),
            (
                1,
                "approval_added".into(),
                "alice".into(),
                json!({"approver": "alice", "approvals": 1, "required": 2})
            ),
            (
                2,
                "approved".into(),
                "bob".into(),
                json!({"approver": "bob", "approvals": 2, "required": 2})
            ),
            (
                3,
                "claimed".into(),
                "exec-1".into(),
                json!({
                "owner": "exec-1", "lease_until": handoff::clock::format_rfc3339(T0 + 3 + 5000), "attempt": 1})
            ),
            (
                4,
                "executed".into(),
                "exec-1".into(),
                json!({
                "owner": "exec-1", "result": {"message_id": "42", "token": "[redacted]"}, "error": null})
            ),
        ]
    );
    // Every transition has its event, with the proposer's session and project.
    let events = s.events_for("action", &a.id).await.unwrap();
    let kinds: Vec<_> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "action.proposed",
            "action.approval_added",
            "action.approved",
            "action.claimed",
            "action.executed"
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e.session == "sess-1" && e.project == "proj")
    );
    assert_eq!(s.get_action(&a.id).await.unwrap().status, Status::Executed);
}

async fn a_patch_is_audited_with_proposed_patch_and_effective_arguments(db: Db) {
    let s = db.open().await;
    let a = s
        .propose(&new_action("email.send", r#"{"to":"bob","password":"pw"}"#))
        .await
        .unwrap()
        .action;
    let out = s
        .approve(
            &a.id,
            Actor::cli("alice"),
            Some(r#"{"to":"carol","password":"pw2"}"#),
        )
        .await
        .unwrap();
    let act = out.action();
    assert_eq!(
        act.effective_args,
        json!({"to": "carol", "password": "pw2"}),
        "the executor gets real values"
    );
    assert_eq!(act.args, json!({"to": "bob", "password": "pw"}));
    let trail = s.action_audit(&a.id).await.unwrap();
    assert_eq!(trail[1].event, "patched");
    assert_eq!(trail[1].actor, "alice");
    assert_eq!(
        trail[1].details,
        json!({
            "proposed": {"to": "bob", "password": "[redacted]"},
            "before": {"to": "bob", "password": "[redacted]"},
            "patch": {"to": "carol", "password": "[redacted]"},
            "effective": {"to": "carol", "password": "[redacted]"},
        })
    );
    assert_eq!(trail[2].event, "approved");
}

/// The audit is the event log (docs/design.md §4): its entries refuse
/// UPDATE and DELETE in the engine, and the old table's name, now a view
/// of the log, writes nothing either.
async fn update_and_delete_on_the_audit_log_fail(db: Db) {
    let s = db.open().await;
    let a = s.propose(&new_action("k", "{}")).await.unwrap().action;
    s.reject(&a.id, Actor::cli("r"), "no").await.unwrap();
    for sql in [
        "UPDATE events SET actor = 'mallory' WHERE entity_kind = 'action'",
        "UPDATE events SET audit = '{}' WHERE audit IS NOT NULL",
        "DELETE FROM events",
        "DELETE FROM events WHERE type = 'action.rejected'",
    ] {
        let err = db.exec(sql, &[]).await.unwrap_err();
        assert!(err.contains("events are append-only"), "{sql}: {err}");
    }
    for sql in [
        "UPDATE action_audit SET actor = 'mallory'",
        "DELETE FROM action_audit",
        "INSERT INTO action_audit (action_id, at, actor, event, details) VALUES ('x', 1, 'm', 'e', '{}')",
    ] {
        assert!(
            db.exec(sql, &[]).await.is_err(),
            "{sql} wrote through the view"
        );
    }
    assert_eq!(s.action_audit(&a.id).await.unwrap().len(), 2);
}

// SQLite only: it reads the CLI's renderings, and the CLI still refuses a
// PostgreSQL URL.
#[tokio::test]
async fn secrets_never_appear_in_the_audit_events_or_renderings() {
    let db = TempDb::new();
    let s = db.open().await;
    let args = r#"{"to":"bob","Authorization":"Bearer SEKRIT-1","nested":{"db_password":"SEKRIT-2",
                   "list":[{"GitHub_Token":"SEKRIT-3"}]},"API_KEY":"SEKRIT-4","client_secret":"SEKRIT-5"}"#;
    let a = s
        .propose(&new_action("call.api", args))
        .await
        .unwrap()
        .action;
    s.approve(
        &a.id,
        Actor::cli("alice"),
        Some(r#"{"client_secret":"SEKRIT-6"}"#),
    )
    .await
    .unwrap();
    s.claim(&a.id, "o", 1000).await.unwrap();
    s.complete(&a.id, "o", true, json!({"session_token": "SEKRIT-7"}), None)
        .await
        .unwrap();

    let audit = serde_json::to_string(&s.action_audit(&a.id).await.unwrap()).unwrap();
    let events = serde_json::to_string(&s.events_after(0, 1000).await.unwrap()).unwrap();
    let got = s.get_action(&a.id).await.unwrap();
    let shown = serde_json::to_string(&got.redacted()).unwrap() + &got.display_args().to_string();
    let mut cli = String::new();
    for cmd in [vec!["action", &a.id], vec!["audit", &a.id], vec!["actions"]] {
        for json_flag in [false, true] {
            let mut argv = cmd.clone();
            if json_flag {
                argv.insert(0, "--json");
            }
            let out = db.cli(&argv);
            assert!(out.status.success());
            cli += &common::stdout(&out);
        }
    }
    for n in 1..=7 {
        let secret = format!("SEKRIT-{n}");
        for (what, text) in [
            ("audit", &audit),
            ("events", &events),
            ("display", &shown),
            ("cli", &cli),
        ] {
            assert!(!text.contains(&secret), "{secret} leaked into {what}");
        }
    }
    assert!(audit.contains("[redacted]") && cli.contains("[redacted]"));
    // The executor's view keeps the real values.
    assert_eq!(got.effective_args["client_secret"], "SEKRIT-6");
    assert_eq!(got.effective_args["nested"]["db_password"], "SEKRIT-2");
}

async fn redaction_patterns_are_configurable_per_action(db: Db) {
    let s = db.open().await;
    let mut n = new_action("k", r#"{"pin":"1234","token":"visible"}"#);
    n.redact_keys = Some(vec!["PIN".into()]);
    let a = s.propose(&n).await.unwrap().action;
    assert_eq!(
        a.display_args(),
        json!({"pin": "[redacted]", "token": "visible"})
    );
    assert_eq!(
        s.action_audit(&a.id).await.unwrap()[0].details["args"],
        json!({"pin": "[redacted]", "token": "visible"})
    );
}

async fn a_refused_attempt_is_audited_and_changes_nothing(db: Db) {
    let s = db.open().await;
    let a = s
        .propose(&new_action("deploy", r#"{"to":"prod"}"#))
        .await
        .unwrap()
        .action;
    let before = s.get_action(&a.id).await.unwrap();
    let mallory = Actor {
        name: "mallory",
        channel: handoff::store::Channel::Chat,
    };
    s.audit_refused_attempt(&a.id, mallory, "not on the approvers' list")
        .await
        .unwrap();
    let after = s.get_action(&a.id).await.unwrap();
    assert_eq!(
        (after.status, after.approvals, after.updated_at),
        (before.status, before.approvals, before.updated_at)
    );
    let audit = s.action_audit(&a.id).await.unwrap();
    let last = audit.last().expect("audit rows");
    assert_eq!(
        (last.event.as_str(), last.actor.as_str()),
        ("refused_attempt", "mallory")
    );
    assert_eq!(last.details["reason"], "not on the approvers' list");
}

both_engines!(
    exact_audit_trail_for_a_full_lifecycle,
    a_patch_is_audited_with_proposed_patch_and_effective_arguments,
    update_and_delete_on_the_audit_log_fail,
    redaction_patterns_are_configurable_per_action,
    a_refused_attempt_is_audited_and_changes_nothing
);

/// The `(type, payload)` text of every event about action `id`, as stored.
async fn payloads(db: &Db, id: &str) -> Vec<(String, String)> {
    db.rows(&format!(
        "SELECT type, payload FROM events WHERE entity_id = '{id}' ORDER BY seq"
    ))
    .await
    .into_iter()
    .map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap()))
    .collect()
}

/// The payloads the transition statements build inside the engine (SQLite's
/// `json_object`, PostgreSQL's `json_build_object`) are the same text,
/// byte for byte: key order, numbers, escapes and timestamps.
async fn engine_built_event_payloads_are_the_same_text(db: Db) {
    let t0 = 1_800_000_000_123;
    let (s, clock) = db.open_manual(t0).await;
    let rfc = handoff::clock::format_rfc3339;
    let tail = |status: &str| format!(r#""status":"{status}","kind":"k","summary":"do k"}}"#);

    let mut n = new_action("k", r#"{"a":1}"#);
    n.approvals_required = 2;
    let a = s.propose(&n).await.unwrap().action.id;
    s.approve(&a, Actor::cli("alice"), None).await.unwrap();
    s.approve(&a, Actor::cli("bob"), None).await.unwrap();
    s.claim(&a, "exec-1", 1000).await.unwrap();
    let result = json!({"b": [1, 2.5, "é\"\n"], "a": null});
    s.complete(&a, "exec-1", true, result, None).await.unwrap();
    let got = payloads(&db, &a).await;
    let want = [
        (
            "action.approval_added",
            format!(
                r#"{{"approvals":1,"approver":"alice","required":2,{}"#,
                tail("pending")
            ),
        ),
        (
            "action.approved",
            format!(
                r#"{{"approvals":2,"approver":"bob","required":2,{}"#,
                tail("approved")
            ),
        ),
        (
            "action.claimed",
            format!(
                r#"{{"attempt":1,"lease_until":"{}","owner":"exec-1",{}"#,
                rfc(t0 + 1000),
                tail("executing")
            ),
        ),
        (
            "action.executed",
            format!(
                r#"{{"error":null,"owner":"exec-1","result":{{"a":null,"b":[1,2.5,"é\"\n"]}},{}"#,
                tail("executed")
            ),
        ),
    ];
    assert_eq!(got.len(), 5, "{got:#?}");
    for ((kind, payload), (want_kind, want_payload)) in got[1..].iter().zip(&want) {
        assert_eq!((kind.as_str(), payload), (*want_kind, want_payload));
    }

    let b = s
        .propose(&new_action("k", r#"{"b":1}"#))
        .await
        .unwrap()
        .action
        .id;
    s.reject(&b, Actor::cli("bob"), "say \"no\" — ünï\tcode")
        .await
        .unwrap();
    assert_eq!(
        payloads(&db, &b).await[1].1,
        format!(
            r#"{{"reason":"say \"no\" — ünï\tcode","rejecter":"bob",{}"#,
            tail("rejected")
        )
    );

    let mut n = new_action("k", r#"{"c":1}"#);
    n.ttl_ms = Some(500);
    n.on_expire = handoff::store::actions::OnExpire::Reject;
    let c = s.propose(&n).await.unwrap().action.id;
    clock.advance(500);
    assert_eq!(s.expire_due().await.unwrap().len(), 1);
    assert_eq!(
        payloads(&db, &c).await[1].1,
        format!(
            r#"{{"expires_at":"{}","on_expire":"reject",{}"#,
            rfc(t0 + 500),
            tail("rejected")
        )
    );

    let d = s
        .propose(&new_action("k", r#"{"d":1}"#))
        .await
        .unwrap()
        .action
        .id;
    s.approve(&d, Actor::cli("alice"), None).await.unwrap();
    s.claim(&d, "exec-2", 10).await.unwrap();
    clock.advance(20);
    let lapsed = s.lapsed().await.unwrap();
    assert_eq!(lapsed.len(), 1);
    s.lapse_to_unknown(&lapsed[0]).await.unwrap().unwrap();
    assert_eq!(
        payloads(&db, &d).await.last().unwrap().1,
        format!(
            r#"{{"owner":"exec-2","reason":"the executor exec-2 stopped renewing its lease: the side effect may or may not have happened",{}"#,
            tail("unknown")
        )
    );
}

both_engines!(engine_built_event_payloads_are_the_same_text);
