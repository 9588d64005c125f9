//! The Slack half of the invariants, in a round with Slack on: every tap
//! taken (acknowledged) and each "Recorded" note backed by a history row
//! of its own, every Slack answer in a history written by a tap; and one
//! message per item in the channel — exactly one, with no allowance for
//! a daemon killed mid-post (the sender finds what Slack already shows),
//! the one its record names, drawn in the item's final state.

use std::collections::{HashMap, HashSet};

use handoff::store::questions::ReplyRecord;

use super::super::raw::Raw;
use super::super::slack::{CHANNEL, epochs};
use super::super::{Ctx, Log};
use super::chat::{Item, expected_view, items};
use super::{Floors, Tally};
use crate::common::fake_slack::FakeSlack;

/// Slack's part of `no_lost_answer`: every tap acknowledged; per
/// (question, user, label), no more "Recorded" notes than history rows,
/// and no more rows than deliveries of its taps. Why deliveries, not taps
/// (as for Telegram's updates): a daemon killed after a tap's write and
/// before its claim is marked done leaves the claim stale, and the next
/// delivery applies the tap again — the same answer by the same person.
pub fn answers(
    t: &mut Tally,
    log: &Log,
    history_of: &HashMap<String, Vec<ReplyRecord>>,
    slack: &FakeSlack,
    floors: &mut Floors,
) -> String {
    let acked: HashSet<String> = slack.acks().into_iter().collect();
    type Key = (String, String, String);
    // Labels are unique per question: a note names its question.
    let question_of: HashMap<&str, &str> = log
        .slack_taps
        .iter()
        .filter_map(|tap| Some((tap.label.as_deref()?, tap.item.as_str())))
        .collect();
    let mut taps: HashMap<Key, usize> = HashMap::new();
    let (mut redelivered, mut option_taps) = (0, 0);
    for tap in &log.slack_taps {
        t.check(acked.contains(&tap.envelope), || {
            format!(
                "Slack tap {} ({} sent {} time(s)) was never acknowledged",
                tap.envelope, tap.user, tap.sent
            )
        });
        if tap.sent > 1 {
            redelivered += 1;
        }
        if let Some(label) = &tap.label {
            option_taps += 1;
            let key = (
                tap.item.clone(),
                format!("slack:{}", tap.user),
                label.clone(),
            );
            *taps.entry(key).or_default() += tap.sent.max(1) as usize;
        }
    }
    let mut rows: HashMap<Key, usize> = HashMap::new();
    for (id, h) in history_of {
        for r in h.iter().filter(|r| r.by.starts_with("slack:")) {
            if let Some(text) = &r.reply {
                *rows
                    .entry((id.clone(), r.by.clone(), text.clone()))
                    .or_default() += 1;
            }
        }
    }
    let mut notes: HashMap<Key, usize> = HashMap::new();
    let mut recorded = 0;
    for (channel, user, text) in slack.ephemeral() {
        let Some(label) = text.strip_prefix("Recorded: ") else {
            continue;
        };
        recorded += 1;
        t.check(channel == CHANNEL, || {
            format!("a note to {user} in {channel}, not in {CHANNEL}")
        });
        let Some(q) = question_of.get(label) else {
            t.check(false, || {
                format!("{user} was told {text:?}, a label nobody tapped in Slack")
            });
            continue;
        };
        *notes
            .entry((q.to_string(), format!("slack:{user}"), label.to_string()))
            .or_default() += 1;
    }
    for (key, n) in &notes {
        let have = rows.get(key).copied().unwrap_or(0);
        t.check(*n <= have, || {
            format!("{} was told \"Recorded: {}\" {n} time(s) on question {}, but {have} history row(s) hold it", key.1, key.2, key.0)
        });
    }
    for (key, n) in &rows {
        let tapped = taps.get(key).copied().unwrap_or(0);
        t.check(*n <= tapped, || {
            format!(
                "question {}: {n} Slack answer(s) {:?} by {}, from {tapped} delivery(ies) of its taps",
                key.0, key.2, key.1
            )
        });
    }
    floors.at_least("Slack option taps", option_taps, 1);
    floors.at_least("Slack taps told \"Recorded\"", recorded, 1);
    format!(
        "; {} Slack taps, {option_taps} on options, all acknowledged ({redelivered} sent again), {recorded} told \"Recorded\" and found in history",
        log.slack_taps.len()
    )
}

/// The item a Slack message shows, by the `#shortid` tag in its text.
fn tagged<'a>(text: &str, short: &HashMap<&str, &'a str>) -> Option<&'a str> {
    text.match_indices('#').find_map(|(i, _)| {
        let s: String = text[i + 1..].chars().take(8).collect();
        short.get(s.as_str()).copied()
    })
}

/// Every item's records in Slack: (item id) → (channel, ts, drawn).
async fn records(pool: &Raw) -> HashMap<String, Vec<(String, String, String)>> {
    let rows: Vec<(String, String, String, String)> = pool
        .all(
            "SELECT item_id, channel, ts, drawn FROM slack_messages",
            &[],
        )
        .await;
    let mut of: HashMap<String, Vec<(String, String, String)>> = HashMap::new();
    for (id, channel, ts, drawn) in rows {
        of.entry(id).or_default().push((channel, ts, drawn));
    }
    of
}

/// Items that must still get their Slack message: live, with no posted
/// record (for `settle`).
pub async fn unposted(pool: &Raw) -> usize {
    let records = records(pool).await;
    items(pool)
        .await
        .iter()
        .filter(|i| i.live())
        .filter(|i| {
            !records
                .get(&i.id)
                .into_iter()
                .flatten()
                .any(|(_, ts, _)| !ts.is_empty())
        })
        .count()
}

/// Exactly one message per item in the channel: every live item has one
/// posted record and the channel shows it once, as that record names
/// (drawn in the item's final state); an item settled before it was
/// posted has no message at all. Never two, from any daemon process.
pub async fn message_per_item(
    pool: &Raw,
    slack: &FakeSlack,
    ctx: &Ctx,
    reply_of: &HashMap<String, Option<String>>,
    floors: &mut Floors,
) -> Tally {
    let mut t = Tally::new("slack_message_per_item");
    let items: Vec<Item> = items(pool).await;
    let records = records(pool).await;
    let msgs = slack.messages(CHANNEL);
    let epoch_of = epochs(slack);
    let short: HashMap<&str, &str> = items
        .iter()
        .map(|i| (&i.id[i.id.len() - 8..], i.id.as_str()))
        .collect();
    let mut shown: HashMap<&str, Vec<&crate::common::fake_slack::Msg>> = HashMap::new();
    for m in &msgs {
        let id = tagged(&m.text, &short);
        t.check(id.is_some(), || {
            format!("Slack message {} names no item: {:?}", m.ts, m.text)
        });
        if let Some(id) = id {
            shown.entry(id).or_default().push(m);
        }
    }
    let (mut posted, mut never) = (0, 0);
    for item in &items {
        let (kind, id) = (&item.kind, item.id.as_str());
        let recs = records.get(id).cloned().unwrap_or_default();
        let ms = shown.get(id).cloned().unwrap_or_default();
        t.check(ms.len() <= 1, || {
            let by: Vec<(String, u64)> = ms
                .iter()
                .map(|m| (m.ts.clone(), epoch_of.get(&m.ts).copied().unwrap_or(0)))
                .collect();
            format!(
                "{kind} {id} has {} Slack messages (ts, daemon process): {by:?}",
                ms.len()
            )
        });
        t.check(
            recs.len() <= 1 && recs.iter().all(|r| r.0 == CHANNEL),
            || format!("{kind} {id} has Slack records {recs:?}"),
        );
        let saved = recs.iter().find(|r| !r.1.is_empty());
        match saved {
            Some((_, ts, _)) => {
                posted += 1;
                t.check(!ts.starts_with("digest:"), || {
                    format!("{kind} {id} is in a digest, in a round without digests")
                });
                let m = ms.iter().find(|m| m.ts == *ts);
                t.check(m.is_some(), || {
                    format!("{kind} {id}: its record names Slack message {ts}, which does not show it ({} do)", ms.len())
                });
                if let Some(m) = m {
                    let reply = reply_of.get(id).cloned().flatten();
                    let res = expected_view(item, reply.as_deref(), *m);
                    t.check(res.is_ok(), || format!("in Slack: {}", res.unwrap_err()));
                }
            }
            None => {
                never += 1;
                t.check(!item.live(), || {
                    format!(
                        "{kind} {id} is {} and has no Slack message recorded ({recs:?})",
                        item.status
                    )
                });
                t.check(ms.is_empty(), || {
                    format!("{kind} {id}: Slack shows it ({}) but no record names the message ({recs:?})", ms[0].ts)
                });
            }
        }
    }
    let senders: HashSet<u64> = epoch_of.values().copied().collect();
    floors.at_least("items posted to Slack", posted, 1);
    if ctx.daemons.lock().unwrap().len() == 1 {
        floors.at_least("daemon processes that posted to Slack", senders.len(), 2);
    }
    t.note = format!(
        "({} items: {posted} with their one Slack message, {never} settled before they were posted; {} messages in {CHANNEL}, posted by {} daemon processes; {} history reads for posts a kill interrupted)",
        items.len(),
        msgs.len(),
        senders.len(),
        slack.calls("conversations.history").len()
    );
    t
}
