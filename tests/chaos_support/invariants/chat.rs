//! The chat half of the invariants: every question and action shown once
//! per chat and topic it is routed to — as its own card, or listed in one
//! digest when it came in a burst, never both — and its card showing its
//! final state. What the chat must show is written out here, not taken
//! from the code under test.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::super::raw::Raw;
use super::super::{BURST_PROJECTS, CHAT, Ctx, Log};
use super::{Floors, Tally};
use crate::common::chat_msg::ChatMsg;
use crate::common::fake_telegram::{FakeTelegram, Msg};

/// A question or an action, as its row says.
pub struct Item {
    pub kind: String,
    pub id: String,
    pub status: String,
    pub project: String,
}

impl Item {
    /// The chat the harness's config routes it to.
    pub fn chat(&self) -> i64 {
        BURST_PROJECTS
            .iter()
            .find(|(p, _)| *p == self.project)
            .map_or(CHAT, |(_, c)| *c)
    }

    /// Whether it may still change: a card of it must offer buttons.
    pub(super) fn live(&self) -> bool {
        matches!(
            (self.kind.as_str(), self.status.as_str()),
            ("question", "open") | ("action", "pending" | "approved" | "executing")
        )
    }
}

/// Every question and action.
pub async fn items(pool: &Raw) -> Vec<Item> {
    let rows: Vec<(String, String, String, String)> = pool
        .all(
            "SELECT 'question', id, status, project FROM questions
             UNION ALL SELECT 'action', id, status, project FROM actions",
            &[],
        )
        .await;
    rows.into_iter()
        .map(|(kind, id, status, project)| Item {
            kind,
            id,
            status,
            project,
        })
        .collect()
}

/// One item's chat record: (chat, topic, message, status).
type Record = (i64, Option<i64>, Option<i64>, String);

/// A `chat_messages` row: the item's id and its [`Record`].
type Row = (String, i64, Option<i64>, Option<i64>, String);

async fn records(pool: &Raw) -> HashMap<String, Vec<Record>> {
    let rows: Vec<Row> = pool
        .all(
            "SELECT item_id, chat_id, thread_id, message_id, status FROM chat_messages",
            &[],
        )
        .await;
    let mut of: HashMap<String, Vec<Record>> = HashMap::new();
    for (id, chat, thread, message, status) in rows {
        of.entry(id)
            .or_default()
            .push((chat, thread, message, status));
    }
    of
}

/// Whether `m` is a digest (of a burst, or of quiet hours).
fn is_digest(m: &Msg) -> bool {
    m.text.starts_with("📬 <b>") || m.text.starts_with("🌙 <b>")
}

/// The short ids a digest lists (`<code>shortid</code> title` lines).
fn listed(m: &Msg) -> Vec<String> {
    m.text
        .split("<code>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</code>").map(|(s, _)| s.to_string()))
        .collect()
}

/// The item a card draws, by its `#shortid` tag.
fn tagged(m: &Msg) -> Option<String> {
    let is_item = m.text.starts_with("❓ <b>") || m.text.starts_with("⚠️ <b>Approve action");
    if !is_item {
        return None;
    }
    let i = m.text.find("<i>#")?;
    Some(m.text[i + 4..].chars().take(8).collect())
}

/// Short id → id.
fn by_short(items: &[Item]) -> HashMap<&str, &str> {
    items
        .iter()
        .map(|i| (&i.id[i.id.len() - 8..], i.id.as_str()))
        .collect()
}

/// How the chat shows an item: every card of it and every digest
/// listing it, in the chat it is routed to.
#[derive(Default)]
struct Shown<'a> {
    cards: Vec<&'a Msg>,
    digests: Vec<&'a Msg>,
}

fn shown<'a>(items: &[Item], chats: &'a BTreeMap<i64, Vec<Msg>>) -> HashMap<String, Shown<'a>> {
    let short = by_short(items);
    let chat_of: HashMap<&str, i64> = items.iter().map(|i| (i.id.as_str(), i.chat())).collect();
    let mut of: HashMap<String, Shown> = HashMap::new();
    for (chat, msgs) in chats {
        for m in msgs {
            let mut add = |s: &str, digest: bool| {
                let Some(id) = short.get(s) else { return };
                if chat_of.get(id) != Some(chat) {
                    return;
                }
                let e = of.entry(id.to_string()).or_default();
                if digest {
                    e.digests.push(m);
                } else {
                    e.cards.push(m);
                }
            };
            if is_digest(m) {
                for s in listed(m) {
                    add(&s, true);
                }
            } else if let Some(s) = tagged(m) {
                add(&s, false);
            }
        }
    }
    of
}

/// Items (kind, id) the chat does not show as their record says: no
/// record that is sent (with a message the fake holds), digested (in a
/// digest the fake holds) or skipped (settled while it waited).
pub async fn items_without_message(pool: &Raw, fake: &FakeTelegram) -> Vec<String> {
    let items = items(pool).await;
    let records = records(pool).await;
    items
        .iter()
        .filter(|i| {
            !records
                .get(&i.id)
                .into_iter()
                .flatten()
                .any(|(chat, _, m, status)| {
                    match status.as_str() {
                        "sent" => m.is_some_and(|m| fake.message(*chat, m).is_some()),
                        // 0: sent, but Telegram's answer was lost.
                        "digest" => m.is_some_and(|m| m == 0 || fake.message(*chat, m).is_some()),
                        "skipped" => true,
                        _ => false,
                    }
                })
        })
        .map(|i| format!("{} {}", i.kind, i.id))
        .collect()
}

/// Records still on their way to the chat: sending, or waiting (a grace
/// period, quiet hours, a burst's digest).
pub const WAITING: &str = "SELECT COUNT(*) FROM chat_messages
     WHERE status IN ('sending', 'held', 'quiet', 'burst')";

/// What an item's one card must show, given its final state (the texts
/// are the chat's, written out here).
pub(super) fn expected_view(
    item: &Item,
    reply: Option<&str>,
    m: &impl ChatMsg,
) -> Result<(), String> {
    let (kind, id, status) = (&item.kind, &item.id, &item.status);
    let has = |s: &str| m.body().contains(s);
    let buttons: Vec<String> = m.button_list().into_iter().map(|(l, _)| l).collect();
    let want = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{kind} {id} is {status} but its message {} {what}: {:?} {buttons:?}",
                m.name(),
                m.body()
            ))
        }
    };
    match (kind.as_str(), status.as_str()) {
        ("question", "open") => {
            want(
                buttons.iter().any(|b| b.contains("Decline")),
                "has no buttons",
            )?;
            match reply {
                Some("") => Ok(()),
                Some(r) => want(has(&format!("«{r}»")), "does not show the reply"),
                None => want(!has("✅ "), "shows a reply"),
            }
        }
        ("question", "resolved") => {
            want(has("☑️ Resolved") && buttons.is_empty(), "is not resolved")
        }
        ("question", "dismissed") => {
            want(has("🗑 Dismissed") && buttons.is_empty(), "is not dismissed")
        }
        ("action", "executed") => want(has("✔️ Executed") && buttons.is_empty(), "is not executed"),
        ("action", "failed") => want(has("❌ Failed") && buttons.is_empty(), "is not failed"),
        ("action", "rejected") => want(has("🚫 Rejected") && buttons.is_empty(), "is not rejected"),
        ("action", "expired") => want(has("⌛ Expired") && buttons.is_empty(), "is not expired"),
        ("action", "approved") => want(
            has("waiting for its proposer to run it")
                && buttons.iter().any(|b| b.contains("Run now")),
            "does not offer to run it",
        ),
        ("action", "unknown") => want(
            has("❓ Outcome unknown") && buttons.iter().any(|b| b.contains("Mark executed")),
            "does not ask to resolve the unknown outcome",
        ),
        _ => want(false, "is in a state a settled round cannot end in"),
    }
}

/// One message per item: every question and action has exactly one
/// record, in the chat it is routed to, and the chat shows it exactly as
/// that record says — its own card (drawn in its final state, in the
/// record's topic), or one digest listing it, or (settled while it
/// waited for its digest) nothing. Any other showing is allowed only
/// across a daemon kill: a send the killed daemon never saw answered,
/// from a daemon killed before the recorded one was sent. One daemon
/// never shows an item twice — two cards, or a card and a digest.
pub async fn message_per_item(
    pool: &Raw,
    fake: &FakeTelegram,
    ctx: &Ctx,
    log: &Log,
    reply_of: &HashMap<String, Option<String>>,
    last_epoch: u64,
    floors: &mut Floors,
) -> Tally {
    let mut t = Tally::new("chat_message_per_item");
    let items = items(pool).await;
    for m in items_without_message(pool, fake).await {
        t.check(false, || format!("{m} has no chat message"));
    }
    let records = records(pool).await;
    let chats: BTreeMap<i64, Vec<Msg>> = ctx
        .chats()
        .into_iter()
        .map(|(c, _)| (c, fake.messages(c)))
        .collect();
    let shown = shown(&items, &chats);
    let empty = Shown::default();
    let died_before = |epoch: u64, sent: Option<std::time::Instant>| {
        log.killed
            .get(&epoch)
            .is_some_and(|k| sent.is_none_or(|s| *k < s))
    };
    let (mut carded, mut digested, mut skipped, mut extra) = (0, 0, 0, 0);
    let mut per_dest: BTreeMap<(i64, &str), usize> = BTreeMap::new();
    let mut topics: BTreeMap<&str, HashSet<Option<i64>>> = BTreeMap::new();
    for item in &items {
        let (kind, id) = (&item.kind, &item.id);
        let recs = records.get(id).cloned().unwrap_or_default();
        let chat = item.chat();
        let settled = recs
            .iter()
            .filter(|r| matches!(r.3.as_str(), "sent" | "digest" | "skipped"))
            .count();
        t.check(recs.len() == 1 && settled == 1 && recs[0].0 == chat, || {
            format!("{kind} {id} (routed to chat {chat}) has chat records {recs:?}")
        });
        let s = shown.get(id).unwrap_or(&empty);
        let all: Vec<(&Msg, &str)> = s
            .cards
            .iter()
            .map(|m| (*m, "card"))
            .chain(s.digests.iter().map(|m| (*m, "digest")))
            .collect();
        extra += all.len().saturating_sub(1);
        let mut by_epoch: HashMap<u64, Vec<String>> = HashMap::new();
        for (m, what) in &all {
            by_epoch
                .entry(m.epoch)
                .or_default()
                .push(format!("{what} {}", m.message_id));
        }
        for (epoch, msgs) in &by_epoch {
            t.check(msgs.len() == 1, || {
                format!(
                    "{kind} {id}: one daemon process ({epoch}) showed it more than once: {msgs:?}"
                )
            });
        }
        let Some((_, thread, message, status)) = recs.first().filter(|_| recs.len() == 1) else {
            continue;
        };
        // The showing its record names, and when it was sent.
        let recorded: Option<&Msg> = match status.as_str() {
            "sent" => {
                carded += 1;
                *per_dest.entry((chat, "card")).or_default() += 1;
                let m = s
                    .cards
                    .iter()
                    .copied()
                    .find(|m| Some(m.message_id) == *message);
                t.check(m.is_some(), || {
                    format!(
                        "{kind} {id}: its record names card {message:?}, which does not show it"
                    )
                });
                if let Some(m) = m {
                    let reply = reply_of.get(id).cloned().flatten();
                    let res = expected_view(item, reply.as_deref(), m);
                    t.check(res.is_ok(), || res.unwrap_err());
                }
                m
            }
            "digest" => {
                digested += 1;
                *per_dest.entry((chat, "digest")).or_default() += 1;
                let m = s
                    .digests
                    .iter()
                    .copied()
                    .find(|m| Some(m.message_id) == *message);
                // 0: Telegram's answer was lost; the one digest is it.
                let m = m.or_else(|| {
                    (*message == Some(0) && s.digests.len() == 1).then(|| s.digests[0])
                });
                t.check(m.is_some(), || {
                    format!(
                        "{kind} {id}: its record names digest {message:?}, which does not list it"
                    )
                });
                m
            }
            "skipped" => {
                skipped += 1;
                t.check(!item.live(), || {
                    format!("{kind} {id} is {} but its push was skipped", item.status)
                });
                None
            }
            _ => continue,
        };
        if let Some(m) = recorded {
            if chat != CHAT {
                topics
                    .entry(item.project.as_str())
                    .or_default()
                    .insert(*thread);
            }
            t.check(m.thread_id == *thread, || {
                format!(
                    "{kind} {id}: its record's topic is {thread:?}, its message {} is in {:?}",
                    m.message_id, m.thread_id
                )
            });
        }
        // Every other showing: from a daemon killed before the recorded
        // one was sent (for a skipped push: from a daemon that was killed).
        for (o, what) in all
            .iter()
            .filter(|(o, _)| recorded.is_none_or(|m| m.message_id != o.message_id))
        {
            t.check(died_before(o.epoch, recorded.map(|m| m.sent_at)), || match recorded {
                Some(m) => format!(
                    "{kind} {id}: {what} {} from daemon process {} while it was alive beside the one recorded ({}, from process {})",
                    o.message_id, o.epoch, m.message_id, m.epoch
                ),
                None => format!(
                    "{kind} {id}: its push was skipped, yet {what} {} from daemon process {} shows it",
                    o.message_id, o.epoch
                ),
            });
            t.check(*what == "digest" || recorded.is_some(), || {
                format!(
                    "{kind} {id}: its push was skipped, yet card {} shows it",
                    o.message_id
                )
            });
        }
    }
    // A topic per burst project in the forum, none in a private chat.
    let mut threads: HashMap<Option<i64>, &str> = HashMap::new();
    for (project, set) in &topics {
        let dm = BURST_PROJECTS
            .iter()
            .any(|(p, c)| p == project && *c == super::super::DM);
        let ok = if dm {
            set.iter().all(Option::is_none)
        } else {
            set.len() == 1 && set.iter().all(Option::is_some)
        };
        t.check(ok, || {
            format!("project {project}'s items are in topics {set:?}")
        });
        for th in set.iter().filter(|th| th.is_some()) {
            if let Some(other) = threads.insert(*th, project) {
                t.check(false, || {
                    format!("projects {other} and {project} share topic {th:?}")
                });
            }
        }
    }
    for (chat, msgs) in &chats {
        let unowned = msgs
            .iter()
            .filter(|m| tagged(m).is_some_and(|s| !by_short(&items).contains_key(s.as_str())))
            .count();
        t.check(unowned == 0, || {
            format!("{unowned} item messages in chat {chat} name no item")
        });
    }
    floors.at_least("items in chat", items.len(), 1);
    if ctx.bursts {
        for (chat, what) in [
            (super::super::DM, "card"),
            (super::super::DM, "digest"),
            (super::super::FORUM, "card"),
            (super::super::FORUM, "digest"),
        ] {
            let n = per_dest.get(&(chat, what)).copied().unwrap_or(0);
            floors.at_least(&format!("items shown as a {what} in chat {chat}"), n, 1);
        }
    }
    let messages: usize = chats.values().map(Vec::len).sum();
    let by_chat = if ctx.bursts {
        format!(" (by chat: {per_dest:?})")
    } else {
        String::new()
    };
    t.note = format!(
        "({} items: {carded} as their own card, {digested} in a digest{by_chat}, {skipped} settled while they waited; {extra} extra showings, each from a daemon killed before it saw the send answered; {messages} messages in {} chats; the last daemon was epoch {last_epoch})",
        items.len(),
        chats.len()
    );
    t
}
