//! `handoff hook install claude|codex`: the real binary
//! prints the settings entries, merges them with `--write` after printing a
//! diff (every existing key kept, a backup written), changes nothing the
//! second time, and refuses a file that does not parse, leaving it as it was.
//! The expected entries are written by hand from the agents' published
//! shapes (Claude Code's settings `hooks.<Event>[{matcher?, hooks:
//! [{type, command, timeout}]}]`; Codex's `hooks.json` of the same shape and
//! its `[features] hooks = true`), never from handoff's own output.
//! `handoff doctor` reads them back: installed, current, trusted.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn install(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["hook", "install"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("CODEX_HOME")
        .output()
        .expect("run handoff hook install")
}

/// What `hook install claude` adds to an empty settings file: a
/// PermissionRequest hook that answers prompts, and the later events that
/// tell of a prompt answered at the terminal (PostToolUse, Stop,
/// UserPromptSubmit; the last two take no matcher in Claude Code).
fn claude_entries() -> Value {
    let hook = |timeout: u64| json!([{"type": "command", "command": "handoff hook claude", "timeout": timeout}]);
    json!({"hooks": {
        "PermissionRequest": [{"matcher": "*", "hooks": hook(600)}],
        "PostToolUse": [{"matcher": "*", "hooks": hook(30)}],
        "Stop": [{"hooks": hook(30)}],
        "UserPromptSubmit": [{"hooks": hook(30)}]
    }})
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CLAUDE_SETTINGS: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(npm test:*)"
    ]
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ]
  }
}
"#;

#[test]
fn claude_prints_the_entry_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = install(dir.path(), &["claude"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let (head, body) = out.split_once('\n').unwrap();
    assert!(head.contains(".claude/settings.json"), "{head}");
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v, claude_entries());
    assert!(
        !dir.path().join(".claude").exists(),
        "printing writes nothing"
    );
}

#[test]
fn claude_write_merges_with_a_diff_a_backup_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, CLAUDE_SETTINGS).unwrap();

    let o = install(dir.path(), &["claude", "--write"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("--- .claude/settings.json\n+++ .claude/settings.json\n@@ "),
        "{out}"
    );
    assert!(out.contains("\n+    \"PermissionRequest\": [\n"), "{out}");
    assert!(
        out.contains("\n+            \"command\": \"handoff hook claude\",\n"),
        "{out}"
    );
    assert!(
        !out.contains("\n-  \"model\""),
        "untouched keys are not in the diff: {out}"
    );
    assert!(
        out.contains(
            "wrote .claude/settings.json (the previous file is in .claude/settings.json.bak)"
        ),
        "{out}"
    );

    let bak = std::fs::read_to_string(dir.path().join(".claude/settings.json.bak")).unwrap();
    assert_eq!(
        bak, CLAUDE_SETTINGS,
        "the backup is the old file, byte for byte"
    );
    let merged = std::fs::read_to_string(&settings).unwrap();
    let v: Value = serde_json::from_str(&merged).unwrap();
    let old: Value = serde_json::from_str(CLAUDE_SETTINGS).unwrap();
    assert_eq!(v["model"], old["model"]);
    assert_eq!(v["permissions"], old["permissions"]);
    // The person's own Stop hook first, handoff's beside it.
    assert_eq!(v["hooks"]["Stop"][0], old["hooks"]["Stop"][0]);
    let want = claude_entries();
    assert_eq!(v["hooks"]["Stop"][1], want["hooks"]["Stop"][0]);
    for event in ["PermissionRequest", "PostToolUse", "UserPromptSubmit"] {
        assert_eq!(v["hooks"][event], want["hooks"][event], "{event}");
    }
    // Key order kept: the old keys first, in their order.
    let keys: Vec<usize> = [
        "\"model\"",
        "\"permissions\"",
        "\"hooks\"",
        "\"Stop\"",
        "\"PermissionRequest\"",
        "\"PostToolUse\"",
        "\"UserPromptSubmit\"",
    ]
    .iter()
    .map(|k| merged.find(k).unwrap())
    .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{merged}");

    // Second run: nothing changes, and it says so.
    let o = install(dir.path(), &["claude", "--write"]);
    assert!(o.status.success());
    assert_eq!(
        text(&o.stdout),
        ".claude/settings.json already has it: nothing changed\n"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), merged);
}

/// A settings file from an install that wrote PermissionRequest only gets
/// the three later events added, and nothing twice.
#[test]
fn an_older_install_gets_the_later_events_added() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let older = json!({"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "handoff hook claude --timeout 5m", "timeout": 600}]}]}});
    std::fs::write(&settings, serde_json::to_string_pretty(&older).unwrap()).unwrap();
    let o = install(dir.path(), &["claude", "--write"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let mut want = claude_entries();
    want["hooks"]["PermissionRequest"] = older["hooks"]["PermissionRequest"].clone();
    assert_eq!(v, want);
    let o = install(dir.path(), &["claude", "--write"]);
    assert!(text(&o.stdout).contains("nothing changed"));
}

#[test]
fn a_file_that_is_not_json_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    let broken = "{\n  \"model\": \"opus\",\n}\n";
    std::fs::write(&p, broken).unwrap();
    let o = install(dir.path(), &["claude", "--write", "--path", "s.json"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("s.json is not valid JSON (") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), broken);
    assert!(!dir.path().join("s.json.bak").exists());
    let o = install(dir.path(), &["claude", "--config-toml", "c.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--config-toml is for codex only"));
    // Hooks of the wrong shape: refused too.
    std::fs::write(&p, "{\"hooks\": []}").unwrap();
    let o = install(dir.path(), &["claude", "--write", "--path", "s.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("`hooks` is not an object"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn codex_write_fills_hooks_json_and_turns_hooks_on_in_config_toml() {
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let toml = "# my settings\nmodel = \"gpt-5\"\napproval_policy = \"on-request\"\n\n[features]\nweb_search_request = true\n";
    std::fs::write(codex.join("config.toml"), toml).unwrap();

    let o = install(dir.path(), &["codex"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains(".codex/hooks.json") && out.contains("\"command\": \"handoff hook codex\""),
        "{out}"
    );
    assert!(out.contains("[features]\nhooks = true"), "{out}");
    assert!(
        !out.contains("codex_hooks"),
        "never the deprecated key: {out}"
    );
    // The trust step, and what `codex exec` needs without it.
    assert!(out.contains("open `/hooks`"), "{out}");
    assert!(out.contains("--dangerously-bypass-hook-trust"), "{out}");
    assert!(!codex.join("hooks.json").exists());

    let o = install(dir.path(), &["codex", "--write"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("--- /dev/null\n"), "a new hooks.json: {out}");
    assert!(out.contains("+hooks = true\n"), "{out}");
    assert!(
        out.contains("Next: Codex runs a new or changed hook only once a person trusts it"),
        "{out}"
    );
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(codex.join("hooks.json")).unwrap()).unwrap();
    assert_eq!(
        hooks,
        json!({"hooks": {"PermissionRequest": [{"hooks": [
            {"type": "command", "command": "handoff hook codex", "timeout": 600}]}]}})
    );
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        format!("{toml}hooks = true\n"),
        "comments and keys kept"
    );
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml.bak")).unwrap(),
        toml
    );

    let o = install(dir.path(), &["codex", "--write"]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    assert_eq!(out.matches("nothing changed").count(), 2, "{out}");
}

#[test]
fn codex_refuses_a_broken_config_toml_and_writes_neither_file() {
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(codex.join("config.toml"), "[features\nx = 1\n").unwrap();
    let o = install(dir.path(), &["codex", "--write"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("config.toml is not valid TOML ("), "{err}");
    assert!(
        !codex.join("hooks.json").exists(),
        "nothing written when one file is refused"
    );
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        "[features\nx = 1\n"
    );
    // Hooks turned off on purpose: refused, not overridden.
    std::fs::write(
        codex.join("config.toml"),
        "[features]\ncodex_hooks = false\n",
    )
    .unwrap();
    let o = install(dir.path(), &["codex", "--write"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        text(&o.stderr).contains("turns hooks off"),
        "{}",
        text(&o.stderr)
    );
}

/// docs/recipes.md shows exactly the entries `install` prints.
#[test]
fn the_recipes_show_what_install_prints() {
    let doc = include_str!("../docs/recipes.md");
    let section = doc
        .split("## Installing the permission hooks")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let blocks: Vec<Value> = section
        .split("```json\n")
        .skip(1)
        .map(|b| serde_json::from_str(b.split("```").next().unwrap()).unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (agent, shown) in ["claude", "codex"].iter().zip(&blocks) {
        let out = text(&install(dir.path(), &[agent]).stdout);
        let body = out.split_once('\n').unwrap().1;
        let body = body.split("\n\nand turn hooks on").next().unwrap();
        let printed: Value = serde_json::from_str(body).unwrap();
        assert_eq!(&printed, shown, "{agent}");
    }
    assert_eq!(blocks.len(), 2);
    assert!(section.contains("```toml\n[features]\nhooks = true\n```"));
}

/// `--json`: one object, the same facts as the text.
#[test]
fn json_output_names_each_file_and_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let o = install(dir.path(), &["codex", "--write", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let files = v["install"]["files"].as_array().unwrap();
    assert_eq!(v["install"]["agent"], "codex");
    assert_eq!(v["install"]["written"], true);
    assert_eq!(files.len(), 2);
    assert!(
        files[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(".codex/hooks.json")
    );
    assert_eq!(files[0]["changed"], true);
    assert!(files[0]["backup"].is_null(), "a new file has no backup");
    assert!(files[1]["diff"].as_str().unwrap().contains("+hooks = true"));
    assert!(v["install"]["next"].as_str().unwrap().contains("/hooks"));
    let o = install(dir.path(), &["codex", "--write", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["install"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["changed"] == false)
    );
}

/// Codex's trust record for a hook, as its `/hooks` review writes it:
/// `[hooks.state."<hooks.json>:permission_request:0:0"] trusted_hash`, the
/// SHA-256 of the hook's definition as canonical JSON (written out here).
fn trust(codex: &Path, timeout: u64) -> String {
    use sha2::Digest;
    let canonical = format!(
        r#"{{"event_name":"permission_request","hooks":[{{"async":false,"command":"handoff hook codex","timeout":{timeout},"type":"command"}}]}}"#
    );
    let hex: String = sha2::Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "\n[hooks.state.\"{}:permission_request:0:0\"]\ntrusted_hash = \"sha256:{hex}\"\n",
        codex.join("hooks.json").display()
    )
}

fn doctor(dir: &Path) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["doctor", "--json"])
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("CODEX_HOME")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["hooks"].as_array().unwrap().clone()
}

#[test]
fn doctor_tells_installed_current_and_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join(".codex");
    let by = |r: &[Value], agent: &str| r.iter().find(|x| x["agent"] == agent).unwrap().clone();

    // Nothing installed: both say so, and what to run.
    let r = doctor(dir.path());
    assert_eq!(by(&r, "claude")["installed"], json!([]));
    assert!(
        by(&r, "claude")["note"]
            .as_str()
            .unwrap()
            .contains("hook install claude")
    );
    assert_eq!(by(&r, "codex")["installed"], json!([]));

    // An older Claude install (PermissionRequest only): installed, not current.
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "handoff hook claude", "timeout": 600}]}]}})
        .to_string(),
    )
    .unwrap();
    let c = by(&doctor(dir.path()), "claude");
    assert_eq!(c["current"], false, "{c}");
    assert_eq!(
        c["missing"],
        json!(["PostToolUse", "Stop", "UserPromptSubmit"])
    );
    assert!(install(dir.path(), &["claude", "--write"]).status.success());
    let c = by(&doctor(dir.path()), "claude");
    assert_eq!(
        (c["current"].clone(), c["trusted"].clone()),
        (json!(true), Value::Null),
        "{c}"
    );

    // Codex: installed and current, but not trusted until /hooks says so.
    assert!(install(dir.path(), &["codex", "--write"]).status.success());
    let x = by(&doctor(dir.path()), "codex");
    assert_eq!(x["installed"], json!(["PermissionRequest"]), "{x}");
    assert_eq!(
        (x["current"].clone(), x["trusted"].clone()),
        (json!(true), json!(false)),
        "{x}"
    );
    assert!(x["note"].as_str().unwrap().contains("/hooks"), "{x}");
    let config = codex.join("config.toml");
    let before = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{before}{}", trust(&codex, 600))).unwrap();
    assert_eq!(by(&doctor(dir.path()), "codex")["trusted"], true);
    // A trust of another definition (a changed hook) is no trust.
    std::fs::write(&config, format!("{before}{}", trust(&codex, 300))).unwrap();
    assert_eq!(by(&doctor(dir.path()), "codex")["trusted"], false);
}
