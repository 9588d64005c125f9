//! The Slack adapter: items pushed to a team's Slack channels, taps and
//! thread replies taken through Socket Mode (no public URL needed), both
//! through the same seam as Telegram (`chat::network`): the meaning of a
//! tap, the allow-list rule and every store write are the bridge's; this
//! adapter only renders, sends, and turns Slack's envelopes into taps and
//! replies.
//!
//! slack-morphism lives only here. Two jobs run once across daemons
//! (`docs/design.md` §10), each held through a lease: [`SEND_ROLE`]
//! follows the event log and draws messages, [`SOCKET_ROLE`] holds the one
//! Socket Mode connection.
//!
//! # Layout
//!
//! - `blocks`: a view as Block Kit (mrkdwn text, buttons).
//! - `burst`: pushes under the one digest rule (shared with Telegram),
//!   escalation steps' pushes, and bursts' digests.
//! - `modal`: the forms a Reject (its reason) and an Edit (its patch)
//!   open, and their submissions.
//! - `send`: one task per item posts or updates its message; retries,
//!   rate limits, coalescing.
//! - `tiers`: Slack's per-method rate tiers and `Retry-After` pauses.
//! - `socket`: the Socket Mode listener; envelopes claimed by key,
//!   applied, and acknowledged only after.

mod blocks;
mod burst;
mod landed;
mod modal;
mod send;
mod socket;
mod tiers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use slack_morphism::prelude::*;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Bridge;
use super::callback::Item;
use super::dispatch::Prompt;
use crate::shared::roles::Roles;

/// The role of the one daemon that draws Slack messages.
pub const SEND_ROLE: &str = "slack.send";

/// The role of the one daemon that holds the Socket Mode connection.
pub const SOCKET_ROLE: &str = "slack.socket";

/// The Slack side of the bridge.
pub(crate) struct Slack {
    /// The seam: tap meanings, the store, the config.
    bridge: Arc<Bridge>,
    client: Arc<SlackHyperClient>,
    bot: SlackApiToken,
    app: SlackApiToken,
    /// Items with a running draw task → whether it was kicked again
    /// since its pass began (a std Mutex: never held across an await).
    slots: Mutex<HashMap<(Item, String), bool>>,
    /// Texts a tap asked for: (channel, message ts, user) → what the
    /// user's next reply in that message's thread means.
    prompts: Mutex<HashMap<(String, String, String), Prompt>>,
    /// Each Web API method's budget, shared by every message's task.
    tiers: tiers::Tiers,
    /// Recent pushes per channel, for the digest rule (`burst`).
    bursts: crate::chat::digest::Bursts<String>,
    /// Wakes the digest task when an item starts waiting.
    held: tokio::sync::Notify,
    roles: Arc<Roles>,
    tracker: TaskTracker,
    cancel: CancellationToken,
    me: Weak<Slack>,
}

/// Start Slack next to (or instead of) Telegram: the sender and the
/// Socket Mode connection, each while this daemon holds its role.
pub(crate) fn start(
    bridge: Arc<Bridge>,
    nudge: Arc<tokio::sync::Notify>,
    tracker: &TaskTracker,
    cancel: CancellationToken,
) -> Result<(), super::Error> {
    let config = bridge.config.clone();
    let cfg = &config.slack;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        // http too: a test fake, or a proxy on loopback.
        .https_or_http()
        .enable_http1()
        .build();
    let connector =
        SlackClientHyperConnector::with_connector(https).with_slack_api_url(&cfg.api_url);
    let client = Arc::new(SlackClient::new(connector));
    let token = |t: &crate::config::Secret| SlackApiToken::new(t.expose().to_string().into());
    let slack = Arc::new_cyclic(|me| Slack {
        client,
        bot: token(&cfg.bot_token),
        app: token(&cfg.app_token),
        slots: Mutex::new(HashMap::new()),
        prompts: Mutex::new(HashMap::new()),
        tiers: tiers::Tiers::default(),
        bursts: Default::default(),
        held: tokio::sync::Notify::new(),
        roles: bridge.roles.clone(),
        tracker: tracker.clone(),
        cancel: cancel.clone(),
        me: me.clone(),
        bridge,
    });
    if cfg.channels.is_empty() {
        tracing::warn!("Slack tokens are set but no [[slack.channels]]: nothing will be pushed");
    }
    tracing::info!(
        "Slack is on: Socket Mode, {} channel(s)",
        cfg.channels.len()
    );
    let store = slack.bridge.ops.store().clone();
    slack
        .roles
        .keep(store.clone(), SEND_ROLE, tracker, cancel.clone());
    slack
        .roles
        .keep(store, SOCKET_ROLE, tracker, cancel.clone());
    tracker.spawn(slack.clone().send_while_held(nudge));
    tracker.spawn(slack.socket_while_held());
    Ok(())
}

impl Slack {
    /// A Web API session with the bot token.
    fn session(&self) -> SlackClientSession<'_, SlackClientHyperHttpsConnector> {
        self.client.open_session(&self.bot)
    }

    /// Follow the event log for Slack whenever this daemon holds
    /// [`SEND_ROLE`], from the durable `slack` cursor.
    async fn send_while_held(self: Arc<Self>, nudge: Arc<tokio::sync::Notify>) {
        let mut held = self.roles.watch(SEND_ROLE);
        loop {
            tokio::select! {
                _ = self.cancel.cancelled() => return,
                r = held.wait_for(|h| *h) => if r.is_err() { return },
            }
            let stint = self.roles.stint(SEND_ROLE, &self.cancel);
            self.resume().await;
            let start = self.bridge.ops.cursor("slack").await.unwrap_or(0);
            let follower = send::SlackFollower(self.clone());
            tokio::join!(
                self.bridge
                    .ops
                    .follow(start, &nudge, stint.clone(), follower),
                self.clone().burst_loop(stint.clone()),
            );
            stint.cancel();
            if self.cancel.is_cancelled() {
                return;
            }
            tracing::info!("stopped sending to Slack: another daemon holds the role");
        }
    }

    /// Hold the Socket Mode connection whenever this daemon holds
    /// [`SOCKET_ROLE`]; a lost role closes it, so one daemon takes taps.
    async fn socket_while_held(self: Arc<Self>) {
        let mut held = self.roles.watch(SOCKET_ROLE);
        loop {
            tokio::select! {
                _ = self.cancel.cancelled() => return,
                r = held.wait_for(|h| *h) => if r.is_err() { return },
            }
            let stint = self.roles.stint(SOCKET_ROLE, &self.cancel);
            let listener = self.clone().listener();
            match listener.listen_for(&self.app).await {
                Ok(()) => {
                    listener.start().await;
                    tracing::info!("Slack Socket Mode connected");
                    stint.cancelled().await;
                    listener.shutdown().await;
                }
                Err(e) => {
                    tracing::warn!(error = %crate::one_line(&e), "cannot open the Slack Socket Mode connection; retrying");
                    tokio::select! {
                        _ = stint.cancelled() => {}
                        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                    }
                }
            }
            stint.cancel();
            if self.cancel.is_cancelled() {
                return;
            }
        }
    }

    /// Draw the item's message again if this daemon draws Slack messages
    /// (else the holder hears of the change from the event log).
    fn redraw(&self, item: Item, id: &str) {
        if self.roles.holds(SEND_ROLE) {
            self.kick(item, id);
        }
    }
}
