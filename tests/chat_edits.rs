//! One change, one edit: when a tap's handler and the chat follower both
//! redraw the same message for the same change, Telegram gets one
//! `editMessageText`, not two identical ones (through the real
//! `handoff serve` and the fake Bot API).

mod common;

use common::TempDb;
use common::daemon::{Daemon, write_config};
use common::fake_telegram::FakeTelegram;

const ME: i64 = 111;

#[tokio::test]
async fn one_approval_edits_its_message_once() {
    let db = TempDb::new();
    let store = db.open().await;
    let fake = FakeTelegram::start().await;
    let cfg = write_config(db.dir.path(), &fake.url, &[("me", ME, &[ME], &[ME])], "");
    let _d = Daemon::start(&db.path, &cfg);
    for round in 0..4 {
        let out = db.cli(&[
            "--json",
            "propose",
            "--kind",
            "deploy",
            "--summary",
            &format!("Deploy round {round}"),
        ]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        let id = common::json(&out)["action"]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let short = id[id.len() - 8..].to_string();
        let msg = fake
            .until(30, "the action's message", |f| {
                f.messages(ME).into_iter().find(|m| m.text.contains(&short))
            })
            .await;
        common::until_recorded(&db, ME, msg.message_id).await;
        fake.tap(ME, ME, msg.message_id, &msg.button("Approve"));
        // Updates are handled in order: once /help is answered, the tap's
        // handler (and its redraw) is done.
        let helps = fake
            .sent_texts(ME)
            .iter()
            .filter(|t| t.contains("/list"))
            .count();
        fake.send_text(ME, ME, "/help", None);
        fake.until(30, "the answer to /help", |f| {
            let n = f
                .sent_texts(ME)
                .iter()
                .filter(|t| t.contains("/list"))
                .count();
            (n > helps).then_some(())
        })
        .await;
        // And the chat follower has applied every event, the approval too.
        common::wait_for(30, "the chat follower to catch up", || async {
            let last = store.last_event_seq().await.unwrap();
            (store.cursor("chat").await.unwrap() >= last).then_some(())
        })
        .await;
        let shown = fake.message(ME, msg.message_id).unwrap();
        assert!(shown.text.contains("Approved"), "{}", shown.text);
        let edits: Vec<_> = fake
            .calls("editmessagetext")
            .into_iter()
            .filter(|c| c.body["message_id"] == msg.message_id)
            .collect();
        assert_eq!(edits.len(), 1, "round {round}: {edits:#?}");
    }
}
