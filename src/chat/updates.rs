//! Telegram updates, each handled once across daemons: the poller's loop
//! (while this daemon holds the poll role), claiming an update before it
//! is handled and marking it done after, and what the update stream's
//! errors mean.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use teloxide::update_listeners::{Polling, UpdateListener};
use tokio_util::sync::CancellationToken;

use super::{Bridge, POLL_ROLE};

/// Whether this daemon may handle a Telegram update ([`Bridge::take_update`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Take {
    /// Taken by this daemon: handle it, then mark it done.
    Mine,
    /// Handled before: skip it.
    Done,
    /// Another daemon holds it unfinished (at it now, or died less than
    /// half a lease period ago): not now.
    Busy,
}

/// Poll for updates whenever this daemon holds [`POLL_ROLE`], until
/// `cancel`. Each stint starts a fresh listener (from the first update
/// nobody confirmed: ones the last poller handled are skipped by their
/// claimed ids) and ends the moment the role is lost, its long poll cut
/// off rather than waited out.
pub(super) async fn poll_while_held(
    bridge: Arc<Bridge>,
    roles: Arc<crate::shared::roles::Roles>,
    timeout: Duration,
    cancel: CancellationToken,
) {
    let mut held = roles.watch(POLL_ROLE);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            r = held.wait_for(|h| *h) => if r.is_err() { return },
        }
        let stint = roles.stint(POLL_ROLE, &cancel);
        let mut listener = Polling::builder(bridge.bot.clone())
            .timeout(timeout)
            .build();
        let stop = listener.stop_token();
        let may_poll = || roles.holds(POLL_ROLE);
        run_updates(bridge.clone(), &mut listener, stint.clone(), &may_poll).await;
        stop.stop();
        stint.cancel();
        if cancel.is_cancelled() {
            return;
        }
        tracing::info!("stopped polling Telegram: another daemon holds the role");
    }
}

/// Handle updates one at a time until `cancel`, or until `may_go_on`
/// says no before the next is fetched (a poller whose role lapsed). One
/// at a time keeps a user's tap and their following reply in order; every
/// handler is a few store writes and Bot API calls.
async fn run_updates<L>(
    bridge: Arc<Bridge>,
    listener: &mut L,
    cancel: CancellationToken,
    may_go_on: &(dyn Fn() -> bool + Sync),
) where
    L: UpdateListener,
    L::Err: UpdateError,
{
    let stream = listener.as_stream();
    tokio::pin!(stream);
    loop {
        if !may_go_on() {
            break;
        }
        // Why select: shutdown must not wait for a long poll to return.
        let next = tokio::select! {
            _ = cancel.cancelled() => break,
            u = stream.next() => u,
        };
        match next {
            Some(Ok(update)) => {
                if bridge.take_polled_update(&update).await {
                    bridge.handle_taken(update).await;
                }
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
    /// Claim `update` for this daemon. Some daemon may have taken it
    /// already: a poller that took over sees the updates its predecessor
    /// handled but had not confirmed, and a webhook delivery may be retried
    /// to another daemon. Done: skip it. Held unfinished by a daemon on
    /// this host that is gone, or for half a lease period: taken over.
    /// Otherwise busy. A store that cannot say is no reason to drop a
    /// human's input: the update is handled, its writes guarded as ever.
    pub(super) async fn take_update(&self, update: &teloxide::types::Update) -> Take {
        let id = i64::from(update.id.0);
        let me = self.roles.me();
        // A take older than half a lease period was left by a daemon that
        // died mid-update (a handler takes milliseconds, a slow Bot API a
        // second or two): the update came back to be applied after all.
        let stale = (crate::shared::roles::lease_period() / 2).as_millis() as i64;
        match self.ops.chat_update_take(id, me, stale).await {
            Ok(true) => return Take::Mine,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(update_id = id, error = %e, "cannot claim the Telegram update; handling it anyway");
                return Take::Mine;
            }
        }
        match self.ops.chat_update_taker(id).await {
            // Finished by some daemon (or forgotten after a day).
            Ok(None) => {
                tracing::debug!(update_id = id, "update handled before; skipping it");
                Take::Done
            }
            // Taken and not finished by a daemon on this host that is
            // gone: take it over now rather than drop the tap.
            Ok(Some(taker)) if self.roles.gone(self.ops.store(), &taker) => {
                match self.ops.chat_update_take_from(id, me, &taker).await {
                    Ok(true) => {
                        tracing::info!(update_id = id, dead = %taker, "took over an update a daemon died handling");
                        Take::Mine
                    }
                    _ => Take::Busy,
                }
            }
            Ok(Some(_)) | Err(_) => Take::Busy,
        }
    }

    /// [`Bridge::take_update`] for the polling loop, which cannot have an
    /// update sent again: an update another daemon holds unfinished is
    /// waited for until that take is stale (its daemon died) or done.
    pub(super) async fn take_polled_update(&self, update: &teloxide::types::Update) -> bool {
        let stale = crate::shared::roles::lease_period() / 2;
        for _ in 0..3 {
            match self.take_update(update).await {
                Take::Mine => return true,
                Take::Done => return false,
                Take::Busy => tokio::time::sleep(stale / 2).await,
            }
        }
        tracing::warn!(
            update_id = update.id.0,
            "another daemon holds this Telegram update unfinished; skipping it"
        );
        false
    }

    /// Handle an update this daemon took: apply it, mark it done, and
    /// nudge the followers (whatever it wrote, they look now).
    pub(super) async fn handle_taken(&self, update: teloxide::types::Update) {
        let id = i64::from(update.id.0);
        if crate::fault::on("die-mid-update") {
            // FAULT(die-mid-update): the daemon dies after taking an
            // update, before handling it.
            std::process::abort();
        }
        self.on_update(update).await;
        self.update_done(id).await;
        self.nudge.notify_waiters();
    }

    /// Mark `update` handled, so it is never taken again.
    pub(super) async fn update_done(&self, update_id: i64) {
        if let Err(e) = self.ops.chat_update_done(update_id, self.roles.me()).await {
            tracing::warn!(update_id, error = %e, "cannot mark the Telegram update handled");
        }
    }
}
