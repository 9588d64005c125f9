//! A post interrupted by a crash, found again: every item message carries
//! metadata naming its item and channel ([`Tag`]), so a sender that finds a
//! post marked under way looks for its message in the channel's history
//! before posting, and an item is never shown twice in one channel.

use std::time::Duration;

use slack_morphism::prelude::*;

use super::Slack;
use super::send::{Called, DrawError, Tag};
use crate::chat::view::Meta;
use crate::store::slack::SlackRecord;

/// How far before a post was marked under way its message is looked for
/// (Slack's clock and ours may differ a little).
const HISTORY_SLACK_MS: i64 = 5 * 60 * 1000;

/// How long after a post was marked under way the channel is first
/// searched for it: by then a post Slack received is in the channel.
const LANDED_MS: i64 = 5_000;

/// Messages per page of a channel's history, and pages read at most, when
/// looking for a post under way: its message is among the newest.
const HISTORY_PAGE: u16 = 200;
const HISTORY_PAGES: usize = 5;

/// A `ts` ("seconds.micros") as a number pair, for ordering.
fn ts_order(ts: &str) -> (u64, u64) {
    let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
    (s.parse().unwrap_or(0), f.parse().unwrap_or(0))
}

impl Slack {
    /// A record left under way by a sender that died (or whose call
    /// failed) may stand for a message Slack has: if it is found, it is
    /// this item's message (saved at once, as drawing nothing yet, so a
    /// failing update does not send the next draw searching again) and no
    /// second one is posted. `None`: nothing left to draw (not found, and
    /// the item needs no message now).
    pub(super) async fn settle_sending(
        &self,
        tag: &Tag<'_>,
        record: SlackRecord,
        m: &Meta,
    ) -> Result<Option<SlackRecord>, DrawError> {
        let SlackRecord::Sending { since } = record else {
            return Ok(Some(record));
        };
        let (kind, ops) = (tag.item.as_str(), &self.bridge.ops);
        match self.find_post(tag, since).await? {
            Some(ts) => {
                ops.slack_save_message(kind, tag.id, tag.channel, &ts, "")
                    .await?;
                Ok(Some(SlackRecord::Posted {
                    ts,
                    drawn: String::new(),
                }))
            }
            None if !m.live || m.quiet => {
                ops.slack_not_sending(kind, tag.id, tag.channel).await?;
                Ok(None)
            }
            None => Ok(Some(SlackRecord::Sending { since })),
        }
    }

    /// The message a post under way since `since` (ms) left in the
    /// channel, found by its metadata in the channel's history from a
    /// little before then. An error when the history cannot be read: then
    /// nothing is posted, and the record waits for the next draw.
    pub(super) async fn find_post(
        &self,
        tag: &Tag<'_>,
        since: i64,
    ) -> Result<Option<String>, DrawError> {
        // Why wait: a post Slack received just before its sender died may
        // still be on its way into the channel.
        let early = since + LANDED_MS - self.bridge.ops.now();
        if early > 0 {
            tokio::select! {
                _ = self.cancel.cancelled() => return Err(DrawError::Slack("shutting down".into())),
                _ = tokio::time::sleep(Duration::from_millis(early as u64)) => {}
            }
        }
        let oldest = (since - HISTORY_SLACK_MS).max(0);
        let mut req = SlackApiConversationsHistoryRequest::new()
            .with_channel(tag.channel.to_string().into())
            .with_oldest(format!("{}.{:06}", oldest / 1000, (oldest % 1000) * 1000).into())
            .with_limit(HISTORY_PAGE)
            .with_include_all_metadata(true);
        let mut found: Option<String> = None;
        for _ in 0..HISTORY_PAGES {
            let page = match self
                .call("conversations.history", tag.channel, || async {
                    self.session().conversations_history(&req).await
                })
                .await
            {
                Called::Done(page) => page,
                Called::Gone => return Err(DrawError::Slack("channel not found".into())),
                Called::Failed(e) => return Err(DrawError::Slack(e)),
            };
            for msg in &page.messages {
                let ts = &msg.origin.ts.0;
                if tag.names(msg.content.metadata.as_ref())
                    && found.as_ref().is_none_or(|f| ts_order(ts) < ts_order(f))
                {
                    found = Some(ts.clone());
                }
            }
            let next = page
                .response_metadata
                .and_then(|m| m.next_cursor)
                .filter(|c| !c.0.is_empty());
            match next {
                Some(c) if page.has_more.unwrap_or(false) => req = req.with_cursor(c),
                _ => break,
            }
        }
        match &found {
            Some(ts) => {
                tracing::info!(item = %tag.item, id = tag.id, ts, "found the Slack message a post under way left; not posting again")
            }
            None => {
                tracing::info!(item = %tag.item, id = tag.id, "a post under way left no Slack message; posting it")
            }
        }
        Ok(found)
    }
}
