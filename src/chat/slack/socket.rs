//! Socket Mode: Slack's envelopes (button taps, messages in an item's
//! thread, form submissions: `modal`) turned into taps and replies
//! through the seam.
//!
//! An envelope is acknowledged only after its input is written: the
//! handlers below return before slack-morphism sends the ack, and an error
//! (the store could not claim the input) sends none, so Slack delivers the
//! envelope again. Each input is claimed by a key (the tap's `action_ts`,
//! the message's `event_id`) before it is applied and marked done after,
//! so a redelivered envelope is applied once.

use std::sync::Arc;

use slack_morphism::prelude::*;

use super::Slack;
use crate::chat::callback::{Callback, Item, Verb};
use crate::chat::dispatch::Prompt;
use crate::chat::dispatch::Words;
use crate::chat::network::{Network, Right, Tapper};
use crate::store::questions::ReplyKind;

/// Why an envelope is left unacknowledged (Slack sends it again).
#[derive(Debug, thiserror::Error)]
pub(super) enum NotYet {
    /// The input could not be claimed (the store underneath failed).
    #[error("cannot claim the Slack input: {0}")]
    Ops(#[from] crate::ops::Error),
    /// Another daemon holds the input unfinished.
    #[error("another daemon is applying this Slack input")]
    Busy,
    /// The daemon is going away.
    #[error("the Slack adapter is gone")]
    Gone,
}

type Result<T> = UserCallbackResult<T>;

impl Slack {
    /// The Socket Mode listener, with this adapter as its state.
    pub(super) fn listener(
        self: Arc<Self>,
    ) -> SlackClientSocketModeListener<SlackClientHyperHttpsConnector> {
        let callbacks = SlackSocketModeListenerCallbacks::new()
            .with_interaction_events(on_interaction)
            .with_push_events(on_push);
        let env = Arc::new(
            SlackClientEventsListenerEnvironment::new(self.client.clone())
                .with_error_handler(on_error)
                .with_user_state(self.me.clone()),
        );
        // One connection: one daemon takes taps, in order. Reconnects
        // after a second (the library's timers cannot take zero).
        let config = SlackClientSocketModeConfig::new()
            .with_max_connections_count(1)
            .with_initial_backoff_in_seconds(1)
            .with_reconnect_timeout_in_seconds(1);
        SlackClientSocketModeListener::new(&config, env, callbacks)
    }

    /// Claim `key` for this daemon: `Ok(true)` to apply it, `Ok(false)`
    /// when it was applied before (acknowledge it again, do nothing).
    pub(super) async fn take(&self, key: &str) -> std::result::Result<bool, NotYet> {
        let ops = &self.bridge.ops;
        let me = self.roles.me();
        // A take older than half a lease period was left by a daemon that
        // died applying it: taken over, as Telegram updates are.
        let stale = (crate::shared::roles::lease_period() / 2).as_millis() as i64;
        if ops.slack_input_take(key, me, stale).await? {
            return Ok(true);
        }
        match ops.slack_input_taker(key).await? {
            None => Ok(false),
            // Taken and never finished by a daemon on this host that is
            // gone (it died mid-input): take it over now.
            Some(dead) if self.roles.gone(ops.store(), &dead) => {
                if ops.slack_input_take_from(key, me, &dead).await? {
                    tracing::info!(key, dead = %dead, "took over a Slack input a daemon died applying");
                    Ok(true)
                } else {
                    Err(NotYet::Busy)
                }
            }
            Some(_) => Err(NotYet::Busy),
        }
    }

    pub(super) async fn done(&self, key: &str) {
        if let Err(e) = self.bridge.ops.slack_input_done(key, self.roles.me()).await {
            tracing::warn!(key, error = %e, "cannot mark the Slack input applied");
        }
        self.bridge.nudge.notify_waiters();
    }

    /// Tell `user` what happened without holding up the envelope's ack:
    /// Slack wants it within seconds, and a rate-limited note may wait.
    pub(super) fn tell_later(&self, channel: String, user: String, text: String) {
        let Some(me) = self.me.upgrade() else { return };
        self.tracker
            .spawn(async move { me.tell(&channel, &user, &text).await });
    }

    /// A button tap.
    async fn on_actions(
        &self,
        ev: SlackInteractionBlockActionsEvent,
    ) -> std::result::Result<(), NotYet> {
        let Some(user) = ev.user.map(|u| u.id.0) else {
            return Ok(());
        };
        let (channel, message_ts) = match &ev.container {
            SlackInteractionActionContainer::Message(m) => (
                m.channel_id
                    .as_ref()
                    .map(|c| c.0.clone())
                    .or(ev.channel.map(|c| c.id.0)),
                m.message_ts.0.clone(),
            ),
            _ => return Ok(()),
        };
        let Some(channel) = channel else {
            return Ok(());
        };
        let Some(action) = ev.actions.and_then(|a| a.into_iter().next()) else {
            return Ok(());
        };
        let stamp = action
            .action_ts
            .map(|t| t.0)
            .unwrap_or_else(|| ev.trigger_id.0.clone());
        let key = format!("tap:{channel}:{message_ts}:{user}:{stamp}");
        if !self.take(&key).await? {
            tracing::debug!(key, "Slack tap applied before; acknowledging it again");
            return Ok(());
        }
        if crate::fault::on("die-mid-update") {
            // FAULT(die-mid-update): the daemon dies after claiming an
            // input, before applying it.
            std::process::abort();
        }
        let value = action.value.as_deref();
        let words = self
            .apply_tap(&channel, &message_ts, &user, value, &ev.trigger_id.0)
            .await;
        self.done(&key).await;
        if let Some(w) = words {
            self.tell_later(channel, user, w);
        }
        Ok(())
    }

    /// Apply a tap through the seam; what to tell the user.
    async fn apply_tap(
        &self,
        channel: &str,
        message_ts: &str,
        user: &str,
        value: Option<&str>,
        trigger: &str,
    ) -> Option<String> {
        let Some(cb) = value.and_then(Callback::decode) else {
            return Some("This button isn't one of mine (or is outdated).".into());
        };
        let who = format!("slack:{user}");
        let right = Right::for_item(cb.item);
        let admitted = self
            .bridge
            .config
            .slack
            .channel(channel)
            .is_some_and(|c| right.listed(&user.to_string(), &c.answer, &c.approve));
        if !admitted {
            self.record_refusal(channel, &who, &cb).await;
            return Some(format!(
                "Sorry, you're not allowed to {} here: ask the operator to add your Slack user id ({user}) to this channel's list.",
                right.refusal()
            ));
        }
        let tapper = Tapper {
            network: Network::Slack,
            who: &who,
        };
        let bridge = &self.bridge;
        match self.open_form(&cb, trigger, channel, message_ts).await {
            // The form tells what it did when it is submitted.
            Some(true) => return None,
            Some(false) => {
                tracing::warn!(id = %cb.id, "cannot open a Slack form; the tap falls back")
            }
            None => {}
        }
        let outcome = match cb.item {
            Item::Question if matches!(cb.verb, Verb::Toggle(_) | Verb::Done | Verb::Other) => {
                bridge.tap_card(&cb, tapper).await
            }
            Item::Question => bridge.tap_question(&cb, tapper).await,
            Item::Row => bridge.tap_row(&cb, tapper).await,
            Item::Action => bridge.tap_action(&cb, tapper).await,
        };
        let mut words = outcome.words;
        if let Some(ask) = outcome.ask {
            let key = (
                channel.to_string(),
                message_ts.to_string(),
                user.to_string(),
            );
            self.prompts
                .lock()
                .expect("prompts lock poisoned")
                .insert(key, ask.prompt);
            words = format!("{words} {} (in this message's thread)", ask.text);
        }
        if outcome.redraw {
            self.redraw(cb.item, &cb.id);
        }
        Some(words)
    }

    /// Audit a tap by someone not on the channel's lists.
    pub(super) async fn record_refusal(&self, channel: &str, who: &str, cb: &Callback) {
        let ops = &self.bridge.ops;
        let res = if cb.item == Item::Action {
            let a = crate::store::actions::Actor::chat(who);
            ops.audit_refused_attempt(
                &cb.id,
                a,
                &format!("not an approver in Slack channel {channel}"),
            )
            .await
            .map_err(|e| e.to_string())
        } else {
            // Slack ids are not numbers: the record carries them in `who`.
            ops.chat_refused(0, 0, who, cb.item.as_str(), &cb.id)
                .await
                .map_err(|e| e.to_string())
        };
        if let Err(e) = res {
            tracing::warn!(error = %e, "cannot audit a refused Slack tap");
        }
    }

    /// A message event: a reply in one of our messages' threads answers
    /// its item (or the text a tap asked for). Other messages are ignored.
    async fn on_message(
        &self,
        event_id: &str,
        m: SlackMessageEvent,
    ) -> std::result::Result<(), NotYet> {
        if m.sender.bot_id.is_some() || m.subtype.is_some() {
            return Ok(());
        }
        let (Some(channel), Some(thread)) = (
            m.origin.channel.map(|c| c.0),
            m.origin.thread_ts.map(|t| t.0),
        ) else {
            return Ok(());
        };
        let (Some(user), Some(text)) = (m.sender.user.map(|u| u.0), m.content.and_then(|c| c.text))
        else {
            return Ok(());
        };
        let Some(ch) = self.bridge.config.slack.channel(&channel) else {
            return Ok(());
        };
        let key = format!("msg:{event_id}");
        if !self.take(&key).await? {
            return Ok(());
        }
        let admitted = Right::Answer.listed(&user, &ch.answer, &ch.approve);
        let words = if admitted {
            self.apply_reply(&channel, &thread, &user, &text).await
        } else {
            Some(format!(
                "Sorry, you're not allowed to answer here: ask the operator to add your Slack user id ({user}) to this channel's list."
            ))
        };
        self.done(&key).await;
        if let Some(w) = words {
            self.tell_later(channel, user, w);
        }
        Ok(())
    }

    /// Apply a thread reply; what to tell the user (`None`: the thread is
    /// not one of ours).
    async fn apply_reply(
        &self,
        channel: &str,
        thread: &str,
        user: &str,
        text: &str,
    ) -> Option<String> {
        let who = format!("slack:{user}");
        let bridge = &self.bridge;
        let key = (channel.to_string(), thread.to_string(), user.to_string());
        let prompt = self
            .prompts
            .lock()
            .expect("prompts lock poisoned")
            .remove(&key);
        match prompt {
            Some(Prompt::Clarify { id, revision }) => Some(
                bridge
                    .answer_words(Words {
                        item: Item::Question,
                        id: &id,
                        text,
                        who: &who,
                        kind: ReplyKind::Clarify,
                        revision: Some(revision),
                    })
                    .await,
            ),
            Some(Prompt::ActionEdit { id }) => {
                let c = bridge.config.slack.channel(channel)?;
                if !Right::Approve.listed(&user.to_string(), &c.answer, &c.approve) {
                    return Some("Sorry, you're not allowed to decide actions here.".into());
                }
                let (said, tried) = bridge.edit_words(&id, text, &who).await;
                if tried {
                    self.redraw(Item::Action, &id);
                } else {
                    // A patch that does not parse: the next reply may fix it.
                    self.prompts
                        .lock()
                        .expect("prompts lock poisoned")
                        .insert(key, Prompt::ActionEdit { id });
                }
                Some(said)
            }
            Some(Prompt::Other { id, revision }) => {
                let answer = bridge.other_answer(&id, revision, text).await;
                let said = bridge
                    .answer_words(Words {
                        item: Item::Question,
                        id: &id,
                        text: &answer,
                        who: &who,
                        kind: ReplyKind::Answer,
                        revision: Some(revision),
                    })
                    .await;
                self.redraw(Item::Question, &id);
                Some(said)
            }
            Some(Prompt::RowAnswer { id }) => Some(self.answer(Item::Row, &id, text, &who).await),
            Some(_) | None => {
                let (kind, id) = bridge
                    .ops
                    .slack_item_of(channel, thread)
                    .await
                    .ok()
                    .flatten()?;
                let item = Item::from_kind(&kind)?;
                Some(self.answer(item, &id, text, &who).await)
            }
        }
    }

    async fn answer(&self, item: Item, id: &str, text: &str, who: &str) -> String {
        let said = self
            .bridge
            .answer_words(Words {
                item,
                id,
                text,
                who,
                kind: ReplyKind::Answer,
                revision: None,
            })
            .await;
        self.redraw(item, id);
        said
    }
}

/// The adapter behind a callback's state; `None` once it is gone.
async fn adapter(state: &SlackClientEventsUserState) -> Option<Arc<Slack>> {
    state
        .read()
        .await
        .get_user_state::<std::sync::Weak<Slack>>()
        .and_then(std::sync::Weak::upgrade)
}

async fn on_interaction(
    ev: SlackInteractionEvent,
    _client: Arc<SlackHyperClient>,
    state: SlackClientEventsUserState,
) -> Result<SlackInteractionResponse> {
    let slack = adapter(&state).await.ok_or(NotYet::Gone)?;
    match ev {
        SlackInteractionEvent::BlockActions(b) => slack.on_actions(b).await?,
        // The answer rides on the acknowledgement, sent after the write.
        SlackInteractionEvent::ViewSubmission(v) => return Ok(slack.on_submission(v).await?),
        _ => {}
    }
    Ok(SlackInteractionResponse::Empty)
}

async fn on_push(
    ev: SlackPushEventCallback,
    _client: Arc<SlackHyperClient>,
    state: SlackClientEventsUserState,
) -> Result<()> {
    let slack = adapter(&state).await.ok_or(NotYet::Gone)?;
    if let SlackEventCallbackBody::Message(m) = ev.event {
        slack.on_message(&ev.event_id.0, m).await?;
    }
    Ok(())
}

/// A handler failed: no acknowledgement, so Slack delivers the envelope
/// again (a status that is not a success tells slack-morphism not to ack).
fn on_error(
    err: Box<dyn std::error::Error + Send + Sync>,
    _client: Arc<SlackHyperClient>,
    _state: SlackClientEventsUserState,
) -> axum::http::StatusCode {
    tracing::warn!(error = %err, "Slack input not applied; leaving it unacknowledged for redelivery");
    axum::http::StatusCode::SERVICE_UNAVAILABLE
}
