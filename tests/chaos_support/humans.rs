//! The harness's humans: two chat users tapping buttons on what the fake
//! Bot API shows (options on questions, Approve or Reject on actions, with
//! double taps and both racing on the same action, Run now on an approved
//! action its proposer has not claimed yet), one Inbox user replying,
//! clearing, dismissing and approving through the store, the weather:
//! the fake Bot API's 429 bursts, 5xx answers and slow answers, and the
//! person who, once the storm is over, taps Run now on an approved action
//! nobody is left to run.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use handoff::chat::{Callback, Verb};
use handoff::store::Store;
use handoff::store::actions::{Actor, ApproveOutcome, Status as ActionStatus};
use handoff::store::questions::{ListFilter, Status};

use super::raw::Raw;
use super::{ALICE, CHAT, Ctx, Rng, Tap};
use crate::common::fake_telegram::{FakeTelegram, Fault};

/// Tap buttons on every message the chat shows, once per drawn button set
/// (sometimes twice: a double tap; sometimes by both users at once).
pub async fn tapper(ctx: Ctx, fake: FakeTelegram, mut rng: Rng) {
    // Callback data already acted on.
    let mut done: HashMap<String, u32> = HashMap::new();
    let chats = ctx.chats();
    while !ctx.stopped() {
        // Message ids are unique across the fake's chats.
        let shown = chats.iter().flat_map(|(chat, users)| {
            // In a private chat the one user is both.
            let (first, other) = (users[0], users[users.len() - 1]);
            fake.messages(*chat)
                .into_iter()
                .map(move |m| (*chat, first, other, m))
        });
        for (chat, alice, bob, m) in shown {
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
            let run = buttons.iter().find(|(_, cb)| cb.verb == Verb::Run);
            let mut taps: Vec<(i64, String)> = Vec::new();
            if !options.is_empty() {
                let key = format!("q:{}", m.message_id);
                if done.contains_key(&key) {
                    continue;
                }
                done.insert(key, 1);
                let pick = options[rng.range(0, options.len() as u64) as usize].clone();
                taps.push((alice, pick.clone()));
                if rng.chance(0.2) {
                    taps.push((alice, pick)); // a double tap
                }
                if rng.chance(0.15) {
                    // The other human picks too, at the same moment.
                    let other = options[rng.range(0, options.len() as u64) as usize].clone();
                    taps.push((bob, other));
                }
            } else if let (Some((data, _)), Some((rj, _))) = (approve, reject) {
                let key = format!("a:{data}");
                if done.contains_key(&key) {
                    continue;
                }
                done.insert(key, 1);
                if rng.chance(0.08) {
                    taps.push((bob, rj.clone()));
                } else {
                    taps.push((alice, data.clone()));
                    // Quorum 2 needs both; sometimes both race on quorum 1.
                    if m.text.contains("of 2 approvals") || rng.chance(0.3) {
                        taps.push((bob, data.clone()));
                    }
                    if rng.chance(0.2) {
                        taps.push((alice, data.clone())); // a double tap
                    }
                }
            } else if let Some((data, _)) = run {
                // Approved, not yet claimed: race the proposer and the
                // recover loops for the claim, now and then.
                let key = format!("r:{data}");
                if done.contains_key(&key) {
                    continue;
                }
                done.insert(key, 1);
                if rng.chance(0.3) {
                    taps.push((bob, data.clone()));
                }
            }
            for (user, data) in taps {
                let item = Callback::decode(&data).map(|cb| cb.id).unwrap_or_default();
                let label = m
                    .buttons()
                    .into_iter()
                    .find(|(_, d)| *d == data)
                    .map(|(l, _)| l)
                    .filter(|_| {
                        Callback::decode(&data).is_some_and(|cb| matches!(cb.verb, Verb::Option(_)))
                    });
                let (callback, update) = fake.tap_traced(chat, user, m.message_id, &data);
                ctx.log().taps.push(Tap {
                    chat,
                    callback,
                    update,
                    message: m.message_id,
                    user,
                    data,
                    item,
                    label,
                });
            }
        }
        tokio::time::sleep(rng.ms(50, 200)).await;
    }
}

/// The Inbox user: reply to a random open question (the Inbox always
/// wins), sometimes clear an unpicked reply or dismiss — each a
/// `handoff` process against the daemon's HTTP API as `alice` — and now
/// and then approve a pending action as `carol` through the store (and,
/// half the times that leaves a quorum of 2 one short, as `dave` too).
pub async fn inbox(ctx: Ctx, store: Store, mut rng: Rng) {
    let mut n = 0u64;
    while !ctx.stopped() {
        tokio::time::sleep(rng.ms(150, 450)).await;
        n += 1;
        let open = store
            .list_questions(&ListFilter {
                status: Some(Status::Open),
                ..Default::default()
            })
            .await
            .expect("list questions");
        if !open.is_empty() {
            let q = &open[rng.range(0, open.len() as u64) as usize];
            let roll = rng.range(0, 100);
            // Through the daemon's HTTP API, which is killed -9 under it:
            // only a reply the daemon answered as accepted is a commitment.
            let Some(mut cmd) = super::agents::inbox_cli(&ctx) else {
                continue;
            };
            if roll < 8 {
                cmd.args(["dismiss", &q.id, "--reason", "not needed"]);
                let _ = cmd.output().await.expect("run handoff dismiss");
            } else {
                let text = if roll < 14 {
                    String::new()
                } else {
                    format!("inbox-{n}")
                };
                cmd.args(["--json", "reply", &q.id, &text]);
                let out = cmd.output().await.expect("run handoff reply");
                let mut log = ctx.log();
                match out.status.code() {
                    Some(0) if !text.is_empty() => log.inbox_committed.push((q.id.clone(), text)),
                    Some(0) => {}
                    // 3: refused by the store; 2: a blank reply with
                    // nothing to clear (bad input).
                    Some(3) => log.inbox_refused += 1,
                    Some(2) if text.is_empty() => log.inbox_refused += 1,
                    _ => log.inbox_uncertain += 1,
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
                let actor = |name| Actor {
                    name,
                    channel: handoff::store::Channel::Inbox,
                };
                let out = store
                    .approve(&a.id, actor("carol"), None)
                    .await
                    .expect("approve");
                ctx.log().inbox_approvals += 1;
                if counted(&out) {
                    ctx.log()
                        .inbox_approved
                        .push((a.id.clone(), "carol".into()));
                }
                // A second person in the Inbox, now and then, completes a
                // quorum of 2 there. Why: the chat's two approvers must
                // both tap within the action's 12 s while daemons die
                // every second, and some rounds (most often in webhook
                // mode, where each tap waits for a daemon to answer 200)
                // got no quorum-2 action approved at all.
                if matches!(out, ApproveOutcome::ApprovalAdded { .. }) && rng.chance(0.5) {
                    let out = store
                        .approve(&a.id, actor("dave"), None)
                        .await
                        .expect("approve");
                    ctx.log().inbox_approvals += 1;
                    if counted(&out) {
                        ctx.log().inbox_approved.push((a.id.clone(), "dave".into()));
                    }
                }
            }
        }
    }
    // Let the last taps land before the humans go quiet.
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Whether an approval was counted (the store wrote it).
fn counted(out: &ApproveOutcome) -> bool {
    matches!(
        out,
        ApproveOutcome::Approved { .. } | ApproveOutcome::ApprovalAdded { .. }
    )
}

/// The weather: now and then the fake Bot API answers a burst of calls
/// with 429 (retry after 1 s), answers everything with a 500 for a moment,
/// or answers sends and edits slowly.
pub async fn weather(ctx: Ctx, fake: FakeTelegram, mut rng: Rng) {
    while !ctx.stopped() {
        tokio::time::sleep(rng.ms(500, 2500)).await;
        match rng.range(0, 3) {
            0 => {
                for _ in 0..rng.range(2, 6) {
                    fake.fail_next("sendMessage", 1);
                    fake.fail_next("editMessageText", 1);
                }
            }
            1 => {
                fake.fault("sendMessage", Fault::ServerError);
                fake.fault("editMessageText", Fault::ServerError);
                fake.fault("answerCallbackQuery", Fault::ServerError);
                tokio::time::sleep(rng.ms(100, 600)).await;
                fake.clear_faults();
            }
            _ => {
                let d = rng.ms(300, 1500);
                fake.fault("sendMessage", Fault::Slow(d));
                fake.fault("editMessageText", Fault::Slow(d));
                tokio::time::sleep(rng.ms(500, 2000)).await;
                fake.clear_faults();
            }
        }
        ctx.log().weather += 1;
    }
}

/// Telegram in webhook mode: deliver every update the fake holds, oldest
/// first, each to the next daemon alive (a reverse proxy in front of
/// them), with the secret the daemons registered. A delivery not answered
/// with 200 (the daemon down or killed mid-update, the update busy with
/// another daemon) is sent again a moment later, to the next daemon, as
/// Telegram retries; until `done`.
pub async fn postman(
    ctx: Ctx,
    fake: FakeTelegram,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("an HTTP client");
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let secret = fake.webhook_secrets().into_iter().flatten().last();
        let pending = fake.undelivered();
        let (Some(secret), false) = (secret, pending.is_empty()) else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        for update in pending {
            let id = update["update_id"].as_i64().expect("an update id");
            let Some(base) = ctx.next_daemon() else {
                break;
            };
            let answered = http
                .post(format!("{base}/telegram"))
                .header("X-Telegram-Bot-Api-Secret-Token", &secret)
                .json(&update)
                .send()
                .await;
            let acked = answered.is_ok_and(|r| r.status().is_success());
            fake.webhook_delivered(id, acked);
            if !acked {
                // In order: the next round starts again from this one.
                tokio::time::sleep(Duration::from_millis(100)).await;
                break;
            }
        }
    }
}

/// Approved actions with a command that nobody is running, other than
/// those a verifier sent back for a re-run (which rightly wait for one).
const STRANDED: &str = "SELECT id FROM actions a WHERE status = 'approved' AND exec IS NOT NULL
     AND (SELECT event FROM action_audit u WHERE u.action_id = a.id ORDER BY seq DESC LIMIT 1) <> 'retry'";

/// How long the settling person waits for a Run now tap to show before
/// tapping again.
const TAP_AGAIN: Duration = Duration::from_secs(10);

/// The person at the end of the round. Once the agents have stopped, an
/// approved `--exec` action whose proposer is gone (it gave up waiting or
/// was killed) has nobody left to run it: the claim racers stopped with
/// the agents, and the daemon does not run agents' commands on its own.
/// Its message says it is waiting for its proposer and offers Run now,
/// Done by hand and Won't run; a person taps Run now, and the daemon
/// runs it through the claim CAS as `handoff recover` would. Without this
/// a round ends on chance (did a racer's last loop come after the
/// approval?) and the last daemon "does not settle". Each tap is logged
/// like any other, so `no_lost_answer` checks it was taken and answered
/// once, and the run's side effect counts in `no_double_execution`.
#[derive(Default)]
pub struct Settler {
    /// Action id → when its Run now was last tapped.
    tapped: HashMap<String, Instant>,
}

impl Settler {
    /// Tap Run now on every stranded action whose message offers it (the
    /// newest such message), once, and again if it is still approved
    /// [`TAP_AGAIN`] later.
    pub async fn act(&mut self, ctx: &Ctx, fake: &FakeTelegram, pool: &Raw) {
        let stranded: Vec<(String,)> = pool.all(STRANDED, &[]).await;
        for (id,) in stranded {
            if self
                .tapped
                .get(&id)
                .is_some_and(|t| t.elapsed() < TAP_AGAIN)
            {
                continue;
            }
            let run = fake
                .messages(CHAT)
                .into_iter()
                .filter_map(|m| {
                    let data = m.buttons().into_iter().map(|(_, d)| d).find(|d| {
                        Callback::decode(d).is_some_and(|cb| cb.verb == Verb::Run && cb.id == id)
                    })?;
                    Some((m.message_id, data))
                })
                .max_by_key(|(message, _)| *message);
            // Not drawn with its buttons yet (a redraw owed): next look.
            let Some((message, data)) = run else { continue };
            let (callback, update) = fake.tap_traced(CHAT, ALICE, message, &data);
            let mut log = ctx.log();
            log.taps.push(Tap {
                chat: CHAT,
                callback,
                update,
                message,
                user: ALICE,
                data,
                item: id.clone(),
                label: None,
            });
            log.settle_runs.push(id.clone());
            self.tapped.insert(id, Instant::now());
        }
    }
}
