//! The one digest rule, for bursts and for quiet hours alike, in private
//! chats, groups and forum topics: items are counted and digested per
//! destination — a chat and its forum topic ([`Dest`]).
//!
//! - A burst: when more than `digest_threshold` items become due to be
//!   pushed to one destination within `digest_window_secs`, the first
//!   `digest_threshold` go out as their own messages and every later one
//!   waits (a durable `burst` record) until the window has passed since the
//!   first of them; then they go out together as one digest message.
//! - Quiet hours: the items that waited them out go out as one digest per
//!   destination when they end.
//!
//! Either way an item is shown once per destination: a digest of one item
//! is that item's own message (with its buttons); a longer one lists the
//! items (no buttons: `/answer`, `/list`) and covers them for good — each
//! record moves from waiting to `digest` only once the digest is sent, so a
//! waiting item is never also sent on its own. This file does not decide
//! which items wait for quiet hours or a grace period (`hold`).
//!
//! The rule, the recent pushes it counts ([`Bursts`]) and the digest's
//! text are every network's: Slack counts per channel with them
//! (`slack::burst`), Telegram per chat and forum topic here.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Mutex;

use teloxide::prelude::*;
use teloxide::types::{MessageId, ParseMode, ThreadId};

use super::Bridge;
use super::callback::Item;
use super::network::Network;
use super::push::title;
use super::retry::{Failure, classify};
use super::view::truncate;
use crate::ops::Local;
use crate::store::chat::Hold;
use crate::store::short_id;

/// Where items go: a chat, and its forum topic if any.
pub(crate) type Dest = (i64, Option<i32>);

/// How long a digest that could not be sent waits before it is tried again.
const DIGEST_RETRY_MS: i64 = 5_000;

/// Why several items go out as one digest message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum DigestKind {
    /// Many arrived at once (`digest_threshold` within `digest_window_secs`).
    Burst,
    /// They waited out the chat's quiet hours.
    Quiet,
}

impl DigestKind {
    /// The waiting record a digest of this kind covers.
    pub(crate) fn hold(self) -> Hold {
        match self {
            DigestKind::Burst => Hold::Burst,
            DigestKind::Quiet => Hold::Quiet,
        }
    }
}

/// The recent pushes of one destination.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    /// When each push of the last window became due (ms), oldest first.
    at: VecDeque<i64>,
    /// When the digest now collecting this burst's items goes out (ms).
    open: Option<i64>,
}

/// The burst rule on one destination's recent pushes: a push due at `at`
/// (ms; read at `now`) is counted, and is `None` (push it now) or the time
/// its digest goes out. Pure, so it is tested on its own.
pub(crate) fn burst_rule(
    recent: &mut Recent,
    at: i64,
    now: i64,
    threshold: usize,
    window: i64,
) -> Option<i64> {
    while recent.at.front().is_some_and(|t| at - *t > window) {
        recent.at.pop_front();
    }
    recent.at.push_back(at);
    if recent.at.len() <= threshold {
        return None;
    }
    // Joins the digest collecting now, unless that went out already.
    let due = match recent.open {
        Some(due) if due > now => due,
        _ => now + window,
    };
    recent.open = Some(due);
    Some(due)
}

/// The recent pushes of every destination of one network (a Telegram
/// chat and topic, a Slack channel), for the burst rule.
#[derive(Debug)]
pub(crate) struct Bursts<K>(Mutex<HashMap<K, Recent>>);

impl<K> Default for Bursts<K> {
    fn default() -> Self {
        Bursts(Mutex::new(HashMap::new()))
    }
}

impl<K: Eq + Hash> Bursts<K> {
    /// [`burst_rule`] on `dest`'s recent pushes: a push due at `at` (ms;
    /// read at `now`) goes out now (`None`) or waits for its digest, due
    /// at the time returned.
    pub(crate) fn due(
        &self,
        dest: K,
        (at, now): (i64, i64),
        threshold: usize,
        window_secs: u64,
    ) -> Option<i64> {
        let window = (window_secs * 1000) as i64;
        // A std Mutex: never held across an await.
        let mut bursts = self.0.lock().expect("bursts lock poisoned");
        burst_rule(bursts.entry(dest).or_default(), at, now, threshold, window)
    }
}

/// One digest message for items that waited together, in Telegram's HTML
/// (Slack's adapter turns it into mrkdwn); what it says to do with them
/// depends on the `network` (Slack has no `/answer`).
pub(crate) async fn digest_text(
    ops: &Local,
    items: &[(Item, String)],
    kind: DigestKind,
    network: Network,
) -> String {
    let why = match kind {
        DigestKind::Burst => format!("📬 <b>{} new items</b> arrived at once.", items.len()),
        DigestKind::Quiet => format!(
            "🌙 <b>{} items</b> waited for the end of quiet hours and still need you.",
            items.len()
        ),
    };
    let how = match network {
        Network::Telegram => "Answer with /answer &lt;id&gt; text; /list shows them all.",
        Network::Slack => "Answer them in the Inbox, where each has its buttons.",
    };
    let mut t = format!("{why} {how}\n");
    for (item, id) in items.iter().take(60) {
        if let Some(title) = title(ops, *item, id).await {
            t.push_str(&format!("\n<code>{}</code> {title}", short_id(id)));
        }
    }
    if items.len() > 60 {
        t.push_str(&format!("\n… and {} more", items.len() - 60));
    }
    t
}

impl Bridge {
    /// Whether an item due to be pushed to `dest` at `at` (ms) goes out now
    /// (`None`) or waits for its burst's digest, until the time returned.
    /// Counted by when items became due, not by when they are sent, so a
    /// burst is seen as one even when flood control makes the sends slow.
    pub(super) fn burst_due(&self, dest: Dest, at: i64) -> Option<i64> {
        let t = &self.config.telegram;
        let now = self.ops.now();
        self.bursts
            .due(dest, (at, now), t.digest_threshold, t.digest_window_secs)
    }

    /// Send the items that waited together for `dest` (their records still
    /// waiting as `kind`): one item as its own message, several as one
    /// digest. A digest that cannot go out now waits a little and is tried
    /// again; one Telegram refuses for good lets each item go on its own.
    pub(super) async fn send_digest(
        &self,
        dest: Dest,
        mut items: Vec<(Item, String)>,
        kind: DigestKind,
    ) {
        let (chat_id, topic) = dest;
        if items.len() == 1 {
            let (item, id) = items.remove(0);
            return self.let_out(item, &id, dest).await;
        }
        let text = digest_text(&self.ops, &items, kind, Network::Telegram).await;
        let mut req = self
            .bot
            .send_message(ChatId(chat_id), truncate(&text))
            .parse_mode(ParseMode::Html);
        if let Some(t) = topic {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        let err = match req.await {
            Ok(msg) => {
                for (item, id) in &items {
                    if let Err(e) = self
                        .ops
                        .chat_digested(item.as_str(), id, chat_id, msg.id.0)
                        .await
                    {
                        tracing::warn!(error = %e, item = %item, id = %id, "cannot record a digest entry");
                    }
                }
                return;
            }
            Err(e) => e,
        };
        match classify(&err) {
            // Sent, but with no message id to keep: covered all the same.
            Failure::Unconfirmed | Failure::NotModified => {
                for (item, id) in &items {
                    if let Err(e) = self.ops.chat_digested(item.as_str(), id, chat_id, 0).await {
                        tracing::warn!(error = %e, item = %item, id = %id, "cannot record a digest entry");
                    }
                }
            }
            Failure::Retry(e) => {
                tracing::warn!(chat_id, error = %e, "digest not sent; trying again shortly");
                let due = self.ops.now() + DIGEST_RETRY_MS;
                for (item, id) in &items {
                    if let Err(e) = self
                        .ops
                        .chat_hold_again(item.as_str(), id, chat_id, (kind.hold(), due), None)
                        .await
                    {
                        tracing::warn!(error = %e, item = %item, id = %id, "cannot put a digest entry back to wait");
                    }
                }
            }
            Failure::Gone(e) | Failure::Permanent(e) => {
                tracing::warn!(chat_id, error = %e, "digest refused; sending its items one by one");
                for (item, id) in items {
                    self.let_out(item, &id, dest).await;
                }
            }
        }
    }

    /// A waiting push goes out as its own message now, in `dest`'s topic.
    pub(super) async fn let_out(&self, item: Item, id: &str, dest: Dest) {
        let (chat_id, topic) = dest;
        match self
            .ops
            .chat_release(item.as_str(), id, chat_id, topic)
            .await
        {
            Ok(true) => self.kick((item, id.to_string(), chat_id)),
            Ok(false) => {} // let out already
            Err(e) => {
                tracing::warn!(error = %e, item = %item, id = %id, "cannot let a waiting chat push out; it goes at the next look");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_the_threshold_items_wait_for_one_digest_per_window() {
        let mut r = Recent::default();
        // (due at, read at) → pushed now (None) or the digest's time.
        let cases: &[(i64, i64, Option<i64>)] = &[
            (0, 0, None),
            (10, 10, None),
            (20, 20, None),
            (30, 30, Some(1030)),    // the 4th within the window opens a digest
            (40, 40, Some(1030)),    // and the 5th joins it
            (900, 1100, Some(2100)), // the digest went out: a new one opens
            (5000, 5000, None),      // the window emptied: pushed at once
        ];
        for &(at, now, want) in cases {
            assert_eq!(burst_rule(&mut r, at, now, 3, 1000), want, "at {at}");
        }
    }

    #[test]
    fn items_due_long_ago_still_wait_a_window_from_now() {
        let mut r = Recent::default();
        for at in 0..3 {
            assert_eq!(burst_rule(&mut r, at, 60_000, 3, 1000), None);
        }
        assert_eq!(burst_rule(&mut r, 3, 60_000, 3, 1000), Some(61_000));
    }
}
