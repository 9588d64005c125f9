//! Slack's rate tiers, kept on our side: each Web API method (and
//! `chat.postMessage` per channel) has a token bucket sized to its tier,
//! so a burst waits here instead of drawing `429`s; a `429` that comes
//! anyway pauses that method (Slack limits a method, not a message) until
//! its `Retry-After`. Pure bookkeeping: nothing here calls Slack or sleeps.
//!
//! Each message's task waits for its own call only: a message that fails
//! (a 5xx, a message someone deleted, a slow answer) holds up no other,
//! and a method's pause holds up only calls Slack would refuse anyway.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A method's budget: `burst` calls at once, then `per_minute`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tier {
    burst: f64,
    per_minute: f64,
}

/// The tier of `method` (Slack's published tiers; `chat.postMessage` is
/// its own: about one message a second per channel, short bursts allowed).
fn tier(method: &str) -> Tier {
    let (burst, per_minute) = match method {
        "chat.postMessage" => (4.0, 60.0),
        // Tier 3.
        "chat.update" | "conversations.history" => (20.0, 50.0),
        // Tier 4.
        "chat.postEphemeral" | "views.open" => (20.0, 100.0),
        // Tier 2, for anything else: the careful default.
        _ => (5.0, 20.0),
    };
    Tier { burst, per_minute }
}

/// Whether Slack counts `method` per channel rather than per workspace.
fn per_channel(method: &str) -> bool {
    method == "chat.postMessage"
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
    paused_until: Option<Instant>,
}

/// Every method's bucket (a std Mutex: never held across an await).
#[derive(Debug, Default)]
pub(crate) struct Tiers {
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Tiers {
    fn key(method: &str, channel: &str) -> String {
        if per_channel(method) {
            format!("{method}:{channel}")
        } else {
            method.to_string()
        }
    }

    /// Take a call of `method` in `channel` now (`Duration::ZERO`), or say
    /// how long to wait before asking again.
    pub(crate) fn reserve(&self, method: &str, channel: &str, now: Instant) -> Duration {
        let t = tier(method);
        let mut buckets = self.buckets.lock().expect("tiers lock poisoned");
        let b = buckets.entry(Self::key(method, channel)).or_insert(Bucket {
            tokens: t.burst,
            at: now,
            paused_until: None,
        });
        if let Some(until) = b.paused_until {
            if until > now {
                return until - now;
            }
            b.paused_until = None;
        }
        let rate = t.per_minute / 60.0;
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(t.burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - b.tokens) / rate)
        }
    }

    /// Slack said `429`: no call of `method` (in `channel`) before `until`.
    pub(crate) fn pause(&self, method: &str, channel: &str, until: Instant) {
        let mut buckets = self.buckets.lock().expect("tiers lock poisoned");
        let b = buckets.entry(Self::key(method, channel)).or_insert(Bucket {
            tokens: 1.0,
            at: until,
            paused_until: None,
        });
        let until = b.paused_until.map_or(until, |p| p.max(until));
        b.paused_until = Some(until);
        // After the pause, one call, then the tier's pace (no burst).
        b.tokens = 1.0;
        b.at = until;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_spread_to_the_tier_and_channels_count_apart() {
        let tiers = Tiers::default();
        let now = Instant::now();
        let waits: Vec<Duration> = (0..6)
            .map(|_| tiers.reserve("chat.postMessage", "C1", now))
            .collect();
        // Four at once, then a wait of about a second per message.
        assert!(waits[..4].iter().all(|w| w.is_zero()), "{waits:?}");
        assert!(waits[4] > Duration::from_millis(900), "{waits:?}");
        // Another channel has its own budget; chat.update its own.
        assert!(tiers.reserve("chat.postMessage", "C2", now).is_zero());
        assert!(tiers.reserve("chat.update", "C1", now).is_zero());
        // A second later, one more post fits in C1.
        let later = now + Duration::from_millis(1001);
        assert!(tiers.reserve("chat.postMessage", "C1", later).is_zero());
        assert!(!tiers.reserve("chat.postMessage", "C1", later).is_zero());
    }

    #[test]
    fn a_429_pauses_the_method_until_retry_after() {
        let tiers = Tiers::default();
        let now = Instant::now();
        tiers.pause("chat.update", "C1", now + Duration::from_secs(3));
        let wait = tiers.reserve("chat.update", "C9", now);
        assert_eq!(wait, Duration::from_secs(3), "per workspace, not channel");
        assert!(tiers.reserve("chat.postEphemeral", "C1", now).is_zero());
        let after = now + Duration::from_secs(3);
        assert!(tiers.reserve("chat.update", "C1", after).is_zero());
    }
}
