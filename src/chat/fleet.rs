//! `/sessions`: the sessions whose project this chat serves (the chat the
//! config routes their items to), grouped by project, each on one line
//! with what it is doing now and for how long, its agent and host, and
//! under it the `#code` of what it waits on — the fleet view, compact.

use super::Bridge;
use super::text::cut;
use crate::store::sessions::{FleetSession, FleetState};

/// At most this many sessions in one answer (the rest are counted).
const MAX_LISTED: usize = 30;

impl Bridge {
    pub(super) async fn cmd_sessions(&self, chat_id: i64, thread: Option<i32>) {
        let all = match self.calls().fleet(None).await {
            Ok(l) => l,
            Err(e) => return self.read_trouble(chat_id, thread, "the sessions", e).await,
        };
        let here: Vec<FleetSession> = all
            .into_iter()
            .filter(|s| {
                self.config
                    .route(&s.project, &s.agent, None)
                    .is_some_and(|t| t.chat_id == chat_id)
            })
            .collect();
        let text = words(&here, self.ops.now());
        self.say(chat_id, thread, &text).await;
    }
}

/// The answer's text.
fn words(here: &[FleetSession], now: i64) -> String {
    if here.is_empty() {
        return "No sessions of the projects this chat serves.".into();
    }
    let mut text = format!("🖥 Sessions ({}):", here.len());
    let mut project: Option<&str> = None;
    for s in here.iter().take(MAX_LISTED) {
        if project != Some(s.project.as_str()) {
            project = Some(&s.project);
            let name = if s.project.is_empty() {
                "(no project)"
            } else {
                &s.project
            };
            text.push_str(&format!("\n\n{name}"));
        }
        let mark = match s.state {
            FleetState::WaitingQuestion | FleetState::WaitingApproval => "⏳",
            FleetState::Working => "▶️",
            FleetState::Idle => "💤",
            FleetState::Ended => "⏹",
        };
        let host = if s.host.is_empty() {
            String::new()
        } else {
            format!("@{}", s.host)
        };
        text.push_str(&format!(
            "\n{mark} {} — {}, {} · {}{host}",
            cut(&s.session_id, 24),
            s.state.words(),
            crate::clock::how_long(now - s.since),
            s.agent,
        ));
        for i in &s.pending {
            let icon = if i.kind == "question" {
                "❓"
            } else {
                "⚠️"
            };
            text.push_str(&format!(
                "\n   {icon} #{} {}",
                i.short_id,
                cut(&i.title, 60)
            ));
        }
    }
    if here.len() > MAX_LISTED {
        text.push_str(&format!(
            "\n\n…and {} more (the Inbox's Sessions page lists them all).",
            here.len() - MAX_LISTED
        ));
    }
    text
}
