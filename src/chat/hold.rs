//! Pushes that wait: an action inside its kind's grace period (`[[kinds]]
//! grace_secs`), any item for a chat inside its quiet hours, or one beyond
//! a burst's digest threshold (`digest`), is recorded as waiting instead of
//! sent. One task looks at the waiting records when the earliest falls due:
//! an item settled meanwhile is never pushed; a grace period over is pushed
//! like a new item (so it may join a burst); the items that waited out a
//! chat's quiet hours, or a burst's window, go out by the digest rule.
//!
//! The due time is stored (derived from the item's creation time), so a
//! restart neither forgets a waiting push nor sends it early; and one item
//! waiting never holds up another (the follower moves on at once).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::Bridge;
use super::callback::Item;
use super::digest::{Dest, DigestKind};
use super::push::{self, PushError};
use crate::config::Target;
use crate::store::chat::{Held, Hold};

/// The longest the task sleeps without a due time or a new waiting push
/// (the wall clock may jump; quiet hours may end without any write).
const IDLE: Duration = Duration::from_secs(60);

impl Bridge {
    /// Whether a new item for `target` waits, and until when: `at` is when
    /// it was created (ms), `kind` its action kind. `None`: push it now.
    pub(super) fn hold_of(
        &self,
        target: &Target,
        kind: Option<&str>,
        at: i64,
        now: i64,
    ) -> Option<(Hold, i64)> {
        // No grace: never held for one, even if the wall clock stepped
        // back since the item was created.
        let grace_due = match self.config.grace_ms(kind) {
            0 => i64::MIN,
            g => at.saturating_add(g),
        };
        let quiet_end = self.quiet_until(target.chat_id, now);
        match quiet_end {
            // Quiet hours outlast the grace: it goes out with the digest.
            Some(end) if end >= grace_due => Some((Hold::Quiet, end)),
            _ if grace_due > now => Some((Hold::Grace, grace_due)),
            _ => None,
        }
    }

    /// When the quiet hours of `chat_id` that `now` falls in end.
    fn quiet_until(&self, chat_id: i64, now: i64) -> Option<i64> {
        self.config
            .chat_by_id(chat_id)
            .and_then(|c| c.quiet())
            .and_then(|q| q.until(now))
    }

    /// The task releasing waiting pushes as they fall due, until `stop`
    /// (shutdown, or the end of this daemon's stint as the chat sender).
    pub(super) async fn hold_loop(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        loop {
            let ok = self.release_due().await;
            let wait = match self.ops.chat_next_due().await {
                _ if !ok => Duration::from_secs(1),
                Ok(Some(due)) => {
                    let ms = (due - self.ops.now()).clamp(10, IDLE.as_millis() as i64);
                    Duration::from_millis(ms as u64)
                }
                Ok(None) => IDLE,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read when the next waiting push is due");
                    Duration::from_secs(1)
                }
            };
            // Why `held` too: a push recorded as waiting may be due sooner
            // than what this sleep was computed from.
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.held.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Release every waiting push that is due; false when the store failed
    /// (the task tries again shortly).
    async fn release_due(&self) -> bool {
        let now = self.ops.now();
        let due = match self.ops.chat_held_due(now).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list waiting chat pushes");
                return false;
            }
        };
        let mut ok = true;
        let mut together: HashMap<(Dest, DigestKind), Vec<(Item, String)>> = HashMap::new();
        for h in due {
            if let Err(e) = self.release_one(&h, now, &mut together).await {
                tracing::warn!(error = %e, item = %h.item_kind, id = %h.item_id, "cannot release a waiting chat push; will retry");
                ok = false;
            }
        }
        for ((dest, kind), items) in together {
            self.send_digest(dest, items, kind).await;
        }
        ok
    }

    /// Release one due push: skipped when its item settled (or is gone),
    /// held again when its chat is quiet now, else pushed: a grace period's
    /// like a new item, the others collected into `together` per
    /// destination for the digest rule.
    async fn release_one(
        &self,
        h: &Held,
        now: i64,
        together: &mut HashMap<(Dest, DigestKind), Vec<(Item, String)>>,
    ) -> Result<(), PushError> {
        let (kind, id, chat_id) = (h.item_kind.as_str(), h.item_id.as_str(), h.chat_id);
        let meta = match Item::from_kind(kind) {
            Some(item) => push::meta(&self.ops, item, id).await?.map(|m| (item, m)),
            None => None,
        };
        let Some((item, meta)) = meta.filter(|(_, m)| m.live && !m.quiet) else {
            self.ops.chat_skip(kind, id, chat_id).await?;
            tracing::debug!(item = %kind, id = %id, chat_id, "settled while it waited: not pushed");
            return Ok(());
        };
        if let Some(end) = self.quiet_until(chat_id, now) {
            self.ops
                .chat_hold_again(kind, id, chat_id, (Hold::Quiet, end), None)
                .await?;
            return Ok(());
        }
        // A burst's topic was chosen when it began to wait; the others'
        // now that the item is really pushed, unless the target named one.
        let topic = match h.hold {
            Hold::Burst => h.thread_id,
            // A topic named when it began to wait (see `push`).
            Hold::Grace | Hold::Quiet if h.thread_id.is_some() => h.thread_id,
            Hold::Grace | Hold::Quiet => {
                match self
                    .config
                    .route(&meta.project, &meta.agent, meta.action_kind.as_deref())
                {
                    Some(t) if t.chat_id == chat_id => self.topic_for(&t, &meta).await,
                    _ => self.config.chat_by_id(chat_id).and_then(|c| c.topic),
                }
            }
        };
        let dest = (chat_id, topic);
        match h.hold {
            Hold::Grace => match self.burst_due(dest, h.due_at) {
                Some(due) => {
                    self.ops
                        .chat_hold_again(kind, id, chat_id, (Hold::Burst, due), Some(topic))
                        .await?;
                    self.held.notify_one();
                }
                None => {
                    if self.ops.chat_release(kind, id, chat_id, topic).await? {
                        self.kick((item, id.to_string(), chat_id));
                    }
                }
            },
            Hold::Quiet => together
                .entry((dest, DigestKind::Quiet))
                .or_default()
                .push((item, id.to_string())),
            Hold::Burst => together
                .entry((dest, DigestKind::Burst))
                .or_default()
                .push((item, id.to_string())),
        }
        Ok(())
    }
}
