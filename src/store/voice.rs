//! Voice replies: a voice note sent to answer an item, from receipt to its
//! transcript confirmed (or discarded, or expired), durable so a restart
//! loses nothing and repeats nothing.
//!
//! Each step is one guarded statement on the note's row, so of several
//! daemons (or taps) exactly one takes it: the transcription is claimed
//! (`received` → `transcribing`, or a stale `transcribing` whose worker
//! died), the transcript recorded only by its claimer, and Send settles
//! the row in the same transaction as the question's reply it writes
//! (the chat writer's own rule), so a second tap finds it sent. This file
//! does not download or transcribe anything (the chat bridge does), and
//! its rows are not events: the reply Send writes is.

use std::sync::Arc;

use super::engine::{Stmt, Tx};
use super::questions::{Medium, NewReply, Outcome, Question, ReplyKind, Submitted};
use super::{Channel, Result, Store};

/// One voice note and how far it got (see the `voice_replies` migration
/// for what each state means).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
pub struct VoiceReply {
    /// Its id (32 hex characters; the Send / Edit / Discard buttons carry it).
    pub id: String,
    /// The note as received.
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub note: NewVoice,
    /// received, transcribing, transcribed, sent, edited, discarded,
    /// expired or failed.
    pub state: String,
    /// The daemon transcribing it.
    pub worker: Option<String>,
    /// When that transcription began (ms).
    pub started_at: Option<i64>,
    /// The transcript, once there is one.
    pub transcript: Option<String>,
    /// Why it failed, in words.
    pub error: Option<String>,
    /// The message showing the transcript (0: being sent).
    pub shown_message_id: Option<i64>,
    /// When an unconfirmed transcript expires (ms).
    pub expires_at: Option<i64>,
    /// When it was received (ms).
    pub created_at: i64,
    /// When it last changed (ms).
    pub updated_at: i64,
}

/// A voice note to record on receipt (and, inside [`VoiceReply`], as it
/// was received).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
pub struct NewVoice {
    /// The chat the note came from.
    pub chat_id: i64,
    /// The note's own message.
    pub message_id: i64,
    /// Its forum topic, if any.
    pub thread_id: Option<i64>,
    /// The speaker's Telegram id.
    pub user_id: i64,
    /// The speaker, as replies record people (`@name`).
    pub by: String,
    /// `question` or `row`.
    pub item_kind: String,
    /// The item it answers.
    pub item_id: String,
    /// `answer`, `clarify` or `other` (a card's Other… words).
    pub target: String,
    /// The item revision it was spoken for (a prompt's), if any.
    pub revision: Option<i64>,
    /// Telegram's file id of the audio.
    pub file_id: String,
    /// Its length as Telegram reported it (seconds).
    pub duration_secs: i64,
    /// Its size as Telegram reported it (bytes), if it did.
    pub file_size: Option<i64>,
}

/// What a Send on a question's transcript did.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Sent {
    /// The reply is written; the note is settled `sent`.
    Written(Box<Question>),
    /// The chat writer refused it (an unread Inbox answer, a closed or
    /// changed question): nothing written, the transcript still stands.
    Refused(super::questions::Refusal),
    /// The transcript had expired: now settled `expired`.
    Expired,
    /// Nothing to send: the note is in this state (or gone: `None`).
    Gone(Option<String>),
}

const INSERT: &str = "INSERT INTO voice_replies
        (id, chat_id, message_id, thread_id, user_id, \"by\", item_kind, item_id, target,
         revision, file_id, duration_secs, file_size, state, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'received', $14, $14)
     ON CONFLICT (chat_id, message_id) DO NOTHING
     RETURNING *";

const BY_MESSAGE: &str = "SELECT * FROM voice_replies WHERE chat_id = $1 AND message_id = $2";

const GET: &str = "SELECT * FROM voice_replies WHERE id = $1";

/// Why `started_at <= $4 - $5`: a worker that died mid-way left its claim
/// standing; once older than any transcription may run, it is retaken.
const CLAIM: &str = "UPDATE voice_replies
     SET state = 'transcribing', worker = $2, started_at = $3, updated_at = $3
     WHERE id = $1 AND (state = 'received'
                        OR (state = 'transcribing' AND started_at <= $3 - $4))
     RETURNING *";

/// Only the claimer records the outcome: a worker whose claim was retaken
/// (it was thought dead) writes nothing.
const TRANSCRIBED: &str = "UPDATE voice_replies
     SET state = 'transcribed', transcript = $3, expires_at = $4, updated_at = $5
     WHERE id = $1 AND state = 'transcribing' AND worker = $2
     RETURNING *";

const FAILED: &str = "UPDATE voice_replies SET state = 'failed', error = $3, updated_at = $4
     WHERE id = $1 AND state IN ('received', 'transcribing') AND ($2 IS NULL OR worker = $2)
     RETURNING *";

const SHOW_CLAIM: &str = "UPDATE voice_replies SET shown_message_id = 0
     WHERE id = $1 AND state = 'transcribed' AND shown_message_id IS NULL";

const SHOWN: &str = "UPDATE voice_replies SET shown_message_id = $2 WHERE id = $1";

const SHOW_UNCLAIM: &str =
    "UPDATE voice_replies SET shown_message_id = NULL WHERE id = $1 AND shown_message_id = 0";

const SETTLE: &str = "UPDATE voice_replies SET state = $3, updated_at = $4
     WHERE id = $1 AND state = $2
     RETURNING *";

const EXPIRE: &str = "UPDATE voice_replies SET state = 'expired', updated_at = $1
     WHERE state = 'transcribed' AND expires_at <= $1
     RETURNING *";

/// Notes some daemon must carry on with: received and never claimed
/// (older than `$2` ms, so the task spawned on receipt goes first), a
/// claim older than `$3` ms (its worker died), a transcript not shown.
const OWED: &str = "SELECT * FROM voice_replies
     WHERE (state = 'received' AND updated_at <= $1 - $2)
        OR (state = 'transcribing' AND started_at <= $1 - $3)
        OR (state = 'transcribed' AND shown_message_id IS NULL)
     ORDER BY created_at";

const LOCK: &str = "SELECT * FROM voice_replies WHERE id = $1";
const LOCK_PG: &str = "SELECT * FROM voice_replies WHERE id = $1 FOR UPDATE";

impl Store {
    /// Record a voice note on receipt: the new row, or the one an earlier
    /// delivery of the same message recorded (`false`).
    pub async fn voice_receive(&self, v: &NewVoice) -> Result<(VoiceReply, bool)> {
        let input = Arc::new((super::new_id(), v.clone()));
        self.write_with(input, |mut tx, input, now| {
            Box::pin(async move {
                let (id, v) = &*input;
                let insert = Stmt::new(INSERT)
                    .text(id.as_str())
                    .int(v.chat_id)
                    .int(v.message_id)
                    .int(v.thread_id)
                    .int(v.user_id)
                    .text(v.by.as_str())
                    .text(v.item_kind.as_str())
                    .text(v.item_id.as_str())
                    .text(v.target.as_str())
                    .int(v.revision)
                    .text(v.file_id.as_str())
                    .int(v.duration_secs)
                    .int(v.file_size)
                    .int(now);
                if let Some(row) = tx.row::<VoiceReply>(&insert).await? {
                    return Ok((row, true));
                }
                let old = Stmt::new(BY_MESSAGE).int(v.chat_id).int(v.message_id);
                match tx.row::<VoiceReply>(&old).await? {
                    Some(row) => Ok((row, false)),
                    None => Err(sqlx::Error::RowNotFound.into()),
                }
            })
        })
        .await
    }

    /// One voice note by id.
    pub async fn voice_get(&self, id: &str) -> Result<Option<VoiceReply>> {
        self.row(Stmt::new(GET).text(id)).await
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
        let input = Arc::new((id.to_string(), worker.to_string()));
        self.write_with(input, move |mut tx, input, now| {
            Box::pin(async move {
                let (id, worker) = &*input;
                let claim = Stmt::new(CLAIM)
                    .text(id.as_str())
                    .text(worker.as_str())
                    .int(now)
                    .int(stale_ms);
                tx.row(&claim).await
            })
        })
        .await
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
        let input = Arc::new((id.to_string(), worker.to_string(), transcript.to_string()));
        self.write_with(input, move |mut tx, input, now| {
            Box::pin(async move {
                let (id, worker, text) = &*input;
                let done = Stmt::new(TRANSCRIBED)
                    .text(id.as_str())
                    .text(worker.as_str())
                    .text(text.as_str())
                    .int(now.saturating_add(keep_ms))
                    .int(now);
                tx.row(&done).await
            })
        })
        .await
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
        let input = Arc::new((
            id.to_string(),
            worker.map(str::to_string),
            error.to_string(),
        ));
        self.write_with(input, |mut tx, input, now| {
            Box::pin(async move {
                let (id, worker, error) = &*input;
                let failed = Stmt::new(FAILED)
                    .text(id.as_str())
                    .text(worker.as_deref())
                    .text(error.as_str())
                    .int(now);
                tx.row(&failed).await
            })
        })
        .await
    }

    /// Take the showing of `id`'s transcript: true for the one caller that
    /// must send it (nobody has, nor is sending it).
    pub async fn voice_show_claim(&self, id: &str) -> Result<bool> {
        Ok(self.change(Stmt::new(SHOW_CLAIM).text(id)).await? == 1)
    }

    /// The transcript of `id` is shown in message `message_id` (`None`:
    /// its send failed, so the showing is owed again).
    pub async fn voice_shown(&self, id: &str, message_id: Option<i64>) -> Result<()> {
        match message_id {
            Some(m) => self.change(Stmt::new(SHOWN).text(id).int(m)).await?,
            None => self.change(Stmt::new(SHOW_UNCLAIM).text(id)).await?,
        };
        Ok(())
    }

    /// Move `id` from state `from` to `to` (Discard, Edit, a row's Send
    /// and its undoing): the row when this call moved it.
    pub async fn voice_settle(&self, id: &str, from: &str, to: &str) -> Result<Option<VoiceReply>> {
        let input = Arc::new((id.to_string(), from.to_string(), to.to_string()));
        self.write_with(input, |mut tx, input, now| {
            Box::pin(async move {
                let (id, from, to) = &*input;
                let settle = Stmt::new(SETTLE)
                    .text(id.as_str())
                    .text(from.as_str())
                    .text(to.as_str())
                    .int(now);
                tx.row(&settle).await
            })
        })
        .await
    }

    /// Settle every transcript left unconfirmed past its expiry; the rows
    /// this call settled (each only once, whoever else sweeps).
    pub async fn voice_expire(&self) -> Result<Vec<VoiceReply>> {
        self.write_with((), |mut tx, (), now| {
            Box::pin(async move { tx.rows(&Stmt::new(EXPIRE).int(now)).await })
        })
        .await
    }

    /// Notes some daemon must carry on with (see [`OWED`]): received more
    /// than `fresh_ms` ago and never claimed, claimed more than `stale_ms`
    /// ago, or transcribed and not shown.
    pub async fn voice_owed(&self, fresh_ms: i64, stale_ms: i64) -> Result<Vec<VoiceReply>> {
        self.rows(Stmt::new(OWED).int(self.now()).int(fresh_ms).int(stale_ms))
            .await
    }

    /// Send the transcript of the question note `id` as its reply, `text`
    /// (the transcript, or a card's picked options and it): one
    /// transaction that checks the note still stands, writes the reply
    /// through the chat writer (its rule: an unread Inbox answer wins)
    /// with the medium `voice`, and settles the note `sent` — so a double
    /// tap writes once.
    pub async fn voice_send(&self, id: &str, text: &str) -> Result<Sent> {
        let input = Arc::new((id.to_string(), text.to_string()));
        self.transact(input, |mut tx, input, now| {
            Box::pin(async move {
                let (id, text) = &*input;
                send_in(&mut tx, id, text, now).await
            })
        })
        .await
    }
}

async fn send_in(tx: &mut Tx<'_>, id: &str, text: &str, now: i64) -> Result<Sent> {
    let lock = Stmt::spelled(LOCK, LOCK_PG).text(id);
    let Some(v) = tx.row::<VoiceReply>(&lock).await? else {
        return Ok(Sent::Gone(None));
    };
    if v.state != "transcribed" || v.note.item_kind != "question" {
        return Ok(Sent::Gone(Some(v.state)));
    }
    if v.expires_at.is_some_and(|at| at <= now) {
        let expire = Stmt::new(SETTLE)
            .text(id)
            .text("transcribed")
            .text("expired")
            .int(now);
        tx.change(&expire).await?;
        return Ok(Sent::Expired);
    }
    let one = Submitted {
        id: v.note.item_id.clone(),
        r: NewReply {
            text: text.to_string(),
            kind: if v.note.target == "clarify" {
                ReplyKind::Clarify
            } else {
                ReplyKind::Answer
            },
            context: None,
            by: v.note.by.clone(),
            expected_revision: v.note.revision,
        },
        source: Channel::Chat,
        medium: Medium::Voice,
    };
    let out: Outcome<Question> = super::questions::conditional_in(tx, &one, now).await?;
    Ok(match out {
        Ok(q) => {
            let sent = Stmt::new(SETTLE)
                .text(id)
                .text("transcribed")
                .text("sent")
                .int(now);
            tx.change(&sent).await?;
            Sent::Written(Box::new(q))
        }
        Err(refusal) => Sent::Refused(refusal),
    })
}
