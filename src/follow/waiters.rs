//! In-process waiters keyed by entity (`question:<id>`, `session:<id>`, …),
//! woken when the event follower applies an event about that entity.
//!
//! A waiter takes a [`Notified`](tokio::sync::Notify) future *before* it
//! re-checks the store, so an event applied between the check and the await
//! still wakes it (tokio guarantees a created `Notified` sees
//! `notify_waiters`). Waiters always re-read the store after waking: a wake
//! is a hint, the store is the truth.

use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::Notify;

use crate::store::Event;

/// The map of waiters. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Waiters {
    map: Arc<DashMap<String, Arc<Notify>>>,
}

impl Waiters {
    /// The notifier for `key`; call `.notified()` on it before re-checking.
    pub fn watch(&self, key: &str) -> Arc<Notify> {
        // The entry guard is dropped at the end of this statement: no await
        // happens while a DashMap shard lock is held.
        self.map.entry(key.to_string()).or_default().clone()
    }

    /// Wake everyone waiting on an entity of `ev` (its item and its session).
    pub fn wake(&self, ev: &Event) {
        self.wake_key(&format!("{}:{}", ev.entity_kind, ev.entity_id));
        if !ev.session.is_empty() {
            self.wake_key(&format!("session:{}", ev.session));
        }
        self.wake_key("any");
    }

    fn wake_key(&self, key: &str) {
        // Removing the entry keeps the map from growing with finished waits;
        // waiters holding the Arc are still woken.
        if let Some((_, n)) = self.map.remove(key) {
            n.notify_waiters();
        }
    }

    /// Number of keys with live waiters (for metrics and tests).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl crate::follow::Apply for Waiters {
    const NAME: &'static str = "waiters";
    /// Waking and the log line need only the event's envelope.
    fn reads_payload(&self, _kind: &str) -> bool {
        false
    }
    async fn apply(&mut self, ev: &Event) -> bool {
        // One line per state change the daemon sees, whichever process
        // (CLI, MCP, chat, Inbox) made it: the log tells what happened.
        tracing::info!(
            seq = ev.seq,
            id = %ev.entity_id,
            by = %ev.actor,
            via = %ev.channel,
            project = %ev.project,
            "{}",
            ev.kind
        );
        self.wake(ev);
        true
    }
    async fn save(&mut self, _seq: i64) {}
}
