//! Prompt → chat message visible (the `prompt`
//! section): a real `handoff serve` with chat on against the fake Bot API,
//! and for each of N Claude Code permission prompts, the time from
//! spawning `handoff hook claude` with the PermissionRequest on stdin until
//! the fake Bot API takes the `sendMessage` that shows it. That is the whole
//! path a person waits on: the hook's process start, its probe of the
//! daemon's socket, the propose through it, the daemon's follower seeing
//! the action, and the push over loopback HTTP.
//!
//! No `[[rule]]` decides these prompts, so each waits in chat; once its
//! message is out the bench stops the hook with SIGTERM, as Claude Code does
//! when the prompt is answered at the terminal, and waits for it to settle
//! and exit before the next prompt, so the prompts never overlap. The
//! Telegram limits are raised: this times the path, not the pacing the
//! daemon applies to a chat that gets more than one message a second.
//! Prompts start [`APART`] after the previous one's last Bot API call, as a
//! person's prompts do: the Bot API client's throttle (teloxide's) sleeps
//! 250 ms after every round of requests it lets through, so a prompt right
//! behind the previous one's message edit waits out that sleep (about
//! 240 ms of a back-to-back prompt's time, measured with this bench).
//!
//! `HANDOFF_BENCH_BIN` names another `handoff` binary to run instead of the
//! one this bench was built with, so two builds can be compared in turns on
//! a busy machine (the measured path is all in those processes; the bench
//! only stamps the fake's calls).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use handoff::store::Store;
use tokio::io::AsyncWriteExt;

use crate::fake_telegram::FakeTelegram;
use crate::{Table, ms, pct};

const CHAT: i64 = 111;

/// The quiet time before each prompt: longer than teloxide's throttle
/// round (250 ms), so every prompt finds it idle.
const APART: Duration = Duration::from_millis(300);

/// The `handoff` binary to run: `HANDOFF_BENCH_BIN`, else this build's
/// (also for the daemon rows of `daemon.rs`).
pub(crate) fn binary() -> PathBuf {
    std::env::var_os("HANDOFF_BENCH_BIN")
        .filter(|v| !v.is_empty())
        .map_or_else(|| env!("CARGO_BIN_EXE_handoff").into(), PathBuf::from)
}

/// A `handoff serve` on `db` with `cfg`; killed on drop.
struct Serve(std::process::Child);

impl Serve {
    /// Start it and wait for its "serving on" line.
    fn start(db: &Path, cfg: &Path) -> Serve {
        let mut child = std::process::Command::new(binary())
            .args(["serve", "--config"])
            .arg(cfg)
            .args(["--listen", "127.0.0.1:0"])
            .env("HANDOFF_DB", db)
            .env("HANDOFF_LOG", "warn,handoff=info")
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
                if line.contains("serving on")
                    && let Some(t) = tx.take()
                {
                    let _ = t.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(30))
            .expect("handoff serve did not start");
        Serve(child)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A PermissionRequest for the Bash command `command`, as Claude Code sends it.
fn event(command: &str, i: usize) -> String {
    serde_json::json!({
        "session_id": "bench", "transcript_path": "/t", "cwd": "/w",
        "permission_mode": "default", "hook_event_name": "PermissionRequest",
        "tool_name": "Bash", "tool_input": {"command": command},
        "tool_use_id": format!("t{i}"),
    })
    .to_string()
}

/// One prompt: spawn the hook, wait for its message, stop the hook.
/// Returns spawn → the fake took the `sendMessage`.
async fn one(fake: &FakeTelegram, db: &Path, cfg: &Path, i: usize) -> Duration {
    // Ended, so prompt 1's marker is no prefix of prompt 10's.
    let marker = format!("bench-prompt-{i}-end");
    let input = event(&format!("echo {marker}"), i);
    let started = Instant::now();
    let mut hook = tokio::process::Command::new(binary())
        .args(["hook", "claude", "--timeout", "60s"])
        .env("HANDOFF_DB", db)
        .env("HANDOFF_CONFIG", cfg)
        .env("HANDOFF_LOG", "warn")
        .env_remove("HANDOFF_URL")
        .env_remove("HANDOFF_TOKEN")
        .env_remove("HANDOFF_PROJECT")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("HANDOFF_SOCKET")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn handoff hook claude");
    let mut stdin = hook.stdin.take().expect("stdin piped");
    stdin
        .write_all(input.as_bytes())
        .await
        .expect("write the event");
    drop(stdin);
    let sent = loop {
        let hit = fake
            .calls("sendmessage")
            .into_iter()
            .find(|c| c.body["text"].as_str().is_some_and(|t| t.contains(&marker)));
        if let Some(c) = hit {
            break c.at;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = hook.start_kill();
            panic!("prompt {i}: no message in chat within 30 s");
        }
        // The fake stamps the call when it arrives; this poll only finds it.
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    // Answered at the terminal: the hook settles the action and exits.
    let pid = nix::unistd::Pid::from_raw(hook.id().expect("running") as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let status = tokio::time::timeout(Duration::from_secs(30), hook.wait())
        .await
        .expect("the stopped hook exits")
        .expect("wait for the hook");
    assert!(
        status.code().is_some(),
        "prompt {i}: the hook died of the signal instead of settling: {status}"
    );
    sent.duration_since(started)
}

/// Wait until no Bot API call but `getUpdates` came for [`APART`].
async fn quiet(fake: &FakeTelegram) {
    loop {
        let last = fake
            .all_calls()
            .iter()
            .rev()
            .find(|c| c.method != "getupdates")
            .map(|c| c.at);
        match last.map(|t| t.elapsed()) {
            Some(since) if since < APART => tokio::time::sleep(APART - since).await,
            _ => return,
        }
    }
}

pub async fn prompt_to_chat(quick: bool, t: &mut Table) {
    let n = if quick { 20 } else { 200 };
    eprintln!("  prompt: {}", binary().display());
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("prompts.db");
    Store::open(&db)
        .await
        .expect("create the store")
        .close()
        .await;
    let fake = FakeTelegram::start().await;
    let cfg = dir.path().join("handoff.toml");
    std::fs::write(
        &cfg,
        format!(
            "[telegram]\ntoken = \"1:B\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n\
             digest_threshold = 100000\n\
             [telegram.limits]\nper_chat_per_sec = 1000\nper_chat_per_min = 100000\n\
             per_group_per_min = 100000\noverall_per_sec = 1000\n\
             [[telegram.chats]]\nname = \"me\"\nchat_id = {CHAT}\nanswer = [{CHAT}]\napprove = [{CHAT}]\n",
            fake.url
        ),
    )
    .expect("write config");
    let _daemon = Serve::start(&db, &cfg);
    // Ready: the bot polls, and the socket the hook probes is there.
    let socket = handoff::store::socket_path(&db);
    let ready = Instant::now();
    while fake.calls("getupdates").is_empty() || !socket.exists() {
        assert!(
            ready.elapsed() < Duration::from_secs(30),
            "the daemon never polled the bot or opened its socket"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // One untimed prompt: the first of anything pays for cold caches.
    one(&fake, &db, &cfg, usize::MAX).await;
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        quiet(&fake).await;
        lat.push(ms(one(&fake, &db, &cfg, i).await));
    }
    lat.sort_by(f64::total_cmp);
    t.row(
        "chat",
        format!(
            "prompt → chat message: `handoff hook claude` spawned with a PermissionRequest → the fake Bot API takes its sendMessage, through a real `handoff serve` ({n} prompts, one at a time, {} s apart), p50 / p99",
            APART.as_secs_f64()
        ),
        format!("{:.1} / {:.1} ms", pct(&lat, 0.5), pct(&lat, 0.99)),
    );
}
