//! Boards through the store API: CAS on board_version and row revision
//! everywhere, advance, handled vs outcome, progress and auto-archive, events.

mod common;

use common::count;
use common::engine::Db;
use handoff::store::Store;
use handoff::store::boards::{
    Advance, Annotate, BoardFull, BoardUpsert, Handled, NextStep, OutcomeWrite, Refusal, RowInput,
    RowOwner, RowStatus, RowWrite, StaleRow,
};
use serde_json::json;

fn rows(v: serde_json::Value) -> Vec<RowInput> {
    serde_json::from_value(v).expect("row JSON")
}

fn upsert(title: &str, version: Option<i64>, r: serde_json::Value) -> BoardUpsert {
    BoardUpsert {
        project: "proj".into(),
        title: title.into(),
        board_version: version,
        agent: "claude".into(),
        session: "s1".into(),
        rows: rows(r),
    }
}

async fn create(store: &Store, r: serde_json::Value) -> BoardFull {
    store
        .board_upsert(&upsert("Launch", None, r))
        .await
        .unwrap()
        .expect("created")
}

fn advance(f: &BoardFull, label: &str, next: &str) -> Advance {
    Advance {
        board: f.board.id.clone(),
        label: label.into(),
        expected_revision: f.row(label).unwrap().revision,
        board_version: f.board.board_version,
        next: NextStep {
            next_step: next.into(),
            ..NextStep::default()
        },
        by: "claude".into(),
        ..Advance::default()
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

fn handled(board: &str, label: &str) -> Handled {
    Handled {
        board: board.into(),
        label: label.into(),
        by: "ann".into(),
        ..Handled::default()
    }
}

/// Apply `change` (row fields as JSON) to row `label` at its current
/// revision; returns the board after and the events the write appended.
async fn change_row(
    store: &Store,
    full: &BoardFull,
    label: &str,
    change: &serde_json::Value,
) -> (BoardFull, Vec<handoff::store::events::Event>) {
    let mut row = json!({"label": label, "revision": full.row(label).unwrap().revision});
    row.as_object_mut()
        .unwrap()
        .extend(change.as_object().unwrap().clone());
    let start = store.last_event_seq().await.unwrap();
    let after = store
        .board_upsert(&upsert(
            "Launch",
            Some(full.board.board_version),
            json!([row]),
        ))
        .await
        .unwrap()
        .expect("updated");
    (after, store.events_after(start, 100).await.unwrap())
}

async fn kinds(store: &Store, after: i64) -> Vec<String> {
    store
        .events_after(after, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

async fn upsert_creates_then_requires_versions_and_reports_every_mismatch(db: Db) {
    let (a, _) = db.open_manual(1_000).await;
    let f = create(
        &a,
        json!([{"label":"db","status":"blocked","next_step":"pick"},{"label":"api"},{"label":"ui"}]),
    )
    .await;
    assert_eq!(f.board.board_version, 1);
    assert!(f.rows.iter().all(|r| r.revision == 1));

    // A second handle bumps `db` and the board.
    let b = db.open().await;
    let up = upsert(
        "Launch",
        Some(1),
        json!([{"label":"db","revision":1,"note":"x"}]),
    );
    b.board_upsert(&up)
        .await
        .unwrap()
        .expect("first writer wins");

    let before_events = count(&a, "events").await;
    let stale = a
        .board_upsert(&upsert(
            "Launch",
            Some(1),
            json!([{"label":"db","revision":1,"note":"y"},{"label":"api","revision":1,"status":"done"},
                   {"label":"ui","revision":7},{"label":"new","revision":1}]),
        ))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        stale,
        Refusal::Stale {
            board_version: 2,
            rows: vec![
                StaleRow {
                    label: "db".into(),
                    revision: Some(2)
                },
                StaleRow {
                    label: "ui".into(),
                    revision: Some(1)
                },
                StaleRow {
                    label: "new".into(),
                    revision: None
                },
            ]
        }
    );
    // Nothing changed: the valid `api` part of the write was not applied either.
    let now = a.board_get("Launch", Some("proj")).await.unwrap().unwrap();
    assert_eq!(now.row("api").unwrap().status, RowStatus::Tracked);
    assert_eq!(now.row("db").unwrap().note, "x");
    assert_eq!(count(&a, "events").await, before_events);

    // An existing row named without a revision is stale too, and so is a
    // new-board write (no version) on an existing board.
    let r = a
        .board_upsert(&upsert(
            "Launch",
            Some(2),
            json!([{"label":"api","status":"done"}]),
        ))
        .await
        .unwrap();
    assert!(matches!(
        r,
        Err(Refusal::Stale {
            board_version: 2,
            ..
        })
    ));
    let r = a
        .board_upsert(&upsert("Launch", None, json!([])))
        .await
        .unwrap();
    assert!(matches!(
        r,
        Err(Refusal::Stale {
            board_version: 2,
            ..
        })
    ));
    // A version for a board that does not exist.
    let r = a
        .board_upsert(&upsert("Nope", Some(1), json!([])))
        .await
        .unwrap();
    assert!(matches!(r, Err(Refusal::NotFound { .. })));
    assert_eq!(count(&a, "boards").await, 1);
}

async fn an_unchanged_refresh_bumps_nothing(db: Db) {
    let s = db.open().await;
    let f = create(
        &s,
        json!([{"label":"a","status":"done","note":"n"},{"label":"b"}]),
    )
    .await;
    let before = count(&s, "events").await;
    let again = s
        .board_upsert(&upsert(
            "Launch",
            Some(1),
            json!([{"label":"a","revision":1,"status":"done","note":"n"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again, f);
    assert_eq!(count(&s, "events").await, before);
}

async fn single_row_write_and_archive_refuse_stale_versions(db: Db) {
    let s = db.open().await;
    let f = create(&s, json!([{"label":"a"},{"label":"b"}])).await;
    let id = f.board.id.clone();
    let write = |rev: Option<i64>, ver: Option<i64>| RowWrite {
        board: id.clone(),
        board_version: ver,
        row: RowInput {
            label: "a".into(),
            revision: rev,
            status: Some(RowStatus::Partial),
            ..RowInput::default()
        },
        by: "claude".into(),
        ..RowWrite::default()
    };
    let r = s.board_row(&write(Some(9), None)).await.unwrap();
    assert!(
        matches!(r, Err(Refusal::Stale { board_version: 1, ref rows }) if rows[0].revision == Some(1))
    );
    let r = s.board_row(&write(Some(1), Some(5))).await.unwrap();
    assert!(matches!(
        r,
        Err(Refusal::Stale {
            board_version: 1,
            ..
        })
    ));
    let r = s.board_row(&write(None, None)).await.unwrap();
    assert!(
        matches!(r, Err(Refusal::Stale { .. })),
        "existing row needs its revision"
    );
    let ok = s
        .board_row(&write(Some(1), Some(1)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ok.row("a").unwrap().revision, 2);
    assert_eq!(ok.board.board_version, 2);

    // Archive: CAS on board_version, then a second archive is refused.
    let r = s.board_archive(&id, None, 1, "me").await.unwrap();
    assert_eq!(
        r,
        Err(Refusal::Stale {
            board_version: 2,
            rows: vec![]
        })
    );
    assert!(
        s.board_get(&id, None)
            .await
            .unwrap()
            .unwrap()
            .board
            .archived_at
            .is_none()
    );
    let b = s.board_archive(&id, None, 2, "me").await.unwrap().unwrap();
    assert!(b.archived_at.is_some() && !b.auto_archived);
    assert_eq!(b.board_version, 3);
    assert_eq!(
        s.board_archive(&id, None, 3, "me").await.unwrap(),
        Err(Refusal::Archived)
    );
    // Short id works; a later agent write reactivates the board.
    let short = &id[id.len() - 8..];
    let r = s
        .board_row(&RowWrite {
            board: short.into(),
            row: RowInput {
                label: "c".into(),
                ..RowInput::default()
            },
            ..RowWrite::default()
        })
        .await
        .unwrap()
        .unwrap();
    assert!(r.board.archived_at.is_none());
    assert!(
        kinds(&s, 0)
            .await
            .contains(&"board.reactivated".to_string())
    );
}

async fn advance_archives_the_step_with_response_and_outcome(db: Db) {
    let (s, clock) = db.open_manual(10_000).await;
    let f = create(
        &s,
        json!([{"label":"db","status":"blocked","next_step":"pick a db","owner":"decision"}]),
    )
    .await;
    let id = f.board.id.clone();
    s.annotate(&inbox(&id, "db", "SQLite please"))
        .await
        .unwrap()
        .unwrap();
    s.mark_handled(&handled(&id, "db")).await.unwrap().unwrap();
    clock.advance(5);
    let f = s.board_get(&id, None).await.unwrap().unwrap();

    // Stale row revision and stale board version are both refused, nothing changes.
    let mut stale = advance(&f, "db", "create the schema");
    stale.expected_revision -= 1;
    assert!(matches!(
        s.board_advance(&stale).await.unwrap(),
        Err(Refusal::Stale { .. })
    ));
    let mut stale = advance(&f, "db", "create the schema");
    stale.board_version -= 1;
    assert!(matches!(
        s.board_advance(&stale).await.unwrap(),
        Err(Refusal::Stale { .. })
    ));
    // Handled but no outcome: the step cannot be archived without one.
    let r = s
        .board_advance(&advance(&f, "db", "create the schema"))
        .await
        .unwrap();
    assert!(matches!(r, Err(Refusal::OutcomeRequired { .. })));
    assert_eq!(s.board_get(&id, None).await.unwrap().unwrap(), f);

    let mut a = advance(&f, "db", "create the schema");
    a.outcome = Some("chose SQLite".into());
    // The Inbox answer was never picked up: advancing would bury it unread.
    assert_eq!(
        s.board_advance(&a).await.unwrap(),
        Err(Refusal::UnreadResponse { label: "db".into() })
    );
    assert_eq!(s.board_get(&id, None).await.unwrap().unwrap(), f);
    assert_eq!(s.pending_rows(None, None, "agent").await.unwrap().len(), 1);
    let after = s.board_advance(&a).await.unwrap().unwrap();
    let row = after.row("db").unwrap();
    let before = f.row("db").unwrap();
    assert_eq!(row.status, RowStatus::Blocked);
    assert_eq!(row.next_step, "create the schema");
    assert_eq!(row.action_version, before.action_version + 1);
    assert_eq!(row.revision, before.revision + 1);
    assert_eq!(after.board.board_version, f.board.board_version + 1);
    assert!(
        row.response.annotation.is_none()
            && row.response.handled_at.is_none()
            && row.outcome.is_empty()
    );
    assert_eq!(row.history.len(), 1);
    let step = &row.history[0];
    assert_eq!(step.action_version, 1);
    assert_eq!(step.next_step, "pick a db");
    assert_eq!(step.response.annotation.as_deref(), Some("SQLite please"));
    assert!(step.response.handled_at.is_some());
    assert_eq!(step.outcome, "chose SQLite");
    assert_eq!(step.ended_at, 10_005);
    let k = kinds(&s, 0).await;
    assert!(k.ends_with(&["row.advanced".to_string(), "row.blocked".to_string()]));
}

/// The keys of the JSON object `text`, in the order they are written.
fn keys_in_order(text: &str, keys: &[&str]) -> Vec<usize> {
    keys.iter()
        .map(|k| {
            text.find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("`{k}` missing from {text}"))
        })
        .collect()
}

/// A row's and a step's response (annotation and handled mark) are one
/// struct in Rust but stay flat fields, in their old order, on the wire
/// and in the stored history.
async fn a_response_is_written_flat_in_rows_and_steps(db: Db) {
    let s = db.open().await;
    let f = create(
        &s,
        json!([{"label":"db","status":"blocked","next_step":"pick a db"}]),
    )
    .await;
    let id = f.board.id.clone();
    s.annotate(&inbox(&id, "db", "SQLite please"))
        .await
        .unwrap()
        .unwrap();
    s.mark_handled(&handled(&id, "db")).await.unwrap().unwrap();
    s.pending_rows(None, None, "agent").await.unwrap();
    let f = s.board_get(&id, None).await.unwrap().unwrap();
    let mut a = advance(&f, "db", "create the schema");
    a.outcome = Some("chose SQLite".into());
    s.board_advance(&a).await.unwrap().unwrap();
    s.annotate(&inbox(&id, "db", "and WAL"))
        .await
        .unwrap()
        .unwrap();
    let f = s.board_get(&id, None).await.unwrap().unwrap();
    let row = f.row("db").unwrap();

    let response = [
        "annotation",
        "annotation_kind",
        "annotation_source",
        "annotated_by",
        "annotated_at",
        "annotation_seen_at",
        "handled_at",
        "handled_by",
    ];
    let step_text = serde_json::to_string(&row.history[0]).unwrap();
    let mut step_keys = vec!["context"];
    step_keys.extend(response);
    step_keys.push("outcome");
    let at = keys_in_order(&step_text, &step_keys);
    assert!(at.is_sorted(), "step keys out of order: {step_text}");
    assert!(step_text.contains("\"annotation\":\"SQLite please\""));

    let row_text = serde_json::to_string(row).unwrap();
    assert!(!row_text.contains("\"response\""), "{row_text}");
    let tail = &row_text[row_text.rfind("\"ended_at\"").unwrap()..];
    let mut row_keys = response.to_vec();
    row_keys.extend(["handled_seen_at", "position"]);
    let at = keys_in_order(tail, &row_keys);
    assert!(at.is_sorted(), "row keys out of order: {tail}");
    assert!(tail.contains("\"annotation\":\"and WAL\""));
    // And it reads back as it was written.
    let back: BoardFull = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
    assert_eq!(back, f);
}

async fn handled_keeps_the_row_blocked_until_an_outcome(db: Db) {
    let s = db.open().await;
    let f = create(
        &s,
        json!([{"label":"acct","status":"blocked","next_step":"create the account","owner":"task"},
                               {"label":"other","status":"done"}]),
    )
    .await;
    let id = f.board.id.clone();
    // Not blocked → nothing to mark.
    let r = s.mark_handled(&handled(&id, "other")).await.unwrap();
    assert_eq!(
        r,
        Err(Refusal::NotBlocked {
            status: RowStatus::Done
        })
    );
    let c = s
        .mark_handled(&handled(&id, "acct"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.row.status, RowStatus::Blocked);
    let handoffs = s.unprocessed_handoffs(Some("proj")).await.unwrap();
    assert_eq!(handoffs.len(), 1);

    // Moving it out of blocked without an outcome is refused, whole.
    let r = s
        .board_upsert(&upsert(
            "Launch",
            Some(c.board_version),
            json!([{"label":"acct","revision":c.row.revision,"status":"done"}]),
        ))
        .await
        .unwrap();
    assert_eq!(
        r,
        Err(Refusal::OutcomeRequired {
            label: "acct".into()
        })
    );
    // A blank outcome is Empty; a stale revision is Stale.
    let w = |text: &str, rev| OutcomeWrite {
        board: id.clone(),
        label: "acct".into(),
        expected_revision: rev,
        outcome: text.into(),
        ..OutcomeWrite::default()
    };
    assert_eq!(
        s.board_outcome(&w("  ", c.row.revision)).await.unwrap(),
        Err(Refusal::Empty)
    );
    assert!(matches!(
        s.board_outcome(&w("done", 99)).await.unwrap(),
        Err(Refusal::Stale { .. })
    ));
    assert_eq!(s.unprocessed_handoffs(None).await.unwrap().len(), 1);
    let done = s
        .board_outcome(&w("account created", c.row.revision))
        .await
        .unwrap()
        .unwrap();
    let row = done.row("acct").unwrap();
    assert_eq!(row.status, RowStatus::Done);
    assert_eq!(row.outcome, "account created");
    assert!(s.unprocessed_handoffs(None).await.unwrap().is_empty());
    // Both rows done: the board archived itself in the same write.
    assert!(done.board.archived_at.is_some() && done.board.auto_archived);
}

async fn progress_auto_archives_at_100_and_reactivates(db: Db) {
    let s = db.open().await;
    // Empty board: active, no percentage.
    let e = s
        .board_upsert(&upsert("Empty", None, json!([])))
        .await
        .unwrap()
        .unwrap();
    assert!(e.board.archived_at.is_none() && e.board.progress.percent.is_none());
    // All-na: active.
    let na = s
        .board_upsert(&upsert(
            "NA",
            None,
            json!([{"label":"x","status":"na"},{"label":"y","status":"na"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert!(na.board.archived_at.is_none() && na.board.progress.percent.is_none());
    // done + partial + na = 75 %.
    let f = s
        .board_upsert(&upsert(
            "P",
            None,
            json!([{"label":"a","status":"done"},{"label":"b","status":"partial"},{"label":"c","status":"na"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(f.board.progress.percent, Some(75.0));
    assert!(f.board.archived_at.is_none());
    let start = s.last_event_seq().await.unwrap();
    // b → done: 100 % archives in the same write.
    let full = s
        .board_upsert(&upsert(
            "P",
            Some(1),
            json!([{"label":"b","revision":1,"status":"done"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full.board.progress.percent, Some(100.0));
    assert!(full.board.archived_at.is_some() && full.board.auto_archived);
    assert_eq!(
        kinds(&s, start).await,
        ["board.upserted", "row.updated", "board.archived"]
    );
    assert!(
        s.board_list(Some("proj"), false)
            .await
            .unwrap()
            .iter()
            .all(|b| b.title != "P")
    );
    // A later write lowering it reactivates it.
    let lower = s
        .board_upsert(&upsert(
            "P",
            Some(full.board.board_version),
            json!([{"label":"d","status":"missing"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert!(lower.board.archived_at.is_none() && !lower.board.auto_archived);
    assert!(
        kinds(&s, start)
            .await
            .ends_with(&["board.reactivated".to_string()])
    );
}

async fn every_change_writes_its_event_with_board_session_and_project(db: Db) {
    let s = db.open().await;
    let f = create(
        &s,
        json!([{"label":"db","status":"blocked","next_step":"pick"}]),
    )
    .await;
    let id = f.board.id.clone();
    let c = s.annotate(&inbox(&id, "db", "pg")).await.unwrap().unwrap();
    s.pending_rows(Some("proj"), None, "agent-1").await.unwrap();
    let h = s.mark_handled(&handled(&id, "db")).await.unwrap().unwrap();
    s.clear_handled(&handled(&id, "db")).await.unwrap().unwrap();
    s.board_row(&RowWrite {
        board: id.clone(),
        row: RowInput {
            label: "db".into(),
            revision: Some(h.row.revision + 1),
            next_step: Some("pick again".into()),
            ..RowInput::default()
        },
        ..RowWrite::default()
    })
    .await
    .unwrap()
    .unwrap();
    let evs = s.events_after(0, 100).await.unwrap();
    let k: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        k,
        [
            "board.upserted",
            "row.updated",
            "row.blocked",
            "row.annotated",
            "row.delivered",
            "row.handled",
            "row.handled_cleared",
            "row.updated",
            "row.blocked",
        ]
    );
    assert!(evs.iter().all(|e| e.project == "proj" && e.session == "s1"));
    let annotated = &evs[3];
    assert_eq!(annotated.channel, "inbox");
    assert_eq!(annotated.payload["source"], "inbox");
    assert_eq!(annotated.payload["kind"], "answer");
    assert_eq!(annotated.entity_id, c.row.id);
    // The annotation history is append-only in the engine.
    assert_eq!(count(&s, "board_row_annotations").await, 1);
    for sql in [
        "DELETE FROM board_row_annotations",
        "UPDATE board_row_annotations SET annotation = 'forged'",
    ] {
        let err = db.exec(sql, &[]).await.unwrap_err();
        assert!(err.contains("append-only"), "{err}");
    }
}

async fn row_owner_is_stored_and_read_back_in_every_spelling(db: Db) {
    let store = db.open().await;
    let full = create(
        &store,
        json!([
            {"label": "a", "status": "blocked", "next_step": "pick", "owner": "decision"},
            {"label": "b", "status": "blocked", "next_step": "do", "owner": "task"},
            {"label": "c", "status": "blocked", "next_step": "ok?", "owner": "approval"},
            {"label": "d", "status": "blocked", "next_step": "?"}
        ]),
    )
    .await;
    let read = store
        .board_get(&full.board.id, None)
        .await
        .unwrap()
        .expect("board");
    let owners: Vec<RowOwner> = ["a", "b", "c", "d"]
        .iter()
        .map(|l| read.row(l).unwrap().owner)
        .collect();
    assert_eq!(
        owners,
        [
            RowOwner::Decision,
            RowOwner::Task,
            RowOwner::Approval,
            RowOwner::None
        ]
    );
    // The next step installed by an advance keeps its owner too.
    let mut a = advance(&read, "d", "approve the spend");
    a.next.owner = RowOwner::Approval;
    let after = store.board_advance(&a).await.unwrap().expect("advanced");
    let read = store
        .board_get(&after.board.id, None)
        .await
        .unwrap()
        .expect("board");
    assert_eq!(read.row("d").unwrap().owner, RowOwner::Approval);
}

/// The error text of a board write refused as invalid input.
async fn invalid(store: &Store, up: BoardUpsert) -> String {
    match store.board_upsert(&up).await {
        Err(handoff::store::Error::Invalid(msg)) => msg,
        other => panic!("want an invalid-input error, got {other:?}"),
    }
}

async fn board_input_limits_hold_at_their_exact_edges(db: Db) {
    let store = db.open().await;
    let opt = |label: &str, detail: &str| json!({"label": label, "detail": detail});
    let row = |options: serde_json::Value| json!([{"label": "pick", "status": "blocked", "next_step": "choose", "options": options}]);
    // At the limits everything is accepted: a 120-character title and
    // option label, 4 options, a 4,000-character option detail.
    let at = upsert(
        &"t".repeat(120),
        None,
        row(json!([
            opt(&"l".repeat(120), &"d".repeat(4000)),
            opt("b", ""),
            opt("c", ""),
            opt("d", "")
        ])),
    );
    store
        .board_upsert(&at)
        .await
        .unwrap()
        .expect("created at the limits");

    let e = invalid(&store, upsert(&"t".repeat(121), None, json!([]))).await;
    assert!(
        e.contains("board title is 121 characters") && e.contains("limit is 120"),
        "{e}"
    );
    let e = invalid(&store, upsert("  ", None, json!([]))).await;
    assert!(e.contains("board title must not be empty"), "{e}");
    let mut up = upsert("Launch", None, json!([]));
    up.project = String::new();
    assert!(
        invalid(&store, up)
            .await
            .contains("project must not be empty")
    );
    let five = json!([
        opt("a", ""),
        opt("b", ""),
        opt("c", ""),
        opt("d", ""),
        opt("e", "")
    ]);
    let e = invalid(&store, upsert("Five", None, row(five))).await;
    assert!(e.contains("5 options given; a row offers at most 4"), "{e}");
    let e = invalid(
        &store,
        upsert(
            "Long",
            None,
            row(json!([opt(&"l".repeat(121), ""), opt("b", "")])),
        ),
    )
    .await;
    assert!(e.contains("option label is 121 characters"), "{e}");
    let e = invalid(
        &store,
        upsert("Blank", None, row(json!([opt(" ", ""), opt("b", "")]))),
    )
    .await;
    assert!(e.contains("option label must not be empty"), "{e}");
    let e = invalid(
        &store,
        upsert(
            "Detail",
            None,
            row(json!([opt("a", &"d".repeat(4001)), opt("b", "")])),
        ),
    )
    .await;
    assert!(e.contains("option detail is 4001 characters"), "{e}");
    assert_eq!(
        count(&store, "boards").await,
        1,
        "nothing refused was written"
    );
}

async fn rows_resolve_by_a_unique_id_suffix_of_four_or_more_hex_digits(db: Db) {
    let store = db.open().await;
    let full = create(
        &store,
        json!([{"label": "only", "status": "blocked", "next_step": "pick"}]),
    )
    .await;
    let id = full.row("only").unwrap().id.clone();
    let by = |reference: &str| {
        let mut a = inbox(&full.board.id, reference, "noted");
        a.label = reference.into();
        a
    };
    for suffix in [
        &id[id.len() - 8..],
        &id[id.len() - 4..],
        &id.to_uppercase()[..],
    ] {
        let done = store.annotate(&by(suffix)).await.unwrap();
        assert!(done.is_ok(), "`{suffix}` names the row: {done:?}");
    }
    // Three digits are too few to be an id: not found, even though they match.
    let short = &id[id.len() - 3..];
    match store.annotate(&by(short)).await.unwrap() {
        Err(Refusal::NotFound { what }) => assert!(what.contains(short), "{what}"),
        other => panic!("`{short}` must not resolve: {other:?}"),
    }
}

async fn the_annotation_history_records_each_text_and_each_clear(db: Db) {
    let store = db.open().await;
    let full = create(
        &store,
        json!([{"label": "pick", "status": "blocked", "next_step": "choose"}]),
    )
    .await;
    for text in ["Use Postgres.", "  "] {
        store
            .annotate(&inbox(&full.board.id, "pick", text))
            .await
            .unwrap()
            .expect("an Inbox annotation, then its clear");
    }
    let history = db
        .rows("SELECT annotation, kind, source FROM board_row_annotations ORDER BY seq")
        .await;
    assert_eq!(
        history,
        [
            [
                Some("Use Postgres.".to_string()),
                Some("answer".to_string()),
                Some("inbox".to_string())
            ],
            [None, None, Some("inbox".to_string())]
        ]
    );
}

async fn board_list_filters_by_project_and_archive_newest_first(db: Db) {
    let (store, clock) = db.open_manual(1_000_000).await;
    let mut made = Vec::new();
    for (project, title) in [
        ("proj", "First"),
        ("other", "Elsewhere"),
        ("proj", "Second"),
    ] {
        let mut up = upsert(
            title,
            None,
            json!([{"label": "a", "status": "blocked", "next_step": "x"}]),
        );
        up.project = project.into();
        // A session belongs to one project: each project its own.
        up.session = format!("s-{project}");
        made.push(store.board_upsert(&up).await.unwrap().expect("created"));
        clock.advance(1000);
    }
    let titles = |boards: Vec<handoff::store::boards::Board>| {
        boards.into_iter().map(|b| b.title).collect::<Vec<_>>()
    };
    assert_eq!(
        titles(store.board_list(Some("proj"), false).await.unwrap()),
        ["Second", "First"]
    );
    assert_eq!(
        titles(store.board_list(None, false).await.unwrap()),
        ["Second", "Elsewhere", "First"]
    );
    let first = &made[0].board;
    store
        .board_archive(&first.id, None, first.board_version, "ann")
        .await
        .unwrap()
        .expect("archived");
    assert_eq!(
        titles(store.board_list(Some("proj"), false).await.unwrap()),
        ["Second"]
    );
    assert_eq!(
        titles(store.board_list(Some("proj"), true).await.unwrap()),
        ["First", "Second"],
        "with archived ones, the just-archived board is the newest"
    );
}

async fn an_advance_validates_every_part_of_the_next_step_before_writing(db: Db) {
    let store = db.open().await;
    let full = create(
        &store,
        json!([{"label": "a", "status": "blocked", "next_step": "first"}]),
    )
    .await;
    let long = "n".repeat(4001);
    let five: Vec<handoff::store::boards::RowOption> = serde_json::from_value(
        json!([{"label":"1"},{"label":"2"},{"label":"3"},{"label":"4"},{"label":"5"}]),
    )
    .unwrap();
    type Spoil<'a> = Box<dyn Fn(&mut NextStep) + 'a>;
    let cases: [(&str, Spoil); 4] = [
        ("note", Box::new(|n: &mut NextStep| n.note = long.clone())),
        (
            "impact",
            Box::new(|n: &mut NextStep| n.impact = long.clone()),
        ),
        (
            "options",
            Box::new(|n: &mut NextStep| n.options = five.clone()),
        ),
        (
            "context",
            Box::new(|n: &mut NextStep| n.context = "c".repeat(20_001)),
        ),
    ];
    for (what, spoil) in cases {
        let mut a = advance(&full, "a", "second");
        spoil(&mut a.next);
        match store.board_advance(&a).await {
            Err(handoff::store::Error::Invalid(msg)) => {
                assert!(
                    msg.contains("4001 characters")
                        || msg.contains("20001 bytes")
                        || msg.contains("20001 characters")
                        || msg.contains("5 options"),
                    "{what}: {msg}"
                )
            }
            other => panic!("{what}: want invalid input, got {other:?}"),
        }
    }
    let mut a = advance(&full, "a", "second");
    a.outcome = Some(long.clone());
    let e = store.board_advance(&a).await.unwrap_err().to_string();
    assert!(e.contains("4001 characters"), "outcome: {e}");
    let read = store
        .board_get(&full.board.id, None)
        .await
        .unwrap()
        .expect("board");
    assert_eq!(
        read.row("a").unwrap().next_step,
        "first",
        "nothing was written"
    );
    assert_eq!(read.board.board_version, full.board.board_version);
}

async fn a_blocked_row_is_re_announced_only_when_its_step_changes(db: Db) {
    let s = db.open().await;
    let mut full = create(
        &s,
        json!([{"label": "a", "status": "blocked", "next_step": "pick", "note": "n",
                "impact": "i", "context": "c", "owner": "decision",
                "options": [{"label": "x"}, {"label": "y"}]}]),
    )
    .await;
    let changes = [
        json!({"note": "n2"}),
        json!({"next_step": "pick again"}),
        json!({"owner": "task"}),
        json!({"impact": "i2"}),
        json!({"options": [{"label": "x"}, {"label": "z"}]}),
        json!({"context": "c2"}),
        json!({"outcome": "partly done"}),
    ];
    let mut announced = Vec::new();
    for change in changes {
        let (after, events) = change_row(&s, &full, "a", &change).await;
        full = after;
        let kinds: Vec<String> = events.into_iter().map(|e| e.kind).collect();
        assert!(
            kinds.contains(&"row.updated".to_string()),
            "{change}: {kinds:?}"
        );
        announced.push(kinds.contains(&"row.blocked".to_string()));
    }
    assert_eq!(
        announced,
        [true, true, true, true, true, true, false],
        "every field a human reads re-announces the row; an outcome alone does not"
    );
}

async fn boards_resolve_by_a_unique_id_suffix_of_four_or_more_hex_digits(db: Db) {
    let store = db.open().await;
    let full = create(&store, json!([])).await;
    let id = full.board.id.clone();
    for reference in [
        &id[..],
        &id[id.len() - 4..],
        &id.to_uppercase()[id.len() - 8..],
    ] {
        let got = store.board_get(reference, None).await.unwrap();
        assert_eq!(
            got.map(|b| b.board.id).ok(),
            Some(id.clone()),
            "`{reference}`"
        );
    }
    let short = &id[id.len() - 3..];
    match store.board_get(short, None).await.unwrap() {
        Err(Refusal::NotFound { what }) => assert!(what.contains(short), "{what}"),
        other => panic!("`{short}` must not resolve: {other:?}"),
    }
}

async fn rows_keep_positions_from_one_and_new_rows_go_last(db: Db) {
    let s = db.open().await;
    let full = create(&s, json!([{"label": "a"}, {"label": "b"}])).await;
    let positions = |f: &BoardFull| {
        f.rows
            .iter()
            .map(|r| (r.label.clone(), r.position))
            .collect::<Vec<_>>()
    };
    assert_eq!(positions(&full), [("a".into(), 1), ("b".into(), 2)]);
    let more = s
        .board_upsert(&upsert(
            "Launch",
            Some(full.board.board_version),
            json!([{"label": "c"}, {"label": "d"}]),
        ))
        .await
        .unwrap()
        .expect("rows added");
    assert_eq!(
        positions(&more),
        [
            ("a".into(), 1),
            ("b".into(), 2),
            ("c".into(), 3),
            ("d".into(), 4)
        ]
    );
}

async fn only_a_handled_row_needs_an_outcome_to_leave_blocked(db: Db) {
    let s = db.open().await;
    let full = create(
        &s,
        json!([{"label": "plain", "status": "blocked", "next_step": "x"},
               {"label": "marked", "status": "blocked", "next_step": "y"}]),
    )
    .await;
    s.mark_handled(&handled(&full.board.id, "marked"))
        .await
        .unwrap()
        .unwrap();
    let full = s.board_get(&full.board.id, None).await.unwrap().unwrap();
    let rev = |f: &BoardFull, l: &str| f.row(l).unwrap().revision;
    // A row nobody marked leaves blocked without an outcome; a marked row
    // may change while it stays blocked.
    let full = s
        .board_upsert(&upsert(
            "Launch",
            Some(full.board.board_version),
            json!([{"label": "plain", "revision": rev(&full, "plain"), "status": "done"},
                   {"label": "marked", "revision": rev(&full, "marked"), "note": "still on it"}]),
        ))
        .await
        .unwrap()
        .expect("no outcome needed for either");
    // The marked row leaving blocked without an outcome is refused.
    let refused = s
        .board_upsert(&upsert(
            "Launch",
            Some(full.board.board_version),
            json!([{"label": "marked", "revision": rev(&full, "marked"), "status": "done"}]),
        ))
        .await
        .unwrap();
    assert_eq!(
        refused.unwrap_err(),
        Refusal::OutcomeRequired {
            label: "marked".into()
        }
    );
}

async fn a_new_row_with_an_outcome_is_stamped_with_its_time(db: Db) {
    let (s, _clock) = db.open_manual(1_700_000_000_000).await;
    let full = create(
        &s,
        json!([{"label": "done", "status": "done", "outcome": "shipped"},
               {"label": "open", "status": "tracked"}]),
    )
    .await;
    assert_eq!(
        full.row("done").unwrap().outcome_at,
        Some(1_700_000_000_000)
    );
    assert_eq!(full.row("open").unwrap().outcome_at, None);
}

async fn an_outcome_event_is_written_once_per_new_outcome(db: Db) {
    let s = db.open().await;
    let mut full = create(&s, json!([{"label": "a", "status": "tracked"}])).await;
    let mut got = Vec::new();
    for change in [
        json!({"outcome": "half done"}),
        json!({"outcome": "half done", "note": "same outcome, other field"}),
        json!({"outcome": "all done"}),
        json!({"outcome": ""}),
    ] {
        let (after, events) = change_row(&s, &full, "a", &change).await;
        full = after;
        let outcomes: Vec<_> = events
            .into_iter()
            .filter(|e| e.kind == "row.outcome")
            .map(|e| e.payload["outcome"].clone())
            .collect();
        got.push(outcomes);
    }
    assert_eq!(
        got,
        [
            vec![json!("half done")],
            vec![],
            vec![json!("all done")],
            vec![]
        ]
    );
}

async fn one_write_takes_at_most_500_rows(db: Db) {
    let s = db.open().await;
    let rows = |n: usize| {
        json!(
            (0..n)
                .map(|i| json!({"label": format!("r{i}")}))
                .collect::<Vec<_>>()
        )
    };
    let e = invalid(&s, upsert("Too many", None, rows(501))).await;
    assert!(
        e.contains("501 rows given; one write takes at most 500"),
        "{e}"
    );
    let full = s
        .board_upsert(&upsert("Just enough", None, rows(500)))
        .await
        .unwrap()
        .expect("500 rows are accepted");
    assert_eq!(full.rows.len(), 500);
}

async fn a_later_upsert_moves_the_board_to_its_agent_and_session(db: Db) {
    let s = db.open().await;
    let mut full = create(&s, json!([{"label": "a"}])).await;
    assert_eq!(
        (full.board.agent.as_str(), full.board.session.as_str()),
        ("claude", "s1")
    );
    let mut seen = Vec::new();
    for (i, (agent, session)) in [("codex", ""), ("", "s2"), ("", "")]
        .into_iter()
        .enumerate()
    {
        let mut up = upsert(
            "Launch",
            Some(full.board.board_version),
            json!([{"label": "a", "revision": full.row("a").unwrap().revision, "note": format!("round {i}")}]),
        );
        up.agent = agent.into();
        up.session = session.into();
        full = s.board_upsert(&up).await.unwrap().expect("updated");
        let read = s.board_get(&full.board.id, None).await.unwrap().unwrap();
        seen.push((read.board.agent, read.board.session));
    }
    assert_eq!(
        seen,
        [
            ("codex".to_string(), "s1".to_string()),
            ("codex".to_string(), "s2".to_string()),
            ("codex".to_string(), "s2".to_string())
        ],
        "a blank agent or session keeps the one on the board"
    );
}

/// A board created with every row done is not archived in the same breath
/// (it would vanish from `board list` the moment it appears); a later write
/// that leaves it complete archives it as usual.
async fn a_board_created_complete_stays_listed_until_a_later_write(db: Db) {
    let s = db.open().await;
    let made = s
        .board_upsert(&upsert(
            "Report",
            None,
            json!([{"label":"a","status":"done"},{"label":"b","status":"done"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(made.board.progress.percent, Some(100.0));
    assert!(made.board.archived_at.is_none(), "{:?}", made.board);
    assert!(
        s.board_list(Some("proj"), false)
            .await
            .unwrap()
            .iter()
            .any(|b| b.title == "Report")
    );
    // A later write that leaves it complete archives it.
    let later = s
        .board_upsert(&upsert(
            "Report",
            Some(1),
            json!([{"label":"a","revision":1,"status":"done","note":"checked"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert!(later.board.archived_at.is_some() && later.board.auto_archived);
}

both_engines!(
    upsert_creates_then_requires_versions_and_reports_every_mismatch,
    an_unchanged_refresh_bumps_nothing,
    single_row_write_and_archive_refuse_stale_versions,
    advance_archives_the_step_with_response_and_outcome,
    a_response_is_written_flat_in_rows_and_steps,
    handled_keeps_the_row_blocked_until_an_outcome,
    progress_auto_archives_at_100_and_reactivates,
    every_change_writes_its_event_with_board_session_and_project,
    row_owner_is_stored_and_read_back_in_every_spelling,
    board_input_limits_hold_at_their_exact_edges,
    rows_resolve_by_a_unique_id_suffix_of_four_or_more_hex_digits,
    the_annotation_history_records_each_text_and_each_clear,
    board_list_filters_by_project_and_archive_newest_first,
    an_advance_validates_every_part_of_the_next_step_before_writing,
    a_blocked_row_is_re_announced_only_when_its_step_changes,
    boards_resolve_by_a_unique_id_suffix_of_four_or_more_hex_digits,
    rows_keep_positions_from_one_and_new_rows_go_last,
    only_a_handled_row_needs_an_outcome_to_leave_blocked,
    a_new_row_with_an_outcome_is_stamped_with_its_time,
    an_outcome_event_is_written_once_per_new_outcome,
    one_write_takes_at_most_500_rows,
    a_later_upsert_moves_the_board_to_its_agent_and_session,
    a_board_created_complete_stays_listed_until_a_later_write,
);
