//! One configuration for every command: the CLI, `mcp` and `serve` find the same config file
//! and database; a database someone named must exist (`handoff init` makes
//! it); remote mode refuses host-only commands in one line; `handoff status`
//! says which config, database and daemon are in play. Every test runs the
//! real binary in a temp folder with its own HOME, so no config or database
//! of the machine is touched.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::daemon::Daemon;
use common::{json, stderr, stdout};
use serde_json::Value;

/// A temp folder to run commands in, with HOME inside it.
struct Folder {
    dir: tempfile::TempDir,
}

impl Folder {
    fn new() -> Folder {
        Folder {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    /// The default database location under this HOME.
    fn default_db(&self) -> PathBuf {
        self.home().join(".local/share/handoff/handoff.db")
    }

    /// Write `config/handoff.toml` here.
    fn config(&self, text: &str) {
        std::fs::create_dir_all(self.path().join("config")).unwrap();
        std::fs::write(self.path().join("config/handoff.toml"), text).unwrap();
    }

    /// `handoff ARGS` here, with `env` set and every other HANDOFF_* unset.
    fn cmd(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
        c.args(args).current_dir(self.path());
        for k in [
            "HANDOFF_URL",
            "HANDOFF_TOKEN",
            "HANDOFF_DB",
            "HANDOFF_CONFIG",
            "HANDOFF_SESSION",
            "HANDOFF_PROJECT",
            "HANDOFF_AGENT",
            "HANDOFF_USER",
            "HANDOFF_RULES",
            "HANDOFF_TELEGRAM_TOKEN",
            "XDG_DATA_HOME",
        ] {
            c.env_remove(k);
        }
        c.env("HOME", self.home());
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.cmd(args, env).output().expect("run handoff")
    }
}

/// A port nothing listens on right now (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The one-line error of a failed command, checked to be one line.
fn one_line_error(o: &Output, code: i32) -> String {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
    let err = stderr(o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

/// The titles of the questions in the database at `path`, sorted, read
/// with the store itself.
async fn titles(path: &Path) -> Vec<String> {
    let store = handoff::store::Store::open(path).await.unwrap();
    let list = store
        .list_questions(&Default::default())
        .await
        .expect("list questions");
    let mut titles: Vec<String> = list.into_iter().map(|q| q.title).collect();
    titles.sort();
    titles
}

/// Finding 1: with `[store] path` and `[http] listen` in config/handoff.toml,
/// the CLI uses the same database as `serve`, and `inbox-link` links to the
/// configured port; `status` names the config, the database and the daemon
/// serving it.
#[tokio::test]
async fn the_cli_and_the_daemon_use_the_configs_database_and_address() {
    let f = Folder::new();
    let port = free_port();
    f.config(&format!(
        "[store]\npath = \"data/team.db\"\n\n[http]\nlisten = \"127.0.0.1:{port}\"\n"
    ));
    let team = f.path().join("data/team.db");
    // Named by the config and not there yet: refused, nothing created.
    let o = f.run(&["ask", "Which database?"], &[]);
    let err = one_line_error(&o, 2);
    assert!(
        err.contains("data/team.db") && err.contains("handoff init"),
        "{err}"
    );
    assert!(!team.exists() && !f.default_db().exists());
    // The daemon serves the config's file and address.
    let daemon = Daemon::spawn(
        Some(f.path()),
        &["serve"],
        &[("HOME", f.home().to_str().unwrap())],
    );
    assert_eq!(daemon.addr, format!("127.0.0.1:{port}"));
    assert!(team.exists(), "serve creates the database its config names");
    // The CLI in the same folder writes there.
    let o = f.run(&["ask", "Which database?"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(titles(&team).await, ["Which database?"]);
    assert!(
        !f.default_db().exists(),
        "the default database stays unused"
    );
    // The daemon sees it: its Inbox link is for the configured port.
    let o = f.run(&["--json", "inbox-link", "--as", "alice"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let url = json(&o)["inbox_link"]["url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/inbox/login?code=")),
        "{url}"
    );
    let page = reqwest::get(&url).await.unwrap();
    assert_eq!(page.status(), 200, "the daemon knows the link's code");
    // status: which config, which database (with counts), the daemon serving it.
    let o = f.run(&["--json", "status"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = json(&o)["status"].clone();
    assert_eq!(s["config"], "config/handoff.toml");
    assert_eq!(s["database"]["path"], "data/team.db");
    assert_eq!(s["database"]["exists"], true);
    assert_eq!(s["database"]["counts"]["open_questions"], 1);
    assert_eq!(s["daemon"]["running"], true);
    assert_eq!(s["daemon"]["serves_this_database"], true, "{s}");
    assert_eq!(s["chat"]["on"], false);
    // Another database with the same config: the daemon serves a different file.
    let other = f.path().join("other.db");
    common::create_db(&other);
    let o = f.run(&["--json", "--db", other.to_str().unwrap(), "status"], &[]);
    let s = json(&o)["status"].clone();
    assert_eq!(s["database"]["named_by"], "--db");
    assert_eq!(s["daemon"]["running"], true);
    assert_eq!(s["daemon"]["serves_this_database"], false, "{s}");
    // Remote mode: status probes HANDOFF_URL instead of a local database.
    let base = format!("http://127.0.0.1:{port}");
    let o = f.run(&["--json", "status"], &[("HANDOFF_URL", &base)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = json(&o)["status"].clone();
    assert_eq!(s["remote"]["running"], true, "{s}");
    assert!(s["database"].is_null(), "{s}");
    drop(daemon);
    // No daemon: said so, and still exit 0 (the CLI works without one).
    let o = f.run(&["status"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("not running"), "{text}");
    assert!(text.contains("1 open questions"), "{text}");
}

/// `handoff mcp` opens the config's database too.
#[tokio::test]
async fn mcp_uses_the_configs_database() {
    use std::io::{BufRead, BufReader, Write};
    let f = Folder::new();
    f.config("[store]\npath = \"data/team.db\"\n");
    let o = f.run(&["init"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let team = f.path().join("data/team.db");
    let mut child = f
        .cmd(&["mcp"], &[("HANDOFF_PROJECT", "p")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = move |v: Value| writeln!(stdin, "{v}").unwrap();
    send(
        serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
    );
    let _init = lines.next().unwrap().unwrap();
    send(serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    send(
        serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"ask","arguments":{"title":"From MCP"}}}),
    );
    let reply: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(reply["id"], 2, "{reply}");
    assert_ne!(reply["result"]["isError"], true, "{reply}");
    drop(send); // closes stdin: the server ends
    let _ = child.wait();
    assert_eq!(titles(&team).await, ["From MCP"]);
    assert!(!f.default_db().exists());
}

/// Finding 4: a mistyped `HANDOFF_DB` (or `--db`, or `[store] path`) is an
/// error naming the path, for reads and writes alike; nothing is created,
/// not even its folder. `init` creates it, idempotently; the default
/// location is still created quietly.
#[test]
fn a_named_database_that_does_not_exist_is_an_error_until_init() {
    let f = Folder::new();
    let typo = f.path().join("typo/hadnoff.db");
    let t = typo.to_str().unwrap();
    for (args, env) in [
        (vec!["pending"], vec![("HANDOFF_DB", t)]),
        (vec!["questions"], vec![("HANDOFF_DB", t)]),
        (vec!["ask", "x"], vec![("HANDOFF_DB", t)]),
        (vec!["--db", t, "pending"], vec![]),
        (vec!["--db", t, "token", "list"], vec![]),
        (vec!["--db", t, "inbox-link"], vec![]),
        (vec!["--db", t, "events"], vec![]),
        (vec!["--db", t, "status"], vec![]),
    ] {
        let o = f.run(&args, &env);
        let err = one_line_error(&o, 2);
        assert!(
            err.contains(t) && err.contains("does not exist") && err.contains("handoff init"),
            "{args:?}: {err}"
        );
        assert!(!typo.parent().unwrap().exists(), "{args:?} created nothing");
    }
    // init creates it (folder too), says so, and is idempotent.
    let o = f.run(&["--json", "init"], &[("HANDOFF_DB", t)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&o)["database"]["created"], true);
    assert!(typo.exists());
    let o = f.run(&["init"], &[("HANDOFF_DB", t)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("already exists"), "{}", stdout(&o));
    let o = f.run(&["--json", "pending"], &[("HANDOFF_DB", t)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Nothing named: the default location is created quietly.
    let o = f.run(&["pending"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(f.default_db().exists());
}

/// A database named as a URL is refused in one line that says a file path
/// is wanted, from the flag, the environment and the config alike, and
/// nothing is created (taken as a path, `postgres://…` became a folder
/// `postgres:` with a fresh SQLite file in it). A PostgreSQL URL is named
/// as one, with `handoff migrate` (the one command that takes it so far),
/// and its password is never shown.
#[test]
fn a_database_url_is_a_server_for_the_store_and_refused_by_file_commands() {
    let f = Folder::new();
    // Nothing listens on port 1 of loopback: every attempt is refused at once.
    let url = "postgres://handoff:s3cret@127.0.0.1:1/handoff";
    let no_folder = |args: &[&str]| {
        for d in ["postgres:", "postgresql:"] {
            assert!(!f.path().join(d).exists(), "{args:?} created a folder");
        }
    };
    // The commands that work on a file say so, and what to do instead.
    f.config("[store]\npath = \"postgresql://handoff@127.0.0.1:1/handoff\"\n");
    for (args, env) in [
        (vec!["init"], vec![("HANDOFF_DB", url)]),
        (vec!["--db", url, "status"], vec![]),
        (vec!["init"], vec![]),
    ] {
        let o = f.run(&args, &env);
        let err = one_line_error(&o, 2);
        assert!(
            err.contains("PostgreSQL")
                && err.contains("handoff migrate")
                && err.contains("give a file path"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("s3cret"),
            "{args:?} showed the password: {err}"
        );
        no_folder(&args);
    }
    // The others use the server: unreachable, they say which one, without
    // its password.
    for (args, env) in [
        (vec!["pending"], vec![("HANDOFF_DB", url)]),
        (
            vec!["--db", url, "serve", "--listen", "127.0.0.1:0"],
            vec![],
        ),
    ] {
        let o = f.run(&args, &env);
        assert!(!o.status.success(), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("postgres://handoff:***@127.0.0.1:1/handoff"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("s3cret"),
            "{args:?} showed the password: {err}"
        );
        no_folder(&args);
    }
    // `[store] url` names a server; with `path` too, or not a PostgreSQL
    // URL, it is refused.
    f.config("[store]\nurl = \"postgres://handoff:s3cret@127.0.0.1:1/handoff\"\n");
    let o = f.run(&["pending"], &[]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("postgres://handoff:***@127.0.0.1:1/handoff"),
        "{err}"
    );
    f.config("[store]\nurl = \"postgres://127.0.0.1:1/h\"\npath = \"h.db\"\n");
    let err = one_line_error(&f.run(&["pending"], &[]), 2);
    assert!(err.contains("both [store] path and [store] url"), "{err}");
    f.config("[store]\nurl = \"mysql://127.0.0.1:1/h\"\n");
    let err = one_line_error(&f.run(&["pending"], &[]), 2);
    assert!(err.contains("postgres://"), "{err}");
    // Another scheme is a URL too, not a path.
    let o = f.run(&["--db", "mysql://db.example/handoff", "init"], &[]);
    let err = one_line_error(&o, 2);
    assert!(
        err.contains("mysql:// URL") && err.contains("give a file path"),
        "{err}"
    );
    assert!(!f.path().join("mysql:").exists());
    // A path that merely contains `:` is still a path.
    let odd = f.path().join("odd:name.db");
    let o = f.run(&["--db", odd.to_str().unwrap(), "init"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(odd.exists());
}

/// `--db` > `HANDOFF_DB` > the config's `[store] path` > the default.
#[tokio::test]
async fn the_database_precedence_is_flag_env_config_default() {
    let f = Folder::new();
    let (flag, env, cfg) = (
        f.path().join("flag.db"),
        f.path().join("env.db"),
        f.path().join("cfg.db"),
    );
    for p in [&flag, &env, &cfg] {
        common::create_db(p);
    }
    f.config(&format!("[store]\npath = \"{}\"\n", cfg.display()));
    let ask = |title: &str, args: &[&str], env_db: Option<&Path>| {
        let mut all = args.to_vec();
        all.extend(["ask", title]);
        let env: Vec<(&str, &str)> = env_db
            .map(|p| vec![("HANDOFF_DB", p.to_str().unwrap())])
            .unwrap_or_default();
        let o = f.run(&all, &env);
        assert!(o.status.success(), "{title}: {}", stderr(&o));
    };
    ask("to flag", &["--db", flag.to_str().unwrap()], Some(&env));
    ask("to env", &[], Some(&env));
    ask("to config", &[], None);
    assert_eq!(titles(&flag).await, ["to flag"]);
    assert_eq!(titles(&env).await, ["to env"]);
    assert_eq!(titles(&cfg).await, ["to config"]);
    // HANDOFF_CONFIG and --config pick another file; --config wins.
    let other = f.path().join("other.toml");
    let other_db = f.path().join("other.db");
    common::create_db(&other_db);
    std::fs::write(
        &other,
        format!("[store]\npath = \"{}\"\n", other_db.display()),
    )
    .unwrap();
    let o = f.run(
        &["ask", "via env"],
        &[("HANDOFF_CONFIG", other.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = f.run(
        &["--config", other.to_str().unwrap(), "ask", "via flag"],
        &[("HANDOFF_CONFIG", "/nowhere.toml")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(titles(&other_db).await, ["via env", "via flag"]);
    assert!(!f.default_db().exists());
}

/// Finding 3: with `HANDOFF_URL` set, host-only commands refuse in one line
/// and create no local database; `serve` does not start.
#[test]
fn remote_mode_refuses_host_only_commands_in_one_line() {
    let f = Folder::new();
    let remote = [
        ("HANDOFF_URL", "http://127.0.0.1:9"),
        ("HANDOFF_TOKEN", "hnd_x"),
    ];
    for args in [
        vec!["serve"],
        vec!["inbox-link"],
        vec!["init"],
        vec!["migrate"],
        vec!["pair", "ABC123"],
        vec!["token", "list"],
        vec!["recover"],
        vec!["purge", "--before", "2020-01-01"],
    ] {
        let o = f.run(&args, &remote);
        let err = one_line_error(&o, 2);
        assert!(err.contains("HANDOFF_URL"), "{args:?}: {err}");
        assert!(
            !f.default_db().exists(),
            "{args:?} created a local database"
        );
    }
    let o = f.run(&["serve"], &remote);
    assert!(stderr(&o).contains("unset HANDOFF_URL"), "{}", stderr(&o));
    // status says which daemon, and that it does not answer.
    let o = f.run(&["--json", "status"], &remote);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // A failure: the error object, with the report as its detail.
    let s = json(&o)["error"]["detail"]["status"].clone();
    assert_eq!(s["remote"]["url"], "http://127.0.0.1:9");
    assert_eq!(s["remote"]["running"], false);
    assert!(s["database"].is_null());
}

/// Config errors (item 12): a missing file and a bad rule print their text
/// once; errors found after parsing name the line; a host name listens.
#[test]
fn config_errors_name_the_line_and_print_once() {
    let f = Folder::new();
    let o = f.run(&["--config", "nope.toml", "pending"], &[]);
    let err = one_line_error(&o, 2);
    assert!(err.contains("nope.toml"), "{err}");
    assert_eq!(
        err.matches("no such file").count() + err.matches("No such file").count(),
        1,
        "{err}"
    );
    f.config(
        "[[rule]]\nname = \"ok\"\nkind = \"a\"\ndecide = \"approve\"\n\n[[rule]]\nname = \"bad\"\nkind = \"a\"\ndecide = \"approve\"\nwhen = [{ pointer = \"amount\", less_than = 5 }]\n",
    );
    for args in [
        vec!["serve"],
        vec!["pending"],
        vec!["propose", "--kind", "a", "--summary", "s", "--args", "{}"],
    ] {
        let o = f.run(&args, &[]);
        let err = one_line_error(&o, 2);
        assert!(
            err.contains("config/handoff.toml line 6"),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("`bad`").count(), 1, "{args:?}: {err}");
    }
    f.config("[telegram]\ndigest_threshold = 5\npoll_timeout_secs = 60\n");
    let o = f.run(&["serve"], &[]);
    let err = one_line_error(&o, 2);
    assert!(
        err.contains("line 3") && err.contains("poll_timeout_secs"),
        "{err}"
    );
    f.config("[http]\nlisten = \"localhost:0\"\n");
    let daemon = Daemon::spawn(
        Some(f.path()),
        &["serve"],
        &[("HOME", f.home().to_str().unwrap())],
    );
    assert!(daemon.addr.starts_with("127.0.0.1:"), "{}", daemon.addr);
}

/// HANDOFF_USER and HANDOFF_CONFIG are in `--help`'s environment list.
#[test]
fn help_lists_the_environment() {
    let f = Folder::new();
    let help = stdout(&f.run(&["--help"], &[]));
    for var in [
        "HANDOFF_USER",
        "HANDOFF_CONFIG",
        "HANDOFF_DB",
        "HANDOFF_URL",
    ] {
        assert!(help.contains(var), "{var} missing from --help:\n{help}");
    }
}
