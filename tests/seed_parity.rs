//! Guarantees the seed designs make explicitly: dedup over
//! unknown outcomes, answers that auto-archive cannot hide, at-least-once
//! delivery until the agent resolves, no secrets in free text, a ledger tied
//! to registered sessions, and row transitions that lose nothing.

mod common;

use common::{TempDb, json, new_action, stderr};
use handoff::store::Store;
use handoff::store::actions::{Actor, Resolution, Status, unknown_duplicate_note};
use handoff::store::boards::{
    Annotate, BoardFull, BoardUpsert, Decided, Refusal, RowStatus, RowWrite,
};

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
    handoff::programs::recover(s).await.unwrap();
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
    // What every door tells the agent: nothing new, and why.
    let note = unknown_duplicate_note(again.created, &again.action).expect("a note");
    assert!(
        note.starts_with(&format!(
            "nothing new was proposed: {} has the same dedup key",
            again.action.short_id()
        )) && note.contains("its outcome is unknown"),
        "{note}"
    );

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
    // No note for a new action, nor for a duplicate of a pending one.
    assert_eq!(unknown_duplicate_note(fresh.created, &fresh.action), None);
    let pending = s.propose(&n).await.unwrap();
    assert!(!pending.created && pending.action.status == Status::Pending);
    assert_eq!(
        unknown_duplicate_note(pending.created, &pending.action),
        None
    );
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
        // The project of the action above (none).
        "--project",
        "",
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
        // A session belongs to one project: each project its own.
        mine.session = format!("sess-{project}");
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

fn board(rows: serde_json::Value) -> BoardUpsert {
    BoardUpsert {
        project: "proj".into(),
        title: "Launch".into(),
        agent: "claude".into(),
        session: "s1".into(),
        rows: serde_json::from_value(rows).unwrap(),
        ..BoardUpsert::default()
    }
}

fn inbox(board: &str, label: &str, text: &str) -> Annotate {
    Annotate {
        board: board.into(),
        label: label.into(),
        text: text.into(),
        by: "ann".into(),
        ..Annotate::default()
    }
}

/// Write `change` (row fields) to row `label` at its current revision.
async fn write_row(
    s: &Store,
    board: &str,
    label: &str,
    change: serde_json::Value,
) -> Decided<BoardFull> {
    let full = s.board_get(board, None).await.unwrap().unwrap();
    let mut row =
        serde_json::json!({"label": label, "revision": full.row(label).unwrap().revision});
    row.as_object_mut()
        .unwrap()
        .extend(change.as_object().unwrap().clone());
    s.board_row(&RowWrite {
        board: board.into(),
        row: serde_json::from_value(row).unwrap(),
        by: "claude".into(),
        ..RowWrite::default()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn leaving_blocked_over_an_unread_answer_is_refused() {
    let db = TempDb::new();
    let s = db.open().await;
    let f = s
        .board_upsert(&board(
            serde_json::json!([{"label": "db", "status": "blocked", "next_step": "pick one"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    let id = f.board.id.clone();
    s.annotate(&inbox(&id, "db", "use PostgreSQL"))
        .await
        .unwrap()
        .unwrap();

    // The agent sets the row done without reading the answer: refused, and
    // nothing changes (the board does not reach 100 % and archive).
    let refused = write_row(&s, &id, "db", serde_json::json!({"status": "done"})).await;
    assert_eq!(refused, Err(Refusal::UnreadResponse { label: "db".into() }));
    let after = s.board_get(&id, None).await.unwrap().unwrap();
    assert_eq!(after.row("db").unwrap().status, RowStatus::Blocked);
    assert!(after.board.archived_at.is_none());

    // Picked up, it may leave blocked.
    let got = s.pending_rows(None, Some("s1"), "claude").await.unwrap();
    assert_eq!(got.len(), 1);
    let done = write_row(&s, &id, "db", serde_json::json!({"status": "done"}))
        .await
        .unwrap();
    assert!(
        done.board.archived_at.is_some(),
        "resolved: now it archives"
    );
}

#[tokio::test]
async fn an_open_answer_keeps_the_board_from_archiving_and_stays_pending() {
    let db = TempDb::new();
    let s = db.open().await;
    let f = s
        .board_upsert(&board(serde_json::json!([
            {"label": "api", "status": "partial"},
            {"label": "docs", "status": "done"}
        ])))
        .await
        .unwrap()
        .unwrap();
    let id = f.board.id.clone();
    // A person comments on a row that is not blocked.
    s.annotate(&inbox(&id, "api", "the rate limit must stay at 100/s"))
        .await
        .unwrap()
        .unwrap();
    // The agent, unaware, finishes the row: the board is at 100 %, but it
    // must not archive over the unread answer.
    let full = write_row(&s, &id, "api", serde_json::json!({"status": "done"}))
        .await
        .unwrap();
    assert_eq!(full.board.progress.percent, Some(100.0));
    assert!(
        full.board.archived_at.is_none(),
        "archiving would hide the answer"
    );

    // The answer reaches the agent, and again on the next call (it is not
    // resolved yet), and in `resume` marked as delivered before.
    let first = s.pending_rows(None, Some("s1"), "claude").await.unwrap();
    assert_eq!((first.len(), first[0].new), (1, true));
    let again = s.pending_rows(None, Some("s1"), "claude").await.unwrap();
    assert_eq!(
        (again.len(), again[0].new),
        (1, false),
        "at-least-once until resolved"
    );
    let r = s.resume("s1", 5).await.unwrap();
    assert_eq!(r.rows.len(), 1);
    assert!(!r.rows[0].new);

    // The agent writes the row after reading it: resolved, and the board
    // archives in that write.
    let full = write_row(&s, &id, "api", serde_json::json!({"note": "kept 100/s"}))
        .await
        .unwrap();
    assert!(full.board.archived_at.is_some());
    assert!(
        s.pending_rows(None, Some("s1"), "claude")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.resume("s1", 5).await.unwrap().rows.is_empty());
}

#[tokio::test]
async fn resume_keeps_a_delivered_answer_until_the_agent_resolves_it() {
    let db = TempDb::new();
    let s = db.open().await;
    let q = common::ask(&s, "which region?").await;
    let session = q.session.clone();
    s.reply_inbox(&q.id, &common::answer("eu-west-1"))
        .await
        .unwrap()
        .unwrap();
    // The agent picks it up and crashes before acting on it.
    let picked = s
        .pending(None, Some(&session), false, "agent")
        .await
        .unwrap();
    assert_eq!(picked.len(), 1);

    let r = s.resume(&session, 5).await.unwrap();
    assert_eq!(
        r.answers.len(),
        1,
        "the call meant for recovery finds it again"
    );
    let reply = r.answers[0].reply.as_ref().unwrap();
    assert_eq!(reply.text, "eu-west-1");
    assert!(reply.seen_at.is_some(), "marked as delivered before");
    assert!(!r.is_quiet());
}

#[tokio::test]
async fn the_ledger_belongs_to_a_registered_session() {
    let db = TempDb::new();
    let s = db.open().await;
    let call = handoff::store::sessions::NewCall {
        event_id: "e1",
        session_id: "nobody",
        tool: "send",
        payload: &serde_json::json!({}),
        replay_safe: false,
    };
    match s.ledger_begin(&call).await {
        Err(handoff::store::Error::Invalid(m)) => {
            assert!(
                m.contains("not registered") && m.contains("session register"),
                "{m}"
            )
        }
        other => panic!("refused with words: {other:?}"),
    }
    assert_eq!(common::count(&s, "execution_ledger").await, 0);
    // The engine refuses it too, whoever writes.
    let pool = common::raw_pool(&db.path).await;
    let raw = sqlx::query(
        "INSERT INTO execution_ledger (event_id, session_id, tool, payload, payload_hash, status, at)
         VALUES ('e2', 'nobody', 't', '{}', 'h', 'started', 1)",
    )
    .execute(&pool)
    .await;
    assert!(raw.unwrap_err().to_string().contains("registered session"));

    // The real CLI says what to do and writes nothing.
    let out = db.cli(&[
        "ledger",
        "begin",
        "--session",
        "nobody",
        "--event-id",
        "e3",
        "--tool",
        "t",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not registered"), "{}", stderr(&out));

    common::session_with(&s, "somebody", None).await;
    let ok = db.cli(&[
        "ledger",
        "begin",
        "--session",
        "somebody",
        "--event-id",
        "e3",
        "--tool",
        "t",
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

/// A row written before free text was scrubbed on the way in (by an older
/// handoff) still shows none of the action's secrets: `redacted` scrubs
/// the result, the error and the reason again, with the action's own
/// secret values as well as `key=value`s.
#[tokio::test]
async fn free_text_stored_before_scrubbing_is_scrubbed_when_shown() {
    let db = TempDb::new();
    let s = db.open().await;
    let n = new_action("email.send", r#"{"to":"bob","api_token":"s3cr3t-tok3n"}"#);
    let id = s.propose(&n).await.unwrap().action.id;
    let pool = common::raw_pool(&db.path).await;
    sqlx::query("UPDATE actions SET result = ?, error = ?, reason = ? WHERE id = ?")
        .bind(r#"{"stdout_tail":"sent with s3cr3t-tok3n","token":"t0k3n-2"}"#)
        .bind("failed for s3cr3t-tok3n")
        .bind("no: password=hunter2222 is wrong")
        .bind(&id)
        .execute(&pool)
        .await
        .unwrap();
    let stored = s.get_action(&id).await.unwrap();
    assert_eq!(stored.error.as_deref(), Some("failed for s3cr3t-tok3n"));
    let shown = stored.redacted();
    assert_eq!(
        shown.result,
        Some(serde_json::json!({"stdout_tail": "sent with [redacted]", "token": "[redacted]"}))
    );
    assert_eq!(shown.error.as_deref(), Some("failed for [redacted]"));
    assert_eq!(
        shown.reason.as_deref(),
        Some("no: password=[redacted] is wrong")
    );
    // The executor's arguments keep the real value.
    assert_eq!(stored.effective_args["api_token"], "s3cr3t-tok3n");
}

#[tokio::test]
async fn secrets_never_reach_the_audit_through_free_text() {
    let db = TempDb::new();
    let (s, _clock) = db.open_manual(T0).await;
    let n = new_action("email.send", r#"{"to":"bob","api_token":"s3cr3t-tok3n"}"#);
    let id = s.propose(&n).await.unwrap().action.id;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    s.claim(&id, "exec-1", 60_000).await.unwrap();
    // The command echoed its token, and a password it read elsewhere.
    s.complete(
        &id,
        "exec-1",
        false,
        serde_json::json!({
            "exit_code": 1,
            "stdout_tail": "connecting with s3cr3t-tok3n\n",
            "stderr_tail": "retry: PASSWORD=hunter2222 failed\n",
        }),
        Some("auth failed for s3cr3t-tok3n (Authorization: Bearer abc.def.ghi)"),
    )
    .await
    .unwrap();

    // Nowhere in the file: not the row, not the audit, not the events.
    let pool = common::raw_pool(&db.path).await;
    for (table, col) in [
        ("actions", "COALESCE(result, '') || COALESCE(error, '')"),
        ("events", "COALESCE(audit, '')"),
        ("events", "payload"),
    ] {
        let sql = format!("SELECT {col} FROM {table}");
        let texts: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_all(&pool)
            .await
            .unwrap();
        let all = texts.join("\n");
        for secret in ["s3cr3t-tok3n", "hunter2222", "abc.def.ghi"] {
            assert!(!all.contains(secret), "{secret} in {table}: {all}");
        }
    }
    let a = s.get_action(&id).await.unwrap();
    assert_eq!(
        a.error.as_deref(),
        Some("auth failed for [redacted] (Authorization: Bearer [redacted])")
    );
    assert_eq!(
        a.result.unwrap()["stderr_tail"],
        "retry: PASSWORD=[redacted] failed\n"
    );
    // The executor still got the real value: it is in the arguments.
    assert_eq!(a.effective_args["api_token"], "s3cr3t-tok3n");
    // And the CLI shows none of it.
    let shown = common::stdout(&db.cli(&["audit", &id]));
    assert!(
        !shown.contains("s3cr3t-tok3n") && shown.contains("[redacted]"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_losing_approver_is_told_how_to_follow_the_run() {
    let db = TempDb::new();
    let s = db.open().await;
    let id = s
        .propose(&new_action("deploy", "{}"))
        .await
        .unwrap()
        .action
        .id;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    let out = db.cli(&["approve", &id, "--as", "bob"]);
    // Already decided: refused (3), and the error line says how to follow.
    assert_eq!(out.status.code(), Some(3));
    let said = stderr(&out);
    assert!(
        said.contains("already approved by alice") && said.contains("--wait"),
        "{said}{}",
        stderr(&out)
    );
}
