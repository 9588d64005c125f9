//! `handoff events`: a page that says on stderr how to see more, `--tail N`
//! (exactly the newest N) and `--follow` (new events as they are written),
//! through the real binary on a local file and against a real daemon.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use common::TempDb;
use common::daemon::Daemon;
use serde_json::Value;

fn handoff(db: &Path, url: Option<&str>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
    c.env("HANDOFF_DB", db).env_remove("HANDOFF_TOKEN");
    match url {
        Some(u) => c.env("HANDOFF_URL", u),
        None => c.env_remove("HANDOFF_URL"),
    };
    c
}

fn run(db: &Path, url: Option<&str>, args: &[&str]) -> Output {
    handoff(db, url).args(args).output().expect("run handoff")
}

/// Flag `n` questions titled `{prefix} i` through the binary.
fn ask_many(db: &Path, prefix: &str, n: usize) {
    for i in 0..n {
        let o = run(
            db,
            None,
            &["ask", &format!("{prefix} {i}"), "--project", "p"],
        );
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
}

fn seqs(o: &Output) -> Vec<i64> {
    assert!(o.status.success(), "{}", common::stderr(o));
    common::json(o)["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect()
}

/// A `handoff events --follow …` process; its stdout lines arrive on a channel.
struct Follower {
    child: Child,
    lines: Receiver<String>,
    errs: Receiver<String>,
}

/// Send each line of `r` to a channel, from a thread.
fn lines_of(r: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

impl Follower {
    fn start(db: &Path, url: Option<&str>, args: &[&str]) -> Follower {
        let mut child = handoff(db, url)
            .args(["events", "--follow", "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn events --follow");
        let lines = lines_of(child.stdout.take().unwrap());
        let errs = lines_of(child.stderr.take().unwrap());
        Follower { child, lines, errs }
    }

    /// Wait for a stderr line containing `text`.
    fn until_stderr(&self, text: &str) -> String {
        loop {
            match self.errs.recv_timeout(Duration::from_secs(60)) {
                Ok(l) if l.contains(text) => return l,
                Ok(_) => {}
                Err(e) => panic!("no stderr line with {text:?}: {e}"),
            }
        }
    }

    /// Read events until one matches `want`; every line must be one JSON
    /// event. Panics if the follower stops or nothing matches in 60 s.
    fn until(&self, what: &str, want: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(l) => {
                    let line: Value = serde_json::from_str(&l)
                        .unwrap_or_else(|e| panic!("not one JSON event per line ({e}): {l}"));
                    // Each line is `{"event": …}`.
                    let v = line["event"].clone();
                    assert!(v.is_object(), "not {{\"event\": …}}: {l}");
                    let hit = want(&v);
                    seen.push(v);
                    if hit {
                        return seen;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no {what} within 60 s; saw {seen:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the follower exited; saw {seen:?}"),
            }
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn titled(t: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "question.flagged" && e["payload"]["title"] == t
}

#[test]
fn tail_returns_exactly_the_newest_n_and_a_cut_page_says_how_to_see_more() {
    let db = TempDb::new();
    ask_many(&db.path, "q", 7);
    let all = seqs(&db.cli(&["events", "--json"]));
    assert_eq!(all.len(), 7);

    assert_eq!(
        seqs(&db.cli(&["events", "--tail", "3", "--json"])),
        all[4..]
    );
    assert_eq!(seqs(&db.cli(&["events", "--tail", "50", "--json"])), all);
    assert!(seqs(&db.cli(&["events", "--tail", "0", "--json"])).is_empty());
    let text = common::stdout(&db.cli(&["events", "--tail", "2"]));
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .trim_start()
            .starts_with(&all[5].to_string())
    );

    // A page cut at --limit: the list on stdout, the way on on stderr.
    let o = db.cli(&["events", "--limit", "3", "--json"]);
    assert_eq!(seqs(&o), all[..3]);
    let hint = common::stderr(&o);
    let next = format!("--after {}", all[2]);
    assert!(hint.contains(&next) && hint.contains("--tail"), "{hint}");
    // Following the hint reaches the end, where it falls silent.
    let o = db.cli(&["events", "--after", &all[2].to_string(), "--json"]);
    assert_eq!(seqs(&o), all[3..]);
    assert_eq!(common::stderr(&o), "", "nothing more to see");

    // Flags that do not go together, and a tail past the page limit.
    for bad in [
        &["events", "--tail", "3", "--after", "1"][..],
        &["events", "--tail", "3", "--limit", "2"],
        &["events", "--tail", "1001"],
        &["events", "--limit", "0"],
    ] {
        assert_eq!(db.cli(bad).status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn follow_prints_events_written_after_it_started() {
    let db = TempDb::new();
    ask_many(&db.path, "old", 3);
    let all = seqs(&db.cli(&["events", "--json"]));

    // --tail 1 first prints the newest: the sign the follower has its place.
    let f = Follower::start(&db.path, None, &["--tail", "1"]);
    let first = f.until("the tail", |_| true);
    assert_eq!(first[0]["seq"], all[2]);
    ask_many(&db.path, "new", 2);
    let seen = f.until("the new event", titled("new 1"));
    let got: Vec<i64> = seen.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(
        got,
        [all[2] + 1, all[2] + 2],
        "in order, none twice, none skipped"
    );

    // --after replays from a seq, then keeps following.
    let f = Follower::start(&db.path, None, &["--after", &all[0].to_string()]);
    let replay = f.until("the replay", titled("new 1"));
    assert_eq!(replay.len(), 4, "{replay:?}");
    ask_many(&db.path, "newer", 1);
    f.until("a later event", titled("newer 0"));
}

#[test]
fn tail_and_follow_work_against_a_daemon() {
    let db = TempDb::new();
    ask_many(&db.path, "q", 5);
    let all = seqs(&db.cli(&["events", "--json"]));
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\nopen = true\n").unwrap();
    let d = Daemon::start(&db.path, &cfg);
    let url = format!("http://{}", d.addr);
    // Another path for the database, so only the daemon can answer.
    let nowhere = db.dir.path().join("not-here.db");

    let o = run(&nowhere, Some(&url), &["events", "--tail", "2", "--json"]);
    assert_eq!(seqs(&o), all[3..]);
    let o = run(&nowhere, Some(&url), &["events", "--limit", "2", "--json"]);
    assert_eq!(seqs(&o), all[..2]);
    assert!(common::stderr(&o).contains(&format!("--after {}", all[1])));

    let f = Follower::start(&nowhere, Some(&url), &["--tail", "1"]);
    f.until("the tail", |_| true);
    let o = run(
        &nowhere,
        Some(&url),
        &["ask", "remote one", "--project", "p"],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    f.until("the event written through the daemon", titled("remote one"));
    assert!(!nowhere.exists(), "nothing was opened locally");
}

#[test]
fn follow_through_a_daemon_survives_its_restart() {
    let db = TempDb::new();
    ask_many(&db.path, "q", 1);
    let cfg = db.dir.path().join("handoff.toml");
    std::fs::write(&cfg, "[http]\nopen = true\n").unwrap();
    let mut d = Daemon::start(&db.path, &cfg);
    let url = format!("http://{}", d.addr);
    let nowhere = db.dir.path().join("not-here.db");

    let f = Follower::start(&nowhere, Some(&url), &["--tail", "1"]);
    f.until("the tail", |_| true);
    // Gone for a while: the follower keeps trying instead of exiting.
    d.kill9();
    let said = f.until_stderr("still following");
    assert!(said.contains("cannot read the log"), "{said}");
    ask_many(&db.path, "while down", 1);
    let _d = Daemon::start_on(&db.path, &cfg, &d.addr, &[]);
    f.until_stderr("reading the log again");
    f.until(
        "the event written while the daemon was down",
        titled("while down 0"),
    );
    let o = run(
        &nowhere,
        Some(&url),
        &["ask", "after restart", "--project", "p"],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    f.until(
        "an event written through the new daemon",
        titled("after restart"),
    );
}
