//! Running the real `handoff serve` as a process against a fake Bot API.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

const SETPRIV: &str = "/usr/bin/setpriv";

/// What a test harness adds beside `HANDOFF_FAULT`: `serve` refuses to
/// start with a fault switch on unless a test says it set it.
pub const FAULTS_OK: (&str, &str) = ("HANDOFF_TEST_FAULTS_OK", "1");

/// A running daemon process; killed on drop.
pub struct Daemon {
    pub child: Child,
    pub addr: String,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Daemon {
    /// Start `handoff serve --config cfg --listen 127.0.0.1:0` on `db` and
    /// wait for its "serving on" line.
    pub fn start(db: &Path, cfg: &Path) -> Daemon {
        Self::start_with(db, cfg, &[])
    }

    pub fn start_with(db: &Path, cfg: &Path, env: &[(&str, &str)]) -> Daemon {
        Self::start_on(db, cfg, "127.0.0.1:0", env)
    }

    /// Start on `listen` (e.g. the address of a daemon that was killed, to
    /// restart it where its clients look).
    pub fn start_on(db: &Path, cfg: &Path, listen: &str, env: &[(&str, &str)]) -> Daemon {
        let cfg = cfg.to_str().expect("a UTF-8 config path");
        let db = db.to_str().expect("a UTF-8 database path");
        let mut all = vec![("HANDOFF_DB", db)];
        all.extend_from_slice(env);
        Self::spawn(None, &["serve", "--config", cfg, "--listen", listen], &all)
    }

    /// Start `handoff ARGS` (a `serve`) in `cwd` with `env` added, and wait
    /// for its "serving on" line.
    pub fn spawn(cwd: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        // A test killed from outside (a timeout in cargo-mutants or CI)
        // never runs Drop: where util-linux's setpriv exists, the kernel
        // kills the daemon when the thread that started it ends, so no
        // daemon outlives its test.
        let bin = env!("CARGO_BIN_EXE_handoff");
        let mut cmd = if Path::new(SETPRIV).exists() {
            let mut c = Command::new(SETPRIV);
            c.args(["--pdeathsig", "KILL", "--", bin]);
            c
        } else {
            Command::new(bin)
        };
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        cmd.args(args)
            .env_remove("HANDOFF_URL")
            .env("HANDOFF_LOG", "handoff=debug,warn")
            .env_remove("HANDOFF_TELEGRAM_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn handoff serve");
        let stderr = child.stderr.take().expect("stderr piped");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("serving on http://").nth(1)
                    && let Some(t) = tx.take()
                {
                    let _ = t.send(rest.split_whitespace().next().unwrap_or("").to_string());
                }
                log2.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("daemon did not start; log: {:#?}", log.lock().unwrap()));
        Daemon { child, addr, log }
    }

    /// Everything the daemon logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait; returns the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().expect("wait for daemon")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chat config for tests: chats given as (name, chat_id, answer ids,
/// approve ids), generous limits, short polls.
pub fn write_config(
    dir: &Path,
    api_url: &str,
    chats: &[(&str, i64, &[i64], &[i64])],
    extra: &str,
) -> PathBuf {
    let mut s = format!(
        "[telegram]\ntoken = \"123:TEST\"\napi_url = \"{api_url}\"\npoll_timeout_secs = 1\ndigest_threshold = 50\n\n[telegram.limits]\nper_chat_per_sec = 100\nper_chat_per_min = 6000\nper_group_per_min = 6000\noverall_per_sec = 100\n"
    );
    for (name, id, answer, approve) in chats {
        s.push_str(&format!(
            "\n[[telegram.chats]]\nname = \"{name}\"\nchat_id = {id}\nanswer = {answer:?}\napprove = {approve:?}\n"
        ));
    }
    s.push_str(extra);
    let p = dir.join("handoff.toml");
    std::fs::write(&p, s).unwrap();
    p
}
