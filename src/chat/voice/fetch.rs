//! A voice note's transcription task: claim the note, download its audio
//! from Telegram, run the transcriber and show the transcript with its
//! Send / Edit / Discard buttons.

use futures_util::StreamExt;
use teloxide::net::Download;
use teloxide::prelude::*;
use teloxide::types::{
    FileId, InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ReplyParameters, ThreadId,
};
use tokio::io::AsyncWriteExt;

use super::note::{Tap, data};
use super::{FETCH_LIMIT, megabytes, noun, transcribe};
use crate::chat::Bridge;
use crate::store::short_id;
use crate::store::voice::VoiceReply;

impl Bridge {
    /// Transcribe note `id` in a task of its own (never on the update
    /// loop), stopped by shutdown; a note left half-way is taken up again
    /// by a sweep once its claim is stale.
    pub(in crate::chat) fn spawn_transcription(&self, id: String) {
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
    pub(super) fn claim_stale_ms(&self) -> i64 {
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
            .ops
            .voice_claim(id, &worker, self.claim_stale_ms())
            .await
        {
            Ok(Some(v)) => v,
            Ok(None) => return,
            Err(e) => return tracing::warn!(error = %e, voice = id, "cannot claim a voice note"),
        };
        let result = self.fetch_and_transcribe(&v).await;
        let thread = v.note.thread_id.and_then(|t| i32::try_from(t).ok());
        match result {
            Ok(text) => {
                let keep_ms = i64::try_from(self.config.voice.expire_secs.saturating_mul(1000))
                    .unwrap_or(i64::MAX);
                match self
                    .ops
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
                if let Ok(Some(v)) = self.ops.voice_failed(id, Some(&worker), &why).await {
                    let text = format!(
                        "🎙 Your voice note for #{} was not transcribed: {why}. Nothing was recorded; the {} is still open — send it again or reply in text.",
                        short_id(&v.note.item_id),
                        noun(&v.note.item_kind)
                    );
                    self.say(v.note.chat_id, thread, &text).await;
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
            .get_file(FileId(v.note.file_id.clone()))
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
    pub(super) async fn show_transcript(&self, v: &VoiceReply) {
        match self.ops.voice_show_claim(&v.id).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return tracing::warn!(error = %e, "cannot claim a transcript's showing"),
        }
        let minutes = self.config.voice.expire_secs.div_ceil(60);
        let text = format!(
            "🎙 Transcript of your voice note for #{}:\n\n«{}»\n\nSend it as your answer, Edit it first, or Discard it. Nothing is recorded until you tap Send; unconfirmed, it expires in {minutes} min.",
            short_id(&v.note.item_id),
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
            .send_message(ChatId(v.note.chat_id), text)
            .reply_markup(markup);
        if let Ok(m) = i32::try_from(v.note.message_id) {
            req = req
                .reply_parameters(ReplyParameters::new(MessageId(m)).allow_sending_without_reply());
        }
        if let Some(t) = v.note.thread_id.and_then(|t| i32::try_from(t).ok()) {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        let shown = match req.await {
            Ok(m) => Some(i64::from(m.id.0)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot show a transcript; retrying");
                None
            }
        };
        if let Err(e) = self.ops.voice_shown(&v.id, shown).await {
            tracing::warn!(error = %e, "cannot record a transcript's message");
        }
    }
}
