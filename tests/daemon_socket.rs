//! The local daemon as the one writer: with `handoff
//! serve` running on a database, the real CLI sends its calls to the
//! daemon's owner-only socket next to the file; with the daemon down, hung
//! or killed mid-call, the same call completes through the file — same
//! output, same exit code, nothing written twice.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::daemon::{Daemon, FAULTS_OK};
use common::{TempDb, count, stdout, wait_for};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn config(db: &TempDb) -> PathBuf {
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "").unwrap();
    cfg
}

fn socket(db: &TempDb) -> PathBuf {
    handoff::store::socket_path(&db.path)
}

/// The daemon on `db`, once its socket answers.
async fn daemon(db: &TempDb, env: &[(&str, &str)]) -> Daemon {
    let d = Daemon::start_with(&db.path, &config(db), env);
    let path = socket(db);
    wait_for(20, "the daemon's socket", || async {
        get(&path, "/healthz")
            .await
            .filter(|b| b.contains("\"ok\":true"))
    })
    .await;
    d
}

/// `GET path` over the Unix socket; the response (head and body).
async fn get(socket: &Path, path: &str) -> Option<String> {
    let mut s = tokio::net::UnixStream::connect(socket).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    Some(out)
}

/// How many responses the daemon has sent for routes under `/v1/` (its
/// own counter, read through the socket).
async fn api_responses(db: &TempDb) -> u64 {
    let text = get(&socket(db), "/metrics").await.expect("metrics");
    text.lines()
        .filter(|l| l.starts_with("handoff_http_responses_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// `handoff ARGS` on `db`, with `env` added.
fn cli(db: &TempDb, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
    c.args(args)
        .env("HANDOFF_DB", &db.path)
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .env_remove("HANDOFF_SOCKET")
        .env("HANDOFF_USER", "alice");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run handoff")
}

/// Output with ids and times blanked, for comparing two databases' runs.
fn shape(o: &Output) -> (Option<i32>, String) {
    let text = format!("{}{}", stdout(o), String::from_utf8_lossy(&o.stderr));
    let mut out = String::new();
    let mut word = String::new();
    let flush = |w: &mut String, out: &mut String| {
        // A short id may end a word (`f5f2cfcb:`): the punctuation stays.
        let core = w.trim_end_matches([':', '.', '-']);
        let tail = w[core.len()..].to_string();
        let hexy = core.len() >= 8 && core.chars().all(|c| c.is_ascii_hexdigit());
        if hexy {
            out.push_str("<id>");
            out.push_str(&tail);
            w.clear();
            return;
        }
        let timey = w.chars().filter(|c| c.is_ascii_digit()).count() >= 4
            && w.chars().any(|c| c == ':' || c == '-' || c == 'T');
        out.push_str(if timey { "<time>" } else { w });
        w.clear();
    };
    for ch in text.chars() {
        if ch.is_alphanumeric() || ch == ':' || ch == '-' || ch == '.' {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    (o.status.code(), out)
}

/// The id a `--json` command printed.
fn id_of(o: &Output) -> String {
    assert!(o.status.success(), "{}", common::stderr(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v["id"]
        .as_str()
        .or_else(|| v["action"]["id"].as_str())
        .or_else(|| v["question"]["id"].as_str())
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_string()
}

/// One scenario of questions and actions, every step's shape.
fn scenario(db: &TempDb, env: &[(&str, &str)]) -> Vec<(Option<i32>, String)> {
    let mut seen = Vec::new();
    let mut run = |args: &[&str]| {
        let o = cli(db, env, args);
        seen.push(shape(&o));
        o
    };
    let q = id_of(&run(&["ask", "Ship it?", "--project", "p", "--json"]));
    run(&["reply", &q, "yes, ship"]);
    run(&["reply", &q, "stale", "--revision", "1"]);
    run(&["pending", "--project", "p"]);
    run(&["resolve", &q, "--outcome", "shipped"]);
    let a = id_of(&run(&[
        "propose",
        "--kind",
        "deploy",
        "--summary",
        "Deploy 1.2",
        "--approvals",
        "2",
        "--json",
    ]));
    run(&["approve", &a, "--as", "bob"]);
    run(&["approve", &a, "--as", "bob"]);
    run(&["approve", &a, "--as", "carol"]);
    run(&["reject", &a, "--reason", "too late", "--as", "dave"]);
    run(&["approve", "no-such-id", "--as", "bob"]);
    run(&["actions"]);
    run(&["audit", &a]);
    seen
}

#[tokio::test]
async fn cli_calls_go_through_the_daemon_socket_and_print_what_the_file_prints() {
    let (served, plain) = (TempDb::new(), TempDb::new());
    let _d = daemon(&served, &[]).await;
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(socket(&served)).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the socket is for its owner only");
    let before = api_responses(&served).await;
    let through_daemon = scenario(&served, &[]);
    let after = api_responses(&served).await;
    // Every write and read of the scenario went to the daemon.
    assert!(
        after >= before + through_daemon.len() as u64,
        "the daemon answered {} calls for {} commands",
        after - before,
        through_daemon.len()
    );
    let through_file = scenario(&plain, &[("HANDOFF_SOCKET", "off")]);
    let codes: Vec<_> = through_daemon.iter().map(|(c, _)| *c).collect();
    assert!(codes.contains(&Some(0)) && codes.contains(&Some(3)) && codes.contains(&Some(4)));
    for (i, (d, f)) in through_daemon.iter().zip(&through_file).enumerate() {
        assert_eq!(d, f, "step {i}: through the daemon vs the file");
    }
}

#[tokio::test]
async fn a_daemon_killed_after_committing_a_call_does_not_get_it_applied_twice() {
    let db = TempDb::new();
    let mut d = daemon(&db, &[("HANDOFF_FAULT", "die-after-write"), FAULTS_OK]).await;
    // Proposed through the daemon: it commits, then dies before answering;
    // the CLI repeats the call through the file and gets the first outcome.
    // A wide probe: on a loaded machine 50 ms can pass before the daemon
    // answers, and the call would go to the file without reaching it.
    let through = [("HANDOFF_SOCKET_PROBE_MS", "5000")];
    let o = cli(
        &db,
        &through,
        &[
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "Deploy",
            "--json",
        ],
    );
    let a = id_of(&o);
    let exited = exit_of(&mut d.child);
    assert!(!exited.success(), "the fault killed the daemon mid-call");
    let store = db.open().await;
    assert_eq!(count(&store, "actions").await, 1, "proposed once");
    // Approved through a daemon that dies the same way: "approved", not
    // "already approved by alice", and one approval in the audit.
    drop(d);
    let mut d = daemon(&db, &[("HANDOFF_FAULT", "die-after-write"), FAULTS_OK]).await;
    let o = cli(&db, &through, &["approve", &a, "--as", "bob"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(stdout(&o).contains("approved"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("already"), "{}", stdout(&o));
    assert!(!exit_of(&mut d.child).success(), "the daemon died mid-call");
    assert_eq!(count(&store, "action_approvals").await, 1, "approved once");
    let audit = cli(&db, &[], &["audit", &a, "--json"]);
    let n = stdout(&audit).matches("\"approved\"").count();
    assert_eq!(n, 1, "one approved entry: {}", stdout(&audit));
}

/// The daemon's exit, waited for at most 30 s: a call that never reached
/// it leaves it running, which must fail the test rather than hang it.
fn exit_of(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("the daemon") {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon is still running: the call did not go through its socket"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_hung_daemon_is_passed_by_within_the_probe() {
    let db = TempDb::new();
    let d = daemon(&db, &[]).await;
    let pid = d.child.id().to_string();
    let stop = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
    };
    assert!(stop("-STOP").success());
    // The daemon accepts (the kernel does) but never answers: the CLI uses
    // the file, with the same output it would print either way.
    let o = cli(&db, &[], &["ask", "Hung?", "--project", "p"]);
    assert!(stop("-CONT").success());
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(stdout(&o).starts_with("asked "), "{}", stdout(&o));
    let store = db.open().await;
    assert_eq!(count(&store, "questions").await, 1);
}

#[tokio::test]
async fn a_dead_daemons_socket_is_passed_by_and_replaced_by_the_next_daemon() {
    let db = TempDb::new();
    let mut d = daemon(&db, &[]).await;
    d.kill9();
    assert!(socket(&db).exists(), "kill -9 leaves the socket file");
    let o = cli(&db, &[], &["ask", "After the crash?", "--project", "p"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let _d = daemon(&db, &[]).await;
    let before = api_responses(&db).await;
    let o = cli(&db, &[], &["questions", "--project", "p"]);
    assert!(stdout(&o).contains("After the crash?"), "{}", stdout(&o));
    assert!(
        api_responses(&db).await > before,
        "the new daemon took the socket"
    );
}
