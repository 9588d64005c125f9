//! `handoff hook claude`: the real binary reads real Claude Code
//! hook events on stdin and answers on stdout, decided from other processes
//! (`handoff approve` / `reject`), by rules, by grants, or not at all (fail
//! closed). Event samples are shaped exactly like the documented events.

mod common;

use std::sync::Arc;

use common::hook::{TIMED_OUT, bash, finish, permission_request, spawn_hook, timed_out};
use common::{TempDb, wait_for};
use handoff::store::Store;
use handoff::store::actions::{Action, Actor, Status};
use handoff::store::grants::{NewGrant, Scope, Terms};
use serde_json::{Value, json};
use tokio::sync::Barrier;

/// The pending action of `kind` once the hook has proposed it.
async fn pending(store: &Store, kind: &str) -> Action {
    wait_for(30, "the hook's pending action", || async {
        store
            .list_actions(Some(Status::Pending))
            .await
            .unwrap()
            .into_iter()
            .find(|a| a.kind == kind)
    })
    .await
}

#[tokio::test]
async fn approved_in_another_process_the_hook_allows() {
    let db = TempDb::new();
    let store = db.open().await;
    let ev = permission_request("s-1", "Bash", bash("npm test"));
    let hook = spawn_hook(&db, &ev.to_string(), &[], &[]);
    let a = pending(&store, "claude.Bash").await;
    assert_eq!(a.args, bash("npm test"), "args are the tool input");
    assert_eq!(a.session, "s-1");
    assert_eq!(a.project, "shop", "the project is the cwd's folder name");
    assert!(
        a.summary.contains("npm test") && a.summary.contains("/home/dev/shop"),
        "{}",
        a.summary
    );
    let o = db.cli(&["approve", &a.id, "--as", "alice"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
    );
}

#[tokio::test]
async fn an_edited_approval_returns_the_edited_input() {
    let db = TempDb::new();
    let store = db.open().await;
    let ev = permission_request("s-1", "Bash", bash("npm publish"));
    let hook = spawn_hook(&db, &ev.to_string(), &[], &[]);
    let a = pending(&store, "claude.Bash").await;
    let o = db.cli(&[
        "approve",
        &a.id,
        "--as",
        "alice",
        "--patch",
        r#"{"command": "npm publish --dry-run"}"#,
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (code, out, _) = finish(hook);
    assert_eq!(code, 0);
    let d = &out["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "allow");
    assert_eq!(
        d["updatedInput"],
        json!({"command": "npm publish --dry-run", "description": "Run it"})
    );
}

#[tokio::test]
async fn a_rejection_denies_with_the_reason_for_the_model() {
    let db = TempDb::new();
    let store = db.open().await;
    let ev = permission_request("s-1", "Bash", bash("rm -rf build"));
    let hook = spawn_hook(&db, &ev.to_string(), &[], &[]);
    let a = pending(&store, "claude.Bash").await;
    let o = db.cli(&["reject", &a.id, "--as", "bob", "--reason", "use make clean"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (code, out, _) = finish(hook);
    assert_eq!(code, 0);
    let d = &out["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny");
    let msg = d["message"].as_str().unwrap();
    assert!(
        msg.contains("bob") && msg.contains("use make clean"),
        "{msg}"
    );
}

#[tokio::test]
async fn pre_tool_use_answers_in_its_own_format() {
    let db = TempDb::new();
    let store = db.open().await;
    let mut ev = permission_request("s-9", "Bash", bash("cargo build"));
    ev["hook_event_name"] = json!("PreToolUse");
    ev["tool_use_id"] = json!("toolu_01ABC");
    ev.as_object_mut().unwrap().remove("permission_suggestions");
    let hook = spawn_hook(&db, &ev.to_string(), &[], &[]);
    let a = pending(&store, "claude.Bash").await;
    assert_eq!(a.dedup_key.as_deref(), Some("claude:s-9:toolu_01ABC"));
    assert!(
        db.cli(&["approve", &a.id, "--as", "alice"])
            .status
            .success()
    );
    let (_, out, _) = finish(hook);
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "approved in handoff by alice"
        }})
    );
}

#[tokio::test]
async fn nobody_deciding_in_time_denies_and_settles_the_action() {
    let db = TempDb::new();
    let store = db.open().await;
    let ev = permission_request("s-1", "Bash", bash("make deploy"));
    let hook = spawn_hook(&db, &ev.to_string(), &["--timeout", "1s"], &[]);
    let (code, out, err) = finish(hook);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": TIMED_OUT}),
        "{err}"
    );
    // It asked: the prompt it filed is the only action, expired (so a late
    // tap finds it decided).
    timed_out(&store, "claude.Bash", "s-1", &bash("make deploy")).await;
    assert_eq!(store.list_actions(None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn an_unreachable_daemon_denies() {
    let db = TempDb::new();
    let ev = permission_request("s-1", "Bash", bash("npm test"));
    // Port 9 (discard) on loopback: nothing listens there.
    let hook = spawn_hook(
        &db,
        &ev.to_string(),
        &["--timeout", "30s"],
        &[
            ("HANDOFF_URL", "http://127.0.0.1:9"),
            ("HANDOFF_TIMEOUT", "2s"),
        ],
    );
    let (code, out, _) = finish(hook);
    assert_eq!(code, 0);
    let d = &out["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny", "{out}");
    assert!(d["message"].as_str().unwrap().contains("fail closed"));
}

#[tokio::test]
async fn malformed_stdin_says_so_and_never_allows() {
    let db = TempDb::new();
    for bad in ["", "not json", "{\"tool_name\": \"Bash\"}"] {
        let (code, out, err) = finish(spawn_hook(&db, bad, &[], &[]));
        assert_eq!(code, 1, "{bad}: {err}");
        assert_eq!(out, Value::Null, "no answer on stdout for {bad:?}");
        assert!(err.contains("not a Claude Code hook event"), "{err}");
    }
    let store = db.open().await;
    assert!(store.list_actions(None).await.unwrap().is_empty());
}

/// A config whose `[[rule]]` approves the Bash command `ls` at once.
fn rule_config(db: &TempDb) -> std::path::PathBuf {
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(
        &cfg,
        "[[rule]]\nname = \"reads\"\nkind = \"claude.Bash\"\nwhen = [{ pointer = \"/command\", equals = \"ls\" }]\ndecide = \"approve\"\n",
    )
    .unwrap();
    cfg
}

#[tokio::test]
async fn a_rule_decides_at_once() {
    let db = TempDb::new();
    let cfg = rule_config(&db);
    let ev = permission_request("s-1", "Bash", bash("ls"));
    let cfg = cfg.to_str().unwrap();
    let (code, out, err) = finish(spawn_hook(
        &db,
        &ev.to_string(),
        &["--timeout", "20s"],
        &[("HANDOFF_CONFIG", cfg)],
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
}

/// A hook call is a one-shot process: it opens one database connection for
/// its reads and writes (each connection costs a thread, a file open and
/// its setup pragmas). It opened three: a connection given back reaches
/// the pool a moment later, so the next statement opened another. Counted
/// by sqlx's own log of each statement: every new connection runs its
/// setup pragmas (`PRAGMA journal_mode = WAL; …`) first.
#[tokio::test]
async fn a_hook_call_opens_one_database_connection() {
    let db = TempDb::new();
    drop(db.open().await); // created and migrated: the hook's common case
    let cfg = rule_config(&db);
    let ev = permission_request("s-1", "Bash", bash("ls"));
    let (code, out, err) = finish(spawn_hook(
        &db,
        &ev.to_string(),
        &["--timeout", "20s"],
        &[
            ("HANDOFF_CONFIG", cfg.to_str().unwrap()),
            ("HANDOFF_LOG", "sqlx=debug"),
        ],
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
    let statements = err.lines().filter(|l| l.contains("sqlx::query")).count();
    let connections = err
        .lines()
        .filter(|l| l.contains("sqlx::query") && l.contains("PRAGMA journal_mode"))
        .count();
    assert!(statements >= 3, "sqlx logged its statements:\n{err}");
    assert_eq!(connections, 1, "one connection for the whole call:\n{err}");
}

/// Save a live grant the way a tap does: grant, approval, confirmation.
async fn grant(store: &Store, scope: Scope, session: &str, tool: &str, input: Value) -> String {
    let a = store
        .propose(&common::new_action(
            &format!("claude.{tool}"),
            &input.to_string(),
        ))
        .await
        .unwrap()
        .action;
    let pattern = handoff::store::grants::pattern::derive(tool, &input).unwrap();
    let g = store
        .grant_create(
            &NewGrant {
                scope,
                agent: "claude",
                session,
                project: "shop",
                tool,
                pattern: &pattern,
                action_id: &a.id,
                by: "alice",
                expires_at: None,
                path: "",
            },
            handoff::store::Channel::Chat,
        )
        .await
        .unwrap();
    store
        .approve(&a.id, Actor::cli("alice"), None)
        .await
        .unwrap();
    assert!(store.grant_confirm(&g.id).await.unwrap());
    g.id
}

#[tokio::test]
async fn a_session_grant_decides_only_what_it_covers() {
    let db = TempDb::new();
    let store = db.open().await;
    let gid = grant(&store, Scope::Session, "s-1", "Bash", bash("npm test")).await;

    // Covered: same session, same tool, the prefix with more plain arguments.
    let ev = permission_request("s-1", "Bash", bash("npm test -- --watch"));
    let (code, out, err) = finish(spawn_hook(&db, &ev.to_string(), &[], &[]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
    let decided = store.list_actions(None).await.unwrap();
    let a = decided
        .iter()
        .find(|a| a.args["command"] == "npm test -- --watch")
        .unwrap();
    assert_eq!(
        a.decided_by.as_deref(),
        Some(format!("grant:{gid}").as_str())
    );

    // Not covered: a wider command, another session, another tool.
    let cases = [
        permission_request("s-1", "Bash", bash("npm test && npm publish")),
        permission_request("s-1", "Bash", bash("npm publish")),
        permission_request("s-2", "Bash", bash("npm test")),
        permission_request(
            "s-1",
            "Write",
            json!({"file_path": "/home/dev/shop/npm", "content": "x"}),
        ),
    ];
    for ev in cases {
        let (code, out, err) = finish(spawn_hook(&db, &ev.to_string(), &["--timeout", "1s"], &[]));
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": TIMED_OUT}),
            "not covered, so it asked and timed out: {ev}"
        );
        let (session, tool) = (ev["session_id"].as_str(), ev["tool_name"].as_str());
        let kind = format!("claude.{}", tool.unwrap());
        timed_out(&store, &kind, session.unwrap(), &ev["tool_input"]).await;
    }

    // Revoked in the CLI: the covered prompt asks again.
    let o = db.cli(&["grants", "revoke", &gid[gid.len() - 8..], "--as", "alice"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let ev = permission_request("s-1", "Bash", bash("npm test"));
    let (_, out, err) = finish(spawn_hook(&db, &ev.to_string(), &["--timeout", "1s"], &[]));
    assert_eq!(
        out["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": TIMED_OUT}),
        "{err}"
    );
    // Asked, not decided by the revoked grant.
    timed_out(&store, "claude.Bash", "s-1", &bash("npm test")).await;
}

#[tokio::test]
async fn an_always_grant_writes_the_rule_back_and_holds_across_sessions() {
    let db = TempDb::new();
    let store = db.open().await;
    // A prompt approved with "always": its own answer carries the rule.
    let ev = permission_request("s-1", "Bash", bash("cargo test --lib"));
    let hook = spawn_hook(&db, &ev.to_string(), &[], &[]);
    let a = pending(&store, "claude.Bash").await;
    let g = store
        .grant_create(
            &NewGrant {
                scope: Scope::Always,
                agent: "claude",
                session: "s-1",
                project: &a.project,
                tool: "Bash",
                pattern: "cargo test:*",
                action_id: &a.id,
                by: "alice",
                expires_at: None,
                path: "",
            },
            handoff::store::Channel::Chat,
        )
        .await
        .unwrap();
    store
        .approve(&a.id, Actor::cli("alice"), None)
        .await
        .unwrap();
    store.grant_confirm(&g.id).await.unwrap();
    let (_, out, _) = finish(hook);
    assert_eq!(
        out["hookSpecificOutput"]["decision"]["updatedPermissions"],
        json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "cargo test:*"}],
                "behavior": "allow", "destination": "localSettings"}])
    );
    // Another session of the same project: decided at once.
    let ev = permission_request("s-7", "Bash", bash("cargo test"));
    let (_, out, _) = finish(spawn_hook(&db, &ev.to_string(), &[], &[]));
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "allow");
    // `handoff grants --json` lists it.
    let o = db.cli(&["grants", "--json"]);
    let v = common::json(&o);
    assert_eq!(v["grants"][0]["rule"], "Bash(cargo test:*)");
    assert_eq!(v["grants"][0]["scope"], "always");
}

#[tokio::test]
async fn a_stopped_hook_settles_its_prompt_as_answered_at_the_terminal() {
    let db = TempDb::new();
    let store = db.open().await;
    let ev = permission_request("s-1", "Bash", bash("git push"));
    let hook = spawn_hook(&db, &ev.to_string(), &[], &[]);
    let a = pending(&store, "claude.Bash").await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(hook.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (_, out, _) = finish(hook);
    assert_eq!(out, Value::Null, "no answer: Claude Code stopped listening");
    let a = store.get_action(&a.id).await.unwrap();
    assert_eq!(a.status, Status::Rejected);
    assert_eq!(a.decided_by.as_deref(), Some("terminal"));
    assert_eq!(a.reason.as_deref(), Some("answered at the terminal"));
}

/// The recipe's settings entry runs as written: its command, split into
/// words, is this binary's `hook claude`, and its timeout outlasts the
/// hook's own default wait (so handoff answers before Claude Code gives up).
#[tokio::test]
async fn the_settings_recipe_runs_as_written() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/claude-settings.example.json"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let hook = &v["hooks"]["PermissionRequest"][0]["hooks"][0];
    assert_eq!(hook["type"], "command");
    let words: Vec<&str> = hook["command"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(words[0], "handoff");
    assert!(hook["timeout"].as_u64().unwrap() > 9 * 60, "{hook}");
    let readme = include_str!("../docs/claude-code.md");
    assert!(readme.contains(r#""command": "handoff hook claude", "timeout": 600"#));
    let db = TempDb::new();
    let store = db.open().await;
    let ev = permission_request("s-1", "Bash", bash("npm ci"));
    let mut args = words[2..].to_vec();
    assert_eq!(words[1], "hook");
    args.retain(|w| *w != "claude");
    let child = spawn_hook(&db, &ev.to_string(), &args, &[]);
    let a = pending(&store, "claude.Bash").await;
    assert!(
        db.cli(&["approve", &a.id, "--as", "alice"])
            .status
            .success()
    );
    let (code, out, _) = finish(child);
    assert_eq!(
        (code, &out["hookSpecificOutput"]["decision"]["behavior"]),
        (0, &json!("allow"))
    );
}

/// Each ordering of a grant tap's race, played one step after the other: a
/// tap that lost to an approval leaves an inert grant, never a live one; a
/// second tap on the other grant button confirms nothing it did not show.
/// (The same writers racing at once: the test below.)
#[tokio::test]
async fn a_lost_or_repeated_grant_tap_never_makes_a_live_grant() {
    let db = TempDb::new();
    let store = db.open().await;
    let propose = |cmd: &'static str| {
        let store = store.clone();
        async move {
            let mut n = common::new_action("claude.Bash", &bash(cmd).to_string());
            n.session = "s-1".into();
            store.propose(&n).await.unwrap().action
        }
    };
    let chat = |name| Actor {
        name,
        channel: handoff::store::Channel::Chat,
    };
    // Bob approved first (once): Alice's "always" loses, her grant is inert.
    let a = propose("npm test").await;
    store.approve(&a.id, Actor::cli("bob"), None).await.unwrap();
    let (_, live) = store
        .approve_granting(&a, chat("alice"), Terms::scope(Scope::Always))
        .await
        .unwrap();
    assert_eq!(live, None);
    assert!(store.grant_list(false).await.unwrap().is_empty());
    assert_eq!(
        store.grant_list(true).await.unwrap().len(),
        1,
        "kept, inert"
    );
    assert_eq!(
        store
            .grant_given(&store.get_action(&a.id).await.unwrap())
            .await
            .unwrap(),
        None
    );
    // Alice taps "for this session" and, before that tap approves,
    // "always": the "always" tap's approval wins, but the saved grant is
    // the session one, which that tap did not show: nothing goes live.
    let b = propose("cargo test").await;
    let first = NewGrant {
        scope: Scope::Session,
        agent: "claude",
        session: "s-1",
        project: &b.project,
        tool: "Bash",
        pattern: "cargo test:*",
        action_id: &b.id,
        by: "alice",
        expires_at: None,
        path: "",
    };
    store
        .grant_create(&first, handoff::store::Channel::Chat)
        .await
        .unwrap();
    let (out, live) = store
        .approve_granting(&b, chat("alice"), Terms::scope(Scope::Always))
        .await
        .unwrap();
    assert!(matches!(
        out,
        handoff::store::actions::ApproveOutcome::Approved { .. }
    ));
    assert_eq!(live, None);
    assert!(store.grant_list(false).await.unwrap().is_empty());
    // A tap alone: live.
    let d = propose("cargo build").await;
    let (_, live) = store
        .approve_granting(&d, chat("alice"), Terms::scope(Scope::Session))
        .await
        .unwrap();
    assert_eq!(live.unwrap().rule, "Bash(cargo build:*)");
    // Not a Claude Code prompt: no grant is offered.
    let c = store
        .propose(&common::new_action("deploy", "{}"))
        .await
        .unwrap()
        .action;
    let e = store
        .approve_granting(&c, chat("alice"), Terms::scope(Scope::Session))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no grant is offered"), "{e}");
}

/// Rounds of each grant race below.
const ROUNDS: usize = 20;

/// Grant taps racing, each writer on a pool of its own, released by a
/// barrier right before its write, round after round: Bob's plain approval
/// against Alice's "always" tap, and Alice's double tap on "for this
/// session" and "always". Each round one approval wins, one grant row is
/// saved, and a grant is live only when the tap that saved it also won the
/// approval, with the scope that tap showed; otherwise it stays inert.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_grant_taps_make_one_decision_and_a_live_grant_only_for_the_winner() {
    use handoff::store::actions::ApproveOutcome;
    let db = TempDb::new();
    let (s1, s2) = (db.open().await, db.open().await);
    let chat = |name| Actor {
        name,
        channel: handoff::store::Channel::Chat,
    };
    let won = |out: &ApproveOutcome| matches!(out, ApproveOutcome::Approved { .. });
    let (mut tally_plain, mut tally_double) = (
        std::collections::BTreeMap::<String, usize>::new(),
        std::collections::BTreeMap::<String, usize>::new(),
    );
    for round in 0..ROUNDS {
        // Bob's approval against Alice's "always".
        let mut n = common::new_action(
            "claude.Bash",
            &bash(&format!("npm test {round}")).to_string(),
        );
        n.session = "s-1".into();
        let a = s1.propose(&n).await.unwrap().action;
        let start = Arc::new(Barrier::new(2));
        let bob = {
            let (s, id, start) = (s1.clone(), a.id.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                s.approve(&id, Actor::cli("bob"), None).await.unwrap()
            })
        };
        let alice = {
            let (s, a, start) = (s2.clone(), a.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                s.approve_granting(&a, chat("alice"), Terms::scope(Scope::Always))
                    .await
                    .unwrap()
            })
        };
        let (bob, (alice, live)) = (bob.await.unwrap(), alice.await.unwrap());
        assert!(
            won(&bob) ^ won(&alice),
            "round {round}: one approval wins: {bob:?} {alice:?}"
        );
        let decided = s1.get_action(&a.id).await.unwrap();
        assert_eq!(decided.status, Status::Approved);
        let saved = s1
            .grant_for_action(&a.id)
            .await
            .unwrap()
            .expect("the tap saved its grant before approving");
        assert_eq!(
            (saved.scope, saved.created_by.as_str()),
            (Scope::Always, "alice")
        );
        let given = s1.grant_given(&decided).await.unwrap();
        if won(&alice) {
            assert_eq!(decided.decided_by.as_deref(), Some("alice"));
            let live = live.expect("the winning tap's grant is live");
            assert!(live.live() && live.id == saved.id, "{live:?}");
            assert_eq!(given.map(|g| g.id), Some(saved.id.clone()));
        } else {
            assert_eq!(decided.decided_by.as_deref(), Some("bob"));
            assert_eq!(live, None, "round {round}: a lost tap makes no live grant");
            assert!(!saved.live(), "round {round}: kept, inert: {saved:?}");
            assert_eq!(given, None);
        }
        *tally_plain.entry(decided.decided_by.unwrap()).or_default() += 1;

        // Alice's double tap: "for this session" and "always" at once.
        let mut n = common::new_action(
            "claude.Bash",
            &bash(&format!("cargo test {round}")).to_string(),
        );
        n.session = "s-1".into();
        let b = s1.propose(&n).await.unwrap().action;
        let start = Arc::new(Barrier::new(2));
        let taps: Vec<_> = [(s1.clone(), Scope::Session), (s2.clone(), Scope::Always)]
            .into_iter()
            .map(|(s, scope)| {
                let (b, start) = (b.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    let (out, live) = s
                        .approve_granting(&b, chat("alice"), Terms::scope(scope))
                        .await
                        .unwrap();
                    (scope, out, live)
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for t in taps {
            outcomes.push(t.await.unwrap());
        }
        let winners: Vec<_> = outcomes.iter().filter(|(_, out, _)| won(out)).collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: one approval wins: {outcomes:?}"
        );
        let saved = s1
            .grant_for_action(&b.id)
            .await
            .unwrap()
            .expect("one grant saved");
        let lives: Vec<_> = outcomes
            .iter()
            .filter_map(|(s, _, l)| l.clone().map(|l| (*s, l)))
            .collect();
        if winners[0].0 == saved.scope {
            // The tap that saved the grant won: its grant is live, and only
            // that tap says so.
            assert_eq!(lives.len(), 1, "round {round}: {outcomes:?}");
            assert_eq!(lives[0].0, saved.scope);
            assert!(lives[0].1.live() && lives[0].1.id == saved.id);
        } else {
            // The approval is the other button's: nothing it did not show
            // goes live.
            assert!(lives.is_empty(), "round {round}: {outcomes:?}");
            assert!(!saved.live(), "round {round}: {saved:?}");
        }
        let key = format!("won {:?}, saved {:?}", winners[0].0, saved.scope);
        *tally_double.entry(key).or_default() += 1;
    }
    assert_eq!(
        s1.grant_list(true).await.unwrap().len(),
        2 * ROUNDS,
        "one grant row per prompt"
    );
    // Which writer wins is up to the scheduler: reported, not asserted.
    println!("approval vs \"always\": {tally_plain:?}; double tap: {tally_double:?}");
}
