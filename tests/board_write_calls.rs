//! Board writes when they win are one database call each: a
//! row written or changed, an upsert (a new board with its rows), an
//! advance, an outcome, an annotation and a handled mark. The calls are
//! counted by the layer in `common::calls`.
//!
//! The events those calls append, the rows they leave and the refusals of
//! stale writes are pinned here too, exactly as the multi-call writers
//! before them wrote them (kinds, payloads, actors, order), so the one-call
//! writers are checked against that behaviour, not against themselves.

mod common;

use common::TempDb;
use common::calls::{TURN, counted, install, warm};
use handoff::clock::format_rfc3339;
use handoff::store::Store;
use handoff::store::boards::{
    Advance, Annotate, AnnotationKind, BoardFull, BoardUpsert, Channel, Handled, NextStep,
    OutcomeWrite, Refusal, RowInput, RowWrite, StaleRow, Step,
};
use serde_json::{Value, json};

const T0: i64 = 1_764_000_000_123;

fn rows(v: Value) -> Vec<RowInput> {
    serde_json::from_value(v).expect("row JSON")
}

fn upsert(version: Option<i64>, r: Value) -> BoardUpsert {
    BoardUpsert {
        project: "proj".into(),
        title: "Launch".into(),
        board_version: version,
        agent: "claude".into(),
        session: "s1".into(),
        rows: rows(r),
    }
}

fn row_write(full: &BoardFull, version: Option<i64>, row: Value) -> RowWrite {
    RowWrite {
        board: full.board.id.clone(),
        project: None,
        board_version: version,
        row: serde_json::from_value(row).expect("row JSON"),
        by: "claude".into(),
    }
}

fn annotate(full: &BoardFull, label: &str, text: &str, source: Channel) -> Annotate {
    Annotate {
        board: full.board.title.clone(),
        project: Some("proj".into()),
        label: label.into(),
        text: text.into(),
        kind: AnnotationKind::Answer,
        source,
        by: "ann".into(),
        ..Annotate::default()
    }
}

fn handled(full: &BoardFull, label: &str, source: Channel) -> Handled {
    Handled {
        board: handoff::store::short_id(&full.board.id).into(),
        project: None,
        label: label.into(),
        source,
        by: "ann".into(),
        expected_revision: Some(full.row(label).unwrap().revision),
    }
}

/// The events appended after `seq`, as JSON without their `seq`, and the
/// newest `seq`.
async fn events_since(store: &Store, seq: i64) -> (Vec<Value>, i64) {
    let evs = store.events_after(seq, 100).await.unwrap();
    let last = evs.last().map_or(seq, |e| e.seq);
    let vals = evs
        .into_iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap();
            v.as_object_mut().unwrap().remove("seq");
            v
        })
        .collect();
    (vals, last)
}

/// What the store reads back for the board now.
async fn reread(store: &Store, full: &BoardFull) -> BoardFull {
    store
        .board_get(&full.board.id, None)
        .await
        .unwrap()
        .unwrap()
}

/// One expected event: `(type, entity, id)`, who (`actor`, `channel`),
/// the board's session, the time and the payload.
struct Ev<'a> {
    kind: &'a str,
    entity: (&'a str, &'a str),
    who: (&'a str, &'a str),
    session: &'a str,
    at: i64,
    payload: Value,
}

fn ev(e: Ev<'_>) -> Value {
    json!({
        "type": e.kind,
        "entity_kind": e.entity.0,
        "entity_id": e.entity.1,
        "actor": e.who.0,
        "channel": e.who.1,
        "project": "proj",
        "session": e.session,
        "at": format_rfc3339(e.at),
        "payload": e.payload,
    })
}

/// The payload every row event carries, with `extra` merged in.
fn row_payload(full: &BoardFull, label: &str, extra: Value) -> Value {
    let r = full.row(label).unwrap();
    let mut v = json!({
        "board_id": full.board.id,
        "board_title": full.board.title,
        "board_version": full.board.board_version,
        "label": label,
        "status": r.status,
        "revision": r.revision,
        "action_version": r.action_version,
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

/// A row event by the agent `claude`.
fn agent_row(full: &BoardFull, kind: &str, label: &str, at: i64, extra: Value) -> Value {
    ev(Ev {
        kind,
        entity: ("row", &full.row(label).unwrap().id),
        who: ("claude", "agent"),
        session: &full.board.session,
        at,
        payload: row_payload(full, label, extra),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn board_writes_append_the_events_they_always_did() {
    let _turn = TURN.lock().await;
    install();
    let db = TempDb::new();
    let (store, clock) = db.open_manual(T0).await;
    let (_, mut seq) = events_since(&store, 0).await;

    // A new board with three rows.
    let t = T0;
    let full = store
        .board_upsert(&upsert(
            None,
            json!([
                {"label": "Domain", "status": "done", "outcome": " bought  "},
                {"label": "Logo", "status": "blocked", "next_step": "Pick a logo", "owner": "decision",
                 "options": [{"label": "A"}, {"label": "B", "detail": "blue", "recommended": true}]},
                {"label": "Docs"}
            ]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full, reread(&store, &full).await);
    assert_eq!(full.board.board_version, 1);
    let domain = full.row("Domain").unwrap();
    assert_eq!(
        (domain.outcome.as_str(), domain.outcome_at),
        ("bought", Some(t))
    );
    let positions: Vec<i64> = full.rows.iter().map(|r| r.position).collect();
    assert_eq!(positions, [1, 2, 3]);
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    assert_eq!(
        got,
        [
            ev(Ev {
                kind: "board.upserted",
                entity: ("board", &full.board.id),
                who: ("claude", "agent"),
                session: "s1",
                at: t,
                payload: json!({"title": "Launch", "created": true, "rows": ["Domain", "Logo", "Docs"]}),
            }),
            agent_row(&full, "row.updated", "Domain", t, json!({"created": true})),
            agent_row(&full, "row.updated", "Logo", t, json!({"created": true})),
            agent_row(&full, "row.blocked", "Logo", t, json!({"fresh": true})),
            agent_row(&full, "row.updated", "Docs", t, json!({"created": true})),
        ]
    );

    // A new row through board_row, then a change of a blocked row's step.
    clock.advance(1_001);
    let t = T0 + 1_001;
    let full = store
        .board_row(&row_write(
            &full,
            Some(1),
            json!({"label": "Blog", "status": "blocked", "next_step": "Write it"}),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full, reread(&store, &full).await);
    assert_eq!(full.row("Blog").unwrap().position, 4);
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    assert_eq!(
        got,
        [
            agent_row(&full, "row.updated", "Blog", t, json!({"created": true})),
            agent_row(&full, "row.blocked", "Blog", t, json!({"fresh": true})),
        ]
    );
    clock.advance(1_001);
    let t = t + 1_001;
    let full = store
        .board_row(&row_write(
            &full,
            None,
            json!({"label": "Logo", "revision": 1, "note": "both are fine"}),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full, reread(&store, &full).await);
    assert_eq!(full.row("Logo").unwrap().revision, 2);
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    assert_eq!(
        got,
        [
            agent_row(
                &full,
                "row.updated",
                "Logo",
                t,
                json!({"from_status": "blocked"})
            ),
            agent_row(&full, "row.blocked", "Logo", t, json!({"fresh": false})),
        ]
    );

    // A person answers in the Inbox, in chat, clears, marks handled.
    let human = |full: &BoardFull, kind: &str, label: &str, channel: &str, at, extra| {
        ev(Ev {
            kind,
            entity: ("row", &full.row(label).unwrap().id),
            who: ("ann", channel),
            session: "s1",
            at,
            payload: row_payload(full, label, extra),
        })
    };
    clock.advance(1_001);
    let t = t + 1_001;
    let change = store
        .annotate(&annotate(&full, "Logo", " Take B ", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    let full = reread(&store, &full).await;
    assert!(change.changed);
    assert_eq!(change.board_version, full.board.board_version);
    assert_eq!(&change.row, full.row("Logo").unwrap());
    assert_eq!(change.row.response.annotation.as_deref(), Some("Take B"));
    assert_eq!(change.row.response.annotated_at, Some(t));
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    let answered = json!({"kind": "answer", "text": "Take B", "source": "inbox", "by": "ann", "cleared": false});
    assert_eq!(
        got,
        [human(&full, "row.annotated", "Logo", "inbox", t, answered)]
    );

    clock.advance(1_001);
    let t = t + 1_001;
    let mut chat = annotate(&full, "Blog", "later", Channel::Chat);
    chat.kind = AnnotationKind::Clarify;
    chat.action_version = Some(1);
    let change = store.annotate(&chat).await.unwrap().unwrap();
    let full = reread(&store, &full).await;
    assert_eq!(&change.row, full.row("Blog").unwrap());
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    let chatted = json!({"kind": "clarify", "text": "later", "source": "chat", "by": "ann", "cleared": false});
    assert_eq!(
        got,
        [human(&full, "row.annotated", "Blog", "chat", t, chatted)]
    );

    clock.advance(1_001);
    let t = t + 1_001;
    let change = store
        .annotate(&annotate(&full, "Blog", "  ", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    let full = reread(&store, &full).await;
    assert_eq!(&change.row, full.row("Blog").unwrap());
    assert_eq!(change.row.response.annotation, None);
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    let cleared =
        json!({"kind": null, "text": null, "source": "inbox", "by": "ann", "cleared": true});
    assert_eq!(
        got,
        [human(&full, "row.annotated", "Blog", "inbox", t, cleared)]
    );

    clock.advance(1_001);
    let t = t + 1_001;
    let change = store
        .mark_handled(&handled(&full, "Logo", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    let full = reread(&store, &full).await;
    assert_eq!(&change.row, full.row("Logo").unwrap());
    assert_eq!(change.row.response.handled_at, Some(t));
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    let by = json!({"by": "ann", "source": "inbox"});
    assert_eq!(
        got,
        [human(&full, "row.handled", "Logo", "inbox", t, by.clone())]
    );
    clock.advance(1_001);
    let t = t + 1_001;
    let change = store
        .clear_handled(&handled(&full, "Logo", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    let full = reread(&store, &full).await;
    assert_eq!(&change.row, full.row("Logo").unwrap());
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    assert_eq!(
        got,
        [human(&full, "row.handled_cleared", "Logo", "inbox", t, by)]
    );
    clock.advance(1_001);
    let t = t + 1_001;
    store
        .mark_handled(&handled(&full, "Logo", Channel::Chat))
        .await
        .unwrap()
        .unwrap();
    let full = reread(&store, &full).await;
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    let by_chat = json!({"by": "ann", "source": "chat"});
    assert_eq!(
        got,
        [human(&full, "row.handled", "Logo", "chat", t, by_chat)]
    );

    // The agent picks the answer up, then stores the outcome (the row
    // named by its short id).
    let picked = store.pending_rows(None, None, "claude").await.unwrap();
    assert_eq!(picked.len(), 1);
    let (_, s) = events_since(&store, seq).await;
    seq = s;
    clock.advance(1_001);
    let t = t + 1_001;
    let logo = full.row("Logo").unwrap();
    let full = store
        .board_outcome(&OutcomeWrite {
            board: full.board.id.clone(),
            project: None,
            label: handoff::store::short_id(&logo.id).into(),
            expected_revision: logo.revision,
            outcome: "B it is ".into(),
            status: None,
            by: "claude".into(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full, reread(&store, &full).await);
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    assert_eq!(
        got,
        [
            agent_row(
                &full,
                "row.updated",
                "Logo",
                t,
                json!({"from_status": "blocked"})
            ),
            agent_row(
                &full,
                "row.outcome",
                "Logo",
                t,
                json!({"outcome": "B it is"})
            ),
        ]
    );

    // The blocked row advances to its next step; the old one is archived.
    clock.advance(1_001);
    let t = t + 1_001;
    let blog = full.row("Blog").unwrap().clone();
    let next = NextStep {
        next_step: "Review it".into(),
        note: "draft in docs/".into(),
        owner: handoff::store::boards::RowOwner::Approval,
        options: serde_json::from_value(json!([{"label": "ok"}])).unwrap(),
        ..NextStep::default()
    };
    let full = store
        .board_advance(&Advance {
            board: "Launch".into(),
            project: Some("proj".into()),
            label: "Blog".into(),
            expected_revision: blog.revision,
            board_version: full.board.board_version,
            outcome: Some(" drafted ".into()),
            next,
            by: "claude".into(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full, reread(&store, &full).await);
    let after = full.row("Blog").unwrap();
    assert_eq!((after.action_version, after.action_started_at), (2, t));
    assert_eq!(
        after.history,
        [Step {
            action_version: 1,
            status: blog.status,
            note: blog.note.clone(),
            next_step: blog.next_step.clone(),
            owner: blog.owner,
            impact: blog.impact.clone(),
            options: blog.options.clone(),
            context: blog.context.clone(),
            response: blog.response.clone(),
            outcome: "drafted".into(),
            started_at: blog.action_started_at,
            ended_at: t,
        }]
    );
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    assert_eq!(
        got,
        [
            agent_row(
                &full,
                "row.advanced",
                "Blog",
                t,
                json!({"from_action_version": 1, "from_status": "blocked", "outcome": "drafted"})
            ),
            agent_row(&full, "row.blocked", "Blog", t, json!({"fresh": true})),
        ]
    );

    // An upsert that changes nothing changes no version and logs nothing.
    let same = store
        .board_upsert(&upsert(
            Some(full.board.board_version),
            json!([{"label": "Docs", "revision": 1}]),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(same, full);
    let (got, _) = events_since(&store, seq).await;
    assert_eq!(got, Vec::<Value>::new());

    // An upsert of two rows (a new owner session) completes the board:
    // it is archived on the way.
    clock.advance(1_001);
    let t = t + 1_001;
    let mut up = upsert(
        Some(full.board.board_version),
        json!([
            {"label": "Docs", "revision": 1, "status": "done"},
            {"label": "Blog", "revision": full.row("Blog").unwrap().revision, "status": "na"}
        ]),
    );
    up.session = "s2".into();
    let full = store.board_upsert(&up).await.unwrap().unwrap();
    assert_eq!(full, reread(&store, &full).await);
    assert_eq!(full.board.archived_at, Some(t));
    assert!(full.board.auto_archived);
    let (got, s) = events_since(&store, seq).await;
    seq = s;
    assert_eq!(
        got,
        [
            ev(Ev {
                kind: "board.upserted",
                entity: ("board", &full.board.id),
                who: ("claude", "agent"),
                session: "s2",
                at: t,
                payload: json!({"title": "Launch", "created": false, "rows": ["Docs", "Blog"]}),
            }),
            agent_row(
                &full,
                "row.updated",
                "Docs",
                t,
                json!({"from_status": "tracked"})
            ),
            agent_row(
                &full,
                "row.updated",
                "Blog",
                t,
                json!({"from_status": "blocked"})
            ),
            ev(Ev {
                kind: "board.archived",
                entity: ("board", &full.board.id),
                who: ("claude", "agent"),
                session: "s2",
                at: t,
                payload: json!({"title": "Launch", "board_version": full.board.board_version,
                                "auto": true, "progress": 100.0}),
            }),
        ]
    );

    // A row that is no longer done reactivates it (progress 2.5 of 3).
    clock.advance(1_001);
    let t = t + 1_001;
    let full = store
        .board_row(&row_write(
            &full,
            Some(full.board.board_version),
            json!({"label": "Docs", "revision": 2, "status": "partial"}),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full, reread(&store, &full).await);
    assert_eq!(full.board.archived_at, None);
    let (got, _) = events_since(&store, seq).await;
    assert_eq!(
        got,
        [
            agent_row(
                &full,
                "row.updated",
                "Docs",
                t,
                json!({"from_status": "done"})
            ),
            ev(Ev {
                kind: "board.reactivated",
                entity: ("board", &full.board.id),
                who: ("claude", "agent"),
                session: "s2",
                at: t,
                payload: json!({"title": "Launch", "board_version": full.board.board_version,
                                "auto": true, "progress": 2.5 * 100.0 / 3.0}),
            }),
        ]
    );
}

/// A fresh board `Launch` with rows Domain (tracked) and Logo (blocked).
async fn launch(store: &Store) -> BoardFull {
    store
        .board_upsert(&upsert(
            None,
            json!([{"label": "Domain"}, {"label": "Logo", "status": "blocked", "next_step": "Pick"}]),
        ))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_winning_board_write_is_one_database_call() {
    let _turn = TURN.lock().await;
    install();
    let db = TempDb::new();
    let store = db.open().await;
    warm(&store).await;

    let three = json!([{"label": "a"}, {"label": "b", "status": "done"}, {"label": "c", "status": "blocked"}]);
    let (made, seen) = counted(store.board_upsert(&upsert(None, three))).await;
    let full = made.unwrap().unwrap();
    assert_eq!(full.rows.len(), 3);
    assert_eq!(
        seen.len(),
        1,
        "a new board with 3 rows is one call: {seen:?}"
    );

    let (added, seen) = counted(store.board_row(&row_write(
        &full,
        Some(full.board.board_version),
        json!({"label": "d", "status": "blocked", "next_step": "Sign"}),
    )))
    .await;
    let full = added.unwrap().unwrap();
    assert!(full.row("d").is_some());
    assert_eq!(seen.len(), 1, "a new row is one call: {seen:?}");

    let (changed, seen) = counted(store.board_row(&row_write(
        &full,
        None,
        json!({"label": "a", "revision": 1, "status": "partial"}),
    )))
    .await;
    let full = changed.unwrap().unwrap();
    assert_eq!(full.row("a").unwrap().revision, 2);
    assert_eq!(seen.len(), 1, "a row revision update is one call: {seen:?}");

    let (up, seen) = counted(store.board_upsert(&upsert(
        Some(full.board.board_version),
        json!([{"label": "a", "revision": 2, "note": "n"}, {"label": "e"}]),
    )))
    .await;
    let full = up.unwrap().unwrap();
    assert_eq!(
        seen.len(),
        1,
        "an upsert of an existing board is one call: {seen:?}"
    );

    // A refresh that changes nothing is answered in one call too.
    let (same, seen) = counted(store.board_upsert(&upsert(
        Some(full.board.board_version),
        json!([{"label": "a", "revision": 3, "note": "n"}, {"label": "e", "revision": 1}]),
    )))
    .await;
    assert_eq!(same.unwrap().unwrap(), full);
    assert_eq!(seen.len(), 1, "an unchanged refresh is one call: {seen:?}");

    let (note, seen) = counted(store.annotate(&annotate(&full, "c", "yes", Channel::Inbox))).await;
    assert!(note.unwrap().unwrap().changed);
    assert_eq!(seen.len(), 1, "an annotation is one call: {seen:?}");

    let full = reread(&store, &full).await;
    let (mark, seen) = counted(store.mark_handled(&handled(&full, "d", Channel::Inbox))).await;
    assert!(mark.unwrap().unwrap().changed);
    assert_eq!(seen.len(), 1, "a handled mark is one call: {seen:?}");

    let full = reread(&store, &full).await;
    let (clear, seen) = counted(store.clear_handled(&handled(&full, "d", Channel::Inbox))).await;
    assert!(clear.unwrap().unwrap().changed);
    assert_eq!(
        seen.len(),
        1,
        "clearing a handled mark is one call: {seen:?}"
    );

    // The answer on `c` is picked up, so the step can end.
    store.pending_rows(None, None, "agent").await.unwrap();
    let full = reread(&store, &full).await;
    let c = full.row("c").unwrap();
    let (adv, seen) = counted(store.board_advance(&Advance {
        board: full.board.id.clone(),
        label: "c".into(),
        expected_revision: c.revision,
        board_version: full.board.board_version,
        next: NextStep {
            next_step: "Again".into(),
            ..NextStep::default()
        },
        by: "agent".into(),
        ..Advance::default()
    }))
    .await;
    let full = adv.unwrap().unwrap();
    assert_eq!(full.row("c").unwrap().action_version, 2);
    assert_eq!(seen.len(), 1, "an advance is one call: {seen:?}");

    let c = full.row("c").unwrap();
    let (out, seen) = counted(store.board_outcome(&OutcomeWrite {
        board: full.board.id.clone(),
        label: handoff::store::short_id(&c.id).into(),
        expected_revision: c.revision,
        outcome: "done".into(),
        by: "agent".into(),
        ..OutcomeWrite::default()
    }))
    .await;
    let full = out.unwrap().unwrap();
    assert_eq!(full.row("c").unwrap().outcome, "done");
    assert_eq!(seen.len(), 1, "an outcome is one call: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_board_write_is_refused_with_the_current_versions() {
    let _turn = TURN.lock().await;
    install();
    let db = TempDb::new();
    let store = db.open().await;
    let full = launch(&store).await;
    let events = common::count(&store, "events").await;

    let stale = |rows: Vec<StaleRow>| Refusal::Stale {
        board_version: 1,
        rows,
    };
    let logo = |revision| StaleRow {
        label: "Logo".into(),
        revision,
    };
    // A row at another revision, a board at another version.
    let got = store
        .board_row(&row_write(
            &full,
            None,
            json!({"label": "Logo", "revision": 7, "note": "x"}),
        ))
        .await
        .unwrap();
    assert_eq!(got, Err(stale(vec![logo(Some(1))])));
    let got = store
        .board_row(&row_write(
            &full,
            Some(9),
            json!({"label": "Logo", "revision": 1, "note": "x"}),
        ))
        .await
        .unwrap();
    assert_eq!(got, Err(stale(vec![])));
    // A revision given for a row that does not exist.
    let got = store
        .board_row(&row_write(
            &full,
            None,
            json!({"label": "Nope", "revision": 1}),
        ))
        .await
        .unwrap();
    assert_eq!(
        got,
        Err(stale(vec![StaleRow {
            label: "Nope".into(),
            revision: None
        }]))
    );
    // An upsert lists every mismatched row.
    let got = store
        .board_upsert(&upsert(
            Some(5),
            json!([{"label": "Domain", "revision": 1, "note": "x"}, {"label": "Logo", "revision": 3}, {"label": "Domain2", "revision": 1}]),
        ))
        .await
        .unwrap();
    assert_eq!(
        got,
        Err(stale(vec![
            logo(Some(1)),
            StaleRow {
                label: "Domain2".into(),
                revision: None
            }
        ]))
    );
    // A new board named again without a version.
    let got = store.board_upsert(&upsert(None, json!([]))).await.unwrap();
    assert_eq!(got, Err(stale(vec![])));
    let got = store
        .board_advance(&Advance {
            board: full.board.id.clone(),
            label: "Logo".into(),
            expected_revision: 1,
            board_version: 4,
            next: NextStep {
                next_step: "Again".into(),
                ..NextStep::default()
            },
            ..Advance::default()
        })
        .await
        .unwrap();
    assert_eq!(got, Err(stale(vec![logo(Some(1))])));
    let mut note = annotate(&full, "Logo", "hi", Channel::Inbox);
    note.expected_revision = Some(4);
    assert_eq!(
        store.annotate(&note).await.unwrap(),
        Err(stale(vec![logo(Some(1))]))
    );
    let mut mark = handled(&full, "Logo", Channel::Inbox);
    mark.expected_revision = Some(4);
    assert_eq!(
        store.mark_handled(&mark).await.unwrap(),
        Err(stale(vec![logo(Some(1))]))
    );
    // The other refusals still say what they always said.
    let got = store
        .board_outcome(&OutcomeWrite {
            board: full.board.id.clone(),
            label: "Ghost".into(),
            expected_revision: 1,
            outcome: "x".into(),
            ..OutcomeWrite::default()
        })
        .await
        .unwrap();
    assert_eq!(
        got,
        Err(Refusal::NotFound {
            what: "row `Ghost`".into()
        })
    );
    let got = store
        .mark_handled(&handled(&full, "Domain", Channel::Inbox))
        .await
        .unwrap();
    assert_eq!(
        got,
        Err(Refusal::NotBlocked {
            status: handoff::store::boards::RowStatus::Tracked
        })
    );
    // Leaving `blocked` with an unread answer, then without the outcome
    // a handled mark asks for.
    store
        .annotate(&annotate(&full, "Logo", "yes", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    let full = reread(&store, &full).await;
    let done = |full: &BoardFull| {
        row_write(
            full,
            None,
            json!({"label": "Logo", "revision": full.row("Logo").unwrap().revision, "status": "done"}),
        )
    };
    assert_eq!(
        store.board_row(&done(&full)).await.unwrap(),
        Err(Refusal::UnreadResponse {
            label: "Logo".into()
        })
    );
    store
        .mark_handled(&handled(&full, "Logo", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    store.pending_rows(None, None, "agent").await.unwrap();
    let full = reread(&store, &full).await;
    assert_eq!(
        store.board_row(&done(&full)).await.unwrap(),
        Err(Refusal::OutcomeRequired {
            label: "Logo".into()
        })
    );
    // Nothing refused wrote anything: the three events are the answer's,
    // the mark's and their delivery's.
    assert_eq!(common::count(&store, "events").await, events + 3);
    assert_eq!(reread(&store, &full).await, full);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn texts_with_any_character_are_stored_as_given() {
    let _turn = TURN.lock().await;
    install();
    let db = TempDb::new();
    let store = db.open().await;
    warm(&store).await;
    let odd = "nul \0 tab \t quote \" back \\ line\n emoji 🦀 \u{1f} end";
    let (made, seen) = counted(store.board_upsert(&upsert(
        None,
        json!([{"label": "a", "note": odd, "status": "blocked", "next_step": odd, "outcome": odd}]),
    )))
    .await;
    let full = made.unwrap().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let a = full.row("a").unwrap();
    assert_eq!((a.note.as_str(), a.next_step.as_str()), (odd, odd));
    assert_eq!(a.outcome, odd.trim());
    let full = store
        .board_row(&row_write(
            &full,
            None,
            json!({"label": "a", "revision": 1, "context": odd}),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(full.row("a").unwrap().context, odd);
    let (change, seen) = counted(store.annotate(&annotate(&full, "a", odd, Channel::Inbox))).await;
    let change = change.unwrap().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(change.row.response.annotation.as_deref(), Some(odd.trim()));
    let events = store.events_for("row", &change.row.id).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.payload["text"], json!(odd.trim()));
    store.pending_rows(None, None, "agent").await.unwrap();
    let full = reread(&store, &full).await;
    let a = full.row("a").unwrap().clone();
    assert!(a.response.annotated_at.is_some() && a.response.annotation_seen_at.is_some());
    let (advanced, seen) = counted(store.board_advance(&Advance {
        board: full.board.id.clone(),
        label: "a".into(),
        expected_revision: a.revision,
        board_version: full.board.board_version,
        next: NextStep {
            next_step: "next".into(),
            note: odd.into(),
            ..NextStep::default()
        },
        ..Advance::default()
    }))
    .await;
    let full = advanced.unwrap().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let after = full.row("a").unwrap();
    assert_eq!(after.note, odd);
    // The archived step keeps every field and time of the step as it was
    // (times to the millisecond, as the clock gave them).
    let step = &after.history[0];
    assert_eq!(
        (
            step.note.as_str(),
            step.next_step.as_str(),
            step.context.as_str()
        ),
        (odd, odd, odd)
    );
    assert_eq!(step.response, a.response);
    assert_eq!(step.started_at, a.action_started_at);
    assert_eq!(step.ended_at, after.action_started_at);
    assert_eq!(step.outcome, a.outcome);
    assert_eq!(full, reread(&store, &full).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archiving_reactivating_and_every_way_of_naming_are_one_call_too() {
    let _turn = TURN.lock().await;
    install();
    let db = TempDb::new();
    let store = db.open().await;
    warm(&store).await;
    let full = launch(&store).await;

    // The board by its title alone (unique across projects), the row by
    // the short id of its full id.
    let logo = full.row("Logo").unwrap().clone();
    let mut note = annotate(
        &full,
        handoff::store::short_id(&logo.id),
        "ok",
        Channel::Chat,
    );
    note.project = None;
    let (got, seen) = counted(store.annotate(&note)).await;
    assert_eq!(got.unwrap().unwrap().row.id, logo.id);
    assert_eq!(seen.len(), 1, "{seen:?}");
    store.pending_rows(None, None, "agent").await.unwrap();

    // Completing the board archives it in the same call; a row that is no
    // longer done reactivates it, again in one call.
    let full = reread(&store, &full).await;
    let (done, seen) = counted(store.board_upsert(&upsert(
        Some(full.board.board_version),
        json!([{"label": "Domain", "revision": 1, "status": "done"},
               {"label": "Logo", "revision": full.row("Logo").unwrap().revision, "status": "done"}]),
    )))
    .await;
    let full = done.unwrap().unwrap();
    assert!(full.board.archived_at.is_some() && full.board.auto_archived);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (back, seen) = counted(store.board_row(&row_write(
        &full,
        Some(full.board.board_version),
        json!({"label": "Domain", "revision": 2, "status": "partial"}),
    )))
    .await;
    let full = back.unwrap().unwrap();
    assert_eq!(full.board.archived_at, None);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let kinds: Vec<String> = store
        .events_for("board", &full.board.id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "board.upserted",
            "board.upserted",
            "board.archived",
            "board.reactivated"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_writers_of_one_revision_have_exactly_one_winner() {
    let _turn = TURN.lock().await;
    install();
    let db = TempDb::new();
    let store = db.open().await;
    let full = launch(&store).await;
    let before = common::count(&store, "events").await;

    // Eight writers hold revision 1 of `Domain` (queued together, so most
    // run in one batch of the write turn): one wins, seven are stale.
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (store, w) = (
            store.clone(),
            row_write(
                &full,
                Some(1),
                json!({"label": "Domain", "revision": 1, "note": format!("writer {i}")}),
            ),
        );
        tasks.push(tokio::spawn(
            async move { store.board_row(&w).await.unwrap() },
        ));
    }
    let mut won = Vec::new();
    let mut stale = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(full) => won.push(full),
            Err(refusal) => {
                assert_eq!(
                    refusal,
                    Refusal::Stale {
                        board_version: 2,
                        rows: vec![StaleRow {
                            label: "Domain".into(),
                            revision: Some(2)
                        }]
                    }
                );
                stale += 1;
            }
        }
    }
    assert_eq!((won.len(), stale), (1, 7));
    let now = reread(&store, &full).await;
    assert_eq!(now, won[0]);
    assert_eq!(now.row("Domain").unwrap().revision, 2);
    assert_eq!(common::count(&store, "events").await, before + 1);
}
