//! The small things a new user trips over: `propose`
//! takes its project from `$HANDOFF_PROJECT` like `ask`, and messages speak
//! English ("1 option", "patch: not valid JSON").

mod common;

use std::process::Command;

use common::{TempDb, json, stderr};

#[tokio::test]
async fn propose_uses_handoff_project_like_ask() {
    let db = TempDb::new();
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "ship it",
        ])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_PROJECT", "infra")
        .env_remove("HANDOFF_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["action"]["project"], "infra");
}

#[tokio::test]
async fn messages_count_and_name_things_right() {
    let db = TempDb::new();
    let one = db.cli(&["ask", "Which?", "--option", "only one"]);
    assert!(!one.status.success());
    assert!(stderr(&one).contains("1 option given;"), "{}", stderr(&one));

    let out = db.cli(&[
        "--json",
        "propose",
        "--kind",
        "k",
        "--summary",
        "s",
        "--args",
        r#"{"a":1}"#,
    ]);
    let id = json(&out)["action"]["id"].as_str().unwrap().to_string();
    let bad = db.cli(&["approve", &id, "--patch", "{nope", "--as", "alice"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("patch: not valid JSON"),
        "{}",
        stderr(&bad)
    );
}

/// Every human command names its person the same way: $HANDOFF_USER, else
/// $USER, else `cli` — a reply with neither set is not recorded as "".
#[tokio::test]
async fn every_human_command_names_its_person_the_same_way() {
    let db = TempDb::new();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
        c.args(args)
            .env("HANDOFF_DB", &db.path)
            .env_remove("HANDOFF_URL")
            .env_remove("HANDOFF_USER")
            .env_remove("USER");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        json(&out)
    };
    let q = run(&["--json", "ask", "Who replies?"], &[]);
    let id = q["question"]["id"].as_str().unwrap().to_string();
    let replied = run(&["--json", "reply", &id, "me"], &[]);
    assert_eq!(replied["question"]["reply"]["by"], "cli", "{replied}");

    let q = run(&["--json", "ask", "And now?"], &[]);
    let id = q["question"]["id"].as_str().unwrap().to_string();
    let replied = run(
        &["--json", "reply", &id, "me"],
        &[("HANDOFF_USER", "alice"), ("USER", "root")],
    );
    assert_eq!(replied["question"]["reply"]["by"], "alice", "{replied}");
    let a = run(&["--json", "propose", "--kind", "k", "--summary", "s"], &[]);
    let aid = a["action"]["id"].as_str().unwrap().to_string();
    let approved = run(&["--json", "approve", &aid], &[("USER", "bob")]);
    assert_eq!(approved["action"]["decided_by"], "bob", "{approved}");
}

/// Every flag that takes JSON reads stdin the same way: `-` or `@-`
/// (`board upsert --rows`, `propose --args`, `session checkpoint --state`);
/// and no subcommand's help says its line twice.
#[tokio::test]
async fn stdin_is_spelled_the_same_for_every_json_flag() {
    use std::io::Write;
    let db = TempDb::new();
    let piped = |args: &[&str], input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
            .args(args)
            .env("HANDOFF_DB", &db.path)
            .env_remove("HANDOFF_URL")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        json(&out)
    };
    for (i, dash) in ["-", "@-"].into_iter().enumerate() {
        let title = format!("Board {i}");
        let b = piped(
            &["--json", "board", "upsert", "p", &title, "--rows", dash],
            r#"[{"label":"db","status":"blocked","next_step":"pick one"}]"#,
        );
        assert_eq!(b["board"]["rows"][0]["label"], "db", "{dash}: {b}");
        let a = piped(
            &[
                "--json",
                "propose",
                "--kind",
                "k",
                "--summary",
                &title,
                "--args",
                dash,
            ],
            r#"{"to":"staging"}"#,
        );
        assert_eq!(a["action"]["args"]["to"], "staging", "{dash}: {a}");
    }
    let help = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["board", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    for line in text.lines() {
        let sentences: Vec<&str> = line
            .split(". ")
            .map(|s| s.trim().trim_end_matches('.'))
            .collect();
        assert!(
            sentences
                .windows(2)
                .all(|w| w[1].is_empty() || !w[0].ends_with(w[1])),
            "a help line says itself twice: {line}"
        );
    }
}
