//! The chat bridge's own bookkeeping (docs/architecture.md, the
//! application layer): its message records (`sending → sent`, owed
//! redraws, documents), pushes held for a grace period or quiet hours,
//! followers' cursors, forum topics, claims of updates, members and
//! pairing, and refused taps. Each is one store call, here so that the chat
//! doors, like every other, reach the store only through the operations;
//! the taps' decisions (approve, reject, reply, annotate…) are the
//! operations every door calls. Voice notes are in `chat_voice`, Slack's
//! records in `chat_slack`.

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Local;
use crate::ops::Result;
use crate::store::actions::Actor;
use crate::store::chat::{ChatMessage, Held, Hold};

impl Local {
    /// Follow the event log from `start` with `apply` until `cancel`, read
    /// again when `nudge` fires (`follow::follow` on this store): the chat
    /// and Slack followers.
    pub async fn follow<A: crate::follow::Apply>(
        &self,
        start: i64,
        nudge: &Notify,
        cancel: CancellationToken,
        apply: A,
    ) {
        crate::follow::follow(self.store.clone(), start, nudge, cancel, apply).await;
    }

    /// Record what became of the file carrying a message's whole text (see
    /// `ChatMessage::document_id`).
    pub async fn chat_document(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        document_id: i32,
    ) -> Result<()> {
        Ok(self
            .store
            .chat_document(item_kind, item_id, chat_id, document_id)
            .await?)
    }

    /// Move the follower `name` forward to `seq`. Never moves it back, so
    /// two daemons on one database cannot rewind each other.
    pub async fn set_cursor(&self, name: &str, seq: i64) -> Result<()> {
        Ok(self.store.set_cursor(name, seq).await?)
    }

    /// The last `seq` the follower `name` fully applied (0 if never).
    pub async fn cursor(&self, name: &str) -> Result<i64> {
        Ok(self.store.cursor(name).await?)
    }

    /// One message record of an item.
    pub async fn chat_message(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
    ) -> Result<Option<ChatMessage>> {
        Ok(self.store.chat_message(item_kind, item_id, chat_id).await?)
    }

    /// The topic remembered for `key` in `chat_id`, if any.
    pub async fn topic_get(&self, chat_id: i64, key: &str) -> Result<Option<i32>> {
        Ok(self.store.topic_get(chat_id, key).await?)
    }

    /// Remember `thread_id` as the topic of `key` in `chat_id`; the topic
    /// that holds after the call (an earlier one wins: its messages are
    /// already there). Two statements, each a write or read of its own:
    /// the read after the insert sees whichever save committed first.
    pub async fn topic_save(
        &self,
        chat_id: i64,
        key: &str,
        name: &str,
        thread_id: i32,
    ) -> Result<i32> {
        Ok(self.store.topic_save(chat_id, key, name, thread_id).await?)
    }

    /// Who took update `update_id` and has not finished it, if anyone.
    pub async fn chat_update_taker(&self, update_id: i64) -> Result<Option<String>> {
        Ok(self.store.chat_update_taker(update_id).await?)
    }

    /// Take update `update_id` from `dead`, a taker known to have died
    /// before finishing it: false when `dead` no longer holds it unfinished.
    pub async fn chat_update_take_from(
        &self,
        update_id: i64,
        holder: &str,
        dead: &str,
    ) -> Result<bool> {
        Ok(self
            .store
            .chat_update_take_from(update_id, holder, dead)
            .await?)
    }

    /// Claim Telegram update `update_id` for `holder`: true for the first
    /// claim, false when some daemon (this one included) took it before
    /// and either finished it (`chat_update_done`) or took it less
    /// than `stale_ms` ago. Claimed on receipt, before the update writes
    /// anything, so two daemons never both apply it; a take whose daemon
    /// died mid-update is taken again when the update comes back (a new
    /// poller, a webhook retry), by then or at once by a daemon that knows
    /// the taker is gone (`chat_update_take_from`).
    pub async fn chat_update_take(
        &self,
        update_id: i64,
        holder: &str,
        stale_ms: i64,
    ) -> Result<bool> {
        Ok(self
            .store
            .chat_update_take(update_id, holder, stale_ms)
            .await?)
    }

    /// Mark update `update_id`, taken by `holder`, handled: it is never
    /// taken again. False when `holder` no longer holds it.
    pub async fn chat_update_done(&self, update_id: i64, holder: &str) -> Result<bool> {
        Ok(self.store.chat_update_done(update_id, holder).await?)
    }

    /// Pushes interrupted between `sending` and `sent` (to resend at start-up).
    pub async fn chat_unsent(&self) -> Result<Vec<ChatMessage>> {
        Ok(self.store.chat_unsent().await?)
    }

    /// Mark a waiting push `skipped`: its item settled while it waited, so
    /// it is never pushed. False when it no longer waits.
    pub async fn chat_skip(&self, item_kind: &str, item_id: &str, chat_id: i64) -> Result<bool> {
        Ok(self.store.chat_skip(item_kind, item_id, chat_id).await?)
    }

    /// The item's message in `chat_id` is gone (deleted, or too old to
    /// edit) while the item still needs a human: back to `sending`, so a
    /// fresh message is pushed (and, like any push, resent after a crash).
    pub async fn chat_send_again(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
    ) -> Result<()> {
        Ok(self
            .store
            .chat_send_again(item_kind, item_id, chat_id)
            .await?)
    }

    /// Release a waiting push to `sending` in forum topic `thread_id`
    /// (then sent like any push). False when it no longer waits, so two
    /// releases never both send it.
    pub async fn chat_release(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        thread_id: Option<i32>,
    ) -> Result<bool> {
        Ok(self
            .store
            .chat_release(item_kind, item_id, chat_id, thread_id)
            .await?)
    }

    /// When the next waiting push falls due (ms), if any waits.
    pub async fn chat_next_due(&self) -> Result<Option<i64>> {
        Ok(self.store.chat_next_due().await?)
    }

    /// Mark every message of an item as needing a redraw (the item
    /// changed), pushes still on their way too (they may carry the state
    /// from before the change); returns the marked records. Durable before
    /// the chat follower's cursor moves past the change, so a stop in
    /// between loses no edit.
    pub async fn chat_mark_dirty(
        &self,
        item_kind: &str,
        item_id: &str,
    ) -> Result<Vec<ChatMessage>> {
        Ok(self.store.chat_mark_dirty(item_kind, item_id).await?)
    }

    /// Waiting pushes due at or before `now` (ms), earliest first.
    pub async fn chat_held_due(&self, now: i64) -> Result<Vec<Held>> {
        Ok(self.store.chat_held_due(now).await?)
    }

    /// Messages whose item changed and that were not redrawn since (to
    /// redraw at start-up).
    pub async fn chat_dirty(&self) -> Result<Vec<ChatMessage>> {
        Ok(self.store.chat_dirty().await?)
    }

    /// A waiting push went out in the digest message `message_id`: its
    /// record says so (`digest`; a digest is never edited). False when it
    /// no longer waits.
    pub async fn chat_digested(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        message_id: i32,
    ) -> Result<bool> {
        Ok(self
            .store
            .chat_digested(item_kind, item_id, chat_id, message_id)
            .await?)
    }

    /// Move a waiting push: `hold` until `due_at` (quiet hours began while
    /// it waited out its grace), and into forum topic `t` if `into_topic`
    /// is `Some(t)` (a push let out of its grace period that joins a
    /// burst). False when it no longer waits.
    pub async fn chat_hold_again(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        (hold, due_at): (Hold, i64),
        into_topic: Option<Option<i32>>,
    ) -> Result<bool> {
        Ok(self
            .store
            .chat_hold_again(item_kind, item_id, chat_id, (hold, due_at), into_topic)
            .await?)
    }

    /// Audit a tap or reply refused because the user is not allow-listed.
    pub async fn chat_refused(
        &self,
        chat_id: i64,
        user_id: i64,
        who: &str,
        item_kind: &str,
        item_id: &str,
    ) -> Result<()> {
        Ok(self
            .store
            .chat_refused(chat_id, user_id, who, item_kind, item_id)
            .await?)
    }

    /// The item a chat message shows (for replies-to-message).
    pub async fn chat_item_of_message(
        &self,
        chat_id: i64,
        message_id: i32,
    ) -> Result<Option<(String, String)>> {
        Ok(self.store.chat_item_of_message(chat_id, message_id).await?)
    }

    /// Whether a paired member has `role` in `chat_id`.
    pub async fn chat_member_has(&self, chat_id: i64, user_id: i64, role: &str) -> Result<bool> {
        Ok(self.store.chat_member_has(chat_id, user_id, role).await?)
    }

    /// `chat_hold` in forum topic `thread_id`, known already (a
    /// burst waits with the others of its topic).
    pub async fn chat_hold_in(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        thread_id: Option<i32>,
        hold: Hold,
        due_at: i64,
    ) -> Result<bool> {
        Ok(self
            .store
            .chat_hold_in(item_kind, item_id, chat_id, thread_id, hold, due_at)
            .await?)
    }

    /// Claim the right to push `item` to `chat_id`: inserts a `sending`
    /// record unless one exists. Returns false when the item already has a
    /// message (or a push in flight) in that chat, so one item is pushed once
    /// per chat even when the event is replayed.
    pub async fn chat_begin_send(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        thread_id: Option<i32>,
        status: &str,
    ) -> Result<bool> {
        Ok(self
            .store
            .chat_begin_send(item_kind, item_id, chat_id, thread_id, status)
            .await?)
    }

    /// Every message record of an item.
    pub async fn chat_messages_of(
        &self,
        item_kind: &str,
        item_id: &str,
    ) -> Result<Vec<ChatMessage>> {
        Ok(self.store.chat_messages_of(item_kind, item_id).await?)
    }

    /// Record that the push of `item` to `chat_id` was sent as `message_id`,
    /// rendered from the state read at `since` (ms; see `chat_drawn`).
    #[allow(clippy::too_many_arguments)]
    pub async fn chat_sent(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        message_id: i32,
        status: &str,
        text_hash: &str,
        since: i64,
    ) -> Result<()> {
        Ok(self
            .store
            .chat_sent(
                item_kind, item_id, chat_id, message_id, status, text_hash, since,
            )
            .await?)
    }

    /// A push Telegram accepted (`ok`) without a message we could read:
    /// delivered, but with no message id to edit later.
    pub async fn chat_sent_unconfirmed(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        text_hash: &str,
    ) -> Result<()> {
        Ok(self
            .store
            .chat_sent_unconfirmed(item_kind, item_id, chat_id, text_hash)
            .await?)
    }

    /// Remember the text last drawn on a message (after an edit, or an
    /// edit settled for good), rendered from the state read at `since`
    /// (ms): a change marked before then is shown, one marked since is not.
    pub async fn chat_drawn(
        &self,
        item_kind: &str,
        item_id: &str,
        chat_id: i64,
        text_hash: &str,
        since: i64,
    ) -> Result<()> {
        Ok(self
            .store
            .chat_drawn(item_kind, item_id, chat_id, text_hash, since)
            .await?)
    }

    /// Record a `/start` from an unknown user; returns the one-time code.
    pub async fn pairing_create(
        &self,
        user_id: i64,
        chat_id: i64,
        username: &str,
    ) -> Result<String> {
        Ok(self
            .store
            .pairing_create(user_id, chat_id, username)
            .await?)
    }

    /// Audit a refused decision attempt on action `id` by `actor`, with the
    /// reason it was refused: its event, which is its audit entry, in a
    /// transaction of its own. Changes no state.
    pub async fn audit_refused_attempt(
        &self,
        id: &str,
        actor: Actor<'_>,
        reason: &str,
    ) -> Result<()> {
        Ok(self.store.audit_refused_attempt(id, actor, reason).await?)
    }

    /// The live grant that would decide the prompt for `tool` with `input`
    /// of `agent` in `session`/`project` run in `cwd`, if any.
    pub async fn grant_covering(
        &self,
        agent: &str,
        session: &str,
        project: &str,
        tool: &str,
        input: &serde_json::Value,
        cwd: &str,
    ) -> Result<Option<crate::store::grants::Grant>> {
        Ok(self
            .store
            .grant_covering(agent, session, project, tool, input, cwd)
            .await?)
    }
}
