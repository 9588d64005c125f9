//! Slack's records: each item's message per channel (its `ts` and what it
//! last showed), and the Socket Mode inputs (taps, thread replies) claimed
//! by key before they are applied, so a redelivered envelope is applied
//! once. The bridge's logic is in `chat::slack`; only SQL is here.
//!
//! A message record is also where an item waits to be shown in a channel
//! ([`SlackRecord`]): one with no `ts` yet is owed its first post there (an
//! escalation step's channel) or, with `drawn` = `burst:<due ms>`, waits for
//! its burst's digest (`docs/design.md` §8); one covered by a digest keeps
//! the digest's `ts` as `digest:<ts>`, which no tap or reply ever names.
//! One whose first post is under way says so (`drawn` = `sending:<ms>`,
//! written before `chat.postMessage`): a sender that finds it after a
//! crash cannot know whether Slack took the post, so it looks for the
//! message in the channel before posting again (`chat::slack::send`).

use std::sync::Arc;

use super::engine::Stmt;
use super::{Result, Store};

const MESSAGE: &str =
    "SELECT ts, drawn FROM slack_messages WHERE item_kind = $1 AND item_id = $2 AND channel = $3";

const ITEM_OF: &str =
    "SELECT item_kind, item_id FROM slack_messages WHERE channel = $1 AND ts = $2";

const SAVE_MESSAGE: &str = "INSERT INTO slack_messages (item_kind, item_id, channel, ts, drawn)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (item_kind, item_id, channel) DO UPDATE SET ts = excluded.ts, drawn = excluded.drawn";

const OWE: &str =
    "INSERT INTO slack_owed (item_kind, item_id) VALUES ($1, $2) ON CONFLICT DO NOTHING";

const PAID: &str = "DELETE FROM slack_owed WHERE item_kind = $1 AND item_id = $2";

const OWED: &str = "SELECT item_kind, item_id FROM slack_owed";

/// Take an input nobody took, or one whose taker left it unfinished for
/// longer than `$4` ms (it died before applying it).
const TAKE_INPUT: &str =
    "INSERT INTO slack_inputs (input_key, holder, taken_at) VALUES ($1, $2, $3)
     ON CONFLICT (input_key) DO UPDATE SET holder = excluded.holder, taken_at = excluded.taken_at
     WHERE slack_inputs.done_at IS NULL AND slack_inputs.taken_at <= $3 - $4";

const INPUT_DONE: &str =
    "UPDATE slack_inputs SET done_at = $3 WHERE input_key = $1 AND holder = $2";

const INPUT_TAKER: &str =
    "SELECT holder FROM slack_inputs WHERE input_key = $1 AND done_at IS NULL";

/// Take an unfinished input from a taker known dead.
const TAKE_INPUT_FROM: &str = "UPDATE slack_inputs SET holder = $2, taken_at = $3
     WHERE input_key = $1 AND holder = $4 AND done_at IS NULL";

const FORGET_INPUTS: &str = "DELETE FROM slack_inputs WHERE taken_at < $1";

const RECORDS_OF: &str =
    "SELECT channel, ts, drawn FROM slack_messages WHERE item_kind = $1 AND item_id = $2";

/// A record that may wait (`ts` empty) or be owed a post: never replaces one.
const NEW_RECORD: &str = "INSERT INTO slack_messages (item_kind, item_id, channel, ts, drawn)
     VALUES ($1, $2, $3, '', $4) ON CONFLICT DO NOTHING";

const WAITING: &str = "SELECT item_kind, item_id, channel, drawn FROM slack_messages WHERE ts = '' AND drawn LIKE 'burst:%'";

/// Why guarded on the waiting record: an item covered by a digest is never
/// also posted on its own, nor the other way round.
const SETTLE_WAIT: &str = "UPDATE slack_messages SET ts = $4, drawn = $5
     WHERE item_kind = $1 AND item_id = $2 AND channel = $3 AND ts = '' AND drawn LIKE 'burst:%'";

/// Why guarded on the `ts` the sender saw (none for a first post) and on
/// not waiting: only the post this sender is about to make is marked, and
/// an item waiting for its digest is never posted on its own.
const SENDING: &str = "INSERT INTO slack_messages (item_kind, item_id, channel, ts, drawn)
     VALUES ($1, $2, $3, '', $5)
     ON CONFLICT (item_kind, item_id, channel) DO UPDATE SET ts = '', drawn = excluded.drawn
     WHERE slack_messages.ts = $4 AND slack_messages.drawn NOT LIKE 'burst:%'";

const NOT_SENDING: &str = "UPDATE slack_messages SET drawn = ''
     WHERE item_kind = $1 AND item_id = $2 AND channel = $3 AND ts = '' AND drawn LIKE 'sending:%'";

const DROP_WAIT: &str = "DELETE FROM slack_messages
     WHERE item_kind = $1 AND item_id = $2 AND channel = $3 AND ts = '' AND drawn LIKE 'burst:%'";

/// The `drawn` of a record waiting for its burst's digest.
const BURST: &str = "burst:";

/// The `ts` prefix of a record covered by a digest.
const DIGEST: &str = "digest:";

/// The `drawn` of a record whose first post is under way.
const POSTING: &str = "sending:";

/// What an item's record in one Slack channel says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlackRecord {
    /// Posted: its `ts`, and the hash of what it shows.
    Posted { ts: String, drawn: String },
    /// Owed its first post in the channel.
    Owed,
    /// Its post was under way since this time (ms), and no `ts` came back
    /// yet: Slack may or may not have taken it.
    Sending { since: i64 },
    /// Waiting for its burst's digest, due at this time (ms).
    Waiting { due: i64 },
    /// Shown in a digest message, for good (never posted on its own).
    Digest,
}

impl SlackRecord {
    fn read(ts: String, drawn: String) -> SlackRecord {
        if ts.starts_with(DIGEST) {
            SlackRecord::Digest
        } else if !ts.is_empty() {
            SlackRecord::Posted { ts, drawn }
        } else if let Some(due) = drawn.strip_prefix(BURST) {
            SlackRecord::Waiting {
                due: due.parse().unwrap_or(0),
            }
        } else if let Some(since) = drawn.strip_prefix(POSTING) {
            SlackRecord::Sending {
                since: since.parse().unwrap_or(0),
            }
        } else {
            SlackRecord::Owed
        }
    }
}

/// One item waiting in a Slack channel for its burst's digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackWaiting {
    pub item_kind: String,
    pub item_id: String,
    pub channel: String,
    /// When its digest goes out (ms).
    pub due: i64,
}

/// How long an input key is remembered: Slack redelivers an envelope
/// within minutes, never a day later.
const KEEP_INPUTS_MS: i64 = 24 * 3600 * 1000;

impl Store {
    /// The record of an item in `channel`: its message (`ts` and the hash
    /// of what it shows), or how it waits.
    pub async fn slack_message(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
    ) -> Result<Option<SlackRecord>> {
        let row: Option<(String, String)> = self
            .row(Stmt::new(MESSAGE).text(kind).text(id).text(channel))
            .await?;
        Ok(row.map(|(ts, drawn)| SlackRecord::read(ts, drawn)))
    }

    /// The item a Slack message in `channel` shows, if it is one of ours.
    pub async fn slack_item_of(&self, channel: &str, ts: &str) -> Result<Option<(String, String)>> {
        self.row(Stmt::new(ITEM_OF).text(channel).text(ts)).await
    }

    /// Remember an item's Slack message in `channel` and what it shows.
    pub async fn slack_save_message(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
        ts: &str,
        drawn: &str,
    ) -> Result<()> {
        let s = record(SAVE_MESSAGE, [kind, id, channel, ts, drawn]);
        self.change(s).await.map(|_| ())
    }

    /// Record that the item's post in `channel` is under way, before it is
    /// made: from no message (`from` empty: its first post) or from the
    /// message `from`, which Slack no longer has. False: the record is no
    /// longer what the sender saw, and nothing is posted.
    pub async fn slack_sending(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
        from: &str,
    ) -> Result<bool> {
        let drawn = format!("{POSTING}{}", self.now());
        let s = record(SENDING, [kind, id, channel, from, drawn.as_str()]);
        Ok(self.change(s).await? == 1)
    }

    /// A post under way turned out never to have reached Slack, and the
    /// item needs none now: owed its first post again, should it ever need
    /// one, so the channel is not searched for it again.
    pub async fn slack_not_sending(&self, kind: &str, id: &str, channel: &str) -> Result<()> {
        let s = Stmt::new(NOT_SENDING).text(kind).text(id).text(channel);
        self.change(s).await.map(|_| ())
    }

    /// Every record of an item: (channel, what it says).
    pub async fn slack_records_of(
        &self,
        kind: &str,
        id: &str,
    ) -> Result<Vec<(String, SlackRecord)>> {
        let rows: Vec<(String, String, String)> =
            self.rows(Stmt::new(RECORDS_OF).text(kind).text(id)).await?;
        Ok(rows
            .into_iter()
            .map(|(channel, ts, drawn)| (channel, SlackRecord::read(ts, drawn)))
            .collect())
    }

    /// Record that the item is owed its first post in `channel` (false:
    /// it has a record there already).
    pub async fn slack_owe_post(&self, kind: &str, id: &str, channel: &str) -> Result<bool> {
        let s = Stmt::new(NEW_RECORD)
            .text(kind)
            .text(id)
            .text(channel)
            .text("");
        Ok(self.change(s).await? == 1)
    }

    /// Record that the item waits in `channel` for its burst's digest,
    /// due at `due` (ms); false: it has a record there already.
    pub async fn slack_wait(&self, kind: &str, id: &str, channel: &str, due: i64) -> Result<bool> {
        let drawn = format!("{BURST}{due}");
        let s = Stmt::new(NEW_RECORD)
            .text(kind)
            .text(id)
            .text(channel)
            .text(drawn.as_str());
        Ok(self.change(s).await? == 1)
    }

    /// Every item waiting for a burst's digest, earliest due first.
    pub async fn slack_waiting(&self) -> Result<Vec<SlackWaiting>> {
        let rows: Vec<(String, String, String, String)> = self.rows(Stmt::new(WAITING)).await?;
        let mut out: Vec<SlackWaiting> = rows
            .into_iter()
            .filter_map(|(item_kind, item_id, channel, drawn)| {
                match SlackRecord::read(String::new(), drawn) {
                    SlackRecord::Waiting { due } => Some(SlackWaiting {
                        item_kind,
                        item_id,
                        channel,
                        due,
                    }),
                    _ => None,
                }
            })
            .collect();
        out.sort_by_key(|w| w.due);
        Ok(out)
    }

    /// A waiting item waits on, until `due` (its digest could not go out).
    pub async fn slack_wait_until(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
        due: i64,
    ) -> Result<bool> {
        let drawn = format!("{BURST}{due}");
        self.slack_settle_wait(kind, id, channel, "", &drawn).await
    }

    /// A waiting item goes out as its own message: owed its first post.
    /// False when it no longer waits, so two releases never both post it.
    pub async fn slack_release(&self, kind: &str, id: &str, channel: &str) -> Result<bool> {
        self.slack_settle_wait(kind, id, channel, "", "").await
    }

    /// A waiting item went out in the digest message `ts`. False when it
    /// no longer waits.
    pub async fn slack_digested(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
        ts: &str,
    ) -> Result<bool> {
        let ts = format!("{DIGEST}{ts}");
        self.slack_settle_wait(kind, id, channel, &ts, "digest")
            .await
    }

    /// A waiting item settled meanwhile: it is never shown in `channel`.
    pub async fn slack_drop_wait(&self, kind: &str, id: &str, channel: &str) -> Result<()> {
        let s = Stmt::new(DROP_WAIT).text(kind).text(id).text(channel);
        self.change(s).await.map(|_| ())
    }

    async fn slack_settle_wait(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
        ts: &str,
        drawn: &str,
    ) -> Result<bool> {
        let s = record(SETTLE_WAIT, [kind, id, channel, ts, drawn]);
        Ok(self.change(s).await? == 1)
    }

    /// Mark an item's Slack message owed a draw.
    pub async fn slack_owe(&self, kind: &str, id: &str) -> Result<()> {
        self.change(Stmt::new(OWE).text(kind).text(id))
            .await
            .map(|_| ())
    }

    /// The item's Slack message is drawn (or needs none): no longer owed.
    pub async fn slack_paid(&self, kind: &str, id: &str) -> Result<()> {
        self.change(Stmt::new(PAID).text(kind).text(id))
            .await
            .map(|_| ())
    }

    /// Every item whose Slack message is owed a draw.
    pub async fn slack_owed(&self) -> Result<Vec<(String, String)>> {
        self.rows(Stmt::new(OWED)).await
    }

    /// Claim the input `key` for `holder`: `true` when it is this holder's
    /// to apply (never taken, or left unfinished by a taker for `stale_ms`).
    pub async fn slack_input_take(&self, key: &str, holder: &str, stale_ms: i64) -> Result<bool> {
        let input = Arc::new((key.to_string(), holder.to_string()));
        self.write_with(input, move |mut tx, kh, now| {
            Box::pin(async move {
                let forget = Stmt::new(FORGET_INPUTS).int(now - KEEP_INPUTS_MS);
                tx.change(&forget).await?;
                let take = Stmt::new(TAKE_INPUT)
                    .text(kh.0.as_str())
                    .text(kh.1.as_str())
                    .int(now)
                    .int(stale_ms);
                Ok(tx.change(&take).await? == 1)
            })
        })
        .await
    }

    /// Who took the input `key` and has not finished it, if anyone
    /// (`None`: applied, or never seen).
    pub async fn slack_input_taker(&self, key: &str) -> Result<Option<String>> {
        let row: Option<(String,)> = self.row(Stmt::new(INPUT_TAKER).text(key)).await?;
        Ok(row.map(|(h,)| h))
    }

    /// Take the unfinished input `key` from `dead`, a taker known gone.
    pub async fn slack_input_take_from(&self, key: &str, holder: &str, dead: &str) -> Result<bool> {
        let now = self.now();
        let s = Stmt::new(TAKE_INPUT_FROM)
            .text(key)
            .text(holder)
            .int(now)
            .text(dead);
        Ok(self.change(s).await? == 1)
    }

    /// Mark the input `key` applied, so it is never taken again.
    pub async fn slack_input_done(&self, key: &str, holder: &str) -> Result<()> {
        let now = self.now();
        self.change(Stmt::new(INPUT_DONE).text(key).text(holder).int(now))
            .await
            .map(|_| ())
    }
}

/// A statement over one message record, bound in its columns' order: kind,
/// id, channel, `ts`, `drawn`.
fn record<'q>(sql: &'static str, values: [&'q str; 5]) -> Stmt<'q> {
    values.into_iter().fold(Stmt::new(sql), |s, v| s.text(v))
}
