//! The benchmark command: `cargo bench` runs every measurement below and
//! prints one Markdown table (the one in the README), plus the machine it ran
//! on. Each section is a measurement, not a test: nothing here asserts a
//! speed, only that the work it timed was done right.
//!
//! ```text
//! cargo bench                       # everything (a few minutes, release build)
//! cargo bench -- --quick            # a smoke run with small sizes
//! cargo bench -- store startup      # only some sections
//! ```
//!
//! Sections: `store` (operations/s on a file database, 1 and 4 writers, then
//! the same on PostgreSQL),
//! `actions` (propose→approve→claim→complete cycles, single and contended),
//! `chat` (1,000-item burst under Telegram's limits; tap → answer committed),
//! `slack` (the same on Slack, against the fake Slack),
//! `prompt` (a Claude Code permission prompt → its message in chat, through
//! a real `handoff serve`),
//! `wake` (answer committed → exec wake target started, in process and
//! through a real `handoff serve`; on PostgreSQL, commit → LISTEN/NOTIFY
//! nudge on another connection; approve through one daemon → an agent's
//! long poll on another answered, on PostgreSQL and on one SQLite file; the
//! idle daemon's CPU), `wait` (answer →
//! `handoff wait` returned, no daemon), `api` (`POST /v1/questions` rate;
//! answer → long-poll wake-up), `rss` (idle daemon), `startup` (daemon
//! start-up on a database with 1,000,000 rows).

#[path = "../../tests/common/fake_slack.rs"]
mod fake_slack;
#[path = "../../tests/common/fake_telegram.rs"]
mod fake_telegram;
// The throw-away PostgreSQL server of the tests (only part of it is used here).
#[path = "../../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres;

mod actions;
mod api;
mod chat;
mod daemon;
mod pg_wake;
mod prompt;
mod slack;
mod startup;
mod store;
mod two_daemons;
mod wake;

use std::time::{Duration, Instant};

/// The one result table.
#[derive(Default)]
pub struct Table {
    rows: Vec<[String; 3]>,
}

impl Table {
    /// Add a line: the area, what was measured (and how), the figure.
    pub fn row(&mut self, area: &str, measure: impl Into<String>, value: impl Into<String>) {
        let row = [area.to_string(), measure.into(), value.into()];
        eprintln!("  {} | {} | {}", row[0], row[1], row[2]);
        self.rows.push(row);
    }

    fn print(&self) {
        println!("| area | measure | value |");
        println!("|---|---|---:|");
        for [a, m, v] in &self.rows {
            println!("| {a} | {m} | {v} |");
        }
    }
}

/// The section names, in the order they run.
const SECTIONS: [&str; 10] = [
    "store", "actions", "chat", "slack", "prompt", "wake", "wait", "api", "rss", "startup",
];

/// Percentile `p` (0..=1) of an ascending slice (nearest rank).
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Milliseconds with one decimal.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `12345.6` → `12,346`.
pub fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v);
    let (sign, digits) = s.split_at(if s.starts_with('-') { 1 } else { 0 });
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!("{cpu}, {cores} cores, {mem_gib:.0} GiB RAM")
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `cargo bench` passes `--bench`; other `--` flags are ours or ignored.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick")
        || std::env::var_os("HANDOFF_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0");
    let wanted: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    if let Some(bad) = wanted.iter().find(|w| !SECTIONS.contains(w)) {
        eprintln!(
            "error: no benchmark section `{bad}`; the sections are: {}",
            SECTIONS.join(", ")
        );
        std::process::exit(2);
    }
    let run = |name: &str| wanted.is_empty() || wanted.contains(&name);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    eprintln!(
        "handoff benchmarks ({profile} build{}): results stream below, the table follows",
        if quick { ", quick sizes" } else { "" }
    );
    let started = Instant::now();
    let mut t = Table::default();
    for name in SECTIONS {
        if !run(name) {
            continue;
        }
        eprintln!("== {name}");
        match name {
            "store" => {
                store::run(store::Engine::Sqlite, quick, &mut t).await;
                store::run(store::Engine::Postgres, quick, &mut t).await;
            }
            "actions" => {
                actions::run(quick, &mut t).await;
                actions::run_postgres(quick, &mut t).await;
                daemon::cli_approvers(quick, &mut t).await;
            }
            "chat" => chat::burst(quick, &mut t).await,
            "slack" => slack::run(quick, &mut t).await,
            "prompt" => prompt::prompt_to_chat(quick, &mut t).await,
            "wake" => {
                wake::run(quick, &mut t).await;
                daemon::cross_process(quick, &mut t).await;
                pg_wake::commit_to_nudge(quick, &mut t).await;
                two_daemons::approve_to_wake(quick, &mut t).await;
                daemon::idle_cpu(quick, &mut t).await;
            }
            "wait" => wake::wait_no_daemon(quick, &mut t).await,
            "api" => api::run(quick, &mut t).await,
            "rss" => api::idle_rss(&mut t).await,
            "startup" => startup::run(quick, &mut t).await,
            _ => unreachable!("every section is matched"),
        }
    }
    println!();
    println!(
        "handoff benchmarks: `cargo bench{}` ({profile} build{}), {} s",
        if quick { " -- --quick" } else { "" },
        if quick { ", quick sizes" } else { "" },
        started.elapsed().as_secs()
    );
    println!("machine: {}", machine());
    println!();
    t.print();
}
