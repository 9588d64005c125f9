//! Crash and recovery family: kill -9 mid-execution, a restart between
//! approve and claim, and the audit matching the status after each.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{TempDb, new_action};
use handoff::store::Store;
use handoff::store::actions::{Actor, Status};

/// Start `handoff args…` in its own process group (so kill -9 of the group
/// takes its command down with it, like a crashed machine would).
fn spawn_group(db: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(args)
        .env("HANDOFF_DB", db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn handoff")
}

fn kill_group(child: &mut Child) {
    let status = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let _ = child.wait();
}

/// Poll `cond` until it holds; panics after a generous bound (a hang guard,
/// not a timing assertion).
async fn until<F: AsyncFnMut() -> bool>(what: &str, mut cond: F) {
    let start = Instant::now();
    while !cond().await {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

async fn only_action(s: &Store) -> String {
    let list = s.list_actions(None).await.unwrap();
    assert_eq!(list.len(), 1);
    list[0].id.clone()
}

async fn events(s: &Store, id: &str) -> Vec<String> {
    s.action_audit(id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_execution_becomes_unknown_and_never_reruns() {
    let db = TempDb::new();
    let side = db.dir.path().join("side-effect.txt");
    let script = format!("echo ran >> '{}'; sleep 30", side.display());
    let mut child = spawn_group(
        &db.path,
        &[
            "propose",
            "--kind",
            "email.send",
            "--summary",
            "send it",
            "--args",
            r#"{"to":"bob"}"#,
            "--lease",
            "1s",
            "--exec",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let s = db.open().await;
    until("the proposal", async || {
        s.list_actions(None).await.unwrap().len() == 1
    })
    .await;
    let id = only_action(&s).await;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    until("the side effect", async || lines(&side) == 1).await;
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Executing);
    assert_eq!(events(&s, &id).await, ["proposed", "approved", "claimed"]);

    kill_group(&mut child);
    // Until the lease lapses, recovery must leave a live-looking executor alone.
    until("recovery to mark it unknown", async || {
        handoff::programs::recover(&s).await.unwrap();
        s.get_action(&id).await.unwrap().status == Status::Unknown
    })
    .await;
    assert_eq!(
        events(&s, &id).await,
        ["proposed", "approved", "claimed", "unknown"]
    );

    // Nothing re-runs it: not recovery through the CLI, not a second sweep.
    let out = db.cli(&["recover"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    handoff::programs::recover(&s).await.unwrap();
    assert_eq!(lines(&side), 1);
    let a = s.get_action(&id).await.unwrap();
    assert_eq!((a.status, a.attempts), (Status::Unknown, 1));
    assert_eq!(events(&s, &id).await.len(), 4);

    // A human decides; a retry is audited as a conscious choice.
    let out = db.cli(&["resolve-unknown", &id, "--retry", "--as", "carol"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let trail = s.action_audit(&id).await.unwrap();
    let last = trail.last().unwrap();
    assert_eq!(
        (last.event.as_str(), last.actor.as_str()),
        ("retry", "carol")
    );
    assert!(
        last.details["note"]
            .as_str()
            .unwrap()
            .contains("at-least-once")
    );
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Approved);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_but_unclaimed_survives_a_restart_and_executes_once() {
    let db = TempDb::new();
    let side = db.dir.path().join("side.txt");
    let id = {
        let s = db.open().await;
        let mut n = new_action("email.send", r#"{"to":"bob"}"#);
        n.exec = Some(vec![
            "sh".into(),
            "-c".into(),
            format!("cat >> '{}'; echo >> '{}'", side.display(), side.display()),
        ]);
        let id = s.propose(&n).await.unwrap().action.id;
        s.approve(&id, Actor::cli("alice"), None).await.unwrap();
        s.close().await;
        id
    };
    // "Restart": a fresh handle, then two recoverers racing.
    let s = db.open().await;
    let rep = handoff::programs::recover(&s).await.unwrap();
    assert_eq!(rep.claimable.len(), 1);
    let (a, b) = (
        std::thread::spawn({
            let p = db.path.clone();
            move || common::cli_at(&p, &["recover"])
        }),
        std::thread::spawn({
            let p = db.path.clone();
            move || common::cli_at(&p, &["recover"])
        }),
    );
    assert!(a.join().unwrap().status.success());
    assert!(b.join().unwrap().status.success());
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        "{\"to\":\"bob\"}\n",
        "ran once, with the real args on stdin"
    );
    let a = s.get_action(&id).await.unwrap();
    assert_eq!((a.status, a.attempts), (Status::Executed, 1));
    assert_eq!(
        events(&s, &id).await,
        ["proposed", "approved", "claimed", "executed"]
    );
    assert!(
        handoff::programs::recover(&s)
            .await
            .unwrap()
            .claimable
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_approve_and_claim_loses_nothing() {
    let db = TempDb::new();
    let side = db.dir.path().join("side.txt");
    let script = format!("echo \"$HANDOFF_ACTION_ID\" >> '{}'", side.display());
    // The proposer waits for a decision, and dies before it can claim.
    let mut child = spawn_group(
        &db.path,
        &[
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "ship",
            "--args",
            r#"{"v":"1.2"}"#,
            "--exec",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let s = db.open().await;
    until("the proposal", async || {
        s.list_actions(None).await.unwrap().len() == 1
    })
    .await;
    let id = only_action(&s).await;
    kill_group(&mut child);
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    assert_eq!(events(&s, &id).await, ["proposed", "approved"]);
    assert_eq!(lines(&side), 0);

    let out = db.cli(&["recover"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&side).unwrap().trim(),
        id,
        "the idempotency key reached the executor"
    );
    let out = db.cli(&["recover"]);
    assert!(out.status.success());
    assert_eq!(lines(&side), 1);
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Executed);
    assert_eq!(
        events(&s, &id).await,
        ["proposed", "approved", "claimed", "executed"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propose_exec_reports_the_command_status_and_rejection_exits_3() {
    let db = TempDb::new();
    let proposer = std::thread::spawn({
        let p = db.path.clone();
        move || {
            common::cli_at(
                &p,
                &[
                    "--json",
                    "propose",
                    "--kind",
                    "k",
                    "--summary",
                    "s",
                    "--args",
                    r#"{"n":1}"#,
                    "--exec",
                    "--",
                    "sh",
                    "-c",
                    "read x; echo \"got $x\"; exit 7",
                ],
            )
        }
    });
    let s = db.open().await;
    until("the proposal", async || {
        s.list_actions(None).await.unwrap().len() == 1
    })
    .await;
    let id = only_action(&s).await;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    let out = proposer.join().unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", common::stderr(&out));
    let a = s.get_action(&id).await.unwrap();
    assert_eq!(a.status, Status::Failed);
    assert_eq!(a.result.as_ref().unwrap()["exit_code"], 7);
    assert!(
        a.result.as_ref().unwrap()["stdout_tail"]
            .as_str()
            .unwrap()
            .contains("got {\"n\":1}")
    );

    let proposer = std::thread::spawn({
        let p = db.path.clone();
        move || {
            common::cli_at(
                &p,
                &[
                    "propose",
                    "--kind",
                    "k2",
                    "--summary",
                    "s",
                    "--exec",
                    "--",
                    "true",
                ],
            )
        }
    });
    until("the second proposal", async || {
        s.list_actions(Some(Status::Pending)).await.unwrap().len() == 1
    })
    .await;
    let id2 = s.list_actions(Some(Status::Pending)).await.unwrap()[0]
        .id
        .clone();
    s.reject(&id2, Actor::cli("bob"), "not today")
        .await
        .unwrap();
    let out = proposer.join().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        common::stderr(&out).contains("rejected by bob: not today"),
        "{}",
        common::stderr(&out)
    );
}

/// A `propose --exec` that finds its action run by another executor
/// follows that run; when the executor dies and the verifier sends the
/// action back for a re-run, the follower — which holds the command —
/// claims and runs it, instead of waiting forever for a re-run nobody
/// else would make (the agents that race claims are gone by then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_runs_the_rerun_a_verifier_sends_back() {
    use std::io::BufRead;
    let db = TempDb::new();
    let side = db.dir.path().join("side.txt");
    let run = format!("echo ran >> '{}'", side.display());
    let s = db.open().await;
    let mut n = new_action("deploy", r#"{"v":1}"#);
    n.summary = "ship it".into();
    n.dedup_key = Some("deploy-1".into());
    n.exec = Some(vec!["sh".into(), "-c".into(), run.clone()]);
    n.verify = Some(vec!["sh".into(), "-c".into(), "echo rerun".into()]);
    let id = s.propose(&n).await.unwrap().action.id;
    s.approve(&id, Actor::cli("alice"), None).await.unwrap();
    // Another executor claims it, then dies before running anything.
    assert!(matches!(
        s.claim(&id, "exec:ghost", 1_000).await.unwrap(),
        handoff::store::actions::ClaimOutcome::Claimed { .. }
    ));
    // The agent's retried proposal (the same dedup key) finds it executing.
    let mut proposer = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["propose", "--kind", "deploy", "--summary", "ship it"])
        .args(["--args", r#"{"v":1}"#, "--dedup-key", "deploy-1"])
        .args(["--project", "proj", "--session", "sess-1"])
        .args(["--exec", "--", "sh", "-c", &run])
        .args(["--verify", "--", "sh", "-c", "echo rerun"])
        .env("HANDOFF_DB", &db.path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let said = said.clone();
        let stderr = proposer.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                said.lock().unwrap().push_str(&(line + "\n"));
            }
        })
    };
    let start = Instant::now();
    while !said.lock().unwrap().contains("being executed elsewhere") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the proposer did not follow the run: {}",
            said.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The ghost's lease lapses; recovery asks the verifier, which sends
    // it back for a re-run (and runs nothing itself: --no-run).
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let rec = common::cli_at(&db.path, &["recover", "--no-run"]);
    assert!(rec.status.success(), "{}", common::stderr(&rec));
    assert_eq!(s.get_action(&id).await.unwrap().status, Status::Approved);
    until("the follower to run the re-run", async || {
        s.get_action(&id).await.unwrap().status == Status::Executed
    })
    .await;
    let status = proposer.wait().unwrap();
    reader.join().unwrap();
    let said = said.lock().unwrap().clone();
    assert!(
        status.success(),
        "the follower's own run exits 0: {status}\n{said}"
    );
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "ran\n", "once");
    let a = s.get_action(&id).await.unwrap();
    assert_eq!(a.attempts, 2, "{a:?}");
    assert!(
        a.owner
            .as_deref()
            .is_some_and(|o| o.starts_with("exec:") && o != "exec:ghost")
    );
}
