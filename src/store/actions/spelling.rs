//! The few words PostgreSQL spells differently in this part's statements,
//! and the statements that use them: each such statement is written once,
//! as a function of a [`Spelling`], and rendered for each engine at its
//! first use (a statement names the columns it returns, [`super::COLUMNS`], so
//! its text is built, not a literal).
//!
//! The differences: SQLite's `json_object(…)` (the transition's audit
//! details) is `handoff_json_set(json_build_object(…)::text, '{}', '{}')`
//! on PostgreSQL, the same text byte for byte; `json(…)` is a cast;
//! `MAX` of two values is `GREATEST`; an expiry as `format_rfc3339` writes
//! it comes from `strftime` or from `to_char`; a refusal on PostgreSQL is
//! explained under a row lock (`FOR UPDATE`, see `postgres/write.rs`); an
//! id that breaks a tie is compared bytewise (`COLLATE "C"`), as SQLite
//! compares it, whatever the database's collation.

use std::sync::OnceLock;

use crate::store::engine::Stmt;

/// One engine's words for what the dialects spell differently.
pub(crate) struct Spelling {
    /// Around a JSON object's members (key, value, …): the object as text.
    object: [&'static str; 2],
    /// Around a JSON text: the JSON value it holds.
    json: [&'static str; 2],
    /// The larger of two values.
    pub(crate) greatest: &'static str,
    /// An action's `expires_at` as `format_rfc3339` writes it
    /// (milliseconds, `Z`; on PostgreSQL from exact interval arithmetic
    /// rather than a float timestamp).
    pub(crate) expires_text: &'static str,
    /// After a `SELECT` that a refusal is explained by: its rows locked
    /// until the write ends (nothing on SQLite, whose write turn holds
    /// every row).
    pub(crate) lock: &'static str,
    /// After an id that breaks a tie: compared bytewise.
    pub(crate) bytewise: &'static str,
    /// After `ORDER BY created_at` where SQLite gives ties in the order
    /// its index holds them: PostgreSQL's tie-break.
    pub(crate) then_by_id: &'static str,
    /// A transition and its log entry are one statement (a data-modifying
    /// `WITH`), not statements of one call (see `logged.rs`).
    pub(crate) in_one_statement: bool,
    /// Around an entry's audit details: its payload (the details with the
    /// action's status, kind and summary).
    state: [&'static str; 2],
}

impl Spelling {
    /// The JSON object of `members` as text, as SQLite's `json_object`
    /// writes it.
    pub(crate) fn object(&self, members: &str) -> String {
        format!("{}{members}{}", self.object[0], self.object[1])
    }

    /// The JSON value the text `expr` holds (embedded in an object as
    /// JSON, not as a string).
    pub(crate) fn json(&self, expr: &str) -> String {
        format!("{}{expr}{}", self.json[0], self.json[1])
    }

    /// The payload of an entry whose audit details are `details`: the
    /// details with `status`, `kind` and `summary` set, in that order.
    pub(crate) fn with_state(&self, details: &str) -> String {
        format!("{}{details}{}", self.state[0], self.state[1])
    }
}

/// SQLite's words.
const LITE: Spelling = Spelling {
    object: ["json_object(", ")"],
    json: ["json(", ")"],
    greatest: "MAX",
    expires_text: "strftime('%Y-%m-%dT%H:%M:%S', expires_at / 1000, 'unixepoch') \
                   || printf('.%03dZ', expires_at % 1000)",
    lock: "",
    bytewise: "",
    then_by_id: "",
    in_one_statement: false,
    state: [
        "json_set(",
        ", '$.status', status, '$.kind', kind, '$.summary', summary)",
    ],
};

/// PostgreSQL's words.
const PG: Spelling = Spelling {
    object: [
        "handoff_json_set(json_build_object(",
        ")::text, '{}', '{}')",
    ],
    json: ["", "::JSON"],
    greatest: "GREATEST",
    expires_text: "to_char(TIMESTAMP 'epoch' + expires_at * INTERVAL '1 millisecond', \
                   'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
    lock: " FOR UPDATE",
    bytewise: " COLLATE \"C\"",
    then_by_id: ", id COLLATE \"C\"",
    in_one_statement: true,
    state: [
        "handoff_json_set(",
        ", ARRAY['status', 'kind', 'summary'], ARRAY[status, kind, summary])",
    ],
};

/// A statement written once for both engines, rendered in each one's
/// [`Spelling`] at its first use.
pub(crate) struct Sql {
    write: fn(&Spelling) -> String,
    lite: OnceLock<String>,
    pg: OnceLock<String>,
}

impl Sql {
    /// The statement `write` renders.
    pub(crate) const fn new(write: fn(&Spelling) -> String) -> Sql {
        Sql {
            write,
            lite: OnceLock::new(),
            pg: OnceLock::new(),
        }
    }

    /// The statement's SQLite text.
    pub(crate) fn lite(&'static self) -> &'static str {
        self.lite.get_or_init(|| (self.write)(&LITE))
    }

    /// The statement, to bind its values to.
    pub(crate) fn stmt<'q>(&'static self) -> Stmt<'q> {
        Stmt::spelled(
            self.lite.get_or_init(|| (self.write)(&LITE)),
            self.pg.get_or_init(|| (self.write)(&PG)),
        )
    }
}
