//! Boards on PostgreSQL: the same board writes leave the same
//! events (payload text byte for byte), rows and history on both engines,
//! and racing writers on two store handles (two pools, as two processes)
//! are decided as on SQLite: one wins, the others are refused as stale.

mod common;

use common::engine::{Db, Engine};
use handoff::store::Store;
use handoff::store::boards::{
    Advance, Annotate, AnnotationKind, BoardFull, BoardUpsert, Channel, Handled, NextStep,
    OutcomeWrite, Refusal, RowInput, RowWrite,
};
use serde_json::json;

fn upsert(version: Option<i64>, rows: serde_json::Value) -> BoardUpsert {
    BoardUpsert {
        project: "proj".into(),
        title: "Launch \"v2\" é".into(),
        board_version: version,
        agent: "claude".into(),
        session: "s1".into(),
        rows: serde_json::from_value(rows).expect("row JSON"),
    }
}

fn rev(f: &BoardFull, label: &str) -> i64 {
    f.row(label).expect("row").revision
}

async fn get(s: &Store, f: &BoardFull) -> BoardFull {
    s.board_get(&f.board.id, None).await.unwrap().unwrap()
}

/// A run of every kind of board write, then the events (ids replaced by
/// names), the rows and their history as stored.
async fn script(db: &Db) -> Vec<Vec<Option<String>>> {
    let (s, clock) = db.open_manual(1_764_000_000_123).await;
    let f = s
        .board_upsert(&upsert(
            None,
            json!([
                {"label": "db", "status": "blocked", "next_step": "pick \"one\"\n",
                 "options": [{"label": "pg", "detail": "tab\there", "recommended": true}, {"label": "lite"}]},
                {"label": "api", "status": "done"},
                {"label": "ui", "status": "partial", "outcome": " half "}
            ]),
        ))
        .await
        .unwrap()
        .unwrap();
    clock.advance(7);
    let ann = |text: &str, source: Channel| Annotate {
        board: f.board.id.clone(),
        label: "db".into(),
        text: text.into(),
        kind: AnnotationKind::Answer,
        source,
        by: "ann".into(),
        ..Annotate::default()
    };
    s.annotate(&ann("Use \"pg\" — ok\n", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    s.pending_rows(Some("proj"), None, "agent-1").await.unwrap();
    clock.advance(5);
    s.annotate(&ann("actually lite", Channel::Chat))
        .await
        .unwrap()
        .unwrap();
    s.annotate(&ann("  ", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    let mark = Handled {
        board: f.board.id.clone(),
        label: "db".into(),
        source: Channel::Chat,
        by: "ann".into(),
        ..Handled::default()
    };
    s.mark_handled(&mark).await.unwrap().unwrap();
    s.clear_handled(&mark).await.unwrap().unwrap();
    s.mark_handled(&mark).await.unwrap().unwrap();
    clock.advance(11);
    let f = get(&s, &f).await;
    s.board_advance(&Advance {
        board: f.board.id.clone(),
        label: "db".into(),
        expected_revision: rev(&f, "db"),
        board_version: f.board.board_version,
        outcome: Some("went with pg".into()),
        next: NextStep {
            next_step: "migrate".into(),
            note: "n".into(),
            ..NextStep::default()
        },
        by: "claude".into(),
        ..Advance::default()
    })
    .await
    .unwrap()
    .unwrap();
    let f = get(&s, &f).await;
    s.board_outcome(&OutcomeWrite {
        board: f.board.title.clone(),
        project: Some("proj".into()),
        label: handoff::store::short_id(&f.row("db").unwrap().id).into(),
        expected_revision: rev(&f, "db"),
        outcome: "migrated".into(),
        by: "claude".into(),
        ..OutcomeWrite::default()
    })
    .await
    .unwrap()
    .unwrap();
    // The last row done: the board archives itself at 100 %, and a row
    // back to partial reactivates it at 83.33…%.
    let f = get(&s, &f).await;
    for status in ["done", "partial", "blocked"] {
        let f = get(&s, &f).await;
        s.board_row(&RowWrite {
            board: f.board.id.clone(),
            board_version: Some(f.board.board_version),
            row: RowInput {
                label: "ui".into(),
                revision: Some(rev(&f, "ui")),
                status: Some(status.parse().unwrap()),
                next_step: Some("look".into()),
                ..RowInput::default()
            },
            by: "claude".into(),
            ..RowWrite::default()
        })
        .await
        .unwrap()
        .unwrap();
    }
    let f = get(&s, &f).await;
    s.board_archive(&f.board.id, None, f.board.board_version, "me")
        .await
        .unwrap()
        .unwrap();
    let f = get(&s, &f).await;
    let mut names = vec![(f.board.id.clone(), "BOARD".to_string())];
    for r in &f.rows {
        names.push((r.id.clone(), format!("ROW:{}", r.label)));
    }
    let mut out = db
        .rows(
            "SELECT CAST(seq AS TEXT), CAST(at AS TEXT), type, entity_kind, entity_id, actor,
                    channel, project, session, payload FROM events ORDER BY events.seq",
        )
        .await;
    out.extend(
        db.rows(
            "SELECT id, label, status, note, next_step, owner, options, outcome,
                    CAST(outcome_at AS TEXT), CAST(revision AS TEXT), CAST(action_version AS TEXT),
                    history, annotation, annotation_source, CAST(handled_at AS TEXT),
                    CAST(response_open AS TEXT), CAST(position AS TEXT)
             FROM board_rows ORDER BY board_rows.position",
        )
        .await,
    );
    out.extend(
        db.rows(
            "SELECT row_id, annotation, kind, source, \"by\", CAST(at AS TEXT)
             FROM board_row_annotations ORDER BY board_row_annotations.seq",
        )
        .await,
    );
    out.extend(
        db.rows(
            "SELECT id, title, CAST(revision AS TEXT), CAST(archived_at AS TEXT),
                    CAST(auto_archived AS TEXT), agent, session FROM boards",
        )
        .await,
    );
    for row in &mut out {
        for cell in row.iter_mut().flatten() {
            for (id, name) in &names {
                *cell = cell.replace(id.as_str(), name);
            }
        }
    }
    s.close().await;
    out
}

#[tokio::test]
async fn every_board_write_leaves_the_same_bytes_on_both_engines() {
    let lite = script(&Db::new(Engine::Sqlite).await).await;
    let pg = script(&Db::new(Engine::Postgres).await).await;
    assert!(
        lite.iter()
            .any(|r| r.iter().flatten().any(|c| c.contains("83.33"))),
        "the run reaches a fractional progress"
    );
    let differ: Vec<_> = lite.iter().zip(&pg).filter(|(l, p)| l != p).collect();
    assert!(differ.is_empty(), "{differ:#?}");
    assert_eq!(lite.len(), pg.len());
}

/// Many writers of one row at the same revision, each on a store of its
/// own: exactly one wins, every other is refused as stale with the
/// winner's revision.
async fn racing_row_writers_one_wins(db: Db) {
    let s = db.open().await;
    let f = s
        .board_upsert(&upsert(None, json!([{"label": "a"}])))
        .await
        .unwrap()
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..6 {
        let store = db.open().await;
        let w = RowWrite {
            board: f.board.id.clone(),
            board_version: Some(f.board.board_version),
            row: RowInput {
                label: "a".into(),
                revision: Some(1),
                note: Some(format!("writer {i}")),
                ..RowInput::default()
            },
            by: format!("w{i}"),
            ..RowWrite::default()
        };
        tasks.push(tokio::spawn(
            async move { store.board_row(&w).await.unwrap() },
        ));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(full) => {
                won += 1;
                assert_eq!(full.board.board_version, 2);
            }
            Err(Refusal::Stale { board_version, .. }) => assert_eq!(board_version, 2),
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(won, 1);
    let after = get(&s, &f).await;
    assert_eq!(after.row("a").unwrap().revision, 2);
    let updated = s
        .events_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "row.updated")
        .count();
    assert_eq!(updated, 2, "the creation and the one winner");
}

/// Two agents creating one board at once: one creates it, the other is
/// refused as stale (it read no version), never a duplicate or an error.
async fn racing_creators_one_creates(db: Db) {
    let a = db.open().await;
    let b = db.open().await;
    let (ua, ub) = (
        upsert(None, json!([{"label": "a"}])),
        upsert(None, json!([{"label": "b"}])),
    );
    let (x, y) = tokio::join!(a.board_upsert(&ua), b.board_upsert(&ub));
    let outcomes = [x.unwrap(), y.unwrap()];
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    assert!(outcomes.iter().any(|o| matches!(
        o,
        Err(Refusal::Stale {
            board_version: 1,
            ..
        })
    )));
    assert_eq!(a.count_rows("boards").await.unwrap(), 1);
}

/// An unread Inbox answer beats a later chat one, whichever store writes
/// first; the chat writer is told what waits.
async fn an_unread_inbox_answer_beats_chat_across_handles(db: Db) {
    let agent = db.open().await;
    let inbox = db.open().await;
    let chat = db.open().await;
    let f = agent
        .board_upsert(&upsert(
            None,
            json!([{"label": "a", "status": "blocked", "next_step": "pick"}]),
        ))
        .await
        .unwrap()
        .unwrap();
    let ann = |text: &str, source| Annotate {
        board: f.board.id.clone(),
        label: "a".into(),
        text: text.into(),
        source,
        by: "ann".into(),
        ..Annotate::default()
    };
    inbox
        .annotate(&ann("from the inbox", Channel::Inbox))
        .await
        .unwrap()
        .unwrap();
    match chat
        .annotate(&ann("from chat", Channel::Chat))
        .await
        .unwrap()
    {
        Err(Refusal::UnreadAnswer { annotation, .. }) => assert_eq!(annotation, "from the inbox"),
        other => panic!("chat must be refused, got {other:?}"),
    }
    // Once the agent picked it up, chat may answer.
    let got = agent.pending_rows(None, None, "agent").await.unwrap();
    assert_eq!(got.len(), 1);
    chat.annotate(&ann("from chat", Channel::Chat))
        .await
        .unwrap()
        .unwrap();
}

both_engines!(
    an_unread_inbox_answer_beats_chat_across_handles,
    racing_creators_one_creates
);
both_engines!(multi_thread: racing_row_writers_one_wins);
