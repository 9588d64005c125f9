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

mod confirm;
mod fetch;
pub(super) mod note;
mod transcribe;

use confirm::expired_text;
use note::Note;

use std::sync::Arc;
use std::time::Duration;

use teloxide::prelude::*;
use tokio_util::sync::CancellationToken;

use super::Bridge;
use super::callback::Item;
use super::dispatch::{NOT_ALLOWED, Prompt, Right, actor};
use crate::store::short_id;
use crate::store::voice::NewVoice;

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
        match self.ops.voice_receive(&v).await {
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
            let prompt = self.prompt_at(chat_id, orig.id.0);
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
            match self.ops.voice_expire().await {
                Ok(expired) => {
                    for v in expired {
                        self.settle_message(&v, &expired_text(&v)).await;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot expire voice transcripts"),
            }
            let owed = match self.ops.voice_owed(FRESH_MS, self.claim_stale_ms()).await {
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
                    .ops
                    .voice_failed(&v.id, None, "voice replies were turned off")
                    .await
                {
                    let thread = v.note.thread_id.and_then(|t| i32::try_from(t).ok());
                    self.say(v.note.chat_id, thread, VOICE_OFF).await;
                }
            }
        }
    }
}

/// A byte count in megabytes, for messages.
fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests;
