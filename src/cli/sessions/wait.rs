//! `handoff wait --session S`: block until something arrives for S, print
//! it, mark it picked up, and exit with the chosen code.
//!
//! Built for Claude Code's background `asyncRewake` Stop hook (exit 2 wakes
//! an idle session). It needs no daemon: it polls the store, re-claiming only
//! when the newest event about S moved (one indexed `MAX(seq)` read per
//! tick). Waking without polling when the daemon is up comes with the HTTP
//! API (a long-poll on the daemon's `session:<id>` waiter).

use std::time::Duration;

use crate::cli::{Ctx, exit, fail};
use crate::clock::parse_duration_ms;

use super::render;

/// How often the store is checked for new events about the session.
const POLL: Duration = Duration::from_millis(200);

/// `handoff wait`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session to wait for.
    #[arg(long, env = "HANDOFF_SESSION")]
    session: String,
    /// Give up after this long (`30s`, `30m`, `2h`; exit 5, nothing printed)
    /// [default: wait forever].
    #[arg(long, value_parser = parse_timeout)]
    timeout: Option<i64>,
    /// Exit with this code when something arrived (Claude Code's
    /// asyncRewake hook wakes the model on 2).
    #[arg(long, default_value_t = 0)]
    exit_code: u8,
    /// Who picks it up, recorded in the event log.
    #[arg(long, default_value = "handoff wait")]
    by: String,
}

fn parse_timeout(s: &str) -> Result<i64, String> {
    parse_duration_ms(s).and_then(|ms| {
        if ms < 0 {
            Err("a timeout cannot be negative".into())
        } else {
            Ok(ms)
        }
    })
}

pub(crate) async fn run(a: Args, ctx: &Ctx) -> anyhow::Result<u8> {
    let store = ctx.store().await?;
    // A session that never registered can still be waited for: questions
    // and wakes carry its id either way.
    let id = super::resolve(&store, &a.session)
        .await?
        .unwrap_or_else(|| a.session.trim().to_string());
    crate::store::sessions::check_id(&id).map_err(|e| fail(exit::USAGE, e.to_string()))?;
    let deadline = a
        .timeout
        .map(|ms| tokio::time::Instant::now() + Duration::from_millis(ms as u64));
    let mut seen_mark = None;
    loop {
        // Read the change mark *before* claiming: an event committed during
        // the claim moves the mark, so the next tick claims again.
        let mark = store.session_event_mark(&id).await?;
        if seen_mark != Some(mark) {
            seen_mark = Some(mark);
            let arrivals = store.claim_arrivals(&id, &a.by).await?;
            if !arrivals.is_empty() {
                let out = serde_json::json!({"session": id, "arrivals": arrivals});
                ctx.print(&out, || render::arrivals(&id, &arrivals));
                return Ok(a.exit_code);
            }
        }
        if let Some(d) = deadline {
            let now = tokio::time::Instant::now();
            if now >= d {
                return Err(fail(
                    exit::TIMEOUT,
                    format!("nothing arrived for session {id} before the timeout"),
                ));
            }
            tokio::time::sleep(POLL.min(d - now)).await;
        } else {
            tokio::time::sleep(POLL).await;
        }
    }
}
