//! A throw-away PostgreSQL server for tests.
//!
//! The first test of a binary that asks for a database starts one server
//! for the whole binary: `initdb` into a fresh temp dir, then `postgres`
//! listening only on a Unix socket inside that dir (no TCP port, so parallel
//! test binaries never collide), `fsync` off. Each test
//! then gets its own fresh database (`CREATE DATABASE`) and a sqlx URL for
//! it, so tests never see each other's rows.
//!
//! `initdb` refuses to run as root, so when the tests run as root the server
//! runs as the `postgres` user (through `runuser`) in a dir chowned to it.
//! The binaries are looked up on PATH and in Debian's
//! `/usr/lib/postgresql/<version>/bin`, which is not on PATH.
//!
//! Why a watchdog process: a test binary has no "after all tests" hook, and
//! statics are never dropped, so nothing in the binary can stop the server
//! when it ends. A small `sh` child starts the server as its own child and
//! reads its stdin, a pipe whose write end the binary keeps open until it
//! exits (normally, on a panic, or killed); the EOF then makes the watchdog
//! stop the server (`pg_ctl stop -m fast`), reap it and remove the temp dir.
//! Why not `pg_ctl start`: it hands the postmaster to PID 1, which may reap
//! it late (a `<defunct>` postgres seen after the run). The watchdog runs in
//! its own process group so a Ctrl-C aimed at `cargo test` does not kill it
//! before it cleaned up.
//!
//! A missing binary or a server that does not start fails the test with the
//! reason and what to install: the PostgreSQL tests never skip.

use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection, Executor};

/// The server of this test binary, started on first use.
static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

/// Databases handed out so far (their names must differ).
static NEXT_DB: AtomicU64 = AtomicU64::new(0);

/// The superuser every connection logs in as (trust authentication: the
/// socket is in a dir only its owner and root can reach).
const SUPERUSER: &str = "postgres";

/// A running server: the dir holding its data and socket, and the pipe
/// whose end (at process exit) stops it.
struct Server {
    dir: PathBuf,
    /// Never written; kept open for the life of the process (see the
    /// module comment).
    _watchdog: ChildStdin,
}

/// One fresh database on the shared server.
pub struct PgDb {
    /// `postgres://…?host=<socket dir>`, for sqlx (`PgPool::connect`).
    pub url: String,
    /// The same, as options (for `PgConnectOptions`-taking calls).
    pub options: PgConnectOptions,
    /// The database's name.
    pub name: String,
}

impl PgDb {
    /// A fresh, empty database of its own on this binary's server
    /// (starting the server if this is the first). Panics with what is
    /// wrong and what to install when the server cannot run.
    pub async fn new() -> PgDb {
        let server = match SERVER.get_or_init(Server::start) {
            Ok(server) => server,
            Err(why) => panic!("{why}"),
        };
        let name = format!(
            "t{}_{}",
            std::process::id(),
            NEXT_DB.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = server
            .options("postgres")
            .connect()
            .await
            .unwrap_or_else(|e| panic!("connect to the test PostgreSQL server: {e}"));
        admin
            .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        admin.close().await.ok();
        PgDb {
            url: format!(
                "postgres://{SUPERUSER}@localhost/{name}?host={}",
                server.dir.display()
            ),
            options: server.options(&name),
            name,
        }
    }

    /// A new connection of its own to this database.
    pub async fn connect(&self) -> PgConnection {
        self.options
            .connect()
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.name))
    }
}

impl Server {
    fn options(&self, database: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .socket(&self.dir)
            .username(SUPERUSER)
            .database(database)
    }

    /// initdb, then the server under its watchdog, or why not (with what
    /// to do about it).
    fn start() -> Result<Server, String> {
        let bin = find_binaries()?;
        // Root cannot run the server: the `postgres` user does, on a dir it owns.
        let as_postgres = nix::unistd::Uid::effective().is_root();
        let dir = tempfile::Builder::new()
            .prefix("handoff-pg-")
            .tempdir()
            .map_err(|e| format!("create a temp dir for PostgreSQL: {e}"))?
            .keep();
        if let Err(why) = init(&bin, &dir, as_postgres) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(why);
        }
        // From here on the watchdog owns the dir: an error drops its pipe,
        // and it stops what started and removes the dir.
        let watchdog = spawn_watchdog(&dir, &bin, as_postgres)?;
        // Ready when the postmaster says so in its pid file (line 8), as
        // `pg_ctl start -w` checks; `exited` appears if it stopped instead.
        let failed = |why: &str| {
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            format!("the test PostgreSQL server {why}; its log:\n{log}")
        };
        for _ in 0..3000 {
            if dir.join("exited").exists() {
                return Err(failed("did not start"));
            }
            let pid_file =
                std::fs::read_to_string(dir.join("data/postmaster.pid")).unwrap_or_default();
            if pid_file.lines().nth(7).map(str::trim) == Some("ready") {
                return Ok(Server {
                    dir,
                    _watchdog: watchdog,
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Err(failed("was not ready after 60 s"))
    }
}

/// The data dir: `initdb` (as `postgres` in a dir it owns, when root).
fn init(bin: &Path, dir: &Path, as_postgres: bool) -> Result<(), String> {
    if as_postgres {
        let user = nix::unistd::User::from_name(SUPERUSER)
                .ok()
                .flatten()
                .ok_or(
                    "the tests run as root and PostgreSQL refuses root, but there is no \
                     `postgres` user to run it as: install PostgreSQL (apt-get install postgresql), \
                     which creates it, or run the tests as another user",
                )?;
        std::os::unix::fs::chown(dir, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
            .map_err(|e| format!("chown {} to postgres: {e}", dir.display()))?;
    }
    run(
        tool(as_postgres, bin.join("initdb"))
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C"])
            .arg("--no-sync"),
        "initdb",
    )
}

/// The dir holding `initdb`, `pg_ctl` and `postgres`: on PATH, else the
/// newest `/usr/lib/postgresql/<version>/bin` (Debian's place for them).
fn find_binaries() -> Result<PathBuf, String> {
    let wanted = ["initdb", "pg_ctl", "postgres"];
    let has_all = |dir: &Path| wanted.iter().all(|b| dir.join(b).is_file());
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(dir) = on_path.into_iter().find(|d| has_all(d)) {
        return Ok(dir);
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| has_all(bin))
        .collect();
    debian.sort();
    debian.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "PostgreSQL's initdb, pg_ctl and postgres were found neither on PATH nor in \
         /usr/lib/postgresql/<version>/bin: install PostgreSQL (apt-get install postgresql; \
         ./test does it) — the PostgreSQL tests never skip"
            .to_string()
    })
}

/// A command running `program` (as `postgres` when asked, through runuser).
fn tool(as_postgres: bool, program: PathBuf) -> Command {
    if !as_postgres {
        return Command::new(program);
    }
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", SUPERUSER, "--"]).arg(program);
    cmd
}

/// Run a server tool to completion, or say why it failed, with its output.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    // The `postgres` user may not be able to read the test's cwd.
    let out = cmd
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what} for the test PostgreSQL server: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    // Its error first: initdb's stdout is a page of progress.
    Err(format!(
        "{what} failed ({}) for the test PostgreSQL server (as root it runs as `postgres`, \
         which must be able to reach the temp dir: TMPDIR): {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim(),
        String::from_utf8_lossy(&out.stdout).trim()
    ))
}

/// The watchdog: a `sh` that runs the server as its own child (so it is
/// reaped at once when it stops, not left to PID 1 as `pg_ctl start`'s
/// daemonised postmaster would be), waits for EOF on its stdin, then stops
/// the server and removes `dir`. Returns the pipe's write end.
fn spawn_watchdog(dir: &Path, bin: &Path, as_postgres: bool) -> Result<ChildStdin, String> {
    use std::os::unix::process::CommandExt;
    // `exited` tells the harness the server stopped (it failed to start);
    // the stop loop also covers a server still starting when the binary
    // ended (pg_ctl finds no pid file yet: try again until it exits).
    const SCRIPT: &str = r#"
        bin=$1 dir=$2 as=$3; shift 3
        run() { if [ "$as" = 1 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
        ( run "$bin/postgres" -D "$dir/data" "$@" >"$dir/server.log" 2>&1 </dev/null
          echo $? >"$dir/exited" ) &
        read _ignored
        while [ ! -e "$dir/exited" ]; do
            run "$bin/pg_ctl" -D "$dir/data" stop -m fast -w -t 30 >/dev/null 2>&1 || sleep 0.1
        done
        wait
        rm -rf "$dir"
    "#;
    let mut child = Command::new("sh")
        .args(["-c", SCRIPT, "handoff-pg-watchdog"])
        .arg(bin)
        .arg(dir)
        .arg(if as_postgres { "1" } else { "0" })
        // The server: only the Unix socket in `dir` (no TCP), no fsync.
        .args(["-c", "listen_addresses=", "-k"])
        .arg(dir)
        .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
        .args(["-c", "full_page_writes=off", "-c", "max_connections=300"])
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start sh (the test PostgreSQL server's watchdog): {e}"))?;
    child
        .stdin
        .take()
        .ok_or_else(|| "the watchdog has no stdin".to_string())
}
