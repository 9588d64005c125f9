//! Store throughput: operations per second on a real SQLite file (WAL,
//! `synchronous = NORMAL`, exactly as [`Store::open`] sets it up).
//!
//! Each (operation, writers) cell gets a fresh database in a temp dir, so
//! cells do not inherit each other's rows. With 4 writers, each writer is a
//! separate [`Store`] handle — its own connection pool on the same file —
//! driven by its own tokio task, which is how the daemon, CLI calls and MCP
//! servers share the file. The total work of a cell is split between its
//! writers, and the clock runs from the first operation to the last writer's
//! end; setup (flagging the questions a reply needs, creating boards) is not
//! timed.
//!
//! Operations:
//! - `flag`: a new question (no key).
//! - `reply_chat`: the conditional chat reply on a fresh question (the
//!   winning write; a refusal would abort the bench).
//! - `pending+pickup`: `store.pending` for one agent session whose question
//!   holds a fresh, unseen Inbox reply — the read plus the exact-reply mark;
//!   every round must deliver exactly one new reply.
//! - `board_advance`: archive a blocked row's step and install the next one
//!   (boards of 10 rows, rows advanced in turn so history stays realistic).
//!
//! Run: `cargo bench --bench store`. Smoke run: `HANDOFF_BENCH_QUICK=1`
//! (or `-- --quick`). `HANDOFF_BENCH_N=<ops per cell>` overrides the size.
//! This is a measurement, not a test: nothing here asserts a speed.

use std::path::Path;
use std::time::{Duration, Instant};

use handoff::store::Store;
use handoff::store::boards::{Advance, BoardUpsert, NextStep, RowInput, RowStatus};
use handoff::store::questions::{NewQuestion, NewReply};

/// Operations per cell in a full run (split between the writers).
const FULL_N: usize = 4000;
/// Operations per cell with `HANDOFF_BENCH_QUICK=1`.
const QUICK_N: usize = 80;
/// Concurrent writers in the contended configuration.
const WRITERS: usize = 4;
/// Rows per benchmark board.
const ROWS_PER_BOARD: usize = 10;

/// One line of the result table.
struct Cell {
    op: &'static str,
    writers: usize,
    ops: usize,
    elapsed: Duration,
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let quick = std::env::var_os("HANDOFF_BENCH_QUICK").is_some_and(|v| v != "0" && !v.is_empty())
        || std::env::args().any(|a| a == "--quick");
    let n = std::env::var("HANDOFF_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { QUICK_N } else { FULL_N });
    let n = n.max(WRITERS);
    let started = Instant::now();
    let mut cells = Vec::new();
    for writers in [1, WRITERS] {
        cells.push(run_cell("flag", writers, n, flag).await);
        cells.push(run_cell("reply_chat", writers, n, reply_chat).await);
        cells.push(run_cell("pending+pickup", writers, n, pending_pickup).await);
        cells.push(run_cell("board_advance", writers, n, board_advance).await);
    }
    print_table(&cells, quick, started.elapsed());
}

/// A writer's prepared work: a store handle and the ops it will run.
type Job = (Store, usize, usize);

/// Run one cell: a fresh database, `writers` separate handles, `n` ops split
/// between them. `work(store, writer, ops)` does untimed setup and returns
/// the timed part as a future.
async fn run_cell<F, Fut>(op: &'static str, writers: usize, n: usize, work: F) -> Cell
where
    F: Fn(Job) -> Fut,
    Fut: Future<Output = Timed>,
{
    let dir = tempfile::tempdir().expect("create temp dir");
    let path = dir.path().join("bench.db");
    let per = n / writers;
    let mut timed = Vec::new();
    for w in 0..writers {
        let store = open(&path).await;
        timed.push(work((store, w, per)).await);
    }
    let start = Instant::now();
    let tasks: Vec<_> = timed.into_iter().map(tokio::spawn).collect();
    for t in tasks {
        t.await.expect("writer task panicked");
    }
    let elapsed = start.elapsed();
    Cell {
        op,
        writers,
        ops: per * writers,
        elapsed,
    }
}

/// The timed half of a writer's work.
type Timed = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

async fn open(path: &Path) -> Store {
    Store::open(path).await.expect("open store")
}

fn question(w: usize, i: usize, session: &str) -> NewQuestion {
    NewQuestion {
        project: "bench".into(),
        agent: format!("agent-{w}"),
        session: session.into(),
        key: None,
        title: format!("Which database for service {w}-{i}?"),
        detail: "Postgres is what the team knows; SQLite is simpler to run.".into(),
        context: "The service stores about 10k rows a day and runs on one host.".into(),
        options: Vec::new(),
    }
}

fn reply(text: &str) -> NewReply {
    NewReply {
        text: text.into(),
        by: "bench-human".into(),
        ..NewReply::default()
    }
}

/// Flag `ops` new questions.
async fn flag((store, w, ops): Job) -> Timed {
    Box::pin(async move {
        let session = format!("session-{w}");
        for i in 0..ops {
            store.flag(&question(w, i, &session)).await.expect("flag");
        }
    })
}

/// Setup: flag `ops` questions. Timed: one winning chat reply on each.
async fn reply_chat((store, w, ops): Job) -> Timed {
    let session = format!("session-{w}");
    let mut ids = Vec::with_capacity(ops);
    for i in 0..ops {
        let f = store.flag(&question(w, i, &session)).await.expect("flag");
        ids.push(f.question.id);
    }
    Box::pin(async move {
        let r = reply("Use SQLite.");
        for id in &ids {
            store
                .reply_chat(id, &r)
                .await
                .expect("reply_chat")
                .expect("a fresh question accepts a chat reply");
        }
    })
}

/// Setup: `ops` questions, each in its own agent session, each with an
/// unseen Inbox reply. Timed: `pending` for each session, which must
/// deliver exactly that one reply as new.
async fn pending_pickup((store, w, ops): Job) -> Timed {
    let mut sessions = Vec::with_capacity(ops);
    for i in 0..ops {
        let session = format!("session-{w}-{i}");
        let f = store.flag(&question(w, i, &session)).await.expect("flag");
        store
            .reply_inbox(&f.question.id, &reply("Use SQLite."))
            .await
            .expect("reply_inbox")
            .expect("an open question accepts an Inbox reply");
        sessions.push(session);
    }
    Box::pin(async move {
        for session in &sessions {
            let got = store
                .pending(None, Some(session), false, "bench-agent")
                .await
                .expect("pending");
            assert!(
                got.len() == 1 && got[0].new,
                "pending must deliver the one fresh reply of {session}"
            );
        }
    })
}

/// Setup: boards of [`ROWS_PER_BOARD`] blocked rows. Timed: advance the
/// rows in turn, carrying each returned `board_version` and `revision`.
async fn board_advance((store, w, ops): Job) -> Timed {
    let boards_needed = ops.div_ceil(ROWS_PER_BOARD).clamp(1, 50);
    let mut boards = Vec::with_capacity(boards_needed);
    for b in 0..boards_needed {
        let rows = (0..ROWS_PER_BOARD)
            .map(|r| RowInput {
                label: format!("step-{r}"),
                status: Some(RowStatus::Blocked),
                next_step: Some("Create the production account".into()),
                note: Some("Needs a company card.".into()),
                ..RowInput::default()
            })
            .collect();
        let full = store
            .board_upsert(&BoardUpsert {
                project: "bench".into(),
                title: format!("Launch {w}-{b}"),
                board_version: None,
                agent: format!("agent-{w}"),
                session: format!("session-{w}"),
                rows,
            })
            .await
            .expect("board_upsert")
            .expect("a new board is accepted");
        let revisions: Vec<i64> = full.rows.iter().map(|r| r.revision).collect();
        boards.push((full.board.id, full.board.board_version, revisions));
    }
    Box::pin(async move {
        for i in 0..ops {
            let b = i % boards.len();
            let r = (i / boards.len()) % ROWS_PER_BOARD;
            let (id, version, revisions) = &mut boards[b];
            let full = store
                .board_advance(&Advance {
                    board: id.clone(),
                    project: Some("bench".into()),
                    label: format!("step-{r}"),
                    expected_revision: revisions[r],
                    board_version: *version,
                    outcome: Some(format!("done in round {i}")),
                    next: NextStep {
                        next_step: format!("Confirm round {i}"),
                        note: "Next part of the launch.".into(),
                        ..NextStep::default()
                    },
                    by: format!("agent-{w}"),
                })
                .await
                .expect("board_advance")
                .expect("this writer's own board is never stale");
            *version = full.board.board_version;
            for (slot, row) in revisions.iter_mut().zip(&full.rows) {
                *slot = row.revision;
            }
        }
    })
}

fn print_table(cells: &[Cell], quick: bool, total: Duration) {
    let mode = if quick { " (quick mode)" } else { "" };
    println!();
    println!("handoff store throughput{mode}: file database, WAL, synchronous=NORMAL");
    println!(
        "{:<16} {:>7} {:>7} {:>9} {:>9}",
        "operation", "writers", "ops", "seconds", "ops/s"
    );
    for c in cells {
        let secs = c.elapsed.as_secs_f64();
        println!(
            "{:<16} {:>7} {:>7} {:>9.3} {:>9.0}",
            c.op,
            c.writers,
            c.ops,
            secs,
            c.ops as f64 / secs
        );
    }
    println!(
        "(whole run including untimed setup: {:.1} s)",
        total.as_secs_f64()
    );
}
