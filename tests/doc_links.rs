//! Every link in README.md and the book under docs/ leads somewhere: a
//! relative link names a file of the repository, and a `#anchor` a heading
//! of the page it points into (GitHub's and mdBook's heading ids: lowercase,
//! punctuation dropped, spaces as `-`). Web links are not fetched. Part of
//! `cargo test`, so a broken intra-doc link fails CI.

use std::path::{Path, PathBuf};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md")];
    let mut stack = vec![repo().join("docs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop `code spans`: a link inside one is text, not a link.
        let mut inside = false;
        for c in l.chars() {
            if c == '`' {
                inside = !inside;
            } else if !inside {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of `[text](target)` links.
fn links(text: &str) -> Vec<String> {
    let p = prose(text);
    let mut out = Vec::new();
    let mut rest = p.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            let t = rest[..end].split_whitespace().next().unwrap_or("");
            out.push(t.to_string());
        }
    }
    out
}

/// The heading ids of a Markdown page.
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            !fenced && l.starts_with('#')
        })
        .map(|l| slug(l.trim_start_matches('#').trim()))
        .collect()
}

fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn every_link_in_the_readme_and_the_book_leads_somewhere() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(repo()).unwrap().display().to_string();
        for link in links(&text) {
            if link.is_empty() || link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !target.exists() {
                broken.push(format!("{name}: {link} (no such file)"));
                continue;
            }
            if !anchor.is_empty() && target.extension().is_some_and(|x| x == "md") {
                let there = std::fs::read_to_string(&target).unwrap();
                if !anchors(&there).iter().any(|a| a == anchor) {
                    broken.push(format!("{name}: {link} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_landing_page_and_the_book_lists_every_chapter() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let n = readme.lines().count();
    assert!(
        n <= 250,
        "README.md has {n} lines; the rest belongs in docs/"
    );
    let summary = std::fs::read_to_string(repo().join("docs/SUMMARY.md")).unwrap();
    for page in pages() {
        let rel = page.strip_prefix(repo().join("docs"));
        let Ok(rel) = rel else { continue };
        let rel = rel.display().to_string();
        if rel != "SUMMARY.md" {
            assert!(
                summary.contains(&format!("]({rel})")),
                "docs/SUMMARY.md lists {rel}"
            );
        }
    }
}

#[test]
fn slugs_follow_the_heading_id_rule() {
    assert_eq!(
        slug("JSON output and exit codes"),
        "json-output-and-exit-codes"
    );
    assert_eq!(
        slug("Agent integration: Claude Code"),
        "agent-integration-claude-code"
    );
    assert_eq!(slug("`handoff wait`"), "handoff-wait");
}
