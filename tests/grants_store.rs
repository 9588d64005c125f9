//! Permission grants at the store level, on both engines: saving one per
//! prompt (three taps racing on one prompt save one), confirming, matching,
//! listing per project and revoking once (three revokers racing: one
//! revokes, the others are told it was revoked already). Each race runs
//! its writers on pools of their own, released by a barrier right before
//! the contested write, for [`ROUNDS`] rounds. Deciding prompts by
//! grants needs pending actions: tests/inbox_grants.rs and
//! tests/hook_claude.rs (SQLite, until actions run on PostgreSQL).

mod common;

use std::sync::Arc;

use common::engine::Db;
use handoff::store::grants::{NewGrant, Revoked, Scope, pattern};
use handoff::store::{Channel, Store};
use serde_json::json;
use tokio::sync::Barrier;

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
                expires_at: None,
                path: "",
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
        .grant_covering("claude", "s1", "p", "Bash", &input, "")
        .await
        .unwrap();
    assert_eq!(none, None, "unconfirmed grants match nothing");
    assert!(store.grant_confirm(&g.id).await.unwrap());
    assert!(!store.grant_confirm(&g.id).await.unwrap(), "confirmed once");
    let m = store
        .grant_covering("claude", "s1", "p", "Bash", &input, "")
        .await
        .unwrap()
        .expect("matches in its session");
    assert_eq!(m.id, g.id);
    for (session, project) in [("s2", "p"), ("s1", "q")] {
        assert_eq!(
            store
                .grant_covering("claude", session, project, "Bash", &input, "")
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

/// Rounds of each race: a race lost by chance in one round is won in another.
const ROUNDS: usize = 30;

/// Three taps on one prompt, each on a pool of its own, released together
/// right before the write, round after round: each round saves one grant
/// (one `grant.created`), and every tap reads that one back.
async fn taps_racing_on_one_prompt_save_one_grant(db: Db) {
    let pools = [db.open().await, db.open().await, db.open().await];
    let taps = [
        (Scope::Session, "ana"),
        (Scope::Always, "bo"),
        (Scope::Session, "cy"),
    ];
    let mut wins = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..ROUNDS {
        let action = format!("act{round}");
        let start = Arc::new(Barrier::new(pools.len()));
        let racers: Vec<_> = pools
            .iter()
            .zip(taps)
            .map(|(store, (scope, by))| {
                let (store, action, start) = (store.clone(), action.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    save(&store, scope, "p", &action, by).await
                })
            })
            .collect();
        let mut saved = Vec::new();
        for r in racers {
            saved.push(r.await.expect("a tap task"));
        }
        assert!(
            saved.iter().all(|g| *g == saved[0]),
            "round {round}: every tap reads the one grant: {saved:?}"
        );
        let winner = &saved[0];
        assert!(
            taps.iter()
                .any(|(scope, by)| winner.created_by == *by && winner.scope == *scope),
            "round {round}: the grant is one tap's: {winner:?}"
        );
        *wins.entry(winner.created_by.clone()).or_default() += 1;
        assert_eq!(
            pools[0].count_rows("grants").await.unwrap(),
            round as i64 + 1,
            "round {round}: one grant per prompt"
        );
        assert_eq!(
            kinds(&pools[0], "grant.created").await,
            round + 1,
            "round {round}: one grant.created per prompt"
        );
    }
    // Which tap wins is up to the scheduler: reported, not asserted.
    println!("grant saved by {wins:?} over {ROUNDS} rounds");
}

/// How many events of `kind` the log holds.
async fn kinds(store: &Store, kind: &str) -> usize {
    store
        .events_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind)
        .count()
}

/// Three revokers of one live grant, each on a pool of its own, released
/// together right before the write, round after round: one revokes, the
/// others are told it was revoked already (by the one), and the log holds
/// one `grant.revoked` per grant.
async fn revokers_racing_revoke_once(db: Db) {
    let pools = [db.open().await, db.open().await, db.open().await];
    let revokers = [
        ("ana", Channel::Cli),
        ("bo", Channel::Inbox),
        ("cy", Channel::Chat),
    ];
    for round in 0..ROUNDS {
        let g = save(&pools[0], Scope::Always, "p", &format!("act{round}"), "ana").await;
        assert!(pools[0].grant_confirm(&g.id).await.unwrap());
        let start = Arc::new(Barrier::new(pools.len()));
        let racers: Vec<_> = pools
            .iter()
            .zip(revokers)
            .map(|(store, (by, channel))| {
                let (store, id, start) = (store.clone(), g.id.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    store.grant_revoke_in(&id, by, channel, None).await
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for r in racers {
            outcomes.push(r.await.expect("a revoker task").unwrap().expect("found"));
        }
        let now: Vec<_> = outcomes
            .iter()
            .filter(|r| matches!(r, Revoked::Now(_)))
            .collect();
        assert_eq!(now.len(), 1, "round {round}: one revokes: {outcomes:?}");
        // Every revoker sees the one who revoked it.
        let by = now[0].grant().revoked_by.clone();
        assert!(by.is_some(), "{outcomes:?}");
        assert!(
            outcomes.iter().all(|r| r.grant().revoked_by == by),
            "round {round}: {outcomes:?}"
        );
        assert_eq!(
            kinds(&pools[0], "grant.revoked").await,
            round + 1,
            "round {round}: one grant.revoked per grant"
        );
    }
}

both_engines!(a_grant_matches_once_confirmed_and_until_revoked);
both_engines!(multi_thread: taps_racing_on_one_prompt_save_one_grant, revokers_racing_revoke_once);
