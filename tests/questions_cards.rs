//! Question cards in the store: a multiple choice's
//! toggles are guarded by the revision they were drawn for, so of two taps
//! on one drawing exactly one applies; a toggle never lands on a plain
//! question, past an unread answer, or on a closed card; re-asking resets.
//! On both engines (tests/common/engine.rs).

mod common;

use common::engine::Db;
use handoff::store::Channel;
use handoff::store::questions::{Choice, NewQuestion, NewReply, QuestionOption, Refusal};

fn card(key: &str, labels: &[&str]) -> NewQuestion {
    NewQuestion {
        project: "p".into(),
        agent: "claude".into(),
        session: "s".into(),
        key: Some(key.into()),
        title: "Which checks?".into(),
        options: labels
            .iter()
            .map(|l| QuestionOption {
                label: (*l).into(),
                recommended: false,
            })
            .collect(),
        ..Default::default()
    }
}

async fn two_taps_on_one_drawing_apply_once_and_the_second_is_stale(db: Db) {
    let (a, b) = (db.open().await, db.open().await);
    let q = a
        .flag_card(&card("k", &["Lint", "Unit", "E2E"]), Choice::Many)
        .await
        .unwrap()
        .question;
    assert_eq!((q.choice, q.picked, q.revision), (Choice::Many, 0, 1));
    let (x, y) = tokio::join!(
        a.question_toggle(&q.id, 0, 1, "@ann", Channel::Chat),
        b.question_toggle(&q.id, 2, 1, "@bob", Channel::Chat),
    );
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(
        x.is_ok() as u8 + y.is_ok() as u8,
        1,
        "exactly one of {x:?} / {y:?}"
    );
    let loser = if x.is_ok() { y } else { x };
    assert_eq!(
        loser,
        Err(Refusal::Stale {
            current_revision: 2
        })
    );
    let now = a.get_question(&q.id).await.unwrap().unwrap();
    assert_eq!(now.picked.count_ones(), 1);
    // Toggle the same option twice: off again; labels in option order.
    let t = a
        .question_toggle(&q.id, 1, 2, "@ann", Channel::Chat)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.picked_labels().len(), 2);
    let t = a
        .question_toggle(&q.id, 1, 3, "@ann", Channel::Chat)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.picked_labels().len(), 1);
    // Not an option of the card: refused, nothing changes.
    let r = a
        .question_toggle(&q.id, 5, 4, "@ann", Channel::Chat)
        .await
        .unwrap();
    assert!(matches!(r, Err(Refusal::Stale { .. })), "{r:?}");
    // Re-asking the key resets the ticks and bumps the revision.
    let again = a
        .flag_card(&card("k", &["Lint", "Unit", "E2E"]), Choice::Many)
        .await
        .unwrap()
        .question;
    assert_eq!(
        (again.id.as_str(), again.picked, again.revision),
        (q.id.as_str(), 0, 5)
    );
}

async fn a_toggle_never_lands_on_a_plain_question_an_unread_answer_or_a_closed_card(db: Db) {
    let s = db.open().await;
    let plain = s.flag(&card("plain", &["A", "B"])).await.unwrap().question;
    let r = s
        .question_toggle(&plain.id, 0, 1, "@ann", Channel::Chat)
        .await
        .unwrap();
    assert!(matches!(r, Err(Refusal::Stale { .. })), "{r:?}");
    assert_eq!(s.get_question(&plain.id).await.unwrap().unwrap().picked, 0);

    let q = s
        .flag_card(&card("many", &["A", "B"]), Choice::Many)
        .await
        .unwrap()
        .question;
    let answered = s
        .reply_inbox(
            &q.id,
            &NewReply {
                text: "A".into(),
                by: "ann".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .unwrap();
    let r = s
        .question_toggle(&q.id, 1, answered.revision, "@bob", Channel::Chat)
        .await
        .unwrap();
    assert!(matches!(r, Err(Refusal::UnreadAnswer { .. })), "{r:?}");
    s.resolve_question(&q.id, "answered: A", "claude")
        .await
        .unwrap()
        .unwrap();
    let r = s
        .question_toggle(&q.id, 1, answered.revision, "@bob", Channel::Chat)
        .await
        .unwrap();
    assert!(matches!(r, Err(Refusal::NotOpen { .. })), "{r:?}");
    // A card needs options.
    let mut none = card("none", &[]);
    none.options.clear();
    assert!(s.flag_card(&none, Choice::One).await.is_err());
}

both_engines!(
    two_taps_on_one_drawing_apply_once_and_the_second_is_stale,
    a_toggle_never_lands_on_a_plain_question_an_unread_answer_or_a_closed_card,
);
