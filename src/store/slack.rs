//! Slack's records: each item's message per channel (its `ts` and what it
//! last showed), and the Socket Mode inputs (taps, thread replies) claimed
//! by key before they are applied, so a redelivered envelope is applied
//! once. The bridge's logic is in `chat::slack`; only SQL is here.

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

/// How long an input key is remembered: Slack redelivers an envelope
/// within minutes, never a day later.
const KEEP_INPUTS_MS: i64 = 24 * 3600 * 1000;

impl Store {
    /// The Slack message of an item in `channel`: its `ts` and the hash of
    /// what it shows.
    pub async fn slack_message(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
    ) -> Result<Option<(String, String)>> {
        self.row(Stmt::new(MESSAGE).text(kind).text(id).text(channel))
            .await
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
        let s = Stmt::new(SAVE_MESSAGE)
            .text(kind)
            .text(id)
            .text(channel)
            .text(ts)
            .text(drawn);
        self.change(s).await.map(|_| ())
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
