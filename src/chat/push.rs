//! Pushing items to chat and keeping their messages true: the chat
//! follower's handling of each event (push a new item once per chat, or
//! let it wait for a grace period, quiet hours or its burst's digest; mark
//! a changed one owed a redraw), the notices the bridge sends,
//! and what a message shows for an item of any kind (dispatching to
//! `question`, `row` and `action` for the drawing itself).
//!
//! The follower never calls Telegram for an item: it kicks the message's own
//! task (`retry`), which sends or edits it from the current state.

use std::sync::Arc;

use teloxide::prelude::*;
use teloxide::types::{MessageId, ThreadId};

use super::action::action_of;
use super::callback::Item;
use super::row::row_of;
use super::text::{cut, esc};
use super::view::{Meta, View, truncate};
use super::{Bridge, Turn, action, question, row};
use crate::config::Config;
use crate::ops::{Local, Ops, Result};
use crate::store::Event;
use crate::store::chat::Hold;
use crate::store::questions::Status;

pub(crate) async fn meta(ops: &Local, item: Item, id: &str) -> Result<Option<Meta>> {
    Ok(match item {
        Item::Question => Ops::Local(ops.clone())
            .get_question(id)
            .await?
            .map(|q| Meta {
                live: q.status == Status::Open,
                quiet: false,
                project: q.project,
                agent: q.agent,
                session: q.session,
                action_kind: None,
            }),
        Item::Row => row::row_meta(ops, id).await?,
        Item::Action => action::action_meta(ops, id).await?,
    })
}

/// The message an item is drawn as now; `None` when it is gone (purged).
pub(crate) async fn view(
    ops: &Local,
    config: &Config,
    item: Item,
    id: &str,
) -> Result<Option<View>> {
    Ok(match item {
        Item::Question => Ops::Local(ops.clone())
            .get_question(id)
            .await?
            .map(|q| question::question(&q)),
        Item::Row => row::row_view(ops, id).await?,
        Item::Action => action::action_view(ops, config, id).await?,
    })
}

/// An item's one-line title for a digest; `None` when it is gone.
pub(crate) async fn title(ops: &Local, item: Item, id: &str) -> Option<String> {
    match item {
        Item::Question => Ops::Local(ops.clone())
            .get_question(id)
            .await
            .ok()
            .flatten()
            .map(|q| format!("❓ {}", esc(&cut(&q.title, 80)))),
        Item::Row => row_of(ops, id).await.ok().flatten().map(|(b, r)| {
            format!(
                "🧱 {} — {}",
                esc(&cut(&b.title, 60)),
                esc(&cut(&r.label, 60))
            )
        }),
        Item::Action => action_of(ops, id)
            .await
            .ok()
            .flatten()
            .map(|a| format!("⚠️ {}: {}", esc(&a.kind), esc(&cut(&a.summary, 80)))),
    }
}

impl Bridge {
    /// Apply one event: claim pushes of new items and mark changed ones,
    /// then kick each message's task (`retry`). Never waits for Telegram;
    /// returns false only when the store failed, so the follower retries it.
    pub(super) async fn on_event(&self, ev: &Event) -> bool {
        if ev.kind == "delivery.dead" {
            return self.tell_wake_dead(ev).await;
        }
        if ev.kind == "action.escalated" {
            return self.on_escalated(ev).await;
        }
        let Some(item) = Item::from_kind(&ev.entity_kind) else {
            return true;
        };
        let is_new = matches!(
            ev.kind.as_str(),
            "question.flagged" | "row.blocked" | "action.proposed"
        );
        let result = if is_new {
            self.push(item, &ev.entity_id, ev.at).await
        } else {
            self.mark_changed(item, &ev.entity_id).await
        };
        // Only the store can fail here (Telegram is called by each
        // message's own task): then the event is applied again later.
        match result {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, seq = ev.seq, "cannot record a chat delivery; will retry");
                false
            }
        }
    }

    /// The item changed: mark its messages durably as owed a redraw, and
    /// kick each message's task.
    pub(crate) async fn mark_changed(&self, item: Item, id: &str) -> Result<(), PushError> {
        for rec in self.ops.chat_mark_dirty(item.as_str(), id).await? {
            self.kick_record(rec);
        }
        Ok(())
    }

    /// Push an item to its routed chat (once per chat: the durable record
    /// makes a replayed event a no-op).
    pub(super) async fn push(&self, item: Item, id: &str, at: i64) -> Result<(), PushError> {
        let Some(meta) = meta(&self.ops, item, id).await? else {
            return Ok(()); // gone (purged) or nothing to show
        };
        if meta.quiet {
            return Ok(());
        }
        if !meta.live && item == Item::Row {
            // A row no longer blocked asks nothing of anyone: nothing to push.
            // Questions and actions are pushed even when they settled before
            // we got to them (during a daemon outage, or decided by a rule):
            // every one of them reaches the chat, drawn in its final state.
            return Ok(());
        }
        let Some(target) =
            self.config
                .route(&meta.project, &meta.agent, meta.action_kind.as_deref())
        else {
            return Ok(());
        };
        self.push_to(item, id, at, &target, &meta, meta.action_kind.as_deref())
            .await
    }

    /// An escalation step fired: every chat that shows the action redraws
    /// it (its card now says where it went), and a chat step pushes it to
    /// its chat — once per chat, like any push, waiting out that chat's
    /// quiet hours. A webhook step is `notify`'s.
    async fn on_escalated(&self, ev: &Event) -> bool {
        let p = &ev.payload;
        let mut result = self.mark_changed(Item::Action, &ev.entity_id).await;
        let chat = p["chat"]
            .as_str()
            .and_then(|name| self.config.telegram.chats.iter().find(|c| c.name == name));
        if let (Ok(()), Some(c)) = (&result, chat) {
            let target = crate::config::Target {
                chat: c.name.clone(),
                chat_id: c.chat_id,
                topic: p["topic"]
                    .as_i64()
                    .and_then(|t| i32::try_from(t).ok())
                    .or(c.topic),
            };
            result = match meta(&self.ops, Item::Action, &ev.entity_id).await {
                // No grace period: the action waited long enough already.
                Ok(Some(m)) if m.live && !m.quiet => {
                    self.push_to(Item::Action, &ev.entity_id, ev.at, &target, &m, None)
                        .await
                }
                Ok(_) => Ok(()),
                Err(e) => Err(e.into()),
            };
        } else if result.is_ok() && p["chat"].is_string() {
            tracing::warn!(action_id = %ev.entity_id, chat = %p["chat"], "escalation to a chat no longer configured: not pushed");
        }
        match result {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, seq = ev.seq, "cannot record an escalation's chat push; will retry");
                false
            }
        }
    }

    /// Push an item to `target` (`kind`: the action kind whose grace
    /// period applies, if any).
    async fn push_to(
        &self,
        item: Item,
        id: &str,
        at: i64,
        target: &crate::config::Target,
        meta: &Meta,
        kind: Option<&str>,
    ) -> Result<(), PushError> {
        let target = target.clone();
        // A replayed event (the cursor is saved per batch): already pushed
        // or waiting, and not counted again towards a burst.
        if self
            .ops
            .chat_message(item.as_str(), id, target.chat_id)
            .await?
            .is_some()
        {
            return Ok(());
        }
        // A grace period or quiet hours: recorded as waiting, released by
        // `hold` when due (the follower moves on meanwhile).
        let now = self.ops.now();
        if let Some((hold, due)) = self.hold_of(&target, kind, at, now) {
            // A topic the target names (a route's, a chat's, an escalation
            // step's) is kept with the wait, so the release uses it.
            if self
                .ops
                .chat_hold_in(item.as_str(), id, target.chat_id, target.topic, hold, due)
                .await?
            {
                self.held.notify_one();
            }
            return Ok(());
        }
        let topic = self.topic_for(&target, meta).await;
        // Beyond the digest threshold: waits, durably, for its burst's
        // digest (`digest`), released by the `hold` task.
        if let Some(due) = self.burst_due((target.chat_id, topic), at) {
            if self
                .ops
                .chat_hold_in(item.as_str(), id, target.chat_id, topic, Hold::Burst, due)
                .await?
            {
                self.held.notify_one();
            }
            return Ok(());
        }
        if !self
            .ops
            .chat_begin_send(item.as_str(), id, target.chat_id, topic, "sending")
            .await?
        {
            return Ok(()); // already pushed (or in flight) in that chat
        }
        // Sent by the message's own task: a slow or failing send delays
        // nothing else.
        self.kick((item, id.to_string(), target.chat_id));
        Ok(())
    }

    /// The redraw turn of an item (see `redrawing`).
    pub(super) fn turn(&self, item: Item, id: &str) -> Turn {
        let mut m = self.redrawing.lock().expect("redrawing lock poisoned");
        m.entry((item, id.to_string())).or_default().clone()
    }

    /// Drop the item's turn from the map once nobody else holds or awaits it.
    pub(super) fn end_turn(&self, item: Item, id: &str, turn: &Turn) {
        let mut m = self.redrawing.lock().expect("redrawing lock poisoned");
        // The map and the caller hold it: nobody else waits.
        if Arc::strong_count(turn) == 2 {
            m.remove(&(item, id.to_string()));
        }
    }

    /// A wake-up for an item could not be delivered: say so, as a reply to
    /// the item's message, in every chat that shows it.
    pub(super) async fn tell_wake_dead(&self, ev: &Event) -> bool {
        let records = match self
            .ops
            .chat_messages_of(&ev.entity_kind, &ev.entity_id)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "cannot find the item's chat messages");
                return false;
            }
        };
        let p = &ev.payload;
        let text = format!(
            "⚠️ Could not wake the agent about {} {} ({} via {}): {}",
            ev.entity_kind,
            crate::store::short_id(&ev.entity_id),
            p["event_type"].as_str().unwrap_or("?"),
            p["target"].as_str().unwrap_or("?"),
            p["error"].as_str().unwrap_or("unknown error"),
        );
        let Some(me) = self.me.upgrade() else {
            return true;
        };
        // In a task of its own: a slow or failing notice delays no push.
        self.tracker.spawn(async move {
            for rec in records.iter().filter(|r| r.message_id.is_some()) {
                me.say(rec.chat_id, rec.thread_id, &text).await;
            }
        });
        true
    }

    /// Send a plain text message (command answers, notices).
    pub(crate) async fn say(&self, chat_id: i64, topic: Option<i32>, text: &str) {
        let mut req = self.bot.send_message(ChatId(chat_id), truncate(text));
        if let Some(t) = topic {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        if let Err(e) = req.await {
            tracing::warn!(error = %e, chat_id, "cannot send a chat message");
        }
    }

    /// Show a tap's or reply's outcome: the item's messages are marked as
    /// owed a redraw and each message's own task edits it at once. The
    /// update loop never waits on an edit, so a slow or failing Bot API
    /// call for one message holds up no other tap.
    pub(crate) async fn redraw_quiet(&self, item: Item, id: &str) {
        if let Err(e) = self.mark_changed(item, id).await {
            tracing::warn!(error = %e, "cannot mark a message for redraw");
        }
    }
}

/// The chat worker as an event-log consumer.
pub(super) struct ChatFollower(pub(super) Arc<Bridge>);

impl crate::follow::Apply for ChatFollower {
    const NAME: &'static str = "chat";
    async fn apply(&mut self, ev: &Event) -> bool {
        self.0.on_event(ev).await
    }
    async fn save(&mut self, seq: i64) {
        // A burst's waiting items are durable records (`burst`) by now.
        if let Err(e) = self.0.ops.set_cursor("chat", seq).await {
            tracing::warn!(error = %e, "cannot save the chat cursor");
        }
    }
}

/// Why a push or redraw did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PushError {
    /// Telegram could not be reached or refused.
    #[error("Telegram: {0}")]
    Telegram(#[from] teloxide::RequestError),
    /// An operation failed (the store underneath).
    #[error(transparent)]
    Ops(#[from] crate::ops::Error),
}
