//! Pushing items to Slack and keeping their messages true: the follower on
//! the durable `slack` cursor kicks one task per item, which posts the
//! item's message to its channel (`chat.postMessage`) or updates it in
//! place (`chat.update`), and remembers what it drew.
//!
//! Each item's task is its own: a message Slack refuses or rate-limits
//! waits alone, never holding up another. Kicks that arrive while a task
//! draws are coalesced into one more pass, so a burst of changes to one
//! item is one `chat.update`, not one per change. Not here: what a tap
//! means (the seam, `chat::network`), and Socket Mode (`socket`).

use std::sync::Arc;
use std::time::Duration;

use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

use super::Slack;
use super::blocks::content;
use crate::chat::Item;
use crate::chat::push::{meta, view};
use crate::chat::view::{Meta, View};
use crate::store::events::Event;
use crate::store::slack::SlackRecord;

/// How often one call of a draw is tried (Slack down, a 5xx) before the
/// draw fails (and is tried again after a pause, see `run_slot`).
const ATTEMPTS: u32 = 5;

/// The pause before an item whose draw failed is drawn again, doubled
/// after each failure up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(2);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// The `event_type` of the metadata every item message carries.
const EVENT_TYPE: &str = "handoff_item";

/// Which item a message shows, in which channel: carried in the message's
/// metadata, so a post whose answer was lost can be found again.
pub(super) struct Tag<'a> {
    pub(super) item: Item,
    pub(super) id: &'a str,
    pub(super) channel: &'a str,
}

impl Tag<'_> {
    fn metadata(&self) -> SlackMessageMetadata {
        let payload = [
            ("kind", self.item.as_str()),
            ("id", self.id),
            ("channel", self.channel),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        SlackMessageMetadata::new(EVENT_TYPE.to_string()).with_event_payload(payload)
    }

    /// The view as this item's message: its blocks and its metadata.
    pub(super) fn content(&self, v: &View) -> SlackMessageContent {
        content(v).with_metadata(self.metadata())
    }

    /// Whether a message's metadata names this item in this channel.
    pub(super) fn names(&self, m: Option<&SlackMessageMetadata>) -> bool {
        let Some(m) = m.filter(|m| m.event_type == EVENT_TYPE) else {
            return false;
        };
        let p = m.event_payload.as_ref();
        let is = |k: &str, v: &str| p.and_then(|p| p.get(k)).is_some_and(|x| x == v);
        is("kind", self.item.as_str()) && is("id", self.id) && is("channel", self.channel)
    }
}

/// Why a draw did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DrawError {
    /// An operation failed (the store underneath).
    #[error(transparent)]
    Ops(#[from] crate::ops::Error),
    /// Slack refused or could not be reached, after retries.
    #[error("Slack: {0}")]
    Slack(String),
}

/// What one Web API call came to after its retries.
pub(super) enum Called<T> {
    Done(T),
    /// `chat.update` of a message Slack no longer has.
    Gone,
    Failed(String),
}

impl Slack {
    /// Kick every message left owed (by a sender that died mid-draw, or
    /// whose Slack calls failed).
    pub(crate) async fn resume(&self) {
        match self.bridge.ops.slack_owed().await {
            Ok(owed) => {
                for (kind, id) in owed {
                    if let Some(item) = Item::from_kind(&kind) {
                        self.kick(item, &id);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the owed Slack messages"),
        }
    }

    /// Draw the item's message now, or as soon as its task is free.
    pub(crate) fn kick(&self, item: Item, id: &str) {
        let key = (item, id.to_string());
        {
            // A std Mutex: never held across an await.
            let mut slots = self.slots.lock().expect("slots lock poisoned");
            if let Some(again) = slots.get_mut(&key) {
                *again = true;
                return;
            }
            slots.insert(key.clone(), false);
        }
        let Some(me) = self.me.upgrade() else { return };
        self.tracker.spawn(async move { me.run_slot(key).await });
    }

    /// One item's task: draw, and draw again while kicks came meanwhile;
    /// a draw that failed is tried again after a growing pause.
    async fn run_slot(self: Arc<Self>, key: (Item, String)) {
        let mut pause = RETRY_FIRST;
        loop {
            match self.draw(key.0, &key.1).await {
                // Why before looking at the slot: a change marked after
                // this delete also kicked the slot, so it is drawn again.
                Ok(()) => {
                    pause = RETRY_FIRST;
                    if let Err(e) = self.bridge.ops.slack_paid(key.0.as_str(), &key.1).await {
                        tracing::warn!(error = %e, "cannot clear a drawn Slack message's mark");
                    }
                }
                // Why marked again and retried here: the draw before this
                // one may have cleared the mark of the change this one
                // failed to show, and an item that never changes again
                // (expired, settled) would keep a stale message.
                Err(e) => {
                    tracing::warn!(item = %key.0, id = %key.1, error = %e, "cannot draw the Slack message; trying again");
                    if let Err(e) = self.bridge.ops.slack_owe(key.0.as_str(), &key.1).await {
                        tracing::warn!(error = %e, "cannot mark a Slack message owed a draw");
                    }
                    tokio::select! {
                        _ = self.cancel.cancelled() => {}
                        _ = tokio::time::sleep(pause) => {
                            pause = (pause * 2).min(RETRY_MAX);
                            continue;
                        }
                    }
                }
            }
            let mut slots = self.slots.lock().expect("slots lock poisoned");
            match slots.get_mut(&key) {
                Some(again) if *again && !self.cancel.is_cancelled() => *again = false,
                _ => {
                    slots.remove(&key);
                    return;
                }
            }
        }
    }

    /// Post or update the item's message in every channel it is shown in
    /// (its routed channel, an escalation step's), unless a message already
    /// shows what the item is now. A settled item never gets a new message;
    /// one waiting for its burst's digest, or covered by one, gets none.
    /// One channel failing holds up no other: the last failure is returned.
    async fn draw(&self, item: Item, id: &str) -> Result<(), DrawError> {
        let ops = &self.bridge.ops;
        let Some(m) = meta(ops, item, id).await? else {
            return Ok(());
        };
        let mut records = ops.slack_records_of(item.as_str(), id).await?;
        if let Some(routed) = self.bridge.config.slack.channel_for(&m.project)
            && !records.iter().any(|(c, _)| *c == routed.id)
        {
            // Pushed before its channel had records (or routed anew).
            records.push((routed.id.clone(), SlackRecord::Owed));
        }
        records.retain(|(_, r)| {
            matches!(
                r,
                SlackRecord::Posted { .. } | SlackRecord::Owed | SlackRecord::Sending { .. }
            )
        });
        if records.is_empty() {
            return Ok(());
        }
        let Some(v) = view(ops, &self.bridge.config, item, id).await? else {
            return Ok(());
        };
        let v = v.without_file();
        let mut failed = Ok(());
        for (channel, record) in records {
            if let Err(e) = self.draw_in(item, id, &channel, record, &m, &v).await {
                failed = Err(e);
            }
        }
        failed
    }

    /// Draw the item's message in one channel, as its `record` there says.
    async fn draw_in(
        &self,
        item: Item,
        id: &str,
        channel: &str,
        record: SlackRecord,
        m: &Meta,
        v: &View,
    ) -> Result<(), DrawError> {
        let hash = v.hash();
        let tag = Tag { item, id, channel };
        let Some(record) = self.settle_sending(&tag, record, m).await? else {
            return Ok(());
        };
        let ts = match record {
            SlackRecord::Posted { drawn, .. } if drawn == hash => return Ok(()),
            SlackRecord::Posted { ts, .. } => {
                let req = SlackApiChatUpdateRequest::new(
                    channel.to_string().into(),
                    tag.content(v),
                    ts.clone().into(),
                );
                match self
                    .call("chat.update", channel, || async {
                        self.session().chat_update(&req).await
                    })
                    .await
                {
                    Called::Done(_) => ts,
                    Called::Gone => {
                        tracing::info!(item = %item, id, "the Slack message is gone; posting it again");
                        match self.post_item(&tag, Some(&ts), v).await? {
                            Some(ts) => ts,
                            None => return Ok(()),
                        }
                    }
                    Called::Failed(e) => return Err(DrawError::Slack(e)),
                }
            }
            SlackRecord::Waiting { .. } | SlackRecord::Digest => return Ok(()),
            SlackRecord::Owed | SlackRecord::Sending { .. } if !m.live || m.quiet => {
                return Ok(());
            }
            SlackRecord::Owed => match self.post_item(&tag, Some(""), v).await? {
                Some(ts) => ts,
                None => return Ok(()),
            },
            // Marked under way already, and not found in the channel.
            SlackRecord::Sending { .. } => match self.post_item(&tag, None, v).await? {
                Some(ts) => ts,
                None => return Ok(()),
            },
        };
        self.bridge
            .ops
            .slack_save_message(item.as_str(), id, channel, &ts, &hash)
            .await?;
        Ok(())
    }

    /// Post the item's message in its channel; its `ts`. Unless `from` is
    /// None (marked already), the post is first recorded as under way
    /// from the message `from` (empty: none): None when the record is no
    /// longer that, and nothing was posted.
    async fn post_item(
        &self,
        tag: &Tag<'_>,
        from: Option<&str>,
        v: &View,
    ) -> Result<Option<String>, DrawError> {
        if let Some(from) = from
            && !self
                .bridge
                .ops
                .slack_sending(tag.item.as_str(), tag.id, tag.channel, from)
                .await?
        {
            tracing::debug!(item = %tag.item, id = tag.id, "the Slack record changed meanwhile; not posting");
            return Ok(None);
        }
        let ts = self.post_content(tag.channel, tag.content(v)).await?;
        if crate::fault::on("die-after-slack-post") {
            // FAULT(die-after-slack-post): the daemon dies after Slack
            // answered the post, before its `ts` is saved.
            std::process::abort();
        }
        Ok(Some(ts))
    }

    /// Post a new message (a digest: no item's); its `ts`.
    pub(super) async fn post(&self, channel: &str, v: &View) -> Result<String, DrawError> {
        self.post_content(channel, content(v)).await
    }

    async fn post_content(
        &self,
        channel: &str,
        content: SlackMessageContent,
    ) -> Result<String, DrawError> {
        let req = SlackApiChatPostMessageRequest::new(channel.to_string().into(), content);
        match self
            .call("chat.postMessage", channel, || async {
                self.session().chat_post_message(&req).await
            })
            .await
        {
            Called::Done(r) => Ok(r.ts.0),
            Called::Gone => Err(DrawError::Slack("channel not found".into())),
            Called::Failed(e) => Err(DrawError::Slack(e)),
        }
    }

    /// Tell one person something only they see, in `channel`. Best
    /// effort: what it tells was already recorded.
    pub(crate) async fn tell(&self, channel: &str, user: &str, text: &str) {
        let req = SlackApiChatPostEphemeralRequest::new(
            channel.to_string().into(),
            user.to_string().into(),
            SlackMessageContent::new().with_text(text.to_string()),
        );
        if let Called::Failed(e) = self
            .call("chat.postEphemeral", channel, || async {
                self.session().chat_post_ephemeral(&req).await
            })
            .await
        {
            tracing::warn!(error = %e, "cannot tell a Slack user what happened");
        }
    }

    /// Run one Web API call in `channel` within its method's tier
    /// (`tiers`): a rate limit pauses the method until its `Retry-After`,
    /// a failure to reach Slack or a 5xx is retried with a growing pause;
    /// Slack's refusals are final.
    pub(super) async fn call<T, F, Fut>(&self, method: &str, channel: &str, op: F) -> Called<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = ClientResult<T>>,
    {
        let mut pause = Duration::from_millis(200);
        let mut attempt = 0;
        loop {
            if !self.within_tier(method, channel).await {
                return Called::Failed(format!("{method}: shutting down"));
            }
            attempt += 1;
            let wait = match op().await {
                Ok(r) => return Called::Done(r),
                Err(SlackClientError::RateLimitError(e)) => {
                    let wait = e.retry_after.unwrap_or(Duration::from_secs(1));
                    tracing::info!(
                        method,
                        wait_ms = wait.as_millis() as u64,
                        "Slack rate limit; waiting"
                    );
                    // A rate limit is not a failure: it never uses up
                    // attempts. Every task calling the method waits it out.
                    attempt -= 1;
                    let until = tokio::time::Instant::now() + wait;
                    self.tiers.pause(method, channel, until);
                    Duration::ZERO
                }
                Err(SlackClientError::ApiError(e))
                    if matches!(
                        e.code.as_str(),
                        "message_not_found" | "channel_not_found" | "cant_update_message"
                    ) =>
                {
                    return Called::Gone;
                }
                Err(SlackClientError::ApiError(e)) => {
                    return Called::Failed(format!("{method} refused: {}", e.code));
                }
                Err(e) if attempt >= ATTEMPTS => {
                    return Called::Failed(format!("{method}: {}", crate::one_line(&e)));
                }
                Err(e) => {
                    tracing::debug!(method, error = %crate::one_line(&e), "Slack call failed; retrying");
                    let p = pause;
                    pause = (pause * 2).min(Duration::from_secs(10));
                    p
                }
            };
            tokio::select! {
                _ = self.cancel.cancelled() => return Called::Failed(format!("{method}: shutting down")),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

impl Slack {
    /// Wait until `method` may be called in `channel` (its tier has room
    /// and no `Retry-After` holds it); false when shutting down.
    async fn within_tier(&self, method: &str, channel: &str) -> bool {
        loop {
            let wait = self
                .tiers
                .reserve(method, channel, tokio::time::Instant::now());
            if wait.is_zero() {
                return true;
            }
            tokio::select! {
                _ = self.cancel.cancelled() => return false,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// The Slack sender as an event-log consumer: every change to an item
/// kicks its message's task.
pub(super) struct SlackFollower(pub(super) Arc<Slack>);

impl crate::follow::Apply for SlackFollower {
    const NAME: &'static str = "slack";
    fn reads_payload(&self, kind: &str) -> bool {
        // An escalation step's payload names its Slack channel.
        kind == "action.escalated"
    }
    async fn apply(&mut self, ev: &Event) -> bool {
        let Some(item) = Item::from_kind(&ev.entity_kind) else {
            return true;
        };
        // A new item is pushed to its channel, or waits for its burst's
        // digest; an escalation step may push it to one more (`burst`).
        let pushed = match ev.kind.as_str() {
            "question.flagged" | "row.blocked" | "action.proposed" => {
                self.0.push(item, &ev.entity_id, ev.at).await
            }
            "action.escalated" => self.0.on_escalated(ev).await,
            _ => Ok(()),
        };
        if let Err(e) = pushed {
            tracing::warn!(error = %e, seq = ev.seq, "cannot record a Slack push; will retry");
            return false;
        }
        // Marked before the cursor moves past the change (`docs/design.md`
        // §8): a crash mid-draw leaves the mark for the next sender.
        if let Err(e) = self
            .0
            .bridge
            .ops
            .slack_owe(item.as_str(), &ev.entity_id)
            .await
        {
            tracing::warn!(error = %e, seq = ev.seq, "cannot mark a Slack message owed; will retry");
            return false;
        }
        self.0.kick(item, &ev.entity_id);
        true
    }
    async fn save(&mut self, seq: i64) {
        if let Err(e) = self.0.bridge.ops.set_cursor("slack", seq).await {
            tracing::warn!(error = %e, "cannot save the Slack cursor");
        }
    }
}
