//! The chat bridge (Telegram, and Slack in `slack`): pushes questions, blocked rows and actions to chat,
//! keeps those messages true as the items change, and turns taps, replies
//! and commands into writes through the *chat* channel.
//!
//! teloxide lives only here. The bridge never calls the store itself: like
//! every door it calls the operations (`ops::Local`, the daemon's
//! `Shared::ops`), the decisions every door makes (approve, reject, reply,
//! annotate…) and its own bookkeeping (message records, cursors, holds,
//! topics, pairing: `ops/local/chat*.rs`). It never decides a race itself:
//! every human input goes through a guarded chat-channel write and the user
//! is told the outcome in words. It wakes no agents, and runs an
//! executor only when an approver taps Run on an approved `--exec` action
//! nobody claimed (`stranded`, through the claim CAS like any executor).
//!
//! # Layout
//!
//! This file starts the bridge (the bot, the follower, the update loop) and
//! holds its shared state. The rest is cut by what it is about:
//!
//! - `dispatch`: every update enters here; the allow-list; a tap goes to its
//!   item kind, a text reply to the item or prompt it answers.
//! - `question`, `row`, `action`: one file per item kind, each with its
//!   message (text and buttons), its taps and its text answers.
//! - `commands`: /start, /help, /answer, /clarify, /list; `fleet`:
//!   /sessions.
//! - `push`: what the chat follower does with each event, notices, and the
//!   view of an item of any kind.
//! - `digest`: the one digest rule (bursts and quiet hours, per chat and
//!   forum topic) and the digest message.
//! - `hold`: pushes that wait out a kind's grace period or a chat's quiet
//!   hours, released when due.
//! - `retry`: one task per (item, chat) message sends or edits it.
//! - `callback`: the 64-byte callback data; `text`: escaping and cutting;
//!   `stranded`: Run now / Done by hand on an approved `--exec` action;
//!   `unparsed`: updates teloxide cannot parse; `topics`: a forum topic per
//!   project or session; `voice`: voice notes transcribed and confirmed
//!   before they answer.
//!
//! A tap reads as a straight line: `dispatch::on_tap` → `row::tap_row` (the
//! guarded write through the operations, the toast) →
//! `push::redraw_quiet` → the message's task in `retry` → `push::view` →
//! `row::row_view`.

mod action;
mod callback;
mod card;
mod commands;
mod digest;
mod dispatch;
mod fleet;
mod grants;
mod hold;
mod network;
mod push;
mod question;
mod retry;
mod row;
pub mod slack;
mod stranded;
mod text;
mod topics;
mod unparsed;
mod updates;
mod view;
mod voice;
mod webhook;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::Router;
use teloxide::adaptors::Throttle;
use teloxide::adaptors::throttle::Limits;
use teloxide::prelude::*;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{Config, TelegramMode};
use crate::ops::{Local, Ops};
use crate::shared::Shared;

pub use callback::{Callback, Item, Verb};
use push::ChatFollower;
pub use retry::permanent_errors;
pub use unparsed::unparsed_updates;
use updates::{Take, UpdateError, poll_while_held};
pub use view::MAX_TEXT;

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

/// One item's redraw turn.
type Turn = Arc<tokio::sync::Mutex<()>>;

/// The bridge's shared state.
pub(crate) struct Bridge {
    /// The operations this bridge's doors call: the daemon's `Local`
    /// (`Shared::ops`), for its bookkeeping and, through [`Bridge::calls`],
    /// the decisions every door makes.
    pub ops: Local,
    pub config: Arc<Config>,
    pub bot: TgBot,
    /// Recent pushes per chat and forum topic, for the digest rule
    /// (`digest`; a std Mutex: never held across an await).
    bursts: digest::Bursts<digest::Dest>,
    /// Prompts waiting for a text reply: (chat, prompt message id) → what the reply means.
    pub prompts: Mutex<HashMap<(i64, i32), dispatch::Prompt>>,
    /// One redraw at a time per item (kind, id): a tap's handler and the
    /// follower both redraw after a change, and the second must see what
    /// the first drew, not race it into a duplicate (or out-of-order) edit.
    redrawing: Mutex<HashMap<(Item, String), Turn>>,
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
    /// One forum-topic lookup-or-create at a time (`topics`).
    topics: tokio::sync::Mutex<()>,
    /// Wakes the `hold` task when a push starts waiting.
    held: tokio::sync::Notify,
    /// This daemon's roles and name (claims of updates carry the name).
    roles: Arc<crate::shared::roles::Roles>,
}

/// Start the bridge: nothing at all without a token (one clear log line),
/// else the chat follower and the update loop (polling, or a webhook route).
pub async fn start(
    shared: &Shared,
    tracker: &TaskTracker,
    cancel: CancellationToken,
) -> Result<Started, Error> {
    let off = Started {
        router: Router::new(),
    };
    let cfg = &shared.config.telegram;
    let slack_on = shared.config.slack.enabled();
    let mut telegram_on = !cfg.token.is_empty();
    if !telegram_on {
        tracing::info!(
            "chat is off: no Telegram token (set HANDOFF_TELEGRAM_TOKEN or [telegram] token to turn it on)"
        );
        if !slack_on {
            return Ok(off);
        }
    }
    // With Telegram off the bot is never called: the bridge still holds
    // one, as the seam's tap meanings live on the bridge.
    let bot = throttled_bot(cfg)?;
    if telegram_on && cfg.chats.is_empty() {
        tracing::warn!("a Telegram token is set but no [[telegram.chats]]: nothing will be pushed");
    }
    if telegram_on && !greet(&bot, cfg).await {
        telegram_on = false;
        if !slack_on {
            return Ok(off);
        }
    }
    let bridge = Bridge::new(shared, bot, tracker, &cancel);

    if slack_on {
        slack::start(
            bridge.clone(),
            shared.nudge.clone(),
            tracker,
            cancel.clone(),
        )?;
    }
    if !telegram_on {
        return Ok(off);
    }
    // Pushes and edits: by the one daemon holding SEND_ROLE (the role
    // keeper holds its lease in the store under the operations).
    let store = shared.ops.store();
    shared
        .roles
        .keep(store.clone(), SEND_ROLE, tracker, cancel.clone());
    // Voice notes left half-way and transcripts left unconfirmed: by
    // every daemon with chat on (each step is guarded in the store).
    tracker.spawn(bridge.clone().voice_sweep(cancel.clone()));
    tracker.spawn(send_while_held(
        bridge.clone(),
        shared.nudge.clone(),
        cancel.clone(),
    ));
    let router = match cfg.mode {
        TelegramMode::Polling => {
            let timeout = Duration::from_secs(u64::from(cfg.poll_timeout_secs));
            let roles = shared.roles.clone();
            roles.keep(store.clone(), POLL_ROLE, tracker, cancel.clone());
            tracker.spawn(poll_while_held(bridge, roles, timeout, cancel));
            Router::new()
        }
        TelegramMode::Webhook => {
            let cfg = &shared.config.telegram;
            webhook::route(
                bridge,
                cfg.webhook_url.as_deref().unwrap_or_default(),
                cfg.webhook_secret.expose(),
                cancel,
            )
            .await?
        }
    };
    Ok(Started { router })
}

impl Bridge {
    /// The operations every door calls (approve, reject, reply, annotate,
    /// claim…), with their rules and refusal wording, over [`Bridge::ops`].
    pub(crate) fn calls(&self) -> Ops {
        Ops::Local(self.ops.clone())
    }

    /// The bridge of this daemon's chat, on `bot` (Telegram's, which
    /// Slack's bridge holds too: the taps' meanings live here).
    fn new(
        shared: &Shared,
        bot: TgBot,
        tracker: &TaskTracker,
        cancel: &CancellationToken,
    ) -> Arc<Bridge> {
        Arc::new_cyclic(|me| Bridge {
            ops: shared.ops.clone(),
            config: shared.config.clone(),
            bot,
            bursts: digest::Bursts::default(),
            prompts: Mutex::new(HashMap::new()),
            redrawing: Mutex::new(HashMap::new()),
            nudge: shared.nudge.clone(),
            me: me.clone(),
            slots: Mutex::new(HashMap::new()),
            tracker: tracker.clone(),
            cancel: cancel.clone(),
            topics: tokio::sync::Mutex::new(()),
            held: tokio::sync::Notify::new(),
            roles: shared.roles.clone(),
        })
    }
}

/// The role of the one daemon that polls Telegram for updates: the Bot API
/// allows one `getUpdates` consumer per bot (a second one's poll ends the
/// first's with 409 Conflict).
pub const POLL_ROLE: &str = "telegram.poll";

/// The role of the one daemon that pushes items to chat and edits their
/// messages: one chat follower on the durable `chat` cursor, one task per
/// message. Another daemon taking a tap only marks the message owed a
/// redraw (durably); the holder draws it.
pub const SEND_ROLE: &str = "chat.send";

/// Follow the event log for chat, release waiting pushes and run message
/// tasks whenever this daemon holds [`SEND_ROLE`], until `cancel`. Each
/// stint first kicks every push and redraw left owed (by a daemon that
/// died, or by taps another daemon took), then follows from the durable
/// cursor, so nothing is skipped or sent twice across holders.
async fn send_while_held(
    bridge: Arc<Bridge>,
    nudge: Arc<tokio::sync::Notify>,
    cancel: CancellationToken,
) {
    let mut held = bridge.roles.watch(SEND_ROLE);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            r = held.wait_for(|h| *h) => if r.is_err() { return },
        }
        let stint = bridge.roles.stint(SEND_ROLE, &cancel);
        bridge.resume().await;
        let start = bridge.ops.cursor("chat").await.unwrap_or(0);
        let follower = ChatFollower(bridge.clone());
        tokio::join!(
            bridge.ops.follow(start, &nudge, stint.clone(), follower),
            bridge.clone().hold_loop(stint.clone()),
            owed_sweep(&bridge, &stint),
        );
        stint.cancel();
        if cancel.is_cancelled() {
            return;
        }
        tracing::info!("stopped sending to chat: another daemon holds the role");
    }
}

/// While this daemon sends to chat: every [`OWED_SWEEP`], send or redraw
/// what is owed. Why: another daemon that takes a tap marks the message
/// owed a redraw in the database, and a mark is not an event (a refused
/// tap, a stale button), so the follower never hears of it.
async fn owed_sweep(bridge: &Bridge, stint: &CancellationToken) {
    loop {
        tokio::select! {
            _ = stint.cancelled() => return,
            _ = tokio::time::sleep(OWED_SWEEP) => bridge.resume().await,
        }
    }
}

/// How often the chat sender looks for messages other daemons marked owed.
const OWED_SWEEP: Duration = Duration::from_secs(2);

/// The Bot API client: the configured API URL, under the configured send limits.
fn throttled_bot(cfg: &crate::config::TelegramConfig) -> Result<TgBot, Error> {
    let url = url::Url::parse(cfg.api_url.trim_end_matches('/'))
        .map_err(|_| Error::ApiUrl(cfg.api_url.clone()))?;
    let l = cfg.limits;
    Ok(Bot::new(cfg.token.expose())
        .set_api_url(url)
        .throttle(Limits {
            messages_per_sec_chat: l.per_chat_per_sec,
            messages_per_min_chat: l.per_chat_per_min,
            messages_per_min_channel_or_supergroup: l.per_group_per_min,
            messages_per_sec_overall: l.overall_per_sec,
        }))
}

/// One start-up line saying chat is on and as which bot. `false` for a
/// token Telegram refuses: one error, and chat stays off (retrying a
/// refused token forever helps nobody). An unreachable API is only a
/// warning: the bridge retries.
async fn greet(bot: &TgBot, cfg: &crate::config::TelegramConfig) -> bool {
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
            return false;
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
    true
}

/// How long start-up waits for `getMe` before going on without it.
const GET_ME_PATIENCE: Duration = Duration::from_secs(5);
