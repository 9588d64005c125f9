//! The voice-reply store steps on both engines: a note recorded once per
//! message, its transcription claimed by one worker (and retaken only once
//! stale), the transcript recorded only by its claimer, Send writing the
//! reply once with the medium `voice` (an unread Inbox answer wins), and
//! unconfirmed transcripts expiring once.

mod common;

use common::engine::Db;
use common::{ask, reply_of};
use handoff::store::questions::{Medium, Refusal, ReplyKind};
use handoff::store::voice::{NewVoice, Sent};

fn note(item: &str, message_id: i64) -> NewVoice {
    NewVoice {
        chat_id: 111,
        message_id,
        thread_id: None,
        user_id: 111,
        by: "@me".into(),
        item_kind: "question".into(),
        item_id: item.into(),
        target: "answer".into(),
        revision: None,
        file_id: "f".into(),
        duration_secs: 2,
        file_size: Some(10),
    }
}

async fn a_note_is_transcribed_once_and_sent_once(db: Db) {
    let (s, clock) = db.open_manual(1_000_000).await;
    let other = db.open_with_clock(clock.clone()).await;
    let q = ask(&s, "Which database?").await;
    let (v, new) = s.voice_receive(&note(&q.id, 7)).await.unwrap();
    assert!(new && v.state == "received");
    let (again, new) = other.voice_receive(&note(&q.id, 7)).await.unwrap();
    assert!(!new && again.id == v.id, "one row per message");

    // One claim wins; the loser, and a late claim, get nothing until stale.
    let a = s.voice_claim(&v.id, "a", 60_000).await.unwrap();
    let b = other.voice_claim(&v.id, "b", 60_000).await.unwrap();
    assert!(a.is_some() && b.is_none());
    clock.advance(60_000);
    let b = other.voice_claim(&v.id, "b", 60_000).await.unwrap();
    assert_eq!(
        b.unwrap().worker.as_deref(),
        Some("b"),
        "a dead worker's claim is retaken"
    );
    // The first worker, thought dead, records nothing.
    assert!(
        s.voice_transcribed(&v.id, "a", "sqlite", 600_000)
            .await
            .unwrap()
            .is_none()
    );
    let t = other
        .voice_transcribed(&v.id, "b", "use postgres", 600_000)
        .await
        .unwrap();
    assert_eq!(t.unwrap().state, "transcribed");
    assert!(
        other.voice_claim(&v.id, "c", 0).await.unwrap().is_none(),
        "done is done"
    );

    // Send from two pools: one writes, the other finds it sent.
    let (x, y) = tokio::join!(
        s.voice_send(&v.id, "use postgres"),
        other.voice_send(&v.id, "use postgres")
    );
    let outs = [x.unwrap(), y.unwrap()];
    let written = outs
        .iter()
        .filter(|o| matches!(o, Sent::Written(_)))
        .count();
    assert_eq!(written, 1, "{outs:?}");
    assert!(
        outs.iter()
            .any(|o| matches!(o, Sent::Gone(Some(st)) if st == "sent")),
        "{outs:?}"
    );
    let read = s.get_question(&q.id).await.unwrap().unwrap();
    let r = read.reply.unwrap();
    assert_eq!((r.text.as_str(), r.medium), ("use postgres", Medium::Voice));
    let history = s.question_replies(&q.id).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].medium, Medium::Voice);

    // A later typed Inbox reply is text again, in the row and its history.
    s.reply_inbox(
        &q.id,
        &reply_of(ReplyKind::Answer, "sqlite after all", "ann"),
    )
    .await
    .unwrap()
    .unwrap();
    let read = s.get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(read.reply.unwrap().medium, Medium::Text);
    let history = s.question_replies(&q.id).await.unwrap();
    assert_eq!(history.last().unwrap().medium, Medium::Text);
}

async fn an_unread_inbox_answer_beats_send_and_the_transcript_still_stands(db: Db) {
    let (s, clock) = db.open_manual(1_000_000).await;
    let q = ask(&s, "Which database?").await;
    let (v, _) = s.voice_receive(&note(&q.id, 8)).await.unwrap();
    s.voice_claim(&v.id, "a", 60_000).await.unwrap().unwrap();
    s.voice_transcribed(&v.id, "a", "use postgres", 1_000)
        .await
        .unwrap()
        .unwrap();
    s.reply_inbox(
        &q.id,
        &reply_of(ReplyKind::Answer, "wait until Monday", "ann"),
    )
    .await
    .unwrap()
    .unwrap();
    match s.voice_send(&v.id, "use postgres").await.unwrap() {
        Sent::Refused(Refusal::UnreadAnswer { reply, .. }) => {
            assert_eq!(reply, "wait until Monday")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.voice_get(&v.id).await.unwrap().unwrap().state,
        "transcribed"
    );
    // Past its expiry: settled once, and Send then says so.
    clock.advance(1_000);
    assert_eq!(s.voice_expire().await.unwrap().len(), 1);
    assert!(s.voice_expire().await.unwrap().is_empty());
    assert!(
        matches!(s.voice_send(&v.id, "x").await.unwrap(), Sent::Gone(Some(st)) if st == "expired")
    );
    let history = s.question_replies(&q.id).await.unwrap();
    assert!(history.iter().all(|h| h.medium == Medium::Text));
}

both_engines!(
    a_note_is_transcribed_once_and_sent_once,
    an_unread_inbox_answer_beats_send_and_the_transcript_still_stands,
);
