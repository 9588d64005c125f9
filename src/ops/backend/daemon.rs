//! [`Backend`] through the local daemon: each primitive runs on the socket,
//! or on the file when the daemon does not answer ([`Daemon::run`]).

use std::time::Duration;

use super::*;

impl Backend for Daemon {
    fn resolve_question_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        Box::pin(self.run(
            move |daemon| daemon.resolve_question_id(id),
            move |file| file.resolve_question_id(id),
        ))
    }
    fn flag<'a>(&'a self, q: &'a NewQuestion) -> Call<'a, Flagged> {
        Box::pin(self.run(move |daemon| daemon.flag(q), move |file| file.flag(q)))
    }
    fn flag_wait<'a>(
        &'a self,
        q: &'a NewQuestion,
        by: &'a str,
        within: Duration,
    ) -> Call<'a, (Flagged, Option<Awaited>)> {
        Box::pin(self.run(
            move |daemon| daemon.flag_wait(q, by, within),
            move |file| file.flag_wait(q, by, within),
        ))
    }
    fn get_question<'a>(&'a self, id: &'a str) -> Call<'a, Option<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.get_question(id),
            move |file| file.get_question(id),
        ))
    }
    fn question_replies<'a>(&'a self, id: &'a str) -> Call<'a, Vec<ReplyRecord>> {
        Box::pin(self.run(
            move |daemon| daemon.question_replies(id),
            move |file| file.question_replies(id),
        ))
    }
    fn list_questions<'a>(&'a self, filter: &'a ListFilter) -> Call<'a, Vec<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.list_questions(filter),
            move |file| file.list_questions(filter),
        ))
    }
    fn pending_replies<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        include_seen: bool,
        by: &'a str,
    ) -> Call<'a, Vec<Delivery>> {
        Box::pin(self.run(
            move |daemon| daemon.pending_replies(project, session, include_seen, by),
            move |file| file.pending_replies(project, session, include_seen, by),
        ))
    }
    fn pick_up_reply<'a>(&'a self, q: &'a Question, by: &'a str) -> Call<'a, Option<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.pick_up_reply(q, by),
            move |file| file.pick_up_reply(q, by),
        ))
    }
    fn watch_question<'a>(&'a self, id: &'a str, within: Duration) -> Call<'a, Option<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.watch_question(id, within),
            move |file| file.watch_question(id, within),
        ))
    }
    fn reply_inbox<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.reply_inbox(id, r),
            move |file| file.reply_inbox(id, r),
        ))
    }
    fn answer_agent<'a>(&'a self, id: &'a str, r: &'a NewReply) -> Call<'a, Outcome<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.answer_agent(id, r),
            move |file| file.answer_agent(id, r),
        ))
    }
    fn resolve_question<'a>(
        &'a self,
        id: &'a str,
        outcome: &'a str,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.resolve_question(id, outcome, by),
            move |file| file.resolve_question(id, outcome, by),
        ))
    }
    fn dismiss_question<'a>(
        &'a self,
        id: &'a str,
        reason: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.dismiss_question(id, reason, by),
            move |file| file.dismiss_question(id, reason, by),
        ))
    }
    fn snooze_question<'a>(
        &'a self,
        id: &'a str,
        for_ms: i64,
        by: &'a str,
    ) -> Call<'a, Outcome<Question>> {
        Box::pin(self.run(
            move |daemon| daemon.snooze_question(id, for_ms, by),
            move |file| file.snooze_question(id, for_ms, by),
        ))
    }
    fn upsert_board<'a>(&'a self, up: &'a BoardUpsert) -> Call<'a, Decided<BoardFull>> {
        Box::pin(self.run(
            move |daemon| daemon.upsert_board(up),
            move |file| file.upsert_board(up),
        ))
    }
    fn write_row<'a>(&'a self, w: &'a RowWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(self.run(
            move |daemon| daemon.write_row(w),
            move |file| file.write_row(w),
        ))
    }
    fn advance_row<'a>(&'a self, a: &'a Advance) -> Call<'a, Decided<BoardFull>> {
        Box::pin(self.run(
            move |daemon| daemon.advance_row(a),
            move |file| file.advance_row(a),
        ))
    }
    fn store_outcome<'a>(&'a self, w: &'a OutcomeWrite) -> Call<'a, Decided<BoardFull>> {
        Box::pin(self.run(
            move |daemon| daemon.store_outcome(w),
            move |file| file.store_outcome(w),
        ))
    }
    fn read_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
    ) -> Call<'a, Decided<BoardFull>> {
        Box::pin(self.run(
            move |daemon| daemon.read_board(board, project),
            move |file| file.read_board(board, project),
        ))
    }
    fn list_boards<'a>(&'a self, project: Option<&'a str>, archived: bool) -> Call<'a, Vec<Board>> {
        Box::pin(self.run(
            move |daemon| daemon.list_boards(project, archived),
            move |file| file.list_boards(project, archived),
        ))
    }
    fn archive_board<'a>(
        &'a self,
        board: &'a str,
        project: Option<&'a str>,
        version: i64,
        by: &'a str,
    ) -> Call<'a, Decided<Board>> {
        Box::pin(self.run(
            move |daemon| daemon.archive_board(board, project, version, by),
            move |file| file.archive_board(board, project, version, by),
        ))
    }
    fn annotate_row<'a>(&'a self, a: &'a Annotate) -> Call<'a, Decided<RowChange>> {
        Box::pin(self.run(
            move |daemon| daemon.annotate_row(a),
            move |file| file.annotate_row(a),
        ))
    }
    fn mark_handled<'a>(&'a self, h: &'a Handled, clear: bool) -> Call<'a, Decided<RowChange>> {
        Box::pin(self.run(
            move |daemon| daemon.mark_handled(h, clear),
            move |file| file.mark_handled(h, clear),
        ))
    }
    fn pending_rows<'a>(
        &'a self,
        project: Option<&'a str>,
        session: Option<&'a str>,
        by: &'a str,
        peek: bool,
    ) -> Call<'a, Vec<PendingRow>> {
        Box::pin(self.run(
            move |daemon| daemon.pending_rows(project, session, by, peek),
            move |file| file.pending_rows(project, session, by, peek),
        ))
    }
    fn handoffs<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<PendingRow>> {
        Box::pin(self.run(
            move |daemon| daemon.handoffs(project),
            move |file| file.handoffs(project),
        ))
    }
    fn propose<'a>(&'a self, new: &'a NewAction) -> Call<'a, Proposal> {
        Box::pin(self.run(
            move |daemon| daemon.propose(new),
            move |file| file.propose(new),
        ))
    }
    fn approve<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        patch: Option<&'a str>,
    ) -> Call<'a, ApproveOutcome> {
        Box::pin(self.run(
            move |daemon| daemon.approve(id, actor, patch),
            move |file| file.approve(id, actor, patch),
        ))
    }
    fn reject<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        reason: &'a str,
    ) -> Call<'a, RejectOutcome> {
        Box::pin(self.run(
            move |daemon| daemon.reject(id, actor, reason),
            move |file| file.reject(id, actor, reason),
        ))
    }
    fn list_actions<'a>(&'a self, status: Option<Status>) -> Call<'a, Vec<Action>> {
        Box::pin(self.run(
            move |daemon| daemon.list_actions(status),
            move |file| file.list_actions(status),
        ))
    }
    fn get_action<'a>(&'a self, id: &'a str) -> Call<'a, Action> {
        Box::pin(self.run(
            move |daemon| daemon.get_action(id),
            move |file| file.get_action(id),
        ))
    }
    fn wait_action<'a>(&'a self, id: &'a str, wait: Duration, until: Until) -> Call<'a, Settled> {
        Box::pin(self.run(
            move |daemon| daemon.wait_action(id, wait, until),
            move |file| file.wait_action(id, wait, until),
        ))
    }
    fn action_audit<'a>(&'a self, id: &'a str) -> Call<'a, Vec<AuditEntry>> {
        Box::pin(self.run(
            move |daemon| daemon.action_audit(id),
            move |file| file.action_audit(id),
        ))
    }
    fn audit_export<'a>(
        &'a self,
        since: Option<i64>,
        project: Option<&'a str>,
        by: &'a str,
    ) -> Call<'a, crate::store::audit::Export> {
        Box::pin(self.run(
            move |daemon| daemon.audit_export(since, project, by),
            move |file| file.audit_export(since, project, by),
        ))
    }
    fn expire_due<'a>(&'a self) -> Call<'a, Vec<Action>> {
        Box::pin(self.run(
            move |daemon| daemon.expire_due(),
            move |file| file.expire_due(),
        ))
    }
    fn claim<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, ClaimOutcome> {
        Box::pin(self.run(
            move |daemon| daemon.claim(id, owner, lease_ms),
            move |file| file.claim(id, owner, lease_ms),
        ))
    }
    fn extend_lease<'a>(&'a self, id: &'a str, owner: &'a str, lease_ms: i64) -> Call<'a, bool> {
        Box::pin(self.run(
            move |daemon| daemon.extend_lease(id, owner, lease_ms),
            move |file| file.extend_lease(id, owner, lease_ms),
        ))
    }
    fn complete<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        success: bool,
        result: &'a Value,
        error: Option<&'a str>,
    ) -> Call<'a, CompleteOutcome> {
        Box::pin(self.run(
            move |daemon| daemon.complete(id, owner, success, result, error),
            move |file| file.complete(id, owner, success, result, error),
        ))
    }
    fn resolve_unknown<'a>(
        &'a self,
        id: &'a str,
        actor: Actor<'a>,
        how: Resolution,
    ) -> Call<'a, std::result::Result<Action, Action>> {
        Box::pin(self.run(
            move |daemon| daemon.resolve_unknown(id, actor, how),
            move |file| file.resolve_unknown(id, actor, how),
        ))
    }
    fn resolve_session_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        Box::pin(self.run(
            move |daemon| daemon.resolve_session_id(id),
            move |file| file.resolve_session_id(id),
        ))
    }
    fn register_session<'a>(&'a self, s: &'a NewSession) -> Call<'a, Session> {
        Box::pin(self.run(
            move |daemon| daemon.register_session(s),
            move |file| file.register_session(s),
        ))
    }
    fn save_checkpoint<'a>(
        &'a self,
        id: &'a str,
        revision: i64,
        state: &'a str,
    ) -> Call<'a, Checkpointed> {
        Box::pin(self.run(
            move |daemon| daemon.save_checkpoint(id, revision, state),
            move |file| file.save_checkpoint(id, revision, state),
        ))
    }
    fn read_resume<'a>(&'a self, id: &'a str, tail: i64) -> Call<'a, Resume> {
        Box::pin(self.run(
            move |daemon| daemon.read_resume(id, tail),
            move |file| file.read_resume(id, tail),
        ))
    }
    fn get_session<'a>(&'a self, id: &'a str) -> Call<'a, Option<Session>> {
        Box::pin(self.run(
            move |daemon| daemon.get_session(id),
            move |file| file.get_session(id),
        ))
    }
    fn list_sessions<'a>(
        &'a self,
        status: Option<&'a str>,
        project: Option<&'a str>,
    ) -> Call<'a, Vec<Session>> {
        Box::pin(self.run(
            move |daemon| daemon.list_sessions(status, project),
            move |file| file.list_sessions(status, project),
        ))
    }
    fn fleet<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<FleetSession>> {
        Box::pin(self.run(
            move |daemon| daemon.fleet(project),
            move |file| file.fleet(project),
        ))
    }
    fn end_session<'a>(&'a self, id: &'a str) -> Call<'a, Ended> {
        Box::pin(self.run(
            move |daemon| daemon.end_session(id),
            move |file| file.end_session(id),
        ))
    }
    fn ledger_begin<'a>(&'a self, call: &'a NewCall<'a>) -> Call<'a, Begin> {
        Box::pin(self.run(
            move |daemon| daemon.ledger_begin(call),
            move |file| file.ledger_begin(call),
        ))
    }
    fn ledger_complete<'a>(
        &'a self,
        session: &'a str,
        event_id: &'a str,
        ok: bool,
        result: &'a Value,
    ) -> Call<'a, Complete> {
        Box::pin(self.run(
            move |daemon| daemon.ledger_complete(session, event_id, ok, result),
            move |file| file.ledger_complete(session, event_id, ok, result),
        ))
    }
    fn ledger_list<'a>(
        &'a self,
        session: &'a str,
        last: Option<i64>,
    ) -> Call<'a, Vec<LedgerEntry>> {
        Box::pin(self.run(
            move |daemon| daemon.ledger_list(session, last),
            move |file| file.ledger_list(session, last),
        ))
    }
    fn wait_arrivals<'a>(
        &'a self,
        session: &'a str,
        by: &'a str,
        wait: Option<Duration>,
    ) -> Call<'a, Vec<Arrival>> {
        Box::pin(self.run(
            move |daemon| daemon.wait_arrivals(session, by, wait),
            move |file| file.wait_arrivals(session, by, wait),
        ))
    }
    fn events_page<'a>(&'a self, after: i64, limit: i64) -> Call<'a, EventPage> {
        Box::pin(self.run(
            move |daemon| daemon.events_page(after, limit),
            move |file| file.events_page(after, limit),
        ))
    }
    fn events_tail<'a>(&'a self, n: i64) -> Call<'a, EventPage> {
        Box::pin(self.run(
            move |daemon| daemon.events_tail(n),
            move |file| file.events_tail(n),
        ))
    }
}
