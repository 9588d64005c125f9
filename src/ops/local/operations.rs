//! The primitives against the local store: mostly one store call each, plus
//! the two polling waits (a reply to one question, arrivals for a session)
//! that need no daemon.

use std::time::Duration;

use serde_json::Value;

use super::Local;
use crate::ops::results::Proposal;
use crate::ops::wait::Deadline;
use crate::ops::{Awaited, Result, Until};
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
    self, Delivery, Flagged, ListFilter, NewQuestion, NewReply, Outcome, Question, ReplyRecord,
};
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, Ended, LedgerEntry, NewCall, NewSession, Resume,
    Session,
};

/// How often the local waits look at the store.
const POLL: Duration = Duration::from_millis(200);

impl Local {
    pub(crate) async fn resolve_question_id(&self, id: &str) -> Result<Option<String>> {
        Ok(self.store.resolve_question_id(id).await?)
    }

    pub(crate) async fn flag(&self, q: &NewQuestion) -> Result<Flagged> {
        Ok(self.store.flag(q).await?)
    }

    /// Flag only: without a daemon the wait polls the file
    /// ([`crate::ops::Ops::flag_and_await`]).
    pub(crate) async fn flag_wait(
        &self,
        q: &NewQuestion,
        _by: &str,
        _within: Duration,
    ) -> Result<(Flagged, Option<Awaited>)> {
        Ok((self.store.flag(q).await?, None))
    }

    pub(crate) async fn get_question(&self, id: &str) -> Result<Option<Question>> {
        Ok(self.store.get_question(id).await?)
    }

    pub(crate) async fn question_replies(&self, id: &str) -> Result<Vec<ReplyRecord>> {
        Ok(self.store.question_replies(id).await?)
    }

    pub(crate) async fn list_questions(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        Ok(self.store.list_questions(filter).await?)
    }

    pub(crate) async fn pending_replies(
        &self,
        project: Option<&str>,
        session: Option<&str>,
        include_seen: bool,
        by: &str,
    ) -> Result<Vec<Delivery>> {
        Ok(self
            .store
            .pending(project, session, include_seen, by)
            .await?)
    }

    pub(crate) async fn pick_up_reply(&self, q: &Question, by: &str) -> Result<Option<Question>> {
        let Some(at) = self.store.mark_reply_seen(q, by).await? else {
            return Ok(None);
        };
        let mut q = q.clone();
        if let Some(r) = q.reply.as_mut() {
            r.seen_at = Some(at);
        }
        Ok(Some(q))
    }

    /// Sleep one poll interval (at most `within`), then read the question:
    /// a wait needs no daemon.
    pub(crate) async fn watch_question(
        &self,
        id: &str,
        within: Duration,
    ) -> Result<Option<Question>> {
        self.pause(POLL.min(within)).await;
        Ok(self.store.get_question(id).await?)
    }

    pub(crate) async fn reply_inbox(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        Ok(self.store.reply_inbox(id, r).await?)
    }

    pub(crate) async fn answer_agent(&self, id: &str, r: &NewReply) -> Result<Outcome<Question>> {
        Ok(self.store.answer_agent(id, r).await?)
    }

    pub(crate) async fn resolve_question(
        &self,
        id: &str,
        outcome: &str,
        by: &str,
    ) -> Result<Outcome<Question>> {
        Ok(self.store.resolve_question(id, outcome, by).await?)
    }

    pub(crate) async fn dismiss_question(
        &self,
        id: &str,
        reason: Option<&str>,
        by: &str,
    ) -> Result<Outcome<Question>> {
        Ok(self
            .store
            .dismiss_question(id, reason, by, questions::Channel::Inbox)
            .await?)
    }

    pub(crate) async fn snooze_question(
        &self,
        id: &str,
        for_ms: i64,
        by: &str,
    ) -> Result<Outcome<Question>> {
        let until = self.store.now().saturating_add(for_ms);
        Ok(self
            .store
            .snooze_question(id, until, by, questions::Channel::Inbox)
            .await?)
    }

    pub(crate) async fn upsert_board(&self, up: &BoardUpsert) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_upsert(up).await?)
    }

    pub(crate) async fn write_row(&self, w: &RowWrite) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_row(w).await?)
    }

    pub(crate) async fn advance_row(&self, a: &Advance) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_advance(a).await?)
    }

    pub(crate) async fn store_outcome(&self, w: &OutcomeWrite) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_outcome(w).await?)
    }

    pub(crate) async fn read_board(
        &self,
        board: &str,
        project: Option<&str>,
    ) -> Result<Decided<BoardFull>> {
        Ok(self.store.board_get(board, project).await?)
    }

    pub(crate) async fn list_boards(
        &self,
        project: Option<&str>,
        archived: bool,
    ) -> Result<Vec<Board>> {
        Ok(self.store.board_list(project, archived).await?)
    }

    pub(crate) async fn archive_board(
        &self,
        board: &str,
        project: Option<&str>,
        version: i64,
        by: &str,
    ) -> Result<Decided<Board>> {
        Ok(self
            .store
            .board_archive(board, project, version, by)
            .await?)
    }

    pub(crate) async fn annotate_row(&self, a: &Annotate) -> Result<Decided<RowChange>> {
        Ok(self.store.annotate(a).await?)
    }

    pub(crate) async fn mark_handled(
        &self,
        h: &Handled,
        clear: bool,
    ) -> Result<Decided<RowChange>> {
        Ok(if clear {
            self.store.clear_handled(h).await?
        } else {
            self.store.mark_handled(h).await?
        })
    }

    pub(crate) async fn pending_rows(
        &self,
        project: Option<&str>,
        session: Option<&str>,
        by: &str,
        peek: bool,
    ) -> Result<Vec<PendingRow>> {
        Ok(if peek {
            self.store.pending_rows_peek(project, session).await?
        } else {
            self.store.pending_rows(project, session, by).await?
        })
    }

    pub(crate) async fn handoffs(&self, project: Option<&str>) -> Result<Vec<PendingRow>> {
        Ok(self.store.unprocessed_handoffs(project).await?)
    }

    /// Propose, filling the redaction keys from the policy when the caller
    /// left them out, then let the policy's first matching rule decide.
    pub(crate) async fn propose(&self, new: &NewAction) -> Result<Proposal> {
        let mut new = new.clone();
        if new.redact_keys.is_none() {
            new.redact_keys = self.policy.redact_keys.clone();
        }
        new.not_by_proposer |= self
            .policy
            .approvals
            .not_by_proposer(&new.kind, &new.project);
        if new.escalation.is_empty() {
            new.escalation = self
                .policy
                .approvals
                .escalation(&new.kind, &new.project, 0, None);
        }
        let proposed = self.store.propose(&new).await?;
        let mut out = Proposal {
            created: proposed.created,
            action: proposed.action.redacted(),
            rule: None,
            decision: None,
            note: None,
        };
        if proposed.created
            && let Some(applied) =
                crate::programs::apply_rules(&self.store, &proposed.action, &self.policy.rules)
                    .await?
        {
            out.action = applied.action.redacted();
            out.rule = Some(applied.rule);
            out.decision = Some(applied.decision);
        }
        Ok(out)
    }

    pub(crate) async fn approve(
        &self,
        id: &str,
        actor: Actor<'_>,
        patch: Option<&str>,
    ) -> Result<ApproveOutcome> {
        Ok(self.store.approve(id, actor, patch).await?)
    }

    pub(crate) async fn reject(
        &self,
        id: &str,
        actor: Actor<'_>,
        reason: &str,
    ) -> Result<RejectOutcome> {
        Ok(self.store.reject(id, actor, reason).await?)
    }

    pub(crate) async fn list_actions(&self, status: Option<Status>) -> Result<Vec<Action>> {
        // A list carries summaries (no arguments or result), as over HTTP.
        Ok(self.store.list_action_summaries(status, None).await?)
    }

    pub(crate) async fn get_action(&self, id: &str) -> Result<Action> {
        Ok(self.store.get_action(id).await?)
    }

    pub(crate) async fn wait_action(
        &self,
        id: &str,
        wait: Duration,
        until: Until,
    ) -> Result<Settled> {
        Ok(self
            .store
            .wait_action_pausing(id, wait, move |s| until.holds(s), |d| self.pause(d))
            .await?)
    }

    pub(crate) async fn action_audit(&self, id: &str) -> Result<Vec<AuditEntry>> {
        Ok(self.store.action_audit(id).await?)
    }

    pub(crate) async fn audit_export(
        &self,
        since: Option<i64>,
        project: Option<&str>,
        by: &str,
    ) -> Result<crate::store::audit::Export> {
        Ok(self
            .store
            .audit_export(since, project, by, crate::store::Channel::Cli)
            .await?)
    }

    pub(crate) async fn expire_due(&self) -> Result<Vec<Action>> {
        Ok(self.store.expire_due().await?)
    }

    pub(crate) async fn claim(&self, id: &str, owner: &str, lease_ms: i64) -> Result<ClaimOutcome> {
        Ok(self.store.claim(id, owner, lease_ms).await?)
    }

    pub(crate) async fn extend_lease(&self, id: &str, owner: &str, lease_ms: i64) -> Result<bool> {
        Ok(self.store.extend_lease(id, owner, lease_ms).await?)
    }

    pub(crate) async fn complete(
        &self,
        id: &str,
        owner: &str,
        success: bool,
        result: &Value,
        error: Option<&str>,
    ) -> Result<CompleteOutcome> {
        Ok(self
            .store
            .complete(id, owner, success, result.clone(), error)
            .await?)
    }

    pub(crate) async fn resolve_unknown(
        &self,
        id: &str,
        actor: Actor<'_>,
        how: Resolution,
    ) -> Result<std::result::Result<Action, Action>> {
        Ok(self.store.resolve_unknown(id, actor, how).await?)
    }

    pub(crate) async fn resolve_session_id(&self, id: &str) -> Result<Option<String>> {
        Ok(self.store.resolve_session_id(id, None).await?)
    }

    pub(crate) async fn register_session(&self, s: &NewSession) -> Result<Session> {
        Ok(self
            .store
            .register_session_on(s, &crate::ops::this_host())
            .await?)
    }

    pub(crate) async fn save_checkpoint(
        &self,
        id: &str,
        revision: i64,
        state: &str,
    ) -> Result<Checkpointed> {
        Ok(self.store.checkpoint(id, revision, state).await?)
    }

    pub(crate) async fn read_resume(&self, id: &str, tail: i64) -> Result<Resume> {
        Ok(self.store.resume(id, tail).await?)
    }

    pub(crate) async fn get_session(&self, id: &str) -> Result<Option<Session>> {
        Ok(self.store.get_session(id).await?)
    }

    pub(crate) async fn list_sessions(
        &self,
        status: Option<&str>,
        project: Option<&str>,
    ) -> Result<Vec<Session>> {
        Ok(self.store.list_sessions(status, project).await?)
    }

    pub(crate) async fn fleet(
        &self,
        project: Option<&str>,
    ) -> Result<Vec<crate::store::sessions::FleetSession>> {
        Ok(self.store.fleet(project).await?)
    }

    pub(crate) async fn end_session(&self, id: &str) -> Result<Ended> {
        Ok(self.store.end_session(id).await?)
    }

    pub(crate) async fn ledger_begin(&self, call: &NewCall<'_>) -> Result<Begin> {
        Ok(self.store.ledger_begin(call).await?)
    }

    pub(crate) async fn ledger_complete(
        &self,
        session: &str,
        event_id: &str,
        ok: bool,
        result: &Value,
    ) -> Result<Complete> {
        Ok(self
            .store
            .ledger_complete(session, event_id, ok, result)
            .await?)
    }

    pub(crate) async fn ledger_list(
        &self,
        session: &str,
        last: Option<i64>,
    ) -> Result<Vec<LedgerEntry>> {
        Ok(self.store.ledger_list(session, last).await?)
    }

    /// Poll the store until something arrives for `session`, re-claiming
    /// only when the newest event about it moved (one indexed `MAX(seq)`
    /// read per tick). Needs no daemon.
    pub(crate) async fn wait_arrivals(
        &self,
        session: &str,
        by: &str,
        wait: Option<Duration>,
    ) -> Result<Vec<Arrival>> {
        if !self.store.session_known(session).await? {
            return Err(crate::ops::Error::not_found(unknown_session(session)));
        }
        let deadline = Deadline::after(wait);
        let mut seen_mark = None;
        loop {
            // Read the change mark *before* claiming: an event committed
            // during the claim moves the mark, so the next tick claims again.
            let mark = self.store.session_event_mark(session).await?;
            if seen_mark != Some(mark) {
                seen_mark = Some(mark);
                let arrivals = self.store.claim_arrivals(session, by).await?;
                if !arrivals.is_empty() {
                    return Ok(arrivals);
                }
            }
            if deadline.passed() {
                return Ok(Vec::new());
            }
            self.pause(deadline.left(POLL)).await;
        }
    }

    pub(crate) async fn events_page(&self, after: i64, limit: i64) -> Result<EventPage> {
        Ok(self.store.events_page(after, limit).await?)
    }

    pub(crate) async fn events_tail(&self, n: i64) -> Result<EventPage> {
        Ok(self.store.events_tail(n).await?)
    }
}

/// Why `wait` refuses a session nothing ever happened under.
pub(crate) fn unknown_session(id: &str) -> String {
    format!(
        "no session `{id}`: nothing was ever registered, asked or woken under that id; \
         check it (`handoff session list`) or register it first (`handoff session register --session {id}`)"
    )
}
