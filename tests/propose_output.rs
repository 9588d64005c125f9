//! `propose --exec` says what it is doing and keeps stdout for the command
//! alone: a waiting line on stderr, the command's own
//! output alone on stdout, handoff's summary on stderr. A command that
//! cannot start fails in one line; a run held by another executor is
//! followed, not repeated.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::{TempDb, stderr, stdout};
use handoff::store::actions::{Actor, ClaimOutcome, NewAction, Status};
use serde_json::json;

#[tokio::test]
async fn propose_exec_waits_out_loud_and_leaves_stdout_to_the_command() {
    let db = TempDb::new();
    db.open().await.close().await;
    let path = db.path.clone();
    let proposer = std::thread::spawn(move || {
        common::cli_at(
            &path,
            &[
                "propose",
                "--kind",
                "report.send",
                "--summary",
                "Send the report",
                "--exec",
                "--",
                "sh",
                "-c",
                "echo CMD-OUT",
            ],
        )
    });
    let s = db.open().await;
    let id = wait_for_proposal(&s).await;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    let out = proposer.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "CMD-OUT\n", "stdout is the command's alone");
    let err = stderr(&out);
    assert!(err.contains("waiting for a decision on"), "{err}");
    assert!(
        err.contains("never expires"),
        "no --ttl is said out loud: {err}"
    );
    assert!(err.contains("executed"), "the summary is on stderr: {err}");
}

/// A command that cannot be started is recorded failed and ends `propose`
/// with exit 1 and one line saying what could not run.
#[tokio::test]
async fn propose_exec_of_a_missing_command_fails_in_one_line() {
    let db = TempDb::new();
    db.open().await.close().await;
    let path = db.path.clone();
    let proposer = std::thread::spawn(move || {
        common::cli_at(
            &path,
            &[
                "propose",
                "--kind",
                "report.send",
                "--summary",
                "Send the report",
                "--exec",
                "--",
                "/nonexistent/handoff-test-command",
            ],
        )
    });
    let s = db.open().await;
    let id = wait_for_proposal(&s).await;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    let out = proposer.join().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "nothing ran, so stdout stays empty");
    let err = stderr(&out);
    assert!(
        err.contains("cannot run /nonexistent/handoff-test-command"),
        "{err}"
    );
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Failed);
}

/// A retried `propose --exec` of an action another executor is running
/// does not run it again: it says so, follows that run and reports how it
/// ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propose_exec_follows_a_run_held_elsewhere() {
    let db = TempDb::new();
    let s = db.open().await;
    let argv = ["sh", "-c", "echo RAN-HERE"];
    let new = NewAction {
        kind: "report.send".into(),
        summary: "Send the report".into(),
        dedup_key: Some("weekly".into()),
        exec: Some(argv.iter().map(|w| w.to_string()).collect()),
        ..NewAction::default()
    };
    let id = s.propose(&new).await.unwrap().action.id;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert!(matches!(
        s.claim(&id, "other-executor", 60_000).await.unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args([
            "propose",
            "--kind",
            "report.send",
            "--summary",
            "Send the report",
        ])
        // The project the store-side proposal above has (none).
        .args(["--project", "", "--dedup-key", "weekly", "--exec", "--"])
        .args(argv)
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The positive signal that it is following: its line on stderr.
    let mut err_lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut err = String::new();
    for line in err_lines.by_ref() {
        let line = line.unwrap();
        err += &line;
        err.push('\n');
        if line.contains("is being executed elsewhere; waiting for its result") {
            break;
        }
    }
    assert!(err.contains("executed elsewhere"), "{err}");
    s.complete(&id, "other-executor", true, json!({"exit_code": 0}), None)
        .await
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    let shown = stdout(&out);
    assert!(
        !shown.contains("RAN-HERE"),
        "the command ran again: {shown}"
    );
    assert!(shown.contains("status:    executed"), "{shown}");
}

async fn wait_for_proposal(s: &handoff::store::Store) -> String {
    common::wait_for(30, "the proposal", || {
        let s = s.clone();
        async move {
            s.list_action_summaries(None, None)
                .await
                .unwrap()
                .first()
                .map(|a| a.id.clone())
        }
    })
    .await
}
