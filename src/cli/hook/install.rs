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
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::json;

use crate::cli::{Ctx, exit, fail};

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

/// A JSON value that keeps its objects' key order (serde_json's map sorts).
#[derive(Debug, Clone, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<J, E> {
                Ok(J::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<J, E> {
                Ok(J::Num(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<J, E> {
                Ok(J::Num(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<J, E> {
                serde_json::Number::from_f64(n)
                    .map(J::Num)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, s: &str) -> Result<J, E> {
                Ok(J::Str(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<J, E> {
                Ok(J::Str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(J::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, J>()? {
                    v.push((k, x));
                }
                Ok(J::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl J {
    fn get_mut(&mut self, key: &str) -> Option<&mut J> {
        match self {
            J::Obj(kv) => kv.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Pretty-printed with two-space indents, as agents write their settings.
    fn write(&self, out: &mut String, indent: usize) {
        let pad = |n: usize| "  ".repeat(n);
        let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(&b.to_string()),
            J::Num(n) => out.push_str(&n.to_string()),
            J::Str(s) => out.push_str(&quote(s)),
            J::Arr(v) if v.is_empty() => out.push_str("[]"),
            J::Obj(v) if v.is_empty() => out.push_str("{}"),
            J::Arr(v) => {
                out.push_str("[\n");
                for (i, x) in v.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    x.write(out, indent + 1);
                    out.push_str(if i + 1 < v.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push(']');
            }
            J::Obj(v) => {
                out.push_str("{\n");
                for (i, (k, x)) in v.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    out.push_str(&quote(k));
                    out.push_str(": ");
                    x.write(out, indent + 1);
                    out.push_str(if i + 1 < v.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push('}');
            }
        }
    }

    fn pretty(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s.push('\n');
        s
    }
}

/// The command an agent's settings run.
pub(crate) fn command(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "handoff hook claude",
        Agent::Codex => "handoff hook codex",
    }
}

/// The matcher group to add under `hooks.<event>`. Claude Code matches
/// every tool with `*` (its Stop and UserPromptSubmit groups take no
/// matcher); Codex matchers are regular expressions, and a group without
/// one matches every tool.
fn group(agent: Agent, event: &str) -> J {
    let timeout = if event == "PermissionRequest" {
        HOOK_TIMEOUT_SECS
    } else {
        LATER_TIMEOUT_SECS
    };
    let hook = J::Obj(vec![
        ("type".into(), J::Str("command".into())),
        ("command".into(), J::Str(command(agent).into())),
        ("timeout".into(), J::Num(timeout.into())),
    ]);
    let mut g = Vec::new();
    if agent == Agent::Claude && matches!(event, "PermissionRequest" | "PostToolUse") {
        g.push(("matcher".into(), J::Str("*".into())));
    }
    g.push(("hooks".into(), J::Arr(vec![hook])));
    J::Obj(g)
}

/// The whole entry, as it would stand in an empty file.
fn snippet(agent: Agent) -> J {
    let events = events(agent)
        .iter()
        .map(|e| (e.to_string(), J::Arr(vec![group(agent, e)])))
        .collect();
    J::Obj(vec![("hooks".into(), J::Obj(events))])
}

/// Whether a matcher group already runs `cmd`.
fn runs(group: &J, cmd: &str) -> bool {
    let J::Obj(kv) = group else { return false };
    kv.iter().any(|(k, v)| {
        k == "hooks"
            && matches!(v, J::Arr(hs) if hs.iter().any(|h| matches!(h,
                J::Obj(f) if f.iter().any(|(k, c)| k == "command"
                    && matches!(c, J::Str(s) if s.trim() == cmd || s.trim().starts_with(&format!("{cmd} ")))))))
    })
}

/// `text` (the file, or `None` when it does not exist) with the entry
/// merged in; `Ok(None)` when it is there already.
fn merge_json(agent: Agent, path: &Path, text: Option<&str>) -> anyhow::Result<Option<String>> {
    let shown = path.display();
    let mut root = match text {
        None => J::Obj(Vec::new()),
        Some(t) if t.trim().is_empty() => J::Obj(Vec::new()),
        Some(t) => serde_json::from_str::<J>(t).map_err(|e| {
            fail(
                exit::INVALID,
                format!("{shown} is not valid JSON ({e}): fix it first; nothing was written"),
            )
        })?,
    };
    let shape = |what: &str| {
        fail(
            exit::INVALID,
            format!(
                "{shown}: {what}, not the shape the agent reads: fix it first; nothing was written"
            ),
        )
    };
    let J::Obj(top) = &mut root else {
        return Err(shape("the file is not a JSON object"));
    };
    if !top.iter().any(|(k, _)| k == "hooks") {
        top.push(("hooks".into(), J::Obj(Vec::new())));
    }
    let Some(J::Obj(events)) = root.get_mut("hooks") else {
        return Err(shape("`hooks` is not an object"));
    };
    let mut changed = false;
    for event in self::events(agent) {
        if !events.iter().any(|(k, _)| k == event) {
            events.push((event.to_string(), J::Arr(Vec::new())));
        }
        let Some((_, J::Arr(groups))) = events.iter_mut().find(|(k, _)| k == event) else {
            return Err(shape(&format!("`hooks.{event}` is not a list")));
        };
        if !groups.iter().any(|g| runs(g, command(agent))) {
            groups.push(group(agent, event));
            changed = true;
        }
    }
    Ok(changed.then(|| root.pretty()))
}

/// Codex's `config.toml` with hooks turned on; `Ok(None)` when they are.
fn merge_toml(path: &Path, text: Option<&str>) -> anyhow::Result<Option<String>> {
    let shown = path.display();
    let mut doc = text
        .unwrap_or("")
        .parse::<toml_edit::DocumentMut>()
        .map_err(|e| {
            let e = e.to_string();
            let first = e.lines().next().unwrap_or("").to_string();
            fail(
                exit::INVALID,
                format!("{shown} is not valid TOML ({first}): fix it first; nothing was written"),
            )
        })?;
    let features = doc
        .entry("features")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(features) = features.as_table_like_mut() else {
        return Err(fail(
            exit::INVALID,
            format!("{shown}: `features` is not a table: fix it first; nothing was written"),
        ));
    };
    // `hooks` is the canonical name of the flag, `codex_hooks` its
    // deprecated older one: either set to false is the person's choice.
    let flag = |k: &str| features.get(k).and_then(|v| v.as_bool());
    if let Some(k) = ["hooks", "codex_hooks"]
        .into_iter()
        .find(|k| flag(k) == Some(false))
    {
        return Err(fail(
            exit::REFUSED,
            format!(
                "{shown} turns hooks off (`[features] {k} = false`): set it to true yourself if you want handoff's hook; nothing was written"
            ),
        ));
    }
    if flag("hooks") == Some(true) {
        return Ok(None);
    }
    features.insert("hooks", toml_edit::value(true));
    Ok(Some(doc.to_string()))
}

/// A unified diff of `old` → `new` (three lines of context).
fn diff(path: &Path, old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = crate::ops::claude::preview::align(&a, &b);
    let p = path.display();
    let mut out = if old.is_empty() {
        format!("--- /dev/null\n+++ {p}\n")
    } else {
        format!("--- {p}\n+++ {p}\n")
    };
    // Line numbers before each op, in a and in b.
    let (mut ia, mut ib) = (0usize, 0usize);
    let mut at = Vec::with_capacity(ops.len());
    for (tag, _) in &ops {
        at.push((ia, ib));
        match tag {
            '-' => ia += 1,
            '+' => ib += 1,
            _ => {
                ia += 1;
                ib += 1;
            }
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != ' ').collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(3);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 7 {
            end = changed[i];
            i += 1;
        }
        let end = (end + 3).min(ops.len() - 1);
        let span = &ops[start..=end];
        let na = span.iter().filter(|(t, _)| *t != '+').count();
        let nb = span.iter().filter(|(t, _)| *t != '-').count();
        let (sa, sb) = at[start];
        let from = |s: usize, n: usize| if n == 0 { s } else { s + 1 };
        out.push_str(&format!(
            "@@ -{},{na} +{},{nb} @@\n",
            from(sa, na),
            from(sb, nb)
        ));
        for (t, l) in span {
            out.push(*t);
            out.push_str(l);
            out.push('\n');
        }
    }
    out
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
    if !args.write {
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
        return Ok(exit::OK);
    }
    // Every file is read and merged before any is written: one that is
    // refused leaves the others untouched too.
    let old = read(&path)?;
    let mut plan = vec![(
        path.clone(),
        old.clone(),
        merge_json(agent, &path, old.as_deref())?,
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
        || {
            let mut t = String::new();
            for f in &files {
                match (&f.diff, &f.backup) {
                    (None, _) => {
                        t.push_str(&format!("{} already has it: nothing changed\n", f.path))
                    }
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
        },
    );
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_merge_keeps_order_and_is_idempotent() {
        let p = Path::new("s.json");
        let old = "{\n  \"model\": \"x\",\n  \"hooks\": {\n    \"Notification\": []\n  },\n  \"env\": {}\n}\n";
        let new = merge_json(Agent::Claude, p, Some(old)).unwrap().unwrap();
        assert!(new.starts_with("{\n  \"model\": \"x\",\n  \"hooks\": {\n    \"Notification\": [],\n    \"PermissionRequest\": ["), "{new}");
        assert!(new.ends_with("  \"env\": {}\n}\n"), "{new}");
        assert_eq!(merge_json(Agent::Claude, p, Some(&new)).unwrap(), None);
        let d = diff(p, old, &new);
        assert!(d.starts_with("--- s.json\n+++ s.json\n@@ -1,"), "{d}");
        assert!(
            d.contains("-    \"Notification\": []\n+    \"Notification\": [],\n"),
            "{d}"
        );
    }

    #[test]
    fn toml_merge_keeps_comments_and_refuses_a_disabled_flag() {
        let p = Path::new("c.toml");
        let old = "# mine\nmodel = \"o3\"\n\n[features]\nweb = true\n";
        let new = merge_toml(p, Some(old)).unwrap().unwrap();
        assert_eq!(
            new,
            "# mine\nmodel = \"o3\"\n\n[features]\nweb = true\nhooks = true\n"
        );
        assert_eq!(merge_toml(p, Some(&new)).unwrap(), None);
        assert!(merge_toml(p, Some("[features]\nhooks = false\n")).is_err());
        assert!(merge_toml(p, Some("[features]\ncodex_hooks = false\n")).is_err());
        // The deprecated key alone: the canonical one is added beside it.
        assert_eq!(
            merge_toml(p, Some("[features]\ncodex_hooks = true\n"))
                .unwrap()
                .unwrap(),
            "[features]\ncodex_hooks = true\nhooks = true\n"
        );
        assert!(merge_toml(p, Some("[features\n")).is_err());
    }
}
