//! Daemon start-up on a big database: a real `handoff serve` process on a
//! file with 1,000,000 rows of history (questions flagged, answered in the
//! chat and resolved: six rows each, see `store::seed`), chat configured
//! against the fake Bot API. Timed from spawning the process until
//! `/healthz` answers 200 *and* the bot has called `getUpdates`, i.e. the
//! store is open and migrated, recovery has run, and every worker is up.
//! The same on an empty database, for comparison. Median and worst of five
//! starts each.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use handoff::store::Store;
use handoff::store::seed::ROWS_PER_QUESTION;

use crate::fake_telegram::FakeTelegram;
use crate::{Table, ms, pct, thousands};

const STARTS: usize = 5;

pub async fn run(quick: bool, t: &mut Table) {
    let rows: u64 = if quick { 100_000 } else { 1_000_000 };
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.db");
    let store = Store::open(&big).await.unwrap();
    let seeded = Instant::now();
    let written = store
        .seed_history(rows.div_ceil(ROWS_PER_QUESTION))
        .await
        .unwrap();
    let seed_secs = seeded.elapsed().as_secs_f64();
    let total = table_rows(&store).await;
    assert!(total >= rows, "seeded {total} rows, wanted {rows}");
    store.close().await;
    let mb = std::fs::metadata(&big).map_or(0, |m| m.len()) as f64 / 1024.0 / 1024.0;
    eprintln!("  seeded {written} rows ({total} in all) in {seed_secs:.1} s; file {mb:.0} MiB");
    let empty = dir.path().join("empty.db");
    Store::open(&empty).await.unwrap().close().await;

    for (db, label) in [
        (
            &big,
            format!("{} rows ({mb:.0} MiB)", thousands(total as f64)),
        ),
        (&empty, "an empty database".to_string()),
    ] {
        let mut lat = Vec::new();
        for _ in 0..STARTS {
            lat.push(ms(start_once(db, dir.path()).await));
        }
        lat.sort_by(f64::total_cmp);
        t.row(
            "daemon",
            format!("start-up on {label}: spawn → /healthz 200 and the bot polling, median / worst of {STARTS}"),
            format!("{:.0} / {:.0} ms", pct(&lat, 0.5), lat[lat.len() - 1]),
        );
    }
}

/// Rows in every table of the history the seed writes.
async fn table_rows(store: &Store) -> u64 {
    let mut n = 0;
    for table in ["questions", "question_replies", "chat_messages", "events"] {
        n += store.count_rows(table).await.unwrap() as u64;
    }
    n
}

/// One start: spawn, wait until ready, stop. Returns the time to ready.
async fn start_once(db: &Path, dir: &Path) -> Duration {
    let fake = FakeTelegram::start().await;
    let config = dir.join("handoff.toml");
    std::fs::write(
        &config,
        format!(
            "[telegram]\ntoken = \"1:B\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n\
             [[telegram.chats]]\nname = \"me\"\nchat_id = 1\nanswer = [1]\n",
            fake.url
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = reqwest::Client::new();
    let health = format!("http://127.0.0.1:{port}/healthz");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("HANDOFF_DB", db)
        .env_remove("HANDOFF_TELEGRAM_TOKEN")
        .env_remove("HANDOFF_URL")
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn handoff serve");
    let mut healthy = false;
    let ready = loop {
        if !healthy {
            healthy = http
                .get(&health)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
        }
        if healthy && !fake.calls("getupdates").is_empty() {
            break started.elapsed();
        }
        if started.elapsed() > Duration::from_secs(120) {
            stop(&mut child);
            panic!("the daemon was not ready within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    stop(&mut child);
    ready
}

fn stop(child: &mut Child) {
    // SIGTERM, as an operator would; the daemon shuts down cleanly.
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let _ = child.wait();
}
