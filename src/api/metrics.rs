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

use axum::Extension;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::auth::Caller;
use super::doc::Exposition;
use super::error::ApiResult;
use crate::shared::Shared;

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
pub(crate) async fn metrics(
    State(s): State<Shared>,
    Extension(c): Extension<Caller>,
) -> ApiResult<Exposition> {
    let counts = s.store.counts(c.project.as_deref()).await?;
    let mut out = String::new();
    // The label value escaped as the exposition format wants.
    let label = c
        .project
        .as_deref()
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
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "# HELP handoff_questions_open Open questions.\n# TYPE handoff_questions_open gauge\nhandoff_questions_open{open_labels} {}",
        counts.open_questions
    );
    let _ = writeln!(
        out,
        "# HELP handoff_actions Actions by effective status.\n# TYPE handoff_actions gauge"
    );
    for (st, n) in &counts.actions {
        let _ = writeln!(
            out,
            "handoff_actions{{{label}status=\"{}\"}} {n}",
            st.as_str()
        );
    }
    if c.project.is_some() {
        return Ok(Exposition(out));
    }
    let last = s.store.last_event_seq().await?;
    let _ = writeln!(
        out,
        "# HELP handoff_events_total Events appended to the log (the last seq).\n# TYPE handoff_events_total counter\nhandoff_events_total {last}"
    );
    let _ = writeln!(
        out,
        "# HELP handoff_waiters Entities with in-process waiters (long polls, streams).\n# TYPE handoff_waiters gauge\nhandoff_waiters {}",
        s.waiters.len()
    );
    let _ = writeln!(
        out,
        "# HELP handoff_http_responses_total HTTP responses served, by status class.\n# TYPE handoff_http_responses_total counter"
    );
    for (i, c) in RESPONSES.iter().enumerate() {
        let _ = writeln!(
            out,
            "handoff_http_responses_total{{class=\"{}xx\"}} {}",
            i + 1,
            c.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(
        out,
        "# HELP handoff_events_skipped_total Stored events that could not be read, skipped by each follower.\n# TYPE handoff_events_skipped_total counter"
    );
    for (follower, n) in crate::follow::skipped() {
        let _ = writeln!(
            out,
            "handoff_events_skipped_total{{follower=\"{follower}\"}} {n}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP handoff_telegram_updates_unparsed_total Telegram updates the bot could not parse, logged and skipped.\n# TYPE handoff_telegram_updates_unparsed_total counter\nhandoff_telegram_updates_unparsed_total {}",
        crate::chat::unparsed_updates()
    );
    let _ = writeln!(
        out,
        "# HELP handoff_chat_permanent_errors_total Chat sends and edits settled by a permanent Bot API error (message deleted, too old to edit, refused).\n# TYPE handoff_chat_permanent_errors_total counter\nhandoff_chat_permanent_errors_total {}",
        crate::chat::permanent_errors()
    );
    let (open_conns, refused) = crate::api::listener::connection_counts();
    let _ = writeln!(
        out,
        "# HELP handoff_http_connections Open HTTP connections.\n# TYPE handoff_http_connections gauge\nhandoff_http_connections {open_conns}\n# HELP handoff_http_connections_refused_total Connections refused with 503 because [http] max_connections were open.\n# TYPE handoff_http_connections_refused_total counter\nhandoff_http_connections_refused_total {refused}"
    );
    Ok(Exposition(out))
}
