//! Remote calls survive what a daemon does in real life: a restart does
//! not end a remote `wait --session` (reads and long polls retry while the
//! daemon is unreachable), and a daemon that accepts a connection but never
//! answers costs `HANDOFF_TIMEOUT`, not a minute, with a message saying so
//! (and, for a write, that it may have been applied).

mod common;
mod remote_support;

use std::io::Read;
use std::process::{Command, Stdio};

use common::TempDb;
use common::daemon::Daemon;
use remote_support::token;

fn handoff() -> Command {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
}

#[test]
fn a_remote_wait_outlives_a_daemon_restart() {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let tok = token(&db.path, "tester", "admin");
    let mut d = Daemon::start(&db.path, &cfg);
    let addr = d.addr.clone();
    let url = format!("http://{addr}");
    let ask = |title: &str| {
        let out = handoff()
            .args(["ask", title, "--session", "s-restart", "--json"])
            .env("HANDOFF_URL", &url)
            .env("HANDOFF_TOKEN", &tok)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["question"]["id"].as_str().unwrap().to_string()
    };
    let id = ask("Keep going?");

    // The agent waits through the daemon.
    let mut waiter = handoff()
        .args([
            "wait",
            "--session",
            "s-restart",
            "--timeout",
            "120s",
            "--json",
        ])
        .env("HANDOFF_URL", &url)
        .env("HANDOFF_TOKEN", &tok)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Give its long poll a moment to be in flight (if it is not yet, its
    // first request meets the dead daemon instead: the same retry path)…
    std::thread::sleep(std::time::Duration::from_millis(500));
    // …then the daemon dies and comes back on the same address.
    d.kill9();
    let d2 = Daemon::start_on(&db.path, &cfg, &addr, &[]);

    // A human answers (through the new daemon); the waiter gets it.
    let out = handoff()
        .args(["reply", &id, "yes", "--json"])
        .env("HANDOFF_URL", format!("http://{}", d2.addr))
        .env("HANDOFF_TOKEN", &tok)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let status = waiter.wait().unwrap();
    let mut stdout = String::new();
    waiter
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut stderr = String::new();
    waiter
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "wait ended {status:?}: {stderr}");
    assert!(
        stdout.contains("yes"),
        "the answer reached the waiter: {stdout}"
    );
}

#[test]
fn a_daemon_that_never_answers_costs_handoff_timeout_and_says_so() {
    // Accepts connections and reads, never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in silent.incoming().map_while(Result::ok) {
            held.push(c);
        }
    });
    let url = format!("http://{addr}");
    let run = |args: &[&str]| {
        let out = handoff()
            .args(args)
            .env("HANDOFF_URL", &url)
            .env("HANDOFF_TOKEN", "hnd_x")
            .env("HANDOFF_TIMEOUT", "1s")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["questions"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("within 1s"), "{err}");
    assert!(err.contains("HANDOFF_TIMEOUT"), "how to wait longer: {err}");
    // A write that got no answer may have happened: say so.
    let (code, err) = run(&["ask", "Anyone there?"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("may or may not have been made"), "{err}");
    // A bad setting is refused in words.
    let out = handoff()
        .args(["questions"])
        .env("HANDOFF_URL", &url)
        .env("HANDOFF_TIMEOUT", "soon")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HANDOFF_TIMEOUT `soon`"), "{err}");
}
