//! Separation of duties: under `[approvals] not_by_proposer` the actor who
//! proposed an action may not approve it — refused as `self_approval` and
//! audited through every door (the store on both engines, the CLI, the
//! HTTP API, the Inbox's cookie, MCP's proposal, a chat tap) — and a
//! quorum counts only the others.

mod api_support;
mod common;

use api_support::Api;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::daemon::{Daemon, write_config};
use common::engine::Db;
use common::fake_telegram::FakeTelegram;
use common::{TempDb, json, new_action, stderr};
use handoff::store::actions::{Actor, ApproveOutcome, NewAction, Status};
use handoff::store::tokens::Role;
use serde_json::{Value, json};

const POLICY: &str = "\n[approvals]\nnot_by_proposer = true\n";

fn separated(proposer: &str, approvals: i64) -> NewAction {
    NewAction {
        proposer: proposer.into(),
        approvals_required: approvals,
        not_by_proposer: true,
        escalation: Vec::new(),
        ..new_action("deploy", r#"{"version":"1.2"}"#)
    }
}

async fn audit_reasons(store: &handoff::store::Store, id: &str) -> Vec<(String, String, Value)> {
    store
        .action_audit(id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.actor, e.event, e.details))
        .collect()
}

/// Quorum 2 with the proposer among the approvers needs two others: the
/// proposer's approval is refused and counts nothing, on both engines.
async fn quorum_of_two_needs_two_others(db: Db) {
    let store = db.open().await;
    let id = store
        .propose(&separated("alice", 2))
        .await
        .unwrap()
        .action
        .id;
    let out = store.approve(&id, Actor::cli("alice"), None).await.unwrap();
    let ApproveOutcome::SelfApproval { action } = out else {
        panic!("the proposer's approval is refused: {out:?}");
    };
    assert_eq!((action.approvals, action.status), (0, Status::Pending));
    let trail = audit_reasons(&store, &id).await;
    assert!(
        trail.iter().any(|(actor, ev, d)| actor == "alice"
            && ev == "refused_attempt"
            && d["reason"] == "self_approval"),
        "{trail:?}"
    );
    let out = store.approve(&id, Actor::cli("bob"), None).await.unwrap();
    assert!(
        matches!(&out, ApproveOutcome::ApprovalAdded { action } if action.approvals == 1),
        "{out:?}"
    );
    // Still refused after another's approval: the proposer never completes it.
    let out = store.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(
        matches!(out, ApproveOutcome::SelfApproval { .. }),
        "{out:?}"
    );
    let out = store.approve(&id, Actor::cli("carol"), None).await.unwrap();
    let ApproveOutcome::Approved { action } = out else {
        panic!("two others make the quorum: {out:?}");
    };
    assert_eq!(action.approvals, 2);
    assert_eq!(action.decided_by.as_deref(), Some("carol"));

    // Without the policy the proposer's approval counts, as before.
    let free = NewAction {
        not_by_proposer: false,
        escalation: Vec::new(),
        ..separated("alice", 1)
    };
    let id = store.propose(&free).await.unwrap().action.id;
    let out = store.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(out, ApproveOutcome::Approved { .. }), "{out:?}");
}

both_engines!(quorum_of_two_needs_two_others);

fn cli_with(db: &TempDb, cfg: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(args)
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_CONFIG", cfg)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .output()
        .expect("run handoff")
}

#[test]
fn the_cli_refuses_the_proposers_own_approval_with_exit_3() {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(
        &cfg,
        format!("{POLICY}\n[[approvals.rule]]\nkind = \"notes.*\"\nnot_by_proposer = false\n"),
    )
    .unwrap();
    let propose = |kind: &str| {
        let out = cli_with(
            &db,
            &cfg,
            &[
                "--json",
                "propose",
                "--kind",
                kind,
                "--summary",
                "ship it",
                "--as",
                "alice",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)["action"]["id"].as_str().unwrap().to_string()
    };
    let id = propose("deploy");
    let out = cli_with(&db, &cfg, &["--json", "approve", &id, "--as", "alice"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err: Value = serde_json::from_str(common::stdout(&out).trim()).expect("a JSON refusal");
    let err = &err["error"];
    assert_eq!(err["reason"], "self_approval", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("someone else must approve"),
        "{err}"
    );
    let audit = json(&cli_with(&db, &cfg, &["--json", "audit", &id])).to_string();
    assert!(
        audit.contains("refused_attempt") && audit.contains("self_approval"),
        "{audit}"
    );
    let out = cli_with(&db, &cfg, &["--json", "approve", &id, "--as", "bob"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["action"]["status"], "approved");

    // A kind the per-kind rule exempts: the author may approve it.
    let id = propose("notes.add");
    let out = cli_with(&db, &cfg, &["--json", "approve", &id, "--as", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

async fn policy_api() -> Api {
    let cfg = handoff::config::Config::parse(POLICY, std::path::Path::new("handoff.toml")).unwrap();
    Api::with_config(cfg).await
}

async fn propose_as(api: &Api, token: &str) -> String {
    let (st, v) = api
        .call(
            "POST",
            "/v1/actions",
            Some(token),
            Some(json!({"kind": "deploy", "summary": "ship it", "args": {}, "project": "p"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    assert_eq!(v["action"]["not_by_proposer"], true, "{v}");
    v["action"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_api_refuses_self_approval_with_409_self_approval() {
    let api = policy_api().await;
    let alice = api.token("alice", Role::Admin, None).await;
    let bob = api.token("bob", Role::Human, None).await;
    let id = propose_as(&api, &alice).await;
    let path = format!("/v1/actions/{id}/approve");
    let (st, v) = api.call("POST", &path, Some(&alice), Some(json!({}))).await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["reason"], "self_approval", "{v}");
    assert_eq!(v["detail"]["approvals"], 0, "{v}");
    let trail = audit_reasons(&api.store, &id).await;
    assert!(
        trail.iter().any(|(a, e, d)| a == "alice"
            && e == "refused_attempt"
            && d["reason"] == "self_approval"),
        "{trail:?}"
    );
    let (st, v) = api.call("POST", &path, Some(&bob), Some(json!({}))).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["action"]["status"], "approved", "{v}");
}

#[tokio::test]
async fn the_inbox_refuses_self_approval() {
    const HOST: &str = "127.0.0.1:8642";
    let api = policy_api().await;
    let alice = api.token("alice", Role::Admin, None).await;
    let id = propose_as(&api, &alice).await;
    // Alice's Inbox session: the login link the page uses.
    let link = api.store.inbox_link_create("alice", 600_000).await.unwrap();
    let login = Request::post("/inbox/login")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("code={}", link.code)))
        .unwrap();
    let resp = tower::ServiceExt::oneshot(api.app.clone(), login)
        .await
        .unwrap();
    let cookie = resp
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("handoff_inbox="))
        .expect("a session cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let approve = Request::post(format!("/v1/actions/{id}/approve"))
        .header(header::HOST, HOST)
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header(header::COOKIE, cookie)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let (st, v) = api.send(approve).await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["reason"], "self_approval", "{v}");
    let a = api.store.get_action(&id).await.unwrap();
    assert_eq!((a.status, a.approvals), (Status::Pending, 0));
    let trail = audit_reasons(&api.store, &id).await;
    assert!(
        trail.iter().any(|(_, _, d)| d["reason"] == "self_approval"),
        "{trail:?}"
    );
}

/// MCP has no approving tool (an agent never decides its own actions),
/// and what an agent proposes through it carries the policy: its own
/// name approving elsewhere is refused.
#[tokio::test]
async fn an_mcp_proposal_cannot_be_approved_by_its_agent() {
    let db = TempDb::new();
    std::fs::create_dir_all(db.dir.path().join("config")).unwrap();
    std::fs::write(db.dir.path().join("config/handoff.toml"), POLICY).unwrap();
    let c = mcp::connect(&db).await;
    let tools = c.list_all_tools().await.unwrap();
    assert!(
        tools.iter().all(|t| !t.name.contains("approve")),
        "no MCP tool approves"
    );
    let v = mcp::ok(
        &c,
        "propose_action",
        json!({"kind": "deploy", "summary": "ship it", "args": {}}),
    )
    .await;
    let id = v["action"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["action"]["not_by_proposer"], true, "{v}");
    let proposer = v["action"]["proposer"].as_str().unwrap().to_string();
    c.cancel().await.ok();
    let out = db.cli(&["--json", "approve", &id, "--as", &proposer]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(json(&out)["error"]["reason"], "self_approval");
}

mod mcp_support;
use mcp_support as mcp;

#[tokio::test]
async fn a_chat_tap_by_the_proposer_is_refused_and_another_approver_decides() {
    const TEAM: i64 = -100_500;
    let db = TempDb::new();
    db.open().await.close().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(
        db.dir.path(),
        &fake.url,
        &[("ops", TEAM, &[1, 2], &[1, 2])],
        POLICY,
    );
    let _d = Daemon::start(&db.path, &cfg);
    // @user1 (Alice's chat name) proposes, as a person at a terminal would.
    let out = cli_with(
        &db,
        &cfg,
        &[
            "--json",
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "ship it",
            "--as",
            "@user1",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let id = json(&out)["action"]["id"].as_str().unwrap().to_string();
    let short = id[id.len() - 8..].to_string();
    let msg = fake
        .until(30, "the action's message", |f| {
            f.messages(TEAM)
                .into_iter()
                .find(|m| m.text.contains(&short))
        })
        .await;
    let approve = msg.button("Approve");
    fake.tap(TEAM, 1, msg.message_id, &approve);
    fake.until(30, "the proposer's tap refused", |f| {
        f.toasts()
            .into_iter()
            .find(|t| t.contains("someone else must approve"))
    })
    .await;
    let store = db.open().await;
    let a = store.get_action(&id).await.unwrap();
    assert_eq!((a.status, a.approvals), (Status::Pending, 0));
    let trail = audit_reasons(&store, &id).await;
    assert!(
        trail
            .iter()
            .any(|(a, _, d)| a == "@user1" && d["reason"] == "self_approval"),
        "{trail:?}"
    );
    fake.tap(TEAM, 2, msg.message_id, &approve);
    fake.until(30, "bob approves", |f| {
        f.toasts().into_iter().find(|t| t.contains("Approved ✅"))
    })
    .await;
    assert_eq!(
        store.get_action(&id).await.unwrap().status,
        Status::Approved
    );
}
