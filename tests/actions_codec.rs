//! Codec and misuse family: broken patches leave the action untouched,
//! bad arguments are refused before any write, dedup conflicts are loud,
//! only the owner completes, and terminal states refuse everything.

mod common;

use common::{TempDb, count, new_action};
use handoff::store::Store;
use handoff::store::actions::{
    Actor, ApproveOutcome, ClaimOutcome, CompleteOutcome, Error, RejectOutcome, Resolution, Status,
};

async fn snapshot(s: &Store, id: &str) -> (handoff::store::actions::Action, usize, i64) {
    (
        s.get_action(id).await.unwrap(),
        s.action_audit(id).await.unwrap().len(),
        s.last_event_seq().await.unwrap(),
    )
}

#[tokio::test]
async fn broken_patches_leave_the_action_pending_and_untouched() {
    let db = TempDb::new();
    let s = db.open().await;
    let id = s
        .propose(&new_action(
            "email.send",
            r#"{"to":"bob","n":1,"tags":["a"]}"#,
        ))
        .await
        .unwrap()
        .action
        .id;
    let before = snapshot(&s, &id).await;
    for (patch, needle) in [
        (r#"{"cc":"x"}"#, "does not have"),
        (r#"{"n":"1"}"#, "same JSON type"),
        (r#"{"tags":{"a":1}}"#, "same JSON type"),
        (r#"{"to":NaN}"#, "not valid JSON"),
        ("[1]", "object"),
        ("{}", "empty"),
    ] {
        match s.approve(&id, Actor::cli("alice"), Some(patch)).await {
            Err(Error::Store(handoff::store::Error::Invalid(m))) => {
                assert!(m.contains(needle), "{patch}: {m}")
            }
            other => panic!("{patch}: {other:?}"),
        }
        assert_eq!(snapshot(&s, &id).await, before, "{patch} changed something");
    }
    assert_eq!(count(&s, "action_approvals").await, 0);
    // Through the CLI: exit 1, one clear line, nothing written.
    let out = db.cli(&[
        "approve",
        &id[24..],
        "--patch",
        r#"{"cc":"x"}"#,
        "--as",
        "alice",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("known keys: n, tags, to"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(snapshot(&s, &id).await, before);
}

#[tokio::test]
async fn oversized_or_non_json_args_are_refused_before_any_write() {
    let db = TempDb::new();
    let s = db.open().await;
    let big = format!(r#"{{"body":"{}"}}"#, "x".repeat(1024 * 1024));
    for bad in [
        big.as_str(),
        "not json",
        r#"{"a":NaN}"#,
        r#"{"a":Infinity}"#,
        r#"{"a":"\ud800"}"#,
        "[1]",
        "42",
    ] {
        let r = s.propose(&new_action("k", bad)).await;
        assert!(
            matches!(r, Err(Error::Store(handoff::store::Error::Invalid(_)))),
            "{:?}",
            r.map(|p| p.action.id)
        );
    }
    assert_eq!(count(&s, "actions").await, 0);
    assert_eq!(count(&s, "events").await, 0);
    let out = db.cli(&[
        "propose",
        "--kind",
        "k",
        "--summary",
        "s",
        "--args",
        "{nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("not valid JSON"));
    let out = db.cli(&[
        "propose",
        "--kind",
        "k",
        "--summary",
        "s",
        "--args",
        "@/no/such/file",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(count(&s, "actions").await, 0);
}

#[tokio::test]
async fn same_key_different_payload_is_a_loud_dedup_conflict() {
    let db = TempDb::new();
    let s = db.open().await;
    let mut a = new_action("email.send", r#"{"to":"bob"}"#);
    a.dedup_key = Some("mail-1".into());
    let first = s.propose(&a).await.unwrap();
    assert!(first.created);
    // Same payload, other spelling: the existing action comes back.
    let mut same = a.clone();
    same.args = r#"{ "to" : "bob" }"#.into();
    let again = s.propose(&same).await.unwrap();
    assert!(!again.created);
    assert_eq!(again.action.id, first.action.id);
    let mut other = a.clone();
    other.args = r#"{"to":"eve"}"#.into();
    match s.propose(&other).await {
        Err(Error::DedupConflict {
            key,
            existing_id,
            existing_fingerprint,
            new_fingerprint,
        }) => {
            assert_eq!(key, "mail-1");
            assert_eq!(existing_id, first.action.id);
            assert_eq!(existing_fingerprint, first.action.fingerprint);
            assert_ne!(new_fingerprint, existing_fingerprint);
        }
        r => panic!("{r:?}"),
    }
    let out = db.cli(&[
        "--json",
        "propose",
        "--kind",
        "email.send",
        "--summary",
        "do email.send",
        "--args",
        r#"{"to":"eve"}"#,
        "--dedup-key",
        "mail-1",
        // Keys are per project: the holder's project.
        "--project",
        "proj",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        common::json(&out)["error"]["detail"]["existing_id"],
        first.action.id.as_str()
    );
    assert!(common::stderr(&out).contains(&first.action.id));
    assert_eq!(count(&s, "actions").await, 1);
    // Once the holder settles, the key is free again.
    s.reject(&first.action.id, Actor::cli("x"), "no")
        .await
        .unwrap();
    assert!(s.propose(&other).await.unwrap().created);
}

#[tokio::test]
async fn only_the_owner_completes_and_extends() {
    let db = TempDb::new();
    let s = db.open().await;
    let id = s.propose(&new_action("k", "{}")).await.unwrap().action.id;
    assert!(
        matches!(
            s.claim(&id, "me", 60_000).await.unwrap(),
            ClaimOutcome::NotClaimable { .. }
        ),
        "pending is not claimable"
    );
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(
        s.claim(&id, "me", 60_000).await.unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
    assert!(matches!(
        s.claim(&id, "you", 60_000).await.unwrap(),
        ClaimOutcome::NotClaimable { .. }
    ));
    let before = snapshot(&s, &id).await;
    assert!(!s.extend_lease(&id, "you", 60_000).await.unwrap());
    let out = s
        .complete(&id, "you", true, serde_json::json!(1), None)
        .await
        .unwrap();
    assert!(matches!(out, CompleteOutcome::NotOwner { .. }));
    assert_eq!(snapshot(&s, &id).await, before);
    assert!(s.extend_lease(&id, "me", 60_000).await.unwrap());
    let out = s
        .complete(
            &id,
            "me",
            false,
            serde_json::json!({"code": 2}),
            Some("boom"),
        )
        .await
        .unwrap();
    let CompleteOutcome::Completed { action } = out else {
        panic!()
    };
    assert_eq!(
        (action.status, action.error.as_deref()),
        (Status::Failed, Some("boom"))
    );
}

#[tokio::test]
async fn every_terminal_state_refuses_every_further_transition() {
    let db = TempDb::new();
    let (s, clock) = db.open_manual(1_800_000_000_000).await;
    let mk = async |args: &str| s.propose(&new_action("k", args)).await.unwrap().action.id;
    let executed = mk(r#"{"t":"executed"}"#).await;
    let failed = mk(r#"{"t":"failed"}"#).await;
    let rejected = mk(r#"{"t":"rejected"}"#).await;
    let mut n = new_action("k", r#"{"t":"expired"}"#);
    n.ttl_ms = Some(10);
    let expired = s.propose(&n).await.unwrap().action.id;
    for (id, ok) in [(&executed, true), (&failed, false)] {
        s.approve(id, Actor::cli("a"), None).await.unwrap();
        s.claim(id, "o", 1000).await.unwrap();
        s.complete(id, "o", ok, serde_json::json!(null), None)
            .await
            .unwrap();
    }
    s.reject(&rejected, Actor::cli("r"), "no").await.unwrap();
    clock.advance(10);
    s.expire_due().await.unwrap();

    for id in [&executed, &failed, &rejected, &expired] {
        let before = snapshot(&s, id).await;
        assert!(before.0.status.is_settled());
        let ap = s.approve(id, Actor::cli("late"), None).await.unwrap();
        assert!(!matches!(
            ap,
            ApproveOutcome::Approved { .. } | ApproveOutcome::ApprovalAdded { .. }
        ));
        let rj = s.reject(id, Actor::cli("late"), "late").await.unwrap();
        assert!(!matches!(rj, RejectOutcome::Rejected { .. }));
        assert!(matches!(
            s.claim(id, "o2", 1000).await.unwrap(),
            ClaimOutcome::NotClaimable { .. }
        ));
        assert!(matches!(
            s.complete(id, "o", true, serde_json::json!(1), None)
                .await
                .unwrap(),
            CompleteOutcome::NotOwner { .. }
        ));
        assert!(!s.extend_lease(id, "o", 1000).await.unwrap());
        for r in [Resolution::Executed, Resolution::Failed, Resolution::Retry] {
            assert!(
                s.resolve_unknown(id, Actor::cli("h"), r)
                    .await
                    .unwrap()
                    .is_err()
            );
        }
        clock.advance(1_000_000);
        assert!(s.expire_due().await.unwrap().is_empty());
        assert!(
            handoff::programs::recover(&s)
                .await
                .unwrap()
                .unknown
                .is_empty()
        );
        assert_eq!(snapshot(&s, id).await, before, "{}", before.0.status);
    }
}

#[tokio::test]
async fn short_ids_and_unknown_ids() {
    let db = TempDb::new();
    let s = db.open().await;
    let id = s.propose(&new_action("k", "{}")).await.unwrap().action.id;
    assert_eq!(s.get_action(&id[24..]).await.unwrap().id, id);
    assert!(matches!(
        s.get_action("deadbeef").await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        s.get_action("x'; drop").await,
        Err(Error::NotFound(_))
    ));
    let out = db.cli(&["action", "deadbeef"]);
    assert_eq!(out.status.code(), Some(4));
    let out = db.cli(&["--json", "action", &id[24..]]);
    assert_eq!(common::json(&out)["action"]["id"], id.as_str());
}

#[test]
fn settled_means_final_and_unknown_still_waits_for_a_human() {
    let table = [
        (Status::Pending, false),
        (Status::Approved, false),
        (Status::Executing, false),
        (Status::Executed, true),
        (Status::Failed, true),
        (Status::Unknown, false),
        (Status::Rejected, true),
        (Status::Expired, true),
    ];
    assert_eq!(
        table.len(),
        Status::ALL.len(),
        "every status is in the table"
    );
    for (status, settled) in table {
        assert_eq!(status.is_settled(), settled, "{status}");
        assert_eq!(
            Status::parse(status.as_str()),
            Some(status),
            "{status} round-trips"
        );
    }
}

#[tokio::test]
async fn the_short_id_is_the_last_eight_characters_and_resolves() {
    let db = TempDb::new();
    let s = db.open().await;
    let a = s
        .propose(&new_action("deploy", r#"{"to":"prod"}"#))
        .await
        .unwrap()
        .action;
    assert_eq!(a.short_id().len(), 8);
    assert!(a.id.ends_with(a.short_id()), "{} / {}", a.id, a.short_id());
    assert_eq!(s.get_action(a.short_id()).await.unwrap().id, a.id);
    assert_eq!(
        s.resolve_action_id(&a.short_id().to_uppercase())
            .await
            .unwrap(),
        a.id
    );
}

#[tokio::test]
async fn arguments_stop_at_exactly_one_mebibyte() {
    let db = TempDb::new();
    let s = db.open().await;
    let args = |len: usize| format!(r#"{{"a":"{}"}}"#, "x".repeat(len - 8));
    let at = args(1024 * 1024);
    assert_eq!(at.len(), 1024 * 1024);
    s.propose(&new_action("big", &at))
        .await
        .expect("1 MiB of arguments is accepted");
    let over = args(1024 * 1024 + 1);
    let e = s
        .propose(&new_action("bigger", &over))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("1048577 bytes") && e.contains("1 MiB"), "{e}");
    assert_eq!(
        count(&s, "actions").await,
        1,
        "the refused one wrote nothing"
    );
}

#[tokio::test]
async fn a_claim_needs_both_an_owner_and_a_positive_lease() {
    let db = TempDb::new();
    let s = db.open().await;
    let a = s
        .propose(&new_action("deploy", r#"{"to":"prod"}"#))
        .await
        .unwrap()
        .action;
    s.approve(&a.id, Actor::cli("alice"), None).await.unwrap();
    for (owner, lease) in [("  ", 60_000), ("exec-1", 0), ("exec-1", -5)] {
        let e = s.claim(&a.id, owner, lease).await.unwrap_err().to_string();
        assert!(
            e.contains("owner id and a positive lease"),
            "{owner:?}/{lease}: {e}"
        );
    }
    assert_eq!(s.get_action(&a.id).await.unwrap().status, Status::Approved);
    assert!(matches!(
        s.claim(&a.id, "exec-1", 60_000).await.unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
}

#[tokio::test]
async fn proposal_limits_hold_at_their_exact_edges() {
    let db = TempDb::new();
    let s = db.open().await;
    let base = || new_action("deploy", r#"{"to":"prod"}"#);
    let mut n = 0;
    let mut ok = |f: &dyn Fn(&mut handoff::store::actions::NewAction)| {
        let mut a = base();
        n += 1;
        a.dedup_key = Some(format!("edge-{n}"));
        f(&mut a);
        a
    };
    let accepted = [
        ok(&|a| a.kind = "k".repeat(100)),
        ok(&|a| a.summary = "s".repeat(500)),
        ok(&|a| a.approvals_required = 100),
        ok(&|a| a.approvals_required = 1),
        ok(&|a| a.ttl_ms = Some(1)),
        ok(&|a| a.dedup_key = Some("d".repeat(200))),
    ];
    for a in &accepted {
        s.propose(a).await.expect("at the limit");
    }
    type Spoil = Box<dyn Fn(&mut handoff::store::actions::NewAction)>;
    let refused: [(&str, Spoil); 10] = [
        ("--kind", Box::new(|a| a.kind = "k".repeat(101))),
        ("--kind", Box::new(|a| a.kind = "  ".into())),
        ("--summary", Box::new(|a| a.summary = "s".repeat(501))),
        ("--summary", Box::new(|a| a.summary = " ".into())),
        ("--approvals", Box::new(|a| a.approvals_required = 0)),
        ("--approvals", Box::new(|a| a.approvals_required = 101)),
        ("--ttl", Box::new(|a| a.ttl_ms = Some(0))),
        (
            "--dedup-key",
            Box::new(|a| a.dedup_key = Some("d".repeat(201))),
        ),
        ("--dedup-key", Box::new(|a| a.dedup_key = Some("  ".into()))),
        ("--exec", Box::new(|a| a.exec = Some(Vec::new()))),
    ];
    for (flag, spoil) in refused {
        let mut a = base();
        spoil(&mut a);
        let e = s.propose(&a).await.unwrap_err().to_string();
        assert!(e.contains(flag), "{flag}: {e}");
    }
    assert_eq!(count(&s, "actions").await, accepted.len() as i64);
}

#[tokio::test]
async fn a_failed_insert_reports_its_own_cause_not_a_dedup_conflict() {
    let db = TempDb::new();
    let s = db.open().await;
    // The database refuses the write for a reason of its own (a full disk,
    // here a trigger standing in for it).
    let raw = common::raw_pool(&db.path).await;
    sqlx::query(
        "CREATE TRIGGER refuse BEFORE INSERT ON actions BEGIN SELECT RAISE(ABORT, 'the disk is full'); END",
    )
    .execute(&raw)
    .await
    .unwrap();
    let mut a = new_action("deploy", r#"{"to":"prod"}"#);
    a.dedup_key = Some("deploy-prod".into());
    let e = s.propose(&a).await.unwrap_err().to_string();
    assert!(e.contains("the disk is full"), "{e}");
}
