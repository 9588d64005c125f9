//! The primitives through the local daemon: each one is the same call on
//! whichever backend [`Daemon::run`] picks, the socket or the file.

use std::time::Duration;

use super::*;

impl QuestionOps for Daemon {
    fn resolve_question_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        self.run(move |b| b.resolve_question_id(id))
    }
    fn flag<'a>(&'a self, q: &'a NewQuestion) -> Call<'a, Flagged> {
        self.run(move |b| b.flag(q))
    }
    fn flag_wait<'a>(
        &'a self,
        q: &'a NewQuestion,
        by: &'a str,
        within: Duration,
    ) -> Call<'a, (Flagged, Option<Awaited>)> {
        self.run(move |b| b.flag_wait(q, by, within))
    }
    fn get_question<'a>(&'a self, id: &'a str) -> Call<'a, Option<Question>> {
        self.run(move |b| b.get_question(id))
    }
    fn question_replies<'a>(&'a self, id: &'a str) -> Call<'a, Vec<ReplyRecord>> {
        self.run(move |b| b.question_replies(id))
    }
    fn list_questions<'a>(&'a self, filter: &'a ListFilter) -> Call<'a, Vec<Question>> {
        self.run(move |b| b.list_questions(filter))
    }
    fn pending_replies<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        include_seen: bool,
        by: &'a str,
    ) -> Call<'a, Vec<Delivery>> {
        self.run(move |b| b.pending_replies(project, session, include_seen, by))
    }
    fn pick_up_reply<'a>(&'a self, q: &'a Question, by: &'a str) -> Call<'a, Option<Question>> {
        self.run(move |b| b.pick_up_reply(q, by))
    }
    fn watch_question<'a>(&'a self, id: &'a str, within: Duration) -> Call<'a, Option<Question>> {
        self.run(move |b| b.watch_question(id, within))
    }
    fn reply_inbox<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        self.run(move |b| b.reply_inbox(id, r))
    }
    fn answer_agent<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        self.run(move |b| b.answer_agent(id, r))
    }
    fn resolve_question<'a>(
        &'a self,
        id: &'a str,
        outcome: &'a str,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        self.run(move |b| b.resolve_question(id, outcome, by))
    }
    fn dismiss_question<'a>(
        &'a self,
        id: &'a str,
        reason: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        self.run(move |b| b.dismiss_question(id, reason, by))
    }
    fn snooze_question<'a>(
        &'a self,
        id: &'a str,
        for_ms: i64,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        self.run(move |b| b.snooze_question(id, for_ms, by))
    }
}

impl BoardOps for Daemon {
    fn upsert_board<'a>(&'a self, up: &'a BoardUpsert) -> Call<'a, Decided<BoardFull>> {
        self.run(move |b| b.upsert_board(up))
    }
    fn write_row<'a>(&'a self, w: &'a RowWrite) -> Call<'a, Decided<BoardFull>> {
        self.run(move |b| b.write_row(w))
    }
    fn advance_row<'a>(&'a self, a: &'a Advance) -> Call<'a, Decided<BoardFull>> {
        self.run(move |b| b.advance_row(a))
    }
    fn store_outcome<'a>(&'a self, w: &'a OutcomeWrite) -> Call<'a, Decided<BoardFull>> {
        self.run(move |b| b.store_outcome(w))
    }
    fn read_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
    ) -> Call<'a, Decided<BoardFull>> {
        self.run(move |b| b.read_board(board, project))
    }
    fn list_boards<'a>(&'a self, project: Option<&'a str>, archived: bool) -> Call<'a, Vec<Board>> {
        self.run(move |b| b.list_boards(project, archived))
    }
    fn archive_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
        version: i64,
        by: &'a str,
    ) -> Call<'a, Decided<Board>> {
        self.run(move |b| b.archive_board(board, project, version, by))
    }
    fn annotate_row<'a>(&'a self, a: &'a Annotate) -> Call<'a, Decided<RowChange>> {
        self.run(move |b| b.annotate_row(a))
    }
    fn mark_handled<'a>(&'a self, h: &'a Handled, clear: bool) -> Call<'a, Decided<RowChange>> {
        self.run(move |b| b.mark_handled(h, clear))
    }
    fn pending_rows<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        by: &'a str,
        peek: bool,
    ) -> Call<'a, Vec<PendingRow>> {
        self.run(move |b| b.pending_rows(project, session, by, peek))
    }
    fn handoffs<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<PendingRow>> {
        self.run(move |b| b.handoffs(project))
    }
}

impl ActionOps for Daemon {
    fn propose<'a>(&'a self, new: &'a NewAction) -> Call<'a, Proposal> {
        self.run(move |b| b.propose(new))
    }
    fn approve<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        patch: Option<&'a str>,
    ) -> Call<'a, ApproveOutcome> {
        self.run(move |b| b.approve(id, actor, patch))
    }
    fn reject<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        reason: &'a str,
    ) -> Call<'a, RejectOutcome> {
        self.run(move |b| b.reject(id, actor, reason))
    }
    fn list_actions<'a>(&'a self, status: Option<Status>) -> Call<'a, Vec<Action>> {
        self.run(move |b| b.list_actions(status))
    }
    fn get_action<'a>(&'a self, id: &'a str) -> Call<'a, Action> {
        self.run(move |b| b.get_action(id))
    }
    fn wait_action<'a>(&'a self, id: &'a str, wait: Duration, until: Until) -> Call<'a, Settled> {
        self.run(move |b| b.wait_action(id, wait, until))
    }
    fn action_audit<'a>(&'a self, id: &'a str) -> Call<'a, Vec<AuditEntry>> {
        self.run(move |b| b.action_audit(id))
    }
    fn audit_export<'a>(
        &'a self,
        since: Option<i64>,
        project: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, crate::store::audit::Export> {
        self.run(move |b| b.audit_export(since, project, by))
    }
    fn expire_due<'a>(&'a self) -> Call<'a, Vec<Action>> {
        self.run(move |b| b.expire_due())
    }
    fn claim<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, ClaimOutcome> {
        self.run(move |b| b.claim(id, owner, lease_ms))
    }
    fn extend_lease<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, bool> {
        self.run(move |b| b.extend_lease(id, owner, lease_ms))
    }
    fn complete<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        success: bool,
        result: &'a Value,
        error: Option<&'a str>,
    ) -> Call<'a, CompleteOutcome> {
        self.run(move |b| b.complete(id, owner, success, result, error))
    }
    fn resolve_unknown<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        how: Resolution,
    ) -> Call<'a, std::result::Result<Action, Action>> {
        self.run(move |b| b.resolve_unknown(id, actor, how))
    }
    fn grant_check<'a>(&'a self, id: &'a str) -> Call<'a, GrantCheck> {
        self.run(move |b| b.grant_check(id))
    }
}

impl SessionOps for Daemon {
    fn resolve_session_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        self.run(move |b| b.resolve_session_id(id))
    }
    fn register_session<'a>(&'a self, s: &'a NewSession) -> Call<'a, Session> {
        self.run(move |b| b.register_session(s))
    }
    fn save_checkpoint<'a>(
        &'a self,
        id: &'a str,
        revision: i64,
        state: &'a str,
    ) -> Call<'a, Checkpointed> {
        self.run(move |b| b.save_checkpoint(id, revision, state))
    }
    fn read_resume<'a>(&'a self, id: &'a str, tail: i64) -> Call<'a, Resume> {
        self.run(move |b| b.read_resume(id, tail))
    }
    fn get_session<'a>(&'a self, id: &'a str) -> Call<'a, Option<Session>> {
        self.run(move |b| b.get_session(id))
    }
    fn list_sessions<'a>(
        &'a self,
        status: Option<&'a str>,
        project: Option<&'a str>,
    ) -> Call<'a, Vec<Session>> {
        self.run(move |b| b.list_sessions(status, project))
    }
    fn fleet<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<FleetSession>> {
        self.run(move |b| b.fleet(project))
    }
    fn end_session<'a>(&'a self, id: &'a str) -> Call<'a, Ended> {
        self.run(move |b| b.end_session(id))
    }
    fn ledger_begin<'a>(&'a self, call: &'a NewCall<'a>) -> Call<'a, Begin> {
        self.run(move |b| b.ledger_begin(call))
    }
    fn ledger_complete<'a>(
        &'a self,
        session: &'a str,
        event_id: &'a str,
        ok: bool,
        result: &'a Value,
    ) -> Call<'a, Complete> {
        self.run(move |b| b.ledger_complete(session, event_id, ok, result))
    }
    fn ledger_list<'a>(
        &'a self,
        session: &'a str,
        last: Option<i64>,
    ) -> Call<'a, Vec<LedgerEntry>> {
        self.run(move |b| b.ledger_list(session, last))
    }
    fn wait_arrivals<'a>(
        &'a self,
        session: &'a str,
        by: &'a str,
        wait: Option<Duration>,
    ) -> Call<'a, Vec<Arrival>> {
        self.run(move |b| b.wait_arrivals(session, by, wait))
    }
}

impl EventOps for Daemon {
    fn events_page<'a>(&'a self, after: i64, limit: i64) -> Call<'a, EventPage> {
        self.run(move |b| b.events_page(after, limit))
    }
    fn events_tail<'a>(&'a self, n: i64) -> Call<'a, EventPage> {
        self.run(move |b| b.events_tail(n))
    }
}
