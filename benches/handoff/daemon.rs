//! Rows that need the real `handoff serve` process (part of the `wake`
//! section):
//!
//! - `cross_process`: from an answer committed by another process (this
//!   bench, on its own store handle) to the session's exec wake target
//!   starting in the daemon. The daemon only learns of the write by looking
//!   at the database: this is the path a CLI or MCP writer takes.
//! - `idle_cpu`: the CPU a `handoff serve` with chat off uses while nothing
//!   happens, from utime + stime in `/proc/<pid>/stat` before and after the
//!   window (the kernel counts them in clock ticks, usually 10 ms).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use handoff::store::Store;
use handoff::store::questions::{NewQuestion, NewReply};
use handoff::store::sessions::{NewSession, WakeTarget};

use crate::{Table, pct};

/// A `handoff serve` on `db` with an empty config (chat off); killed on drop.
pub(crate) struct Serve {
    child: Child,
    /// Where it listens (`127.0.0.1:PORT`), from its "serving on" line.
    pub(crate) addr: String,
}

impl Serve {
    /// Start it on the file `db` (its config, empty, beside it).
    fn start(db: &Path) -> Serve {
        let cfg = db.with_extension("toml");
        std::fs::write(&cfg, "").expect("write config");
        Serve::start_on(db.as_os_str(), &cfg)
    }

    /// Start it on `db` (a file or a `postgres://` URL) with the config
    /// `cfg`, and wait for its "serving on" line.
    pub(crate) fn start_on(db: &OsStr, cfg: &Path) -> Serve {
        // `HANDOFF_BENCH_BIN` may name another build, to compare two in turns.
        let mut child = Command::new(crate::prompt::binary())
            .args(["serve", "--config"])
            .arg(cfg)
            .args(["--listen", "127.0.0.1:0"])
            .env("HANDOFF_DB", db)
            .env("HANDOFF_LOG", "warn")
            .env_remove("HANDOFF_TELEGRAM_TOKEN")
            .env_remove("HANDOFF_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn handoff serve");
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, rx) = std::sync::mpsc::channel();
        // Drained to the end, so the daemon never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("serving on http://").nth(1)
                    && let Some(t) = tx.take()
                {
                    let addr = rest.split_whitespace().next().unwrap_or("");
                    let _ = t.send(addr.to_string());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("handoff serve did not start");
        Serve { child, addr }
    }

    /// utime + stime so far, in clock ticks.
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .expect("read /proc/<pid>/stat");
        // The fields after the command name, which is in parentheses and
        // may contain spaces: state is field 3, utime 14 and stime 15.
        let rest = &stat[stat.rfind(')').expect("stat has a command") + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux).
fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

pub async fn idle_cpu(quick: bool, t: &mut Table) {
    let window = Duration::from_secs(if quick { 5 } else { 20 });
    let dir = tempfile::tempdir().expect("temp dir");
    let daemon = Serve::start(&dir.path().join("idle.db"));
    // Start-up work (recovery, the first reads) is not idling.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = daemon.cpu_ticks();
    tokio::time::sleep(window).await;
    let used = (daemon.cpu_ticks() - before) as f64 / clk_tck();
    t.row(
        "daemon",
        format!(
            "idle `handoff serve`, chat off: CPU over {} s (utime + stime), % of one core",
            window.as_secs()
        ),
        format!(
            "{:.2} % ({:.0} ms)",
            used / window.as_secs_f64() * 100.0,
            used * 1e3
        ),
    );
}

pub async fn cross_process(quick: bool, t: &mut Table) {
    let n = if quick { 20 } else { 200 };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("cross.db");
    let store = Store::open(&db).await.expect("open store");
    let out = dir.path().join("woken");
    std::fs::create_dir(&out).expect("out dir");
    let script = format!("date +%s%N > {}/$HANDOFF_EVENT_ID", out.display());
    store
        .register_session(&NewSession {
            session_id: "bench".into(),
            agent: "bench".into(),
            project: "bench".into(),
            cwd: "/tmp".into(),
            wake_target: Some(WakeTarget::Exec {
                argv: vec!["/bin/sh".into(), "-c".into(), script],
                timeout_secs: Some(10),
            }),
        })
        .await
        .expect("register");
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let f = store
            .flag(&NewQuestion {
                project: "bench".into(),
                agent: "bench".into(),
                session: "bench".into(),
                title: format!("question {i}"),
                ..Default::default()
            })
            .await
            .expect("flag");
        ids.push(f.question.id);
    }
    let _daemon = Serve::start(&db);
    let mut lat = Vec::with_capacity(n);
    for (i, id) in ids.iter().enumerate() {
        // Vary the phase, so answers land at every point of any poll cycle.
        tokio::time::sleep(Duration::from_millis((i as u64 * 7) % 31)).await;
        let reply = NewReply {
            text: "yes".into(),
            by: "bench".into(),
            ..Default::default()
        };
        store
            .reply_chat(id, &reply)
            .await
            .expect("reply")
            .expect("accepted");
        let committed = crate::wake::now_ns();
        let seq = store.last_event_seq().await.expect("seq");
        let file = out.join(format!("evt_{seq}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        let started: i128 = loop {
            if let Ok(t) = std::fs::read_to_string(&file)
                && let Ok(ns) = t.trim().parse::<i128>()
            {
                break ns;
            }
            assert!(Instant::now() < deadline, "no wake-up for evt_{seq}");
            tokio::time::sleep(Duration::from_micros(500)).await;
        };
        lat.push((started - committed) as f64 / 1e6);
    }
    store.close().await;
    lat.sort_by(f64::total_cmp);
    t.row(
        "wake",
        format!(
            "answer written by another process → exec wake target started in `handoff serve` ({n} answers), p50 / p99"
        ),
        format!("{:.1} / {:.1} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}

/// The peer's contended shape with 8 approvers as 8 separate `handoff
/// approve` processes per action, through the local daemon's socket and,
/// for comparison, through the file (`HANDOFF_SOCKET=off`) with the daemon
/// still running: exactly one approval wins each action.
pub async fn cli_approvers(quick: bool, t: &mut Table) {
    let m = if quick { 10 } else { 50 };
    for (how, socket) in [
        ("through the daemon's socket", true),
        ("through the file", false),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("cli.db");
        let ids = {
            let store = Store::open(&db).await.expect("open");
            let mut ids = Vec::new();
            for i in 0..m {
                let new = handoff::store::actions::NewAction {
                    kind: "bench".into(),
                    summary: format!("action {i}"),
                    args: format!(r#"{{"i":{i}}}"#),
                    proposer: "agent".into(),
                    ..Default::default()
                };
                ids.push(store.propose(&new).await.expect("propose").action.id);
            }
            store.close().await;
            ids
        };
        let _daemon = Serve::start(&db);
        let sock = handoff::store::socket_path(&db);
        let ready = Instant::now();
        while !sock.exists() && ready.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let started = Instant::now();
        let mut won = 0;
        for id in &ids {
            let runs: Vec<_> = (0..8)
                .map(|k| {
                    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
                    c.args(["approve", id, "--as", &format!("approver-{k}")])
                        .env("HANDOFF_DB", &db)
                        .env("HANDOFF_LOG", "warn")
                        .env_remove("HANDOFF_URL")
                        .env("HANDOFF_SOCKET", if socket { "on" } else { "off" })
                        .stdin(Stdio::null());
                    c.output()
                })
                .collect();
            for out in futures_util::future::join_all(runs).await {
                let out = out.expect("run handoff approve");
                if out.status.success() {
                    won += 1;
                }
            }
        }
        let rate = m as f64 / started.elapsed().as_secs_f64();
        assert_eq!(won, m, "exactly one approval wins each action");
        t.row(
            "actions",
            format!("contended, 8 approvers as 8 `handoff approve` processes per action, {how} ({m} actions, one winner each)"),
            format!("{} actions/s", crate::thousands(rate)),
        );
    }
}
