//! The chat bridge's voice notes (docs/architecture.md, the application
//! layer): received, fetched and transcribed, shown for confirmation,
//! settled or failed. Each is one guarded store call.

use super::Local;
use crate::ops::Result;
use crate::store::voice::{NewVoice, Sent, VoiceReply};

impl Local {
    /// The transcript of `id` is shown in message `message_id` (`None`:
    /// its send failed, so the showing is owed again).
    pub async fn voice_shown(&self, id: &str, message_id: Option<i64>) -> Result<()> {
        Ok(self.store.voice_shown(id, message_id).await?)
    }

    /// Take the showing of `id`'s transcript: true for the one caller that
    /// must send it (nobody has, nor is sending it).
    pub async fn voice_show_claim(&self, id: &str) -> Result<bool> {
        Ok(self.store.voice_show_claim(id).await?)
    }

    /// Move `id` from state `from` to `to` (Discard, Edit, a row's Send
    /// and its undoing): the row when this call moved it.
    pub async fn voice_settle(&self, id: &str, from: &str, to: &str) -> Result<Option<VoiceReply>> {
        Ok(self.store.voice_settle(id, from, to).await?)
    }

    /// Send the transcript of the question note `id` as its reply, `text`
    /// (the transcript, or a card's picked options and it): one
    /// transaction that checks the note still stands, writes the reply
    /// through the chat writer (its rule: an unread Inbox answer wins)
    /// with the medium `voice`, and settles the note `sent` — so a double
    /// tap writes once.
    pub async fn voice_send(&self, id: &str, text: &str) -> Result<Sent> {
        Ok(self.store.voice_send(id, text).await?)
    }

    /// Record a voice note on receipt: the new row, or the one an earlier
    /// delivery of the same message recorded (`false`).
    pub async fn voice_receive(&self, v: &NewVoice) -> Result<(VoiceReply, bool)> {
        Ok(self.store.voice_receive(v).await?)
    }

    /// Notes some daemon must carry on with (the store's `OWED` rule): received more
    /// than `fresh_ms` ago and never claimed, claimed more than `stale_ms`
    /// ago, or transcribed and not shown.
    pub async fn voice_owed(&self, fresh_ms: i64, stale_ms: i64) -> Result<Vec<VoiceReply>> {
        Ok(self.store.voice_owed(fresh_ms, stale_ms).await?)
    }

    /// One voice note by id.
    pub async fn voice_get(&self, id: &str) -> Result<Option<VoiceReply>> {
        Ok(self.store.voice_get(id).await?)
    }

    /// Settle `id` as failed with `error` (by its claimer `worker`, or,
    /// with `None`, before anyone claimed it): the row, or `None` when it
    /// had moved on.
    pub async fn voice_failed(
        &self,
        id: &str,
        worker: Option<&str>,
        error: &str,
    ) -> Result<Option<VoiceReply>> {
        Ok(self.store.voice_failed(id, worker, error).await?)
    }

    /// Settle every transcript left unconfirmed past its expiry; the rows
    /// this call settled (each only once, whoever else sweeps).
    pub async fn voice_expire(&self) -> Result<Vec<VoiceReply>> {
        Ok(self.store.voice_expire().await?)
    }

    /// Claim the transcription of `id` for `worker`: the row when this call
    /// took it (never transcribed, or claimed more than `stale_ms` ago by
    /// a worker that died), `None` when it is someone else's or done.
    pub async fn voice_claim(
        &self,
        id: &str,
        worker: &str,
        stale_ms: i64,
    ) -> Result<Option<VoiceReply>> {
        Ok(self.store.voice_claim(id, worker, stale_ms).await?)
    }

    /// Record `worker`'s transcript of `id`, standing for `keep_ms`: the
    /// row, or `None` when the claim is no longer `worker`'s.
    pub async fn voice_transcribed(
        &self,
        id: &str,
        worker: &str,
        transcript: &str,
        keep_ms: i64,
    ) -> Result<Option<VoiceReply>> {
        Ok(self
            .store
            .voice_transcribed(id, worker, transcript, keep_ms)
            .await?)
    }
}
