//! Human-readable text for sessions, ledger rows, `resume` and `wait`.
//! Written for an agent reading it on wake-up: what arrived, and what to do.

use std::fmt::Write as _;

use serde_json::Value;

use crate::clock::format_rfc3339;
use crate::store::boards::PendingRow;
use crate::store::questions::{Question, ReplyKind};
use crate::store::sessions::{Arrival, LedgerEntry, Resume, Session, target_kind};
use crate::store::{Event, short_id};

/// Longest JSON shown inline before it is cut.
const MAX_INLINE: usize = 2000;

fn inline(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= MAX_INLINE {
        return s;
    }
    let mut end = MAX_INLINE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes; --json shows all)", &s[..end], s.len())
}

/// A session in full.
pub(crate) fn session(s: &Session) -> String {
    let mut out = format!(
        "session {}\n  agent {}  project {}  status {}  revision {}\n  cwd {}\n",
        s.session_id,
        or_dash(&s.agent),
        or_dash(&s.project),
        s.status,
        s.revision,
        or_dash(&s.cwd)
    );
    match &s.wake_target {
        Some(t) => {
            let _ = writeln!(out, "  wake {}", target_kind(t));
        }
        None => out.push_str("  wake: none (use `handoff wait`)\n"),
    }
    let _ = writeln!(
        out,
        "  updated {}{}",
        format_rfc3339(s.updated_at),
        s.ended_at
            .map(|t| format!("  ended {}", format_rfc3339(t)))
            .unwrap_or_default()
    );
    out
}

/// A session on one line.
pub(crate) fn session_line(s: &Session) -> String {
    format!(
        "{:<36} {:<7} {:<10} {:<12} rev {:<4} {}\n",
        s.session_id,
        s.status,
        or_dash(&s.agent),
        or_dash(&s.project),
        s.revision,
        s.wake_target.as_ref().map_or("-", target_kind)
    )
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// A ledger row on one line.
pub(crate) fn ledger_line(e: &LedgerEntry) -> String {
    let mut s = format!(
        "#{} {} {} {} {}{}",
        e.seq,
        format_rfc3339(e.at),
        e.event_id,
        e.tool,
        e.status,
        if e.replay_safe { " (replay-safe)" } else { "" }
    );
    match &e.result {
        Some(r) => {
            let _ = write!(s, " → {}", inline(r));
        }
        None => {
            let _ = write!(s, " {}", inline(&e.payload));
        }
    }
    s
}

/// A reply as the agent reads it; `again` marks one delivered before (a
/// `resume` shows it until it is resolved, while `wait` hands over only
/// replies on their first delivery, already marked seen by the pickup).
fn reply_text(q: &Question, again: bool) -> String {
    let Some(r) = &q.reply else {
        return String::new();
    };
    let what = match r.kind {
        ReplyKind::Answer => "answer",
        ReplyKind::Clarify => {
            "clarify (the earlier answer is corrected or the question needs rewording: re-read it)"
        }
        ReplyKind::Decline => "declined",
    };
    let mut s = format!(
        "{what} on question {} \"{}\" by {} via {}{}:\n  {}\n",
        q.short_id,
        q.title,
        if r.by.is_empty() { "a person" } else { &r.by },
        r.source,
        if again {
            " (delivered before; still open until you resolve it)"
        } else {
            ""
        },
        if r.text.is_empty() {
            "(no text)"
        } else {
            &r.text
        }
    );
    if let Some(c) = &r.context {
        let _ = writeln!(s, "  context: {c}");
    }
    s
}

fn row_text(p: &PendingRow) -> String {
    let r = &p.row;
    let mut s = format!(
        "row \"{}\" on board \"{}\" (revision {}, status {}){}:\n",
        r.label,
        p.board_title,
        r.revision,
        r.status.as_str(),
        if p.new {
            ""
        } else {
            " (delivered before; still open until you write the row)"
        }
    );
    if let Some(a) = &r.response.annotation {
        let _ = writeln!(
            s,
            "  {} by {}: {a}",
            r.response
                .annotation_kind
                .map_or("annotation", |k| k.as_str()),
            r.response.annotated_by.as_deref().unwrap_or("-")
        );
    }
    if r.response.handled_at.is_some() {
        let _ = writeln!(
            s,
            "  marked handled by {} (store an outcome to unblock it)",
            r.response.handled_by.as_deref().unwrap_or("-")
        );
    }
    s
}

fn event_text(e: &Event) -> String {
    if e.kind == "session.wake" {
        let src = e
            .payload
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or("");
        let id = e
            .payload
            .get("delivery_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        let body = e.payload.get("body").cloned().unwrap_or(Value::Null);
        return format!("wake from {src} (delivery {id}):\n  {}\n", inline(&body));
    }
    let what = e.kind.strip_prefix("action.").unwrap_or(&e.kind);
    let field = |k: &str| e.payload.get(k).and_then(Value::as_str).unwrap_or("");
    let mut s = format!(
        "action {} ({}) {what} by {}: {}\n",
        short_id(&e.entity_id),
        field("kind"),
        or_dash(&e.actor),
        field("summary")
    );
    for k in ["reason", "error"] {
        if let Some(v) = e.payload.get(k).and_then(Value::as_str) {
            let _ = writeln!(s, "  {k}: {v}");
        }
    }
    if let Some(r) = e.payload.get("result").filter(|v| !v.is_null()) {
        let _ = writeln!(s, "  result: {}", inline(r));
    }
    s
}

/// What `wait` picked up.
pub(crate) fn arrivals(session: &str, arrivals: &[Arrival]) -> String {
    let mut out = format!("handoff: {} new for session {session}\n", arrivals.len());
    for a in arrivals {
        out.push_str(&match a {
            Arrival::Reply { question } => reply_text(question, false),
            Arrival::Row { row } => row_text(row),
            Arrival::Decision { event } | Arrival::Wake { event } => event_text(event),
        });
    }
    let _ = write!(
        out,
        "(picked up; `handoff session resume --session {session}` shows everything still open)"
    );
    out
}

/// The `resume` report.
pub(crate) fn resume(r: &Resume) -> String {
    let mut out = String::new();
    match &r.session {
        Some(s) => out.push_str(&session(s)),
        None => {
            let _ = writeln!(out, "session {} (not registered)", r.session_id);
        }
    }
    match &r.state {
        Some(st) => {
            let _ = writeln!(
                out,
                "checkpoint (revision {}): {}",
                r.revision.unwrap_or(0),
                inline(st)
            );
        }
        None => out.push_str("no checkpoint\n"),
    }
    if !r.interrupted.is_empty() {
        out.push_str("interrupted calls (begun, never finished):\n");
        for i in &r.interrupted {
            let _ = writeln!(
                out,
                "  {} — {}",
                ledger_line(&i.entry),
                if i.replay {
                    "replay-safe: run it again"
                } else {
                    "UNKNOWN: it may or may not have taken effect; check before retrying"
                }
            );
        }
    }
    for q in &r.answers {
        out.push_str(&reply_text(
            q,
            q.reply.as_ref().is_some_and(|r| r.seen_at.is_some()),
        ));
    }
    for p in &r.rows {
        out.push_str(&row_text(p));
    }
    for e in r.decisions.iter().chain(&r.wakes) {
        out.push_str(&event_text(e));
    }
    if !r.ledger_tail.is_empty() {
        out.push_str("ledger (newest last):\n");
        for e in &r.ledger_tail {
            let _ = writeln!(out, "  {}", ledger_line(e));
        }
    }
    if r.is_quiet() {
        out.push_str("nothing waiting\n");
    }
    out
}
