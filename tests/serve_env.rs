//! What the environment may change in the real binary, and what it may
//! not do quietly: a fault switch (`HANDOFF_FAULT`, test-only) is logged as
//! an error by every command and stops `serve` unless a test harness also
//! set `HANDOFF_TEST_FAULTS_OK=1`; the timing settings (`HANDOFF_LEASE_MS`,
//! `HANDOFF_WATCH_FALLBACK_MS`, `HANDOFF_SOCKET_PROBE_MS`) are refused by
//! any command outside their bounds with one line naming the variable and
//! the bounds.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::daemon::Daemon;
use common::{TempDb, stderr};

/// `handoff serve` on `db` with `env`, expected to refuse to start: its
/// output once it exits, or a failure naming what it logged if it is
/// still serving after 20 s.
fn serve_refused(db: &TempDb, env: &[(&str, &str)]) -> Output {
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_handoff"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&cfg)
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TELEGRAM_TOKEN")
        .env_remove("HANDOFF_FAULT")
        .env_remove("HANDOFF_TEST_FAULTS_OK")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn handoff serve");
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("poll handoff serve").is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect handoff serve");
            panic!(
                "`handoff serve` with {env:?} is still serving after 20 s; it logged:\n{}",
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("collect handoff serve")
}

/// The one `handoff: …` line of a refusal, checked to name every `words`.
fn assert_refused(out: &Output, words: &[&str]) {
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit code; stderr:\n{}",
        stderr(out)
    );
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("handoff: ")).collect();
    assert_eq!(lines.len(), 1, "one refusal line:\n{err}");
    for w in words {
        assert!(lines[0].contains(w), "{w:?} missing from {:?}", lines[0]);
    }
    assert!(!err.contains("serving on"), "it served:\n{err}");
}

#[test]
fn serve_refuses_a_fault_switch_without_the_test_opt_in() {
    let db = TempDb::new();
    let out = serve_refused(&db, &[("HANDOFF_FAULT", "drop-edit")]);
    assert_refused(
        &out,
        &["HANDOFF_FAULT=drop-edit", "HANDOFF_TEST_FAULTS_OK=1"],
    );
    // Logged as an error too, before the refusal.
    assert!(stderr(&out).contains("ERROR"), "{}", stderr(&out));
    // Only `1` opts in.
    let out = serve_refused(
        &db,
        &[
            ("HANDOFF_FAULT", "drop-edit"),
            ("HANDOFF_TEST_FAULTS_OK", "yes"),
        ],
    );
    assert_refused(&out, &["HANDOFF_FAULT=drop-edit"]);
}

#[test]
fn a_fault_switch_a_test_opted_into_is_logged_as_an_error_at_start() {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let d = Daemon::start_with(
        &db.path,
        &cfg,
        &[
            ("HANDOFF_FAULT", "drop-edit, skip-event"),
            ("HANDOFF_TEST_FAULTS_OK", "1"),
        ],
    );
    let log = d.log();
    let line = log
        .lines()
        .find(|l| l.contains("HANDOFF_FAULT is set"))
        .unwrap_or_else(|| panic!("no line about the switch in:\n{log}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("drop-edit,skip-event"), "{line}");
}

#[test]
fn a_one_shot_command_with_a_fault_switch_says_so_and_runs() {
    let db = TempDb::new();
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["questions"])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_FAULT", "skip-recovery")
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TEST_FAULTS_OK")
        .output()
        .expect("run handoff questions");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.contains("ERROR") && l.contains("HANDOFF_FAULT is set")),
        "{err}"
    );
}

#[test]
fn serve_refuses_timing_settings_outside_their_bounds() {
    let db = TempDb::new();
    for (var, value, bounds) in [
        ("HANDOFF_LEASE_MS", "30", "1000-60000"),
        ("HANDOFF_LEASE_MS", "600000", "1000-60000"),
        ("HANDOFF_LEASE_MS", "soon", "1000-60000"),
        ("HANDOFF_WATCH_FALLBACK_MS", "0", "100-3600000"),
        ("HANDOFF_WATCH_FALLBACK_MS", "5", "100-3600000"),
    ] {
        let out = serve_refused(&db, &[(var, value)]);
        assert_refused(&out, &[&format!("{var}={value}"), bounds]);
    }
}

#[test]
fn a_command_refuses_timing_settings_outside_their_bounds() {
    let db = TempDb::new();
    for (var, value, bounds) in [
        ("HANDOFF_SOCKET_PROBE_MS", "0", "10-10000"),
        ("HANDOFF_SOCKET_PROBE_MS", "60000", "10-10000"),
        ("HANDOFF_SOCKET_PROBE_MS", "fast", "10-10000"),
        // A command waiting on PostgreSQL polls at the fallback too.
        ("HANDOFF_WATCH_FALLBACK_MS", "5", "100-3600000"),
        ("HANDOFF_LEASE_MS", "30", "1000-60000"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
            .args(["questions"])
            .env("HANDOFF_DB", &db.path)
            .env(var, value)
            .env_remove("HANDOFF_URL")
            .output()
            .expect("run handoff questions");
        assert_refused(&out, &[&format!("{var}={value}"), bounds]);
    }
}

#[test]
fn timing_settings_inside_their_bounds_are_taken() {
    let db = TempDb::new();
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    let _d = Daemon::start_with(
        &db.path,
        &cfg,
        &[
            ("HANDOFF_LEASE_MS", "1000"),
            ("HANDOFF_WATCH_FALLBACK_MS", "3600000"),
        ],
    );
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["questions"])
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_SOCKET_PROBE_MS", "10000")
        .env_remove("HANDOFF_URL")
        .output()
        .expect("run handoff questions");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
