//! Project isolation through the HTTP API: a
//! project-scoped token learns nothing about another project's actions,
//! dedup keys or ledger ids, and cannot squat them.

mod api_support;
mod common;

use api_support::Api;
use axum::http::StatusCode;
use handoff::store::tokens::Role;
use serde_json::{Value, json};

/// Does the JSON text mention `needle` anywhere?
fn mentions(v: &Value, needle: &str) -> bool {
    v.to_string().contains(needle)
}

#[tokio::test]
async fn a_dedup_key_held_in_another_project_is_invisible_and_cannot_be_squatted() {
    let api = Api::new().await;
    let p1 = api.token("a1", Role::Agent, Some("p1")).await;
    let p2 = api.token("a2", Role::Agent, Some("p2")).await;
    let body = |project: &str, to: &str| {
        json!({"project": project, "kind": "email.send", "summary": "mail",
               "args": {"to": to}, "dedup_key": "weekly-report"})
    };
    let (st, theirs) = api
        .call("POST", "/v1/actions", Some(&p2), Some(body("p2", "bob")))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{theirs}");
    let their_id = theirs["action"]["id"].as_str().unwrap().to_string();

    // Same payload and a different one: a new action of p1, then p1's own
    // conflict, and no trace of p2's action in either answer.
    for to in ["bob", "eve"] {
        let (st, mine) = api
            .call("POST", "/v1/actions", Some(&p1), Some(body("p1", to)))
            .await;
        if to == "bob" {
            assert_eq!(st, StatusCode::CREATED, "{mine}");
            assert_eq!(mine["action"]["project"], "p1");
        } else {
            // p1's own holder of the key conflicts loudly, naming p1's action.
            assert_eq!(st, StatusCode::CONFLICT, "{mine}");
        }
        assert!(!mentions(&mine, &their_id), "p2's id leaked: {mine}");
    }
    // p2 keeps its key.
    let (st, again) = api
        .call("POST", "/v1/actions", Some(&p2), Some(body("p2", "bob")))
        .await;
    assert_eq!(st, StatusCode::OK, "{again}");
    assert_eq!(again["action"]["id"], their_id.as_str());
}

#[tokio::test]
async fn a_short_id_is_resolved_within_the_callers_project() {
    let api = Api::new().await;
    let p1 = api.token("a1", Role::Agent, Some("p1")).await;
    let (st, mine) = api
        .call(
            "POST",
            "/v1/actions",
            Some(&p1),
            Some(json!({"project": "p1", "kind": "deploy", "summary": "ship", "args": {}})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{mine}");
    let id = mine["action"]["id"].as_str().unwrap().to_string();
    let short = &id[id.len() - 8..];
    // Another project's action whose id ends the same way.
    let twin = format!("{}{short}", "0".repeat(24));
    let pool = common::raw_pool(&api.db.path).await;
    sqlx::query(
        "INSERT INTO actions (id, kind, summary, args, fingerprint, effective_args, redact_keys,
             project, created_at, updated_at)
         VALUES (?, 'deploy', 'theirs', '{}', 'f', '{}', '[]', 'p2', 1, 1)",
    )
    .bind(&twin)
    .execute(&pool)
    .await
    .unwrap();

    let (st, got) = api
        .call("GET", &format!("/v1/actions/{short}"), Some(&p1), None)
        .await;
    assert_eq!(st, StatusCode::OK, "not ambiguous because of p2: {got}");
    assert_eq!(got["id"], id.as_str());
    // An admin sees both, so for it the short id is ambiguous.
    let admin = api.token("root", Role::Admin, None).await;
    let (st, amb) = api
        .call("GET", &format!("/v1/actions/{short}"), Some(&admin), None)
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{amb}");
    assert_eq!(amb["reason"], "ambiguous");
}

#[tokio::test]
async fn ledger_event_ids_are_per_session_and_never_leak() {
    let api = Api::new().await;
    let p1 = api.token("a1", Role::Agent, Some("p1")).await;
    let p2 = api.token("a2", Role::Agent, Some("p2")).await;
    for (tok, project, session) in [(&p1, "p1", "s1"), (&p2, "p2", "s2")] {
        let (st, v) = api
            .call(
                "POST",
                "/v1/sessions",
                Some(tok),
                Some(json!({"session_id": session, "project": project, "agent": "claude"})),
            )
            .await;
        assert!(st.is_success(), "{v}");
    }
    let begin = |payload: Value| json!({"event_id": "e1", "tool": "send", "payload": payload});
    let (st, v) = api
        .call(
            "POST",
            "/v1/sessions/s2/ledger",
            Some(&p2),
            Some(begin(json!({"secret_plan": "p2's"}))),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    // p1 uses the same event id for its own call: its own start, no 409
    // carrying p2's session, tool or payload.
    let (st, v) = api
        .call(
            "POST",
            "/v1/sessions/s1/ledger",
            Some(&p1),
            Some(begin(json!({"x": 1}))),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["outcome"], "started");
    assert!(!mentions(&v, "secret_plan") && !mentions(&v, "s2"), "{v}");

    // Completing by event id alone finds p1's own call.
    let (st, v) = api
        .call(
            "POST",
            "/v1/ledger/e1/complete",
            Some(&p1),
            Some(json!({"ok": true, "result": "done"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["entry"]["session_id"], "s1");
    // An admin sees both sessions: it must say which.
    let admin = api.token("root", Role::Admin, None).await;
    let (st, v) = api
        .call(
            "POST",
            "/v1/ledger/e1/complete",
            Some(&admin),
            Some(json!({"ok": false, "result": "no"})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["reason"], "ambiguous");
    let (st, v) = api
        .call(
            "POST",
            "/v1/ledger/e1/complete",
            Some(&admin),
            Some(json!({"ok": false, "result": "no", "session": "s2"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["entry"]["session_id"], "s2");
    // p1 cannot name p2's session.
    let (st, v) = api
        .call(
            "POST",
            "/v1/ledger/e1/complete",
            Some(&p1),
            Some(json!({"ok": true, "session": "s2"})),
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{v}");
}

#[tokio::test]
async fn metrics_for_a_scoped_token_count_only_its_project() {
    let api = Api::new().await;
    let p1 = api.token("a1", Role::Agent, Some("p1")).await;
    let admin = api.token("root", Role::Admin, None).await;
    for (project, n) in [("p1", 1), ("p2", 3)] {
        for i in 0..n {
            let (st, v) = api
                .call(
                    "POST",
                    "/v1/actions",
                    Some(&admin),
                    Some(json!({"project": project, "kind": "k", "summary": format!("s{i}"), "args": {}})),
                )
                .await;
            assert_eq!(st, StatusCode::CREATED, "{v}");
        }
    }
    // One of p2's expires (lazily: its row still says pending).
    let (st, v) = api
        .call(
            "POST",
            "/v1/actions",
            Some(&admin),
            Some(
                json!({"project": "p2", "kind": "k", "summary": "short", "args": {}, "ttl": "1ms"}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;

    let (st, mine) = api.call("GET", "/metrics", Some(&p1), None).await;
    assert_eq!(st, StatusCode::OK);
    let mine = mine.as_str().unwrap().to_string();
    assert!(
        mine.contains("handoff_actions{project=\"p1\",status=\"pending\"} 1"),
        "{mine}"
    );
    assert!(!mine.contains("p2"), "{mine}");
    assert!(
        !mine.contains("handoff_events_total"),
        "process-wide counts stay hidden: {mine}"
    );

    let (_, all) = api.call("GET", "/metrics", Some(&admin), None).await;
    let all = all.as_str().unwrap().to_string();
    assert!(
        all.contains("handoff_actions{status=\"pending\"} 4"),
        "{all}"
    );
    assert!(
        all.contains("handoff_actions{status=\"expired\"} 1"),
        "{all}"
    );
    assert!(all.contains("handoff_events_total"), "{all}");
}

/// The trigger-kept counts agree with a count of the rows themselves through
/// every kind of change: propose, decide, claim, complete, expire, purge.
#[tokio::test]
async fn kept_counts_agree_with_the_rows_through_every_change() {
    use handoff::store::actions::{Actor, Status};
    let db = common::TempDb::new();
    let (s, clock) = db.open_manual(1_800_000_000_000).await;
    let check = async |s: &handoff::store::Store| {
        for project in [None, Some("proj"), Some("other")] {
            let kept = s.counts(project).await.unwrap().actions;
            let rows = s.list_action_summaries(None, project).await.unwrap();
            for (st, n) in kept {
                let real = rows.iter().filter(|a| a.status == st).count() as i64;
                assert_eq!(n, real, "{project:?} {st:?}");
            }
        }
    };
    let mut ids = Vec::new();
    for i in 0..6 {
        let mut n = common::new_action("k", "{}");
        n.summary = format!("s{i}");
        if i % 2 == 1 {
            // A session belongs to one project: the other one's own.
            n.project = "other".into();
            n.session = "sess-other".into();
        }
        if i == 5 {
            n.ttl_ms = Some(10);
        }
        ids.push(s.propose(&n).await.unwrap().action.id);
    }
    check(&s).await;
    s.approve(&ids[0], Actor::cli("a"), None).await.unwrap();
    s.reject(&ids[1], Actor::cli("a"), "no").await.unwrap();
    s.approve(&ids[2], Actor::cli("a"), None).await.unwrap();
    s.claim(&ids[2], "o", 60_000).await.unwrap();
    check(&s).await;
    s.complete(&ids[2], "o", true, json!({}), None)
        .await
        .unwrap();
    clock.advance(1000);
    check(&s).await; // ids[5] lazily expired
    s.expire_due().await.unwrap();
    check(&s).await;
    let purged = s.purge_actions(s.now() + 1).await.unwrap();
    assert!(purged.purged.len() >= 2, "{purged:?}");
    check(&s).await;
    assert_eq!(
        s.counts(None)
            .await
            .unwrap()
            .actions
            .iter()
            .find(|(st, _)| *st == Status::Executed),
        Some(&(Status::Executed, 0))
    );
}

/// Found by schemathesis: a board title shared by two projects, named
/// without a project, is ambiguous — a 409 `ambiguous` like a short action
/// id (it was a 422 "invalid" for a request the schema allows), and exit 4
/// in the CLI.
#[tokio::test]
async fn a_board_title_two_projects_share_is_ambiguous_not_invalid() {
    let api = Api::new().await;
    let admin = api.token("root", Role::Admin, None).await;
    for p in ["p1", "p2"] {
        let (st, b) = api
            .call(
                "PUT",
                "/v1/boards",
                Some(&admin),
                Some(json!({"project": p, "title": "Launch",
                    "rows": [{"label": "domain", "status": "blocked", "next_step": "buy it", "owner": "task"}]})),
            )
            .await;
        assert_eq!(st, StatusCode::OK, "{b}");
    }
    let (st, v) = api
        .call(
            "POST",
            "/v1/boards/Launch/rows/domain/handled",
            Some(&admin),
            Some(json!({})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["reason"], "ambiguous");
    assert!(mentions(&v, "--project"), "says how to pick one: {v}");
    let o = common::cli_at(&api.db.path, &["board", "get", "Launch"]);
    assert_eq!(o.status.code(), Some(4), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("matches 2 boards"),
        "{}",
        common::stderr(&o)
    );
}
