//! What a person reads before deciding an agent's prompt: the full Bash
//! command, or a unified diff of a Claude Code Edit, MultiEdit or Write, or
//! of a Codex `apply_patch` (its `*** Begin Patch` text). Pure text, never
//! cut here: the chat decides whether it fits a message or goes as a file.

use serde_json::Value;

/// The most lines of each side a diff aligns line by line; longer texts
/// are shown as all removed then all added (still complete, just coarser).
const MAX_ALIGN: usize = 2000;

/// The complete preview of a prompt's input, or `None` for tools without
/// one (their arguments are shown as JSON).
pub fn preview(tool: &str, input: &Value) -> Option<String> {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    match tool {
        "Bash" => s("command").map(str::to_string),
        "Edit" => Some(unified(
            s("file_path")?,
            &[(s("old_string")?, s("new_string")?)],
        )),
        "MultiEdit" => {
            let edits: Vec<(&str, &str)> = input
                .get("edits")?
                .as_array()?
                .iter()
                .filter_map(|e| {
                    Some((
                        e.get("old_string")?.as_str()?,
                        e.get("new_string")?.as_str()?,
                    ))
                })
                .collect();
            Some(unified(s("file_path")?, &edits))
        }
        "Write" => Some(unified(s("file_path")?, &[("", s("content")?)])),
        "apply_patch" => s("command").map(codex_patch),
        _ => None,
    }
}

/// A unified diff of `edits` (old → new snippets) of the file at `path`,
/// one hunk per edit, every line of each snippet shown.
pub fn unified(path: &str, edits: &[(&str, &str)]) -> String {
    let mut out = format!("--- {path}\n+++ {path}\n");
    for (old, new) in edits {
        let a: Vec<&str> = if old.is_empty() {
            Vec::new()
        } else {
            old.lines().collect()
        };
        let b: Vec<&str> = if new.is_empty() {
            Vec::new()
        } else {
            new.lines().collect()
        };
        out.push_str(&format!("@@ -1,{} +1,{} @@\n", a.len(), b.len()));
        for (tag, line) in align(&a, &b) {
            out.push(tag);
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A Codex patch (`*** Begin Patch` … `*** End Patch`, with `*** Add File:`,
/// `*** Delete File:`, `*** Update File:` + `*** Move to:`, and `@@` hunks of
/// ' ', '-', '+' lines) as a unified diff, every line kept. Codex's hunks
/// carry no line numbers, so each hunk is numbered from 1 (as the Edit
/// previews are). Text that is not such a patch comes back as it is.
pub fn codex_patch(patch: &str) -> String {
    let lines: Vec<&str> = patch.lines().collect();
    let Some(begin) = lines.iter().position(|l| l.trim() == "*** Begin Patch") else {
        return patch.to_string();
    };
    let mut out = String::new();
    // The open hunk: its `@@` text and its lines.
    let mut hunk: Option<(String, Vec<&str>)> = None;
    let flush = |out: &mut String, hunk: &mut Option<(String, Vec<&str>)>| {
        let Some((ctx, body)) = hunk.take() else {
            return;
        };
        let old = body.iter().filter(|l| !l.starts_with('+')).count();
        let new = body.iter().filter(|l| !l.starts_with('-')).count();
        let ctx = if ctx.is_empty() {
            String::new()
        } else {
            format!(" {ctx}")
        };
        out.push_str(&format!("@@ -1,{old} +1,{new} @@{ctx}\n"));
        for l in body {
            out.push_str(l);
            out.push('\n');
        }
    };
    let mut adding = false;
    let mut i = begin + 1;
    while i < lines.len() {
        let l = lines[i];
        i += 1;
        if l.trim() == "*** End Patch" {
            break;
        }
        if let Some(path) = l.strip_prefix("*** Add File: ") {
            flush(&mut out, &mut hunk);
            let body: Vec<&str> = lines[i..]
                .iter()
                .take_while(|b| b.starts_with('+'))
                .copied()
                .collect();
            i += body.len();
            out.push_str(&format!("--- /dev/null\n+++ {path}\n"));
            hunk = Some((String::new(), body));
            flush(&mut out, &mut hunk);
            adding = false;
        } else if let Some(path) = l.strip_prefix("*** Delete File: ") {
            flush(&mut out, &mut hunk);
            out.push_str(&format!(
                "--- {path}\n+++ /dev/null\n@@ the whole file is deleted @@\n"
            ));
            adding = false;
        } else if let Some(path) = l.strip_prefix("*** Update File: ") {
            flush(&mut out, &mut hunk);
            let to = lines
                .get(i)
                .and_then(|m| m.strip_prefix("*** Move to: "))
                .inspect(|_| i += 1)
                .unwrap_or(path);
            out.push_str(&format!("--- {path}\n+++ {to}\n"));
            adding = true;
        } else if !adding || l == "*** End of File" {
            // Outside an update (or its end marker): nothing to show.
        } else if let Some(ctx) = l.strip_prefix("@@") {
            flush(&mut out, &mut hunk);
            hunk = Some((ctx.trim().to_string(), Vec::new()));
        } else {
            // Codex reads an empty line in a hunk as an empty context line.
            let line = if l.is_empty() { " " } else { l };
            hunk.get_or_insert_with(|| (String::new(), Vec::new()))
                .1
                .push(line);
        }
    }
    flush(&mut out, &mut hunk);
    out
}

/// Lines of `a` and `b` tagged ' ' (both), '-' (only a), '+' (only b),
/// by a longest common subsequence.
pub(crate) fn align<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    if a.len() > MAX_ALIGN || b.len() > MAX_ALIGN {
        let mut v: Vec<(char, &str)> = a.iter().map(|l| ('-', *l)).collect();
        v.extend(b.iter().map(|l| ('+', *l)));
        return v;
    }
    // lcs[i][j]: the LCS length of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(('-', a[i]));
            i += 1;
        } else {
            out.push(('+', b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| ('-', *l)));
    out.extend(b[j..].iter().map(|l| ('+', *l)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_is_a_unified_diff_of_every_line() {
        let d = preview(
            "Edit",
            &json!({"file_path": "/p/db.rs", "old_string": "a\nb\nc", "new_string": "a\nB\nc\nd"}),
        )
        .unwrap();
        assert_eq!(
            d,
            "--- /p/db.rs\n+++ /p/db.rs\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n"
        );
        let w = preview("Write", &json!({"file_path": "/p/n.rs", "content": "x\ny"})).unwrap();
        assert!(w.ends_with("@@ -1,0 +1,2 @@\n+x\n+y\n"), "{w}");
        let m = preview(
            "MultiEdit",
            &json!({"file_path": "/p/m.rs", "edits": [
                {"old_string": "1", "new_string": "2"}, {"old_string": "3", "new_string": "4"}]}),
        )
        .unwrap();
        assert_eq!(m.matches("@@").count(), 4, "{m}");
        assert_eq!(
            preview("Bash", &json!({"command": "npm test\n&& x"})).as_deref(),
            Some("npm test\n&& x")
        );
        assert_eq!(preview("WebFetch", &json!({"url": "u"})), None);
    }

    #[test]
    fn a_codex_patch_is_a_unified_diff_of_every_line() {
        let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n+text\n\
                     *** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n\
                     -    print(\"Hi\")\n+    print(\"Hello\")\n     return\n*** End of File\n\
                     *** Delete File: old.txt\n*** End Patch\n";
        let d = preview("apply_patch", &json!({"command": patch})).unwrap();
        assert_eq!(
            d,
            "--- /dev/null\n+++ docs/new.md\n@@ -1,0 +1,2 @@\n+# New\n+text\n\
             --- src/app.py\n+++ src/main.py\n@@ -1,2 +1,2 @@ def greet():\n\
             -    print(\"Hi\")\n+    print(\"Hello\")\n     return\n\
             --- old.txt\n+++ /dev/null\n@@ the whole file is deleted @@\n"
        );
        // Not a patch: shown as it came.
        assert_eq!(codex_patch("echo hi"), "echo hi");
    }
}
