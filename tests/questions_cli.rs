//! The question commands through the real `handoff` binary: a full round
//! trip, `--wait`, and bad input (one clear line, non-zero exit, nothing
//! written).

mod common;

use std::process::{Command, Stdio};

use common::{TempDb, cli_at, json, stderr, stdout};

fn ask_id(db: &TempDb, args: &[&str]) -> String {
    let mut all = vec!["ask"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = db.cli(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)["question"]["id"].as_str().unwrap().to_string()
}

/// Rows in the question tables and the event log, via the CLI's own store.
async fn written(db: &TempDb) -> (i64, i64, i64) {
    let s = db.open().await;
    let n = (
        common::count(&s, "questions").await,
        common::count(&s, "question_replies").await,
        common::count(&s, "events").await,
    );
    s.close().await;
    n
}

fn assert_one_line_error(out: &std::process::Output, code: i32, needle: &str) {
    assert_eq!(out.status.code(), Some(code), "stderr: {}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

#[test]
fn round_trip_ask_reply_pending_answer_resolve() {
    let db = TempDb::new();
    let id = ask_id(
        &db,
        &[
            "Which DB?",
            "--detail",
            "for the cache",
            "--option",
            "sqlite",
            "--option",
            "postgres",
            "--recommend",
            "2",
            "--key",
            "db",
            "--project",
            "p",
            "--session",
            "s1",
        ],
    );
    // Re-asking with the key updates in place.
    let again = json(&db.cli(&[
        "ask",
        "Which DB, really?",
        "--key",
        "db",
        "--project",
        "p",
        "--json",
    ]));
    assert_eq!(again["created"], false);
    assert_eq!(again["question"]["id"], id.as_str());
    assert_eq!(again["question"]["revision"], 2);

    let short = &id[id.len() - 8..];
    let out = db.cli(&["reply", short, "sqlite", "--by", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The chat door is refused while the Inbox reply waits; the message says so.
    let out = db.cli(&["reply", short, "postgres", "--via", "chat"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("an Inbox answer is already waiting for the agent"),
        "{}",
        stderr(&out)
    );
    // --json refusals are typed on stdout.
    let out = db.cli(&["answer", short, "mine", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let r = &json(&out)["error"];
    assert_eq!(r["reason"], "unread_answer");
    assert_eq!(
        (
            r["detail"]["refused"].as_str(),
            r["detail"]["reply"].as_str()
        ),
        (Some("unread_answer"), Some("sqlite"))
    );
    // The refused agent was handed the answer: pending has nothing new.
    let p = json(&db.cli(&["pending", "--project", "p", "--new", "--json"]))["replies"].clone();
    assert_eq!(p.as_array().unwrap().len(), 0);
    let p = json(&db.cli(&["pending", "--project", "p", "--json"]))["replies"].clone();
    assert_eq!(p[0]["new"], false);
    assert_eq!(p[0]["question"]["reply"]["text"], "sqlite");

    let out = db.cli(&["resolve", short, "--outcome", "went with sqlite"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = json(&db.cli(&["show", short, "--json"]));
    assert_eq!(shown["question"]["status"], "resolved");
    assert_eq!(shown["replies"][0]["reply"], "sqlite");
    assert!(stdout(&db.cli(&["show", short])).contains("went with sqlite"));
    let listed = json(&db.cli(&["questions", "--status", "all", "--json"]));
    assert_eq!(listed["questions"].as_array().unwrap().len(), 1);
    let open = json(&db.cli(&["questions", "--json"]));
    assert_eq!(open["questions"].as_array().unwrap().len(), 0);
    // Closed: replies are refused with exit 3.
    let out = db.cli(&["reply", short, "late"]);
    assert_one_line_error(&out, 3, "already resolved");
}

#[test]
fn ask_wait_returns_the_reply_from_another_process() {
    let db = TempDb::new();
    let waiter = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "ask",
            "Deploy now?",
            "--project",
            "p",
            "--key",
            "deploy",
            "--wait",
            "--timeout",
            "60s",
            "--json",
        ])
        .env("HANDOFF_DB", &db.path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Find the question once the waiter has flagged it (no sleeps on time:
    // poll the state until it exists).
    let id = loop {
        let l = json(&db.cli(&["questions", "--json"]));
        if let Some(q) = l["questions"].as_array().unwrap().first() {
            break q["id"].as_str().unwrap().to_string();
        }
        std::thread::yield_now();
    };
    let out = db.cli(&["reply", &id, "yes, go", "--by", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = waiter.wait_with_output().unwrap();
    assert_eq!(got.status.code(), Some(0), "{}", stderr(&got));
    let q = json(&got)["question"].clone();
    assert_eq!(q["reply"]["text"], "yes, go");
    assert!(q["reply"]["seen_at"].is_string(), "picked up");
}

#[test]
fn ask_wait_times_out_with_exit_5() {
    let db = TempDb::new();
    let out = db.cli(&["ask", "Anyone?", "--wait", "--timeout", "300ms"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    // A progress line ("asked … waiting"), then the one-line verdict.
    assert!(
        stderr(&out).lines().last().unwrap().contains("no reply"),
        "{}",
        stderr(&out)
    );
    // The question stays open for a later pending.
    assert_eq!(
        json(&db.cli(&["questions", "--json"]))["questions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn bad_questions_are_refused_and_nothing_is_written() {
    let db = TempDb::new();
    let long = "x".repeat(121);
    let cases: [(&[&str], &str); 5] = [
        (&["ask", &long], "limit is 120"),
        (
            &[
                "ask", "t", "--option", "a", "--option", "b", "--option", "c", "--option", "d",
                "--option", "e",
            ],
            "5 options",
        ),
        (&["ask", "t", "--option", "a"], "between 2 and 4"),
        (
            &[
                "ask",
                "t",
                "--option",
                "a",
                "--option",
                "b",
                "--recommend",
                "3",
            ],
            "names no option",
        ),
        (&["ask", "  "], "title is empty"),
    ];
    for (args, needle) in cases {
        let out = db.cli(args);
        assert_one_line_error(&out, 2, needle);
    }
    assert_eq!(written(&db).await, (0, 0, 0));
}

#[tokio::test]
async fn empty_replies_and_unknown_ids_are_refused_and_nothing_is_written() {
    let db = TempDb::new();
    let id = ask_id(&db, &["Which DB?"]);
    let before = written(&db).await;
    assert_one_line_error(&db.cli(&["reply", &id, ""]), 2, "empty");
    assert_one_line_error(&db.cli(&["reply", &id, "  ", "--via", "chat"]), 2, "empty");
    assert_one_line_error(&db.cli(&["answer", &id, ""]), 2, "empty");
    assert_one_line_error(
        &db.cli(&["reply", "deadbeef", "x"]),
        4,
        "no question `deadbeef`",
    );
    assert_one_line_error(
        &db.cli(&["resolve", "nope1234", "--outcome", "x"]),
        4,
        "no question",
    );
    assert_one_line_error(
        &db.cli(&["resolve", &id, "--outcome", " "]),
        2,
        "outcome is empty",
    );
    assert_one_line_error(&db.cli(&["show", "00000000"]), 4, "no question");
    assert_eq!(written(&db).await, before);
}

#[test]
fn unusable_database_paths_give_one_clear_line() {
    let db = TempDb::new();
    let file = db.dir.path().join("plain-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let cases = [
        // Under a plain file: a named path that cannot exist is refused
        // before anything tries to create it (bad input, 2); a file that
        // is no database cannot be used (1).
        (file.join("handoff.db"), 2, "does not exist"),
        (db.dir.path().to_path_buf(), 1, "it is a directory"),
        (file.clone(), 1, "not a SQLite database"),
    ];
    for (path, code, needle) in cases {
        let out = cli_at(&path, &["ask", "Which DB?"]);
        assert_one_line_error(&out, code, needle);
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"not a directory",
        "nothing written"
    );
}

#[tokio::test]
async fn a_read_only_database_gives_one_clear_line_and_stays_unchanged() {
    let db = TempDb::new();
    let id = ask_id(&db, &["Which DB?"]);
    let before = written(&db).await;
    let guard = common::make_read_only(&db.path);
    for args in [
        vec!["ask", "Another?"],
        vec!["reply", id.as_str(), "sqlite"],
    ] {
        let out = db.cli(&args);
        assert_one_line_error(&out, 1, "read-only");
    }
    drop(guard);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&db.path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(written(&db).await, before);
}
