//! `GET /metrics` in the Prometheus text format, and the request counter
//! middleware that feeds it.
//!
//! Gauges are read from the store on each scrape without scanning items
//! (`Store::counts`: trigger-kept action counts, the open-question index,
//! the log's last `seq`) plus the live waiter count; request counters are
//! process-wide atomics by status class. A project-scoped token sees only
//! its project's gauges. Nothing here writes.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use super::doc::Exposition;
use super::error::ApiResult;
use super::input::Ctx;
use crate::store::counts::Counts;

/// Responses served, by status class (1xx … 5xx).
static RESPONSES: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

/// Middleware: count every response by status class.
pub(crate) async fn count(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let class = (resp.status().as_u16() / 100).clamp(1, 5) as usize - 1;
    // Relaxed: independent counters, read only for reporting.
    RESPONSES[class].fetch_add(1, Ordering::Relaxed);
    resp
}

/// `GET /metrics`. A project-scoped token gets only its project's counts
/// (labelled with the project): the process-wide counters would tell it
/// about other projects' activity.
pub(crate) async fn metrics(Ctx { s, c }: Ctx) -> ApiResult<Exposition> {
    let counts = c.local(&s).counts().await?;
    let mut out = String::new();
    item_gauges(&mut out, &counts, c.project.as_deref());
    if c.project.is_none() {
        let last = s.ops.last_event_seq().await?;
        daemon_counters(&mut out, last, s.waiters.len());
    }
    Ok(Exposition(out))
}

/// The `# HELP` and `# TYPE` lines of metric `name`.
fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A metric of one sample without labels.
fn single(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    head(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

/// Open questions and actions by status, of `project` (labelled with it)
/// or of all projects.
fn item_gauges(out: &mut String, counts: &Counts, project: Option<&str>) {
    // The label value escaped as the exposition format wants.
    let label = project
        .map(|p| {
            let v = p
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("project=\"{v}\",")
        })
        .unwrap_or_default();
    let open_labels = match label.trim_end_matches(',') {
        "" => String::new(),
        l => format!("{{{l}}}"),
    };
    let open = "handoff_questions_open";
    head(out, open, "gauge", "Open questions.");
    let _ = writeln!(out, "{open}{open_labels} {}", counts.open_questions);
    head(
        out,
        "handoff_actions",
        "gauge",
        "Actions by effective status.",
    );
    for (st, n) in &counts.actions {
        let _ = writeln!(
            out,
            "handoff_actions{{{label}status=\"{}\"}} {n}",
            st.as_str()
        );
    }
}

/// The daemon's process-wide counters (only for tokens of every project).
fn daemon_counters(out: &mut String, last_seq: i64, waiters: usize) {
    single(
        out,
        "handoff_events_total",
        "counter",
        "Events appended to the log (the last seq).",
        last_seq,
    );
    single(
        out,
        "handoff_waiters",
        "gauge",
        "Entities with in-process waiters (long polls, streams).",
        waiters,
    );
    let responses = "handoff_http_responses_total";
    head(
        out,
        responses,
        "counter",
        "HTTP responses served, by status class.",
    );
    for (i, c) in RESPONSES.iter().enumerate() {
        let n = c.load(Ordering::Relaxed);
        let _ = writeln!(out, "{responses}{{class=\"{}xx\"}} {n}", i + 1);
    }
    let skipped = "handoff_events_skipped_total";
    head(
        out,
        skipped,
        "counter",
        "Stored events that could not be read, skipped by each follower.",
    );
    for (follower, n) in crate::follow::skipped() {
        let _ = writeln!(out, "{skipped}{{follower=\"{follower}\"}} {n}");
    }
    single(
        out,
        "handoff_telegram_updates_unparsed_total",
        "counter",
        "Telegram updates the bot could not parse, logged and skipped.",
        crate::chat::unparsed_updates(),
    );
    single(
        out,
        "handoff_chat_permanent_errors_total",
        "counter",
        "Chat sends and edits settled by a permanent Bot API error (message deleted, too old to edit, refused).",
        crate::chat::permanent_errors(),
    );
    let (open_conns, refused, evicted) = crate::api::listener::connection_counts();
    single(
        out,
        "handoff_http_connections",
        "gauge",
        "Open HTTP connections.",
        open_conns,
    );
    single(
        out,
        "handoff_http_connections_refused_total",
        "counter",
        "Connections refused with 503: [http] max_connections (or a client's max_unauthenticated_per_client) were open, none idle without a token.",
        refused,
    );
    single(
        out,
        "handoff_http_connections_evicted_total",
        "counter",
        "Idle connections without a token closed to make room for a new one.",
        evicted,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::actions::Status;

    #[test]
    fn a_project_scrape_labels_every_sample_with_the_project() {
        let counts = Counts {
            open_questions: 2,
            actions: vec![(Status::Pending, 1), (Status::Executed, 4)],
        };
        let mut out = String::new();
        item_gauges(&mut out, &counts, Some("a\"b"));
        assert_eq!(
            out,
            "# HELP handoff_questions_open Open questions.\n\
             # TYPE handoff_questions_open gauge\n\
             handoff_questions_open{project=\"a\\\"b\"} 2\n\
             # HELP handoff_actions Actions by effective status.\n\
             # TYPE handoff_actions gauge\n\
             handoff_actions{project=\"a\\\"b\",status=\"pending\"} 1\n\
             handoff_actions{project=\"a\\\"b\",status=\"executed\"} 4\n"
        );
        let mut all = String::new();
        item_gauges(&mut all, &counts, None);
        assert!(all.contains("\nhandoff_questions_open 2\n"), "{all}");
        assert!(
            all.contains("\nhandoff_actions{status=\"pending\"} 1\n"),
            "{all}"
        );
    }
}
