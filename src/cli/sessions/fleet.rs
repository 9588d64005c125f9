//! `handoff sessions [--project P] [--watch]`: every session, grouped by
//! project, with what it is doing now and since when, its host, its wake
//! target and the last delivery to it, and what it waits on (by `#code`,
//! for `handoff reply` / `approve`). `--watch` redraws the view whenever
//! the event log moves (and each minute, so "how long" stays true) until
//! Ctrl-C, which ends it with exit 0.

use std::io::IsTerminal;
use std::time::Duration;

use crate::cli::{Ctx, exit};
use crate::ops::Ops;
use crate::store::sessions::{FleetSession, FleetState};

/// `handoff sessions`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only this project's sessions.
    #[arg(long)]
    project: Option<String>,
    /// Keep the view on screen, redrawn as events arrive, until Ctrl-C.
    #[arg(long)]
    watch: bool,
}

/// How often `--watch` looks at the log: one indexed read locally, an HTTP
/// round trip against a daemon.
const LOOK_LOCAL: Duration = Duration::from_millis(250);
const LOOK_REMOTE: Duration = Duration::from_secs(1);
/// Redraw at least this often, so the durations shown keep up.
const REDRAW_EVERY: Duration = Duration::from_secs(60);

pub(crate) async fn run(a: Args, ctx: &Ctx) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    if !a.watch {
        let list = ops.fleet(a.project.as_deref()).await?;
        let now = ops.now();
        ctx.list("sessions", &list, || view(&list, now));
        return Ok(exit::OK);
    }
    let every = if ctx.remote() {
        LOOK_REMOTE
    } else {
        LOOK_LOCAL
    };
    // Ctrl-C ends the watch between reads: the select drops the read in
    // flight (it writes nothing), and the exit is a normal one.
    tokio::select! {
        r = watch(&ops, ctx, a.project.as_deref(), every) => r,
        _ = tokio::signal::ctrl_c() => {
            if !ctx.json && std::io::stdout().is_terminal() {
                crate::cli::out("");
            }
            Ok(exit::OK)
        }
    }
}

/// Draw, then draw again each time the log moves past `cursor`.
async fn watch(ops: &Ops, ctx: &Ctx, project: Option<&str>, every: Duration) -> anyhow::Result<u8> {
    let tty = std::io::stdout().is_terminal();
    let mut cursor = ops.events_tail(0).await?.next_after;
    let mut drawn = tokio::time::Instant::now();
    draw(ops, ctx, project, tty, cursor).await?;
    loop {
        tokio::time::sleep(every).await;
        // A daemon restarting or a busy file skips a look, not the watch.
        let next = match ops.events_page(cursor, 1000).await {
            Ok(p) => p.next_after,
            Err(crate::ops::Error::Internal { .. } | crate::ops::Error::Busy { .. }) => cursor,
            Err(e) => return Err(e.into()),
        };
        if next != cursor || drawn.elapsed() >= REDRAW_EVERY {
            cursor = next;
            drawn = tokio::time::Instant::now();
            draw(ops, ctx, project, tty, cursor).await?;
        }
    }
}

/// One frame: the screen cleared first on a terminal; with `--json` one
/// line `{"sessions": […], "seq": N}` per frame.
async fn draw(
    ops: &Ops,
    ctx: &Ctx,
    project: Option<&str>,
    tty: bool,
    seq: i64,
) -> anyhow::Result<()> {
    let list = ops.fleet(project).await?;
    if ctx.json {
        let v = serde_json::json!({"sessions": list, "seq": seq});
        crate::cli::out(&v.to_string());
        return Ok(());
    }
    let now = ops.now();
    let body = view(&list, now);
    let stamp = crate::clock::format_rfc3339(now);
    let head = format!("handoff sessions — {stamp} (log seq {seq}; Ctrl-C to stop)");
    if tty {
        // Home, clear: the frame replaces the last one.
        crate::cli::out(&format!("\x1b[H\x1b[2J{head}\n\n{body}"));
    } else {
        crate::cli::out(&format!("{head}\n{body}\n"));
    }
    Ok(())
}

/// The view as text: a heading per project, a line per session, a line
/// per item it waits on.
pub(crate) fn view(list: &[FleetSession], now: i64) -> String {
    if list.is_empty() {
        return "no sessions".into();
    }
    let mut out = String::new();
    let mut project: Option<&str> = None;
    for s in list {
        if project != Some(s.project.as_str()) {
            project = Some(&s.project);
            let n = list.iter().filter(|x| x.project == s.project).count();
            let name = if s.project.is_empty() {
                "(no project)"
            } else {
                &s.project
            };
            out.push_str(&format!("{name} ({n})\n"));
        }
        out.push_str(&format!("  {}\n", line(s, now)));
        for i in &s.pending {
            let mark = if i.kind == "question" { "?" } else { "!" };
            out.push_str(&format!("      {mark} #{} {}\n", i.short_id, i.title));
        }
    }
    out
}

/// One session on one line: state, for how long, id, agent@host, wake.
pub(crate) fn line(s: &FleetSession, now: i64) -> String {
    let mark = match s.state {
        FleetState::WaitingQuestion | FleetState::WaitingApproval => "⏳",
        FleetState::Working => "▶",
        FleetState::Idle => "·",
        FleetState::Ended => "■",
    };
    let who = match (s.agent.as_str(), s.host.as_str()) {
        ("", "") => String::new(),
        (a, "") => format!(" · {a}"),
        ("", h) => format!(" · @{h}"),
        (a, h) => format!(" · {a}@{h}"),
    };
    let wake = match (&s.wake, &s.last_delivery) {
        (None, _) => " · no wake target".to_string(),
        (Some(k), None) => format!(" · wake {k}"),
        (Some(k), Some(d)) => format!(" · wake {k}: last {}", d.status),
    };
    format!(
        "{mark} {} {} for {}{who}{wake}",
        s.session_id,
        s.state.words(),
        crate::clock::how_long(now - s.since)
    )
}
