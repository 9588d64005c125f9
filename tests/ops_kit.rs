//! The operations kit as shipped: completion scripts and man pages printed
//! by the real binary, and the systemd unit and container recipe checked
//! against the binary's own subcommands and flags (so a renamed flag breaks
//! a test, not a production start).

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn handoff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(args)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_DB")
        .output()
        .expect("run handoff")
}

fn repo_file(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// Every long flag `handoff <sub> --help` lists.
fn flags_of(sub: &str) -> Vec<String> {
    let o = handoff(&[sub, "--help"]);
    assert!(
        o.status.success(),
        "`handoff {sub} --help` failed: is `{sub}` a subcommand? {}",
        common::stderr(&o)
    );
    common::stdout(&o)
        .split_whitespace()
        .filter(|w| w.starts_with("--"))
        .map(|w| {
            w.trim_end_matches(',')
                .split(['=', '['])
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// A command line as the binary would get it: a subcommand that exists,
/// and only flags that subcommand has.
fn assert_real_command_line(args: &[String], source: &str) {
    let sub = args
        .first()
        .unwrap_or_else(|| panic!("{source}: no subcommand"));
    let flags = flags_of(sub);
    for a in args.iter().filter(|a| a.starts_with("--")) {
        let name = a.split('=').next().unwrap();
        assert!(
            flags.iter().any(|f| f == name),
            "{source} passes {name}, which `handoff {sub}` does not have (it has {flags:?})"
        );
    }
}

#[test]
fn completion_scripts_name_the_subcommands_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = handoff(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", common::stderr(&o));
        let script = common::stdout(&o);
        for sub in ["serve", "backup", "events", "propose", "completions"] {
            assert!(script.contains(sub), "{shell} script lacks `{sub}`");
        }
        // Flags of a nested subcommand too, not just the top level.
        assert!(script.contains("--follow"), "{shell} script lacks --follow");
    }
    let bad = handoff(&["completions", "tcsh"]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    assert!(common::stderr(&bad).contains("bash"), "lists the shells");
}

#[test]
fn man_prints_roff_and_writes_one_page_per_command() {
    let o = handoff(&["man"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let page = common::stdout(&o);
    assert!(page.contains(".TH handoff 1"), "roff title: {page:.200}");
    assert!(page.contains(".SH NAME") && page.contains("serve"));
    assert!(
        page.contains("HANDOFF_URL"),
        "the exit codes and environment"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let o = handoff(&["man", "--out", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let listed: Vec<String> =
        serde_json::from_value(common::json(&o)["man_pages"]["pages"].clone()).unwrap();
    for name in [
        "handoff.1",
        "handoff-serve.1",
        "handoff-backup.1",
        "handoff-board-upsert.1",
    ] {
        assert!(listed.iter().any(|n| n == name), "{name} not in {listed:?}");
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(text.contains(".TH "), "{name} is roff");
    }
    let serve = std::fs::read_to_string(out.join("handoff-serve.1")).unwrap();
    assert!(
        serve.contains("config"),
        "the serve page documents --config"
    );

    // A place that cannot be a directory: one clear line, exit 1.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let o = handoff(&["man", "--out", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = common::stderr(&o);
    assert!(
        err.contains("cannot write man pages") && err.lines().count() == 1,
        "{err}"
    );
}

/// `Key=value` lines of a unit file (comments and sections dropped).
fn unit_values(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_string())
        .collect()
}

#[test]
fn systemd_unit_starts_a_real_command_with_its_database_in_the_state_directory() {
    let unit = repo_file("config/handoff.service");
    let exec = unit_values(&unit, "ExecStart");
    assert_eq!(exec.len(), 1, "one ExecStart: {exec:?}");
    let argv: Vec<String> = exec[0].split_whitespace().map(String::from).collect();
    assert_eq!(
        argv[0], "/usr/local/bin/handoff",
        "the README installs it there"
    );
    assert_eq!(argv[1], "serve");
    assert_real_command_line(&argv[1..], "ExecStart");
    assert!(argv.iter().any(|a| a == "--config"), "{argv:?}");

    let one = |key: &str| {
        let v = unit_values(&unit, key);
        assert_eq!(v.len(), 1, "{key}: {v:?}");
        v[0].clone()
    };
    assert!(
        !["root", "0", ""].contains(&one("User").as_str()),
        "a dedicated user"
    );
    assert_eq!(one("NoNewPrivileges"), "yes");
    assert_eq!(one("ProtectSystem"), "strict");
    // The database is where the service may write: the state directory.
    let state = format!("/var/lib/{}", one("StateDirectory"));
    let db = one("Environment")
        .strip_prefix("HANDOFF_DB=")
        .expect("Environment=HANDOFF_DB=…")
        .to_string();
    assert!(
        db.starts_with(&format!("{state}/")),
        "{db} is not in {state}"
    );
    assert!(one("ReadWritePaths").split_whitespace().any(|p| p == state));
}

#[test]
fn systemd_unit_passes_systemd_analyze_verify() {
    // systemd itself reads the file: an unknown or misspelt directive is a
    // warning on stderr that the grep-style checks above would not catch.
    // Pointed at the built binary (verify checks ExecStart is executable),
    // without the man: links (verify runs `man` for them).
    let dir = tempfile::tempdir().unwrap();
    let unit: String = repo_file("config/handoff.service")
        .lines()
        .filter(|l| !l.starts_with("Documentation="))
        .map(|l| l.replace("/usr/local/bin/handoff", env!("CARGO_BIN_EXE_handoff")) + "\n")
        .collect();
    let path = dir.path().join("handoff.service");
    std::fs::write(&path, unit).unwrap();
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian package systemd; ./test installs it)");
    assert!(
        o.status.success() && common::stderr(&o).trim().is_empty(),
        "systemd-analyze verify: {}{}",
        common::stdout(&o),
        common::stderr(&o)
    );
}

/// The instructions of the last stage of a Dockerfile, as (INSTRUCTION, rest).
fn final_stage(text: &str) -> Vec<(String, String)> {
    let mut stage = Vec::new();
    for l in text.lines().map(str::trim) {
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (ins, rest) = l.split_once(' ').unwrap_or((l, ""));
        let ins = ins.to_ascii_uppercase();
        if ins == "FROM" {
            stage.clear();
        }
        stage.push((ins, rest.trim().to_string()));
    }
    stage
}

#[test]
fn dockerfile_runs_a_real_command_as_non_root_with_data_in_a_volume() {
    let text = repo_file("Dockerfile");
    let stage = final_stage(&text);
    let get = |ins: &str| -> Vec<String> {
        stage
            .iter()
            .filter(|(i, _)| i == ins)
            .map(|(_, r)| r.clone())
            .collect()
    };
    let json_list = |s: &str| -> Vec<String> {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("exec form `{s}`: {e}"))
    };
    let user = get("USER").pop().expect("USER in the runtime stage");
    let uid = user.split(':').next().unwrap();
    assert!(!["root", "0"].contains(&uid), "runs as {user}");
    assert!(get("ENV").contains(&"HANDOFF_DB=/data/handoff.db".to_string()));
    assert!(json_list(&get("VOLUME").pop().unwrap()).contains(&"/data".to_string()));
    // /data belongs to the runtime user, or the daemon cannot create its file.
    assert!(
        get("COPY")
            .iter()
            .any(|c| c.contains(&format!("--chown={uid}")) && c.ends_with(" /data")),
        "{:?}",
        get("COPY")
    );
    let entry = json_list(&get("ENTRYPOINT").pop().unwrap());
    assert!(
        get("COPY").iter().any(|c| c.ends_with(&entry[0])),
        "ENTRYPOINT {entry:?} is a file the stage copies in"
    );
    let cmd = json_list(&get("CMD").pop().unwrap());
    assert_real_command_line(&cmd, "CMD");
    let listen: std::net::SocketAddr = cmd
        .iter()
        .skip_while(|a| *a != "--listen")
        .nth(1)
        .expect("--listen ADDR")
        .parse()
        .unwrap();
    assert!(
        listen.ip().is_unspecified(),
        "reachable through the published port"
    );
    assert_eq!(get("EXPOSE"), [listen.port().to_string()]);

    // The builder's Rust is at least the crate's rust-version.
    let builder = text
        .lines()
        .find(|l| l.starts_with("FROM rust:"))
        .expect("a rust builder stage");
    let tag = builder.trim_start_matches("FROM rust:");
    let minor: u32 = tag.split(['.', '-']).nth(1).unwrap().parse().unwrap();
    let manifest = repo_file("Cargo.toml");
    let need: u32 = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \"1."))
        .and_then(|v| v.trim_end_matches('"').split('.').next()?.parse().ok())
        .expect("rust-version in Cargo.toml");
    assert!(
        minor >= need,
        "builder Rust 1.{minor} < rust-version 1.{need}"
    );

    let ignore = repo_file(".dockerignore");
    assert!(ignore.lines().any(|l| l.trim_end_matches('/') == "target"));
}
