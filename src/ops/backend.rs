//! The primitive operations: one table, dispatched to [`Local`] (the
//! store) or [`Remote`] (the daemon's `/v1` API). Each mirrors a store
//! function: same inputs, same result types, typed refusals as values, so a
//! caller cannot tell which backend ran it. Ids may be full or short
//! wherever the store accepts both.
//!
//! Errors are [`Error`]: `NotFound` for a missing item where the store has
//! no typed refusal for it, `Invalid` for bad input, `Denied` for a token
//! the daemon refused, `Busy`, `Internal` (which includes "cannot reach the
//! daemon").

use std::time::Duration;

use serde_json::Value;

use super::results::Proposal;
use super::{Ops, Result};
use crate::store::actions::{
    Action, Actor, ApproveOutcome, AuditEntry, ClaimOutcome, CompleteOutcome, NewAction,
    RejectOutcome, Resolution, Settled, Status,
};
use crate::store::boards::{
    Advance, Annotate, Board, BoardFull, BoardUpsert, Decided, Handled, OutcomeWrite, PendingRow,
    RowChange, RowWrite,
};
use crate::store::events::EventPage;
use crate::store::questions::{
    Delivery, Flagged, ListFilter, NewQuestion, NewReply, Outcome, Question, ReplyRecord,
};
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, Ended, FleetSession, LedgerEntry, NewCall, NewSession,
    Resume, Session,
};

/// How a wait for a reply to one question ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Awaited {
    /// A reply not delivered before arrived and was picked up (it is in
    /// `question.reply`), or the agent's own newer answer stands.
    Reply(Question),
    /// The question was resolved or dismissed meanwhile.
    Closed(Question),
    /// Nothing arrived in time; the question as last read.
    TimedOut(Question),
}

/// What a wait on an action waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// No longer pending (approved, rejected, expired).
    Decided,
    /// Final, or `unknown` (executed, failed, rejected, expired, unknown).
    Settled,
}

impl Until {
    /// Whether `s` ends the wait.
    pub fn holds(self, s: Status) -> bool {
        match self {
            Until::Decided => s != Status::Pending,
            Until::Settled => s.is_settled() || s == Status::Unknown,
        }
    }

    /// The API's `wait=` value.
    pub(super) fn as_query(self) -> &'static str {
        match self {
            Until::Decided => "approved",
            Until::Settled => "settled",
        }
    }
}

macro_rules! primitives {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)+) => {
        impl Ops {
            $(
                $(#[$doc])*
                pub async fn $name(&self, $($arg: $ty),*) -> Result<$out> {
                    match self {
                        Ops::Local(l) => l.$name($($arg),*).await,
                        Ops::Remote(r) => r.$name($($arg),*).await,
                        Ops::Daemon(d) => super::daemon::through_daemon!(
                            d,
                            |r| r.$name($($arg),*),
                            |l| l.$name($($arg),*)
                        ),
                    }
                }
            )+
        }

    };
}

primitives! {
    // ---- questions ----
    /// The full id of question `id` (full or short); `None` if no question matches.
    fn resolve_question_id(id: &str) -> Option<String>;
    /// Flag a question (the same open `(project, key)` updates in place).
    fn flag(q: &NewQuestion) -> Flagged;
    /// Flag a question and, through a daemon, wait in the same request up
    /// to `within` (at most the API's cap) for a reply, picked up in `by`'s
    /// name; the file only flags (`None`: the caller waits).
    fn flag_wait(q: &NewQuestion, by: &str, within: Duration) -> (Flagged, Option<Awaited>);
    /// One question.
    fn get_question(id: &str) -> Option<Question>;
    /// A question's append-only reply history.
    fn question_replies(id: &str) -> Vec<ReplyRecord>;
    /// Questions matching `filter`.
    fn list_questions(filter: &ListFilter) -> Vec<Question>;
    /// The agent's pickup of replies (marks each new one picked up).
    fn pending_replies(project: Option<&str>, session: Option<&str>, include_seen: bool, by: &str) -> Vec<Delivery>;
    /// Mark exactly the reply `q` carries picked up, and return the question
    /// so marked; `None` if that reply changed meanwhile, was picked up
    /// already, or the question closed (read it again).
    fn pick_up_reply(q: &Question, by: &str) -> Option<Question>;
    /// Question `id` once a reply may have arrived, at the latest after
    /// `within` (locally a short sleep then a read, remotely a bounded long
    /// poll); `None` if it is gone. [`Ops::await_reply`] loops over this.
    fn watch_question(id: &str, within: Duration) -> Option<Question>;
    /// A human's reply through the Inbox door (always wins).
    fn reply_inbox(id: &str, r: &NewReply) -> Outcome<Question>;
    /// The agent records an answer given in its terminal.
    fn answer_agent(id: &str, r: &NewReply) -> Outcome<Question>;
    /// The agent closes a question with an outcome.
    fn resolve_question(id: &str, outcome: &str, by: &str) -> Outcome<Question>;
    /// A human closes a question without answering (Inbox door).
    fn dismiss_question(id: &str, reason: Option<&str>, by: &str) -> Outcome<Question>;
    /// Hide a question from the chat list for `for_ms` from now (0 wakes it).
    fn snooze_question(id: &str, for_ms: i64, by: &str) -> Outcome<Question>;

    // ---- boards ----
    /// Create or update a board and rows, all or nothing.
    fn upsert_board(up: &BoardUpsert) -> Decided<BoardFull>;
    /// Write one row.
    fn write_row(w: &RowWrite) -> Decided<BoardFull>;
    /// Archive a row's step and install the next, blocked.
    fn advance_row(a: &Advance) -> Decided<BoardFull>;
    /// Store a step's outcome and leave blocked.
    fn store_outcome(w: &OutcomeWrite) -> Decided<BoardFull>;
    /// One board with its rows.
    fn read_board(board: &str, project: Option<&str>) -> Decided<BoardFull>;
    /// Boards with progress.
    fn list_boards(project: Option<&str>, archived: bool) -> Vec<Board>;
    /// Archive a board (CAS on its version).
    fn archive_board(board: &str, project: Option<&str>, version: i64, by: &str) -> Decided<Board>;
    /// A human's annotation on a row (Inbox door unless `a.source` says chat — local only).
    fn annotate_row(a: &Annotate) -> Decided<RowChange>;
    /// Mark a row handled, or with `clear` take the mark back.
    fn mark_handled(h: &Handled, clear: bool) -> Decided<RowChange>;
    /// Rows waiting for an agent; marked delivered unless `peek`.
    fn pending_rows(project: Option<&str>, session: Option<&str>, by: &str, peek: bool) -> Vec<PendingRow>;
    /// Rows marked handled whose outcome no agent stored yet.
    fn handoffs(project: Option<&str>) -> Vec<PendingRow>;

    // ---- actions ----
    /// Propose an action; the policy's rules (locally) or the daemon's may decide it at once.
    fn propose(new: &NewAction) -> Proposal;
    /// Add an approval, optionally patching the arguments (JSON object text).
    fn approve(id: &str, actor: Actor<'_>, patch: Option<&str>) -> ApproveOutcome;
    /// Reject with a reason.
    fn reject(id: &str, actor: Actor<'_>, reason: &str) -> RejectOutcome;
    /// Actions, newest first (effective status), as summaries: no
    /// arguments, patch or result (`null`); `get_action` has them.
    fn list_actions(status: Option<Status>) -> Vec<Action>;
    /// One action (stored status; real arguments where the caller may see them).
    fn get_action(id: &str) -> Action;
    /// Wait up to `wait` until `until` holds for the action.
    fn wait_action(id: &str, wait: Duration, until: Until) -> Settled;
    /// The action's audit trail.
    fn action_audit(id: &str) -> Vec<AuditEntry>;
    /// The actions' audit log as a hash chain (since, project), its head recorded.
    fn audit_export(since: Option<i64>, project: Option<&str>, by: &str) -> crate::store::audit::Export;
    /// Settle every pending action past its expiry.
    fn expire_due() -> Vec<Action>;
    /// Claim an approved action for execution.
    fn claim(id: &str, owner: &str, lease_ms: i64) -> ClaimOutcome;
    /// Push the lease of `owner`'s claim; false if it holds none.
    fn extend_lease(id: &str, owner: &str, lease_ms: i64) -> bool;
    /// Record executed or failed.
    fn complete(id: &str, owner: &str, success: bool, result: &Value, error: Option<&str>) -> CompleteOutcome;
    /// Settle an `unknown` outcome; `Err` carries the action when it is not unknown.
    fn resolve_unknown(id: &str, actor: Actor<'_>, how: Resolution) -> std::result::Result<Action, Action>;

    // ---- sessions ----
    /// The full id of a registered session (full id or unique suffix).
    fn resolve_session_id(id: &str) -> Option<String>;
    /// Register (or refresh) a session.
    fn register_session(s: &NewSession) -> Session;
    /// Store a checkpoint (CAS on the revision).
    fn save_checkpoint(id: &str, revision: i64, state: &str) -> Checkpointed;
    /// Everything a woken session needs; marks nothing.
    fn read_resume(id: &str, tail: i64) -> Resume;
    /// One registered session.
    fn get_session(id: &str) -> Option<Session>;
    /// Sessions, most recently changed first.
    fn list_sessions(status: Option<&str>, project: Option<&str>) -> Vec<Session>;
    /// Every session (of `project`) and what it is doing now, by project.
    fn fleet(project: Option<&str>) -> Vec<FleetSession>;
    /// Mark a session ended.
    fn end_session(id: &str) -> Ended;
    /// Record that a call is about to run.
    fn ledger_begin(call: &NewCall<'_>) -> Begin;
    /// Record a begun call's outcome.
    fn ledger_complete(session: &str, event_id: &str, ok: bool, result: &Value) -> Complete;
    /// A session's ledger, oldest first (the newest `last` rows).
    fn ledger_list(session: &str, last: Option<i64>) -> Vec<LedgerEntry>;
    /// Block until something arrives for the session (or `wait` passes:
    /// empty), claim and return it. `None` waits forever.
    fn wait_arrivals(session: &str, by: &str, wait: Option<Duration>) -> Vec<Arrival>;

    // ---- events ----
    /// Events after `after`, oldest first, at most `limit`, and where to continue.
    fn events_page(after: i64, limit: i64) -> EventPage;
    /// The newest `n` events, oldest first, and where to follow the log from.
    fn events_tail(n: i64) -> EventPage;
}
