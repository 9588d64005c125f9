//! `handoff board …` through the real binary: the happy path and bad input
//! (bad JSON rows, unknown board, stale version → exit 3, nothing written).

mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::{TempDb, count, json, stderr, stdout};

fn code(o: &std::process::Output) -> i32 {
    o.status.code().expect("exit code")
}

#[tokio::test]
async fn happy_path_upsert_annotate_pending_handled_outcome() {
    let db = TempDb::new();
    let rows = r#"[{"label":"acct","status":"blocked","next_step":"Create the Paddle account","owner":"task"},
                   {"label":"api","status":"done"}]"#;
    let o = db.cli(&[
        "--json",
        "board",
        "upsert",
        "shop",
        "Launch",
        "--rows",
        rows,
        "--session",
        "s1",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let b = json(&o)["board"].clone();
    assert_eq!(b["board_version"], 1);
    assert_eq!(b["rows"][0]["status"], "blocked");
    let id = b["id"].as_str().unwrap().to_owned();
    let short = &id[id.len() - 8..];

    // Human-readable summary by default.
    let o = db.cli(&["board", "get", "--project", "shop"]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("Launch") && stdout(&o).contains("50%"),
        "{}",
        stdout(&o)
    );

    let o = db.cli(&[
        "board",
        "annotate",
        short,
        "acct",
        "Done, key is in 1Password",
        "--by",
        "ann",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = db.cli(&[
        "board",
        "handled",
        "Launch",
        "acct",
        "--project",
        "shop",
        "--by",
        "ann",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("stays blocked"));

    let o = db.cli(&["--json", "board", "pending", "--project", "shop"]);
    let p = json(&o)["rows"].clone();
    assert_eq!(p.as_array().unwrap().len(), 1);
    assert_eq!(p[0]["row"]["annotation"], "Done, key is in 1Password");
    assert_eq!(p[0]["new"], true);
    let rev = p[0]["row"]["revision"].as_i64().unwrap();

    let o = db.cli(&["--json", "board", "handoffs"]);
    assert_eq!(json(&o)["rows"].as_array().unwrap().len(), 1);

    let rev_s = rev.to_string();
    let o = db.cli(&[
        "--json",
        "board",
        "outcome",
        short,
        "acct",
        "account live",
        "--revision",
        &rev_s,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let f = json(&o)["board"].clone();
    assert_eq!(f["rows"][0]["status"], "done");
    assert_eq!(f["rows"][0]["outcome"], "account live");
    assert!(f["archived_at"].is_string(), "100 % archives the board");
    assert_eq!(f["auto_archived"], true);

    let o = db.cli(&["--json", "board", "handoffs"]);
    assert!(json(&o)["rows"].as_array().unwrap().is_empty());
    let o = db.cli(&["--json", "board", "get", short]);
    assert_eq!(json(&o)["board"]["rows"][0]["outcome"], "account live");
}

#[tokio::test]
async fn advance_and_rows_from_a_file_and_stdin() {
    let db = TempDb::new();
    let file = db.dir.path().join("rows.json");
    std::fs::write(
        &file,
        r#"[{"label":"db","status":"blocked","next_step":"pick a db"}]"#,
    )
    .unwrap();
    let at = format!("@{}", file.display());
    let o = db.cli(&["--json", "board", "upsert", "p", "B", "--rows", &at]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "--json",
            "board",
            "upsert",
            "p",
            "B",
            "--version",
            "1",
            "--rows",
            "-",
        ])
        .env("HANDOFF_DB", &db.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"[{"label":"db","revision":1,"note":"from stdin"}]"#)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["board"]["rows"][0]["note"], "from stdin");

    let o = db.cli(&[
        "--json",
        "board",
        "advance",
        "B",
        "db",
        "--project",
        "p",
        "--revision",
        "2",
        "--version",
        "2",
        "--next-step",
        "create the schema",
        "--outcome",
        "chose SQLite",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let row = &json(&o)["board"]["rows"][0];
    assert_eq!(row["action_version"], 2);
    assert_eq!(row["history"][0]["outcome"], "chose SQLite");
    assert_eq!(row["next_step"], "create the schema");
}

#[tokio::test]
async fn bad_input_is_refused_with_a_clear_message_and_nothing_written() {
    let db = TempDb::new();
    let store = db.open().await;

    let o = db.cli(&["board", "upsert", "p", "B", "--rows", "[{\"label\":"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("--rows is not a valid JSON array"),
        "{}",
        stderr(&o)
    );
    let o = db.cli(&[
        "board",
        "upsert",
        "p",
        "B",
        "--rows",
        r#"[{"label":"a","colour":"red"}]"#,
    ]);
    assert_eq!(code(&o), 2, "unknown fields are refused");
    let o = db.cli(&[
        "board",
        "upsert",
        "p",
        "B",
        "--rows",
        r#"[{"label":"a","status":"later"}]"#,
    ]);
    assert_eq!(code(&o), 2);
    let o = db.cli(&["board", "upsert", "p", "", "--rows", "[]"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("title must not be empty"),
        "{}",
        stderr(&o)
    );
    let long = "x".repeat(121);
    let o = db.cli(&["board", "upsert", "p", &long]);
    assert_eq!(code(&o), 2);
    assert_eq!(count(&store, "boards").await, 0);
    assert_eq!(count(&store, "events").await, 0);

    // Unknown board → exit 4.
    let o = db.cli(&["board", "get", "nope"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(stderr(&o).contains("not found"));
    let o = db.cli(&["board", "annotate", "nope", "x", "hi"]);
    assert_eq!(code(&o), 4);

    // Stale version → exit 3 with the current versions; nothing written.
    let o = db.cli(&["board", "upsert", "p", "B", "--rows", r#"[{"label":"a"}]"#]);
    assert_eq!(code(&o), 0);
    let events = count(&store, "events").await;
    let o = db.cli(&[
        "board",
        "upsert",
        "p",
        "B",
        "--version",
        "7",
        "--rows",
        r#"[{"label":"a","revision":1,"status":"done"}]"#,
    ]);
    assert_eq!(code(&o), 3);
    let err = stderr(&o);
    assert!(
        err.contains("version 1") && err.contains("re-read with `handoff board get`"),
        "{err}"
    );
    let o = db.cli(&[
        "--json",
        "board",
        "row",
        "B",
        "a",
        "--project",
        "p",
        "--revision",
        "5",
        "--status",
        "done",
    ]);
    assert_eq!(code(&o), 3);
    let refusal = json(&o)["error"].clone();
    assert_eq!(refusal["reason"], "stale");
    assert_eq!(refusal["detail"]["refused"], "stale");
    assert_eq!(refusal["detail"]["rows"][0]["revision"], 1);
    let o = db.cli(&["board", "archive", "B", "--project", "p", "--version", "9"]);
    assert_eq!(code(&o), 3);
    let o = db.cli(&[
        "board",
        "advance",
        "B",
        "a",
        "--project",
        "p",
        "--revision",
        "1",
        "--version",
        "9",
        "--next-step",
        "x",
    ]);
    assert_eq!(code(&o), 3);
    let o = db.cli(&[
        "board",
        "annotate",
        "B",
        "a",
        "hi",
        "--project",
        "p",
        "--revision",
        "9",
    ]);
    assert_eq!(code(&o), 3);
    assert_eq!(count(&store, "events").await, events);
    let o = db.cli(&["--json", "board", "get", "B", "--project", "p"]);
    assert_eq!(json(&o)["board"]["rows"][0]["status"], "tracked");

    // Chat refusal through the hidden --via: an unread Inbox answer wins.
    assert_eq!(
        code(&db.cli(&[
            "board",
            "annotate",
            "B",
            "a",
            "inbox text",
            "--project",
            "p"
        ])),
        0
    );
    let o = db.cli(&[
        "board",
        "annotate",
        "B",
        "a",
        "chat text",
        "--project",
        "p",
        "--via",
        "chat",
    ]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("inbox text"), "{}", stderr(&o));
}
