//! `handoff hook claude` for AskUserQuestion and for the later events of a
//! session (PostToolUse, Stop, UserPromptSubmit, …): the CLI side of
//! `ops::claude::ask` and `ops::claude::settle`. Reads nothing; prints the
//! answer (or nothing) on stdout.

use std::time::Duration;

use super::{Signals, exit, ops};
use crate::cli::Ctx;
use crate::ops::claude::ask::{Asked, answer_output};
use crate::ops::claude::settle::Later;
use crate::ops::claude::{Decision, HookEvent, Kind};

/// Answer an AskUserQuestion call with the person's answers from chat or
/// the Inbox. What cannot be shown (a daemon at `HANDOFF_URL`, an input of
/// another shape) exits 1 without an answer: Claude Code asks at the
/// terminal. Stopped by a signal, the open card is closed as answered there.
pub(super) async fn ask(
    ctx: &Ctx,
    ev: &HookEvent,
    kind: Kind,
    project: &str,
    timeout: Duration,
) -> anyhow::Result<u8> {
    let mut signals = Signals::install();
    let fallback = |why: String| {
        eprintln!("handoff hook claude: {why}; Claude Code asks at the terminal instead");
        Ok(exit::INTERNAL)
    };
    let ops = match ops(ctx).await {
        Ok(o) => o,
        Err(e) => return fallback(format!("{e:#}")),
    };
    if ops.is_remote() {
        return fallback(
            "AskUserQuestion is answered through handoff only on the local database, not through HANDOFF_URL".into(),
        );
    }
    eprintln!(
        "handoff: Claude Code's question waits in chat and the Inbox for up to {}s",
        timeout.as_secs()
    );
    let asked = tokio::select! {
        r = ops.claude_ask(ev, project, timeout) => r,
        _ = signals.recv() => {
            // Nobody waits for these answers any more: close the open card.
            if let Err(e) = ops.claude_ask_abandon(&ev.session_id).await {
                eprintln!("handoff: could not close the question as answered at the terminal: {e}");
            }
            return Ok(exit::INTERNAL);
        }
    };
    let out = match asked {
        Ok(Asked::Answered { input, by }) => answer_output(kind, &input, &by),
        Ok(Asked::Declined { by }) => Decision::Deny {
            reason: format!(
                "{by} declined to answer in handoff; go on without this answer or ask in your reply"
            ),
        }
        .to_output(kind),
        Ok(Asked::TimedOut) => Decision::fail_closed(format!(
            "nobody answered within {}s; ask again, or answer at the terminal",
            timeout.as_secs()
        ))
        .to_output(kind),
        // Closed elsewhere (the terminal answered first): nothing to say.
        Ok(Asked::Closed) => return Ok(exit::OK),
        Err(e) => return fallback(e.to_string()),
    };
    crate::cli::out(&out.to_string());
    Ok(exit::OK)
}

/// A later event of a session: settle what it shows was answered at the
/// terminal. Prints nothing and always exits 0 (it decides nothing).
pub(super) async fn later(ctx: &Ctx, ev: &HookEvent, what: Later) -> anyhow::Result<u8> {
    let ops = match ops(ctx).await {
        Ok(o) => o,
        Err(e) => {
            eprintln!("handoff hook claude: {e:#}; pending prompts were not settled");
            return Ok(exit::OK);
        }
    };
    if ops.is_remote() {
        eprintln!(
            "handoff hook claude: {} is not acted on through HANDOFF_URL; pending prompts expire at their timeout",
            ev.hook_event_name
        );
        return Ok(exit::OK);
    }
    match ops.claude_settle(ev, what).await {
        Ok((0, 0)) => {}
        Ok((a, q)) => eprintln!(
            "handoff: {} and {} of session {} settled as answered at the terminal",
            crate::store::plural(a, "prompt"),
            crate::store::plural(q, "question"),
            ev.session_id
        ),
        Err(e) => eprintln!("handoff hook claude: pending prompts were not settled: {e}"),
    }
    Ok(exit::OK)
}
