//! The Slack half of a round with Slack on (see `Plan::slack`): the
//! channel every item is also posted to, the two people tapping there,
//! Slack itself redelivering every envelope the daemon has not
//! acknowledged (as Socket Mode does), and Slack's weather: 429s with a
//! `Retry-After`, 5xx answers, posts and updates answered late (applied
//! at once: a kill meanwhile loses a post's `ts`), slow history reads, a
//! websocket closed from Slack's side.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use handoff::chat::{Callback, Verb};

use super::{Ctx, Rng};
use crate::common::fake_slack::{FakeSlack, Fault};

/// The channel every item goes to (no `projects`: every project).
pub const CHANNEL: &str = "C0CHAOS";
/// The two Slack users allowed to answer and approve there.
pub const ALICE: &str = "U0ALICE";
pub const BOB: &str = "U0BOB";

/// One button tap the harness made in Slack, and how Slack delivered it.
#[derive(Debug, Clone)]
pub struct SlackTap {
    pub envelope: String,
    pub user: String,
    /// The tapped message's `ts`.
    pub ts: String,
    /// The button's value (callback data).
    pub value: String,
    /// The question or action it is about.
    pub item: String,
    /// For an option: its label.
    pub label: Option<String>,
    /// Times Slack sent it, the last time, and on which connection.
    pub sent: u32,
    pub last_sent: Option<Instant>,
    pub connection: usize,
}

impl SlackTap {
    fn frame(&self, n: usize) -> serde_json::Value {
        FakeSlack::tap_frame(
            &self.envelope,
            CHANNEL,
            &self.user,
            &self.ts,
            &self.value,
            &format!("{n}.000001"),
        )
    }
}

/// The `[slack]` table of the round's config: the bot token comes from
/// the environment, one per daemon process (`xoxb-E<epoch>`), so a
/// message tells which process posted it.
pub fn config(url: &str) -> String {
    format!(
        r#"
[slack]
app_token = "xapp-1-chaos"
bot_token = "xoxb-config"
api_url = "{url}"
digest_threshold = 100000

[[slack.channels]]
id = "{CHANNEL}"
answer = ["{ALICE}", "{BOB}"]
approve = ["{ALICE}", "{BOB}"]
"#
    )
}

/// Tap buttons on every message the channel shows, once per drawn
/// button set: an option of a question (sometimes twice, sometimes by
/// both at once), Approve on an action (both, for a quorum of 2; now and
/// then both on a quorum of 1), Run now on an approved one now and then.
/// Reject and Edit open forms and are left to Telegram and the Inbox.
pub async fn tapper(ctx: Ctx, slack: FakeSlack, mut rng: Rng) {
    let mut done: HashSet<String> = HashSet::new();
    while !ctx.stopped() {
        for m in slack.messages(CHANNEL) {
            let buttons: Vec<(String, String, Callback)> = m
                .buttons()
                .into_iter()
                .filter_map(|(l, v)| Callback::decode(&v).map(|cb| (l, v, cb)))
                .collect();
            let options: Vec<&(String, String, Callback)> = buttons
                .iter()
                .filter(|(_, _, cb)| matches!(cb.verb, Verb::Option(_)))
                .collect();
            let approve = buttons.iter().find(|(_, _, cb)| cb.verb == Verb::Approve);
            let run = buttons.iter().find(|(_, _, cb)| cb.verb == Verb::Run);
            let mut taps: Vec<(&str, &(String, String, Callback))> = Vec::new();
            if !options.is_empty() {
                if !done.insert(format!("q:{}", m.ts)) {
                    continue;
                }
                let pick = options[rng.range(0, options.len() as u64) as usize];
                taps.push((ALICE, pick));
                if rng.chance(0.2) {
                    taps.push((ALICE, pick));
                }
                if rng.chance(0.15) {
                    taps.push((BOB, options[rng.range(0, options.len() as u64) as usize]));
                }
            } else if let Some(b) = approve {
                if !done.insert(format!("a:{}", b.1)) {
                    continue;
                }
                taps.push((ALICE, b));
                if m.text.contains("of 2 approvals") || rng.chance(0.3) {
                    taps.push((BOB, b));
                }
            } else if let Some(b) = run {
                if !done.insert(format!("r:{}", b.1)) {
                    continue;
                }
                if rng.chance(0.3) {
                    taps.push((BOB, b));
                }
            }
            let mut log = ctx.log();
            for (user, (label, value, cb)) in taps {
                let n = log.slack_taps.len();
                log.slack_taps.push(SlackTap {
                    envelope: format!("chaos-{n}"),
                    user: user.to_string(),
                    ts: m.ts.clone(),
                    value: value.clone(),
                    item: cb.id.clone(),
                    label: matches!(cb.verb, Verb::Option(_)).then(|| label.clone()),
                    sent: 0,
                    last_sent: None,
                    connection: 0,
                });
            }
        }
        tokio::time::sleep(rng.ms(50, 200)).await;
    }
}

/// How long Slack waits for an envelope's acknowledgement before it sends
/// the envelope again on the same connection.
const REDELIVER: Duration = Duration::from_secs(3);

/// Slack's side of Socket Mode: every tap is sent on the connection open
/// at the moment, and sent again — on a newer connection at once, on the
/// same one after [`REDELIVER`] — until the daemon acknowledges it;
/// until `done`.
pub async fn postman(
    ctx: Ctx,
    slack: FakeSlack,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if !slack.connected() {
            continue;
        }
        let connection = slack.connections();
        let acked: HashSet<String> = slack.acks().into_iter().collect();
        let mut log = ctx.log();
        for (n, tap) in log.slack_taps.iter_mut().enumerate() {
            let due = !acked.contains(&tap.envelope)
                && (tap.sent == 0
                    || tap.connection != connection
                    || tap.last_sent.is_some_and(|t| t.elapsed() >= REDELIVER));
            if due && slack.try_send(tap.frame(n)) {
                tap.sent += 1;
                tap.last_sent = Some(Instant::now());
                tap.connection = connection;
            }
        }
    }
}

/// Slack's weather: now and then a burst of 429s (Retry-After 1 s) on
/// posts, updates and history reads, 5xx answers for a moment, slow
/// answers, or the websocket closed from Slack's side.
pub async fn weather(ctx: Ctx, slack: FakeSlack, mut rng: Rng) {
    let methods = ["chat.postMessage", "chat.update", "conversations.history"];
    while !ctx.stopped() {
        tokio::time::sleep(rng.ms(700, 3000)).await;
        match rng.range(0, 4) {
            0 => {
                for _ in 0..rng.range(1, 4) {
                    for m in methods {
                        slack.fault(m, Fault::RateLimit(1));
                    }
                }
            }
            1 => {
                for _ in 0..rng.range(1, 4) {
                    for m in methods {
                        slack.fault(m, Fault::ServerError);
                    }
                }
            }
            2 => {
                // Posts and updates Slack applies at once and answers
                // late: a kill in between leaves a message whose `ts` was
                // never saved, or a change not known to be drawn. (Not
                // applied late: Slack applies a call when it receives it,
                // so a dead daemon's call never lands after a newer one.)
                for _ in 0..rng.range(1, 4) {
                    slack.fault("chat.postMessage", Fault::Late(rng.ms(300, 1500)));
                    slack.fault("chat.update", Fault::Late(rng.ms(300, 1500)));
                }
                slack.fault("conversations.history", Fault::Slow(rng.ms(200, 1200)));
            }
            _ => slack.drop_socket(),
        }
        ctx.log().slack_weather += 1;
    }
}

/// The envelopes not yet acknowledged.
pub fn unacked(ctx: &Ctx, slack: &FakeSlack) -> usize {
    let acked: HashSet<String> = slack.acks().into_iter().collect();
    ctx.log()
        .slack_taps
        .iter()
        .filter(|t| !acked.contains(&t.envelope))
        .count()
}

/// Which daemon process posted each message: the epoch in its bot token.
pub fn epochs(slack: &FakeSlack) -> HashMap<String, u64> {
    slack
        .messages(CHANNEL)
        .into_iter()
        .map(|m| {
            let epoch = m
                .token
                .strip_prefix("xoxb-E")
                .and_then(|e| e.parse().ok())
                .unwrap_or(0);
            (m.ts, epoch)
        })
        .collect()
}
