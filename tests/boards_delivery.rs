//! Human responses on rows and their delivery to agents: re-delivery of
//! blocked rows, once-only asides, the exact-response delivery mark across
//! two handles, and the Inbox-vs-chat rule for annotations.

mod common;

use common::engine::Db;
use handoff::store::Store;
use handoff::store::boards::{
    Annotate, AnnotationKind, BoardFull, BoardUpsert, Channel, Handled, Refusal, RowInput,
    RowStatus, RowWrite,
};
use serde_json::json;

async fn board(store: &Store, rows: serde_json::Value) -> BoardFull {
    store
        .board_upsert(&BoardUpsert {
            project: "proj".into(),
            title: "Launch".into(),
            agent: "claude".into(),
            session: "s1".into(),
            rows: serde_json::from_value(rows).unwrap(),
            ..BoardUpsert::default()
        })
        .await
        .unwrap()
        .unwrap()
}

fn note(
    board: &BoardFull,
    label: &str,
    text: &str,
    source: Channel,
    kind: AnnotationKind,
) -> Annotate {
    Annotate {
        board: board.board.id.clone(),
        label: label.into(),
        text: text.into(),
        kind,
        source,
        by: format!("{}-user", source.as_str()),
        ..Annotate::default()
    }
}

fn inbox(b: &BoardFull, label: &str, text: &str) -> Annotate {
    note(b, label, text, Channel::Inbox, AnnotationKind::Answer)
}

fn chat(b: &BoardFull, label: &str, text: &str) -> Annotate {
    note(b, label, text, Channel::Chat, AnnotationKind::Answer)
}

async fn set_status(s: &Store, b: &BoardFull, label: &str, status: RowStatus) {
    let cur = s.board_get(&b.board.id, None).await.unwrap().unwrap();
    s.board_row(&RowWrite {
        board: b.board.id.clone(),
        row: RowInput {
            label: label.into(),
            revision: Some(cur.row(label).unwrap().revision),
            status: Some(status),
            ..RowInput::default()
        },
        ..RowWrite::default()
    })
    .await
    .unwrap()
    .unwrap();
}

async fn pending_texts(s: &Store) -> Vec<(String, Option<String>, bool)> {
    s.pending_rows(Some("proj"), None, "agent")
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.row.label, p.row.response.annotation, p.new))
        .collect()
}

async fn a_blocked_row_with_a_response_is_redelivered_until_its_status_changes(db: Db) {
    let s = db.open().await;
    let b = board(
        &s,
        json!([{"label":"db","status":"blocked","next_step":"pick"},
                              {"label":"acct","status":"blocked","next_step":"create it"},
                              {"label":"quiet","status":"blocked","next_step":"nobody answered"}]),
    )
    .await;
    assert!(
        pending_texts(&s).await.is_empty(),
        "no response, nothing pending"
    );
    s.annotate(&inbox(&b, "db", "SQLite"))
        .await
        .unwrap()
        .unwrap();
    s.mark_handled(&Handled {
        board: b.board.id.clone(),
        label: "acct".into(),
        by: "ann".into(),
        ..Handled::default()
    })
    .await
    .unwrap()
    .unwrap();
    let first = pending_texts(&s).await;
    assert_eq!(
        first,
        [
            ("db".into(), Some("SQLite".into()), true),
            ("acct".into(), None, true)
        ]
    );
    // A second reader (a subagent polling first) does not swallow it.
    let other = db.open().await;
    let again = other
        .pending_rows(Some("proj"), None, "subagent")
        .await
        .unwrap();
    assert_eq!(again.len(), 2);
    assert!(
        again
            .iter()
            .all(|p| !p.new && p.row.response.annotation_seen_at.is_some()
                || p.row.handled_seen_at.is_some())
    );
    assert_eq!(pending_texts(&s).await.len(), 2);
    // The agent acknowledges `db` by changing its status: it stops coming back.
    set_status(&s, &b, "db", RowStatus::Done).await;
    let left = pending_texts(&s).await;
    assert_eq!(left, [("acct".into(), None, false)]);
}

async fn a_non_blocked_rows_annotation_comes_back_until_the_agent_writes_the_row(db: Db) {
    let s = db.open().await;
    let b = board(&s, json!([{"label":"api","status":"partial"}])).await;
    s.annotate(&inbox(&b, "api", "remember rate limits"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        pending_texts(&s).await,
        [("api".into(), Some("remember rate limits".into()), true)]
    );
    // Delivered is not resolved: an agent that crashed after the pickup
    // gets it again.
    assert_eq!(
        pending_texts(&s).await,
        [("api".into(), Some("remember rate limits".into()), false)]
    );
    // The agent writes the row after reading it: resolved.
    set_status(&s, &b, "api", RowStatus::Tracked).await;
    assert!(pending_texts(&s).await.is_empty());
    // A new aside is open again until the next write.
    s.annotate(&inbox(&b, "api", "and retries"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(pending_texts(&s).await.len(), 1);
    assert_eq!(pending_texts(&s).await.len(), 1);
    set_status(&s, &b, "api", RowStatus::Partial).await;
    assert!(pending_texts(&s).await.is_empty());
}

async fn an_annotation_rewritten_between_read_and_mark_stays_queued(db: Db) {
    // Both handles stand on the same millisecond: the guard must not rely on time alone.
    let (agent, _) = db.open_manual(50_000).await;
    let (human, _) = db.open_manual(50_000).await;
    let b = board(
        &agent,
        json!([{"label":"api","status":"tracked"},
                                  {"label":"db","status":"blocked","next_step":"pick"}]),
    )
    .await;
    human
        .annotate(&inbox(&b, "api", "old aside"))
        .await
        .unwrap()
        .unwrap();
    human
        .annotate(&inbox(&b, "db", "old answer"))
        .await
        .unwrap()
        .unwrap();

    // 1. The agent reads.
    let read = agent.pending_rows_peek(Some("proj"), None).await.unwrap();
    assert_eq!(read.len(), 2);
    // 2. The human rewrites both in the Inbox.
    human
        .annotate(&inbox(&b, "api", "new aside"))
        .await
        .unwrap()
        .unwrap();
    human
        .annotate(&inbox(&b, "db", "new answer"))
        .await
        .unwrap()
        .unwrap();
    // 3. The agent's delivery mark fails for both: it read stale text.
    assert_eq!(
        agent.mark_rows_delivered(&read, "agent").await.unwrap(),
        [false, false]
    );
    let rows = agent.board_get(&b.board.id, None).await.unwrap().unwrap();
    assert!(
        rows.rows
            .iter()
            .all(|r| r.response.annotation_seen_at.is_none())
    );
    // 4. The newest text is still queued, as new, for both rows.
    let next = pending_texts(&agent).await;
    assert_eq!(
        next,
        [
            ("api".into(), Some("new aside".into()), true),
            ("db".into(), Some("new answer".into()), true)
        ]
    );
    // Both come back, delivered before, until the agent resolves them.
    assert_eq!(
        pending_texts(&agent).await,
        [
            ("api".into(), Some("new aside".into()), false),
            ("db".into(), Some("new answer".into()), false)
        ]
    );
}

async fn pending_leaves_out_a_response_rewritten_before_its_mark(db: Db) {
    let agent = db.open().await;
    let human = db.open().await;
    let b = board(&agent, json!([{"label":"api","status":"tracked"}])).await;
    human
        .annotate(&inbox(&b, "api", "v1"))
        .await
        .unwrap()
        .unwrap();
    let read = agent.pending_rows_peek(None, None).await.unwrap();
    human
        .annotate(&inbox(&b, "api", ""))
        .await
        .unwrap()
        .unwrap(); // cleared before pickup
    assert_eq!(
        agent.mark_rows_delivered(&read, "a").await.unwrap(),
        [false]
    );
    assert!(
        agent
            .pending_rows(None, None, "a")
            .await
            .unwrap()
            .is_empty()
    );
}

async fn inbox_beats_an_unread_chat_race_and_chat_may_replace_after_pickup(db: Db) {
    let s = db.open().await;
    let b = board(
        &s,
        json!([{"label":"db","status":"blocked","next_step":"pick"}]),
    )
    .await;

    // A fresh Inbox annotation supersedes an earlier chat one.
    s.annotate(&chat(&b, "db", "from chat"))
        .await
        .unwrap()
        .unwrap();
    let c = s
        .annotate(&inbox(&b, "db", "from inbox"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.row.response.annotation.as_deref(), Some("from inbox"));
    assert_eq!(c.row.response.annotation_source, Some(Channel::Inbox));
    assert!(c.row.response.annotation_seen_at.is_none());

    // An unread Inbox annotation beats a later chat one; the refusal carries it.
    let r = s.annotate(&chat(&b, "db", "late chat")).await.unwrap();
    assert_eq!(
        r,
        Err(Refusal::UnreadAnswer {
            annotation: "from inbox".into(),
            kind: Some(AnnotationKind::Answer),
            source: Some(Channel::Inbox),
            by: Some("inbox-user".into()),
        })
    );
    // A chat clarify cannot replace an unclaimed Inbox answer either.
    let clarify = note(
        &b,
        "db",
        "correction",
        Channel::Chat,
        AnnotationKind::Clarify,
    );
    assert!(matches!(
        s.annotate(&clarify).await.unwrap(),
        Err(Refusal::UnreadAnswer { .. })
    ));
    // After pickup, chat may replace it.
    s.pending_rows(None, None, "agent").await.unwrap();
    let c = s
        .annotate(&chat(&b, "db", "chat after pickup"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.row.response.annotation_source, Some(Channel::Chat));
    assert!(c.row.response.annotation_seen_at.is_none());
    // An unclaimed chat answer: a plain chat answer is refused, a chat clarify replaces it.
    assert!(matches!(
        s.annotate(&chat(&b, "db", "again")).await.unwrap(),
        Err(Refusal::UnreadAnswer { .. })
    ));
    let c = s.annotate(&clarify).await.unwrap().unwrap();
    assert_eq!(c.row.response.annotation.as_deref(), Some("correction"));
    assert_eq!(
        c.row.response.annotation_kind,
        Some(AnnotationKind::Clarify)
    );
    // A blank chat annotation is Empty.
    assert_eq!(
        s.annotate(&chat(&b, "db", " ")).await.unwrap(),
        Err(Refusal::Empty)
    );
}

async fn a_blank_inbox_annotation_clears_only_an_unpicked_one(db: Db) {
    let s = db.open().await;
    let b = board(
        &s,
        json!([{"label":"db","status":"blocked","next_step":"pick"}]),
    )
    .await;
    s.annotate(&inbox(&b, "db", "oops")).await.unwrap().unwrap();
    let c = s.annotate(&inbox(&b, "db", "")).await.unwrap().unwrap();
    assert!(c.changed && c.row.response.annotation.is_none());
    let c = s.annotate(&inbox(&b, "db", "")).await.unwrap().unwrap();
    assert!(!c.changed, "clearing nothing changes nothing");
    s.annotate(&inbox(&b, "db", "real answer"))
        .await
        .unwrap()
        .unwrap();
    s.pending_rows(None, None, "agent").await.unwrap();
    assert_eq!(
        s.annotate(&inbox(&b, "db", "")).await.unwrap(),
        Err(Refusal::AlreadyDelivered)
    );
    let row = s.board_get(&b.board.id, None).await.unwrap().unwrap();
    assert_eq!(
        row.row("db").unwrap().response.annotation.as_deref(),
        Some("real answer")
    );
}

async fn annotate_and_handled_refuse_stale_revisions_and_archived_boards(db: Db) {
    let s = db.open().await;
    let b = board(
        &s,
        json!([{"label":"db","status":"blocked","next_step":"pick"},{"label":"x"}]),
    )
    .await;
    let mut a = inbox(&b, "db", "pg");
    a.expected_revision = Some(7);
    assert!(matches!(
        s.annotate(&a).await.unwrap(),
        Err(Refusal::Stale {
            board_version: 1,
            ..
        })
    ));
    a.expected_revision = None;
    a.action_version = Some(2);
    assert!(matches!(
        s.annotate(&a).await.unwrap(),
        Err(Refusal::Stale { .. })
    ));
    let h = Handled {
        board: b.board.id.clone(),
        label: "db".into(),
        expected_revision: Some(7),
        ..Handled::default()
    };
    assert!(matches!(
        s.mark_handled(&h).await.unwrap(),
        Err(Refusal::Stale { .. })
    ));
    let row = s.board_get(&b.board.id, None).await.unwrap().unwrap();
    assert_eq!(row, b, "nothing changed");
    // Handled, delivered: it can no longer be cleared.
    let h = Handled {
        expected_revision: None,
        ..h
    };
    s.mark_handled(&h).await.unwrap().unwrap();
    s.pending_rows(None, None, "agent").await.unwrap();
    assert_eq!(
        s.clear_handled(&h).await.unwrap(),
        Err(Refusal::AlreadyDelivered)
    );
    // Unknown rows and boards.
    let mut missing = inbox(&b, "nope", "x");
    assert!(matches!(
        s.annotate(&missing).await.unwrap(),
        Err(Refusal::NotFound { .. })
    ));
    missing.board = "no-such-board".into();
    assert!(matches!(
        s.annotate(&missing).await.unwrap(),
        Err(Refusal::NotFound { .. })
    ));
    // Archived board.
    let cur = s.board_get(&b.board.id, None).await.unwrap().unwrap();
    s.board_archive(&b.board.id, None, cur.board.board_version, "me")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        s.annotate(&inbox(&b, "x", "hi")).await.unwrap(),
        Err(Refusal::Archived)
    );
}

async fn racing_chat_annotations_on_two_handles_exactly_one_wins(db: Db) {
    let a = db.open().await;
    let bh = db.open().await;
    let b = board(
        &a,
        json!([{"label":"db","status":"blocked","next_step":"pick"}]),
    )
    .await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = if i % 2 == 0 { a.clone() } else { bh.clone() };
        let ann = chat(&b, "db", &format!("answer {i}"));
        tasks.push(tokio::spawn(async move { s.annotate(&ann).await }));
    }
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap().expect("no error escapes") {
            Ok(_) => wins += 1,
            Err(Refusal::UnreadAnswer { .. }) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(wins, 1);
    assert_eq!(common::count(&a, "board_row_annotations").await, 1);
}

async fn a_fresh_block_starts_from_nothing_but_keeps_an_undelivered_annotation(db: Db) {
    let s = db.open().await;
    let b = board(
        &s,
        json!([{"label":"a","status":"blocked","next_step":"do it"},
                              {"label":"b","status":"tracked"}]),
    )
    .await;
    let id = b.board.id.clone();
    let h = Handled {
        board: id.clone(),
        label: "a".into(),
        ..Handled::default()
    };
    let c = s.mark_handled(&h).await.unwrap().unwrap();
    let f = s
        .board_row(&RowWrite {
            board: id.clone(),
            row: RowInput {
                label: "a".into(),
                revision: Some(c.row.revision),
                status: Some(RowStatus::Done),
                outcome: Some("did it".into()),
                ..RowInput::default()
            },
            ..RowWrite::default()
        })
        .await
        .unwrap()
        .unwrap();
    s.annotate(&inbox(&b, "b", "undelivered aside"))
        .await
        .unwrap()
        .unwrap();
    let cur = s.board_get(&id, None).await.unwrap().unwrap();
    // Re-block both: `a` loses its mark and outcome; `b` keeps its unread aside.
    let f2 = s
        .board_upsert(&BoardUpsert {
            project: "proj".into(),
            title: "Launch".into(),
            board_version: Some(cur.board.board_version),
            rows: serde_json::from_value(json!([
                {"label":"a","revision":f.row("a").unwrap().revision,"status":"blocked","next_step":"again"},
                {"label":"b","revision":cur.row("b").unwrap().revision,"status":"blocked","next_step":"now"}
            ]))
            .unwrap(),
            ..BoardUpsert::default()
        })
        .await
        .unwrap()
        .unwrap();
    let a = f2.row("a").unwrap();
    assert!(a.response.handled_at.is_none() && a.outcome.is_empty());
    assert_eq!(
        f2.row("b").unwrap().response.annotation.as_deref(),
        Some("undelivered aside")
    );
}

async fn the_handled_mark_is_delivered_only_as_read(db: Db) {
    let (agent, clock) = db.open_manual(1_000_000).await;
    let b = board(
        &agent,
        json!([{"label":"acct","status":"blocked","next_step":"create it"},
               {"label":"card","status":"blocked","next_step":"add it"}]),
    )
    .await;
    let mark = |label: &str| Handled {
        board: b.board.id.clone(),
        label: label.into(),
        by: "ann".into(),
        ..Handled::default()
    };
    agent.mark_handled(&mark("acct")).await.unwrap().unwrap();
    agent.mark_handled(&mark("card")).await.unwrap().unwrap();
    let read = agent.pending_rows_peek(None, None).await.unwrap();
    assert_eq!(read.len(), 2);
    // The human takes back and re-marks `card` after the agent read it: a
    // new mark the agent has not seen.
    clock.advance(1000);
    agent.clear_handled(&mark("card")).await.unwrap().unwrap();
    agent.mark_handled(&mark("card")).await.unwrap().unwrap();
    let start = agent.last_event_seq().await.unwrap();
    assert_eq!(
        agent.mark_rows_delivered(&read, "a").await.unwrap(),
        [true, false],
        "acct delivered as read; card's mark changed since"
    );
    // One row.delivered event, for acct, naming what was delivered.
    let events = agent.events_after(start, 100).await.unwrap();
    let delivered: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "row.delivered")
        .map(|e| (e.payload["label"].clone(), e.payload["delivered"].clone()))
        .collect();
    assert_eq!(delivered, [(json!("acct"), json!(["handled"]))]);
    let rows = agent.board_get(&b.board.id, None).await.unwrap().unwrap();
    assert!(rows.row("acct").unwrap().handled_seen_at.is_some());
    assert!(rows.row("card").unwrap().handled_seen_at.is_none());
}

both_engines!(
    a_blocked_row_with_a_response_is_redelivered_until_its_status_changes,
    a_non_blocked_rows_annotation_comes_back_until_the_agent_writes_the_row,
    an_annotation_rewritten_between_read_and_mark_stays_queued,
    pending_leaves_out_a_response_rewritten_before_its_mark,
    inbox_beats_an_unread_chat_race_and_chat_may_replace_after_pickup,
    a_blank_inbox_annotation_clears_only_an_unpicked_one,
    annotate_and_handled_refuse_stale_revisions_and_archived_boards,
    racing_chat_annotations_on_two_handles_exactly_one_wins,
    a_fresh_block_starts_from_nothing_but_keeps_an_undelivered_annotation,
    the_handled_mark_is_delivered_only_as_read,
);
