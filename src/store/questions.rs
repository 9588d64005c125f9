//! Questions an agent hands to a human.
//!
//! An agent *flags* a question; humans reply through the Inbox (always wins)
//! or a chat (conditional: never over an unclaimed reply); the agent may
//! record an answer it got in its own terminal (conditional, born seen); the
//! agent *picks up* replies, marking only the exact reply it read, and
//! finally *resolves* the question with an outcome (or a human dismisses it).
//!
//! Every write is one guarded statement whose triggers append its event
//! (and, for replies, a row of the append-only `question_replies`
//! history) in that same statement, on SQLite and PostgreSQL alike: each
//! is written once through the engine seam (`store::engine`), spelled per
//! engine only where the dialects differ. Refusals that are normal outcomes
//! come back as [`Refusal`], not as errors.
//!
//! Layout: [`validate`] (limits on input), `read` (get, list, short ids,
//! history), `write` (flag, resolve, dismiss, snooze), `reply` (the three
//! writers, pickup), `pick` (a multiple choice's toggles). This module does not talk to chats or wake agents: it
//! records, and the daemon follows the event log.

mod pick;
mod read;
mod refused;
mod reply;
mod rows;
pub(crate) use reply::{Submitted, conditional_in};
pub mod validate;
mod write;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{Error, Result};

/// Where a question stands. Nothing reopens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting on a human (or on the agent to resolve it).
    Open,
    /// Closed by the agent with an outcome.
    Resolved,
    /// Closed by a human without an answer.
    Dismissed,
}

/// What a reply means to the agent.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ReplyKind {
    /// An answer to the question.
    #[default]
    Answer,
    /// A correction: the earlier answer is corrected or the question needs
    /// rewording; the agent must re-read.
    Clarify,
    /// The human will not answer this (optionally with a reason).
    Decline,
}

/// How a reply was given: typed or tapped, or spoken (a voice note whose
/// transcript the speaker confirmed).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Medium {
    /// Typed, or a button tapped.
    #[default]
    Text,
    /// A voice note, transcribed and confirmed with Send.
    Voice,
}

/// Through which door a reply came (the store's one [`Channel`]).
pub use super::channel::Channel;

macro_rules! str_enum {
    ($t:ty, $what:literal, $($v:ident = $s:literal),+) => {
        impl $t {
            /// The name stored in SQL and shown in JSON.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),+ }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($s => Ok(Self::$v),)+
                    _ => Err(format!(
                        concat!("`{}` is not a ", $what, ": use one of {}"),
                        s,
                        [$($s),+].join(", ")
                    )),
                }
            }
        }
    };
}

str_enum!(
    Status,
    "question status",
    Open = "open",
    Resolved = "resolved",
    Dismissed = "dismissed"
);
str_enum!(Medium, "reply medium", Text = "text", Voice = "voice");
str_enum!(
    ReplyKind,
    "reply kind",
    Answer = "answer",
    Clarify = "clarify",
    Decline = "decline"
);

/// How a question's card is drawn and answered: a plain question, or an
/// agent's own multiple-choice prompt (Claude Code's AskUserQuestion).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// A plain question: options, Clarify, Decline, free text.
    #[default]
    Plain,
    /// Pick one option, or write another answer ("Other…").
    One,
    /// Tick any options (each tap toggles one), then Done; or "Other…".
    Many,
}

impl Choice {
    /// True for a plain question (left out of JSON, as before cards).
    pub fn is_plain(&self) -> bool {
        *self == Choice::Plain
    }

    /// The name stored in SQL.
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::Plain => "",
            Choice::One => "one",
            Choice::Many => "many",
        }
    }

    fn from_col(s: &str) -> Result<Choice> {
        match s {
            "" => Ok(Choice::Plain),
            "one" => Ok(Choice::One),
            "many" => Ok(Choice::Many),
            other => Err(Error::Corrupt(format!("question choice `{other}`"))),
        }
    }
}

/// One labelled choice offered with a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuestionOption {
    /// What the button says (≤ 64 chars, unique within the question).
    pub label: String,
    /// The agent's suggestion; at most one option carries it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recommended: bool,
}

/// A question as the agent flags it.
#[derive(Debug, Clone, Default)]
pub struct NewQuestion {
    /// Project it belongs to (scopes `key` and filters).
    pub project: String,
    /// The agent that flagged it (its configured name, or `agent`).
    pub agent: String,
    /// Agent session to wake when answered.
    pub session: String,
    /// With a key, re-flagging the same `(project, key)` while it is open
    /// updates that question in place instead of creating a twin.
    pub key: Option<String>,
    /// One line, ≤ 120 chars.
    pub title: String,
    /// One line of detail, ≤ 500 chars.
    pub detail: String,
    /// Long context, ≤ 64 KiB.
    pub context: String,
    /// None, or 2–4 choices.
    pub options: Vec<QuestionOption>,
}

/// The reply currently standing on a question.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Reply {
    /// The text (empty for a decline without a reason).
    pub text: String,
    /// Extra context the human attached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Answer, clarify or decline.
    pub kind: ReplyKind,
    /// Inbox, chat or agent.
    pub source: Channel,
    /// Typed (`text`) or a confirmed voice note (`voice`).
    #[serde(default)]
    pub medium: Medium,
    /// Who replied.
    pub by: String,
    /// When the reply was written.
    #[serde(with = "crate::clock::Timestamp")]
    pub at: i64,
    /// When an agent picked it up; `null` while it waits.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub seen_at: Option<i64>,
}

/// A stored question.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Question {
    /// The question's id (`q_…`, 26 characters after the prefix).
    pub id: String,
    /// Its last 8 characters, shown in chat and accepted by commands.
    pub short_id: String,
    /// The project it belongs to (scopes `key` and the filters).
    pub project: String,
    /// The agent that flagged it.
    pub agent: String,
    /// The agent session woken when it is answered (empty: none).
    pub session: String,
    /// The "one place" key, if any.
    pub key: Option<String>,
    /// The question in one line (≤ 120 characters).
    pub title: String,
    /// One-line detail.
    pub detail: String,
    /// Longer background, shown collapsed in chat.
    pub context: String,
    /// Offered choices.
    pub options: Vec<QuestionOption>,
    /// How its card is drawn: plain, pick one, or tick many.
    #[serde(default, skip_serializing_if = "Choice::is_plain")]
    pub choice: Choice,
    /// A multiple choice's ticked options, as a bitmask (bit n: option n).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub picked: i64,
    /// Open, resolved or dismissed.
    pub status: Status,
    /// The agent's outcome (resolved) or the human's reason (dismissed).
    pub outcome: Option<String>,
    /// The standing reply, if any.
    pub reply: Option<Reply>,
    /// How many replies and clears this question has seen; the pickup mark
    /// names the exact reply it read by this number.
    pub reply_seq: i64,
    /// Bumped each time the agent re-flags the question in place.
    pub revision: i64,
    /// Left out of the chat-facing list until then.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub snoozed_until: Option<i64>,
    /// When it was first flagged.
    #[serde(with = "crate::clock::Timestamp")]
    pub created_at: i64,
    /// Last changed.
    #[serde(with = "crate::clock::Timestamp")]
    pub updated_at: i64,
    /// Resolved or dismissed.
    #[serde(with = "crate::clock::MaybeTimestamp")]
    pub resolved_at: Option<i64>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl Question {
    /// The labels of a multiple choice's ticked options, in option order.
    pub fn picked_labels(&self) -> Vec<&str> {
        self.options
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < 63 && self.picked & (1 << i) != 0)
            .map(|(_, o)| o.label.as_str())
            .collect()
    }

    /// True when a reply stands and no agent has picked it up yet.
    pub fn has_unseen_reply(&self) -> bool {
        self.reply.as_ref().is_some_and(|r| r.seen_at.is_none())
    }
}

/// A reply as a writer submits it.
#[derive(Debug, Clone, Default)]
pub struct NewReply {
    /// The text. Blank from the Inbox clears an unpicked reply; blank
    /// elsewhere is refused as [`Refusal::Empty`] (except a decline).
    pub text: String,
    /// Answer (default), clarify or decline.
    pub kind: ReplyKind,
    /// Background the human adds to the reply, shown to the agent with it.
    pub context: Option<String>,
    /// Who replies (a user name, a Telegram handle, the agent).
    pub by: String,
    /// The question revision the writer saw (a chat button's revision).
    /// A mismatch is refused as [`Refusal::Stale`].
    pub expected_revision: Option<i64>,
}

/// Why a write changed nothing. These are normal outcomes, not errors.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "refused", rename_all = "snake_case")]
pub enum Refusal {
    /// The reply text is blank (or a blank Inbox reply found nothing to clear).
    Empty,
    /// No question with that id.
    NotFound,
    /// The question is already resolved or dismissed.
    NotOpen {
        /// `resolved` or `dismissed`: why nothing more can be written.
        status: Status,
    },
    /// A reply nobody has picked up yet stands; it wins over this write.
    UnreadAnswer {
        /// The reply that stands, as written.
        reply: String,
        /// Whether it answers, asks to clarify or declines.
        kind: ReplyKind,
        /// Where it came from.
        source: Channel,
        /// Who gave it.
        by: String,
    },
    /// The question changed since the writer drew it.
    Stale {
        /// The revision now stored.
        current_revision: i64,
    },
    /// A blank Inbox reply cannot clear a reply an agent already picked up.
    AlreadyPickedUp {
        /// The reply the agent has.
        reply: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Empty => f.write_str("the reply is empty: write some text"),
            Refusal::NotFound => f.write_str("question not found"),
            Refusal::NotOpen { status } => {
                write!(f, "the question is already {status}: nothing changed")
            }
            Refusal::UnreadAnswer {
                reply, source, by, ..
            } => {
                let place = match source {
                    Channel::Inbox => "an Inbox answer",
                    Channel::Chat => "a chat answer",
                    _ => "an answer",
                };
                let by = if by.is_empty() {
                    String::new()
                } else {
                    format!(" (by {by})")
                };
                write!(
                    f,
                    "{place} is already waiting for the agent{by}: {reply:?}; it wins until the agent picks it up"
                )
            }
            Refusal::Stale { current_revision } => write!(
                f,
                "the question changed since you saw it (now revision {current_revision}): re-read it and reply again"
            ),
            Refusal::AlreadyPickedUp { reply } => write!(
                f,
                "the agent already picked up the reply {reply:?}: a blank reply cannot take it back; send a new reply (e.g. --kind clarify) instead"
            ),
        }
    }
}

/// A write's result: the changed question, or why nothing changed.
pub type Outcome<T> = std::result::Result<T, Refusal>;

/// What [`Store::flag`](super::Store::flag) did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Flagged {
    /// True when a new question was created, false when an open one with
    /// the same key was updated in place.
    pub created: bool,
    /// The question after the write.
    pub question: Question,
}

/// One reply handed to an agent by [`Store::pending`](super::Store::pending).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Delivery {
    /// True when this call delivered the reply (it was unseen and this
    /// pickup marked it); false for a reply delivered before and still
    /// standing on an open question (re-delivered until resolved).
    pub new: bool,
    /// The question with its reply.
    pub question: Question,
}

/// Filters for [`Store::list_questions`](super::Store::list_questions).
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this status (None: all).
    pub status: Option<Status>,
    /// Only questions of this project.
    pub project: Option<String>,
    /// Only questions that wake this agent session.
    pub session: Option<String>,
    /// Leave out questions snoozed past now (the chat-facing list).
    pub awake_only: bool,
    /// At most this many (None: no limit).
    pub limit: Option<i64>,
}

/// One entry of a question's append-only reply history.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ReplyRecord {
    /// Position in the history table.
    pub seq: i64,
    /// The question's `reply_seq` after this write.
    pub reply_seq: i64,
    /// `reply` or `clear`.
    pub action: String,
    /// Text (None for a clear).
    pub reply: Option<String>,
    /// The context written with the reply, if any.
    pub reply_context: Option<String>,
    /// Kind (None for a clear).
    pub kind: Option<ReplyKind>,
    /// Where the reply came from: inbox, chat or agent.
    pub source: Channel,
    /// Typed (`text`) or a confirmed voice note (`voice`).
    #[serde(default)]
    pub medium: Medium,
    /// Who wrote it.
    pub by: String,
    /// Question revision it answered.
    pub revision: i64,
    /// When it was written.
    #[serde(with = "crate::clock::Timestamp")]
    pub at: i64,
}
