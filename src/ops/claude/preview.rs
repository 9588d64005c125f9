//! What a person reads before deciding a Claude Code prompt: the full Bash
//! command, or a unified diff of an Edit, MultiEdit or Write. Pure text,
//! never cut here: the chat decides whether it fits a message or goes as a
//! file.

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
}
