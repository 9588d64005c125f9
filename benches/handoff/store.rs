//! Store throughput: operations per second on a real SQLite file (WAL,
//! `synchronous = NORMAL`, exactly as [`Store::open`] sets it up), then the
//! same cells on PostgreSQL: a throw-away local server on a Unix socket
//! (tests/common/postgres.rs, `fsync` off), through [`Store::open_postgres`].
//!
//! Each (operation, writers) cell gets a fresh database: a new file in a temp
//! dir, or a new database on the one server. With 4 writers, each writer is a
//! separate [`Store`] handle (its own connection pool on the same database)
//! driven by its own task, which is how the daemon, CLI calls and MCP servers
//! share the file (and several daemons a PostgreSQL database). Both engines
//! run the same cell code; only [`Fresh`] differs. The work of a cell is split
//! between its writers; the clock runs from the first operation to the last
//! writer's end, and setup (flagging the questions a reply needs, creating
//! boards) is not timed.
//!
//! - `flag`: a new question (no key).
//! - `reply_chat`: the conditional chat reply on a fresh question.
//! - `pending+pickup`: `pending` for an agent session whose question holds
//!   a fresh Inbox reply: the read plus the exact-reply mark.
//! - `board_advance`: archive a blocked row's step and install the next one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use handoff::store::Store;
use handoff::store::boards::{Advance, BoardUpsert, NextStep, RowInput, RowStatus};
use handoff::store::questions::{NewQuestion, NewReply};

use crate::{Table, thousands};

/// Operations per cell in a full run (split between the writers).
const FULL_N: usize = 4000;
/// Operations per cell in a quick run.
const QUICK_N: usize = 80;
/// Concurrent writers in the contended configuration.
const WRITERS: usize = 4;
/// Rows per benchmark board.
const ROWS_PER_BOARD: usize = 10;

/// Which engine a cell's fresh database is on.
#[derive(Clone, Copy)]
pub enum Engine {
    /// A file in a temp dir.
    Sqlite,
    /// A database of its own on the bench's throw-away local server.
    Postgres,
}

impl Engine {
    /// What a row's label ends with (the SQLite rows keep their old labels).
    fn suffix(self) -> &'static str {
        match self {
            Engine::Sqlite => "",
            Engine::Postgres => " — PostgreSQL (local, Unix socket)",
        }
    }
}

/// A cell's fresh, empty database, kept for the cell's life.
enum Fresh {
    Sqlite(tempfile::TempDir),
    Postgres(Box<crate::postgres::PgDb>),
}

impl Fresh {
    async fn new(engine: Engine) -> Fresh {
        match engine {
            Engine::Sqlite => Fresh::Sqlite(tempfile::tempdir().expect("create temp dir")),
            Engine::Postgres => Fresh::Postgres(Box::new(crate::postgres::PgDb::new().await)),
        }
    }

    /// One more handle on it (its own connection pool).
    async fn open(&self) -> Store {
        match self {
            Fresh::Sqlite(dir) => Store::open(&dir.path().join("bench.db")).await,
            Fresh::Postgres(db) => {
                Store::open_postgres(&db.url, Arc::new(handoff::clock::SystemClock)).await
            }
        }
        .expect("open store")
    }
}

/// Every (operation, writers) cell on `engine`, a fresh database each.
pub async fn run(engine: Engine, quick: bool, t: &mut Table) {
    let n = if quick { QUICK_N } else { FULL_N };
    let on = engine.suffix();
    for writers in [1, WRITERS] {
        let cells: [(&str, Duration); 4] = [
            (
                "flag (new question)",
                run_cell(engine, writers, n, flag).await,
            ),
            (
                "chat reply (conditional write)",
                run_cell(engine, writers, n, reply_chat).await,
            ),
            (
                "pending + pickup (agent reads its answer)",
                run_cell(engine, writers, n, pending_pickup).await,
            ),
            (
                "board row advance",
                run_cell(engine, writers, n, board_advance).await,
            ),
        ];
        let per = n / writers * writers;
        for (op, elapsed) in cells {
            let who = if writers == 1 {
                "1 writer".to_string()
            } else {
                format!("{writers} writers, separate handles")
            };
            t.row(
                "store",
                format!("{op}, {who}{on}"),
                format!("{} ops/s", thousands(per as f64 / elapsed.as_secs_f64())),
            );
        }
    }
}

/// A writer's prepared work: a store handle and the ops it will run.
type Job = (Store, usize, usize);

/// Run one cell: a fresh database on `engine`, `writers` separate handles,
/// `n` ops split between them. `work(store, writer, ops)` does untimed setup
/// and returns the timed part as a future.
async fn run_cell<F, Fut>(engine: Engine, writers: usize, n: usize, work: F) -> Duration
where
    F: Fn(Job) -> Fut,
    Fut: Future<Output = Timed>,
{
    let db = Fresh::new(engine).await;
    let per = n / writers;
    let mut timed = Vec::new();
    let mut handles = Vec::new();
    for w in 0..writers {
        let store = db.open().await;
        handles.push(store.clone());
        timed.push(work((store, w, per)).await);
    }
    let start = Instant::now();
    let tasks: Vec<_> = timed.into_iter().map(tokio::spawn).collect();
    for t in tasks {
        t.await.expect("writer task panicked");
    }
    let elapsed = start.elapsed();
    // Why close: the next cell's server connections (PostgreSQL's are
    // limited) and files should not wait on these pools' idle timeouts.
    for store in handles {
        store.close().await;
    }
    elapsed
}

/// The timed half of a writer's work.
type Timed = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

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
