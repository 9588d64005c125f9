//! Text output of the question commands: a question in a few lines, its
//! reply in one, and what a refused writer is told. No store access here.

use crate::clock::format_rfc3339;
use crate::store::questions::{Channel, Delivery, Question, Refusal, ReplyRecord};

/// What a human (or the agent) is told when a write is refused.
pub(super) fn human_refusal(r: &Refusal, via: Channel) -> String {
    match r {
        Refusal::UnreadAnswer { .. } if via == Channel::Chat => format!(
            "{r}. Nothing changed; wait for the agent to pick it up, or reply through the Inbox (`handoff reply`) to overwrite it"
        ),
        Refusal::Empty => {
            "the reply is empty and there is no unpicked reply to clear: write some text".into()
        }
        Refusal::NotOpen { .. } => format!("{r}; see it with `handoff show`"),
        _ => r.to_string(),
    }
}

/// Text indented by four spaces, line by line.
fn indent(s: &str) -> String {
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

/// What `pending` hands over: each question with its reply, tagged new or
/// again (delivered before).
pub(super) fn deliveries(got: &[Delivery]) -> String {
    if got.is_empty() {
        return "no replies waiting".into();
    }
    got.iter()
        .map(|d| {
            let tag = if d.new { "new" } else { "again" };
            format!("[{tag}] {}", render(&d.question))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `questions`: each question in a few lines.
pub(super) fn list(list: &[Question]) -> String {
    if list.is_empty() {
        return "no questions".into();
    }
    list.iter().map(render).collect::<Vec<_>>().join("\n")
}

/// `show`: the question, its long context and its reply history.
pub(super) fn with_history(question: &Question, replies: &[ReplyRecord]) -> String {
    let mut s = render(question);
    if !question.context.is_empty() {
        s.push_str(&format!("\n  context:\n{}", indent(&question.context)));
    }
    if !replies.is_empty() {
        s.push_str("\n  history:");
        for r in replies {
            let what = match (&r.reply, r.kind) {
                (Some(t), Some(k)) => format!("{k}: {t}"),
                _ => "cleared".into(),
            };
            s.push_str(&format!(
                "\n    #{} {} via {}{}  {what}",
                r.reply_seq,
                format_rfc3339(r.at),
                r.source,
                if r.by.is_empty() {
                    String::new()
                } else {
                    format!(" by {}", r.by)
                },
            ));
        }
    }
    s
}
