//! `handoff wait --session S`: block until something arrives for S, print
//! it, mark it picked up, and exit with the chosen code.
//!
//! Built for Claude Code's background `asyncRewake` Stop hook (exit 2 wakes
//! an idle session). Locally it needs no daemon: it polls the store,
//! re-claiming only when the newest event about S moved (one indexed
//! `MAX(seq)` read per tick). With `HANDOFF_URL` it does not poll: it holds
//! a long poll on the daemon (`GET /v1/sessions/{id}/wait`), which the
//! daemon's `session:<id>` waiter wakes the moment something arrives.

use std::time::Duration;

use crate::cli::{Ctx, exit, fail};
use crate::clock::parse_duration_ms;

use super::render;

/// `handoff wait`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session to wait for.
    #[arg(long, env = "HANDOFF_SESSION")]
    session: String,
    /// Give up after this long (`30s`, `30m`, `2h`; exit 5, no arrivals printed)
    /// [default: wait forever].
    #[arg(long, value_parser = parse_timeout)]
    timeout: Option<i64>,
    /// Exit with this code when something arrived (Claude Code's
    /// asyncRewake hook wakes the model on 2).
    #[arg(long, default_value_t = 0)]
    exit_code: u8,
    /// Who picks it up, recorded in the event log [default: handoff wait].
    #[arg(long)]
    by: Option<String>,
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
    let ops = ctx.ops().await?;
    // A session that never registered can still be waited for: questions
    // and wakes carry its id either way.
    let id = super::resolve(&ops, &a.session)
        .await?
        .unwrap_or_else(|| a.session.trim().to_string());
    crate::store::sessions::check_id(&id).map_err(|e| fail(exit::INVALID, e.to_string()))?;
    let by = ctx.actor(a.by, || "handoff wait".into());
    let wait = a.timeout.map(|ms| Duration::from_millis(ms as u64));
    let arrivals = ops.wait_arrivals(&id, &by, wait).await?;
    if arrivals.is_empty() {
        return Err(fail(
            exit::TIMEOUT,
            format!("nothing arrived for session {id} before the timeout"),
        ));
    }
    let mut out = crate::cli::list("arrivals", &arrivals, None);
    out["session_id"] = serde_json::json!(id);
    ctx.print(&out, || render::arrivals(&id, &arrivals));
    Ok(a.exit_code)
}
