//! Human-readable text for `handoff board …` (the `--json` output is the
//! serialized store types themselves).

use crate::clock::format_rfc3339;
use crate::store::boards::{Board, BoardFull, PendingRow, Row, RowOwner};
use crate::store::short_id;

pub(super) fn progress_text(b: &Board) -> String {
    let p = &b.progress;
    let pct = p
        .percent
        .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}%"));
    format!(
        "{pct} ({}/{} counted, {} rows, {} blocked)",
        p.score, p.counted, p.rows, p.blocked
    )
}

pub(super) fn board_line(b: &Board) -> String {
    format!(
        "{}  {} / {}  version {}  {}{}\n",
        short_id(&b.id),
        b.project,
        b.title,
        b.board_version,
        progress_text(b),
        match (b.archived_at, b.auto_archived) {
            (Some(_), true) => "  [archived: complete]",
            (Some(_), false) => "  [archived]",
            _ => "",
        }
    )
}

pub(super) fn row_text(r: &Row) -> String {
    let mut s = format!(
        "  [{:<7}] {}  rev {}  step {}",
        r.status.as_str(),
        r.label,
        r.revision,
        r.action_version
    );
    if !r.note.is_empty() {
        s += &format!("  — {}", r.note);
    }
    s.push('\n');
    if !r.next_step.is_empty() {
        s += &format!("      next: {}", r.next_step);
        if r.owner != RowOwner::None {
            s += &format!(" ({})", r.owner.as_str());
        }
        s.push('\n');
    }
    for o in &r.options {
        s += &format!(
            "      option: {}{}\n",
            o.label,
            if o.recommended { " (recommended)" } else { "" }
        );
    }
    if let Some(a) = &r.response.annotation {
        s += &format!(
            "      {} via {} by {}{}: {a}\n",
            r.response.annotation_kind.map_or("answer", |k| k.as_str()),
            r.response.annotation_source.map_or("inbox", |k| k.as_str()),
            r.response.annotated_by.as_deref().unwrap_or("?"),
            if r.response.annotation_seen_at.is_some() {
                ", delivered"
            } else {
                ", not yet delivered"
            }
        );
    }
    if let Some(at) = r.response.handled_at {
        s += &format!(
            "      handled by {} at {}{}\n",
            r.response.handled_by.as_deref().unwrap_or("?"),
            format_rfc3339(at),
            if r.handled_seen_at.is_some() {
                ", delivered"
            } else {
                ", not yet delivered"
            }
        );
    }
    if !r.outcome.is_empty() {
        s += &format!("      outcome: {}\n", r.outcome);
    }
    s
}

pub(super) fn full_text(f: &BoardFull) -> String {
    let mut s = board_line(&f.board);
    for r in &f.rows {
        s += &row_text(r);
    }
    s
}

pub(super) fn pending_text(rows: &[PendingRow]) -> String {
    if rows.is_empty() {
        return "nothing waiting\n".into();
    }
    rows.iter()
        .map(|p| {
            format!(
                "{} / {} (board {}, version {}){}\n{}",
                p.project,
                p.board_title,
                short_id(&p.board_id),
                p.board_version,
                if p.new { "" } else { "  [again]" },
                row_text(&p.row)
            )
        })
        .collect()
}
