//! The README's quick start, run as written: the lines between
//! `<!-- quickstart -->` and `<!-- /quickstart -->` go to `sh -c` one by one
//! in a fresh folder holding a copy of `config/handoff.example.toml`, with
//! the built `handoff` first on `PATH` and HOME in the temp dir. A line
//! ending in `&` (the daemon) is started as a process this test owns.
//!
//! Two departures from a person's terminal, both forced by running as a
//! test: the copied config's port 8642 is swapped for a free one (another
//! program may hold 8642), and `ID` is the short id the `questions` line
//! printed, as a person would type it.

mod common;

use std::path::Path;
use std::process::Output;

use common::daemon::Daemon;
use common::{stderr, stdout};

/// The quick start's command lines, comments dropped.
fn quickstart_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("read README.md");
    let start = readme
        .find("<!-- quickstart -->")
        .expect("README has a <!-- quickstart --> block");
    let end = readme[start..]
        .find("<!-- /quickstart -->")
        .expect("the quick start block ends")
        + start;
    readme[start..end]
        .lines()
        .filter(|l| !l.starts_with("<!--") && !l.starts_with("```"))
        .map(|l| match l.find("  #") {
            Some(i) => l[..i].trim().to_string(),
            None => l.trim().to_string(),
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// A word of exactly 8 lowercase hex digits: a short id.
fn short_id(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() == 8
                && w.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
        .map(str::to_string)
}

#[test]
fn the_readme_quick_start_works_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("work");
    let home = dir.path().join("home");
    let bin = dir.path().join("bin");
    for d in [&folder.join("config"), &home, &bin] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config/handoff.example.toml"),
        folder.join("config/handoff.example.toml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_handoff"), bin.join("handoff")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env: Vec<(&str, &str)> = vec![("HOME", home.to_str().unwrap()), ("PATH", &path)];
    let run = |line: &str| -> Output {
        let mut c = std::process::Command::new("sh");
        c.args(["-c", line]).current_dir(&folder);
        for k in [
            "HANDOFF_URL",
            "HANDOFF_TOKEN",
            "HANDOFF_DB",
            "HANDOFF_CONFIG",
            "HANDOFF_SESSION",
            "HANDOFF_PROJECT",
            "HANDOFF_TELEGRAM_TOKEN",
            "XDG_DATA_HOME",
        ] {
            c.env_remove(k);
        }
        for (k, v) in &env {
            c.env(k, v);
        }
        c.output().expect("run sh")
    };

    let lines = quickstart_lines();
    assert!(lines.len() >= 8, "the quick start block: {lines:?}");
    let mut daemon = None;
    let mut id = None;
    let mut outputs = Vec::new();
    for line in &lines {
        if let Some(cmd) = line.strip_suffix('&') {
            let args: Vec<&str> = cmd.split_whitespace().collect();
            assert_eq!(args.first(), Some(&"handoff"), "{line}");
            daemon = Some(Daemon::spawn(Some(&folder), &args[1..], &env));
            continue;
        }
        let line = match &id {
            Some(id) => line.replace(" ID ", &format!(" {id} ")),
            None => line.clone(),
        };
        let o = run(&line);
        assert!(
            o.status.success(),
            "`{line}` failed: {}\n{}",
            stdout(&o),
            stderr(&o)
        );
        if line.starts_with("cp ") {
            // The one edit: a free port instead of 8642.
            let cfg = folder.join("config/handoff.toml");
            let text = std::fs::read_to_string(&cfg).unwrap();
            assert!(
                text.contains("127.0.0.1:8642"),
                "the example listens on 8642"
            );
            std::fs::write(
                &cfg,
                text.replace("127.0.0.1:8642", &format!("127.0.0.1:{port}")),
            )
            .unwrap();
        }
        if line == "handoff questions" {
            id = short_id(&stdout(&o));
            assert!(
                id.is_some(),
                "`handoff questions` shows a short id: {}",
                stdout(&o)
            );
        }
        outputs.push((line, stdout(&o)));
    }
    let daemon = daemon.expect("the quick start starts the daemon");
    assert_eq!(
        daemon.addr,
        format!("127.0.0.1:{port}"),
        "it serves the config's address"
    );
    let out = |prefix: &str| {
        outputs
            .iter()
            .find(|(l, _)| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starts with {prefix}"))
            .1
            .clone()
    };
    // The answer reaches agent A, and only agent A.
    let a = out("HANDOFF_SESSION=agent-a handoff pending");
    assert!(
        a.contains("Postgres") && a.contains("Which database?"),
        "agent A: {a}"
    );
    let b = out("HANDOFF_SESSION=agent-b handoff pending");
    assert!(
        !b.contains("Postgres") && !b.contains("Which database?"),
        "agent B: {b}"
    );
    // status: the copied config, the example's database, served by the daemon.
    let s = out("handoff status");
    assert!(s.contains("config/handoff.toml"), "{s}");
    assert!(
        s.contains(
            &home
                .join(".local/share/handoff/handoff.db")
                .display()
                .to_string()
        ),
        "{s}"
    );
    assert!(s.contains("serving this database"), "{s}");
    // And the daemon serves the same file: its log names it.
    assert!(
        daemon.log().contains(".local/share/handoff/handoff.db"),
        "{}",
        daemon.log()
    );
}
