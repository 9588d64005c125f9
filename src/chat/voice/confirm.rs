//! A transcript's Send / Edit / Discard taps and the reply to an Edit
//! prompt: only Send writes the answer, through the store's writers.

use teloxide::prelude::*;
use teloxide::types::MessageId;

use super::note::Tap;
use crate::chat::Bridge;
use crate::chat::callback::Item;
use crate::chat::dispatch::Words;
use crate::chat::dispatch::{NOT_ALLOWED, Prompt, Right};
use crate::chat::text::cut;
use crate::store::questions::{Choice, ReplyKind};
use crate::store::short_id;
use crate::store::voice::{Sent, VoiceReply};

impl Bridge {
    /// Replace a transcript message's text, dropping its buttons (or say
    /// `text` when it has no message).
    pub(super) async fn settle_message(&self, v: &VoiceReply, text: &str) {
        let thread = v.note.thread_id.and_then(|t| i32::try_from(t).ok());
        match v
            .shown_message_id
            .and_then(|m| i32::try_from(m).ok())
            .filter(|m| *m > 0)
        {
            Some(m) => {
                if let Err(e) = self
                    .bot
                    .edit_message_text(ChatId(v.note.chat_id), MessageId(m), text)
                    .await
                {
                    tracing::debug!(error = %e, "cannot edit a transcript message");
                }
            }
            None => self.say(v.note.chat_id, thread, text).await,
        }
    }

    /// A tap on a transcript's Send, Edit or Discard.
    pub(in crate::chat) async fn tap_voice(
        &self,
        q: &CallbackQuery,
        chat_id: i64,
        tap: Tap,
        id: &str,
    ) {
        if !self.allowed(chat_id, q.from.id.0, Right::Answer).await {
            return self.toast(q, NOT_ALLOWED).await;
        }
        let v = match self.ops.voice_get(id).await {
            Ok(Some(v)) => v,
            Ok(None) => return self.toast(q, "That transcript no longer exists.").await,
            Err(e) => return self.store_trouble(q, e).await,
        };
        if v.note.user_id != q.from.id.0 as i64 {
            return self
                .toast(q, "Only the person who spoke can confirm this transcript.")
                .await;
        }
        if v.state != "transcribed" {
            return self.toast(q, gone(&v.state)).await;
        }
        match tap {
            Tap::Send => self.voice_send(q, v).await,
            Tap::Edit => self.voice_edit(q, v).await,
            Tap::Discard => match self.ops.voice_settle(id, "transcribed", "discarded").await {
                Ok(Some(v)) => {
                    self.toast(q, "Discarded; nothing was recorded.").await;
                    let text = format!(
                        "🗑 Discarded the transcript for #{}; nothing was recorded.",
                        short_id(&v.note.item_id)
                    );
                    self.settle_message(&v, &text).await;
                }
                Ok(None) => self.toast(q, "This transcript was already settled.").await,
                Err(e) => self.store_trouble(q, e).await,
            },
        }
    }

    async fn voice_send(&self, q: &CallbackQuery, v: VoiceReply) {
        let thread = v.note.thread_id.and_then(|t| i32::try_from(t).ok());
        let transcript = v.transcript.clone().unwrap_or_default();
        let sid = short_id(&v.note.item_id).to_string();
        if v.note.item_kind == "row" {
            return self.voice_send_row(q, v, &transcript).await;
        }
        let mut text = transcript.clone();
        if v.note.target == "other"
            && let Ok(Some(question)) = self.calls().get_question(&v.note.item_id).await
            && Some(question.revision) == v.note.revision
            && question.choice == Choice::Many
        {
            // As a typed Other… answer: the ticked options, then the words.
            let mut parts: Vec<&str> = question.picked_labels();
            parts.push(&transcript);
            text = parts.join(", ");
        }
        match self.ops.voice_send(&v.id, &text).await {
            Ok(Sent::Written(_)) => {
                self.toast(q, &format!("Sent: {}", cut(&text, 150))).await;
                let what = if v.note.target == "clarify" {
                    "correction"
                } else {
                    "answer"
                };
                let done = format!("🎙 Sent as your {what} to #{sid}: «{text}»");
                self.settle_message(&v, &done).await;
                self.redraw_quiet(Item::Question, &v.note.item_id).await;
                self.nudge.notify_waiters();
            }
            Ok(Sent::Refused(refusal)) => {
                self.tell_refusal(Some(q), v.note.chat_id, thread, &v.note.item_id, &refusal)
                    .await
            }
            Ok(Sent::Expired) => {
                self.toast(q, gone("expired")).await;
                self.settle_message(&v, &expired_text(&v)).await;
            }
            Ok(Sent::Gone(state)) => {
                self.toast(q, gone(state.as_deref().unwrap_or("gone")))
                    .await
            }
            Err(crate::ops::Error::Invalid { message: msg }) => {
                self.toast(q, &format!("Not recorded: {msg}")).await
            }
            Err(e) => self.store_trouble(q, e).await,
        }
    }

    /// A row's Send: the answer is written as a chat annotation under a
    /// request id named after the note, then the note is settled `sent`.
    /// Why that order and the id: a row's answer and the note are two
    /// writes, and the daemon may die between them. Then the note is still
    /// `transcribed`, its buttons still work, and the next Send replays
    /// the annotation already written (the request id remembers it)
    /// instead of writing it again — the answer is neither lost nor
    /// doubled. A double tap replays the same way, and only one of the two
    /// settles the note.
    async fn voice_send_row(&self, q: &CallbackQuery, v: VoiceReply, transcript: &str) {
        let thread = v.note.thread_id.and_then(|t| i32::try_from(t).ok());
        if v.expires_at.is_some_and(|at| at <= self.ops.now()) {
            if let Ok(Some(v)) = self.ops.voice_settle(&v.id, "transcribed", "expired").await {
                self.settle_message(&v, &expired_text(&v)).await;
            }
            return self.toast(q, gone("expired")).await;
        }
        let said = crate::store::request::scope(
            format!("voice-send:{}", v.id),
            self.annotate_row(
                &v.note.item_id,
                transcript,
                &v.note.by,
                crate::store::boards::AnnotationKind::Answer,
                None,
            ),
        )
        .await;
        if !said.starts_with("Recorded") {
            self.toast(q, &said).await;
            self.say(v.note.chat_id, thread, &said).await;
            return;
        }
        if crate::fault::on("die-mid-voice-send") {
            // FAULT(die-mid-voice-send): the daemon dies after a row's
            // voice answer is written, before its note is settled.
            std::process::abort();
        }
        match self.ops.voice_settle(&v.id, "transcribed", "sent").await {
            Ok(Some(_)) => {}
            Ok(None) => return self.toast(q, gone("sent")).await,
            Err(e) => return self.store_trouble(q, e).await,
        }
        self.toast(q, &said).await;
        let done = format!(
            "🎙 Sent as your answer to #{}: «{transcript}»",
            short_id(&v.note.item_id)
        );
        self.settle_message(&v, &done).await;
        self.redraw_quiet(Item::Row, &v.note.item_id).await;
        self.nudge.notify_waiters();
    }

    /// Edit: the transcript comes back as a prompt; the reply to it is the
    /// answer, written as a typed one.
    async fn voice_edit(&self, q: &CallbackQuery, v: VoiceReply) {
        let v = match self.ops.voice_settle(&v.id, "transcribed", "edited").await {
            Ok(Some(v)) => v,
            Ok(None) => return self.toast(q, "This transcript was already settled.").await,
            Err(e) => return self.store_trouble(q, e).await,
        };
        self.toast(q, "Correct it and send it as a reply.").await;
        let sid = short_id(&v.note.item_id).to_string();
        self.settle_message(
            &v,
            &format!("✏️ Editing the transcript for #{sid}; see below."),
        )
        .await;
        let item = if v.note.item_kind == "row" {
            Item::Row
        } else {
            Item::Question
        };
        let how = match v.note.target.as_str() {
            "clarify" => "clarify",
            "other" => "other",
            _ => "answer",
        };
        let text = format!(
            "✏️ Correct the transcript for #{sid} and send it as a reply to this message (nothing is recorded until you do):\n\n{}",
            v.transcript.as_deref().unwrap_or_default()
        );
        let thread = v.note.thread_id.and_then(|t| i32::try_from(t).ok());
        self.prompt(
            v.note.chat_id,
            thread,
            &text,
            "the corrected text",
            Prompt::Voice {
                item,
                id: v.note.item_id.clone(),
                how,
                revision: v.note.revision,
            },
        )
        .await;
    }

    /// The reply to an Edit prompt: written as a typed answer would be.
    pub(in crate::chat) async fn on_voice_prompt_reply(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        who: &str,
        (item, id, how, revision): (Item, &str, &str, Option<i64>),
        text: &str,
    ) {
        match (item, how) {
            (Item::Row, _) => {
                self.answer_item(
                    chat_id,
                    thread,
                    Words {
                        item: Item::Row,
                        id,
                        text,
                        who,
                        kind: ReplyKind::Answer,
                        revision: None,
                    },
                )
                .await
            }
            (_, "other") => {
                self.answer_other(chat_id, thread, id, revision.unwrap_or(0), text, who)
                    .await
            }
            (_, how) => {
                // A clarify answers the revision it was spoken for; an
                // answer stands on whatever the question shows now.
                let (kind, revision) = match how {
                    "clarify" => (ReplyKind::Clarify, revision),
                    _ => (ReplyKind::Answer, None),
                };
                self.answer_item(
                    chat_id,
                    thread,
                    Words {
                        item,
                        id,
                        text,
                        who,
                        kind,
                        revision,
                    },
                )
                .await
            }
        }
    }
}

/// The text of a transcript that expired unsent.
pub(super) fn expired_text(v: &VoiceReply) -> String {
    format!(
        "⌛ The transcript for #{} expired unsent; nothing was recorded. Send the voice note again to answer by voice.",
        short_id(&v.note.item_id)
    )
}

/// Why a transcript's button does nothing, by the note's state.
fn gone(state: &str) -> &'static str {
    match state {
        "sent" => "Already sent.",
        "discarded" => "This transcript was discarded.",
        "expired" => "This transcript expired unsent; send the voice note again.",
        "edited" => "You chose to edit this one: reply to the correction prompt.",
        "failed" => "This voice note was not transcribed; send it again.",
        _ => "This transcript is not ready yet.",
    }
}
