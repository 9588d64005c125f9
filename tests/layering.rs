//! The layering the README's architecture section states, checked on the
//! source itself so a new import that breaks it fails the suite:
//!
//! - the store knows nothing above it (no chat, API, daemon, CLI, ops, …);
//! - only the CLI starts the daemon; the daemon's parts (api, chat, notify,
//!   follow, shared) never reach back into it or into each other's insides;
//! - teloxide appears only under `chat`, sqlx only under `store`;
//! - `sign` is a leaf;
//! - the store runs no process (rule commands and verifiers run in `programs`);
//! - the `--exec` runner (`ops/run.rs`) prints nothing: the CLI words its report;
//! - no file is named by its size or by nothing (`_more`, `prims`, `calls`, `db`);
//! - no HTTP handler or chat door reaches the store: the API and the chat
//!   bridge call the operations;
//! - a proposal's rules and the store-error mapping live once, in `ops`
//!   (the API and the CLI classify no store error themselves).
//!
//! Comment lines are ignored: a doc link to a module is not an import.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every source file as (path relative to `src/`, its code lines).
fn code() -> Vec<(String, Vec<String>)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&p).unwrap();
            let lines = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .map(str::to_string)
                .collect();
            (rel, lines)
        })
        .collect()
}

/// Whether `rel` (a path under `src/`) belongs to module `m` (`m.rs` or `m/…`).
fn in_module(rel: &str, m: &str) -> bool {
    rel == format!("{m}.rs") || rel.starts_with(&format!("{m}/"))
}

/// The lines of files in `from` that mention one of `needles`, as
/// `file: line` — what breaks the rule.
fn offenders(from: &[&str], needles: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    for (rel, lines) in code() {
        if !from.iter().any(|m| in_module(&rel, m)) {
            continue;
        }
        for l in &lines {
            if needles.iter().any(|n| l.contains(n)) {
                bad.push(format!("{rel}: {}", l.trim()));
            }
        }
    }
    bad
}

fn crate_paths(modules: &[&str]) -> Vec<String> {
    modules
        .iter()
        .flat_map(|m| {
            [
                format!("crate::{m}::"),
                format!("crate::{m};"),
                format!("crate::{m}}}"),
            ]
        })
        .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn the_store_imports_nothing_above_it() {
    let above = crate_paths(&[
        "chat", "api", "daemon", "cli", "ops", "notify", "mcp", "follow", "shared", "config",
        "programs",
    ]);
    let bad = offenders(&["store"], &refs(&above));
    assert!(bad.is_empty(), "the store reaches up:\n{}", bad.join("\n"));
}

/// Rule commands and verifiers run in `programs`; the store only records
/// what they decided, so no transaction ever waits on a process.
#[test]
fn the_store_runs_no_process() {
    let bad = offenders(&["store"], &["process::Command", "tokio::process"]);
    assert!(
        bad.is_empty(),
        "the store spawns a process:\n{}",
        bad.join("\n")
    );
}

#[test]
fn only_the_cli_starts_the_daemon() {
    let needle = crate_paths(&["daemon"]);
    let from = [
        "api", "chat", "notify", "follow", "shared", "ops", "mcp", "config", "store", "sign",
        "clock", "fault",
    ];
    let bad = offenders(&from, &refs(&needle));
    assert!(
        bad.is_empty(),
        "imports of the daemon outside the CLI:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_daemons_parts_do_not_reach_into_each_other() {
    for (from, forbidden) in [
        ("chat", &["api", "notify", "cli", "mcp"][..]),
        ("notify", &["api", "chat", "cli", "mcp"][..]),
        ("api", &["notify", "cli", "mcp"][..]),
        ("follow", &["api", "chat", "notify", "cli", "shared"][..]),
        ("shared", &["api", "chat", "notify", "cli"][..]),
        ("config", &["api", "chat", "notify", "cli", "ops"][..]),
    ] {
        let needles = crate_paths(forbidden);
        let bad = offenders(&[from], &refs(&needles));
        assert!(
            bad.is_empty(),
            "{from} reaches into {forbidden:?}:\n{}",
            bad.join("\n")
        );
    }
}

#[test]
fn sign_is_a_leaf() {
    let bad = offenders(&["sign"], &["crate::"]);
    assert!(bad.is_empty(), "sign imports:\n{}", bad.join("\n"));
}

/// The `--exec` runner returns a report that the CLI words: `ops/run.rs`
/// writes to no terminal itself (the command's output goes to the writers
/// its caller passes), and the CLI's wrapper of it never reaches for the
/// renderer (one direction: the commands use both).
#[test]
fn the_exec_runner_returns_and_the_cli_prints() {
    let bad = offenders(
        &["ops/run"],
        &["print!", "println!", "stdout()", "stderr()"],
    );
    assert!(bad.is_empty(), "ops/run.rs prints:\n{}", bad.join("\n"));
    let bad = offenders(&["cli/actions/exec"], &["render"]);
    assert!(
        bad.is_empty(),
        "the runner wrapper uses the renderer:\n{}",
        bad.join("\n")
    );
}

#[test]
fn each_foreign_library_stays_in_its_module() {
    for (lib, home) in [("teloxide", "chat"), ("sqlx", "store")] {
        let elsewhere: Vec<String> = code()
            .into_iter()
            .filter(|(rel, _)| !in_module(rel, home))
            .flat_map(|(rel, lines)| {
                lines
                    .into_iter()
                    .filter(|l| l.contains(&format!("{lib}::")))
                    .map(move |l| format!("{rel}: {}", l.trim()))
            })
            .collect();
        assert!(
            elsewhere.is_empty(),
            "{lib} outside {home}:\n{}",
            elsewhere.join("\n")
        );
    }
}

#[test]
fn files_are_named_by_their_concept() {
    let vague: Vec<String> = code()
        .into_iter()
        .map(|(rel, _)| rel)
        .filter(|rel| {
            let stem = rel.rsplit('/').next().unwrap().trim_end_matches(".rs");
            stem.ends_with("_more")
                || ["prims", "calls", "db", "misc", "util", "utils", "helpers"].contains(&stem)
        })
        .collect();
    assert!(vague.is_empty(), "files named by nothing: {vague:?}");
}

/// The top-level module a file under `src/` belongs to (`api` for
/// `api/auth.rs`), `None` for the crate root.
fn top_module(rel: &str) -> Option<&str> {
    let top = rel.split('/').next()?.trim_end_matches(".rs");
    (!["lib", "main"].contains(&top)).then_some(top)
}

/// Which top-level modules each one names through `crate::m` (grouped
/// `crate::{a, b}` imports included).
fn module_graph() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let files = code();
    let tops: std::collections::BTreeSet<String> = files
        .iter()
        .filter_map(|(rel, _)| top_module(rel).map(str::to_string))
        .collect();
    let mut graph = std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
    for (rel, lines) in &files {
        let Some(from) = top_module(rel) else {
            continue;
        };
        let text = lines.join("\n");
        let mut named = Vec::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                named.extend(
                    inner
                        .split(',')
                        .map(|p| p.trim().split("::").next().unwrap_or("")),
                );
            } else {
                named.push(
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or(""),
                );
            }
        }
        for to in named {
            if to != from && tops.contains(to) {
                graph
                    .entry(from.to_string())
                    .or_default()
                    .insert(to.to_string());
            }
        }
    }
    graph
}

/// "No import loop between top-level modules": the graph of `crate::`
/// paths is acyclic, so each module can be read knowing only those below.
#[test]
fn top_level_modules_import_no_loop() {
    let graph = module_graph();
    assert!(
        graph.get("daemon").is_some_and(|d| d.contains("store")),
        "the scan sees daemon → store: {graph:?}"
    );
    // Depth-first search for a back edge; report the loop's path.
    fn visit(
        m: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for to in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(to, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    for m in graph.keys() {
        if let Some(cycle) = visit(m, &graph, &mut Vec::new(), &mut done) {
            panic!(
                "an import loop between top-level modules: {}",
                cycle.join(" → ")
            );
        }
    }
}

/// The lines of module `m` (`src/<m>.rs` and `src/<m>/**`) that reach
/// the store themselves (a `.store.` call, `Store::`, `store::Store`), by
/// file.
fn store_calls(m: &str) -> std::collections::BTreeMap<String, usize> {
    let mut by_file = std::collections::BTreeMap::new();
    for (rel, lines) in code() {
        if !in_module(&rel, m) {
            continue;
        }
        let n = lines
            .iter()
            .map(|l| l.trim())
            .filter(|t| {
                t.contains(".store.")
                    || t.starts_with(".store")
                    || t.ends_with(".store")
                    || t.contains("Store::")
                    || t.contains("store::Store")
            })
            .count();
        if n > 0 {
            by_file.insert(rel, n);
        }
    }
    by_file
}

/// The HTTP doors call the operations the CLI and MCP call (docs/architecture.md,
/// the application layer), never the store: every handler, the caller's
/// credentials, the event log's pages and streams, health and metrics go
/// through `ops::Local` (scoped to the caller with `Caller::ops`).
#[test]
fn http_handlers_call_the_operations_not_the_store() {
    let calls = store_calls("api");
    assert!(
        calls.is_empty(),
        "call the operations in `ops` instead of the store: {calls:?}"
    );
}

/// The chat doors (Telegram and Slack) call the operations too, never the
/// store: a tap's decision is the operation every door calls (approve,
/// reject, reply, annotate…), and the bridge's own bookkeeping (message
/// records, cursors, holds, topics, pairing, refused taps, voice notes,
/// Slack's records) is in `ops/local/chat*.rs`.
#[test]
fn chat_handlers_call_the_operations_not_the_store() {
    let calls = store_calls("chat");
    assert!(
        calls.is_empty(),
        "call the operations in `ops` instead of the store: {calls:?}"
    );
}

/// A proposal's rules and the mapping of store failures to refusals are
/// written once, in the operations: `apply_rules` is called only by
/// `ops/local`, and only `ops/error.rs` turns a store error into a refusal
/// (the HTTP API and the CLI's exit codes read it from there), so no door
/// words or classifies one differently.
#[test]
fn rules_and_the_error_mapping_live_once_in_the_operations() {
    let mut bad = Vec::new();
    for (rel, lines) in code() {
        for l in &lines {
            let rules = l.contains("apply_rules(") && !l.contains("fn apply_rules");
            if rules && !rel.starts_with("ops/local") {
                bad.push(format!("{rel}: {}", l.trim()));
            }
            let from_store_failure = ["Error> for", "Refusal> for"].iter().any(|t| l.contains(t));
            let mapping = l.contains("impl From<") && l.contains("store::") && from_store_failure;
            if mapping && rel != "ops/error.rs" && !l.contains("for ApiError") {
                bad.push(format!("{rel}: {}", l.trim()));
            }
        }
    }
    // The API's own impls only hand the store's error to the one mapping.
    let api = code()
        .into_iter()
        .find(|(rel, _)| rel == "api/error.rs")
        .expect("api/error.rs");
    let text = api.1.join("\n");
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    assert!(
        !text.contains("store::Error::") && !text.contains("Class::"),
        "api/error.rs maps store errors itself instead of through ops::Error"
    );
    // Nor does the CLI classify a store error it meets in an error's chain:
    // it reads it as the `ops::Error` the one mapping gives.
    for (rel, lines) in code() {
        if !in_module(&rel, "cli") {
            continue;
        }
        let text = lines.join("\n");
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for l in text.lines() {
            let classifies = ["store::Error::", "actions::Error::", "Class::"]
                .iter()
                .any(|t| l.contains(t));
            if classifies {
                bad.push(format!("{rel}: {}", l.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "rules or error mapping outside the operations:\n{}",
        bad.join("\n")
    );
}
