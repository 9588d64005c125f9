//! What a new user meets on a fresh clone, one test per step that once went
//! wrong: the container steps on a fresh volume, the first command's build
//! time, where to run the quick start, and what `./test` installs and runs.
//! The steps are read from the documents themselves (README.md and the
//! book under docs/), so the text a newcomer follows is the text tested.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::daemon::Daemon;
use common::{stderr, stdout};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn repo_file(name: &str) -> String {
    std::fs::read_to_string(repo().join(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
}

/// README.md and every Markdown file of the book under docs/.
fn documents() -> Vec<(PathBuf, String)> {
    let mut out = vec![(PathBuf::from("README.md"), repo_file("README.md"))];
    let mut stack = vec![repo().join("docs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let rel = p.strip_prefix(repo()).unwrap().to_path_buf();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out
}

/// The fenced code blocks of `text`, each as its lines.
fn code_blocks(text: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut cur: Option<Vec<String>> = None;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            match cur.take() {
                Some(b) => blocks.push(b),
                None => cur = Some(Vec::new()),
            }
        } else if let Some(b) = cur.as_mut() {
            b.push(l.to_string());
        }
    }
    blocks
}

/// The one code block in the documents holding a line that starts with
/// `first`, its `\` continuations joined and comment lines dropped.
fn block_starting(first: &str) -> Vec<String> {
    let found: Vec<Vec<String>> = documents()
        .iter()
        .flat_map(|(_, t)| code_blocks(t))
        .filter(|b| b.iter().any(|l| l.trim_start().starts_with(first)))
        .collect();
    assert_eq!(found.len(), 1, "one block with `{first}`: {found:?}");
    let mut lines = Vec::new();
    let mut acc = String::new();
    for l in &found[0] {
        let l = l.trim();
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        match l.strip_suffix('\\') {
            Some(head) => acc.push_str(head),
            None => {
                acc.push_str(l);
                lines.push(std::mem::take(&mut acc));
            }
        }
    }
    lines
}

/// The Dockerfile's runtime stage: its ENV, ENTRYPOINT and CMD.
struct Image {
    env: Vec<(String, String)>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
}

fn image() -> Image {
    let mut img = Image {
        env: Vec::new(),
        entrypoint: Vec::new(),
        cmd: Vec::new(),
    };
    for l in repo_file("Dockerfile").lines().map(str::trim) {
        let (ins, rest) = l.split_once(' ').unwrap_or((l, ""));
        let list = || -> Vec<String> { serde_json::from_str(rest).expect("exec form") };
        match ins {
            "FROM" => {
                img = Image {
                    env: Vec::new(),
                    entrypoint: Vec::new(),
                    cmd: Vec::new(),
                }
            }
            "ENV" => {
                let (k, v) = rest.split_once('=').expect("ENV K=V");
                img.env.push((k.to_string(), v.to_string()));
            }
            "ENTRYPOINT" => img.entrypoint = list(),
            "CMD" => img.cmd = list(),
            _ => {}
        }
    }
    img
}

/// The container steps, run as the image runs them but without a Docker
/// daemon: each `docker run` starts the built binary as the image's
/// ENTRYPOINT, with its ENV and CMD, `-e` variables added, each named
/// volume a fresh empty folder standing in for its mount point. Two
/// departures forced by running as a test: port 8642 becomes a free one
/// (another program may hold 8642), and `docker build` is the `cargo build`
/// that made this test's binary.
#[test]
fn the_container_steps_work_on_a_fresh_volume() {
    let lines = block_starting("docker build");
    let img = image();
    assert_eq!(img.entrypoint.len(), 1, "{:?}", img.entrypoint);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut volumes: HashMap<String, PathBuf> = HashMap::new();
    let mut daemons = Vec::new();
    let mut ran = 0;
    for line in &lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.get(..2) {
            Some(["docker", "build"]) => continue,
            Some(["docker", "volume"]) => {
                assert_eq!(words[2], "create", "{line}");
                let v = dir.path().join(format!("volume-{}", words[3]));
                std::fs::create_dir_all(&v).unwrap();
                volumes.insert(words[3].to_string(), v);
                continue;
            }
            Some(["docker", "run"]) => {}
            _ => panic!("a step the test does not know: {line}"),
        }
        // docker run [flags] IMAGE [ARGS]
        let (mut mounts, mut env, mut detach) = (Vec::new(), img.env.clone(), false);
        let mut i = 2;
        while words[i].starts_with('-') {
            match words[i] {
                "--rm" => {}
                "-d" => detach = true,
                "--name" | "-p" => i += 1,
                "-v" => {
                    i += 1;
                    let (vol, at) = words[i].split_once(':').unwrap();
                    let host = volumes
                        .get(vol)
                        .unwrap_or_else(|| panic!("`{line}` mounts {vol}, which no step created"));
                    mounts.push((at.to_string(), host.display().to_string()));
                }
                "-e" => {
                    i += 1;
                    let (k, v) = words[i].split_once('=').unwrap();
                    env.push((k.to_string(), v.to_string()));
                }
                f => panic!("a docker run flag the test does not know: {f} in {line}"),
            }
            i += 1;
        }
        assert_eq!(words[i], "handoff", "the image is `handoff`: {line}");
        let args: Vec<String> = if words.len() > i + 1 {
            words[i + 1..].iter().map(|s| s.to_string()).collect()
        } else {
            img.cmd.clone()
        };
        let inside = |s: &str| -> String {
            let mut s = s.replace(":8642", ":0");
            for (at, host) in &mounts {
                if s.starts_with(at.as_str()) {
                    s = format!("{host}{}", &s[at.len()..]);
                }
            }
            s
        };
        let args: Vec<String> = args.iter().map(|a| inside(a)).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.clone(), inside(v))).collect();
        let home_s = home.display().to_string();
        let mut env_ref: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        env_ref.push(("HOME", &home_s));
        ran += 1;
        if detach {
            let arg_ref: Vec<&str> = args.iter().map(String::as_str).collect();
            let d = Daemon::spawn(Some(dir.path()), &arg_ref, &env_ref);
            let port = d.addr.rsplit(':').next().unwrap().to_string();
            let health = ureq_get(&format!("127.0.0.1:{port}"), "/healthz");
            assert!(health.contains("200"), "`{line}`: /healthz {health}");
            daemons.push(d);
            continue;
        }
        let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
        c.args(&args).current_dir(dir.path());
        for k in [
            "HANDOFF_DB",
            "HANDOFF_CONFIG",
            "HANDOFF_URL",
            "HANDOFF_TOKEN",
        ] {
            c.env_remove(k);
        }
        for (k, v) in &env_ref {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "`{line}` exits {:?}: {}{}",
            o.status.code(),
            stdout(&o),
            stderr(&o)
        );
    }
    assert!(ran >= 2, "the block runs the image: {lines:?}");
    assert_eq!(daemons.len(), 1, "the block starts the daemon once");
}

/// A plain HTTP/1.0 GET, answered with the status line and body.
fn ureq_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The README's first command builds with a profile that is quick to a
/// first success (no fat LTO, several codegen units) and says how long it
/// takes; `cargo install` in the quick start uses the same profile, and the
/// shipped release profile keeps its whole-program optimisation.
#[test]
fn the_first_command_is_a_quick_build_and_says_how_long() {
    let readme = repo_file("README.md");
    let first = code_blocks(&readme)
        .into_iter()
        .next()
        .expect("a code block at the top");
    let run = first
        .iter()
        .find(|l| l.contains("-- serve"))
        .expect("the first block runs the daemon");
    let profile = if let Some(rest) = run.split("--profile ").nth(1) {
        rest.split_whitespace().next().unwrap().to_string()
    } else if run.contains("--release") {
        "release".to_string()
    } else {
        "dev".to_string()
    };
    let manifest: toml::Table = toml::from_str(&repo_file("Cargo.toml")).unwrap();
    let profiles = manifest["profile"].as_table().unwrap();
    // A key of a profile, following `inherits`.
    let key = |name: &str, k: &str| -> Option<toml::Value> {
        let mut name = name.to_string();
        loop {
            let p = profiles.get(&name)?.as_table()?;
            if let Some(v) = p.get(k) {
                return Some(v.clone());
            }
            name = p.get("inherits")?.as_str()?.to_string();
        }
    };
    let lto = key(&profile, "lto");
    assert!(
        matches!(
            lto,
            None | Some(toml::Value::Boolean(false)) | Some(toml::Value::String(_))
        ) && lto != Some(toml::Value::String("fat".into())),
        "`{run}`: profile {profile} has lto = {lto:?}"
    );
    assert_ne!(
        key(&profile, "codegen-units").and_then(|v| v.as_integer()),
        Some(1),
        "`{run}`: profile {profile} optimises as one unit"
    );
    assert!(
        run.contains(" min"),
        "`{run}` says how long the build takes"
    );
    assert!(
        readme.contains(&format!("cargo install --path . --profile {profile}")),
        "the quick start installs with the same profile as `{run}`"
    );
    assert_eq!(
        key("release", "lto"),
        Some(toml::Value::String("fat".into()))
    );
}

/// The quick start says where to run it; what it copies is in the checkout
/// and what it writes is git-ignored there.
#[test]
fn the_quick_start_says_where_to_run_it() {
    let readme = repo_file("README.md");
    let start = readme.find("<!-- quickstart -->").unwrap();
    let before = &readme[..start];
    let intro = &before[before
        .rfind("## Quick start")
        .expect("a quick start heading")..];
    assert!(intro.contains("in the checkout"), "{intro}");
    let block = &readme[start..];
    let cp = block
        .lines()
        .find(|l| l.starts_with("cp "))
        .expect("the quick start copies the example config");
    let words: Vec<&str> = cp.split_whitespace().collect();
    assert!(
        repo().join(words[1]).is_file(),
        "{} is in the checkout",
        words[1]
    );
    let ignored = repo_file(".gitignore");
    assert!(
        ignored.lines().any(|l| l.trim() == words[2]),
        "{} is git-ignored, so the copy stays out of commits",
        words[2]
    );
}

/// `./test` installs Debian packages without their recommends, runs every
/// test binary even after one fails, and runs schemathesis after a failed
/// `cargo test` too, exiting with the failure.
#[test]
fn the_test_script_installs_lean_and_runs_everything() {
    let script = repo_file("test");
    for f in ["test", ".ci/schemathesis"] {
        for l in repo_file(f)
            .lines()
            .filter(|l| l.contains("apt-get install"))
        {
            if l.trim_start().starts_with('#') || l.contains("echo") {
                continue;
            }
            assert!(l.contains("--no-install-recommends"), "{f}: {l}");
        }
    }
    // The tail that runs without arguments, with `cargo` and schemathesis
    // stubbed: both run, cargo with --no-fail-fast, and the exit is the
    // failure's.
    let tail = &script[script.find("if [ $# -gt 0 ]").expect("the argument case")..];
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(bin.join("../.ci")).unwrap();
    let stub = |path: PathBuf, body: &str| {
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let log = dir.path().join("log");
    let log_s = log.display();
    stub(
        bin.join("cargo"),
        &format!("echo \"cargo $*\" >> {log_s}; exit 101"),
    );
    stub(
        dir.path().join(".ci/schemathesis"),
        &format!("echo schemathesis >> {log_s}"),
    );
    let o = Command::new("bash")
        .args(["-c", tail, "test"])
        .current_dir(dir.path())
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap();
    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        ran,
        "cargo test --no-fail-fast\nschemathesis\n",
        "{}",
        stderr(&o)
    );
    assert_eq!(o.status.code(), Some(101), "the failure's status");
}

/// `handoff wait --session` hands over a reply on its first delivery, so it
/// does not call it "delivered before" (the pickup marks it seen before it
/// is printed); `session resume` afterwards does.
#[test]
fn wait_does_not_call_a_first_delivery_delivered_before() {
    let db = common::TempDb::new();
    let o = db.cli(&["ask", "--session", "agent-a", "Which database?", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = common::json(&o)["question"]["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = db.cli(&["reply", &id, "Postgres"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = db.cli(&["wait", "--session", "agent-a", "--timeout", "10s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = stdout(&o);
    assert!(first.contains("Postgres"), "{first}");
    assert!(
        !first.contains("delivered before"),
        "first delivery: {first}"
    );
    let o = db.cli(&["session", "resume", "--session", "agent-a"]);
    let again = stdout(&o);
    assert!(again.contains("delivered before"), "resume: {again}");
}

/// `--help` and every man page list the environment, the variables the
/// README names among them, and a HANDOFF_LOG that is not a filter is
/// refused with what to write instead.
#[test]
fn help_and_man_pages_name_the_environment_and_a_bad_log_filter_is_refused() {
    let bin = env!("CARGO_BIN_EXE_handoff");
    let vars = [
        "HANDOFF_LOG",
        "HANDOFF_TELEGRAM_TOKEN",
        "HANDOFF_TELEGRAM_WEBHOOK_SECRET",
        "HANDOFF_RULES",
        "HANDOFF_DB",
        "HANDOFF_URL",
    ];
    let help = stdout(&Command::new(bin).arg("--help").output().unwrap());
    for v in vars {
        assert!(help.contains(v), "--help names {v}: {help}");
    }
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(bin)
        .args(["man", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut pages = 0;
    for e in std::fs::read_dir(dir.path()).unwrap().map(Result::unwrap) {
        let page = std::fs::read_to_string(e.path()).unwrap();
        assert!(page.contains(".SH ENVIRONMENT"), "{:?}", e.path());
        for v in vars {
            assert!(page.contains(v), "{:?} names {v}", e.path());
        }
        pages += 1;
    }
    assert!(pages > 10, "one page per command");
    let o = Command::new(bin)
        .arg("--version")
        .env("HANDOFF_LOG", "handoff=loud")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "a bad HANDOFF_LOG is refused");
    let e = stderr(&o);
    assert!(
        e.contains("HANDOFF_LOG") && e.contains("handoff=debug"),
        "{e}"
    );
    // A bare word that is no level is refused too (tracing would read it
    // as a target and log nothing); a level or a crate name is a filter.
    for (v, code) in [("loud", Some(2)), ("debug", Some(0)), ("handoff", Some(0))] {
        let o = Command::new(bin)
            .arg("--version")
            .env("HANDOFF_LOG", v)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), code, "HANDOFF_LOG={v}: {}", stderr(&o));
    }
}

/// `handoff` with `HANDOFF_DB=db` in the folder `cwd`, no agent identity
/// or config from the caller's environment.
fn cli_in(db: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_handoff"));
    c.args(args).current_dir(cwd).env("HANDOFF_DB", db);
    for k in [
        "HANDOFF_URL",
        "HANDOFF_TOKEN",
        "HANDOFF_CONFIG",
        "HANDOFF_PROJECT",
        "HANDOFF_SESSION",
        "HANDOFF_RULES",
    ] {
        c.env_remove(k);
    }
    c.output().unwrap()
}

/// `actions --status all` is taken as `questions --status all` is;
/// `inbox-link` warns when no daemon answers where the link points; `ask`
/// and `propose` file under the same project by the same rule.
#[test]
fn status_all_inbox_link_warning_and_one_project_rule() {
    let db = common::TempDb::new();
    let folder = db.dir.path().join("shop-api");
    std::fs::create_dir_all(&folder).unwrap();
    let o = cli_in(&db.path, &folder, &["actions", "--status", "all"]);
    assert!(o.status.success(), "actions --status all: {}", stderr(&o));

    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let o = cli_in(&db.path, &folder, &["inbox-link", "--url", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("warning") && e.contains(&url) && e.contains("handoff serve"),
        "inbox-link with no daemon: {e}"
    );
    let o = cli_in(&db.path, &folder, &["inbox-link", "--url", &url, "--json"]);
    assert_eq!(common::json(&o)["inbox_link"]["daemon_running"], false);

    let o = cli_in(&db.path, &folder, &["ask", "Ship it?", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let asked = common::json(&o)["question"]["project"].clone();
    let o = cli_in(
        &db.path,
        &folder,
        &[
            "propose",
            "--kind",
            "deploy",
            "--summary",
            "Ship it",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let proposed = common::json(&o)["action"]["project"].clone();
    assert_eq!(asked, "shop-api", "ask files under the folder's name");
    assert_eq!(proposed, asked, "propose files where ask does");
}

/// The example config the quick start copies decides nothing by itself,
/// and a proposal a `[[rule]]` decided says which rule, in text and JSON.
#[test]
fn the_example_config_ships_no_live_rules_and_propose_names_the_deciding_rule() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("work");
    std::fs::create_dir_all(folder.join("config")).unwrap();
    std::fs::copy(
        repo().join("config/handoff.example.toml"),
        folder.join("config/handoff.toml"),
    )
    .unwrap();
    let db = common::TempDb::new();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"small-refunds\"\nkind = \"payments.refund\"\nwhen = [{ pointer = \"/amount\", less_than = 50 }]\ndecide = \"approve\"\n",
    )
    .unwrap();
    let refund = |summary: &str, extra: &[&str]| {
        let mut args = vec![
            "propose",
            "--kind",
            "payments.refund",
            "--summary",
            summary,
            "--args",
            r#"{"amount": 10}"#,
        ];
        args.extend_from_slice(extra);
        cli_in(&db.path, &folder, &args)
    };
    let o = refund("Refund order 1", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("pending"), "no rule decides it: {out}");
    let r = rules.to_str().unwrap();
    let out = stdout(&refund("Refund order 2", &["--rules", r]));
    assert!(out.contains("approved by rule small-refunds"), "{out}");
    let v = common::json(&refund("Refund order 3", &["--rules", r, "--json"]));
    assert_eq!(v["rule"]["rule"], "small-refunds", "{v}");
    assert_eq!(v["rule"]["decision"], "approve", "{v}");
}
