//! `handoff hook install claude|codex`: print the settings entries that run
//! `handoff hook …`, or merge them into the agent's file with `--write`.
//!
//! Merging keeps every existing key and its order (JSON is read into an
//! ordered tree here, TOML through `toml_edit`, comments included), prints a
//! unified diff of the change before writing, keeps the previous file as
//! `<file>.bak`, and changes nothing when the entry is there already. A file
//! that does not parse, or whose hooks are not shaped as the agent expects,
//! is refused and left untouched. This module talks to no agent and no
//! database.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::json;

use crate::cli::{Ctx, exit, fail};

mod merge;

use merge::{diff, merge_json, merge_toml, snippet};

/// What turns hooks on in Codex's config.toml: `hooks`, the canonical
/// feature key (`codex_hooks` is its deprecated older name).
const FLAG: &str = "[features]\nhooks = true\n";

/// How long the agent lets the hook run, in seconds: above the hook's own
/// default `--timeout` (9 minutes), so handoff answers first.
pub(crate) const HOOK_TIMEOUT_SECS: u64 = 600;

/// How long the agent lets a later event's hook run (it only settles
/// prompts answered at the terminal, in well under a second).
const LATER_TIMEOUT_SECS: u64 = 30;

/// The events whose hook `install` writes, per agent, and whether the
/// group carries a tool matcher. Claude Code answers its permission
/// prompts in PermissionRequest and tells of a prompt answered at the
/// terminal only through the session's next events: PostToolUse (that
/// call ran), Stop (the turn ended) and UserPromptSubmit (the person typed
/// at the terminal). Codex answers in PermissionRequest only.
pub(crate) fn events(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::Claude => &[
            "PermissionRequest",
            "PostToolUse",
            "Stop",
            "UserPromptSubmit",
        ],
        Agent::Codex => &["PermissionRequest"],
    }
}

/// What a person does before Codex runs handoff's hook, printed by the
/// installer and `handoff doctor`.
pub(crate) const CODEX_TRUST_STEP: &str = "Codex runs a new or changed hook only once a person trusts it: start `codex`, open `/hooks`, review handoff's PermissionRequest hook and trust it (Codex keeps the trust as the hook's hash under [hooks.state] in config.toml, so a changed hook must be trusted again). Until then Codex skips it and shows its own prompt, and `codex exec` runs UNGATED: trust the hook first, or run `codex exec --dangerously-bypass-hook-trust` (which runs every configured hook unreviewed for that run). `handoff doctor` shows whether the trust is recorded.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Agent {
    /// Claude Code: PermissionRequest, PostToolUse, Stop and UserPromptSubmit hooks in `.claude/settings.json`.
    Claude,
    /// Codex CLI: a PermissionRequest hook in `hooks.json`, and hooks turned on in `config.toml`.
    Codex,
}

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// Whose hooks: claude or codex.
    agent: Agent,
    /// Merge the entries into the file (a diff is printed first; the old file is kept as FILE.bak).
    #[arg(long)]
    write: bool,
    /// The file to merge into [default: .claude/settings.json for claude; $CODEX_HOME/hooks.json, else ~/.codex/hooks.json, for codex].
    #[arg(long, value_name = "FILE")]
    path: Option<PathBuf>,
    /// Codex only: its config.toml, where hooks are turned on [default: config.toml next to the hooks file].
    #[arg(long, value_name = "FILE")]
    config_toml: Option<PathBuf>,
}

/// The command an agent's settings run.
pub(crate) fn command(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "handoff hook claude",
        Agent::Codex => "handoff hook codex",
    }
}

/// Read `path`: `Ok(None)` when it does not exist.
fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(fail(
            exit::INVALID,
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

/// Write `new` over `path` (its old text `old`): the old file kept as
/// `<path>.bak`, the new one put in place by a rename, so a crash leaves
/// one or the other whole.
fn replace(path: &Path, old: Option<&str>, new: &str) -> anyhow::Result<Option<PathBuf>> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        anyhow::anyhow!("cannot {what} {}: {e}", p.display())
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    }
    let mut backup = None;
    if let Some(old) = old {
        let bak = PathBuf::from(format!("{}.bak", path.display()));
        std::fs::write(&bak, old).map_err(|e| io("write", &bak, e))?;
        backup = Some(bak);
    }
    let tmp = PathBuf::from(format!("{}.handoff-tmp", path.display()));
    std::fs::write(&tmp, new).map_err(|e| io("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io("replace", path, e))?;
    Ok(backup)
}

/// Codex's folder: `$CODEX_HOME`, else `~/.codex`.
fn codex_home() -> PathBuf {
    if let Some(h) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    Path::new(&home).join(".codex")
}

/// One file of the install, for `--json` and the text.
#[derive(Debug, Serialize)]
struct FileReport {
    /// The file.
    path: String,
    /// Without --write: what to add to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    add: Option<String>,
    /// With --write: whether it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<bool>,
    /// With --write: the unified diff of the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    /// With --write: where the previous file is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    backup: Option<String>,
}

/// What a person does after the install before the hook runs: `None`
/// when nothing (Claude Code runs hooks from its settings as they are).
fn next_step(agent: Agent) -> Option<&'static str> {
    match agent {
        Agent::Claude => None,
        Agent::Codex => Some(CODEX_TRUST_STEP),
    }
}

pub(crate) fn run(ctx: &Ctx, args: InstallArgs) -> anyhow::Result<u8> {
    let agent = args.agent;
    if matches!(agent, Agent::Claude) && args.config_toml.is_some() {
        return Err(fail(
            exit::INVALID,
            "--config-toml is for codex only (Claude Code keeps its hooks in one settings.json: give it with --path)",
        ));
    }
    let path = args.path.unwrap_or_else(|| match agent {
        Agent::Claude => PathBuf::from(".claude/settings.json"),
        Agent::Codex => codex_home().join("hooks.json"),
    });
    let toml_path = match agent {
        Agent::Claude => None,
        Agent::Codex => Some(args.config_toml.unwrap_or_else(|| {
            path.parent()
                .map_or_else(|| PathBuf::from("config.toml"), |d| d.join("config.toml"))
        })),
    };
    let name = command(agent).rsplit(' ').next().unwrap_or_default();
    if args.write {
        write_files(ctx, agent, name, &path, toml_path)?;
    } else {
        show_snippet(ctx, agent, name, &path, toml_path.as_deref());
    }
    Ok(exit::OK)
}

/// Without --write: what to add where, and the step after it.
fn show_snippet(ctx: &Ctx, agent: Agent, name: &str, path: &Path, toml_path: Option<&Path>) {
    let mut files = vec![FileReport {
        path: path.display().to_string(),
        add: Some(snippet(agent).pretty()),
        changed: None,
        diff: None,
        backup: None,
    }];
    if let Some(t) = &toml_path {
        files.push(FileReport {
            path: t.display().to_string(),
            add: Some(FLAG.to_string()),
            changed: None,
            diff: None,
            backup: None,
        });
    }
    let next = next_step(agent);
    ctx.show("install", &json!({"agent": name, "written": false, "files": &files, "next": next}), || {
        let mut t = format!(
            "Add this to {} (or run `handoff hook install {name}` with --write to merge it; a diff is shown first):\n{}",
            files[0].path,
            files[0].add.as_deref().unwrap_or_default()
        );
        if let Some(f) = files.get(1) {
            t.push_str(&format!(
                "\nand turn hooks on in {} (Codex 0.122 and later):\n{}",
                f.path,
                f.add.as_deref().unwrap_or_default()
            ));
        }
        if let Some(n) = next {
            t.push_str(&format!("\nThen: {n}\n"));
        }
        t
    });
}

/// With --write: every file read and merged, then written with its diff
/// shown and the previous file kept.
fn write_files(
    ctx: &Ctx,
    agent: Agent,
    name: &str,
    path: &Path,
    toml_path: Option<PathBuf>,
) -> anyhow::Result<()> {
    // Every file is read and merged before any is written: one that is
    // refused leaves the others untouched too.
    let old = read(path)?;
    let mut plan = vec![(
        path.to_path_buf(),
        old.clone(),
        merge_json(agent, path, old.as_deref())?,
    )];
    if let Some(t) = toml_path {
        let old = read(&t)?;
        let new = merge_toml(&t, old.as_deref())?;
        plan.push((t, old, new));
    }
    let mut files = Vec::new();
    for (p, old, new) in plan {
        let shown = p.display().to_string();
        let Some(new) = new else {
            files.push(FileReport {
                path: shown,
                add: None,
                changed: Some(false),
                diff: None,
                backup: None,
            });
            continue;
        };
        let d = diff(&p, old.as_deref().unwrap_or(""), &new);
        let backup = replace(&p, old.as_deref(), &new).map_err(|e| {
            let done: Vec<&str> = files
                .iter()
                .filter(|f: &&FileReport| f.changed == Some(true))
                .map(|f| f.path.as_str())
                .collect();
            if done.is_empty() {
                e
            } else {
                anyhow::anyhow!("{e:#} ({} was written already)", done.join(", "))
            }
        })?;
        files.push(FileReport {
            path: shown,
            add: None,
            changed: Some(true),
            diff: Some(d),
            backup: backup.map(|b| b.display().to_string()),
        });
    }
    let next = next_step(agent);
    ctx.show(
        "install",
        &json!({"agent": name, "written": true, "files": &files, "next": next}),
        || written_text(&files, next),
    );
    Ok(())
}

/// What --write did, file by file, for a person.
fn written_text(files: &[FileReport], next: Option<&str>) -> String {
    let mut t = String::new();
    for f in files {
        match (&f.diff, &f.backup) {
            (None, _) => t.push_str(&format!("{} already has it: nothing changed\n", f.path)),
            (Some(d), b) => {
                t.push_str(d);
                let note = match b {
                    Some(b) => format!("the previous file is in {b}"),
                    None => "new file".to_string(),
                };
                t.push_str(&format!("wrote {} ({note})\n", f.path));
            }
        }
    }
    if let Some(n) = next {
        t.push_str(&format!("Next: {n}\n"));
    }
    t
}
