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

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::engine::Stmt;
use super::{Channel, NewEvent, Result, Store};
use crate::store::actions::codec::canonical;

mod verify;
pub use verify::{Broken, Failure, Verified, verify};

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

/// The log's audit entries (`$1` since, `$2` project; all when NULL), in
/// log order: the action events that carry audit details. Reads the whole
/// log by design (an operator's command).
const ENTRIES: &str = "SELECT seq, entity_id, project, at, actor, substr(type, 8), audit
     FROM events
     WHERE entity_kind = 'action' AND audit IS NOT NULL
       AND ($1 IS NULL OR at >= $1) AND ($2 IS NULL OR project = $2)
     ORDER BY seq";

/// The entries as chained lines, and the last entry's hash.
fn chain(rows: &[Row]) -> Result<(Vec<String>, String)> {
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
    Ok((lines, prev))
}

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
            .rows(Stmt::new(ENTRIES).int(since).text(project))
            .await?;
        let (mut lines, prev) = chain(&rows)?;
        let entries = rows.len();
        let head = json!({
            "head": prev,
            "entries": entries,
            "format": FORMAT,
            "canonical": CANONICAL,
            "since": since.map(crate::clock::format_rfc3339),
            "project": project,
            "exported_at": crate::clock::format_rfc3339(self.now()),
            "exported_by": by,
        });
        lines.push(canonical(&head));
        let payload = json!({
            "head": prev,
            "entries": entries,
            "since": since.map(crate::clock::format_rfc3339),
            "project": project,
        });
        self.record_export(&prev, by, channel, project.unwrap_or_default(), payload)
            .await?;
        Ok(Export {
            lines,
            head: prev,
            entries,
        })
    }

    /// The `audit.exported` event of an export whose head is `head`.
    async fn record_export(
        &self,
        head: &str,
        by: &str,
        channel: Channel,
        project: &str,
        payload: Value,
    ) -> Result<()> {
        let record = Arc::new((
            head.to_string(),
            by.to_string(),
            channel,
            project.to_string(),
            payload,
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
        .await
    }
}
