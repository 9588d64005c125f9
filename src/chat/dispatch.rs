//! Turning Telegram updates into store writes through the chat channel:
//! one entry for every update, the allow-list check, taps dispatched to
//! their item kind, text replies matched to the item or prompt they answer.
//!
//! Every input is checked against the chat's allow-list (config lists plus
//! paired members), decided by the store's guarded chat functions, and
//! answered in words: a toast for taps, a message for replies and commands.
//! Nothing here panics on foreign input: unknown buttons, unrelated
//! replies, over-long texts and unknown commands each get a clear answer.

use teloxide::prelude::*;
use teloxide::types::{ForceReply, MessageId, ThreadId, Update, UpdateKind};

use super::Bridge;
use super::callback::{Callback, Item, Verb};
use super::network::{Network, Tapper};
use super::text::cut;
use crate::store::boards::AnnotationKind;
use crate::store::questions::{NewReply, ReplyKind};
use crate::store::short_id;

pub(crate) use super::network::Prompt;

/// Who is acting, as the store records it.
pub(crate) fn actor(u: &teloxide::types::User) -> String {
    match &u.username {
        Some(n) => format!("@{n}"),
        None => format!("tg:{}", u.id.0),
    }
}

pub(crate) use super::network::Right;

/// Said to a sender the allow-list does not admit.
pub(super) const NOT_ALLOWED: &str =
    "Sorry, you're not allowed to answer here. Send /start to ask to be admitted.";

impl Bridge {
    /// Whether `user` has `right` in `chat_id`.
    pub(crate) async fn allowed(&self, chat_id: i64, user: u64, right: Right) -> bool {
        if let Some(c) = self.config.chat_by_id(chat_id) {
            if right.listed(&user, &c.answer, &c.approve) {
                return true;
            }
        } else {
            return false;
        }
        let r = match right {
            Right::Answer => "answer",
            Right::Approve => "approve",
        };
        self.ops
            .chat_member_has(chat_id, user as i64, r)
            .await
            .unwrap_or(false)
    }

    /// Handle one update; never fails (problems are logged and told).
    pub(crate) async fn on_update(&self, update: Update) {
        match update.kind {
            UpdateKind::CallbackQuery(q) => self.on_tap(q).await,
            UpdateKind::Message(m) => self.on_message(m).await,
            UpdateKind::Error(raw) => self.on_unparsed(update.id.0, &raw).await,
            _ => {}
        }
    }

    /// Answer a tap with a short toast (Telegram allows 200 characters).
    pub(crate) async fn toast(&self, q: &CallbackQuery, text: &str) {
        let text = cut(text, 190);
        if let Err(e) = self
            .bot
            .answer_callback_query(q.id.clone())
            .text(text)
            .await
        {
            tracing::debug!(error = %e, "cannot answer a callback query");
        }
    }

    pub(super) async fn on_tap(&self, q: CallbackQuery) {
        let Some(msg) = q.regular_message() else {
            self.toast(&q, "This message is too old to act on; use /list.")
                .await;
            return;
        };
        let chat_id = msg.chat.id.0;
        if let Some((tap, id)) = q.data.as_deref().and_then(super::voice::note::tap_of) {
            return self.tap_voice(&q, chat_id, tap, id).await;
        }
        if let Some(id) = q.data.as_deref().and_then(super::grants::revoke_of) {
            // Revoking a grant is deciding prompts: the approvers' role.
            if !self.allowed(chat_id, q.from.id.0, Right::Approve).await {
                return self
                    .toast(
                        &q,
                        "Sorry, you're not allowed to revoke grants here. Send /start to ask to be admitted.",
                    )
                    .await;
            }
            let text = self.revoke_words(id, &actor(&q.from)).await;
            return self.toast(&q, &text).await;
        }
        let Some(cb) = q.data.as_deref().and_then(Callback::decode) else {
            self.toast(
                &q,
                "This button isn't one of mine (or is outdated). Use /list to see open items.",
            )
            .await;
            return;
        };
        let right = Right::for_item(cb.item);
        if !self.allowed(chat_id, q.from.id.0, right).await {
            self.record_refusal(chat_id, &q.from, &cb).await;
            self.toast(
                &q,
                &format!(
                    "Sorry, you're not allowed to {} here. Send /start to ask to be admitted.",
                    right.refusal()
                ),
            )
            .await;
            return;
        }
        let who = actor(&q.from);
        let thread = msg.thread_id.map(|t| t.0.0);
        let tapper = Tapper {
            network: Network::Telegram,
            who: &who,
        };
        let outcome = match cb.item {
            Item::Question if matches!(cb.verb, Verb::Toggle(_) | Verb::Done | Verb::Other) => {
                self.tap_card(&cb, tapper).await
            }
            Item::Question => self.tap_question(&cb, tapper).await,
            Item::Row => self.tap_row(&cb, tapper).await,
            Item::Action => self.tap_action(&cb, tapper).await,
        };
        self.toast(&q, &outcome.words).await;
        if outcome.post_too {
            self.say(chat_id, thread, &outcome.words).await;
        }
        if let Some(ask) = outcome.ask {
            self.prompt(chat_id, thread, &ask.text, ask.placeholder, ask.prompt)
                .await;
        }
        if outcome.redraw {
            self.redraw_quiet(cb.item, &cb.id).await;
        }
    }

    pub(super) async fn record_refusal(
        &self,
        chat_id: i64,
        user: &teloxide::types::User,
        cb: &Callback,
    ) {
        let kind = cb.item.as_str();
        let who = actor(user);
        let res = if cb.item == Item::Action {
            // Actions have their own append-only audit: the attempt goes there.
            let a = crate::store::actions::Actor::chat(&who);
            self.ops
                .audit_refused_attempt(&cb.id, a, &format!("not an approver in chat {chat_id}"))
                .await
                .map_err(|e| e.to_string())
        } else {
            self.ops
                .chat_refused(chat_id, user.id.0 as i64, &who, kind, &cb.id)
                .await
                .map_err(|e| e.to_string())
        };
        if let Err(e) = res {
            tracing::warn!(error = %e, "cannot audit a refused tap");
        }
    }

    /// Ask for a text reply to a fresh prompt message.
    pub(crate) async fn prompt(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        text: &str,
        placeholder: &str,
        p: Prompt,
    ) {
        let mut req = self.bot.send_message(ChatId(chat_id), text).reply_markup(
            ForceReply::new()
                .selective()
                .input_field_placeholder(placeholder.to_string()),
        );
        if let Some(t) = thread {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        match req.await {
            Ok(m) => {
                self.prompts
                    .lock()
                    .expect("prompts lock poisoned")
                    .insert((chat_id, m.id.0), p);
            }
            Err(e) => tracing::warn!(error = %e, "cannot send a prompt"),
        }
    }

    pub(super) async fn store_trouble(&self, q: &CallbackQuery, e: crate::ops::Error) {
        tracing::error!(error = %e, "store failed while handling a tap");
        self.toast(
            q,
            "Something went wrong on the host; nothing was recorded. Try again.",
        )
        .await;
    }

    /// A command's read failed: logged with `what`, and the chat told in
    /// words (nothing was written).
    pub(super) async fn read_trouble(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        what: &str,
        e: crate::ops::Error,
    ) {
        tracing::error!(error = %e, "cannot read {what}");
        self.say(
            chat_id,
            thread,
            "Something went wrong on the host; try again.",
        )
        .await;
    }

    /// Every message: a command goes to [`Bridge::on_command`]; a reply to
    /// one of our messages answers that item (or the prompt a tap opened).
    pub(super) async fn on_message(&self, m: Message) {
        let chat_id = m.chat.id.0;
        let thread = m.thread_id.map(|t| t.0.0);
        let Some(from) = m.from.clone() else { return };
        if from.is_bot {
            return;
        }
        if let Some(note) = super::voice::note::note_of(&m) {
            return self.on_voice(&m, &from, note).await;
        }
        let Some(text) = m.text().map(str::to_string) else {
            if m.reply_to_message().is_some() {
                self.say(
                    chat_id,
                    thread,
                    "I can only take text answers, or voice notes.",
                )
                .await;
            }
            return;
        };
        let configured = self.config.chat_by_id(chat_id).is_some();
        if let Some(rest) = text.strip_prefix('/') {
            return self.on_command(&m, thread, &from, rest, configured).await;
        }
        if !configured {
            return;
        }
        let Some(orig) = m.reply_to_message() else {
            return self
                .say(chat_id, thread, "To answer, reply to the item's message, or use /answer <id> <text>. /help for more.")
                .await;
        };
        if !self.allowed(chat_id, from.id.0, Right::Answer).await {
            return self.say(chat_id, thread, NOT_ALLOWED).await;
        }
        let who = actor(&from);
        let prompt = self.prompt_at(chat_id, orig.id.0);
        if let Some(p) = prompt {
            return self
                .on_prompt_reply(chat_id, thread, &from, &who, p, &text)
                .await;
        }
        match self.item_of(chat_id, orig.id.0).await {
            Some((kind, id)) => self.answer_item(chat_id, thread, Words { item: kind, id: &id, text: &text, who: &who, kind: ReplyKind::Answer, revision: None }).await,
            None => {
                self.say(chat_id, thread, "That message isn't one of my items. Reply to a question's message, or use /answer <id> <text>.")
                    .await
            }
        }
    }

    /// The prompt the bot's message `message_id` in `chat_id` asked, if
    /// it was one.
    pub(super) fn prompt_at(&self, chat_id: i64, message_id: i32) -> Option<Prompt> {
        self.prompts
            .lock()
            .expect("prompts lock poisoned")
            .get(&(chat_id, message_id))
            .cloned()
    }

    pub(super) async fn item_of(&self, chat_id: i64, message_id: i32) -> Option<(Item, String)> {
        let (kind, id) = self
            .ops
            .chat_item_of_message(chat_id, message_id)
            .await
            .ok()
            .flatten()?;
        Some((Item::from_kind(&kind)?, id))
    }

    /// Write a text answer (or clarify) to an item through the chat channel
    /// and say what happened.
    pub(crate) async fn answer_item(&self, chat_id: i64, thread: Option<i32>, w: Words<'_>) {
        let said = self.answer_words(w).await;
        self.say(chat_id, thread, &said).await;
        if w.item == Item::Row {
            self.redraw_quiet(Item::Row, w.id).await;
        }
    }

    /// Write a text answer (or clarify) to an item through the chat
    /// channel, on any network; what to tell the person. A question that
    /// took it is redrawn here.
    pub(crate) async fn answer_words(&self, w: Words<'_>) -> String {
        let Words {
            item,
            id,
            text,
            who,
            kind: reply_kind,
            revision: expected_revision,
        } = w;
        match item {
            Item::Question => {
                let r = NewReply {
                    text: text.to_string(),
                    kind: reply_kind,
                    context: None,
                    by: who.to_string(),
                    expected_revision,
                };
                match self.ops.reply_chat(id, &r).await {
                    Ok(Ok(_)) => {
                        let what = if reply_kind == ReplyKind::Clarify {
                            "Correction recorded"
                        } else {
                            "Recorded"
                        };
                        self.redraw_quiet(Item::Question, id).await;
                        format!("{what} for #{}.", short_id(id))
                    }
                    Ok(Err(refusal)) => self.refusal_words(id, &refusal).await,
                    Err(crate::ops::Error::Invalid { message: msg }) => {
                        format!("Not recorded: {msg}")
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "store failed on a chat answer");
                        "Something went wrong on the host; nothing was recorded. Try again."
                            .to_string()
                    }
                }
            }
            Item::Row => {
                self.annotate_row(id, text, who, AnnotationKind::from(reply_kind), None)
                    .await
            }
            Item::Action => {
                "Actions are decided with the buttons (Approve / Reject / Edit).".to_string()
            }
        }
    }

    pub(super) async fn on_prompt_reply(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        from: &teloxide::types::User,
        who: &str,
        p: Prompt,
        text: &str,
    ) {
        match p {
            Prompt::Clarify { id, revision } => {
                self.answer_item(
                    chat_id,
                    thread,
                    Words {
                        item: Item::Question,
                        id: &id,
                        text,
                        who,
                        kind: ReplyKind::Clarify,
                        revision: Some(revision),
                    },
                )
                .await
            }
            Prompt::RowAnswer { id } => {
                self.answer_item(
                    chat_id,
                    thread,
                    Words {
                        item: Item::Row,
                        id: &id,
                        text,
                        who,
                        kind: ReplyKind::Answer,
                        revision: None,
                    },
                )
                .await
            }
            Prompt::Other { id, revision } => {
                self.answer_other(chat_id, thread, &id, revision, text, who)
                    .await
            }
            Prompt::Voice {
                item,
                id,
                how,
                revision,
            } => {
                self.on_voice_prompt_reply(chat_id, thread, who, (item, &id, how, revision), text)
                    .await
            }
            Prompt::ActionEdit { id } => {
                if !self.allowed(chat_id, from.id.0, Right::Approve).await {
                    return self
                        .say(
                            chat_id,
                            thread,
                            "Sorry, you're not allowed to decide actions here.",
                        )
                        .await;
                }
                self.edit_action(chat_id, thread, &id, text, who).await
            }
        }
    }
}

/// Words a person sends an item through a chat: the item, the text, who
/// wrote it, as what kind of reply, and the revision it was written for
/// (`None`: whatever the item shows now).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Words<'a> {
    pub(crate) item: Item,
    pub(crate) id: &'a str,
    pub(crate) text: &'a str,
    pub(crate) who: &'a str,
    pub(crate) kind: ReplyKind,
    pub(crate) revision: Option<i64>,
}
