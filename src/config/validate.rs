//! What parsing cannot check, and where in the file a failure is: a path of
//! keys and indexes, mapped back to the line that spells it out.

use super::Config;

impl Config {
    /// Check what parsing cannot: names that must match, limits. An error
    /// says where (`at`, a path of keys and indexes) so it can name a line.
    pub(super) fn validate(&self) -> Result<(), Bad> {
        self.check_chats()?;
        for (i, r) in self.rules.iter().enumerate() {
            // The rule's own message names it ("rule `x`: …").
            r.check()
                .map_err(|e| Bad::at(vec![Seg::Key("rule"), Seg::Index(i)], e))?;
        }
        for (i, n) in self.notify.iter().enumerate() {
            let name = n.name.clone().unwrap_or_else(|| format!("#{}", i + 1));
            n.check().map_err(|e| {
                Bad::at(
                    vec![Seg::Key("notify"), Seg::Index(i)],
                    format!("[[notify]] `{name}`: {e}"),
                )
            })?;
        }
        for (i, k) in self.kinds.iter().enumerate() {
            k.check()
                .map_err(|e| Bad::at(vec![Seg::Key("kinds"), Seg::Index(i)], e))?;
        }
        let places = super::approvals::Places {
            chats: self
                .telegram
                .chats
                .iter()
                .map(|c| c.name.as_str())
                .collect(),
            slack: self.slack.channels.iter().map(|c| c.id.as_str()).collect(),
        };
        self.approvals.check(&places).map_err(|(at, e)| {
            use super::approvals::Where;
            let (key, i) = match at {
                Where::Rule(i) => ("rule", i),
                Where::Step(i) => ("escalate", i),
            };
            Bad::at(vec![Seg::Key("approvals"), Seg::Key(key), Seg::Index(i)], e)
        })?;
        self.check_wake()?;
        self.voice
            .check()
            .map_err(|e| Bad::at(vec![Seg::Key("voice")], e))?;
        self.slack.check().map_err(|(i, e)| match i {
            Some(i) => Bad::at(
                vec![Seg::Key("slack"), Seg::Key("channels"), Seg::Index(i)],
                e,
            ),
            None => Bad::at(vec![Seg::Key("slack")], e),
        })?;
        self.check_telegram_and_http()
    }
}

/// One step of a path into the config: a table key or an array index.
#[derive(Debug, Clone, Copy)]
pub(super) enum Seg {
    Key(&'static str),
    Index(usize),
}

/// A validation failure and where in the file it is.
#[derive(Debug)]
pub(super) struct Bad {
    pub(super) at: Vec<Seg>,
    pub(super) message: String,
}

impl Bad {
    pub(super) fn at(at: Vec<Seg>, message: impl Into<String>) -> Bad {
        Bad {
            at,
            message: message.into(),
        }
    }
}

/// toml's error on one line: where, then what (toml's own rendering
/// draws the line with a caret over several lines).
pub(super) fn parse_message(text: &str, e: &toml::de::Error) -> String {
    let what = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            // The text the error points at, when toml's words leave it out
            // ("duplicate key"): the user then sees which key.
            let at = text.get(span).map(str::trim).unwrap_or_default();
            if at.is_empty() || at.len() > 60 || at.contains('\n') || what.contains(at) {
                format!("line {line}: {what}")
            } else {
                format!("line {line}: {what} (`{at}`)")
            }
        }
        None => what,
    }
}

/// The 1-based line where the entry `at` starts in `text` (the deepest part
/// of the path that the file spells out: a default value has no line).
pub(super) fn line_of(text: &str, at: &[Seg]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut span = None;
    let mut table = Some(root.get_ref());
    let mut value: Option<&toml::Spanned<DeValue<'_>>> = None;
    for seg in at {
        let next = match (seg, table, value.map(|v| v.get_ref())) {
            (Seg::Key(k), Some(t), _) => {
                t.iter().find(|(key, _)| key.get_ref() == k).map(|(_, v)| v)
            }
            (Seg::Index(i), _, Some(DeValue::Array(a))) => a.get(*i),
            _ => None,
        };
        let Some(v) = next else { break };
        span = Some(v.span().start);
        table = match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
        value = Some(v);
    }
    span.map(|at| text[..at.min(text.len())].matches('\n').count() + 1)
}
