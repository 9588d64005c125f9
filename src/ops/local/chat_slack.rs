//! The Slack bridge's bookkeeping (docs/architecture.md, the application
//! layer): its message records per channel, posts owed and paid, pushes
//! waiting under the digest rule, and claims of Socket Mode inputs. Each is
//! one store call.

use super::Local;
use crate::ops::Result;
use crate::store::slack::{SlackRecord, SlackWaiting};

impl Local {
    /// Every item waiting for a burst's digest, earliest due first.
    pub async fn slack_waiting(&self) -> Result<Vec<SlackWaiting>> {
        Ok(self.store.slack_waiting().await?)
    }

    /// Record that the item waits in `channel` for its burst's digest,
    /// due at `due` (ms); false: it has a record there already.
    pub async fn slack_wait(&self, kind: &str, id: &str, channel: &str, due: i64) -> Result<bool> {
        Ok(self.store.slack_wait(kind, id, channel, due).await?)
    }

    /// Every record of an item: (channel, what it says).
    pub async fn slack_records_of(
        &self,
        kind: &str,
        id: &str,
    ) -> Result<Vec<(String, SlackRecord)>> {
        Ok(self.store.slack_records_of(kind, id).await?)
    }

    /// The item's Slack message is drawn (or needs none): no longer owed.
    pub async fn slack_paid(&self, kind: &str, id: &str) -> Result<()> {
        Ok(self.store.slack_paid(kind, id).await?)
    }

    /// Every item whose Slack message is owed a draw.
    pub async fn slack_owed(&self) -> Result<Vec<(String, String)>> {
        Ok(self.store.slack_owed().await?)
    }

    /// Record that the item is owed its first post in `channel` (false:
    /// it has a record there already).
    pub async fn slack_owe_post(&self, kind: &str, id: &str, channel: &str) -> Result<bool> {
        Ok(self.store.slack_owe_post(kind, id, channel).await?)
    }

    /// The record of an item in `channel`: its message (`ts` and the hash
    /// of what it shows), or how it waits.
    pub async fn slack_message(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
    ) -> Result<Option<SlackRecord>> {
        Ok(self.store.slack_message(kind, id, channel).await?)
    }

    /// Who took the input `key` and has not finished it, if anyone
    /// (`None`: applied, or never seen).
    pub async fn slack_input_taker(&self, key: &str) -> Result<Option<String>> {
        Ok(self.store.slack_input_taker(key).await?)
    }

    /// Take the unfinished input `key` from `dead`, a taker known gone.
    pub async fn slack_input_take_from(&self, key: &str, holder: &str, dead: &str) -> Result<bool> {
        Ok(self.store.slack_input_take_from(key, holder, dead).await?)
    }

    /// Claim the input `key` for `holder`: `true` when it is this holder's
    /// to apply (never taken, or left unfinished by a taker for `stale_ms`).
    pub async fn slack_input_take(&self, key: &str, holder: &str, stale_ms: i64) -> Result<bool> {
        Ok(self.store.slack_input_take(key, holder, stale_ms).await?)
    }

    /// A waiting item goes out as its own message: owed its first post.
    /// False when it no longer waits, so two releases never both post it.
    pub async fn slack_release(&self, kind: &str, id: &str, channel: &str) -> Result<bool> {
        Ok(self.store.slack_release(kind, id, channel).await?)
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
        Ok(self
            .store
            .slack_save_message(kind, id, channel, ts, drawn)
            .await?)
    }

    /// Record that the item's post in `channel` is under way, before it is
    /// made (from no message, `from` empty, or from the message `from`
    /// Slack no longer has). False: the record changed; post nothing.
    pub async fn slack_sending(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
        from: &str,
    ) -> Result<bool> {
        Ok(self.store.slack_sending(kind, id, channel, from).await?)
    }

    /// A post under way never reached Slack and the item needs none now:
    /// owed its first post again, should it need one.
    pub async fn slack_not_sending(&self, kind: &str, id: &str, channel: &str) -> Result<()> {
        Ok(self.store.slack_not_sending(kind, id, channel).await?)
    }

    /// Mark an item's Slack message owed a draw.
    pub async fn slack_owe(&self, kind: &str, id: &str) -> Result<()> {
        Ok(self.store.slack_owe(kind, id).await?)
    }

    /// The item a Slack message in `channel` shows, if it is one of ours.
    pub async fn slack_item_of(&self, channel: &str, ts: &str) -> Result<Option<(String, String)>> {
        Ok(self.store.slack_item_of(channel, ts).await?)
    }

    /// Mark the input `key` applied, so it is never taken again.
    pub async fn slack_input_done(&self, key: &str, holder: &str) -> Result<()> {
        Ok(self.store.slack_input_done(key, holder).await?)
    }

    /// A waiting item waits on, until `due` (its digest could not go out).
    pub async fn slack_wait_until(
        &self,
        kind: &str,
        id: &str,
        channel: &str,
        due: i64,
    ) -> Result<bool> {
        Ok(self.store.slack_wait_until(kind, id, channel, due).await?)
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
        Ok(self.store.slack_digested(kind, id, channel, ts).await?)
    }

    /// A waiting item settled meanwhile: it is never shown in `channel`.
    pub async fn slack_drop_wait(&self, kind: &str, id: &str, channel: &str) -> Result<()> {
        Ok(self.store.slack_drop_wait(kind, id, channel).await?)
    }
}
