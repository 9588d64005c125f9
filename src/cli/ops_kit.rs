//! Operating handoff: `events` (the log: a page, the newest N, or followed
//! live), `backup` (an online copy of the live database), `export` (every
//! row into an empty PostgreSQL database, or back into a new SQLite file),
//! `completions`
//! and `man` (generated from the clap definition at run time, so they
//! always match the binary).
//!
//! No SQL here: the log is read through [`crate::ops::Ops`] (the local store
//! or the daemon at `HANDOFF_URL`), and `backup` and `export` ask the store
//! for the copy.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{CommandFactory, Subcommand};

use super::{Cli, Ctx, exit, fail};
use crate::config::DatabaseRef;
use crate::store::backup::BackupOutcome;
use crate::store::{self, Event};

/// The most events one read returns (the API's page limit too).
const MAX_EVENTS: i64 = 1000;

/// How often `events --follow` looks for new events: the local store is
/// one indexed read, a daemon is an HTTP round trip, so it is asked less.
const FOLLOW_LOCAL: Duration = Duration::from_millis(200);
const FOLLOW_REMOTE: Duration = Duration::from_secs(1);

#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Print the event log (every state change, in order); --tail for the newest, --follow to keep watching.
    Events {
        /// Only events after this sequence number [default: 0, or the end of the log with --follow].
        #[arg(long, value_name = "SEQ", conflicts_with = "tail")]
        after: Option<i64>,
        /// At most this many events (a page; stderr says how to see more).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i64).range(1..=MAX_EVENTS), conflicts_with = "tail")]
        limit: i64,
        /// The newest N events, oldest first.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(0..=MAX_EVENTS))]
        tail: Option<i64>,
        /// Keep printing new events as they are written, until interrupted
        /// (with --json: one JSON object per line).
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Copy the live database to FILE while the daemon keeps running (a consistent snapshot, checked).
    Backup {
        /// The file to write; it must not exist unless --force.
        file: PathBuf,
        /// Replace FILE if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Copy every row of the database: an SQLite file into an empty PostgreSQL database, or a PostgreSQL database (--db URL) into a new SQLite file.
    Export {
        /// Where to copy to: an empty PostgreSQL database (postgres://user:password@host/handoff) when the database is a file, a new SQLite file when it is a PostgreSQL URL.
        #[arg(long, value_name = "URL")]
        to: String,
    },
    /// Print a shell completion script (e.g. `handoff completions bash > /etc/bash_completion.d/handoff`).
    Completions {
        /// Shell to print the completion script for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one page per command into --out DIR.
    Man {
        /// Write handoff.1 and one handoff-COMMAND.1 per subcommand into DIR (created if missing).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

pub(crate) async fn run(cmd: Cmd, ctx: &Ctx) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Events {
            after,
            limit,
            tail,
            follow,
        } => events(ctx, after, limit, tail, follow).await,
        Cmd::Backup { file, force } => backup(ctx, file, force).await,
        Cmd::Export { to } => export(ctx, &to).await,
        Cmd::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "handoff", &mut buf);
            super::out(String::from_utf8_lossy(&buf).trim_end());
            Ok(exit::OK)
        }
        Cmd::Man { out } => man(ctx, out),
    }
}

/// One event as a line of text.
fn line(e: &Event) -> String {
    format!(
        "{:>6}  {}  {:<22} {}:{}  {}{}",
        e.seq,
        crate::clock::format_rfc3339(e.at),
        e.kind,
        e.entity_kind,
        store::short_id(&e.entity_id),
        e.actor,
        if e.channel.is_empty() {
            String::new()
        } else {
            format!(" via {}", e.channel)
        }
    )
}

/// Print a batch of events as a list: `{"events": […], "next": SEQ}` (the
/// `--after` that continues) or text lines.
fn print_list(ctx: &Ctx, events: &[Event], next: i64) {
    let v = super::list("events", events, Some(next));
    ctx.print(&v, || events.iter().map(|e| line(e) + "\n").collect());
}

/// Print events one line each, as they come (`--follow`): text, or one
/// JSON object per line with `--json`, `{"event": …}` (a stream has no
/// single document).
fn print_stream(ctx: &Ctx, events: &[Event]) {
    for e in events {
        if ctx.json {
            match serde_json::to_string(&super::one("event", e, serde_json::Value::Null)) {
                Ok(s) => super::out(&s),
                Err(err) => eprintln!("handoff: cannot print JSON: {err}"),
            }
        } else {
            super::out(&line(e));
        }
    }
}

async fn events(
    ctx: &Ctx,
    after: Option<i64>,
    limit: i64,
    tail: Option<i64>,
    follow: bool,
) -> anyhow::Result<u8> {
    let ops = ctx.ops().await?;
    if !follow {
        let page = match tail {
            Some(n) => ops.events_tail(n).await?,
            None => ops.events_page(after.unwrap_or(0), limit).await?,
        };
        print_list(ctx, &page.events, page.next_after);
        // A page cut short (by --limit or the payload budget) says so on
        // stderr, where it does not disturb the list or the JSON.
        if tail.is_none() && !ops.events_page(page.next_after, 1).await?.events.is_empty() {
            eprintln!(
                "handoff: more events follow seq {}: see them with `handoff events --after {}`, \
                 the newest with `--tail N`, new ones as they come with `--follow`",
                page.next_after, page.next_after
            );
        }
        return Ok(exit::OK);
    }
    let mut cursor = match (tail, after) {
        (Some(n), _) => {
            let page = ops.events_tail(n).await?;
            print_stream(ctx, &page.events);
            page.next_after
        }
        (None, Some(a)) => a,
        // Like `tail -f`: from now on.
        (None, None) => ops.events_tail(0).await?.next_after,
    };
    let every = if ctx.remote() {
        FOLLOW_REMOTE
    } else {
        FOLLOW_LOCAL
    };
    // A daemon restarting (or a busy file) interrupts following without
    // ending it: say so once, keep trying, and say when it reads again.
    let mut interrupted = false;
    loop {
        let page = match ops.events_page(cursor, MAX_EVENTS).await {
            Ok(page) => page,
            Err(e @ (crate::ops::Error::Internal { .. } | crate::ops::Error::Busy { .. })) => {
                if !interrupted {
                    eprintln!(
                        "handoff: cannot read the log: {e}; still following, trying again every {} ms",
                        every.as_millis()
                    );
                    interrupted = true;
                }
                tokio::time::sleep(every).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if std::mem::take(&mut interrupted) {
            eprintln!("handoff: reading the log again, after seq {cursor}");
        }
        print_stream(ctx, &page.events);
        // Read again at once while a read moves the cursor (a backlog),
        // else wait for more to be written.
        if page.next_after == cursor {
            tokio::time::sleep(every).await;
        }
        cursor = page.next_after;
    }
}

async fn backup(ctx: &Ctx, file: PathBuf, force: bool) -> anyhow::Result<u8> {
    if ctx.remote() {
        return Err(fail(
            exit::INVALID,
            "`handoff backup` must run on the daemon's host: it copies the database file there (unset HANDOFF_URL)",
        ));
    }
    let (db, _) = ctx.database()?;
    // Opening would create an empty database; a backup of nothing is a mistake.
    if !db.exists() {
        return Err(fail(
            exit::INVALID,
            format!(
                "no database at {}: nothing to back up (pass --db FILE or set HANDOFF_DB to the daemon's database)",
                db.display()
            ),
        ));
    }
    let store = ctx.host_store("backup").await?;
    match store.backup_to(&file, force).await? {
        BackupOutcome::Written(b) => {
            ctx.show("backup", &b, || {
                format!(
                    "backed up {} to {} ({} bytes, events up to seq {})",
                    db.display(),
                    b.path.display(),
                    b.bytes,
                    b.last_event_seq
                )
            });
            Ok(exit::OK)
        }
        BackupOutcome::Exists => Err(fail(
            exit::INVALID,
            format!(
                "{} already exists: pick a new file name, or pass --force to replace it",
                file.display()
            ),
        )),
    }
}

/// `handoff export --to …`, its direction picked by the pair: a database
/// file and a URL copies the file into an empty PostgreSQL database; a
/// PostgreSQL URL and a path copies that database into a new SQLite file
/// (the copies themselves: [`store::postgres::export`] and
/// [`store::postgres::import`]).
async fn export(ctx: &Ctx, to: &str) -> anyhow::Result<u8> {
    ctx.local_only("export")?;
    let (from, source) = ctx.database_ref()?;
    let to_url = to.contains("://");
    match from {
        DatabaseRef::File(db) if to_url => export_file(ctx, &db, to).await,
        DatabaseRef::Postgres(url) if !to_url => import(ctx, &url, Path::new(to)).await,
        from => {
            let (have, want) = match &from {
                DatabaseRef::File(p) => (format!("the file {}", p.display()), "a postgres:// URL"),
                DatabaseRef::Postgres(u) => (store::postgres::shown(u), "a new file path"),
            };
            let given = if to_url {
                store::postgres::shown(to)
            } else {
                to.to_string()
            };
            Err(fail(
                exit::INVALID,
                format!(
                    "{source} names {have} and --to names {given}: export copies an SQLite file to a postgres:// URL, or a postgres:// URL (--db or HANDOFF_DB) to a new SQLite file; give --to {want}"
                ),
            ))
        }
    }
}

/// The local SQLite database copied into an empty PostgreSQL one.
async fn export_file(ctx: &Ctx, db: &Path, to: &str) -> anyhow::Result<u8> {
    store::postgres::export::check_url(to)?;
    // Opening would create an empty database; exporting nothing is a mistake.
    if !db.exists() {
        return Err(fail(
            exit::INVALID,
            format!(
                "no database at {}: nothing to export (pass --db FILE or set HANDOFF_DB to the daemon's database)",
                db.display()
            ),
        ));
    }
    let source = ctx.store().await?;
    let copied = store::postgres::export::export_to(&source, to).await;
    source.close().await;
    let report = copied?;
    let shown = store::postgres::shown(to);
    let v =
        serde_json::json!({"export": {"to": shown, "tables": report.tables, "rows": report.rows}});
    ctx.print(&v, || {
        format!(
            "copied {} rows in {} tables from {} to {shown}",
            report.rows,
            report.tables.len(),
            db.display()
        )
    });
    Ok(exit::OK)
}

/// The PostgreSQL database at `url` copied into the new SQLite file `file`.
async fn import(ctx: &Ctx, url: &str, file: &Path) -> anyhow::Result<u8> {
    let report = store::postgres::import::import_to(url, file).await?;
    let v =
        serde_json::json!({"export": {"to": file, "tables": report.tables, "rows": report.rows}});
    ctx.print(&v, || {
        format!(
            "copied {} rows in {} tables from {} to {}",
            report.rows,
            report.tables.len(),
            store::postgres::shown(url),
            file.display()
        )
    });
    Ok(exit::OK)
}

/// The ENVIRONMENT section every man page ends with (roff).
fn environment_roff() -> String {
    let esc = |t: &str| t.replace('\\', "\\\\").replace('-', "\\-");
    let mut s = String::from(".SH ENVIRONMENT\n");
    for (name, meaning) in crate::cli::ENVIRONMENT {
        s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", esc(name), esc(meaning)));
    }
    s
}

fn man(ctx: &Ctx, out: Option<PathBuf>) -> anyhow::Result<u8> {
    let cmd = Cli::command();
    let Some(dir) = out else {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut buf)?;
        let page = String::from_utf8_lossy(&buf);
        super::out(format!("{page}{}", environment_roff()).trim_end());
        return Ok(exit::OK);
    };
    let cannot = |e: std::io::Error| {
        fail(
            exit::INTERNAL,
            format!("cannot write man pages into {}: {e}", dir.display()),
        )
    };
    std::fs::create_dir_all(&dir).map_err(cannot)?;
    clap_mangen::generate_to(cmd, &dir).map_err(cannot)?;
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .map_err(cannot)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("handoff") && n.ends_with(".1"))
        .collect();
    pages.sort();
    for p in &pages {
        let path = dir.join(p);
        let page = std::fs::read_to_string(&path).map_err(cannot)?;
        std::fs::write(&path, format!("{page}{}", environment_roff())).map_err(cannot)?;
    }
    let v = serde_json::json!({"man_pages": {"dir": dir, "pages": pages}});
    ctx.print(&v, || {
        format!(
            "wrote {} man pages into {} (try `man {}/handoff.1`)",
            pages.len(),
            dir.display(),
            dir.display()
        )
    });
    Ok(exit::OK)
}
