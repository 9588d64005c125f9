//! A `questions` row and a reply-history row as their types, on either
//! engine.

use std::str::FromStr;

use super::{Choice, Question, Reply, ReplyRecord};
use crate::store::cols::{Cols, rows_by};
use crate::store::{Error, Result};

fn parse_col<T: FromStr<Err = String>>(v: &str) -> Result<T> {
    v.parse().map_err(Error::Corrupt)
}

// A stored question, on either engine.
rows_by!(Question, from_row);

// One entry of the reply history, on either engine.
rows_by!(ReplyRecord, record_from_row);

/// Map a `questions` row, of either engine (its columns are text and
/// 64-bit integers on both).
fn from_row(r: &impl Cols) -> Result<Question> {
    let id: String = r.try_get("id")?;
    let options: String = r.try_get("options")?;
    let status: String = r.try_get("status")?;
    let reply_text: Option<String> = r.try_get("reply")?;
    let reply = match reply_text {
        None => None,
        Some(text) => {
            let kind: Option<String> = r.try_get("reply_kind")?;
            let source: Option<String> = r.try_get("reply_source")?;
            let at: Option<i64> = r.try_get("replied_at")?;
            Some(Reply {
                text,
                context: r.try_get("reply_context")?,
                kind: parse_col(kind.as_deref().unwrap_or("answer"))?,
                source: parse_col(source.as_deref().unwrap_or("inbox"))?,
                medium: parse_col(
                    r.try_get::<Option<String>>("reply_medium")?
                        .as_deref()
                        .unwrap_or("text"),
                )?,
                by: r
                    .try_get::<Option<String>>("replied_by")?
                    .unwrap_or_default(),
                at: at.unwrap_or(0),
                seen_at: r.try_get("reply_seen_at")?,
            })
        }
    };
    Ok(Question {
        short_id: crate::store::short_id(&id).to_string(),
        id,
        project: r.try_get("project")?,
        agent: r.try_get("agent")?,
        session: r.try_get("session")?,
        key: r.try_get("key")?,
        title: r.try_get("title")?,
        detail: r.try_get("detail")?,
        context: r.try_get("context")?,
        options: serde_json::from_str(&options)
            .map_err(|e| Error::Corrupt(format!("question options: {e}")))?,
        choice: Choice::from_col(&r.try_get::<String>("choice")?)?,
        picked: r.try_get("picked")?,
        status: parse_col(&status)?,
        outcome: r.try_get("outcome")?,
        reply,
        reply_seq: r.try_get("reply_seq")?,
        revision: r.try_get("revision")?,
        snoozed_until: r.try_get("snoozed_until")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        resolved_at: r.try_get("resolved_at")?,
    })
}

/// Map a `question_replies` row, of either engine.
fn record_from_row(r: &impl Cols) -> Result<ReplyRecord> {
    let kind: Option<String> = r.try_get("kind")?;
    let source: String = r.try_get("source")?;
    Ok(ReplyRecord {
        seq: r.try_get("seq")?,
        reply_seq: r.try_get("reply_seq")?,
        action: r.try_get("action")?,
        reply: r.try_get("reply")?,
        reply_context: r.try_get("reply_context")?,
        kind: kind.as_deref().map(parse_col).transpose()?,
        source: parse_col(&source)?,
        medium: parse_col(&r.try_get::<String>("medium")?)?,
        by: r.try_get("by")?,
        revision: r.try_get("revision")?,
        at: r.try_get("at")?,
    })
}
