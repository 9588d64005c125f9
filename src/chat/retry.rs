//! Delivery of each (item, chat) message on its own schedule.
//!
//! The chat follower does not call Telegram for an item: it records what
//! is owed (a `sending` record for a push, a `dirty_at` mark for a change)
//! and kicks that message's task, then moves on. Each task renders the
//! item's *current* state, sends or edits, and on a retryable failure backs
//! off and tries again — so one message failing (a 5xx, a slow answer)
//! never delays any other item. Kicks that arrive while a task runs are
//! coalesced into one more pass: only the latest state is ever drawn.
//!
//! Failures are classified ([`classify()`]): "not modified" is success; an
//! `ok` reply whose body does not parse is delivered-but-unconfirmed;
//! a message deleted or too old to edit settles the record (and a fresh
//! message is pushed while the item still needs a human); other refusals
//! settle it with a warning; everything else is retried. Permanent errors
//! are counted ([`permanent_errors`], `handoff_chat_permanent_errors_total`).
//!
//! What stays durable: a push interrupted by a stop is still `sending`, a
//! change not yet drawn is still `dirty_at`; [`Bridge::resume`] kicks both at
//! start-up. Nothing here decides what a message says (that is `render`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use teloxide::RequestError;
use teloxide::prelude::*;
use teloxide::types::{MessageId, ParseMode, ThreadId};

use super::Bridge;
use super::callback::Item;
use super::push::{self, PushError};
use super::view::{Attachment, View, truncate};
use crate::store::chat::ChatMessage;

mod classify;

pub(crate) use classify::{Failure, classify};

/// Permanent Bot API errors settled so far in this process.
static PERMANENT: AtomicU64 = AtomicU64::new(0);

/// Whether an unparsable `ok` reply was already logged at warn.
static UNCONFIRMED_LOGGED: AtomicBool = AtomicBool::new(false);

/// How many chat sends and edits ended in a permanent error (message
/// deleted, too old to edit, refused) since the process started.
pub fn permanent_errors() -> u64 {
    // Relaxed: an independent counter, read only for reporting.
    PERMANENT.load(Ordering::Relaxed)
}

/// The longest wait between two attempts of one message.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Wait before retry number `n` (1-based): 1 s, 2 s, 4 s … up to a minute.
pub(crate) fn backoff(n: u32) -> Duration {
    Duration::from_secs(1u64 << n.saturating_sub(1).min(6)).min(MAX_BACKOFF)
}

/// Passes a message's task makes, once done, for a redraw mark that
/// stayed (see [`Bridge::run`]).
const MAX_LOOKS: u32 = 3;

/// Failed uploads of a message's file before it is given up (the message
/// then goes out saying the file is missing): with the back-off between
/// them, about 3 s.
const FILE_ATTEMPTS: u32 = 3;

/// One message: (item kind, item id, chat id).
pub(crate) type Key = (Item, String, i64);

/// What one pass over a message achieved.
pub(crate) enum Outcome {
    /// The message shows the item (or settled for good).
    Done,
    /// Try again after a back-off.
    Retry(String),
}

impl Bridge {
    /// Make sure the message `key` gets (re)drawn from the item's current
    /// state: starts its task, or asks the running one for one more pass.
    pub(crate) fn kick(&self, key: Key) {
        // Another daemon sends and edits: the record's durable mark is
        // what it draws from.
        if !self.roles.holds(super::SEND_ROLE) {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        {
            let mut slots = self.slots.lock().expect("slots lock poisoned");
            if let Some(again) = slots.get_mut(&key) {
                *again = true;
                return;
            }
            slots.insert(key.clone(), false);
        }
        self.tracker.spawn(async move { me.run(key).await });
    }

    /// A message's task: pass until done and not kicked again, backing off
    /// between failed passes; ends (leaving the durable marks) on shutdown.
    async fn run(&self, key: Key) {
        let mut failures = 0u32;
        let mut looks = 0u32;
        loop {
            // The role moved on (this daemon was paused past its lease):
            // the new holder draws from the durable marks.
            if !self.roles.holds(super::SEND_ROLE) {
                self.slots.lock().expect("slots lock poisoned").remove(&key);
                return;
            }
            if let Some(again) = self
                .slots
                .lock()
                .expect("slots lock poisoned")
                .get_mut(&key)
            {
                *again = false;
            }
            let outcome = tokio::select! {
                _ = self.cancel.cancelled() => return,
                o = self.pass(&key, failures) => o,
            };
            match outcome {
                Outcome::Done => {
                    failures = 0;
                    // Why look again: a change marked in the millisecond
                    // this pass rendered from keeps its mark (the record
                    // cannot tell whether the rendering showed it), and
                    // its kick may have come before this pass began, so
                    // none is pending: without another pass a millisecond
                    // later the mark stayed until the next start. A few
                    // looks in a row at most: a mark no pass can clear
                    // waits there.
                    let dangling = looks < MAX_LOOKS && self.still_dirty(&key).await;
                    if dangling {
                        looks += 1;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    } else {
                        looks = 0;
                    }
                    let mut slots = self.slots.lock().expect("slots lock poisoned");
                    // Why under the lock: a kick either sees the slot (and
                    // sets `again`, seen here) or finds it gone and starts
                    // a new task; none is lost in between.
                    if slots.get(&key).copied() != Some(true) && !dangling {
                        slots.remove(&key);
                        return;
                    }
                }
                Outcome::Retry(error) => {
                    failures += 1;
                    let wait = backoff(failures);
                    tracing::warn!(
                        item = %key.0, id = %key.1, chat_id = key.2, attempt = failures,
                        retry_in_ms = wait.as_millis() as u64, error = %error,
                        "chat message not delivered; will retry it (other messages go on)"
                    );
                    tokio::select! {
                        _ = self.cancel.cancelled() => return,
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }

    /// Whether the message is sent and its record still carries a redraw
    /// mark (a push refused for good stays `sending`: not retried here).
    async fn still_dirty(&self, key: &Key) -> bool {
        matches!(
            self.ops.chat_message(key.0.as_str(), &key.1, key.2).await,
            Ok(Some(rec)) if rec.dirty_at.is_some() && rec.status == "sent" && rec.message_id.is_some()
        )
    }

    /// One pass over a message, in the item's redraw turn, after
    /// `failures` failed ones.
    async fn pass(&self, key: &Key, failures: u32) -> Outcome {
        let (item, id, chat_id) = (key.0, key.1.as_str(), key.2);
        let turn = self.turn(item, id);
        let guard = turn.lock().await;
        let res = self.pass_now(item, id, chat_id, failures).await;
        drop(guard);
        self.end_turn(item, id, &turn);
        res.unwrap_or_else(|e| Outcome::Retry(e.to_string()))
    }

    async fn pass_now(
        &self,
        item: Item,
        id: &str,
        chat_id: i64,
        failures: u32,
    ) -> Result<Outcome, PushError> {
        let Some(rec) = self.ops.chat_message(item.as_str(), id, chat_id).await? else {
            return Ok(Outcome::Done);
        };
        match (rec.status.as_str(), rec.message_id) {
            ("sending", _) => self.send_record(&rec, failures).await,
            ("sent", Some(_)) => {
                let since = self.ops.now();
                let Some(view) = push::view(&self.ops, &self.config, item, id).await? else {
                    return Ok(Outcome::Done);
                };
                self.draw(&rec, &view, since).await
            }
            // A digest entry or an unconfirmed push: nothing to edit.
            _ => Ok(Outcome::Done),
        }
    }

    /// Send the file carrying a message's whole text, before the message
    /// itself: its message id, or the failure.
    async fn send_attachment(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        file: &Attachment,
    ) -> Result<MessageId, RequestError> {
        let input = teloxide::types::InputFile::memory(file.body.clone().into_bytes())
            .file_name(file.name.clone());
        let mut req = self.bot.send_document(ChatId(chat_id), input);
        if let Some(t) = thread {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        req.await.map(|m| m.id)
    }

    /// The file a `sending` record's message needs first, if any: sent now
    /// unless it arrived before (or was given up). `Err` asks for another
    /// pass; `Ok` carries the view to send (saying the file is missing
    /// once its upload was given up) and the file's message id.
    async fn file_first(
        &self,
        rec: &ChatMessage,
        view: View,
        failures: u32,
    ) -> Result<Result<(View, Option<MessageId>), Outcome>, PushError> {
        let (kind, id, chat_id) = (rec.item_kind.as_str(), rec.item_id.as_str(), rec.chat_id);
        let Some(file) = &view.attachment else {
            return Ok(Ok((view, None)));
        };
        match rec.document_id {
            Some(0) => return Ok(Ok((view.without_file(), None))),
            Some(d) => return Ok(Ok((view, (d > 0).then_some(MessageId(d))))),
            None => {}
        }
        let err = match self.send_attachment(chat_id, rec.thread_id, file).await {
            Ok(doc) => {
                self.ops.chat_document(kind, id, chat_id, doc.0).await?;
                return Ok(Ok((view, Some(doc))));
            }
            Err(e) => e,
        };
        match classify(&err) {
            Failure::Unconfirmed => {
                self.ops.chat_document(kind, id, chat_id, -1).await?;
                Ok(Ok((view, None)))
            }
            // Retried like any send, a few times: the message waits for it.
            Failure::Retry(e) if failures + 1 < FILE_ATTEMPTS => Ok(Err(Outcome::Retry(format!(
                "the file with the whole text: {e}"
            )))),
            _ => {
                tracing::warn!(
                    item = %kind, id = %id, chat_id, error = %err, attempts = failures + 1,
                    "the file with the whole text of a long message could not be sent; its message says so and offers no approval"
                );
                self.ops.chat_document(kind, id, chat_id, 0).await?;
                Ok(Ok((view.without_file(), None)))
            }
        }
    }

    /// Send the message of a `sending` record (its file first, if it has
    /// one), after `failures` failed passes.
    pub(crate) async fn send_record(
        &self,
        rec: &ChatMessage,
        failures: u32,
    ) -> Result<Outcome, PushError> {
        let (kind, id, chat_id) = (rec.item_kind.as_str(), rec.item_id.as_str(), rec.chat_id);
        let since = self.ops.now();
        let Some(item) = Item::from_kind(kind) else {
            return Ok(Outcome::Done);
        };
        let Some(view) = push::view(&self.ops, &self.config, item, id).await? else {
            return Ok(Outcome::Done);
        };
        // Why the file first: a message offering a decision is never out
        // before the text it decides on.
        let (view, file) = match self.file_first(rec, view, failures).await? {
            Ok(v) => v,
            Err(again) => return Ok(again),
        };
        let mut req = self
            .bot
            .send_message(ChatId(chat_id), truncate(&view.text))
            .parse_mode(ParseMode::Html)
            .reply_markup(view.markup());
        if let Some(t) = rec.thread_id {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        if let Some(f) = file {
            req = req.reply_parameters(
                teloxide::types::ReplyParameters::new(f).allow_sending_without_reply(),
            );
        }
        let err = match req.await {
            Ok(msg) => {
                self.ops
                    .chat_sent(kind, id, chat_id, msg.id.0, "sent", &view.hash(), since)
                    .await?;
                return Ok(Outcome::Done);
            }
            Err(e) => e,
        };
        Ok(match classify(&err) {
            Failure::Unconfirmed => {
                unconfirmed(rec);
                self.ops
                    .chat_sent_unconfirmed(kind, id, chat_id, &view.hash())
                    .await?;
                Outcome::Done
            }
            Failure::Retry(e) => Outcome::Retry(e),
            // The record stays `sending`: the next start tries once more.
            Failure::NotModified | Failure::Gone(_) | Failure::Permanent(_) => {
                permanent(
                    rec,
                    &err.to_string(),
                    "push refused; not retried until restart",
                );
                Outcome::Done
            }
        })
    }

    /// Edit a sent message to show `view` (rendered at `since`), unless it
    /// already does.
    pub(crate) async fn draw(
        &self,
        rec: &ChatMessage,
        view: &View,
        since: i64,
    ) -> Result<Outcome, PushError> {
        let (kind, id, chat_id) = (rec.item_kind.as_str(), rec.item_id.as_str(), rec.chat_id);
        // A message whose file was given up keeps saying so.
        let missing;
        let view = if rec.document_id == Some(0) && view.attachment.is_some() {
            missing = view.clone().without_file();
            &missing
        } else {
            view
        };
        let hash = view.hash();
        let Some(mid) = rec.message_id else {
            return Ok(Outcome::Done);
        };
        if rec.text_hash == hash {
            if rec.dirty_at.is_some() {
                self.ops.chat_drawn(kind, id, chat_id, &hash, since).await?;
            }
            return Ok(Outcome::Done);
        }
        if crate::fault::on("drop-edit") {
            // FAULT(drop-edit): recorded as drawn, never sent.
            self.ops.chat_drawn(kind, id, chat_id, &hash, since).await?;
            return Ok(Outcome::Done);
        }
        let res = self
            .bot
            .edit_message_text(ChatId(chat_id), MessageId(mid), truncate(&view.text))
            .parse_mode(ParseMode::Html)
            .reply_markup(view.markup())
            .await;
        let err = match res {
            Ok(_) => {
                self.ops.chat_drawn(kind, id, chat_id, &hash, since).await?;
                return Ok(Outcome::Done);
            }
            Err(e) => e,
        };
        match classify(&err) {
            Failure::NotModified => {}
            Failure::Unconfirmed => unconfirmed(rec),
            Failure::Retry(e) => return Ok(Outcome::Retry(e)),
            Failure::Permanent(e) => permanent(rec, &e, "edit refused; settled"),
            Failure::Gone(e) => {
                if let Some(sent) = self.replace_gone(rec, &e).await? {
                    return Ok(sent);
                }
            }
        }
        self.ops.chat_drawn(kind, id, chat_id, &hash, since).await?;
        Ok(Outcome::Done)
    }

    /// A message deleted or too old to edit: while its item still needs a
    /// human, a fresh one is sent (what that send achieved); otherwise the
    /// record settles (`None`).
    async fn replace_gone(&self, rec: &ChatMessage, e: &str) -> Result<Option<Outcome>, PushError> {
        let (kind, id, chat_id) = (rec.item_kind.as_str(), rec.item_id.as_str(), rec.chat_id);
        let live = match Item::from_kind(kind) {
            Some(item) => push::meta(&self.ops, item, id)
                .await?
                .is_some_and(|m| m.live),
            None => false,
        };
        if !live {
            permanent(rec, e, "message gone; the item needs nobody, settled");
            return Ok(None);
        }
        permanent(rec, e, "message gone; sending a fresh one");
        self.ops.chat_send_again(kind, id, chat_id).await?;
        let again = ChatMessage {
            status: "sending".into(),
            message_id: None,
            text_hash: String::new(),
            dirty_at: None,
            ..rec.clone()
        };
        self.send_record(&again, 0).await.map(Some)
    }

    /// At start-up: kick every push a stop interrupted and every change not
    /// yet drawn.
    pub(crate) async fn resume(&self) {
        let mut owed = match self.ops.chat_unsent().await {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list interrupted pushes");
                Vec::new()
            }
        };
        match self.ops.chat_dirty().await {
            Ok(d) => owed.extend(d),
            Err(e) => tracing::warn!(error = %e, "cannot list messages to redraw"),
        }
        for rec in owed {
            self.kick_record(rec);
        }
    }

    /// Kick the message of a stored record.
    pub(crate) fn kick_record(&self, rec: ChatMessage) {
        match Item::from_kind(&rec.item_kind) {
            Some(item) => self.kick((item, rec.item_id, rec.chat_id)),
            // Only this bridge writes records, with one of its own kinds.
            None => {
                tracing::warn!(item = %rec.item_kind, id = %rec.item_id, "a chat message record of an unknown kind; skipped")
            }
        }
    }
}

/// Log and count a permanent error that settled a record.
fn permanent(rec: &ChatMessage, error: &str, what: &str) {
    PERMANENT.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        item = %rec.item_kind, id = %rec.item_id, chat_id = rec.chat_id,
        message_id = ?rec.message_id, error = %error,
        "chat {what}"
    );
}

/// Log (once per process) an `ok` reply that did not parse.
fn unconfirmed(rec: &ChatMessage) {
    if !UNCONFIRMED_LOGGED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            item = %rec.item_kind, id = %rec.item_id, chat_id = rec.chat_id,
            "Telegram answered ok with a body that does not parse; counted as delivered (logged once)"
        );
    } else {
        tracing::debug!(item = %rec.item_kind, id = %rec.item_id, "unconfirmed delivery");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_a_minute() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(20), MAX_BACKOFF);
    }
}
