//! Wake-ups: when a human answers, declines, marks a row
//! handled or decides an action — or an outside system posts an inbound
//! wake — the session that waits is woken through its wake target and every
//! matching global `[[notify]]` rule.
//!
//! The [`worker`] follows the event log with a durable cursor (`notify`),
//! enqueues one durable delivery per (event, target), and runs due
//! deliveries outside any transaction with retries on a schedule; a delivery
//! that keeps failing goes dead and a `delivery.dead` event tells the chat.
//! Targets: [`exec`], [`webhook`] (signed by [`sign`]) and [`tmux`]. This
//! module does not decide *what* happened; it only carries events out.

pub mod exec;
pub mod tmux;
pub mod webhook;
pub mod worker;

use std::time::Duration;

use serde_json::{Value, json};

use crate::config::Config;
use crate::store::Event;
use crate::store::deliveries::NewDelivery;
pub use crate::store::events::WAKE_EVENTS;
use crate::store::sessions::{Session, WakeTarget, target_kind};

pub use worker::{Options, spawn};

/// How much longer than its own timeout an attempt may hold its delivery
/// before it counts as crashed.
const LEASE_MARGIN: Duration = Duration::from_secs(5);

/// Whether `ev` wakes anyone. Responses the agent recorded itself
/// (`source = agent`) and cleared annotations do not.
pub fn wakes(ev: &Event) -> bool {
    if !WAKE_EVENTS.contains(&ev.kind.as_str()) {
        return false;
    }
    let p = &ev.payload;
    if p.get("source").and_then(Value::as_str) == Some("agent") {
        return false;
    }
    !(ev.kind == "row.annotated" && p.get("cleared").and_then(Value::as_bool) == Some(true))
}

/// The stable id of an event, sent as `webhook-id` / `HANDOFF_EVENT_ID`:
/// the same on every retry and after restarts, so receivers can dedupe.
pub fn event_id(seq: i64) -> String {
    format!("evt_{seq}")
}

/// One wake-up being delivered.
#[derive(Debug, Clone)]
pub struct Wake<'a> {
    /// The event being delivered.
    pub event: &'a Event,
    /// `evt_<seq>`: the same across retries and restarts, for the receiver to dedupe.
    pub event_id: String,
}

impl<'a> Wake<'a> {
    /// The wake-up for `event`.
    pub fn new(event: &'a Event) -> Self {
        Wake {
            event,
            event_id: event_id(event.seq),
        }
    }

    /// `<kind>:<id>` of the item the event is about (`HANDOFF_ITEM`).
    pub fn item(&self) -> String {
        format!("{}:{}", self.event.entity_kind, self.event.entity_id)
    }

    /// The JSON every target receives.
    pub fn body(&self) -> Value {
        let ev = self.event;
        json!({
            "event_id": self.event_id,
            "type": ev.kind,
            "session": ev.session,
            "item": {"kind": ev.entity_kind, "id": ev.entity_id},
            "payload": ev.payload,
            "at": crate::clock::format_rfc3339(ev.at),
        })
    }

    /// [`Wake::body`] serialized.
    pub fn body_bytes(&self) -> Vec<u8> {
        self.body().to_string().into_bytes()
    }
}

/// What one delivery attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The target took it.
    Delivered,
    /// Try again on the schedule (not before `after`, if the target said so).
    Retry {
        /// Why this attempt failed.
        error: String,
        /// The target's `Retry-After`.
        after: Option<Duration>,
    },
    /// Retrying cannot help.
    Dead {
        /// Why the delivery failed for good (e.g. a 4xx answer, an exec that cannot start).
        error: String,
    },
    /// The target asked never to be called again (410 Gone).
    Disable {
        /// What the target answered.
        error: String,
    },
}

/// The identity of a target: the same target from a session and a rule is
/// one delivery, and a disabled target is recognised in later events.
pub fn target_key(t: &WakeTarget) -> String {
    use sha2::{Digest, Sha256};
    let canon = serde_json::to_string(t).unwrap_or_default();
    let h = Sha256::digest(canon.as_bytes());
    let hex: String = h[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}:{hex}", target_kind(t))
}

/// How long one attempt at `t` may hold its delivery.
pub fn lease_ms(t: &WakeTarget) -> i64 {
    let run = match t {
        WakeTarget::Exec { timeout_secs, .. } => timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(exec::DEFAULT_TIMEOUT),
        WakeTarget::Webhook { .. } => webhook::TIMEOUT,
        WakeTarget::Tmux { .. } => tmux::TIMEOUT * 3,
    };
    i64::try_from((run + LEASE_MARGIN).as_millis()).unwrap_or(i64::MAX / 4)
}

/// The deliveries `ev` needs: the session's wake target (if any) plus every
/// `[[notify]]` rule whose filters match. Duplicated targets count once.
pub fn targets_for(ev: &Event, session: Option<&Session>, config: &Config) -> Vec<NewDelivery> {
    if ev.kind == "action.escalated" {
        return escalation_webhook(ev, config).into_iter().collect();
    }
    if !wakes(ev) {
        return Vec::new();
    }
    let mut out: Vec<NewDelivery> = Vec::new();
    let mut add = |origin: String, target: WakeTarget| {
        let key = target_key(&target);
        if !out.iter().any(|d| d.target_key == key) {
            out.push(NewDelivery {
                lease_ms: lease_ms(&target),
                target_key: key,
                origin,
                target,
            });
        }
    };
    // An ended session is not woken through its own target (rules still apply).
    let live = session.filter(|s| s.status != "ended");
    if let Some(t) = live.and_then(|s| s.wake_target.clone()) {
        add("session".into(), t);
    }
    let agent = session.map(|s| s.agent.as_str()).unwrap_or("");
    for (i, rule) in config.notify.iter().enumerate() {
        let ok = rule.events.contains(&ev.kind)
            && rule.project.as_deref().is_none_or(|p| p == ev.project)
            && rule.agent.as_deref().is_none_or(|a| a == agent);
        if ok {
            let name = rule.name.clone().unwrap_or_else(|| format!("#{}", i + 1));
            add(format!("rule:{name}"), rule.target());
        }
    }
    out
}

/// An escalation step's webhook, if the step names one: delivered, signed
/// and retried as any webhook is, with the secret the config gives that
/// URL now (the action keeps the URL, never the secret). It wakes no
/// session: the agent is still waiting.
fn escalation_webhook(ev: &Event, config: &Config) -> Option<NewDelivery> {
    let url = ev.payload.get("webhook").and_then(Value::as_str)?;
    let Some(secret) = config.approvals.webhook_secret(url) else {
        tracing::warn!(action_id = %ev.entity_id, %url, "escalation webhook no longer configured: not sent");
        return None;
    };
    let target = WakeTarget::Webhook {
        url: url.to_string(),
        secret: secret.to_string(),
    };
    Some(NewDelivery {
        lease_ms: lease_ms(&target),
        target_key: target_key(&target),
        origin: "escalation".into(),
        target,
    })
}

/// The retry schedule: the delay before each attempt; after the last
/// attempt fails, the delivery is dead.
pub fn schedule(config: &Config) -> Vec<Duration> {
    match &config.wake.retry_schedule_ms {
        Some(ms) => ms.iter().map(|m| Duration::from_millis(*m)).collect(),
        None => [0, 1, 5, 30, 120, 600].map(Duration::from_secs).to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: &str, payload: Value) -> Event {
        Event {
            seq: 7,
            at: 0,
            kind: kind.into(),
            entity_kind: "question".into(),
            entity_id: "q1".into(),
            actor: String::new(),
            channel: "chat".into(),
            project: "web".into(),
            session: "s1".into(),
            payload,
        }
    }

    fn cfg(text: &str) -> Config {
        Config::parse(text, std::path::Path::new("t.toml")).unwrap()
    }

    #[test]
    fn which_events_wake() {
        assert!(wakes(&ev(
            "question.answered",
            json!({"kind": "answer", "source": "chat"})
        )));
        assert!(!wakes(&ev("question.answered", json!({"source": "agent"}))));
        assert!(!wakes(&ev("question.flagged", json!({}))));
        assert!(!wakes(&ev("row.annotated", json!({"cleared": true}))));
        assert!(wakes(&ev("action.unknown", json!({}))));
        assert!(wakes(&ev("session.wake", json!({}))));
    }

    #[test]
    fn rules_filter_by_event_project_and_agent() {
        let c = cfg(r#"
            [[notify]]
            name = "web-answers"
            events = ["question.answered"]
            project = "web"
            exec = ["/bin/true"]
            [[notify]]
            events = ["question.answered"]
            project = "infra"
            exec = ["/bin/false"]
            [[notify]]
            events = ["action.approved"]
            exec = ["/bin/true", "x"]
            [[notify]]
            events = ["question.answered"]
            agent = "codex"
            webhook = "https://ci.example.com/hook"
            secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
        "#);
        let e = ev("question.answered", json!({"source": "chat"}));
        let got = targets_for(&e, None, &c);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].origin, "rule:web-answers");
        let s = Session {
            session_id: "s1".into(),
            agent: "codex".into(),
            project: "web".into(),
            cwd: String::new(),
            host: String::new(),
            wake_target: Some(WakeTarget::Exec {
                argv: vec!["/bin/true".into()],
                timeout_secs: None,
            }),
            state_blob: None,
            status: "active".into(),
            revision: 1,
            created_at: 0,
            updated_at: 0,
            ended_at: None,
            last_wait_seq: 0,
        };
        let got = targets_for(&e, Some(&s), &c);
        let origins: Vec<&str> = got.iter().map(|d| d.origin.as_str()).collect();
        // The session's target equals the first rule's: one delivery.
        assert_eq!(origins, ["session", "rule:#4"]);
        assert!(targets_for(&ev("question.flagged", json!({})), Some(&s), &c).is_empty());
    }

    #[test]
    fn bad_rules_are_refused() {
        for (bad, want) in [
            ("[[notify]]\nevents = []\nexec = [\"x\"]", "event types"),
            (
                "[[notify]]\nevents = [\"question.flagged\"]\nexec = [\"x\"]",
                "not a wake-up event",
            ),
            ("[[notify]]\nevents = [\"row.handled\"]", "give a target"),
            (
                "[[notify]]\nevents = [\"row.handled\"]\nwebhook = \"https://x\"\nsecret = \"nope\"",
                "whsec_",
            ),
            (
                "[[notify]]\nevents = [\"row.handled\"]\nexec = [\"x\"]\ncolour = 1",
                "unknown field",
            ),
            ("[wake]\nallowed_webhook_urls = [\"ftp://x\"]", "http(s)"),
            (
                "[[wake.sources]]\nname = \"ci\"\nkind = \"standard\"\nsecret = \"not-a-whsec-secret\"",
                "whsec_",
            ),
            (
                "[[wake.sources]]\nname = \"ci\"\nkind = \"bearer\"\nsecret = \"short\"",
                "16",
            ),
        ] {
            let e = Config::parse(bad, std::path::Path::new("t.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn an_escalation_goes_to_its_webhook_only() {
        let c = cfg(r#"
            [[approvals.escalate]]
            after = "10m"
            webhook = "https://pager.example.com/hook"
            secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
        "#);
        let mut e = ev(
            "action.escalated",
            json!({"step": 1, "webhook": "https://pager.example.com/hook"}),
        );
        let got = targets_for(&e, None, &c);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].origin, "escalation");
        assert!(
            matches!(&got[0].target, WakeTarget::Webhook { secret, .. } if secret.starts_with("whsec_"))
        );
        // A chat step, or a webhook no longer configured: nothing to deliver.
        e.payload = json!({"step": 1, "chat": "team"});
        assert!(targets_for(&e, None, &c).is_empty());
        e.payload = json!({"step": 1, "webhook": "https://gone.example.com/"});
        assert!(targets_for(&e, None, &c).is_empty());
    }

    #[test]
    fn a_bad_escalation_step_names_its_key() {
        let e = Config::parse(
            "[[approvals.escalate]]\nafter = \"10m\"\nchat = \"nope\"\n",
            std::path::Path::new("t.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("\"nope\" is not a [[telegram.chats]] name"),
            "{e}"
        );
    }

    #[test]
    fn the_default_schedule() {
        let s = schedule(&Config::default());
        assert_eq!(s.len(), 6);
        assert_eq!(s[5], Duration::from_secs(600));
    }
}
