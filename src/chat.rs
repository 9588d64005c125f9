//! The Telegram bridge: pushes questions, blocked rows and actions to chat,
//! keeps those messages true as the items change, and turns taps, replies
//! and commands into store writes through the *chat* channel.
//!
//! teloxide lives only here. The bridge never decides a race itself: every
//! human input goes through the store's guarded chat-channel functions and
//! the user is told the outcome in words. It wakes no agents, and runs an
//! executor only when an approver taps Run on an approved `--exec` action
//! nobody claimed (`stranded`, through the claim CAS like any executor).

mod callback;
mod handlers;
mod handlers_more;
mod render;
mod render_more;
mod retry;
mod stranded;
mod unparsed;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::Router;
use futures_util::StreamExt;
use teloxide::adaptors::Throttle;
use teloxide::adaptors::throttle::Limits;
use teloxide::prelude::*;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ParseMode, ThreadId};
use teloxide::update_listeners::{Polling, UpdateListener};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{Config, TelegramMode};
use crate::shared::Shared;
use crate::store::{Event, Store};

pub use callback::{Callback, Item, Verb};
pub use retry::permanent_errors;
pub use unparsed::unparsed_updates;

/// Errors starting the bridge.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `telegram.api_url` is not a URL.
    #[error("telegram.api_url `{0}` is not a valid URL")]
    ApiUrl(String),
    /// Webhook set-up failed (setWebhook refused, bad URL).
    #[error("cannot set up the Telegram webhook: {0}")]
    Webhook(String),
}

/// The bot as the bridge uses it: flood-controlled by teloxide's throttle,
/// which also waits out `retry_after` and retries.
pub(crate) type TgBot = Throttle<Bot>;

/// What the daemon gets back from [`start`].
pub struct Started {
    /// Routes to merge into the daemon's listener (the webhook, if any).
    pub router: Router,
}

/// Telegram's message length limit, in characters.
pub const MAX_TEXT: usize = 4096;

/// One item's rendering: text and buttons.
#[derive(Debug, Clone)]
pub(crate) struct View {
    pub text: String,
    pub buttons: Vec<Vec<(String, Callback)>>,
}

impl View {
    fn markup(&self) -> InlineKeyboardMarkup {
        InlineKeyboardMarkup::new(self.buttons.iter().map(|row| {
            row.iter()
                .map(|(label, cb)| InlineKeyboardButton::callback(label.clone(), cb.encode()))
                .collect::<Vec<_>>()
        }))
    }

    fn hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(self.text.as_bytes());
        for row in &self.buttons {
            for (l, cb) in row {
                h.update(l.as_bytes());
                h.update(cb.encode().as_bytes());
            }
        }
        format!("{:x}", h.finalize())[..16].to_string()
    }
}

/// Cut `text` to Telegram's limit on a character boundary, saying so.
pub(crate) fn truncate(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT {
        return text.to_string();
    }
    const MARK: &str = "\n… (truncated)";
    let keep = MAX_TEXT - MARK.chars().count();
    let mut s: String = text.chars().take(keep).collect();
    s.push_str(MARK);
    s
}

/// One item's redraw turn.
type Turn = Arc<tokio::sync::Mutex<()>>;

/// The bridge's shared state.
pub(crate) struct Bridge {
    pub store: Store,
    pub config: Arc<Config>,
    pub bot: TgBot,
    /// Recent pushes per chat, for burst detection (a std Mutex: never held
    /// across an await).
    recent: Mutex<HashMap<i64, VecDeque<i64>>>,
    /// Items waiting to go out in the next digest, per chat.
    digest: Mutex<HashMap<i64, Vec<(String, String)>>>,
    /// Prompts waiting for a text reply: (chat, prompt message id) → what the reply means.
    pub prompts: Mutex<HashMap<(i64, i32), handlers::Prompt>>,
    /// One redraw at a time per item (kind, id): a tap's handler and the
    /// follower both redraw after a change, and the second must see what
    /// the first drew, not race it into a duplicate (or out-of-order) edit.
    redrawing: Mutex<HashMap<(String, String), Turn>>,
    /// Nudges the daemon's followers after a write, so waiters and wake-ups
    /// see a chat answer at once instead of at the next poll.
    nudge: Arc<tokio::sync::Notify>,
    /// This bridge, for the message tasks it spawns (`retry`).
    me: Weak<Bridge>,
    /// Messages with a running task → whether it was kicked again since its
    /// pass began (a std Mutex: never held across an await).
    slots: Mutex<HashMap<retry::Key, bool>>,
    /// Where message tasks run, and their shutdown.
    tracker: TaskTracker,
    cancel: CancellationToken,
}

/// Start the bridge: nothing at all without a token (one clear log line),
/// else the chat follower and the update loop (polling, or a webhook route).
pub async fn start(
    shared: &Shared,
    tracker: &TaskTracker,
    cancel: CancellationToken,
) -> Result<Started, Error> {
    let cfg = &shared.config.telegram;
    if cfg.token.is_empty() {
        tracing::info!(
            "chat is off: no Telegram token (set HANDOFF_TELEGRAM_TOKEN or [telegram] token to turn it on)"
        );
        return Ok(Started {
            router: Router::new(),
        });
    }
    let url = url::Url::parse(cfg.api_url.trim_end_matches('/'))
        .map_err(|_| Error::ApiUrl(cfg.api_url.clone()))?;
    let l = cfg.limits;
    let bot = Bot::new(cfg.token.expose())
        .set_api_url(url)
        .throttle(Limits {
            messages_per_sec_chat: l.per_chat_per_sec,
            messages_per_min_chat: l.per_chat_per_min,
            messages_per_min_channel_or_supergroup: l.per_group_per_min,
            messages_per_sec_overall: l.overall_per_sec,
        });
    if cfg.chats.is_empty() {
        tracing::warn!("a Telegram token is set but no [[telegram.chats]]: nothing will be pushed");
    }
    // One start-up line saying chat is on and as which bot — or, for a
    // token Telegram refuses, one error and chat stays off (retrying a
    // refused token forever helps nobody).
    let mode = match cfg.mode {
        TelegramMode::Polling => "polling",
        TelegramMode::Webhook => "webhook",
    };
    match tokio::time::timeout(GET_ME_PATIENCE, bot.get_me()).await {
        Ok(Ok(me)) => tracing::info!(
            "chat is on: bot @{}, {mode}, {} chat(s)",
            me.username(),
            cfg.chats.len()
        ),
        Ok(Err(e)) if e.token_refused() => {
            tracing::error!(
                "Telegram refuses the bot token ({}): chat is off; set a valid [telegram] token or HANDOFF_TELEGRAM_TOKEN and restart",
                crate::one_line(&e)
            );
            return Ok(Started {
                router: Router::new(),
            });
        }
        Ok(Err(e)) => tracing::warn!(
            "chat is on ({mode}), but the Telegram Bot API cannot be reached yet: {}; retrying",
            crate::one_line(&e)
        ),
        Err(_) => tracing::warn!(
            "chat is on ({mode}), but the Telegram Bot API did not answer within {}s; retrying",
            GET_ME_PATIENCE.as_secs()
        ),
    }
    let bridge = Arc::new_cyclic(|me| Bridge {
        store: shared.store.clone(),
        config: shared.config.clone(),
        bot: bot.clone(),
        recent: Mutex::new(HashMap::new()),
        digest: Mutex::new(HashMap::new()),
        prompts: Mutex::new(HashMap::new()),
        redrawing: Mutex::new(HashMap::new()),
        nudge: shared.nudge.clone(),
        me: me.clone(),
        slots: Mutex::new(HashMap::new()),
        tracker: tracker.clone(),
        cancel: cancel.clone(),
    });

    // The chat follower: durable cursor, so nothing is skipped across restarts.
    {
        let b = bridge.clone();
        let nudge = shared.nudge.clone();
        let cancel = cancel.clone();
        tracker.spawn(async move {
            b.resume().await;
            let start = b.store.cursor("chat").await.unwrap_or(0);
            let store = b.store.clone();
            crate::follow::follow(store, start, &nudge, cancel, ChatFollower(b)).await;
        });
    }

    let router = match cfg.mode {
        TelegramMode::Polling => {
            let b = bridge.clone();
            let timeout = cfg.poll_timeout_secs;
            tracker.spawn(async move {
                let mut listener = Polling::builder(b.bot.clone())
                    .timeout(Duration::from_secs(u64::from(timeout)))
                    .build();
                let stop = listener.stop_token();
                run_updates(b, &mut listener, cancel).await;
                stop.stop();
            });
            Router::new()
        }
        TelegramMode::Webhook => {
            let hook = cfg.webhook_url.as_deref().unwrap_or_default();
            let hook_url = url::Url::parse(hook)
                .map_err(|_| Error::Webhook(format!("`{hook}` is not a URL")))?;
            let mut options = teloxide::update_listeners::webhooks::Options::new(
                shared.config.http.listen,
                hook_url,
            );
            if !cfg.webhook_secret.is_empty() {
                options = options.secret_token(cfg.webhook_secret.expose().to_string());
            }
            let (mut listener, stop_flag, router) =
                teloxide::update_listeners::webhooks::axum_to_router(bot.clone(), options)
                    .await
                    .map_err(|e| Error::Webhook(e.to_string()))?;
            let b = bridge.clone();
            tracker.spawn(async move {
                run_updates(b, &mut listener, cancel).await;
                drop(stop_flag);
            });
            router
        }
    };
    Ok(Started { router })
}

/// Handle updates one at a time until `cancel`. One at a time keeps a
/// user's tap and their following reply in order; every handler is a few
/// store writes and Bot API calls.
async fn run_updates<L>(bridge: Arc<Bridge>, listener: &mut L, cancel: CancellationToken)
where
    L: UpdateListener,
    L::Err: UpdateError,
{
    let stream = listener.as_stream();
    tokio::pin!(stream);
    loop {
        // Why select: shutdown must not wait for a long poll to return.
        let next = tokio::select! {
            _ = cancel.cancelled() => break,
            u = stream.next() => u,
        };
        match next {
            Some(Ok(update)) => {
                bridge.on_update(update).await;
                // Whatever the update wrote, the followers look now.
                bridge.nudge.notify_waiters();
            }
            Some(Err(e)) if e.token_refused() => {
                tracing::error!(
                    "Telegram refuses the bot token ({}): chat stops taking answers; set a valid [telegram] token or HANDOFF_TELEGRAM_TOKEN and restart",
                    crate::one_line(&e)
                );
                break;
            }
            Some(Err(e)) => {
                tracing::warn!(
                    "cannot fetch Telegram updates: {}; retrying",
                    crate::one_line(&e)
                );
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
            None => break,
        }
    }
}

/// How long start-up waits for `getMe` before going on without it.
const GET_ME_PATIENCE: Duration = Duration::from_secs(5);

/// An error of the update stream: readable on one line, and whether it
/// means Telegram refuses the bot token (then retrying cannot help).
pub(crate) trait UpdateError: std::error::Error {
    fn token_refused(&self) -> bool {
        false
    }
}

impl UpdateError for teloxide::RequestError {
    fn token_refused(&self) -> bool {
        matches!(
            self,
            teloxide::RequestError::Api(teloxide::ApiError::InvalidToken)
        )
    }
}

impl UpdateError for std::convert::Infallible {}

impl Bridge {
    /// Apply one event: claim pushes of new items and mark changed ones,
    /// then kick each message's task (`retry`). Never waits for Telegram;
    /// returns false only when the store failed, so the follower retries it.
    async fn on_event(&self, ev: &Event) -> bool {
        if ev.kind == "delivery.dead" {
            return self.tell_wake_dead(ev).await;
        }
        let item = match ev.entity_kind.as_str() {
            "question" | "row" | "action" => ev.entity_kind.as_str(),
            _ => return true,
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
    pub(crate) async fn mark_changed(&self, item: &str, id: &str) -> Result<(), PushError> {
        for rec in self.store.chat_mark_dirty(item, id).await? {
            self.kick((rec.item_kind, rec.item_id, rec.chat_id));
        }
        Ok(())
    }

    /// Push an item to its routed chat (once per chat: the durable record
    /// makes a replayed event a no-op).
    async fn push(&self, item: &str, id: &str, at: i64) -> Result<(), PushError> {
        let Some(meta) = render::meta(&self.store, item, id).await? else {
            return Ok(()); // gone (purged) or nothing to show
        };
        if !meta.live && item == "row" {
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
        if !self
            .store
            .chat_begin_send(item, id, target.chat_id, target.topic, "sending")
            .await?
        {
            return Ok(()); // already pushed (or in flight) in that chat
        }
        if self.burst(target.chat_id, at) {
            // Part of a burst: goes out in one digest after this batch.
            let mut d = self.digest.lock().expect("digest lock poisoned");
            d.entry(target.chat_id)
                .or_default()
                .push((item.to_string(), id.to_string()));
            return Ok(());
        }
        // Sent by the message's own task: a slow or failing send delays
        // nothing else.
        self.kick((item.to_string(), id.to_string(), target.chat_id));
        Ok(())
    }

    /// The redraw turn of an item (see `redrawing`).
    fn turn(&self, item: &str, id: &str) -> Turn {
        let mut m = self.redrawing.lock().expect("redrawing lock poisoned");
        m.entry((item.to_string(), id.to_string()))
            .or_default()
            .clone()
    }

    /// Drop the item's turn from the map once nobody else holds or awaits it.
    fn end_turn(&self, item: &str, id: &str, turn: &Turn) {
        let mut m = self.redrawing.lock().expect("redrawing lock poisoned");
        // The map and the caller hold it: nobody else waits.
        if Arc::strong_count(turn) == 2 {
            m.remove(&(item.to_string(), id.to_string()));
        }
    }

    /// Whether a new item for `chat_id`, created at `at` (ms), is part of a
    /// burst: more than the digest threshold created within the window.
    /// Counted by creation time, not send time, so a burst is seen as one
    /// even when flood control makes the sends slow.
    fn burst(&self, chat_id: i64, at: i64) -> bool {
        let window = (self.config.telegram.digest_window_secs * 1000) as i64;
        let mut recent = self.recent.lock().expect("recent lock poisoned");
        let q = recent.entry(chat_id).or_default();
        while q.front().is_some_and(|t| at - *t > window) {
            q.pop_front();
        }
        q.push_back(at);
        q.len() > self.config.telegram.digest_threshold
    }

    /// Send one digest message per chat for the items held back by a burst.
    async fn flush_digests(&self) {
        let pending: Vec<(i64, Vec<(String, String)>)> = {
            let mut d = self.digest.lock().expect("digest lock poisoned");
            d.drain().collect()
        };
        for (chat_id, items) in pending {
            let topic = self.config.chat_by_id(chat_id).and_then(|c| c.topic);
            let text = render::digest(&self.store, &items).await;
            let mut req = self
                .bot
                .send_message(ChatId(chat_id), truncate(&text))
                .parse_mode(ParseMode::Html);
            if let Some(t) = topic {
                req = req.message_thread_id(ThreadId(MessageId(t)));
            }
            match req.await {
                Ok(msg) => {
                    for (item, id) in &items {
                        if let Err(e) = self
                            .store
                            .chat_sent(item, id, chat_id, msg.id.0, "digest", "", i64::MAX)
                            .await
                        {
                            tracing::warn!(error = %e, "cannot record a digest entry");
                        }
                    }
                }
                // The records stay `sending`: each item goes out on its own.
                Err(e) => {
                    tracing::warn!(error = %e, "digest not sent; sending its items one by one");
                    for (item, id) in items {
                        self.kick((item, id, chat_id));
                    }
                }
            }
        }
    }

    /// A wake-up for an item could not be delivered: say so, as a reply to
    /// the item's message, in every chat that shows it.
    async fn tell_wake_dead(&self, ev: &Event) -> bool {
        let records = match self
            .store
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
}

/// The chat worker as an event-log consumer.
struct ChatFollower(Arc<Bridge>);

impl crate::follow::Apply for ChatFollower {
    const NAME: &'static str = "chat";
    async fn apply(&mut self, ev: &Event) -> bool {
        self.0.on_event(ev).await
    }
    async fn save(&mut self, seq: i64) {
        // Digests go out before the cursor moves past their items.
        self.0.flush_digests().await;
        if let Err(e) = self.0.store.set_cursor("chat", seq).await {
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
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
}
