//! The rule a grant saves, derived from one tool input, and whether a later
//! input falls under it. Pure functions, no SQL.
//!
//! Patterns are written in Claude Code's own rule terms (`Bash(npm test:*)`,
//! `Edit(//abs/path)`) so what the message shows is what is saved, and never
//! wider:
//!
//! - `Bash`: a prefix of two or three plain words (`npm test`, `cargo build`)
//!   saved as `npm test:*`: it covers that command with more plain arguments,
//!   never one chained, piped or redirected (`npm test; rm -rf ~` is not
//!   covered). A command whose first two words are not plain words is saved
//!   exactly, and covers only itself.
//! - `Edit`, `Write`, `MultiEdit`: the absolute `file_path`, exactly;
//!   `NotebookEdit`: the absolute `notebook_path`, exactly.
//! - any other tool: no grant is offered (approve once only).
//!
//! A grant may also be kept to a place: a glob over the prompt's working
//! directory ([`in_place`]), `/home/dev/shop/**` for "here" ([`here`]).
//! `*` stands for any characters within one folder name, `**` for any
//! number of folders (none included); a directory with `.` or `..` parts
//! matches no glob, so a grant never reaches outside its folder that way.

use serde_json::Value;

/// Characters that make a shell command more than one plain command.
const SHELL_META: &[char] = &[
    ';', '&', '|', '<', '>', '$', '`', '(', ')', '\n', '\r', '\\', '*', '?', '[', ']', '{', '}',
    '~', '!', '#', '\'', '"',
];

/// The most words a Bash prefix keeps.
const MAX_PREFIX_WORDS: usize = 3;

/// A word that can stand in a prefix: a program or a subcommand.
fn plain_word(w: &str) -> bool {
    !w.is_empty()
        && !w.starts_with('-')
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'))
}

/// The input field that names the file a file tool touches.
fn path_key(tool: &str) -> Option<&'static str> {
    match tool {
        "Edit" | "Write" | "MultiEdit" => Some("file_path"),
        "NotebookEdit" => Some("notebook_path"),
        _ => None,
    }
}

/// The pattern a grant on this prompt would save, or `None` when no grant is
/// offered for this tool or input.
pub fn derive(tool: &str, input: &Value) -> Option<String> {
    if tool == "Bash" {
        let cmd = input.get("command")?.as_str()?.trim();
        // A longer command is approved once: an exact rule that long
        // would not be read before it is saved.
        if cmd.is_empty() || cmd.ends_with(":*") || cmd.chars().count() > 500 {
            return None;
        }
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let prefix: Vec<&str> = words
            .iter()
            .take(MAX_PREFIX_WORDS)
            .take_while(|w| plain_word(w))
            .copied()
            .collect();
        // Two plain words at least (`npm test`), and a command that is one
        // plain command: else the grant covers this exact command only.
        if prefix.len() >= 2 && !cmd.contains(SHELL_META) {
            return Some(format!("{}:*", prefix.join(" ")));
        }
        return Some(cmd.to_string());
    }
    let path = input.get(path_key(tool)?)?.as_str()?;
    (path.starts_with('/') && !path.contains('\n')).then(|| path.to_string())
}

/// Whether `input` of `tool` falls under `pattern` (saved for the same tool).
pub fn covers(tool: &str, pattern: &str, input: &Value) -> bool {
    if tool == "Bash" {
        let Some(cmd) = input.get("command").and_then(Value::as_str) else {
            return false;
        };
        let cmd = cmd.trim();
        return match pattern.strip_suffix(":*") {
            Some(prefix) => {
                !cmd.contains(SHELL_META)
                    && (cmd == prefix
                        || cmd
                            .strip_prefix(prefix)
                            .is_some_and(|rest| rest.starts_with([' ', '\t'])))
            }
            None => cmd == pattern,
        };
    }
    match path_key(tool) {
        Some(key) => input.get(key).and_then(Value::as_str) == Some(pattern),
        None => false,
    }
}

/// The tool name of the rule Claude Code documents for `tool`: `Edit` for
/// every file-editing tool (Claude Code's `Edit(…)` rules apply to all its
/// built-in file edits: Edit, Write, MultiEdit, NotebookEdit), else the
/// tool itself.
pub fn claude_rule_tool(tool: &str) -> &str {
    if path_key(tool).is_some() {
        "Edit"
    } else {
        tool
    }
}

/// The rule as Claude Code writes it: `Bash(npm test:*)`, `Edit(//abs/path)`
/// (a `//` path is absolute in Claude Code's permission rules).
pub fn claude_rule_content(tool: &str, pattern: &str) -> String {
    if path_key(tool).is_some() {
        format!("/{pattern}")
    } else {
        pattern.to_string()
    }
}

/// The rule shown to people, in Claude Code's documented form:
/// `Bash(npm test:*)`, `Edit(//abs/path)` (for a Write too).
pub fn shown(tool: &str, pattern: &str) -> String {
    format!(
        "{}({})",
        claude_rule_tool(tool),
        claude_rule_content(tool, pattern)
    )
}

/// The rule Codex's own allow-list takes for a `Bash` grant of `pattern`,
/// as its execpolicy rules files spell it (and as Codex itself appends it
/// when a person picks "don't ask again"):
/// `prefix_rule(pattern=["npm", "test"], decision="allow")`. Only a prefix
/// pattern (`npm test:*`) has one: a prefix rule for an exact command would
/// also allow it with more arguments, wider than the grant, and other
/// tools have no execpolicy rule. `None` then: the grant holds in handoff only.
pub fn codex_prefix_rule(tool: &str, pattern: &str) -> Option<String> {
    if tool != "Bash" {
        return None;
    }
    let prefix = pattern.strip_suffix(":*")?;
    let words: Vec<&str> = prefix.split(' ').collect();
    if words.is_empty() || !words.iter().all(|w| plain_word(w)) {
        return None;
    }
    // Each token a JSON string, joined with ", ": Codex's own spelling, so
    // a rule it appended and ours are the same line (never twice).
    let tokens: Vec<String> = words
        .iter()
        .map(|w| serde_json::Value::from(*w).to_string())
        .collect();
    Some(format!(
        "prefix_rule(pattern=[{}], decision=\"allow\")",
        tokens.join(", ")
    ))
}

/// The glob of "here": the folder `cwd` and everything beneath it.
pub fn here(cwd: &str) -> String {
    let dir = cwd.trim_end_matches('/');
    format!("{dir}/**")
}

/// Why `glob` cannot keep a grant to a place, if it cannot: it must be an
/// absolute path on one line.
pub fn check_glob(glob: &str) -> Result<(), String> {
    if !glob.starts_with('/') || glob.contains(['\n', '\r', '\0']) {
        return Err(format!(
            "the grant's place `{glob}` is not an absolute folder glob: give one like /home/dev/shop/**"
        ));
    }
    Ok(())
}

/// Whether a prompt run in `cwd` is within a grant's place `glob` (''
/// anywhere; an unknown `cwd`, '', is within no place).
pub fn in_place(glob: &str, cwd: &str) -> bool {
    if glob.is_empty() {
        return true;
    }
    if !cwd.starts_with('/') {
        return false;
    }
    let parts: Vec<&str> = cwd.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return false;
    }
    let globs: Vec<&str> = glob.split('/').filter(|p| !p.is_empty()).collect();
    segments(&globs, &parts)
}

/// Folder names `parts` against glob parts `globs` (`**` any number).
fn segments(globs: &[&str], parts: &[&str]) -> bool {
    match globs.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|i| segments(rest, &parts[i..])),
        Some((g, rest)) => parts
            .split_first()
            .is_some_and(|(p, tail)| name(g.as_bytes(), p.as_bytes()) && segments(rest, tail)),
    }
}

/// One folder name against one glob part (`*` any characters).
fn name(g: &[u8], n: &[u8]) -> bool {
    match g.split_first() {
        None => n.is_empty(),
        Some((b'*', rest)) => (0..=n.len()).any(|i| name(rest, &n[i..])),
        Some((c, rest)) => n
            .split_first()
            .is_some_and(|(d, tail)| c == d && name(rest, tail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(c: &str) -> Value {
        json!({"command": c, "description": "d"})
    }

    #[test]
    fn bash_prefixes_are_plain_words_only() {
        let cases = [
            ("npm test", Some("npm test:*")),
            ("npm run build --prod", Some("npm run build:*")),
            ("git commit -m x", Some("git commit:*")),
            ("cargo test --lib store", Some("cargo test:*")),
            // One plain word, or metacharacters: the exact command only.
            ("rm -rf node_modules", Some("rm -rf node_modules")),
            ("ls", Some("ls")),
            ("npm test && npm publish", Some("npm test && npm publish")),
            ("echo $HOME", Some("echo $HOME")),
            ("  ", None),
        ];
        for (cmd, want) in cases {
            assert_eq!(derive("Bash", &bash(cmd)).as_deref(), want, "{cmd}");
        }
    }

    #[test]
    fn a_prefix_never_covers_a_wider_command() {
        let p = "npm test:*";
        for ok in ["npm test", "npm test -- --watch", "npm  test"] {
            // "npm  test" has two spaces: not the prefix as written.
            let want = ok != "npm  test";
            assert_eq!(covers("Bash", p, &bash(ok)), want, "{ok}");
        }
        for no in [
            "npm testing",
            "npm test; rm -rf ~",
            "npm test && npm publish",
            "npm test | sh",
            "npm test > /etc/passwd",
            "npm test $(curl x)",
            "npm publish",
            "npm",
        ] {
            assert!(!covers("Bash", p, &bash(no)), "{no}");
        }
        assert!(covers("Bash", "ls", &bash("ls")));
        assert!(!covers("Bash", "ls", &bash("ls -la")));
    }

    #[test]
    fn a_place_is_its_folder_and_below_never_beside_it() {
        let g = here("/home/dev/shop/");
        assert_eq!(g, "/home/dev/shop/**");
        for (cwd, want) in [
            ("/home/dev/shop", true),
            ("/home/dev/shop/src/api", true),
            ("/home/dev/shop2", false),
            ("/home/dev", false),
            ("/home/dev/shop/../bank", false),
            ("/tmp", false),
            ("", false),
            ("shop", false),
        ] {
            assert_eq!(in_place(&g, cwd), want, "{cwd}");
        }
        assert!(in_place("", ""), "no place: anywhere");
        assert!(in_place("/home/*/shop/**", "/home/ann/shop/x"));
        assert!(!in_place("/home/*/shop/**", "/home/ann/bank"));
        assert!(in_place("/srv/app-*", "/srv/app-2"));
        assert!(!in_place("/srv/app-*", "/srv/app-2/x"));
        assert!(check_glob("/a/**").is_ok());
        assert!(check_glob("a/**").is_err());
        assert!(check_glob("/a\n").is_err());
    }

    #[test]
    fn file_tools_cover_their_exact_path() {
        let i = json!({"file_path": "/p/src/db.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(derive("Edit", &i).as_deref(), Some("/p/src/db.rs"));
        assert!(covers("Edit", "/p/src/db.rs", &i));
        assert!(!covers("Edit", "/p/src", &i));
        assert!(!covers(
            "Edit",
            "/p/src/db.rs",
            &json!({"file_path": "/p/src/db.rs.bak"})
        ));
        assert_eq!(derive("Edit", &json!({"file_path": "rel/x.rs"})), None);
        // File edits in Claude Code's documented `Edit(…)` form, whatever
        // the editing tool.
        for tool in ["Edit", "Write", "MultiEdit", "NotebookEdit"] {
            assert_eq!(shown(tool, "/p/a.rs"), "Edit(//p/a.rs)", "{tool}");
            assert_eq!(claude_rule_tool(tool), "Edit");
        }
        assert_eq!(claude_rule_tool("Bash"), "Bash");
        assert_eq!(shown("Bash", "npm test:*"), "Bash(npm test:*)");
        assert_eq!(derive("WebFetch", &json!({"url": "https://x"})), None);
        assert_eq!(
            codex_prefix_rule("Bash", "npm run build:*").as_deref(),
            Some(r#"prefix_rule(pattern=["npm", "run", "build"], decision="allow")"#)
        );
        // An exact command, or another tool: no prefix rule says as little.
        assert_eq!(codex_prefix_rule("Bash", "rm -rf node_modules"), None);
        assert_eq!(codex_prefix_rule("Bash", "ls"), None);
        assert_eq!(codex_prefix_rule("Edit", "/p/a.rs"), None);
        assert!(!covers(
            "WebFetch",
            "https://x",
            &json!({"url": "https://x"})
        ));
    }
}
