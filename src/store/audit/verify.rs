//! Checking an audit export offline (the format is described in the
//! parent module).

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{GENESIS, entry_hash};

/// What [`verify`] found wrong, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Broken {
    /// An entry's content does not match its hash (or is no entry at all).
    Changed,
    /// An entry is missing.
    Removed,
    /// An entry is there that the chain does not hold.
    Inserted,
    /// Entries stand out of order.
    Reordered,
}

/// A failed verification: what, which entry, on which line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct Failure {
    /// What kind of tampering the chain shows.
    pub broken: Broken,
    /// The line of the file (from 1) where the chain first breaks.
    pub line: usize,
    /// The entry (its `n`) the failure names, when there is one.
    pub entry: Option<u64>,
    /// In words, saying what to look at.
    pub message: String,
}

/// A verified export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// How many entries.
    pub entries: usize,
    /// The head hash (the last entry's).
    pub head: String,
}

/// One entry line as read: its position, links and the hash it should have.
struct Parsed {
    line: usize,
    n: Option<u64>,
    prev: String,
    hash: String,
    computed: String,
}

/// A [`Failure`] of `broken` on `line`, naming `entry`.
fn fail(broken: Broken, line: usize, entry: Option<u64>, message: String) -> Failure {
    Failure {
        broken,
        line,
        entry,
        message,
    }
}

/// Check an export offline: every entry's hash, the `prev` links, the
/// `n` sequence and the head line; with `expected_head`, also that the
/// head is the one the daemon recorded. Names the first entry that was
/// changed, removed, inserted or reordered.
pub fn verify(text: &str, expected_head: Option<&str>) -> Result<Verified, Failure> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    let Some(((head_line, head_text), body)) = lines.split_last() else {
        return Err(fail(
            Broken::Removed,
            1,
            None,
            "the file is empty: no entries and no head line".into(),
        ));
    };
    let head: Map<String, Value> = match serde_json::from_str(head_text) {
        Ok(Value::Object(m)) if m.contains_key("head") => m,
        _ => {
            return Err(fail(
                Broken::Removed,
                *head_line,
                None,
                "the last line is not the head ({\"head\": …}): the file was cut short or changed at its end".into(),
            ));
        }
    };
    let parsed = parse(body)?;
    let mut seen = HashSet::new();
    for i in 0..parsed.len() {
        check_entry(&parsed, i, &mut seen)?;
    }
    check_head(&head, *head_line, &parsed, expected_head)
}

/// Every entry line, parsed, with the hash its content has.
fn parse(body: &[(usize, &str)]) -> Result<Vec<Parsed>, Failure> {
    let mut parsed = Vec::with_capacity(body.len());
    for &(line, t) in body {
        let m = match serde_json::from_str(t) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(fail(
                    Broken::Changed,
                    line,
                    None,
                    "this line is not a JSON object: it was changed".into(),
                ));
            }
        };
        let s = |k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        parsed.push(Parsed {
            line,
            n: m.get("n").and_then(Value::as_u64),
            prev: s("prev"),
            hash: s("hash"),
            computed: entry_hash(&m),
        });
    }
    Ok(parsed)
}

/// The `i`-th entry: its hash, then an insertion before it, its position,
/// then its link to the entry before it.
fn check_entry(parsed: &[Parsed], i: usize, seen: &mut HashSet<u64>) -> Result<(), Failure> {
    let p = &parsed[i];
    let name = p.n.map_or("an entry".to_string(), |n| format!("entry {n}"));
    if p.computed != p.hash {
        return Err(fail(
            Broken::Changed,
            p.line,
            p.n,
            format!("{name} was changed: its content does not match its hash"),
        ));
    }
    let want_prev = if i == 0 { GENESIS } else { &parsed[i - 1].hash };
    if p.prev != want_prev && i >= 1 {
        let before = if i >= 2 { &parsed[i - 2].hash } else { GENESIS };
        if p.prev == before {
            let q = &parsed[i - 1];
            return Err(fail(
                Broken::Inserted,
                q.line,
                q.n,
                "the entry on this line was inserted: the entry after it chains to the one before it"
                    .into(),
            ));
        }
    }
    check_position(parsed, i, &name, seen)?;
    if p.prev != want_prev {
        return Err(fail(
            Broken::Changed,
            p.line,
            p.n,
            format!(
                "{name} does not chain to the entry before it: an entry before it was changed, removed or inserted"
            ),
        ));
    }
    Ok(())
}

/// The `i`-th entry's `n`: where it stands against where it should.
fn check_position(
    parsed: &[Parsed],
    i: usize,
    name: &str,
    seen: &mut HashSet<u64>,
) -> Result<(), Failure> {
    let p = &parsed[i];
    let expected = i as u64 + 1;
    match p.n {
        Some(n) if n > expected => {
            let later = parsed[i + 1..].iter().any(|q| q.n == Some(expected));
            Err(if later {
                fail(
                    Broken::Reordered,
                    p.line,
                    p.n,
                    format!("{name} stands where entry {expected} belongs: entries were reordered"),
                )
            } else {
                fail(
                    Broken::Removed,
                    p.line,
                    Some(expected),
                    format!("entry {expected} was removed: this line holds {name}"),
                )
            })
        }
        Some(n) if n < expected => Err(if seen.contains(&n) {
            fail(
                Broken::Inserted,
                p.line,
                p.n,
                format!("{name} appears a second time here: it was inserted"),
            )
        } else {
            fail(
                Broken::Reordered,
                p.line,
                p.n,
                format!(
                    "{name} stands after entry {}: entries were reordered",
                    expected - 1
                ),
            )
        }),
        None => Err(fail(
            Broken::Changed,
            p.line,
            None,
            "this entry has no position `n`: it was changed".into(),
        )),
        Some(n) => {
            seen.insert(n);
            Ok(())
        }
    }
}

/// The head line: its count and hash against the entries, and against
/// the head the daemon recorded when one is given.
fn check_head(
    head: &Map<String, Value>,
    head_line: usize,
    parsed: &[Parsed],
    expected_head: Option<&str>,
) -> Result<Verified, Failure> {
    let last = parsed.last().map_or(GENESIS, |p| p.hash.as_str());
    let count = head.get("entries").and_then(Value::as_u64);
    if count != Some(parsed.len() as u64) {
        let n = count.unwrap_or(0);
        return Err(fail(
            if n > parsed.len() as u64 {
                Broken::Removed
            } else {
                Broken::Inserted
            },
            head_line,
            Some(parsed.len() as u64 + 1),
            format!(
                "the head counts {n} entries but the file holds {}: entries were removed or added at the end",
                parsed.len()
            ),
        ));
    }
    if head.get("head").and_then(Value::as_str) != Some(last) {
        return Err(fail(
            Broken::Changed,
            head_line,
            None,
            "the head hash is not the last entry's hash: the head or the last entry was changed"
                .into(),
        ));
    }
    if let Some(want) = expected_head
        && want.trim() != last
    {
        return Err(fail(
            Broken::Changed,
            head_line,
            None,
            format!(
                "the head is {last}, not the {} recorded: this is another export, or its chain was rewritten",
                want.trim()
            ),
        ));
    }
    Ok(Verified {
        entries: parsed.len(),
        head: last.to_string(),
    })
}
