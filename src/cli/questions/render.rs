//! Text output of the question commands: a question in a few lines, its
//! reply in one, and what a refused writer is told. No store access here.

use crate::clock::format_rfc3339;
use crate::store::questions::{Question, Refusal, Source};

/// What a human (or the agent) is told when a write is refused.
pub(super) fn human_refusal(r: &Refusal, via: Source) -> String {
    match r {
        Refusal::UnreadAnswer { .. } if via == Source::Chat => format!(
            "{r}. Nothing changed; wait for the agent to pick it up, or reply through the Inbox (`handoff reply`) to overwrite it"
        ),
        Refusal::Empty => {
            "the reply is empty and there is no unpicked reply to clear: write some text".into()
        }
        Refusal::NotOpen { .. } => format!("{r}; see it with `handoff show`"),
        _ => r.to_string(),
    }
}

pub(super) fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The standing reply in one line: `answer (inbox, by alice): text`.
pub(super) fn render_reply(q: &Question) -> String {
    match &q.reply {
        None => "no reply".into(),
        Some(r) => {
            let by = if r.by.is_empty() {
                String::new()
            } else {
                format!(", by {}", r.by)
            };
            let seen = if r.seen_at.is_some() {
                ""
            } else {
                ", not picked up"
            };
            let mut s = format!("{} ({}{by}{seen}): {}", r.kind, r.source, r.text);
            if let Some(c) = &r.context {
                s.push_str(&format!("\n  reply context: {c}"));
            }
            s
        }
    }
}

/// A question in a few lines.
pub(super) fn render(q: &Question) -> String {
    let mut s = format!("{}  {}  rev {}", q.short_id, q.status, q.revision);
    if !q.project.is_empty() {
        s.push_str(&format!("  [{}]", q.project));
    }
    s.push_str(&format!("  {}", q.title));
    if !q.detail.is_empty() {
        s.push_str(&format!("\n  {}", q.detail));
    }
    if !q.options.is_empty() {
        let opts: Vec<String> = q
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| {
                format!(
                    "{}) {}{}",
                    i + 1,
                    o.label,
                    if o.recommended { " (recommended)" } else { "" }
                )
            })
            .collect();
        s.push_str(&format!("\n  options: {}", opts.join("  ")));
    }
    if q.reply.is_some() {
        s.push_str(&format!("\n  {}", render_reply(q)));
    }
    if let Some(until) = q.snoozed_until {
        s.push_str(&format!("\n  snoozed until {}", format_rfc3339(until)));
    }
    if let Some(o) = &q.outcome {
        s.push_str(&format!("\n  outcome: {o}"));
    }
    s
}
