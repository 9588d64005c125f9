//! Pushes to Slack channels under the one digest rule (`chat::digest`,
//! `docs/design.md` §8): a new item, or an escalation step's push, goes to
//! its channel at once unless more than `[slack] digest_threshold` items
//! became due there within `digest_window_secs`; then it waits (a durable
//! record in the channel, `store::slack`) and goes out with the others of
//! its burst as one digest message when the window has passed. Each item is
//! shown once per channel: as its own message, or in a digest for good.
//!
//! Not here: drawing an item's own message (`send`), and the rule itself
//! (`chat::digest`, shared with Telegram).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::Slack;
use super::send::DrawError;
use crate::chat::Item;
use crate::chat::digest::{DigestKind, digest_text};
use crate::chat::network::Network;
use crate::chat::push::meta;
use crate::chat::view::View;
use crate::store::Event;
use crate::store::slack::SlackWaiting;

/// How long a digest that could not be sent waits before it is tried again.
const DIGEST_RETRY_MS: i64 = 5_000;

/// The longest the release task sleeps with nothing due (the wall clock
/// may jump).
const IDLE: Duration = Duration::from_secs(60);

impl Slack {
    /// A new item (due at `at`, ms): pushed to its routed channel, or left
    /// waiting there for its burst's digest.
    pub(super) async fn push(&self, item: Item, id: &str, at: i64) -> crate::ops::Result<()> {
        let Some(m) = meta(&self.bridge.ops, item, id).await? else {
            return Ok(());
        };
        let Some(channel) = self.bridge.config.slack.channel_for(&m.project) else {
            return Ok(());
        };
        if !m.live || m.quiet {
            return Ok(()); // nothing to show: never posted (see `send`)
        }
        self.push_in(item, id, at, &channel.id.clone()).await
    }

    /// An escalation step fired: a step naming a Slack channel pushes the
    /// action there (once per channel, like any push), while it waits.
    pub(super) async fn on_escalated(&self, ev: &Event) -> crate::ops::Result<()> {
        let Some(channel) = ev.payload["slack"].as_str() else {
            return Ok(());
        };
        if self.bridge.config.slack.channel(channel).is_none() {
            tracing::warn!(action_id = %ev.entity_id, channel, "escalation to a Slack channel no longer configured: not pushed");
            return Ok(());
        }
        match meta(&self.bridge.ops, Item::Action, &ev.entity_id).await? {
            Some(m) if m.live && !m.quiet => {
                self.push_in(Item::Action, &ev.entity_id, ev.at, channel)
                    .await
            }
            _ => Ok(()),
        }
    }

    /// Record the push of an item to `channel`: owed its post, or waiting
    /// for its burst's digest. A replayed event (the item has a record
    /// there) changes nothing and is not counted again.
    async fn push_in(
        &self,
        item: Item,
        id: &str,
        at: i64,
        channel: &str,
    ) -> crate::ops::Result<()> {
        let ops = &self.bridge.ops;
        let kind = item.as_str();
        if ops.slack_message(kind, id, channel).await?.is_some() {
            return Ok(());
        }
        let cfg = &self.bridge.config.slack;
        let now = ops.now();
        let due = self.bursts.due(
            channel.to_string(),
            (at, now),
            cfg.digest_threshold,
            cfg.digest_window_secs,
        );
        match due {
            None => {
                ops.slack_owe_post(kind, id, channel).await?;
            }
            Some(due) => {
                if ops.slack_wait(kind, id, channel, due).await? {
                    self.held.notify_one();
                }
            }
        }
        Ok(())
    }

    /// The task sending bursts' digests as they fall due, until `stop`
    /// (shutdown, or the end of this daemon's stint as the Slack sender).
    pub(super) async fn burst_loop(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        loop {
            let wait = match self.release_due().await {
                Ok(Some(due)) => {
                    let ms = (due - self.bridge.ops.now()).clamp(10, IDLE.as_millis() as i64);
                    Duration::from_millis(ms as u64)
                }
                Ok(None) => IDLE,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot release the waiting Slack pushes; retrying");
                    Duration::from_secs(1)
                }
            };
            // Why `held` too: an item that began to wait may be due sooner
            // than what this sleep was computed from.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.held.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Send every burst whose digest is due, per channel; when the next
    /// one is due (ms), if any waits.
    async fn release_due(&self) -> crate::ops::Result<Option<i64>> {
        let now = self.bridge.ops.now();
        let waiting = self.bridge.ops.slack_waiting().await?;
        let next = waiting.iter().map(|w| w.due).find(|due| *due > now);
        let mut due: BTreeMap<String, Vec<SlackWaiting>> = BTreeMap::new();
        for w in waiting.into_iter().filter(|w| w.due <= now) {
            due.entry(w.channel.clone()).or_default().push(w);
        }
        for (channel, items) in due {
            self.send_digest(&channel, items).await?;
        }
        Ok(next)
    }

    /// The items of one channel whose burst is due: those settled meanwhile
    /// are never shown; one goes out as its own message, several as one
    /// digest. A digest Slack cannot take now waits a little; one it
    /// refuses for good lets each item go on its own.
    async fn send_digest(&self, channel: &str, items: Vec<SlackWaiting>) -> crate::ops::Result<()> {
        let ops = &self.bridge.ops;
        let mut live = Vec::new();
        for w in items {
            let item = Item::from_kind(&w.item_kind);
            let m = match item {
                Some(item) => meta(ops, item, &w.item_id).await?,
                None => None,
            };
            match (item, m) {
                (Some(item), Some(m)) if m.live && !m.quiet => live.push((item, w.item_id)),
                _ => {
                    ops.slack_drop_wait(&w.item_kind, &w.item_id, channel)
                        .await?
                }
            }
        }
        if live.len() == 1 {
            return self.let_out(&live, channel).await;
        }
        if live.is_empty() {
            return Ok(());
        }
        let text = digest_text(ops, &live, DigestKind::Burst, Network::Slack).await;
        let view = View {
            text,
            buttons: Vec::new(),
            attachment: None,
        };
        match self.post(channel, &view).await {
            Ok(ts) => {
                for (item, id) in &live {
                    ops.slack_digested(item.as_str(), id, channel, &ts).await?;
                }
            }
            Err(DrawError::Slack(e)) if e.contains("not found") => {
                tracing::warn!(channel, error = %e, "digest refused; posting its items one by one");
                self.let_out(&live, channel).await?;
            }
            Err(e) => {
                tracing::warn!(channel, error = %e, "digest not sent; trying again shortly");
                let again = ops.now() + DIGEST_RETRY_MS;
                for (item, id) in &live {
                    ops.slack_wait_until(item.as_str(), id, channel, again)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Waiting items go out as their own messages in `channel`.
    async fn let_out(&self, items: &[(Item, String)], channel: &str) -> crate::ops::Result<()> {
        for (item, id) in items {
            if self
                .bridge
                .ops
                .slack_release(item.as_str(), id, channel)
                .await?
            {
                self.kick(*item, id);
            }
        }
        Ok(())
    }
}
