//! Grants with an end and a place, at the store level, on both engines:
//! a grant "for 1 h" decides a covered prompt before its end and never
//! from its end on (the clock is injected: [`ManualClock`]), whether or not
//! anything swept it; a grant kept to a folder covers `git push` run
//! there and below, never in another folder, and never a chained command;
//! every prompt a grant decides leaves a `grant.used` event; an end in the
//! past is refused in words. Revoking from chat and the Inbox:
//! tests/hook_claude_chat.rs and tests/inbox_grants.rs.

mod common;

use common::engine::Db;
use handoff::store::actions::{Actor, NewAction, Status};
use handoff::store::grants::{NewGrant, Scope, Terms, pattern, prompt_cwd};
use handoff::store::{Channel, Store};
use serde_json::{Value, json};

const T0: i64 = 1_796_000_000_000;
const HOUR: i64 = 3_600_000;

/// A pending `claude.Bash` prompt of session `s1`, project `shop`, run in
/// `cwd`, as the hook proposes it (the cwd in the summary).
async fn prompt(store: &Store, cmd: &str, cwd: &str) -> handoff::store::actions::Action {
    let n = NewAction {
        kind: "claude.Bash".into(),
        summary: format!("Claude Code wants to use Bash (in {cwd}): {cmd}"),
        args: json!({"command": cmd}).to_string(),
        project: "shop".into(),
        session: "s1".into(),
        proposer: "claude".into(),
        ..NewAction::default()
    };
    store.propose(&n).await.unwrap().action
}

fn bash(cmd: &str) -> Value {
    json!({"command": cmd})
}

async fn kinds(store: &Store, kind: &str) -> Vec<Value> {
    store
        .events_after(0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.payload)
        .collect()
}

async fn an_hour_grant_decides_before_its_end_and_never_after(db: Db) {
    let (store, clock) = db.open_manual(T0).await;
    let first = prompt(&store, "git push", "/home/dev/shop").await;
    let terms = Terms {
        scope: Scope::Always,
        until: Some(T0 + HOUR),
        here: true,
    };
    let (_, g) = store
        .approve_granting(&first, Actor::cli("ana"), terms)
        .await
        .unwrap();
    let g = g.expect("the approval won: its grant holds");
    assert_eq!(g.expires_at, Some(T0 + HOUR));
    assert_eq!(g.path, "/home/dev/shop/**");
    assert_eq!(g.rule, "Bash(git push:*)");

    // Before its end: a covered prompt is decided by the grant, audited.
    clock.set(T0 + HOUR - 1);
    let before = prompt(&store, "git push origin feature", "/home/dev/shop/api").await;
    let used = store.grant_apply(&before).await.unwrap().expect("used");
    assert_eq!(used.id, g.id);
    let a = store.get_action(&before.id).await.unwrap();
    assert_eq!(a.status, Status::Approved);
    assert_eq!(a.decided_by, Some(format!("grant:{}", g.id)));
    let uses = kinds(&store, "grant.used").await;
    assert_eq!(uses.len(), 1, "{uses:?}");
    assert_eq!(uses[0]["action_id"], before.id.as_str());
    assert_eq!(store.grant_list(false).await.unwrap().len(), 1, "it holds");

    // From its end on: nothing swept it, and it decides nothing.
    clock.set(T0 + HOUR);
    let after = prompt(&store, "git push origin hotfix", "/home/dev/shop").await;
    assert_eq!(store.grant_apply(&after).await.unwrap(), None);
    assert_eq!(
        store.get_action(&after.id).await.unwrap().status,
        Status::Pending,
        "asks a person again"
    );
    assert_eq!(kinds(&store, "grant.used").await.len(), 1);
    assert!(store.grant_list(false).await.unwrap().is_empty(), "ended");
    let all = store.grant_list(true).await.unwrap();
    assert_eq!(all.len(), 1, "kept, listed with --all");
    assert!(!all[0].holds(T0 + HOUR) && all[0].holds(T0 + HOUR - 1));

    // An end that is not in the future is refused in words.
    let late = prompt(&store, "git push", "/home/dev/shop").await;
    let e = store
        .approve_granting(
            &late,
            Actor::cli("ana"),
            Terms {
                scope: Scope::Always,
                until: Some(T0),
                here: false,
            },
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not in the future"), "{e}");
}

async fn a_place_covers_its_folder_only_and_never_a_chained_command(db: Db) {
    let store = db.open().await;
    let p = pattern::derive("Bash", &bash("git push")).unwrap();
    assert_eq!(p, "git push:*");
    let g = store
        .grant_create(
            &NewGrant {
                scope: Scope::Always,
                agent: "claude",
                session: "",
                project: "shop",
                tool: "Bash",
                pattern: &p,
                action_id: "act-place",
                by: "ana",
                expires_at: None,
                path: &pattern::here("/home/dev/shop"),
            },
            Channel::Chat,
        )
        .await
        .unwrap();
    assert!(store.grant_confirm(&g.id).await.unwrap());
    let matches = |cmd: &'static str, cwd: &'static str| {
        let store = store.clone();
        async move {
            store
                .grant_covering("claude", "s9", "shop", "Bash", &bash(cmd), cwd)
                .await
                .unwrap()
                .is_some()
        }
    };
    assert!(
        matches("git push", "/home/dev/shop").await,
        "in the repository"
    );
    assert!(
        matches("git push origin main", "/home/dev/shop/web").await,
        "below it"
    );
    assert!(
        !matches("git push", "/home/dev/bank").await,
        "another folder"
    );
    assert!(
        !matches("git push", "/home/dev/shop-old").await,
        "a sibling"
    );
    assert!(
        !matches("git push", "/home/dev/shop/../bank").await,
        "out by .."
    );
    assert!(!matches("git push", "").await, "a prompt naming no folder");
    assert!(
        !matches("git push; rm -rf ~", "/home/dev/shop").await,
        "chained"
    );
    assert!(!matches("git push | sh", "/home/dev/shop").await, "piped");
    assert!(
        !matches("git push > /tmp/x", "/home/dev/shop").await,
        "redirected"
    );
    assert!(
        !matches("git pull", "/home/dev/shop").await,
        "another command"
    );
    // A bad place is refused in words.
    let e = store
        .grant_create(
            &NewGrant {
                scope: Scope::Always,
                agent: "claude",
                session: "",
                project: "shop",
                tool: "Bash",
                pattern: &p,
                action_id: "act-bad",
                by: "ana",
                expires_at: None,
                path: "shop/**",
            },
            Channel::Chat,
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("absolute folder glob"), "{e}");
}

async fn the_prompt_cwd_is_read_from_the_hooks_summary(db: Db) {
    let store = db.open().await;
    let cwd = |kind: &'static str, summary: &'static str| {
        let store = store.clone();
        async move {
            let n = NewAction {
                kind: kind.into(),
                summary: summary.into(),
                args: "{}".into(),
                ..NewAction::default()
            };
            let a = store.propose(&n).await.unwrap().action;
            prompt_cwd(&a).map(str::to_string)
        }
    };
    assert_eq!(
        cwd(
            "claude.Bash",
            "Claude Code wants to use Bash (in /home/dev/shop): npm test"
        )
        .await,
        Some("/home/dev/shop".into())
    );
    assert_eq!(
        cwd("codex.Bash", "Codex wants to use Bash (in /srv/app)").await,
        Some("/srv/app".into())
    );
    assert_eq!(
        cwd("claude.Bash", "Claude Code wants to use Bash: ls").await,
        None
    );
    assert_eq!(
        cwd("email.send", "send (in /x): y").await,
        None,
        "not a prompt"
    );
    assert_eq!(
        cwd("claude.Bash", "Claude Code wants to use Bash (in rel): x").await,
        None
    );
}

both_engines!(
    an_hour_grant_decides_before_its_end_and_never_after,
    a_place_covers_its_folder_only_and_never_a_chained_command,
    the_prompt_cwd_is_read_from_the_hooks_summary
);
