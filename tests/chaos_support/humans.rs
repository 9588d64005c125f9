//! The harness's humans: two chat users tapping buttons on what the fake
//! Bot API shows (options on questions, Approve or Reject on actions, with
//! double taps and both racing on the same action), and one Inbox user
//! replying, clearing, dismissing and approving through the store.

use std::collections::HashMap;
use std::time::Duration;

use handoff::chat::{Callback, Verb};
use handoff::store::Store;
use handoff::store::actions::{Actor, Status as ActionStatus};
use handoff::store::questions::{ListFilter, NewReply, Source, Status};

use super::{ALICE, BOB, CHAT, Ctx, Rng};
use crate::common::fake_telegram::FakeTelegram;

/// Tap buttons on every message the chat shows, once per drawn button set
/// (sometimes twice: a double tap; sometimes by both users at once).
pub async fn tapper(ctx: Ctx, fake: FakeTelegram, mut rng: Rng) {
    // Callback data already acted on.
    let mut done: HashMap<String, u32> = HashMap::new();
    while !ctx.stopped() {
        for m in fake.messages(CHAT) {
            let buttons: Vec<(String, Callback)> = m
                .buttons()
                .into_iter()
                .filter_map(|(_, data)| Callback::decode(&data).map(|cb| (data, cb)))
                .collect();
            let options: Vec<&String> = buttons
                .iter()
                .filter(|(_, cb)| matches!(cb.verb, Verb::Option(_)))
                .map(|(d, _)| d)
                .collect();
            let approve = buttons.iter().find(|(_, cb)| cb.verb == Verb::Approve);
            let reject = buttons.iter().find(|(_, cb)| cb.verb == Verb::Reject);
            let mut taps: Vec<(i64, String)> = Vec::new();
            if !options.is_empty() {
                let key = format!("q:{}", m.message_id);
                if done.contains_key(&key) {
                    continue;
                }
                done.insert(key, 1);
                let pick = options[rng.range(0, options.len() as u64) as usize].clone();
                taps.push((ALICE, pick.clone()));
                if rng.chance(0.2) {
                    taps.push((ALICE, pick)); // a double tap
                }
                if rng.chance(0.15) {
                    // The other human picks too, at the same moment.
                    let other = options[rng.range(0, options.len() as u64) as usize].clone();
                    taps.push((BOB, other));
                }
            } else if let (Some((data, _)), Some((rj, _))) = (approve, reject) {
                let key = format!("a:{data}");
                if done.contains_key(&key) {
                    continue;
                }
                done.insert(key, 1);
                if rng.chance(0.08) {
                    taps.push((BOB, rj.clone()));
                } else {
                    taps.push((ALICE, data.clone()));
                    // Quorum 2 needs both; sometimes both race on quorum 1.
                    if m.text.contains("of 2 approvals") || rng.chance(0.3) {
                        taps.push((BOB, data.clone()));
                    }
                    if rng.chance(0.2) {
                        taps.push((ALICE, data.clone())); // a double tap
                    }
                }
            }
            for (user, data) in taps {
                fake.tap(CHAT, user, m.message_id, &data);
                ctx.log().taps += 1;
            }
        }
        tokio::time::sleep(rng.ms(50, 200)).await;
    }
}

/// The Inbox user: reply to a random open question (the Inbox always
/// wins), sometimes clear an unpicked reply or dismiss, and now and then
/// approve a pending action as `carol`.
pub async fn inbox(ctx: Ctx, store: Store, mut rng: Rng) {
    let mut n = 0u64;
    while !ctx.stopped() {
        tokio::time::sleep(rng.ms(150, 450)).await;
        n += 1;
        let open = store
            .list_questions(&ListFilter {
                status: Some(Status::Open),
                project: Some("chaos".into()),
                ..Default::default()
            })
            .await
            .expect("list questions");
        if !open.is_empty() {
            let q = &open[rng.range(0, open.len() as u64) as usize];
            let roll = rng.range(0, 100);
            if roll < 8 {
                store
                    .dismiss_question(&q.id, Some("not needed"), "alice", Source::Inbox)
                    .await
                    .expect("dismiss")
                    .ok();
            } else {
                let text = if roll < 14 {
                    String::new()
                } else {
                    format!("inbox-{n}")
                };
                let r = NewReply {
                    text: text.clone(),
                    by: "alice".into(),
                    ..Default::default()
                };
                if store.reply_inbox(&q.id, &r).await.expect("reply").is_ok() && !text.is_empty() {
                    ctx.log().inbox_committed.push((q.id.clone(), text));
                }
            }
        }
        if n.is_multiple_of(4) {
            let pending = store
                .list_actions(Some(ActionStatus::Pending))
                .await
                .expect("list actions");
            if !pending.is_empty() {
                let a = &pending[rng.range(0, pending.len() as u64) as usize];
                let actor = Actor {
                    name: "carol",
                    channel: "inbox",
                };
                store.approve(&a.id, actor, None).await.expect("approve");
                ctx.log().inbox_approvals += 1;
            }
        }
    }
    // Let the last taps land before the humans go quiet.
    tokio::time::sleep(Duration::from_millis(100)).await;
}
