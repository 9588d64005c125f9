//! Reading the event log: in order after a cursor, the newest seq, the
//! tail, and at most about 4 MiB of payload per read — on both engines
//! (tests/common/engine.rs). The events come from real question writes,
//! or (for exact payload sizes) from rows inserted by hand, or from the
//! benchmarks' bulk history (`Store::seed_history`).

mod common;

use common::engine::Db;
use handoff::store::Event;
use handoff::store::events::EventPage;

fn seqs(v: Vec<Event>) -> Vec<i64> {
    v.into_iter().map(|e| e.seq).collect()
}

async fn the_event_log_reads_in_order_after_a_cursor(db: Db) {
    let store = db.open().await;
    assert_eq!(store.last_event_seq().await.unwrap(), 0, "an empty log");
    assert_eq!(store.events_tail(10).await.unwrap(), EventPage::default());
    for title in ["one", "two", "three"] {
        common::ask(&store, title).await;
    }
    let last = store.last_event_seq().await.unwrap();
    let all = store.events_after(0, 100).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all.last().map(|e| e.seq), Some(last));
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq), "oldest first");
    let titles: Vec<&str> = all
        .iter()
        .map(|e| e.payload["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["one", "two", "three"]);
    assert_eq!(
        seqs(store.events_after(0, 2).await.unwrap()),
        seqs(all[..2].to_vec())
    );
    assert_eq!(
        seqs(store.events_after(last - 1, 100).await.unwrap()),
        [last]
    );
    assert!(store.events_after(last, 100).await.unwrap().is_empty());
    // A page says where to continue; the tail ends at the newest.
    let page = store.events_page(0, 2).await.unwrap();
    assert_eq!(page.next_after, all[1].seq);
    let page = store.events_page(last, 2).await.unwrap();
    assert_eq!((page.events.len(), page.next_after), (0, last));
    let tail = store.events_tail(2).await.unwrap();
    assert_eq!(seqs(tail.events), seqs(all[1..].to_vec()));
    assert_eq!(tail.next_after, last);
    // Another handle (another process) reads the same log.
    let other = db.open().await;
    assert_eq!(other.events_after(0, 100).await.unwrap(), all);
    let q = &all[0].entity_id;
    assert_eq!(
        other.events_for("question", q).await.unwrap(),
        all[..1].to_vec()
    );
}

/// Append an event whose payload is exactly `bytes` long (`{"x":"000…"}`).
async fn event_of_size(db: &Db, id: &str, bytes: usize) {
    assert!(bytes >= 8);
    let payload = format!("{{\"x\":\"{}\"}}", "0".repeat(bytes - 8));
    db.exec(
        "INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
         VALUES (1, 'test.sized', 'question', $1, '', '', 'p', '', $2)",
        &[id, &payload],
    )
    .await
    .unwrap();
}

async fn the_event_log_reads_at_most_four_mebibytes_of_payload_per_batch(db: Db) {
    let store = db.open().await;
    const MIB: usize = 1024 * 1024;
    for (id, bytes) in [
        ("a", 1_500_000),
        ("b", 1_500_000),
        ("c", 3_000_000), // a + b + c crosses 4 MiB, and so does c + d
        ("d", 2 * MIB),
        ("e", 2 * MIB), // d + e is exactly 4 MiB: one batch
        ("f", 10),
        ("g", 5 * MIB), // larger than the budget: a batch of its own
        ("h", 10),
    ] {
        event_of_size(&db, id, bytes).await;
    }
    let mut batches = Vec::new();
    let mut after = 0;
    loop {
        let batch = store.events_after(after, 100).await.unwrap();
        let Some(last) = batch.last() else { break };
        after = last.seq;
        batches.push(
            batch
                .iter()
                .map(|e| e.entity_id.clone())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(
        batches,
        [
            vec!["a", "b"],
            vec!["c"],
            vec!["d", "e"],
            vec!["f"],
            vec!["g"],
            vec!["h"]
        ]
    );
}

async fn the_tail_counts_the_same_budget_from_the_newest_end(db: Db) {
    let store = db.open().await;
    const MIB: usize = 1024 * 1024;
    for (id, bytes) in [("x", 10), ("y", 2 * MIB), ("z", 2 * MIB)] {
        event_of_size(&db, id, bytes).await;
    }
    let tail = |page: EventPage| {
        page.events
            .into_iter()
            .map(|e| e.entity_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(tail(store.events_tail(10).await.unwrap()), ["y", "z"]);
    event_of_size(&db, "big", 5 * MIB).await;
    assert_eq!(tail(store.events_tail(10).await.unwrap()), ["big"]);
}

/// The benchmarks' bulk history (`Store::seed_history`, written in a few
/// set-based statements) reads as a real one on both engines: three events
/// per question in order, each question resolved with its chat reply, the
/// daemon's cursors at the log's end, and a real write continuing the log.
async fn seeded_history_reads_as_a_log_that_real_writes_continue(db: Db) {
    let store = db.open().await;
    assert_eq!(store.seed_history(30).await.unwrap(), 30 * 6);
    assert_eq!(store.last_event_seq().await.unwrap(), 90);
    let log = store.events_after(0, 1000).await.unwrap();
    assert_eq!(seqs(log.clone()), (1..=90).collect::<Vec<i64>>());
    let first = format!("5eed{:028x}", 1);
    let kinds: Vec<(&str, &str)> = log[..3]
        .iter()
        .map(|e| (e.kind.as_str(), e.entity_id.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("question.flagged", first.as_str()),
            ("question.answered", first.as_str()),
            ("question.resolved", first.as_str()),
        ]
    );
    for cursor in ["chat", "notify"] {
        assert_eq!(store.cursor(cursor).await.unwrap(), 90, "{cursor}");
    }
    let q = store.get_question(&first).await.unwrap().expect("seeded");
    assert_eq!(q.status, handoff::store::questions::Status::Resolved);
    assert_eq!(q.reply.map(|r| r.text).as_deref(), Some("Option A"));
    assert_eq!(store.question_replies(&first).await.unwrap().len(), 1);
    let last = format!("5eed{:028x}", 30);
    assert_eq!(
        store.get_question(&last).await.unwrap().unwrap().title,
        "Seeded question 30"
    );
    common::ask(&store, "after the history").await;
    assert_eq!(store.last_event_seq().await.unwrap(), 91);
}

both_engines!(
    seeded_history_reads_as_a_log_that_real_writes_continue,
    the_event_log_reads_in_order_after_a_cursor,
    the_event_log_reads_at_most_four_mebibytes_of_payload_per_batch,
    the_tail_counts_the_same_budget_from_the_newest_end,
);
