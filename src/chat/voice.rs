//! Voice replies: a voice note (or audio file) sent to answer a question
//! or a blocked row is downloaded, transcribed by the configured
//! transcriber and shown back with Send / Edit / Discard. Only Send writes
//! the answer, through the chat writer and its rule like a typed reply.
//!
//! The note's progress lives in the store (`voice_replies`), one guarded
//! step at a time, so a restart loses nothing and repeats nothing, and
//! two daemons never transcribe one note. A transcription runs in a task
//! of its own, never on the update loop: a slow transcriber holds up no
//! other tap or reply. A failure is one line in the chat; the item stays
//! open. This file does not decide answers: the store's writers do.

pub(super) mod note;
mod transcribe;

use note::{Note, Tap, data};

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use teloxide::net::Download;
use teloxide::prelude::*;
use teloxide::types::{
    FileId, InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ReplyParameters, ThreadId,
};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::Bridge;
use super::callback::Item;
use super::dispatch::{NOT_ALLOWED, Prompt, Right, actor};
use super::text::cut;
use crate::store::questions::{Choice, ReplyKind};
use crate::store::short_id;
use crate::store::voice::{NewVoice, Sent, VoiceReply};

/// Said when a voice note arrives and no transcriber is configured.
pub(super) const VOICE_OFF: &str = "🎙 Voice replies are off: no transcriber is configured. To turn them on, the operator sets [voice] command (a program that prints the transcript of the audio file it is given, e.g. whisper.cpp's whisper-cli) or [voice] url (an OpenAI-compatible /v1/audio/transcriptions endpoint) in handoff.toml and restarts. Meanwhile, reply in text.";

/// How often notes left half-way and unconfirmed transcripts are looked at.
const SWEEP: Duration = Duration::from_secs(2);

/// How long a received note waits for the task spawned on its receipt
/// before a sweep takes it on.
const FRESH_MS: i64 = 5_000;

/// How long getFile and the download may take together.
const FETCH_LIMIT: Duration = Duration::from_secs(60);

/// What a note answers: the item, how (`answer`, `clarify`, `other`) and
/// the revision it was spoken for.
struct Target {
    item: Item,
    id: String,
    how: &'static str,
    revision: Option<i64>,
}

/// What an item is called in a sentence.
fn noun(item_kind: &str) -> &'static str {
    if item_kind == "row" {
        "row"
    } else {
        "question"
    }
}

impl Bridge {
    /// A voice note or audio file from `from`: find what it answers, check
    /// it against the limits, record it and start its transcription.
    pub(super) async fn on_voice(&self, m: &Message, from: &teloxide::types::User, note: Note) {
        let chat_id = m.chat.id.0;
        let thread = m.thread_id.map(|t| t.0.0);
        if self.config.chat_by_id(chat_id).is_none() {
            return;
        }
        if !self.allowed(chat_id, from.id.0, Right::Answer).await {
            return self.say(chat_id, thread, NOT_ALLOWED).await;
        }
        let target = match self.voice_target(m).await {
            Ok(t) => t,
            Err(why) => return self.say(chat_id, thread, &why).await,
        };
        let cfg = &self.config.voice;
        if !cfg.is_on() {
            return self.say(chat_id, thread, VOICE_OFF).await;
        }
        let sid = short_id(&target.id).to_string();
        if u64::from(note.duration) > cfg.max_duration_secs {
            let text = format!(
                "🎙 Your voice note for #{sid} is too long ({}s; the limit is {}s). Nothing was recorded: send a shorter one, or reply in text.",
                note.duration, cfg.max_duration_secs
            );
            return self.say(chat_id, thread, &text).await;
        }
        if let Some(size) = note.size
            && u64::from(size) > cfg.max_bytes
        {
            let text = format!(
                "🎙 Your voice note for #{sid} is too big to fetch ({}; the limit is {}). Nothing was recorded: send a shorter one, or reply in text.",
                megabytes(u64::from(size)),
                megabytes(cfg.max_bytes)
            );
            return self.say(chat_id, thread, &text).await;
        }
        let v = NewVoice {
            chat_id,
            message_id: i64::from(m.id.0),
            thread_id: thread.map(i64::from),
            user_id: from.id.0 as i64,
            by: actor(from),
            item_kind: target.item.as_str().to_string(),
            item_id: target.id.clone(),
            target: target.how.to_string(),
            revision: target.revision,
            file_id: note.file_id,
            duration_secs: i64::from(note.duration),
            file_size: note.size.map(i64::from),
        };
        match self.store.voice_receive(&v).await {
            Ok((row, _)) if matches!(row.state.as_str(), "received" | "transcribing") => {
                self.spawn_transcription(row.id)
            }
            // A redelivered update of a note already further on.
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "cannot record a voice note");
                self.say(
                    chat_id,
                    thread,
                    "Something went wrong on the host; nothing was recorded. Send the voice note again.",
                )
                .await
            }
        }
    }

    /// What the note in `m` answers: the prompt or item message it replies
    /// to, or the item its `/answer <id>` caption names.
    async fn voice_target(&self, m: &Message) -> Result<Target, String> {
        let chat_id = m.chat.id.0;
        if let Some(orig) = m.reply_to_message() {
            let prompt = self
                .prompts
                .lock()
                .expect("prompts lock poisoned")
                .get(&(chat_id, orig.id.0))
                .cloned();
            let t = |item, id: &str, how, revision| Target {
                item,
                id: id.to_string(),
                how,
                revision,
            };
            match prompt {
                Some(Prompt::Clarify { id, revision }) => {
                    return Ok(t(Item::Question, &id, "clarify", Some(revision)));
                }
                Some(Prompt::Other { id, revision }) => {
                    return Ok(t(Item::Question, &id, "other", Some(revision)));
                }
                Some(Prompt::RowAnswer { id }) => return Ok(t(Item::Row, &id, "answer", None)),
                Some(Prompt::Voice {
                    item,
                    id,
                    how,
                    revision,
                }) => {
                    return Ok(t(item, &id, how, revision));
                }
                Some(Prompt::ActionEdit { .. }) => {
                    return Err("An action's edit is a JSON patch: type it.".into());
                }
                None => {}
            }
            return match self.item_of(chat_id, orig.id.0).await {
                Some((Item::Action, _)) => Err(
                    "Actions are decided with the buttons (Approve / Reject / Edit), not by voice."
                        .into(),
                ),
                Some((item, id)) => Ok(t(item, &id, "answer", None)),
                None => Err("That message isn't one of my items. Send the voice note as a reply to a question's message, or with the caption /answer <id>.".into()),
            };
        }
        let caption = m.caption().unwrap_or_default().trim();
        let args = caption
            .strip_prefix("/answer")
            .filter(|rest| rest.is_empty() || rest.starts_with([' ', '@']))
            .map(|rest| rest.split_once(' ').map_or("", |(_, a)| a).trim());
        let Some(args) = args else {
            return Err("To answer by voice, send the voice note as a reply to the item's message, or with the caption /answer <id>.".into());
        };
        let sid = args
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_start_matches('#');
        if sid.is_empty() {
            return Err(
                "Usage: a voice note with the caption /answer <id> — the id is the #code on the item's message."
                    .into(),
            );
        }
        match self.find_item(sid).await {
            Some((item, id)) => Ok(Target {
                item,
                id,
                how: "answer",
                revision: None,
            }),
            None => Err(format!(
                "No open item with id {sid}. /list shows open items."
            )),
        }
    }

    /// Transcribe note `id` in a task of its own (never on the update
    /// loop), stopped by shutdown; a note left half-way is taken up again
    /// by a sweep once its claim is stale.
    pub(super) fn spawn_transcription(&self, id: String) {
        let Some(me) = self.me.upgrade() else { return };
        let cancel = self.cancel.clone();
        self.tracker.spawn(async move {
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = me.transcription(&id) => {}
            }
        });
    }

    /// How long a claim on a transcription stands before another worker
    /// may take it over (its worker died): longer than a fetch and a
    /// transcription ever take.
    fn claim_stale_ms(&self) -> i64 {
        let limit = self
            .config
            .voice
            .timeout_secs
            .saturating_add(FETCH_LIMIT.as_secs() + 30);
        i64::try_from(limit.saturating_mul(1000)).unwrap_or(i64::MAX)
    }

    async fn transcription(&self, id: &str) {
        let worker = self.roles.me().to_string();
        let v = match self
            .store
            .voice_claim(id, &worker, self.claim_stale_ms())
            .await
        {
            Ok(Some(v)) => v,
            Ok(None) => return,
            Err(e) => return tracing::warn!(error = %e, voice = id, "cannot claim a voice note"),
        };
        let result = self.fetch_and_transcribe(&v).await;
        let thread = v.thread_id.and_then(|t| i32::try_from(t).ok());
        match result {
            Ok(text) => {
                let keep_ms = i64::try_from(self.config.voice.expire_secs.saturating_mul(1000))
                    .unwrap_or(i64::MAX);
                match self
                    .store
                    .voice_transcribed(id, &worker, &text, keep_ms)
                    .await
                {
                    Ok(Some(v)) => self.show_transcript(&v).await,
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, voice = id, "cannot record a transcript"),
                }
            }
            Err(why) => {
                tracing::info!(voice = id, reason = %why, "a voice note was not transcribed");
                if let Ok(Some(v)) = self.store.voice_failed(id, Some(&worker), &why).await {
                    let text = format!(
                        "🎙 Your voice note for #{} was not transcribed: {why}. Nothing was recorded; the {} is still open — send it again or reply in text.",
                        short_id(&v.item_id),
                        noun(&v.item_kind)
                    );
                    self.say(v.chat_id, thread, &text).await;
                }
            }
        }
    }

    /// Download the note's audio (getFile, its size checked before the
    /// download and during it) and transcribe it; the file is deleted
    /// afterwards unless `[voice] keep`.
    async fn fetch_and_transcribe(&self, v: &VoiceReply) -> Result<String, String> {
        let cfg = &self.config.voice;
        let dir = cfg.dir();
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| format!("the audio cannot be stored on the host ({e})"))?;
        let fetched = tokio::time::timeout(FETCH_LIMIT, self.fetch(v, &dir)).await;
        let path = match fetched {
            Ok(r) => r?,
            Err(_) => {
                return Err(format!(
                    "Telegram did not hand over the audio within {}s",
                    FETCH_LIMIT.as_secs()
                ));
            }
        };
        let out = transcribe::transcribe(cfg, &path).await;
        if !cfg.keep
            && let Err(e) = tokio::fs::remove_file(&path).await
        {
            tracing::warn!(error = %e, path = %path.display(), "cannot delete a voice note's audio");
        }
        out
    }

    async fn fetch(
        &self,
        v: &VoiceReply,
        dir: &std::path::Path,
    ) -> Result<std::path::PathBuf, String> {
        let max = self.config.voice.max_bytes;
        let file = self
            .bot
            .get_file(FileId(v.file_id.clone()))
            .await
            .map_err(|e| {
                format!(
                    "Telegram did not hand over the audio ({})",
                    crate::one_line(&e)
                )
            })?;
        if file.meta.size != u32::MAX && u64::from(file.meta.size) > max {
            return Err(format!(
                "the audio is too big to fetch ({}; the limit is {})",
                megabytes(u64::from(file.meta.size)),
                megabytes(max)
            ));
        }
        let ext = std::path::Path::new(&file.path)
            .extension()
            .and_then(|e| e.to_str())
            .filter(|e| e.len() <= 5 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
            .unwrap_or("ogg");
        let path = dir.join(format!("{}.{ext}", v.id));
        let mut out = tokio::fs::File::create(&path)
            .await
            .map_err(|e| format!("the audio cannot be stored on the host ({e})"))?;
        let mut stream = self.bot.download_file_stream(&file.path);
        let mut got: u64 = 0;
        let mut failed = None;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(c) => {
                    got += c.len() as u64;
                    if got > max {
                        failed = Some(format!(
                            "the audio is too big to fetch (over {})",
                            megabytes(max)
                        ));
                        break;
                    }
                    if let Err(e) = out.write_all(&c).await {
                        failed = Some(format!("the audio cannot be stored on the host ({e})"));
                        break;
                    }
                }
                Err(e) => {
                    failed = Some(format!(
                        "the audio download from Telegram failed ({})",
                        crate::one_line(&e)
                    ));
                    break;
                }
            }
        }
        let flushed = out.flush().await;
        drop(out);
        if failed.is_none()
            && let Err(e) = flushed
        {
            failed = Some(format!("the audio cannot be stored on the host ({e})"));
        }
        match failed {
            Some(why) => {
                let _ = tokio::fs::remove_file(&path).await;
                Err(why)
            }
            None => Ok(path),
        }
    }

    /// Show a transcript with its Send / Edit / Discard buttons, as a reply
    /// to the note — once, whoever else tries (a failed send is owed again).
    async fn show_transcript(&self, v: &VoiceReply) {
        match self.store.voice_show_claim(&v.id).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return tracing::warn!(error = %e, "cannot claim a transcript's showing"),
        }
        let minutes = self.config.voice.expire_secs.div_ceil(60);
        let text = format!(
            "🎙 Transcript of your voice note for #{}:\n\n«{}»\n\nSend it as your answer, Edit it first, or Discard it. Nothing is recorded until you tap Send; unconfirmed, it expires in {minutes} min.",
            short_id(&v.item_id),
            v.transcript.as_deref().unwrap_or_default()
        );
        let b =
            |label: &str, tap| InlineKeyboardButton::callback(label.to_string(), data(tap, &v.id));
        let markup = InlineKeyboardMarkup::new([[
            b("✅ Send", Tap::Send),
            b("✏️ Edit", Tap::Edit),
            b("🗑 Discard", Tap::Discard),
        ]]);
        let mut req = self
            .bot
            .send_message(ChatId(v.chat_id), text)
            .reply_markup(markup);
        if let Ok(m) = i32::try_from(v.message_id) {
            req = req
                .reply_parameters(ReplyParameters::new(MessageId(m)).allow_sending_without_reply());
        }
        if let Some(t) = v.thread_id.and_then(|t| i32::try_from(t).ok()) {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        let shown = match req.await {
            Ok(m) => Some(i64::from(m.id.0)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot show a transcript; retrying");
                None
            }
        };
        if let Err(e) = self.store.voice_shown(&v.id, shown).await {
            tracing::warn!(error = %e, "cannot record a transcript's message");
        }
    }

    /// Replace a transcript message's text, dropping its buttons (or say
    /// `text` when it has no message).
    async fn settle_message(&self, v: &VoiceReply, text: &str) {
        let thread = v.thread_id.and_then(|t| i32::try_from(t).ok());
        match v
            .shown_message_id
            .and_then(|m| i32::try_from(m).ok())
            .filter(|m| *m > 0)
        {
            Some(m) => {
                if let Err(e) = self
                    .bot
                    .edit_message_text(ChatId(v.chat_id), MessageId(m), text)
                    .await
                {
                    tracing::debug!(error = %e, "cannot edit a transcript message");
                }
            }
            None => self.say(v.chat_id, thread, text).await,
        }
    }

    /// A tap on a transcript's Send, Edit or Discard.
    pub(super) async fn tap_voice(&self, q: &CallbackQuery, chat_id: i64, tap: Tap, id: &str) {
        if !self.allowed(chat_id, q.from.id.0, Right::Answer).await {
            return self.toast(q, NOT_ALLOWED).await;
        }
        let v = match self.store.voice_get(id).await {
            Ok(Some(v)) => v,
            Ok(None) => return self.toast(q, "That transcript no longer exists.").await,
            Err(e) => return self.store_trouble(q, e).await,
        };
        if v.user_id != q.from.id.0 as i64 {
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
            Tap::Discard => match self
                .store
                .voice_settle(id, "transcribed", "discarded")
                .await
            {
                Ok(Some(v)) => {
                    self.toast(q, "Discarded; nothing was recorded.").await;
                    let text = format!(
                        "🗑 Discarded the transcript for #{}; nothing was recorded.",
                        short_id(&v.item_id)
                    );
                    self.settle_message(&v, &text).await;
                }
                Ok(None) => self.toast(q, "This transcript was already settled.").await,
                Err(e) => self.store_trouble(q, e).await,
            },
        }
    }

    async fn voice_send(&self, q: &CallbackQuery, v: VoiceReply) {
        let thread = v.thread_id.and_then(|t| i32::try_from(t).ok());
        let transcript = v.transcript.clone().unwrap_or_default();
        let sid = short_id(&v.item_id).to_string();
        if v.item_kind == "row" {
            return self.voice_send_row(q, v, &transcript).await;
        }
        let mut text = transcript.clone();
        if v.target == "other"
            && let Ok(Some(question)) = self.store.get_question(&v.item_id).await
            && Some(question.revision) == v.revision
            && question.choice == Choice::Many
        {
            // As a typed Other… answer: the ticked options, then the words.
            let mut parts: Vec<&str> = question.picked_labels();
            parts.push(&transcript);
            text = parts.join(", ");
        }
        match self.store.voice_send(&v.id, &text).await {
            Ok(Sent::Written(_)) => {
                self.toast(q, &format!("Sent: {}", cut(&text, 150))).await;
                let what = if v.target == "clarify" {
                    "correction"
                } else {
                    "answer"
                };
                let done = format!("🎙 Sent as your {what} to #{sid}: «{text}»");
                self.settle_message(&v, &done).await;
                self.redraw_quiet(Item::Question, &v.item_id).await;
                self.nudge.notify_waiters();
            }
            Ok(Sent::Refused(refusal)) => {
                self.tell_refusal(Some(q), v.chat_id, thread, &v.item_id, &refusal)
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
            Err(crate::store::Error::Invalid(msg)) => {
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
        let thread = v.thread_id.and_then(|t| i32::try_from(t).ok());
        if v.expires_at.is_some_and(|at| at <= self.store.now()) {
            if let Ok(Some(v)) = self
                .store
                .voice_settle(&v.id, "transcribed", "expired")
                .await
            {
                self.settle_message(&v, &expired_text(&v)).await;
            }
            return self.toast(q, gone("expired")).await;
        }
        let said = crate::store::request::scope(
            format!("voice-send:{}", v.id),
            self.annotate_row(
                &v.item_id,
                transcript,
                &v.by,
                crate::store::boards::AnnotationKind::Answer,
                None,
            ),
        )
        .await;
        if !said.starts_with("Recorded") {
            self.toast(q, &said).await;
            self.say(v.chat_id, thread, &said).await;
            return;
        }
        if crate::fault::on("die-mid-voice-send") {
            // FAULT(die-mid-voice-send): the daemon dies after a row's
            // voice answer is written, before its note is settled.
            std::process::abort();
        }
        match self.store.voice_settle(&v.id, "transcribed", "sent").await {
            Ok(Some(_)) => {}
            Ok(None) => return self.toast(q, gone("sent")).await,
            Err(e) => return self.store_trouble(q, e).await,
        }
        self.toast(q, &said).await;
        let done = format!(
            "🎙 Sent as your answer to #{}: «{transcript}»",
            short_id(&v.item_id)
        );
        self.settle_message(&v, &done).await;
        self.redraw_quiet(Item::Row, &v.item_id).await;
        self.nudge.notify_waiters();
    }

    /// Edit: the transcript comes back as a prompt; the reply to it is the
    /// answer, written as a typed one.
    async fn voice_edit(&self, q: &CallbackQuery, v: VoiceReply) {
        let v = match self
            .store
            .voice_settle(&v.id, "transcribed", "edited")
            .await
        {
            Ok(Some(v)) => v,
            Ok(None) => return self.toast(q, "This transcript was already settled.").await,
            Err(e) => return self.store_trouble(q, e).await,
        };
        self.toast(q, "Correct it and send it as a reply.").await;
        let sid = short_id(&v.item_id).to_string();
        self.settle_message(
            &v,
            &format!("✏️ Editing the transcript for #{sid}; see below."),
        )
        .await;
        let item = if v.item_kind == "row" {
            Item::Row
        } else {
            Item::Question
        };
        let how = match v.target.as_str() {
            "clarify" => "clarify",
            "other" => "other",
            _ => "answer",
        };
        let text = format!(
            "✏️ Correct the transcript for #{sid} and send it as a reply to this message (nothing is recorded until you do):\n\n{}",
            v.transcript.as_deref().unwrap_or_default()
        );
        let thread = v.thread_id.and_then(|t| i32::try_from(t).ok());
        self.prompt(
            v.chat_id,
            thread,
            &text,
            "the corrected text",
            Prompt::Voice {
                item,
                id: v.item_id.clone(),
                how,
                revision: v.revision,
            },
        )
        .await;
    }

    /// The reply to an Edit prompt: written as a typed answer would be.
    pub(super) async fn on_voice_prompt_reply(
        &self,
        chat_id: i64,
        thread: Option<i32>,
        who: &str,
        (item, id, how, revision): (Item, &str, &str, Option<i64>),
        text: &str,
    ) {
        match (item, how) {
            (Item::Row, _) => {
                self.answer_row(chat_id, thread, id, text, who, ReplyKind::Answer)
                    .await
            }
            (_, "other") => {
                self.answer_other(chat_id, thread, id, revision.unwrap_or(0), text, who)
                    .await
            }
            (_, "clarify") => {
                self.answer_item(
                    chat_id,
                    thread,
                    item,
                    id,
                    text,
                    who,
                    ReplyKind::Clarify,
                    revision,
                )
                .await
            }
            _ => {
                self.answer_item(
                    chat_id,
                    thread,
                    item,
                    id,
                    text,
                    who,
                    ReplyKind::Answer,
                    None,
                )
                .await
            }
        }
    }

    /// Every [`SWEEP`] until `cancel`: settle expired transcripts (saying
    /// so), and carry on with notes left half-way — never claimed, claimed
    /// by a worker that died, or transcribed and not shown. Every step is
    /// guarded in the store, so several daemons sweeping take each once.
    pub(super) async fn voice_sweep(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(SWEEP) => {}
            }
            match self.store.voice_expire().await {
                Ok(expired) => {
                    for v in expired {
                        self.settle_message(&v, &expired_text(&v)).await;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot expire voice transcripts"),
            }
            let owed = match self.store.voice_owed(FRESH_MS, self.claim_stale_ms()).await {
                Ok(o) => o,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list voice notes left half-way");
                    continue;
                }
            };
            for v in owed {
                if v.state == "transcribed" {
                    self.show_transcript(&v).await;
                } else if self.config.voice.is_on() {
                    self.spawn_transcription(v.id);
                } else if let Ok(Some(v)) = self
                    .store
                    .voice_failed(&v.id, None, "voice replies were turned off")
                    .await
                {
                    let thread = v.thread_id.and_then(|t| i32::try_from(t).ok());
                    self.say(v.chat_id, thread, VOICE_OFF).await;
                }
            }
        }
    }
}

/// The text of a transcript that expired unsent.
fn expired_text(v: &VoiceReply) -> String {
    format!(
        "⌛ The transcript for #{} expired unsent; nothing was recorded. Send the voice note again to answer by voice.",
        short_id(&v.item_id)
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

/// A byte count in megabytes, for messages.
fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::note::tap_of;
    use super::*;

    const ID: &str = "019ac5f0a1b27c3d8e9f00112233aabb";

    #[test]
    fn transcript_buttons_round_trip_and_foreign_data_is_refused() {
        for tap in [Tap::Send, Tap::Edit, Tap::Discard] {
            let d = data(tap, ID);
            assert!(d.len() <= super::super::callback::MAX_LEN);
            assert_eq!(tap_of(&d), Some((tap, ID)));
        }
        for bad in [
            "",
            "v|s|short",
            "v|x|019ac5f0a1b27c3d8e9f00112233aabb",
            "q|s|019ac5f0a1b27c3d8e9f00112233aabb",
            "v|s|019ac5f0a1b27c3d8e9f00112233aabb|",
        ] {
            assert_eq!(tap_of(bad), None, "{bad}");
        }
    }
}
