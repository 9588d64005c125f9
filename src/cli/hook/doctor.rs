//! `handoff doctor`: for each agent hook handoff installs, whether it is
//! installed, current (every entry `handoff hook install` writes today is
//! there) and, where the agent's own files show it, trusted. Reads the
//! agents' files only; writes nothing and talks to no agent or database.
//!
//! - Claude Code: `.claude/settings.json` and `.claude/settings.local.json`
//!   of the working directory, and `~/.claude/settings.json`. Claude Code
//!   runs the hooks in its settings as they are (no trust step).
//! - Codex: `$CODEX_HOME/hooks.json` (`~/.codex`), the `hooks` feature in
//!   `config.toml` beside it, and the trust Codex records there after a
//!   person reviews the hook in `/hooks`: `[hooks.state."<hooks.json
//!   path>:permission_request:<group>:<hook>"] trusted_hash =
//!   "sha256:<hex>"`, the SHA-256 of the hook's definition as canonical
//!   JSON (sorted keys, no spaces: `event_name`, `hooks` with `async`,
//!   `command`, `timeout`, `type`, and `matcher` when there is one). A hash
//!   that differs is a trust of an older definition: Codex skips the hook
//!   until it is trusted again.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::install::{Agent, CODEX_TRUST_STEP, HOOK_TIMEOUT_SECS, command, events};
use crate::cli::{Ctx, exit};

/// One settings file of one agent, as read.
#[derive(Debug, Serialize)]
struct Report {
    /// `claude` or `codex`.
    agent: &'static str,
    /// The file read.
    file: String,
    /// Whether the file exists.
    exists: bool,
    /// The events whose handoff hook is there.
    installed: Vec<String>,
    /// The events `handoff hook install` writes that are missing.
    missing: Vec<String>,
    /// Whether every entry is there (and, for Codex, hooks are turned on).
    current: bool,
    /// Whether the agent trusts the hook: `null` where it has no such step
    /// or its files do not show it.
    trusted: Option<bool>,
    /// What to do, in words.
    note: String,
}

/// The settings file parsed as JSON (`None` when missing or unreadable).
fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The hook entries under `hooks.<event>` that run `cmd`:
/// (group index, hook index, group, hook).
fn entries<'a>(
    root: &'a Value,
    event: &str,
    cmd: &str,
) -> Vec<(usize, usize, &'a Value, &'a Value)> {
    let mut out = Vec::new();
    let Some(groups) = root["hooks"][event].as_array() else {
        return out;
    };
    for (gi, g) in groups.iter().enumerate() {
        for (hi, h) in g["hooks"].as_array().into_iter().flatten().enumerate() {
            let c = h["command"].as_str().unwrap_or("").trim();
            if c == cmd || c.starts_with(&format!("{cmd} ")) {
                out.push((gi, hi, g, h));
            }
        }
    }
    out
}

/// Codex's trust hash of one hook (see the module docs).
fn codex_hash(event_snake: &str, group: &Value, hook: &Value) -> String {
    let mut handler = serde_json::Map::new();
    handler.insert(
        "async".into(),
        json!(hook["async"].as_bool().unwrap_or(false)),
    );
    handler.insert("command".into(), hook["command"].clone());
    handler.insert(
        "timeout".into(),
        json!(hook["timeout"].as_u64().unwrap_or(HOOK_TIMEOUT_SECS)),
    );
    handler.insert("type".into(), json!("command"));
    let mut identity = serde_json::Map::new();
    identity.insert("event_name".into(), json!(event_snake));
    identity.insert("hooks".into(), json!([Value::Object(handler)]));
    if let Some(m) = group.get("matcher").filter(|m| !m.is_null()) {
        identity.insert("matcher".into(), m.clone());
    }
    // serde_json's map keeps keys sorted: the canonical order.
    let canonical = Value::Object(identity).to_string();
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn claude(path: PathBuf) -> Report {
    let root = read_json(&path);
    let cmd = command(Agent::Claude);
    let (mut installed, mut missing) = (Vec::new(), Vec::new());
    for e in events(Agent::Claude) {
        let here = root
            .as_ref()
            .is_some_and(|r| !entries(r, e, cmd).is_empty());
        if here { &mut installed } else { &mut missing }.push(e.to_string());
    }
    let current = missing.is_empty();
    let note = if installed.is_empty() {
        "not installed here: `handoff hook install claude --write`".to_string()
    } else if !current {
        format!(
            "missing {}: prompts answered at the terminal stay open in chat; `handoff hook install claude --write` adds them",
            missing.join(", ")
        )
    } else {
        "installed and current (Claude Code runs it as it is)".to_string()
    };
    Report {
        agent: "claude",
        file: path.display().to_string(),
        exists: root.is_some(),
        installed,
        missing,
        current,
        trusted: None,
        note,
    }
}

fn codex(home: &Path) -> Report {
    let path = home.join("hooks.json");
    let root = read_json(&path);
    let cmd = command(Agent::Codex);
    let config = std::fs::read_to_string(home.join("config.toml"))
        .ok()
        .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok());
    let on = config
        .as_ref()
        .and_then(|d| d.get("features")?.get("hooks")?.as_bool())
        == Some(true);
    let found = root
        .as_ref()
        .map(|r| entries(r, "PermissionRequest", cmd))
        .unwrap_or_default();
    let installed: Vec<String> = if found.is_empty() {
        Vec::new()
    } else {
        vec!["PermissionRequest".into()]
    };
    let missing: Vec<String> = events(Agent::Codex)
        .iter()
        .filter(|e| !installed.iter().any(|i| i == *e))
        .map(|e| e.to_string())
        .collect();
    // The trust Codex recorded for our hook, by its key, against the hash
    // of the definition as it stands in the file.
    let abs = std::path::absolute(&path).unwrap_or(path.clone());
    let trusted = found.first().map(|(gi, hi, g, h)| {
        let key = format!("{}:permission_request:{gi}:{hi}", abs.display());
        let recorded = config.as_ref().and_then(|d| {
            d.get("hooks")?
                .get("state")?
                .get(&key)?
                .get("trusted_hash")?
                .as_str()
                .map(str::to_string)
        });
        recorded.as_deref() == Some(codex_hash("permission_request", g, h).as_str())
    });
    let current = missing.is_empty() && on;
    let note = if installed.is_empty() {
        "not installed: `handoff hook install codex --write`".to_string()
    } else if !on {
        "hooks are not turned on in config.toml (`[features] hooks = true`): `handoff hook install codex --write` adds it".to_string()
    } else if trusted != Some(true) {
        format!("installed, not trusted (or trusted before it changed). {CODEX_TRUST_STEP}")
    } else {
        "installed, current and trusted".to_string()
    };
    Report {
        agent: "codex",
        file: path.display().to_string(),
        exists: root.is_some(),
        installed,
        missing,
        current,
        trusted,
        note,
    }
}

/// `handoff doctor`.
pub(crate) fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut reports: Vec<Report> = [
        PathBuf::from(".claude/settings.json"),
        PathBuf::from(".claude/settings.local.json"),
        home.join(".claude/settings.json"),
    ]
    .into_iter()
    .map(claude)
    .collect();
    // A Claude Code file that does not exist says nothing; keep the
    // project's own one so an empty report still says what to run.
    let mut first = true;
    reports.retain(|r| {
        let keep = r.exists || first;
        first = false;
        keep
    });
    let codex_home = std::env::var_os("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".codex"));
    reports.push(codex(&codex_home));
    ctx.list("hooks", &reports, || {
        reports
            .iter()
            .map(|r| {
                let trust = match r.trusted {
                    Some(true) => ", trusted",
                    Some(false) => ", NOT trusted",
                    None => "",
                };
                format!(
                    "{:<6} {}: installed [{}]{}{trust}\n       {}",
                    r.agent,
                    r.file,
                    r.installed.join(", "),
                    if r.current {
                        ", current"
                    } else {
                        ", not current"
                    },
                    r.note
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trust_hash_is_over_canonical_json() {
        let g = json!({"hooks": [{"type": "command", "command": "handoff hook codex", "timeout": 600}]});
        let h = &g["hooks"][0];
        let want = {
            let c = r#"{"event_name":"permission_request","hooks":[{"async":false,"command":"handoff hook codex","timeout":600,"type":"command"}]}"#;
            let d = Sha256::digest(c.as_bytes());
            format!(
                "sha256:{}",
                d.iter().map(|b| format!("{b:02x}")).collect::<String>()
            )
        };
        assert_eq!(codex_hash("permission_request", &g, h), want);
    }
}
