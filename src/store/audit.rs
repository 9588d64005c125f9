//! The tamper-evident audit export: the actions' audit log as JSON Lines
//! a reader can check without handoff's database.
//!
//! Each line is one audit entry, an object with `n` (its position in the
//! export, from 1), `seq` (its position in the log), `action_id`,
//! `project`, `at` (RFC 3339), `actor`, `event`, `details` (secrets
//! redacted, as the log stores them), `prev` (the previous entry's `hash`;
//! 64 zeros for the first) and `hash`. The last line is the head:
//! `{"head": <the last entry's hash>, "entries": <how many>, …}`.
//!
//! `hash` is the SHA-256, in lowercase hex, of the entry *without* its
//! `hash` key in the **canonical encoding**: compact JSON (no whitespace),
//! UTF-8, object keys sorted bytewise at every level, strings and numbers
//! as serde_json writes them (the only escapes are `\"`, `\\`, `\b`,
//! `\f`, `\n`, `\r`, `\t` and `\u00XX` for other control characters).
//! For the values the log holds (strings, integers, booleans, null,
//! objects and arrays of them) this is RFC 8785 (JCS) but for key order,
//! which JCS takes by UTF-16 code units; the two agree on every key
//! outside the supplementary planes.
//!
//! Why a chain: editing one entry breaks its own hash; dropping,
//! inserting or reordering entries breaks the `prev` links or the `n`
//! sequence, and [`verify`] names the first entry where it does. Cutting
//! entries off the end, or rewriting the whole chain, is what the head is
//! for: the daemon records each export's head in its event log
//! (`audit.exported`), so a reader compares the file's head with the one
//! recorded (`handoff audit verify FILE --head HASH`).

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::engine::Stmt;
use super::{Channel, NewEvent, Result, Store};
use crate::store::actions::codec::canonical;

/// The `prev` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The format's name, in the head line.
pub const FORMAT: &str = "handoff-audit-export/1";

/// The canonical encoding's name, in the head line.
pub const CANONICAL: &str = "sorted-keys compact JSON (SHA-256 over it, hex)";

/// One written export.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Export {
    /// The JSON Lines, entries then the head line, each without its newline.
    pub lines: Vec<String>,
    /// The last entry's hash ([`GENESIS`] for an empty export).
    pub head: String,
    /// How many entries.
    pub entries: usize,
}

impl Export {
    /// The file: every line, newline-terminated.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }
}

/// The hash of one entry: SHA-256 over the canonical encoding of `entry`
/// without its `hash` key.
pub fn entry_hash(entry: &Map<String, Value>) -> String {
    let mut m = entry.clone();
    m.remove("hash");
    hex(&Sha256::digest(canonical(&Value::Object(m)).as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type Row = (i64, String, Option<String>, i64, String, String, String);

impl Store {
    /// Export the actions' audit log (entries at or after `since`, of
    /// `project`'s actions; all when `None`) as a hash chain, and record
    /// its head in the event log as `audit.exported` by `by`.
    pub async fn audit_export(
        &self,
        since: Option<i64>,
        project: Option<&str>,
        by: &str,
        channel: Channel,
    ) -> Result<Export> {
        let rows: Vec<Row> = self
            .rows(
                Stmt::new(
                    "SELECT seq, entity_id, project, at, actor, substr(type, 8), audit
                     FROM events
                     WHERE entity_kind = 'action' AND audit IS NOT NULL
                       AND ($1 IS NULL OR at >= $1) AND ($2 IS NULL OR project = $2)
                     ORDER BY seq",
                )
                .int(since)
                .text(project),
            )
            .await?;
        let mut lines = Vec::with_capacity(rows.len() + 1);
        let mut prev = GENESIS.to_string();
        for (i, (seq, action_id, proj, at, actor, event, details)) in rows.iter().enumerate() {
            let details: Value = serde_json::from_str(details)
                .map_err(|e| super::Error::Corrupt(format!("audit entry {seq}: details: {e}")))?;
            let mut entry = Map::new();
            entry.insert("n".into(), json!(i + 1));
            entry.insert("seq".into(), json!(seq));
            entry.insert("action_id".into(), json!(action_id));
            entry.insert("project".into(), json!(proj.clone().unwrap_or_default()));
            entry.insert("at".into(), json!(crate::clock::format_rfc3339(*at)));
            entry.insert("actor".into(), json!(actor));
            entry.insert("event".into(), json!(event));
            entry.insert("details".into(), details);
            entry.insert("prev".into(), json!(prev));
            let hash = entry_hash(&entry);
            entry.insert("hash".into(), json!(hash));
            lines.push(canonical(&Value::Object(entry)));
            prev = hash;
        }
        let entries = rows.len();
        let now = self.now();
        let head = json!({
            "head": prev,
            "entries": entries,
            "format": FORMAT,
            "canonical": CANONICAL,
            "since": since.map(crate::clock::format_rfc3339),
            "project": project,
            "exported_at": crate::clock::format_rfc3339(now),
            "exported_by": by,
        });
        lines.push(canonical(&head));
        let record = Arc::new((
            prev.clone(),
            by.to_string(),
            channel,
            project.unwrap_or_default().to_string(),
            json!({
                "head": prev,
                "entries": entries,
                "since": since.map(crate::clock::format_rfc3339),
                "project": project,
            }),
        ));
        self.transact(record, |mut tx, r, now| {
            Box::pin(async move {
                let (head, by, channel, project, payload) = &*r;
                let ev = NewEvent {
                    kind: "audit.exported",
                    entity_kind: "audit",
                    entity_id: head,
                    actor: by,
                    channel: *channel,
                    project,
                    session: "",
                    payload: payload.clone(),
                };
                tx.append(now, &ev).await?;
                Ok(())
            })
        })
        .await?;
        Ok(Export {
            lines,
            head: prev,
            entries,
        })
    }
}

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

struct Parsed {
    line: usize,
    n: Option<u64>,
    prev: String,
    hash: String,
    computed: String,
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
    let fail = |broken, line, entry, message: String| Failure {
        broken,
        line,
        entry,
        message,
    };
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
    let mut seen = HashSet::new();
    for (i, p) in parsed.iter().enumerate() {
        let expected = i as u64 + 1;
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
        match p.n {
            Some(n) if n > expected => {
                let later = parsed[i + 1..].iter().any(|q| q.n == Some(expected));
                return Err(if later {
                    fail(
                        Broken::Reordered,
                        p.line,
                        p.n,
                        format!(
                            "{name} stands where entry {expected} belongs: entries were reordered"
                        ),
                    )
                } else {
                    fail(
                        Broken::Removed,
                        p.line,
                        Some(expected),
                        format!("entry {expected} was removed: this line holds {name}"),
                    )
                });
            }
            Some(n) if n < expected => {
                return Err(if seen.contains(&n) {
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
                });
            }
            None => {
                return Err(fail(
                    Broken::Changed,
                    p.line,
                    None,
                    "this entry has no position `n`: it was changed".into(),
                ));
            }
            Some(n) => {
                seen.insert(n);
            }
        }
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
    }
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
            *head_line,
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
            *head_line,
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
            *head_line,
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
