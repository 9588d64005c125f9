//! API tokens and Inbox sign-ins at the store level, on both engines:
//! each happy path, each refusal, and the races two store handles (two
//! pools, as two processes) run on one token name, one login link and
//! one session. The HTTP side: tests/api_auth.rs and tests/inbox_http.rs.

mod common;

use common::engine::Db;
use handoff::store::inbox_sessions::Login;
use handoff::store::tokens::Role;

async fn a_token_verifies_until_revoked_and_a_short_id_revokes_it(db: Db) {
    let store = db.open().await;
    let a = store
        .token_create("ci", Role::Agent, Some("p"))
        .await
        .unwrap();
    let b = store.token_create("ops", Role::Admin, None).await.unwrap();
    let seen = store.token_verify(&a.secret).await.unwrap().expect("live");
    assert_eq!((seen.name.as_str(), seen.role), ("ci", Role::Agent));
    assert_eq!(seen.project.as_deref(), Some("p"));
    assert_eq!(store.token_verify("hnd_nope").await.unwrap(), None);
    let names: Vec<String> = store
        .token_list()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["ci", "ops"], "oldest first");
    // Its last 8 characters name it, as `handoff token revoke` takes them.
    let short = &b.token.id[b.token.id.len() - 8..];
    let gone = store.token_revoke(short).await.unwrap().expect("revoked");
    assert_eq!(gone.id, b.token.id);
    assert!(gone.revoked_at.is_some());
    assert_eq!(store.token_verify(&b.secret).await.unwrap(), None);
    assert_eq!(
        store.token_revoke(short).await.unwrap(),
        None,
        "revoking twice changes nothing"
    );
    // A revoked name is free again.
    store.token_create("ops", Role::Human, None).await.unwrap();
    assert_eq!(store.token_list().await.unwrap().len(), 3);
}

async fn a_key_matching_two_tokens_revokes_neither(db: Db) {
    let store = db.open().await;
    let a = store.token_create("x", Role::Agent, None).await.unwrap();
    // A second token whose *name* is the first one's full id.
    store
        .token_create(&a.token.id, Role::Agent, None)
        .await
        .unwrap();
    let e = store.token_revoke(&a.token.id).await.unwrap_err();
    assert!(e.to_string().contains("matches several tokens"), "{e}");
    assert!(
        store.token_verify(&a.secret).await.unwrap().is_some(),
        "the refused revocation was rolled back"
    );
    assert_eq!(store.count_rows("api_tokens").await.unwrap(), 2);
}

async fn two_creators_of_one_name_make_one_token(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    let (a, b) = tokio::join!(
        one.token_create("race", Role::Agent, None),
        two.token_create("race", Role::Agent, None)
    );
    let ok = [a.is_ok(), b.is_ok()];
    assert_eq!(ok.iter().filter(|x| **x).count(), 1, "{a:?} {b:?}");
    let lost = a.err().or(b.err()).unwrap();
    assert!(lost.to_string().contains("revoke it first"), "{lost}");
    let created: Vec<_> = one
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "token.created")
        .collect();
    assert_eq!(created.len(), 1, "one event for the one token");
}

async fn a_login_link_opens_one_session_once_and_says_why_not(db: Db) {
    let (store, clock) = db.open_manual(1_000_000).await;
    let link = store.inbox_link_create("ana", 60_000).await.unwrap();
    assert_eq!(link.expires_at, 1_060_000);
    let Login::Opened { session, secret } = store.inbox_login(&link.code, 3_600_000).await.unwrap()
    else {
        panic!("the link opens a session")
    };
    assert_eq!(session.name, "ana");
    let seen = store.inbox_session_verify(&secret).await.unwrap();
    assert_eq!(seen.as_ref(), Some(&session));
    assert!(matches!(
        store.inbox_login(&link.code, 3_600_000).await.unwrap(),
        Login::Used
    ));
    assert!(matches!(
        store.inbox_login(&"0".repeat(64), 1).await.unwrap(),
        Login::Unknown
    ));
    let late = store.inbox_link_create("bo", 1_000).await.unwrap();
    clock.advance(1_000);
    assert!(matches!(
        store.inbox_login(&late.code, 1).await.unwrap(),
        Login::Expired
    ));
    assert!(store.inbox_logout(&secret).await.unwrap());
    assert!(!store.inbox_logout(&secret).await.unwrap(), "once");
    assert_eq!(store.inbox_session_verify(&secret).await.unwrap(), None);
    let kinds: Vec<String> = store
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "inbox.link_created",
            "inbox.login",
            "inbox.link_created",
            "inbox.logout"
        ]
    );
}

async fn two_tabs_racing_on_one_link_open_one_session(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    let link = one.inbox_link_create("ana", 60_000).await.unwrap();
    let (a, b) = tokio::join!(
        one.inbox_login(&link.code, 60_000),
        two.inbox_login(&link.code, 60_000)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let opened = [&a, &b]
        .iter()
        .filter(|l| matches!(l, Login::Opened { .. }))
        .count();
    assert_eq!(opened, 1, "{a:?} {b:?}");
    assert!(
        matches!(a, Login::Used) || matches!(b, Login::Used),
        "the loser is told the link was used"
    );
    assert_eq!(two.count_rows("inbox_sessions").await.unwrap(), 1);
}

both_engines!(
    a_token_verifies_until_revoked_and_a_short_id_revokes_it,
    a_key_matching_two_tokens_revokes_neither,
    two_creators_of_one_name_make_one_token,
    a_login_link_opens_one_session_once_and_says_why_not,
);
both_engines!(multi_thread: two_tabs_racing_on_one_link_open_one_session);
