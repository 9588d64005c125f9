//! Questions under concurrency: step-by-step interleavings on two real
//! Store handles (separate pools on one database, as two processes have),
//! contention between tasks and between OS processes, same-millisecond
//! ties, the event log and the append-only reply history. Every test but
//! the CLI one runs on both engines (tests/common/engine.rs).

mod common;

use std::sync::Arc;

use common::engine::Db;
use common::{TempDb, answer, ask, count, reply_of};
use handoff::clock::ManualClock;
use handoff::store::questions::{Channel, Refusal, ReplyKind};

async fn a_inbox_re_reply_between_read_and_mark_stays_queued(db: Db) {
    let agent = db.open().await;
    let human = db.open().await; // a second pool: another process
    let q = ask(&agent, "Which DB?").await;
    human
        .reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();

    // The agent reads…
    let read = agent.read_pending(Some("p"), None, false).await.unwrap();
    assert_eq!(read[0].reply.as_ref().unwrap().text, "sqlite");
    // …the human changes their mind before the agent marks…
    human
        .reply_inbox(&q.id, &answer("postgres"))
        .await
        .unwrap()
        .unwrap();
    // …so the mark fails and the new reply stays queued.
    assert_eq!(
        agent.mark_reply_seen(&read[0], "agent-1").await.unwrap(),
        None
    );
    let now = human.get_question(&q.id).await.unwrap().unwrap();
    assert!(now.has_unseen_reply());
    let got = agent
        .pending(Some("p"), None, false, "agent-1")
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].question.reply.as_ref().unwrap().text, "postgres");
    assert!(got[0].new);
    // Exactly one pickup event: the failed mark wrote nothing.
    let picked = agent
        .events_for("question", &q.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "question.picked_up")
        .count();
    assert_eq!(picked, 1);
}

async fn b_chat_racing_inbox_the_inbox_text_wins_whole(db: Db) {
    let chat = db.open().await;
    let inbox = db.open().await;
    // Order 1: the chat reply lands first, the Inbox overwrites it.
    let q1 = ask(&chat, "Q1?").await;
    chat.reply_chat(&q1.id, &reply_of(ReplyKind::Answer, "postgres", "bob"))
        .await
        .unwrap()
        .unwrap();
    inbox
        .reply_inbox(&q1.id, &reply_of(ReplyKind::Answer, "sqlite", "alice"))
        .await
        .unwrap()
        .unwrap();
    // Order 2: the Inbox lands first, the chat reply is refused.
    let q2 = ask(&chat, "Q2?").await;
    inbox
        .reply_inbox(&q2.id, &reply_of(ReplyKind::Answer, "sqlite", "alice"))
        .await
        .unwrap()
        .unwrap();
    let r = chat
        .reply_chat(&q2.id, &reply_of(ReplyKind::Answer, "postgres", "bob"))
        .await
        .unwrap();
    assert!(
        matches!(r, Err(Refusal::UnreadAnswer { ref reply, source: Channel::Inbox, .. }) if reply == "sqlite")
    );
    // Truly concurrent, many times: whichever order the engine picks.
    let mut ids = vec![q1.id, q2.id];
    for i in 0..10 {
        let q = ask(&chat, &format!("Race {i}?")).await;
        let (c, h, id) = (chat.clone(), inbox.clone(), q.id.clone());
        let id2 = id.clone();
        let a = tokio::spawn(async move {
            c.reply_chat(&id, &reply_of(ReplyKind::Answer, "postgres", "bob"))
                .await
        });
        let b = tokio::spawn(async move {
            h.reply_inbox(&id2, &reply_of(ReplyKind::Answer, "sqlite", "alice"))
                .await
        });
        a.await.unwrap().unwrap().ok();
        b.await.unwrap().unwrap().unwrap();
        ids.push(q.id);
    }
    for id in ids {
        let r = chat
            .get_question(&id)
            .await
            .unwrap()
            .unwrap()
            .reply
            .unwrap();
        assert_eq!(
            (r.text.as_str(), r.source, r.by.as_str(), r.seen_at),
            ("sqlite", Channel::Inbox, "alice", None),
            "the Inbox text wins whole: text, source, by, unseen"
        );
    }
}

async fn sixteen_tasks_on_two_pools_exactly_one_chat_reply_wins(db: Db) {
    let stores = [db.open().await, db.open().await, db.open().await];
    let q = ask(&stores[0], "Which DB?").await;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let s = stores[i % stores.len()].clone();
            let id = q.id.clone();
            tokio::spawn(async move { s.reply_chat(&id, &answer(&format!("answer {i}"))).await })
        })
        .collect();
    let mut winners = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.unwrap().expect("no error escapes") {
            Ok(_) => winners.push(format!("answer {i}")),
            Err(Refusal::UnreadAnswer { .. }) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one chat reply wins");
    let now = stores[1].get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(now.reply.unwrap().text, winners[0]);
    assert_eq!(now.reply_seq, 1);
    assert_eq!(count(&stores[0], "question_replies").await, 1);
}

/// SQLite only: the CLI refuses a PostgreSQL URL until every store method
/// is ported (the processes race on one file; on PostgreSQL the sixteen
/// tasks on three pools above are the same race).
#[test]
fn four_cli_processes_racing_chat_replies_exactly_one_wins() {
    let db = TempDb::new();
    let out = db.cli(&["ask", "Which DB?", "--project", "p", "--json"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = common::json(&out)["question"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let children: Vec<_> = (0..4)
        .map(|i| {
            std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
                .args([
                    "reply",
                    &id,
                    &format!("answer {i}"),
                    "--via",
                    "chat",
                    "--by",
                    &format!("user{i}"),
                ])
                .env("HANDOFF_DB", &db.path)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let codes: Vec<i32> = outs.iter().map(|o| o.status.code().unwrap()).collect();
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 3).count(), 3, "{codes:?}");
    for o in outs.iter().filter(|o| o.status.code() == Some(3)) {
        assert!(
            common::stderr(o).contains("already waiting for the agent"),
            "{}",
            common::stderr(o)
        );
    }
    let shown = common::json(&db.cli(&["show", &id, "--json"]));
    assert_eq!(shown["replies"].as_array().unwrap().len(), 1);
    assert_eq!(shown["question"]["reply"]["source"], "chat");
}

async fn same_millisecond_re_reply_is_not_marked_by_the_older_read(db: Db) {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let agent = db.open_with_clock(clock.clone()).await;
    let human = db.open_with_clock(clock.clone()).await;
    let q = ask(&agent, "Which DB?").await;
    human
        .reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();
    let read = agent
        .read_pending(None, None, false)
        .await
        .unwrap()
        .remove(0);
    // The clock did not move: both replies carry the same replied_at.
    human
        .reply_inbox(&q.id, &answer("postgres"))
        .await
        .unwrap()
        .unwrap();
    let now = human.get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(
        now.reply.as_ref().unwrap().at,
        read.reply.as_ref().unwrap().at
    );
    assert_eq!(
        agent.mark_reply_seen(&read, "a").await.unwrap(),
        None,
        "a same-ms tie must not mark the newer reply"
    );
    let got = agent.pending(None, None, false, "a").await.unwrap();
    assert_eq!(got[0].question.reply.as_ref().unwrap().text, "postgres");
    // And a chat reply in that same millisecond after pickup replaces it cleanly.
    human
        .reply_chat(&q.id, &answer("mysql"))
        .await
        .unwrap()
        .unwrap();
    let hist = human.question_replies(&q.id).await.unwrap();
    assert!(hist.iter().all(|h| h.at == 1_800_000_000_000));
    assert_eq!(
        hist.iter().map(|h| h.reply_seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
}

async fn every_change_appends_its_event(db: Db) {
    let s = db.open().await;
    let nq = handoff::store::questions::NewQuestion {
        project: "proj".into(),
        agent: "claude".into(),
        session: "sess-1".into(),
        key: Some("k".into()),
        title: "Which DB?".into(),
        ..Default::default()
    };
    let q = s.flag(&nq).await.unwrap().question;
    s.flag(&nq).await.unwrap();
    s.snooze_question(&q.id, s.now() + 60_000, "alice", Channel::Inbox)
        .await
        .unwrap()
        .unwrap();
    s.reply_inbox(&q.id, &reply_of(ReplyKind::Answer, "sqlite", "alice"))
        .await
        .unwrap()
        .unwrap();
    s.reply_inbox(&q.id, &answer("")).await.unwrap().unwrap();
    s.reply_chat(&q.id, &reply_of(ReplyKind::Answer, "pg", "bob"))
        .await
        .unwrap()
        .unwrap();
    s.reply_chat(&q.id, &reply_of(ReplyKind::Clarify, "pg 16", "bob"))
        .await
        .unwrap()
        .unwrap();
    s.pending(None, Some("sess-1"), false, "claude")
        .await
        .unwrap();
    s.answer_agent(&q.id, &reply_of(ReplyKind::Decline, "", "claude"))
        .await
        .unwrap()
        .unwrap();
    s.resolve_question(&q.id, "pg 16", "claude")
        .await
        .unwrap()
        .unwrap();
    let q2 = ask(&s, "Other?").await;
    s.dismiss_question(&q2.id, None, "alice", Channel::Chat)
        .await
        .unwrap()
        .unwrap();
    // Refusals write nothing.
    let before = s.last_event_seq().await.unwrap();
    s.reply_chat(&q.id, &answer("late"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(s.last_event_seq().await.unwrap(), before);

    let evs = s.events_for("question", &q.id).await.unwrap();
    let kinds: Vec<&str> = evs.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "question.flagged",
            "question.updated",
            "question.snoozed",
            "question.answered",
            "question.reply_cleared",
            "question.answered",
            "question.answered",
            "question.picked_up",
            "question.answered",
            "question.resolved",
        ]
    );
    assert!(
        evs.iter()
            .all(|e| e.project == "proj" && e.session == "sess-1")
    );
    let answered: Vec<(String, String, i64)> = evs
        .iter()
        .filter(|e| e.kind == "question.answered")
        .map(|e| {
            let p = &e.payload;
            (
                p["kind"].as_str().unwrap().to_string(),
                p["source"].as_str().unwrap().to_string(),
                p["revision"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        answered,
        [
            ("answer".into(), "inbox".into(), 2),
            ("answer".into(), "chat".into(), 2),
            ("clarify".into(), "chat".into(), 2),
            ("decline".into(), "agent".into(), 2),
        ]
    );
    assert_eq!(evs[3].channel, "inbox");
    assert_eq!(evs[3].actor, "alice");
    let dismissed = s.events_for("question", &q2.id).await.unwrap();
    assert_eq!(dismissed.last().unwrap().kind, "question.dismissed");
    assert_eq!(dismissed.last().unwrap().channel, "chat");
}

async fn the_reply_history_refuses_update_and_delete(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    s.reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();
    for sql in [
        "UPDATE question_replies SET reply = 'forged'",
        "DELETE FROM question_replies",
    ] {
        let e = db.exec(sql, &[]).await.unwrap_err();
        assert!(e.contains("append-only"), "{sql}: {e}");
    }
    let hist = s.question_replies(&q.id).await.unwrap();
    assert_eq!(hist.len(), 1);
    assert_eq!(hist[0].reply.as_deref(), Some("sqlite"));
}

/// Every writer at once on one question, from three pools: Inbox replies
/// and clears, chat replies, the agent's own answers and pickups. Whatever
/// the engine interleaves, each refusal is the one the rule gives (a chat
/// or agent reply is refused only by an unread reply in its way, never as
/// "empty": on PostgreSQL that is the refused write tried again under the
/// row's lock), and the history, the counter and the events agree with the
/// writes that won.
async fn every_writer_at_once_keeps_history_counter_and_events_in_step(db: Db) {
    let stores = [db.open().await, db.open().await, db.open().await];
    let q = ask(&stores[0], "Which DB?").await;
    #[derive(Default, Debug)]
    struct Tally {
        replies: usize,
        clears: usize,
        pickups: usize,
    }
    let mut tasks = Vec::new();
    for (i, door) in ["inbox", "clear", "chat", "agent", "pickup"]
        .into_iter()
        .enumerate()
    {
        let s = stores[i % stores.len()].clone();
        let id = q.id.clone();
        tasks.push(tokio::spawn(async move {
            let mut t = Tally::default();
            for n in 0..12 {
                let text = format!("{door} {n}");
                match door {
                    "inbox" => {
                        s.reply_inbox(&id, &answer(&text)).await.unwrap().unwrap();
                        t.replies += 1;
                    }
                    "clear" => match s.reply_inbox(&id, &answer("")).await.unwrap() {
                        Ok(_) => t.clears += 1,
                        Err(Refusal::Empty | Refusal::AlreadyPickedUp { .. }) => {}
                        Err(other) => panic!("a clear refused as {other:?}"),
                    },
                    "chat" | "agent" => {
                        let r = if door == "chat" {
                            s.reply_chat(&id, &answer(&text)).await
                        } else {
                            s.answer_agent(&id, &answer(&text)).await
                        };
                        match r.unwrap() {
                            Ok(_) => t.replies += 1,
                            // The agent refused is handed the unread
                            // reply: that counts as its pickup.
                            Err(Refusal::UnreadAnswer { .. }) if door == "agent" => t.pickups += 1,
                            Err(Refusal::UnreadAnswer { .. }) => {}
                            Err(other) => panic!("a {door} reply refused as {other:?}"),
                        }
                    }
                    _ => {
                        let got = s.pending(None, Some("s"), false, "agent-1").await.unwrap();
                        t.pickups += got.iter().filter(|d| d.new).count();
                    }
                }
            }
            t
        }));
    }
    let mut total = Tally::default();
    for t in tasks {
        let t = t.await.unwrap();
        total.replies += t.replies;
        total.clears += t.clears;
        total.pickups += t.pickups;
    }
    let s = &stores[1];
    let history = s.question_replies(&q.id).await.unwrap();
    let of = |action: &str| history.iter().filter(|h| h.action == action).count();
    assert_eq!(
        (of("reply"), of("clear")),
        (total.replies, total.clears),
        "{total:?}"
    );
    let now = s.get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(now.reply_seq as usize, history.len());
    let seqs: Vec<i64> = history.iter().map(|h| h.reply_seq).collect();
    assert_eq!(seqs, (1..=history.len() as i64).collect::<Vec<_>>());
    let events = s.events_for("question", &q.id).await.unwrap();
    let count = |kind: &str| events.iter().filter(|e| e.kind == kind).count();
    assert_eq!(
        (
            count("question.answered"),
            count("question.reply_cleared"),
            count("question.picked_up")
        ),
        (total.replies, total.clears, total.pickups),
        "{total:?}"
    );
}

both_engines!(
    a_inbox_re_reply_between_read_and_mark_stays_queued,
    b_chat_racing_inbox_the_inbox_text_wins_whole,
    same_millisecond_re_reply_is_not_marked_by_the_older_read,
    every_change_appends_its_event,
    the_reply_history_refuses_update_and_delete,
);
both_engines!(
    multi_thread: sixteen_tasks_on_two_pools_exactly_one_chat_reply_wins,
    every_writer_at_once_keeps_history_counter_and_events_in_step,
);
