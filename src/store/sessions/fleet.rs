//! The fleet view's read: every registered session with what it is doing
//! now — waiting on a question, waiting on an approval, working, idle or
//! ended — since when, its host, its wake target's kind and the last
//! delivery to it, and the items it waits on. Two statements, each one
//! text for both engines; the state is decided here, in Rust, from what
//! they return. This module reads; it changes nothing.

use serde::{Deserialize, Serialize};

use super::{WakeTarget, target_kind};
use crate::store::engine::Stmt;
use crate::store::{Result, Store, short_id};

/// A session with nothing waiting and no event for this long counts as idle.
pub const IDLE_AFTER_MS: i64 = 15 * 60 * 1000;

/// What a session is doing now, as the fleet view shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FleetState {
    /// An open question of its own has no answer yet.
    WaitingQuestion,
    /// An action it proposed waits for a decision.
    WaitingApproval,
    /// Running, with nothing waiting on a person.
    Working,
    /// Marked idle, or silent for [`IDLE_AFTER_MS`].
    Idle,
    /// Ended.
    Ended,
}

impl FleetState {
    /// The words people read (`waiting on a question`, …).
    pub fn words(self) -> &'static str {
        match self {
            FleetState::WaitingQuestion => "waiting on a question",
            FleetState::WaitingApproval => "waiting on an approval",
            FleetState::Working => "working",
            FleetState::Idle => "idle",
            FleetState::Ended => "ended",
        }
    }
}

/// One item a session waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FleetItem {
    /// `question` or `action`.
    pub kind: String,
    /// Its full id.
    pub id: String,
    /// The `#code` people type.
    pub short_id: String,
    /// The question's title or the action's summary.
    pub title: String,
    /// When it was asked or proposed.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
}

/// The newest delivery of an event to a session's wake target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FleetDelivery {
    /// `pending`, `delivering`, `delivered` or `dead`.
    pub status: String,
    /// Attempts started.
    pub attempts: i64,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// When it last changed.
    #[serde(with = "crate::clock::Timestamp")]
    pub at: i64,
}

/// A session as the fleet view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FleetSession {
    /// Its id.
    pub session_id: String,
    /// The agent running it.
    pub agent: String,
    /// Its project.
    pub project: String,
    /// Its working directory.
    pub cwd: String,
    /// The machine it runs on (empty when unknown).
    pub host: String,
    /// The kind of its wake target (`exec`, `webhook`, `tmux`), if any.
    pub wake: Option<String>,
    /// The stored status (`active`, `idle`, `ended`).
    pub status: String,
    /// What it is doing now.
    pub state: FleetState,
    /// Since when.
    #[serde(with = "crate::clock::Timestamp")]
    pub since: i64,
    /// Its newest event.
    #[serde(with = "crate::clock::Timestamp")]
    pub last_event_at: i64,
    /// The newest delivery to its wake target.
    pub last_delivery: Option<FleetDelivery>,
    /// What it waits on, oldest first.
    pub pending: Vec<FleetItem>,
}

/// One `agent_sessions` row with what the fleet statement adds to it.
#[derive(sqlx::FromRow)]
struct Row {
    session_id: String,
    agent: String,
    project: String,
    cwd: String,
    host: String,
    wake_target: Option<String>,
    status: String,
    ended_at: Option<i64>,
    created_at: i64,
    updated_at: i64,
    last_at: Option<i64>,
    decided_at: Option<i64>,
    d_status: Option<String>,
    d_attempts: Option<i64>,
    d_error: Option<String>,
    d_at: Option<i64>,
}

/// One waiting item: (kind, id, session, title, created_at).
type ItemRow = (String, String, String, String, i64);

/// The sessions, each with its newest event, its newest answer or
/// decision, and its newest delivery (`origin = 'session'`: its own wake
/// target). Ordered in Rust, so the text is the same on both engines.
const SESSIONS: &str = "
SELECT s.session_id, s.agent, s.project, s.cwd, s.host, s.wake_target, s.status,
       s.ended_at, s.created_at, s.updated_at,
       (SELECT e.at FROM events e WHERE e.session = s.session_id AND e.session <> ''
         ORDER BY e.seq DESC LIMIT 1) AS last_at,
       (SELECT MAX(x.at) FROM (
            SELECT q.replied_at AS at FROM questions q WHERE q.session = s.session_id
            UNION ALL
            SELECT a.decided_at AS at FROM actions a WHERE a.session = s.session_id) x) AS decided_at,
       d.status AS d_status, d.attempts AS d_attempts, d.last_error AS d_error, d.updated_at AS d_at
FROM agent_sessions s
LEFT JOIN deliveries d ON d.id = (
    SELECT MAX(d2.id) FROM deliveries d2 JOIN events e2 ON e2.seq = d2.event_seq
     WHERE d2.origin = 'session' AND e2.session = s.session_id)
WHERE (CAST($1 AS TEXT) IS NULL OR s.project = $1)";

/// What registered sessions wait on: open questions without an answer,
/// and pending actions not yet past their expiry.
const WAITING: &str = "
SELECT 'question' AS kind, q.id, q.session, q.title, q.created_at
FROM questions q JOIN agent_sessions s ON s.session_id = q.session
WHERE q.status = 'open' AND q.reply IS NULL AND q.session <> ''
  AND (CAST($1 AS TEXT) IS NULL OR s.project = $1)
UNION ALL
SELECT 'action' AS kind, a.id, a.session, a.summary, a.created_at
FROM actions a JOIN agent_sessions s ON s.session_id = a.session
WHERE a.status = 'pending' AND a.session <> '' AND (a.expires_at IS NULL OR a.expires_at > $2)
  AND (CAST($1 AS TEXT) IS NULL OR s.project = $1)";

impl Store {
    /// Every registered session (of `project`, when given) as the fleet
    /// view shows it: by project, then the ones waiting on a person first,
    /// then the most recently active.
    pub async fn fleet(&self, project: Option<&str>) -> Result<Vec<FleetSession>> {
        let now = self.now();
        let rows: Vec<Row> = self.rows(Stmt::new(SESSIONS).text(project)).await?;
        let mut items: Vec<ItemRow> = self.rows(Stmt::new(WAITING).text(project).int(now)).await?;
        items.sort_by(|a, b| (a.4, &a.1).cmp(&(b.4, &b.1)));
        let mut out: Vec<FleetSession> = rows
            .into_iter()
            .map(|r| {
                let pending: Vec<FleetItem> = items
                    .iter()
                    .filter(|i| i.2 == r.session_id)
                    .map(|(kind, id, _, title, at)| FleetItem {
                        kind: kind.clone(),
                        short_id: short_id(id).to_string(),
                        id: id.clone(),
                        title: title.clone(),
                        created_at: *at,
                    })
                    .collect();
                shape(r, pending, now)
            })
            .collect();
        out.sort_by(|a, b| {
            (
                &a.project,
                rank(a.state),
                std::cmp::Reverse(a.last_event_at),
                &a.session_id,
            )
                .cmp(&(
                    &b.project,
                    rank(b.state),
                    std::cmp::Reverse(b.last_event_at),
                    &b.session_id,
                ))
        });
        Ok(out)
    }
}

/// Waiting sessions first, ended ones last.
fn rank(s: FleetState) -> u8 {
    match s {
        FleetState::WaitingQuestion | FleetState::WaitingApproval => 0,
        FleetState::Working => 1,
        FleetState::Idle => 2,
        FleetState::Ended => 3,
    }
}

/// Decide a session's state and since when.
fn shape(r: Row, pending: Vec<FleetItem>, now: i64) -> FleetSession {
    let last_event_at = r.last_at.unwrap_or(r.updated_at);
    let first = |kind: &str| {
        pending
            .iter()
            .find(|i| i.kind == kind)
            .map(|i| i.created_at)
    };
    let (state, since) = if r.status == "ended" {
        (FleetState::Ended, r.ended_at.unwrap_or(r.updated_at))
    } else if let Some(at) = first("question") {
        (FleetState::WaitingQuestion, at)
    } else if let Some(at) = first("action") {
        (FleetState::WaitingApproval, at)
    } else if r.status == "idle" || now - last_event_at >= IDLE_AFTER_MS {
        (FleetState::Idle, last_event_at)
    } else {
        // Working since it last stopped waiting on a person (an answer or
        // a decision), else since it registered.
        let back = r.decided_at.unwrap_or(r.created_at).max(r.created_at);
        (FleetState::Working, back)
    };
    let wake = r
        .wake_target
        .as_deref()
        .and_then(|w| serde_json::from_str::<WakeTarget>(w).ok())
        .map(|w| target_kind(&w).to_string());
    let last_delivery = r.d_status.map(|status| FleetDelivery {
        status,
        attempts: r.d_attempts.unwrap_or(0),
        last_error: r.d_error,
        at: r.d_at.unwrap_or(0),
    });
    FleetSession {
        session_id: r.session_id,
        agent: r.agent,
        project: r.project,
        cwd: r.cwd,
        host: r.host,
        wake,
        status: r.status,
        state,
        since,
        last_event_at,
        last_delivery,
        pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str) -> Row {
        Row {
            session_id: "s".into(),
            agent: "claude".into(),
            project: "web".into(),
            cwd: String::new(),
            host: "box".into(),
            wake_target: Some(r#"{"type":"tmux","pane":"%1"}"#.into()),
            status: status.into(),
            ended_at: Some(50),
            created_at: 10,
            updated_at: 20,
            last_at: Some(900),
            decided_at: Some(700),
            d_status: None,
            d_attempts: None,
            d_error: None,
            d_at: None,
        }
    }

    fn item(kind: &str, at: i64) -> FleetItem {
        FleetItem {
            kind: kind.into(),
            id: format!("{kind}-{at}"),
            short_id: String::new(),
            title: String::new(),
            created_at: at,
        }
    }

    #[test]
    fn the_state_follows_what_the_session_waits_on() {
        let cases: &[(&str, Vec<FleetItem>, i64, FleetState, i64)] = &[
            (
                "ended",
                vec![item("question", 5)],
                1000,
                FleetState::Ended,
                50,
            ),
            (
                "active",
                vec![item("action", 3), item("question", 5)],
                1000,
                FleetState::WaitingQuestion,
                5,
            ),
            (
                "active",
                vec![item("action", 3)],
                1000,
                FleetState::WaitingApproval,
                3,
            ),
            ("active", vec![], 1000, FleetState::Working, 700),
            ("idle", vec![], 1000, FleetState::Idle, 900),
            ("active", vec![], 900 + IDLE_AFTER_MS, FleetState::Idle, 900),
        ];
        for (status, pending, now, state, since) in cases {
            let f = shape(row(status), pending.clone(), *now);
            assert_eq!((f.state, f.since), (*state, *since), "{status} {pending:?}");
            assert_eq!(f.wake.as_deref(), Some("tmux"));
        }
    }
}
