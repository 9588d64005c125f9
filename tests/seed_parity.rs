//! Guarantees the seed designs make explicitly (issue 17): dedup over
//! unknown outcomes, answers that auto-archive cannot hide, at-least-once
//! delivery until the agent resolves, no secrets in free text, a ledger tied
//! to registered sessions, and row transitions that lose nothing.

mod common;

use common::{TempDb, json, new_action, stderr};
use handoff::store::actions::{Actor, Resolution, Status};

const T0: i64 = 1_800_000_000_000;

/// Propose `n`, approve, claim with a 1 s lease, let the lease lapse and
/// recover: the action's outcome is now unknown.
async fn unknown_action(
    s: &handoff::store::Store,
    clock: &handoff::clock::ManualClock,
    n: &handoff::store::actions::NewAction,
) -> String {
    let id = s.propose(n).await.unwrap().action.id;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    s.claim(&id, "exec-1", 1000).await.unwrap();
    clock.advance(5000);
    s.recover().await.unwrap();
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Unknown);
    id
}

#[tokio::test]
async fn an_unknown_outcome_blocks_a_duplicate_until_a_person_settles_it() {
    let db = TempDb::new();
    let (s, clock) = db.open_manual(T0).await;
    let mut n = new_action("email.send", r#"{"to":"bob"}"#);
    n.dedup_key = Some("mail-1".into());
    let id = unknown_action(&s, &clock, &n).await;

    // The agent retries after its crash: same key, same payload.
    let again = s.propose(&n).await.unwrap();
    assert!(!again.created, "no second Approve button for it");
    assert_eq!(again.action.id, id);
    assert_eq!(again.action.status, Status::Unknown);

    // A different payload under the key is the loud conflict, as for a
    // pending holder.
    let mut other = n.clone();
    other.args = r#"{"to":"carol"}"#.into();
    let err = s.propose(&other).await.unwrap_err();
    assert!(err.to_string().contains("mail-1"), "{err}");

    // Once a person says it did not happen, the key is free again.
    s.resolve_unknown(&id, Actor::cli("alice"), Resolution::Failed)
        .await
        .unwrap()
        .unwrap();
    let fresh = s.propose(&n).await.unwrap();
    assert!(fresh.created);
    assert_ne!(fresh.action.id, id);
}

#[tokio::test]
async fn propose_from_the_cli_says_the_duplicate_is_unknown_and_never_waits_on_it() {
    let db = TempDb::new();
    let (s, clock) = db.open_manual(T0).await;
    let mut n = new_action("email.send", "{}");
    n.dedup_key = Some("mail-2".into());
    n.project = String::new();
    let id = unknown_action(&s, &clock, &n).await;
    drop(s);

    let base = [
        "propose",
        "--kind",
        "email.send",
        "--summary",
        "do email.send",
        "--dedup-key",
        "mail-2",
    ];
    let out = db.cli(&[&base[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["created"], false, "{v}");
    assert_eq!(v["action"]["id"], id.as_str());
    assert_eq!(v["action"]["status"], "unknown");

    let text = db.cli(&base);
    let said = common::stdout(&text);
    assert!(
        said.contains("outcome is unknown") && said.contains("handoff resolve-unknown"),
        "says why and how to settle it: {said}"
    );

    // With --exec it must neither run the command nor wait: exit 3.
    let marker = db.dir.path().join("ran");
    let exec = db.cli(
        &[
            &base[..],
            &[
                "--exec",
                "--",
                "sh",
                "-c",
                &format!("touch {}", marker.display()),
            ],
        ]
        .concat(),
    );
    assert_eq!(exec.status.code(), Some(3), "{}", stderr(&exec));
    assert!(stderr(&exec).contains("outcome is unknown"));
    assert!(!marker.exists(), "the command never ran again");
}

#[tokio::test]
async fn dedup_keys_are_per_project() {
    let db = TempDb::new();
    let s = db.open().await;
    let mut p2 = new_action("deploy", r#"{"v":1}"#);
    p2.project = "p2".into();
    p2.dedup_key = Some("release".into());
    let theirs = s.propose(&p2).await.unwrap();
    assert!(theirs.created);

    // Other projects' same key is a new action, whatever the payload: they
    // neither get p2's action back nor a conflict naming it.
    for (project, args) in [("p1", r#"{"v":1}"#), ("p3", r#"{"v":2}"#)] {
        let mut mine = p2.clone();
        mine.project = project.into();
        mine.args = args.into();
        let got = s.propose(&mine).await.unwrap();
        assert!(got.created, "{project}");
        assert_ne!(got.action.id, theirs.action.id);
        assert_eq!(got.action.project, project);
    }
    // p2 still holds its key.
    let again = s.propose(&p2).await.unwrap();
    assert!(!again.created);
    assert_eq!(again.action.id, theirs.action.id);
}
