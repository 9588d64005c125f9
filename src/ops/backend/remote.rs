//! [`Backend`] over the `/v1` API: each primitive is [`Remote`]'s own method.

use std::time::Duration;

use super::*;

impl Backend for Remote {
    fn resolve_question_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        Box::pin(Remote::resolve_question_id(self, id))
    }
    fn flag<'a>(&'a self, q: &'a NewQuestion) -> Call<'a, Flagged> {
        Box::pin(Remote::flag(self, q))
    }
    fn flag_wait<'a>(
        &'a self,
        q: &'a NewQuestion,
        by: &'a str,
        within: Duration,
    ) -> Call<'a, (Flagged, Option<Awaited>)> {
        Box::pin(Remote::flag_wait(self, q, by, within))
    }
    fn get_question<'a>(&'a self, id: &'a str) -> Call<'a, Option<Question>> {
        Box::pin(Remote::get_question(self, id))
    }
    fn question_replies<'a>(&'a self, id: &'a str) -> Call<'a, Vec<ReplyRecord>> {
        Box::pin(Remote::question_replies(self, id))
    }
    fn list_questions<'a>(&'a self, filter: &'a ListFilter) -> Call<'a, Vec<Question>> {
        Box::pin(Remote::list_questions(self, filter))
    }
    fn pending_replies<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        include_seen: bool,
        by: &'a str,
    ) -> Call<'a, Vec<Delivery>> {
        Box::pin(Remote::pending_replies(
            self,
            project,
            session,
            include_seen,
            by,
        ))
    }
    fn pick_up_reply<'a>(&'a self, q: &'a Question, by: &'a str) -> Call<'a, Option<Question>> {
        Box::pin(Remote::pick_up_reply(self, q, by))
    }
    fn watch_question<'a>(&'a self, id: &'a str, within: Duration) -> Call<'a, Option<Question>> {
        Box::pin(Remote::watch_question(self, id, within))
    }
    fn reply_inbox<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        Box::pin(Remote::reply_inbox(self, id, r))
    }
    fn answer_agent<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        Box::pin(Remote::answer_agent(self, id, r))
    }
    fn resolve_question<'a>(
        &'a self,
        id: &'a str,
        outcome: &'a str,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(Remote::resolve_question(self, id, outcome, by))
    }
    fn dismiss_question<'a>(
        &'a self,
        id: &'a str,
        reason: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(Remote::dismiss_question(self, id, reason, by))
    }
    fn snooze_question<'a>(
        &'a self,
        id: &'a str,
        for_ms: i64,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(Remote::snooze_question(self, id, for_ms, by))
    }
    fn upsert_board<'a>(&'a self, up: &'a BoardUpsert) -> Call<'a, Decided<BoardFull>> {
        Box::pin(Remote::upsert_board(self, up))
    }
    fn write_row<'a>(&'a self, w: &'a RowWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(Remote::write_row(self, w))
    }
    fn advance_row<'a>(&'a self, a: &'a Advance) -> Call<'a, Decided<BoardFull>> {
        Box::pin(Remote::advance_row(self, a))
    }
    fn store_outcome<'a>(&'a self, w: &'a OutcomeWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(Remote::store_outcome(self, w))
    }
    fn read_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
    ) -> Call<'a, Decided<BoardFull>> {
        Box::pin(Remote::read_board(self, board, project))
    }
    fn list_boards<'a>(&'a self, project: Option<&'a str>, archived: bool) -> Call<'a, Vec<Board>> {
        Box::pin(Remote::list_boards(self, project, archived))
    }
    fn archive_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
        version: i64,
        by: &'a str,
    ) -> Call<'a, Decided<Board>> {
        Box::pin(Remote::archive_board(self, board, project, version, by))
    }
    fn annotate_row<'a>(&'a self, a: &'a Annotate) -> Call<'a, Decided<RowChange>> {
        Box::pin(Remote::annotate_row(self, a))
    }
    fn mark_handled<'a>(&'a self, h: &'a Handled, clear: bool) -> Call<'a, Decided<RowChange>> {
        Box::pin(Remote::mark_handled(self, h, clear))
    }
    fn pending_rows<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        by: &'a str,
        peek: bool,
    ) -> Call<'a, Vec<PendingRow>> {
        Box::pin(Remote::pending_rows(self, project, session, by, peek))
    }
    fn handoffs<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<PendingRow>> {
        Box::pin(Remote::handoffs(self, project))
    }
    fn propose<'a>(&'a self, new: &'a NewAction) -> Call<'a, Proposal> {
        Box::pin(Remote::propose(self, new))
    }
    fn approve<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        patch: Option<&'a str>,
    ) -> Call<'a, ApproveOutcome> {
        Box::pin(Remote::approve(self, id, actor, patch))
    }
    fn reject<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        reason: &'a str,
    ) -> Call<'a, RejectOutcome> {
        Box::pin(Remote::reject(self, id, actor, reason))
    }
    fn list_actions<'a>(&'a self, status: Option<Status>) -> Call<'a, Vec<Action>> {
        Box::pin(Remote::list_actions(self, status))
    }
    fn get_action<'a>(&'a self, id: &'a str) -> Call<'a, Action> {
        Box::pin(Remote::get_action(self, id))
    }
    fn wait_action<'a>(&'a self, id: &'a str, wait: Duration, until: Until) -> Call<'a, Settled> {
        Box::pin(Remote::wait_action(self, id, wait, until))
    }
    fn action_audit<'a>(&'a self, id: &'a str) -> Call<'a, Vec<AuditEntry>> {
        Box::pin(Remote::action_audit(self, id))
    }
    fn audit_export<'a>(
        &'a self,
        since: Option<i64>,
        project: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, crate::store::audit::Export> {
        Box::pin(Remote::audit_export(self, since, project, by))
    }
    fn expire_due<'a>(&'a self) -> Call<'a, Vec<Action>> {
        Box::pin(Remote::expire_due(self))
    }
    fn claim<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, ClaimOutcome> {
        Box::pin(Remote::claim(self, id, owner, lease_ms))
    }
    fn extend_lease<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, bool> {
        Box::pin(Remote::extend_lease(self, id, owner, lease_ms))
    }
    fn complete<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        success: bool,
        result: &'a Value,
        error: Option<&'a str>,
    ) -> Call<'a, CompleteOutcome> {
        Box::pin(Remote::complete(self, id, owner, success, result, error))
    }
    fn resolve_unknown<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        how: Resolution,
    ) -> Call<'a, std::result::Result<Action, Action>> {
        Box::pin(Remote::resolve_unknown(self, id, actor, how))
    }
    fn resolve_session_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        Box::pin(Remote::resolve_session_id(self, id))
    }
    fn register_session<'a>(&'a self, s: &'a NewSession) -> Call<'a, Session> {
        Box::pin(Remote::register_session(self, s))
    }
    fn save_checkpoint<'a>(
        &'a self,
        id: &'a str,
        revision: i64,
        state: &'a str,
    ) -> Call<'a, Checkpointed> {
        Box::pin(Remote::save_checkpoint(self, id, revision, state))
    }
    fn read_resume<'a>(&'a self, id: &'a str, tail: i64) -> Call<'a, Resume> {
        Box::pin(Remote::read_resume(self, id, tail))
    }
    fn get_session<'a>(&'a self, id: &'a str) -> Call<'a, Option<Session>> {
        Box::pin(Remote::get_session(self, id))
    }
    fn list_sessions<'a>(
        &'a self,
        status: Option<&'a str>,
        project: Option<&'a str>,
    ) -> Call<'a, Vec<Session>> {
        Box::pin(Remote::list_sessions(self, status, project))
    }
    fn fleet<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<FleetSession>> {
        Box::pin(Remote::fleet(self, project))
    }
    fn end_session<'a>(&'a self, id: &'a str) -> Call<'a, Ended> {
        Box::pin(Remote::end_session(self, id))
    }
    fn ledger_begin<'a>(&'a self, call: &'a NewCall<'a>) -> Call<'a, Begin> {
        Box::pin(Remote::ledger_begin(self, call))
    }
    fn ledger_complete<'a>(
        &'a self,
        session: &'a str,
        event_id: &'a str,
        ok: bool,
        result: &'a Value,
    ) -> Call<'a, Complete> {
        Box::pin(Remote::ledger_complete(self, session, event_id, ok, result))
    }
    fn ledger_list<'a>(
        &'a self,
        session: &'a str,
        last: Option<i64>,
    ) -> Call<'a, Vec<LedgerEntry>> {
        Box::pin(Remote::ledger_list(self, session, last))
    }
    fn wait_arrivals<'a>(
        &'a self,
        session: &'a str,
        by: &'a str,
        wait: Option<Duration>,
    ) -> Call<'a, Vec<Arrival>> {
        Box::pin(Remote::wait_arrivals(self, session, by, wait))
    }
    fn events_page<'a>(&'a self, after: i64, limit: i64) -> Call<'a, EventPage> {
        Box::pin(Remote::events_page(self, after, limit))
    }
    fn events_tail<'a>(&'a self, n: i64) -> Call<'a, EventPage> {
        Box::pin(Remote::events_tail(self, n))
    }
}
