//! The `tmux` wake target: type a one-line notice into the agent's pane
//! (`send-keys -l`, then Enter), only if the pane still runs the agent.
//! tmux missing, the pane gone or running something else are permanent:
//! the delivery is dead with a message saying which.

use std::time::Duration;

use tokio::process::Command;

use super::{Outcome, Wake};

/// How long one tmux call may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Deliver `wake` to `pane`, checking it runs `agent` first (if given).
pub(crate) async fn run(pane: &str, agent: Option<&str>, wake: &Wake<'_>) -> Outcome {
    let current = match tmux(&["display", "-p", "-t", pane, "#{pane_current_command}"]).await {
        Ok(out) => out.trim().to_string(),
        Err(error) => return Outcome::Dead { error },
    };
    if let Some(agent) = agent.filter(|a| !a.is_empty())
        && current != agent
    {
        return Outcome::Dead {
            error: format!(
                "tmux pane {pane} now runs `{current}`, not `{agent}`: not typing into it"
            ),
        };
    }
    if let Err(error) = tmux(&["send-keys", "-t", pane, "-l", &notice(wake)]).await {
        return Outcome::Retry { error, after: None };
    }
    match tmux(&["send-keys", "-t", pane, "Enter"]).await {
        Ok(_) => Outcome::Delivered,
        Err(error) => Outcome::Retry { error, after: None },
    }
}

/// The line typed into the pane: short, no control characters.
pub(crate) fn notice(wake: &Wake<'_>) -> String {
    let ev = wake.event;
    let short = crate::store::short_id(&ev.entity_id);
    let text = format!(
        "[handoff] {} on {} {short} ({}). Run: handoff session resume {}",
        ev.kind, ev.entity_kind, wake.event_id, ev.session
    );
    text.chars().filter(|c| !c.is_control()).collect()
}

async fn tmux(args: &[&str]) -> Result<String, String> {
    let run = Command::new("tmux").args(args).kill_on_drop(true).output();
    let out = match tokio::time::timeout(TIMEOUT, run).await {
        Err(_) => return Err(format!("tmux {} timed out", args[0])),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("tmux is not installed (not found on PATH)".into());
        }
        Ok(Err(e)) => return Err(format!("cannot run tmux: {e}")),
        Ok(Ok(o)) => o,
    };
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(format!(
            "tmux pane {} is gone or unreachable: {why}",
            args.get(3).unwrap_or(&"?")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
