//! Questions: the reference behaviours of docs/design.md §2, one test each, run on
//! both engines (a real temp SQLite file, a real PostgreSQL database: see
//! tests/common/engine.rs).

mod common;

use common::engine::Db;
use common::{answer, ask, count, reply_of};
use handoff::store::questions::{
    Channel, ListFilter, NewQuestion, QuestionOption, Refusal, ReplyKind, Status,
};

fn text_of(q: &handoff::store::questions::Question) -> Option<(String, Channel, bool)> {
    q.reply
        .as_ref()
        .map(|r| (r.text.clone(), r.source, r.seen_at.is_some()))
}

async fn a_fresh_inbox_reply_supersedes_a_chat_reply(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    s.reply_chat(&q.id, &answer("postgres"))
        .await
        .unwrap()
        .unwrap();
    let q = s
        .reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&q), Some(("sqlite".into(), Channel::Inbox, false)));
    // And over a chat reply the agent already picked up: unseen again.
    s.pending(Some("p"), None, false, "a").await.unwrap();
    let q = s
        .reply_inbox(&q.id, &answer("sqlite, v3.51"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        text_of(&q),
        Some(("sqlite, v3.51".into(), Channel::Inbox, false))
    );
}

async fn an_unread_inbox_reply_beats_a_chat_reply(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    s.reply_inbox(&q.id, &reply_of(ReplyKind::Answer, "sqlite", "alice"))
        .await
        .unwrap()
        .unwrap();
    let refused = s.reply_chat(&q.id, &answer("postgres")).await.unwrap();
    assert_eq!(
        refused,
        Err(Refusal::UnreadAnswer {
            reply: "sqlite".into(),
            kind: ReplyKind::Answer,
            source: Channel::Inbox,
            by: "alice".into(),
        })
    );
    let now = s.get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(
        text_of(&now),
        Some(("sqlite".into(), Channel::Inbox, false))
    );
    assert_eq!(
        count(&s, "question_replies").await,
        1,
        "the refused reply left no trace"
    );
}

async fn after_pickup_a_chat_reply_may_replace_it(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    s.reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();
    let got = s.pending(None, Some("s"), false, "a").await.unwrap();
    assert_eq!(got.len(), 1);
    assert!(got[0].new);
    let q = s
        .reply_chat(&q.id, &answer("postgres"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&q), Some(("postgres".into(), Channel::Chat, false)));
    // The agent's door: born seen, replaces a seen reply too.
    s.pending(None, Some("s"), false, "a").await.unwrap();
    let q = s
        .answer_agent(&q.id, &answer("mysql"))
        .await
        .unwrap()
        .unwrap();
    let r = q.reply.unwrap();
    assert_eq!((r.source, r.seen_at), (Channel::Agent, Some(r.at)));
}

async fn a_blank_inbox_reply_clears_only_an_unpicked_reply(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    // Nothing to clear.
    assert_eq!(
        s.reply_inbox(&q.id, &answer("  ")).await.unwrap(),
        Err(Refusal::Empty)
    );
    // Unpicked: cleared, and a chat reply may now land.
    s.reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();
    let cleared = s.reply_inbox(&q.id, &answer("")).await.unwrap().unwrap();
    assert!(cleared.reply.is_none());
    assert!(s.pending(None, None, true, "a").await.unwrap().is_empty());
    s.reply_chat(&q.id, &answer("postgres"))
        .await
        .unwrap()
        .unwrap();
    // Picked up: a blank reply cannot take it back.
    s.pending(None, None, false, "a").await.unwrap();
    assert_eq!(
        s.reply_inbox(&q.id, &answer("")).await.unwrap(),
        Err(Refusal::AlreadyPickedUp {
            reply: "postgres".into()
        })
    );
    let hist = s.question_replies(&q.id).await.unwrap();
    let actions: Vec<&str> = hist.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(actions, ["reply", "clear", "reply"]);
}

async fn clarify_replaces_an_unclaimed_chat_reply_never_an_inbox_one(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    s.reply_chat(&q.id, &answer("postgres"))
        .await
        .unwrap()
        .unwrap();
    // A plain chat answer cannot replace the unclaimed chat reply…
    assert!(matches!(
        s.reply_chat(&q.id, &answer("mysql")).await.unwrap(),
        Err(Refusal::UnreadAnswer {
            source: Channel::Chat,
            ..
        })
    ));
    // …a chat clarify can.
    let clar = reply_of(ReplyKind::Clarify, "postgres 16, not 15", "bob");
    let q2 = s.reply_chat(&q.id, &clar).await.unwrap().unwrap();
    let r = q2.reply.unwrap();
    assert_eq!(
        (r.text.as_str(), r.kind, r.source),
        ("postgres 16, not 15", ReplyKind::Clarify, Channel::Chat)
    );
    // An unclaimed Inbox reply is never replaced by a clarify.
    s.reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        s.reply_chat(&q.id, &clar).await.unwrap(),
        Err(Refusal::UnreadAnswer { source: Channel::Inbox, ref reply, .. }) if reply == "sqlite"
    ));
    // Nor by an agent clarify (only the chat door corrects chat replies).
    assert!(s.answer_agent(&q.id, &clar).await.unwrap().is_err());
}

async fn replies_survive_resolve(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    s.reply_inbox(&q.id, &answer("sqlite"))
        .await
        .unwrap()
        .unwrap();
    s.pending(None, None, false, "a").await.unwrap();
    let done = s
        .resolve_question(&q.id, "went with sqlite", "agent-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, Status::Resolved);
    assert_eq!(done.outcome.as_deref(), Some("went with sqlite"));
    assert_eq!(done.reply.unwrap().text, "sqlite");
    assert_eq!(s.question_replies(&q.id).await.unwrap().len(), 1);
    // Closed questions no longer come back in pending.
    assert!(s.pending(None, None, true, "a").await.unwrap().is_empty());
}

async fn refusals_empty_not_found_not_open(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    assert_eq!(
        s.reply_chat(&q.id, &answer(" ")).await.unwrap(),
        Err(Refusal::Empty)
    );
    assert_eq!(
        s.answer_agent(&q.id, &answer("")).await.unwrap(),
        Err(Refusal::Empty)
    );
    let missing = "0".repeat(32);
    assert_eq!(
        s.reply_inbox(&missing, &answer("x")).await.unwrap(),
        Err(Refusal::NotFound)
    );
    assert_eq!(
        s.reply_chat(&missing, &answer("x")).await.unwrap(),
        Err(Refusal::NotFound)
    );
    assert_eq!(
        s.resolve_question(&missing, "x", "").await.unwrap(),
        Err(Refusal::NotFound)
    );
    s.dismiss_question(&q.id, Some("not needed"), "alice", Channel::Inbox)
        .await
        .unwrap()
        .unwrap();
    let closed = Err(Refusal::NotOpen {
        status: Status::Dismissed,
    });
    assert_eq!(s.reply_inbox(&q.id, &answer("x")).await.unwrap(), closed);
    assert_eq!(s.reply_chat(&q.id, &answer("x")).await.unwrap(), closed);
    assert_eq!(s.answer_agent(&q.id, &answer("x")).await.unwrap(), closed);
    assert_eq!(s.resolve_question(&q.id, "x", "").await.unwrap(), closed);
    assert_eq!(
        s.snooze_question(&q.id, i64::MAX, "", Channel::Inbox)
            .await
            .unwrap(),
        closed
    );
    // A decline may be blank: "no, and no reason given".
    let q = ask(&s, "Deploy on Friday?").await;
    let d = s
        .reply_chat(&q.id, &reply_of(ReplyKind::Decline, "", "bob"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.reply.unwrap().kind, ReplyKind::Decline);
}

async fn the_same_key_updates_in_place_and_bumps_revision(db: Db) {
    let s = db.open().await;
    let mut nq = NewQuestion {
        project: "p".into(),
        key: Some("db-choice".into()),
        title: "Which DB?".into(),
        options: vec![
            QuestionOption {
                label: "sqlite".into(),
                recommended: true,
            },
            QuestionOption {
                label: "postgres".into(),
                recommended: false,
            },
        ],
        ..Default::default()
    };
    let a = s.flag(&nq).await.unwrap();
    assert!(a.created);
    assert_eq!(a.question.revision, 1);
    nq.title = "Which DB, given 10k writes/s?".into();
    let b = s.flag(&nq).await.unwrap();
    assert!(!b.created);
    assert_eq!(b.question.id, a.question.id);
    assert_eq!(
        (b.question.revision, b.question.title.as_str()),
        (2, "Which DB, given 10k writes/s?")
    );
    assert_eq!(count(&s, "questions").await, 1, "no twin");
    // Same key in another project is another question.
    nq.project = "other".into();
    assert!(s.flag(&nq).await.unwrap().created);
    // Once resolved, the key is free again.
    nq.project = "p".into();
    s.resolve_question(&a.question.id, "sqlite", "")
        .await
        .unwrap()
        .unwrap();
    let c = s.flag(&nq).await.unwrap();
    assert!(c.created);
    assert_ne!(c.question.id, a.question.id);
    let kinds: Vec<String> = s
        .events_for("question", &a.question.id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        ["question.flagged", "question.updated", "question.resolved"]
    );
}

async fn a_stale_revision_is_refused(db: Db) {
    let s = db.open().await;
    let nq = NewQuestion {
        project: "p".into(),
        key: Some("k".into()),
        title: "Ship it?".into(),
        ..Default::default()
    };
    let q = s.flag(&nq).await.unwrap().question;
    s.flag(&nq).await.unwrap(); // revision 2: the chat message drawn at 1 is stale
    let mut r = answer("yes");
    r.expected_revision = Some(1);
    let stale = Err(Refusal::Stale {
        current_revision: 2,
    });
    assert_eq!(s.reply_chat(&q.id, &r).await.unwrap(), stale);
    assert_eq!(s.answer_agent(&q.id, &r).await.unwrap(), stale);
    assert_eq!(s.reply_inbox(&q.id, &r).await.unwrap(), stale);
    assert!(
        s.get_question(&q.id)
            .await
            .unwrap()
            .unwrap()
            .reply
            .is_none()
    );
    r.expected_revision = Some(2);
    s.reply_chat(&q.id, &r).await.unwrap().unwrap();
}

async fn the_agent_refused_gets_the_unread_answer_delivered(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "Which DB?").await;
    s.reply_chat(&q.id, &reply_of(ReplyKind::Answer, "postgres", "bob"))
        .await
        .unwrap()
        .unwrap();
    let refused = s.answer_agent(&q.id, &answer("sqlite")).await.unwrap();
    assert!(matches!(refused, Err(Refusal::UnreadAnswer { ref reply, .. }) if reply == "postgres"));
    // Handing it over counts as pickup: nothing new in pending.
    assert!(s.pending(None, None, false, "a").await.unwrap().is_empty());
    let again = s.pending(None, None, true, "a").await.unwrap();
    assert_eq!(again.len(), 1);
    assert!(!again[0].new, "re-delivered until resolved");
}

async fn snoozed_questions_leave_the_chat_list_until_due(db: Db) {
    let (s, clock) = db.open_manual(1_000_000).await;
    let a = ask(&s, "A?").await;
    let b = ask(&s, "B?").await;
    s.snooze_question(&a.id, 1_000_000 + 3_600_000, "alice", Channel::Chat)
        .await
        .unwrap()
        .unwrap();
    let awake = ListFilter {
        awake_only: true,
        ..Default::default()
    };
    let ids = |v: Vec<handoff::store::questions::Question>| {
        v.into_iter().map(|q| q.id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(s.list_questions(&awake).await.unwrap()),
        [b.id.as_str()]
    );
    assert_eq!(
        s.list_questions(&ListFilter::default())
            .await
            .unwrap()
            .len(),
        2
    );
    clock.advance(3_600_000);
    assert_eq!(
        ids(s.list_questions(&awake).await.unwrap()),
        [a.id.as_str(), b.id.as_str()]
    );
}

async fn short_ids_resolve_and_ambiguity_is_explained(db: Db) {
    let s = db.open().await;
    let q = ask(&s, "A?").await;
    assert_eq!(
        s.resolve_question_id(&q.short_id).await.unwrap(),
        Some(q.id.clone())
    );
    assert_eq!(
        s.resolve_question_id(&q.id.to_uppercase()).await.unwrap(),
        Some(q.id.clone())
    );
    assert_eq!(s.resolve_question_id("zzzzzzzz").await.unwrap(), None);
    assert_eq!(
        s.resolve_question_id("abc").await.unwrap(),
        None,
        "too short to match"
    );
    // Two ids sharing a suffix (written by hand: new_id() makes that rare).
    for id in [
        "aaaaaaaaaaaaaaaaaaaaaaaa0000beef",
        "bbbbbbbbbbbbbbbbbbbbbbbb0000beef",
    ] {
        db.exec(
            "INSERT INTO questions (id, title, created_at, updated_at) VALUES ($1, 't', 0, 0)",
            &[id],
        )
        .await
        .unwrap();
    }
    let e = s.resolve_question_id("0000beef").await.unwrap_err();
    assert!(e.to_string().contains("several questions"), "{e}");
    assert_eq!(
        s.resolve_question_id("a0000beef").await.unwrap().as_deref(),
        Some("aaaaaaaaaaaaaaaaaaaaaaaa0000beef")
    );
}

async fn validation_rejects_bad_questions_and_writes_nothing(db: Db) {
    let s = db.open().await;
    let opt = |l: &str| QuestionOption {
        label: l.into(),
        recommended: false,
    };
    let bad = [
        NewQuestion {
            title: "x".repeat(121),
            ..Default::default()
        },
        NewQuestion {
            title: " ".into(),
            ..Default::default()
        },
        NewQuestion {
            title: "t".into(),
            detail: "d".repeat(501),
            ..Default::default()
        },
        NewQuestion {
            title: "t".into(),
            context: "c".repeat(64 * 1024 + 1),
            ..Default::default()
        },
        NewQuestion {
            title: "t".into(),
            options: vec![opt("a")],
            ..Default::default()
        },
        NewQuestion {
            title: "t".into(),
            options: vec![opt("a"), opt("b"), opt("c"), opt("d"), opt("e")],
            ..Default::default()
        },
        NewQuestion {
            title: "t".into(),
            options: vec![opt("a"), opt("a")],
            ..Default::default()
        },
    ];
    for q in &bad {
        let e = s.flag(q).await.unwrap_err();
        assert!(matches!(e, handoff::store::Error::Invalid(_)), "{e:?}");
    }
    assert_eq!(count(&s, "questions").await, 0);
    assert_eq!(count(&s, "events").await, 0);
}

async fn a_dismissal_keeps_its_trimmed_reason_and_a_blank_one_is_none(db: Db) {
    let s = db.open().await;
    let mut outcomes = Vec::new();
    for reason in [Some("  not needed "), Some("   "), None] {
        let q = ask(&s, &format!("Question {reason:?}")).await;
        let closed = s
            .dismiss_question(&q.id, reason, "alice", Channel::Chat)
            .await
            .unwrap()
            .expect("dismissed");
        assert_eq!(closed.status, Status::Dismissed);
        let read = s.get_question(&q.id).await.unwrap().expect("question");
        assert_eq!(
            read.outcome, closed.outcome,
            "the stored reason is the returned one"
        );
        outcomes.push(read.outcome);
    }
    assert_eq!(outcomes, [Some("not needed".to_string()), None, None]);
}

async fn snoozing_until_now_or_earlier_clears_the_snooze(db: Db) {
    let (s, _clock) = db.open_manual(5_000_000).await;
    let q = ask(&s, "Later?").await;
    let snoozed = s
        .snooze_question(&q.id, 5_000_001, "alice", Channel::Inbox)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        snoozed.snoozed_until,
        Some(5_000_001),
        "a millisecond ahead is a snooze"
    );
    for until in [5_000_000, 1] {
        let woken = s
            .snooze_question(&q.id, until, "alice", Channel::Inbox)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            woken.snoozed_until, None,
            "until {until} is not in the future"
        );
        let read = s.get_question(&q.id).await.unwrap().unwrap();
        assert_eq!(read.snoozed_until, None);
    }
}

both_engines!(
    a_fresh_inbox_reply_supersedes_a_chat_reply,
    an_unread_inbox_reply_beats_a_chat_reply,
    after_pickup_a_chat_reply_may_replace_it,
    a_blank_inbox_reply_clears_only_an_unpicked_reply,
    clarify_replaces_an_unclaimed_chat_reply_never_an_inbox_one,
    replies_survive_resolve,
    refusals_empty_not_found_not_open,
    the_same_key_updates_in_place_and_bumps_revision,
    a_stale_revision_is_refused,
    the_agent_refused_gets_the_unread_answer_delivered,
    snoozed_questions_leave_the_chat_list_until_due,
    short_ids_resolve_and_ambiguity_is_explained,
    validation_rejects_bad_questions_and_writes_nothing,
    a_dismissal_keeps_its_trimmed_reason_and_a_blank_one_is_none,
    snoozing_until_now_or_earlier_clears_the_snooze,
);
