//! `propose --exec` says what it is doing and keeps stdout for the command
//! (issue 16, finding 6): a waiting line on stderr, the command's own
//! output alone on stdout, handoff's summary on stderr.

mod common;

use common::{TempDb, stderr, stdout};
use handoff::store::actions::Actor;

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
    let id = common::wait_for(30, "the proposal", || {
        let s = s.clone();
        async move {
            s.list_action_summaries(None, None)
                .await
                .unwrap()
                .first()
                .map(|a| a.id.clone())
        }
    })
    .await;
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
