//! Permission grants at the store level, on both engines: saving one per
//! prompt (two taps racing on one prompt save one), confirming, matching,
//! listing per project and revoking once (two revokers racing: one
//! revokes, the other is told it was revoked already). Deciding prompts by
//! grants needs pending actions: tests/inbox_grants.rs and
//! tests/hook_claude.rs (SQLite, until actions run on PostgreSQL).

mod common;

use common::engine::Db;
use handoff::store::grants::{NewGrant, Revoked, Scope, pattern};
use handoff::store::{Channel, Store};
use serde_json::json;

/// Save a grant of `scope` on prompt `action` for `git status`-like
/// commands of project `project`.
async fn save(
    store: &Store,
    scope: Scope,
    project: &str,
    action: &str,
    by: &str,
) -> handoff::store::grants::Grant {
    let input = json!({"command": "git status"});
    let p = pattern::derive("Bash", &input).expect("a Bash command has a pattern");
    store
        .grant_create(
            &NewGrant {
                scope,
                agent: "claude",
                session: "s1",
                project,
                tool: "Bash",
                pattern: &p,
                action_id: action,
                by,
            },
            Channel::Inbox,
        )
        .await
        .expect("grant_create")
}

async fn a_grant_matches_once_confirmed_and_until_revoked(db: Db) {
    let store = db.open().await;
    let input = json!({"command": "git status"});
    let g = save(&store, Scope::Session, "p", "act1", "ana").await;
    assert!(!g.live());
    let none = store
        .grant_matching("claude", "s1", "p", "Bash", &input)
        .await
        .unwrap();
    assert_eq!(none, None, "unconfirmed grants match nothing");
    assert!(store.grant_confirm(&g.id).await.unwrap());
    assert!(!store.grant_confirm(&g.id).await.unwrap(), "confirmed once");
    let m = store
        .grant_matching("claude", "s1", "p", "Bash", &input)
        .await
        .unwrap()
        .expect("matches in its session");
    assert_eq!(m.id, g.id);
    for (session, project) in [("s2", "p"), ("s1", "q")] {
        assert_eq!(
            store
                .grant_matching("claude", session, project, "Bash", &input)
                .await
                .unwrap(),
            None,
            "{session} {project}"
        );
    }
    assert_eq!(
        store.grant_for_action("act1").await.unwrap().unwrap().id,
        g.id
    );
    assert_eq!(store.grant_for_action("act9").await.unwrap(), None);
    // An always grant of another project, listed per project.
    let other = save(&store, Scope::Always, "q", "act2", "bo").await;
    store.grant_confirm(&other.id).await.unwrap();
    assert_eq!(store.grant_list(false).await.unwrap().len(), 2);
    let in_q = store.grant_list_in(false, Some("q")).await.unwrap();
    assert_eq!(in_q.iter().map(|g| &g.id).collect::<Vec<_>>(), [&other.id]);
    // Another project's short id is not found from within "p".
    let short = &other.id[other.id.len() - 8..];
    let hidden = store
        .grant_revoke_in(short, "ana", Channel::Inbox, Some("p"))
        .await
        .unwrap();
    assert_eq!(hidden, None);
    let Some(Revoked::Now(r)) = store
        .grant_revoke_in(short, "bo", Channel::Cli, Some("q"))
        .await
        .unwrap()
    else {
        panic!("revoked now")
    };
    assert_eq!(r.revoked_by.as_deref(), Some("bo"));
    assert_eq!(store.grant_list(false).await.unwrap().len(), 1, "live only");
    assert_eq!(store.grant_list(true).await.unwrap().len(), 2, "all");
    let e = store
        .grant_revoke("xyz", "ana", Channel::Cli)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("8-character short id"), "{e}");
    let kinds: Vec<String> = store
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["grant.created", "grant.created", "grant.revoked"]);
}

async fn two_taps_on_one_prompt_save_one_grant(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    let (a, b) = tokio::join!(
        save(&one, Scope::Session, "p", "act1", "ana"),
        save(&two, Scope::Always, "p", "act1", "bo")
    );
    assert_eq!(a, b, "the loser reads the winner's grant");
    assert_eq!(one.count_rows("grants").await.unwrap(), 1);
    let created = one
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "grant.created")
        .count();
    assert_eq!(created, 1);
}

async fn two_revokers_revoke_once(db: Db) {
    let (one, two) = (db.open().await, db.open().await);
    let g = save(&one, Scope::Always, "p", "act1", "ana").await;
    one.grant_confirm(&g.id).await.unwrap();
    let (a, b) = tokio::join!(
        one.grant_revoke_in(&g.id, "ana", Channel::Cli, None),
        two.grant_revoke_in(&g.id, "bo", Channel::Inbox, None)
    );
    let (a, b) = (a.unwrap().unwrap(), b.unwrap().unwrap());
    let now: Vec<_> = [&a, &b]
        .into_iter()
        .filter(|r| matches!(r, Revoked::Now(_)))
        .collect();
    assert_eq!(now.len(), 1, "{a:?} {b:?}");
    // Both see the first revoker.
    assert_eq!(a.grant().revoked_by, b.grant().revoked_by);
    let revoked = one
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "grant.revoked")
        .count();
    assert_eq!(revoked, 1);
}

both_engines!(a_grant_matches_once_confirmed_and_until_revoked);
both_engines!(multi_thread: two_taps_on_one_prompt_save_one_grant, two_revokers_revoke_once);
