//! The primitive operations: the [`Backend`] trait, implemented by
//! [`Local`](super::Local) (the store), [`Remote`](super::Remote) (the daemon's `/v1` API) and
//! [`Daemon`](super::Daemon) (the local daemon's socket, the file as the fallback). Each mirrors a store
//! function: same inputs, same result types, typed refusals as values, so a
//! caller cannot tell which backend ran it. Ids may be full or short
//! wherever the store accepts both.
//!
//! Errors are [`Error`]: `NotFound` for a missing item where the store has
//! no typed refusal for it, `Invalid` for bad input, `Denied` for a token
//! the daemon refused, `Busy`, `Internal` (which includes "cannot reach the
//! daemon").

mod daemon;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use super::claude::GrantCheck;
use super::results::Proposal;
use super::{Daemon, Ops, Result};
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

/// A boxed primitive call: what every [`Backend`] method returns (boxed so
/// that `Ops` can hold its backend as `dyn Backend`).
pub type Call<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// The primitive operations, one implementation per backend: [`Local`](super::Local)
/// (the store), [`Remote`](super::Remote) (the `/v1` API) and [`Daemon`](super::Daemon) (the local
/// daemon's socket, the file as the fallback). [`Ops`] dispatches to
/// its backend by dereferencing to it, so `ops.flag(&q)` is
/// [`QuestionOps::flag`] on whichever backend was chosen.
///
/// The primitives are split by area into the traits below, so that each
/// backend implements each area in that area's file, bodies included; a
/// type that implements them all is a `Backend`.
pub trait Backend:
    QuestionOps + BoardOps + ActionOps + SessionOps + EventOps + Send + Sync
{
}

impl<T> Backend for T where
    T: QuestionOps + BoardOps + ActionOps + SessionOps + EventOps + Send + Sync
{
}

/// The question primitives (see [`Backend`]).
pub trait QuestionOps {
    /// The full id of question `id` (full or short); `None` if no question matches.
    fn resolve_question_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>>;
    /// Flag a question (the same open `(project, key)` updates in place).
    fn flag<'a>(&'a self, q: &'a NewQuestion) -> Call<'a, Flagged>;
    /// Flag a question and, through a daemon, wait in the same request up
    /// to `within` (at most the API's cap) for a reply, picked up in `by`'s
    /// name; the file only flags (`None`: the caller waits).
    fn flag_wait<'a>(
        &'a self,
        q: &'a NewQuestion,
        by: &'a str,
        within: Duration,
    ) -> Call<'a, (Flagged, Option<Awaited>)>;
    /// One question.
    fn get_question<'a>(&'a self, id: &'a str) -> Call<'a, Option<Question>>;
    /// A question's append-only reply history.
    fn question_replies<'a>(&'a self, id: &'a str) -> Call<'a, Vec<ReplyRecord>>;
    /// Questions matching `filter`.
    fn list_questions<'a>(&'a self, filter: &'a ListFilter) -> Call<'a, Vec<Question>>;
    /// The agent's pickup of replies (marks each new one picked up).
    fn pending_replies<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        include_seen: bool,
        by: &'a str,
    ) -> Call<'a, Vec<Delivery>>;
    /// Mark exactly the reply `q` carries picked up, and return the question
    /// so marked; `None` if that reply changed meanwhile, was picked up
    /// already, or the question closed (read it again).
    fn pick_up_reply<'a>(&'a self, q: &'a Question, by: &'a str) -> Call<'a, Option<Question>>;
    /// Question `id` once a reply may have arrived, at the latest after
    /// `within` (locally a short sleep then a read, remotely a bounded long
    /// poll); `None` if it is gone. [`Ops::await_reply`] loops over this.
    fn watch_question<'a>(&'a self, id: &'a str, within: Duration) -> Call<'a, Option<Question>>;
    /// A human's reply through the Inbox door (always wins).
    fn reply_inbox<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>>;
    /// The agent records an answer given in its terminal.
    fn answer_agent<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>>;
    /// The agent closes a question with an outcome.
    fn resolve_question<'a>(
        &'a self,
        id: &'a str,
        outcome: &'a str,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>>;
    /// A human closes a question without answering (Inbox door).
    fn dismiss_question<'a>(
        &'a self,
        id: &'a str,
        reason: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>>;
    /// Hide a question from the chat list for `for_ms` from now (0 wakes it).
    fn snooze_question<'a>(
        &'a self,
        id: &'a str,
        for_ms: i64,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>>;
}

/// The board primitives (see [`Backend`]).
pub trait BoardOps {
    /// Create or update a board and rows, all or nothing.
    fn upsert_board<'a>(&'a self, up: &'a BoardUpsert) -> Call<'a, Decided<BoardFull>>;
    /// Write one row.
    fn write_row<'a>(&'a self, w: &'a RowWrite) -> Call<'a, Decided<BoardFull>>;
    /// Archive a row's step and install the next, blocked.
    fn advance_row<'a>(&'a self, a: &'a Advance) -> Call<'a, Decided<BoardFull>>;
    /// Store a step's outcome and leave blocked.
    fn store_outcome<'a>(&'a self, w: &'a OutcomeWrite) -> Call<'a, Decided<BoardFull>>;
    /// One board with its rows.
    fn read_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
    ) -> Call<'a, Decided<BoardFull>>;
    /// Boards with progress.
    fn list_boards<'a>(&'a self, project: Option<&'a str>, archived: bool) -> Call<'a, Vec<Board>>;
    /// Archive a board (CAS on its version).
    fn archive_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
        version: i64,
        by: &'a str,
    ) -> Call<'a, Decided<Board>>;
    /// A human's annotation on a row (Inbox door unless `a.source` says chat — local only).
    fn annotate_row<'a>(&'a self, a: &'a Annotate) -> Call<'a, Decided<RowChange>>;
    /// Mark a row handled, or with `clear` take the mark back.
    fn mark_handled<'a>(&'a self, h: &'a Handled, clear: bool) -> Call<'a, Decided<RowChange>>;
    /// Rows waiting for an agent; marked delivered unless `peek`.
    fn pending_rows<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        by: &'a str,
        peek: bool,
    ) -> Call<'a, Vec<PendingRow>>;
    /// Rows marked handled whose outcome no agent stored yet.
    fn handoffs<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<PendingRow>>;
}

/// The pending-action primitives (see [`Backend`]).
pub trait ActionOps {
    /// Propose an action; the policy's rules (locally) or the daemon's may decide it at once.
    fn propose<'a>(&'a self, new: &'a NewAction) -> Call<'a, Proposal>;
    /// Add an approval, optionally patching the arguments (JSON object text).
    fn approve<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        patch: Option<&'a str>,
    ) -> Call<'a, ApproveOutcome>;
    /// Reject with a reason.
    fn reject<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        reason: &'a str,
    ) -> Call<'a, RejectOutcome>;
    /// Actions, newest first (effective status), as summaries: no
    /// arguments, patch or result (`null`); `get_action` has them.
    fn list_actions<'a>(&'a self, status: Option<Status>) -> Call<'a, Vec<Action>>;
    /// One action (stored status; real arguments where the caller may see them).
    fn get_action<'a>(&'a self, id: &'a str) -> Call<'a, Action>;
    /// Wait up to `wait` until `until` holds for the action.
    fn wait_action<'a>(&'a self, id: &'a str, wait: Duration, until: Until) -> Call<'a, Settled>;
    /// The action's audit trail.
    fn action_audit<'a>(&'a self, id: &'a str) -> Call<'a, Vec<AuditEntry>>;
    /// The actions' audit log as a hash chain (since, project), its head recorded.
    fn audit_export<'a>(
        &'a self,
        since: Option<i64>,
        project: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, crate::store::audit::Export>;
    /// Settle every pending action past its expiry.
    fn expire_due<'a>(&'a self) -> Call<'a, Vec<Action>>;
    /// Claim an approved action for execution.
    fn claim<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, ClaimOutcome>;
    /// Push the lease of `owner`'s claim; false if it holds none.
    fn extend_lease<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, bool>;
    /// Record executed or failed.
    fn complete<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        success: bool,
        result: &'a Value,
        error: Option<&'a str>,
    ) -> Call<'a, CompleteOutcome>;
    /// Settle an `unknown` outcome; `Err` carries the action when it is not unknown.
    fn resolve_unknown<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        how: Resolution,
    ) -> Call<'a, std::result::Result<Action, Action>>;
    /// Let a live grant covering the prompt `id` decide it, and read the
    /// grant its approval saved.
    fn grant_check<'a>(&'a self, id: &'a str) -> Call<'a, GrantCheck>;
}

/// The session, ledger and arrival primitives (see [`Backend`]).
pub trait SessionOps {
    /// The full id of a registered session (full id or unique suffix).
    fn resolve_session_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>>;
    /// Register (or refresh) a session.
    fn register_session<'a>(&'a self, s: &'a NewSession) -> Call<'a, Session>;
    /// Store a checkpoint (CAS on the revision).
    fn save_checkpoint<'a>(
        &'a self,
        id: &'a str,
        revision: i64,
        state: &'a str,
    ) -> Call<'a, Checkpointed>;
    /// Everything a woken session needs; marks nothing.
    fn read_resume<'a>(&'a self, id: &'a str, tail: i64) -> Call<'a, Resume>;
    /// One registered session.
    fn get_session<'a>(&'a self, id: &'a str) -> Call<'a, Option<Session>>;
    /// Sessions, most recently changed first.
    fn list_sessions<'a>(
        &'a self,
        status: Option<&'a str>,
        project: Option<&'a str>,
    ) -> Call<'a, Vec<Session>>;
    /// Every session (of `project`) and what it is doing now, by project.
    fn fleet<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<FleetSession>>;
    /// Mark a session ended.
    fn end_session<'a>(&'a self, id: &'a str) -> Call<'a, Ended>;
    /// Record that a call is about to run.
    fn ledger_begin<'a>(&'a self, call: &'a NewCall<'a>) -> Call<'a, Begin>;
    /// Record a begun call's outcome.
    fn ledger_complete<'a>(
        &'a self,
        session: &'a str,
        event_id: &'a str,
        ok: bool,
        result: &'a Value,
    ) -> Call<'a, Complete>;
    /// A session's ledger, oldest first (the newest `last` rows).
    fn ledger_list<'a>(&'a self, session: &'a str, last: Option<i64>)
    -> Call<'a, Vec<LedgerEntry>>;
    /// Block until something arrives for the session (or `wait` passes:
    /// empty), claim and return it. `None` waits forever.
    fn wait_arrivals<'a>(
        &'a self,
        session: &'a str,
        by: &'a str,
        wait: Option<Duration>,
    ) -> Call<'a, Vec<Arrival>>;
}

/// The event-log primitives (see [`Backend`]).
pub trait EventOps {
    /// Events after `after`, oldest first, at most `limit`, and where to continue.
    fn events_page<'a>(&'a self, after: i64, limit: i64) -> Call<'a, EventPage>;
    /// The newest `n` events, oldest first, and where to follow the log from.
    fn events_tail<'a>(&'a self, n: i64) -> Call<'a, EventPage>;
}

impl Ops {
    /// The backend this `Ops` runs on.
    pub fn backend(&self) -> &(dyn Backend + 'static) {
        match self {
            Ops::Local(l) => l,
            Ops::Remote(r) => r,
            Ops::Daemon(d) => d,
        }
    }
}

/// `ops.flag(&q)` is [`Backend::flag`] on the chosen backend.
impl std::ops::Deref for Ops {
    type Target = dyn Backend;

    fn deref(&self) -> &Self::Target {
        self.backend()
    }
}
