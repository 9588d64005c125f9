//! Claude Code's AskUserQuestion answered through handoff.
//!
//! The tool's input is `questions[]`, each with `question`, `header`,
//! `options[{label, description}]` and `multiSelect`. Each question becomes
//! a question card (a single choice as buttons, a multiple choice as
//! toggles with Done, both with "Other…"), asked one after another: the
//! next card goes out when the previous one is answered. The answers go
//! back the way Claude Code's documentation gives for answering the tool
//! from outside its own dialog: allow the call with `updatedInput` = the
//! original input plus `answers`, an object from each question's text to
//! the chosen label (several labels joined with ", "; an answer in words
//! as written). Hooks reference, PreToolUse/PermissionRequest decision
//! control (`updatedInput`), and the Agent SDK's "Handle clarifying
//! questions" (code.claude.com/docs/en/agent-sdk/user-input), as of 2026-11.
//!
//! Only on the local store: a card's toggles live in the question row,
//! which the daemon's HTTP API does not draw from. Prints nothing.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::{AGENT, HookEvent, TERMINAL};
use crate::ops::{Awaited, Error, Ops, Result};
use crate::store::questions::{Choice, ListFilter, NewQuestion, QuestionOption, ReplyKind, Status};

/// The tool's name in hook events.
pub const TOOL: &str = "AskUserQuestion";

/// The key prefix of the questions a hook asks: `claude:ask:<session>:…`.
const KEY_PREFIX: &str = "claude:ask:";

/// The most characters of a question's text the card's title holds.
const TITLE: usize = 120;

/// The tool's input, as documented (fields added later are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct AskInput {
    /// One to four questions.
    pub questions: Vec<AskQuestion>,
}

/// One question of the call.
#[derive(Debug, Clone, Deserialize)]
pub struct AskQuestion {
    /// The full question; also the key of its answer.
    pub question: String,
    /// A short tag (≤ 12 characters).
    #[serde(default)]
    pub header: String,
    /// Two to four choices.
    pub options: Vec<AskOption>,
    /// Whether several options may be chosen.
    #[serde(default, rename = "multiSelect")]
    pub multi_select: bool,
}

/// One choice.
#[derive(Debug, Clone, Deserialize)]
pub struct AskOption {
    /// What the user picks (and what the answer says).
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: String,
}

/// How the questions ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// Every question answered: the tool input to run with, and who answered.
    Answered {
        /// The original input plus `answers`.
        input: Value,
        /// Who gave the answers (the last one's author).
        by: String,
    },
    /// A person declined to answer.
    Declined {
        /// Who declined.
        by: String,
    },
    /// Nobody answered within the time; the open card was closed.
    TimedOut,
    /// A card was closed elsewhere (the terminal answered first).
    Closed,
}

/// `s` on one line, cut to `n` characters with `…`.
fn line(s: &str, n: usize) -> String {
    let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= n {
        one
    } else {
        let mut t: String = one.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// A stable short name for a call that has no tool_use_id: FNV-1a of its input.
fn digest(v: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The question card for question `i` of `n` of the call.
fn card(
    ev: &HookEvent,
    project: &str,
    call: &str,
    i: usize,
    n: usize,
    q: &AskQuestion,
) -> NewQuestion {
    let mut context = String::new();
    if n > 1 {
        context.push_str(&format!("Question {} of {n}.\n", i + 1));
    }
    if q.question.chars().count() > TITLE || q.question.contains('\n') {
        context.push_str(&format!("{}\n", q.question.trim()));
    }
    for o in &q.options {
        if !o.description.trim().is_empty() {
            context.push_str(&format!(
                "• {} — {}\n",
                o.label.trim(),
                o.description.trim()
            ));
        }
    }
    NewQuestion {
        project: project.to_string(),
        agent: AGENT.to_string(),
        // Why no session: the hook hands the answer over itself; with the
        // session, the answer would also wake the session's `handoff wait`
        // (the Stop hook) and show in its `pending`, a second delivery.
        // The key names the session, for closing its cards.
        session: String::new(),
        key: Some(format!("{KEY_PREFIX}{}:{call}:{i}", ev.session_id)),
        title: line(&q.question, TITLE),
        detail: line(&q.header, 200),
        context: context.trim_end().to_string(),
        options: q
            .options
            .iter()
            .map(|o| QuestionOption {
                label: o.label.trim().to_string(),
                recommended: o.label.trim_end().ends_with("(Recommended)"),
            })
            .collect(),
    }
}

impl Ops {
    /// Ask the questions of an AskUserQuestion call `ev` in `project`, one
    /// card after another, within `wait` in all.
    pub async fn claude_ask(&self, ev: &HookEvent, project: &str, wait: Duration) -> Result<Asked> {
        let Some(l) = self.host().await? else {
            return Err(Error::invalid(
                "AskUserQuestion is answered through handoff only on the local database, not through HANDOFF_URL",
            ));
        };
        let input: AskInput = serde_json::from_value(ev.tool_input.clone()).map_err(|e| {
            Error::invalid(format!(
                "the AskUserQuestion input is not in the documented shape: {e}"
            ))
        })?;
        if input.questions.is_empty() {
            return Err(Error::invalid("the AskUserQuestion call asks no question"));
        }
        let call = ev
            .tool_use_id
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| digest(&ev.tool_input));
        let deadline = Instant::now() + wait;
        let mut answers = Map::new();
        let mut by = String::new();
        let n = input.questions.len();
        for (i, q) in input.questions.iter().enumerate() {
            let new = card(ev, project, &call, i, n, q);
            let choice = if q.multi_select {
                Choice::Many
            } else {
                Choice::One
            };
            let asked = l.store.flag_card(&new, choice).await?.question;
            let left = deadline.saturating_duration_since(Instant::now());
            let answered = match self.await_reply(&asked, AGENT, left).await? {
                Awaited::Reply(q) => q,
                Awaited::Closed(_) => return Ok(Asked::Closed),
                Awaited::TimedOut(_) => {
                    self.close_card(&asked.id, "nobody answered in time").await;
                    return Ok(Asked::TimedOut);
                }
            };
            // An awaited reply always carries it; be plain if not.
            let Some(reply) = answered.reply.clone() else {
                return Err(Error::invalid("the answered question carries no reply"));
            };
            if reply.kind == ReplyKind::Decline {
                self.close_card(&asked.id, "declined").await;
                return Ok(Asked::Declined { by: reply.by });
            }
            self.close_card(&asked.id, &format!("answered: {}", reply.text))
                .await;
            answers.insert(q.question.clone(), Value::String(reply.text));
            by = reply.by;
        }
        let mut updated = match &ev.tool_input {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        updated.insert("answers".into(), Value::Object(answers));
        Ok(Asked::Answered {
            input: Value::Object(updated),
            by,
        })
    }

    /// Close the open cards the hooks of `session` asked, as answered at
    /// the terminal (the hook was stopped, or a later event of the session
    /// says the terminal went on). How many it closed.
    pub async fn claude_ask_abandon(&self, session: &str) -> Result<usize> {
        let Some(l) = self.host().await? else {
            return Ok(0);
        };
        let prefix = format!("{KEY_PREFIX}{session}:");
        let open = l
            .store
            .list_questions(&ListFilter {
                status: Some(Status::Open),
                ..ListFilter::default()
            })
            .await?;
        let mut n = 0;
        for q in open {
            if q.key.as_deref().is_some_and(|k| k.starts_with(&prefix))
                && l.store
                    .resolve_question(&q.id, "answered at the terminal", TERMINAL)
                    .await?
                    .is_ok()
            {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Resolve a card the hook is done with, so its buttons go; a card
    /// someone else closed first stays as they left it.
    async fn close_card(&self, id: &str, outcome: &str) {
        let outcome = line(outcome, 400);
        if let Err(e) = self.resolve_question(id, &outcome, AGENT).await {
            tracing::warn!(error = %e, question_id = %id, "cannot close a question card");
        }
    }
}

/// The hook's stdout for answered questions: allow the call with
/// `updatedInput` (the input plus `answers`), in the event's format.
pub fn answer_output(kind: super::Kind, input: &Value, by: &str) -> Value {
    match kind {
        super::Kind::PermissionRequest => serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedInput": input},
            }
        }),
        super::Kind::PreToolUse => serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": format!("answered in handoff by {by}"),
                "updatedInput": input,
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_becomes_cards_keyed_by_session_call_and_position() {
        let ev: HookEvent = serde_json::from_value(json!({
            "hook_event_name": "PreToolUse", "session_id": "s-1", "cwd": "/p",
            "tool_name": "AskUserQuestion", "tool_use_id": "toolu_1",
            "tool_input": {"questions": [{
                "question": "Which database should the service use?", "header": "Database",
                "multiSelect": false,
                "options": [{"label": "Postgres (Recommended)", "description": "Relational"},
                            {"label": "SQLite", "description": "One file"}]}]}
        }))
        .unwrap();
        let input: AskInput = serde_json::from_value(ev.tool_input.clone()).unwrap();
        let c = card(&ev, "shop", "toolu_1", 0, 2, &input.questions[0]);
        assert_eq!(c.key.as_deref(), Some("claude:ask:s-1:toolu_1:0"));
        assert_eq!(c.session, "", "the hook delivers the answer, not a wake-up");
        assert_eq!(c.title, "Which database should the service use?");
        assert_eq!(c.detail, "Database");
        assert!(c.options[0].recommended && !c.options[1].recommended);
        assert_eq!(
            c.context,
            "Question 1 of 2.\n• Postgres (Recommended) — Relational\n• SQLite — One file"
        );
        let long = "why ".repeat(60);
        assert_eq!(line(&long, TITLE).chars().count(), TITLE);
        assert_eq!(digest(&json!({"a": 1})), digest(&json!({"a": 1})));
        assert_ne!(digest(&json!({"a": 1})), digest(&json!({"a": 2})));
    }
}
