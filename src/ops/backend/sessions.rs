//! The session, ledger, arrival and event-log primitives: their argument
//! types and [`Ops`]'s methods.

use std::time::Duration;

use serde_json::Value;

use super::Call;
use crate::ops::Ops;
use crate::store::events::EventPage;
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, Ended, FleetSession, LedgerEntry, NewCall, NewSession,
    Resume, Session,
};

primitives! {
    resolve_session_id: ResolveSessionId<'a>(&'a str) -> Option<String>;
    register_session: RegisterSession<'a>(&'a NewSession) -> Session;
    save_checkpoint: SaveCheckpoint<'a>(&'a str, i64, &'a str) -> Checkpointed;
    read_resume: ReadResume<'a>(&'a str, i64) -> Resume;
    get_session: GetSession<'a>(&'a str) -> Option<Session>;
    list_sessions: ListSessions<'a>(Option<&'a str>, Option<&'a str>) -> Vec<Session>;
    fleet: Fleet<'a>(Option<&'a str>) -> Vec<FleetSession>;
    end_session: EndSession<'a>(&'a str) -> Ended;
    ledger_begin: LedgerBegin<'a>(&'a NewCall<'a>) -> Begin;
    ledger_complete: LedgerComplete<'a>(&'a str, &'a str, bool, &'a Value) -> Complete;
    ledger_list: LedgerList<'a>(&'a str, Option<i64>) -> Vec<LedgerEntry>;
    wait_arrivals: WaitArrivals<'a>(&'a str, &'a str, Option<Duration>) -> Vec<Arrival>;
    events_page: EventsPage(i64, i64) -> EventPage;
    events_tail: EventsTail(i64) -> EventPage;
}

impl Ops {
    /// The full id of a registered session (full id or unique suffix).
    pub fn resolve_session_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        self.run(ResolveSessionId(id))
    }

    /// Register (or refresh) a session.
    pub fn register_session<'a>(&'a self, s: &'a NewSession) -> Call<'a, Session> {
        self.run(RegisterSession(s))
    }

    /// Store a checkpoint (CAS on the revision).
    pub fn save_checkpoint<'a>(
        &'a self,
        id: &'a str,
        revision: i64,
        state: &'a str,
    ) -> Call<'a, Checkpointed> {
        self.run(SaveCheckpoint(id, revision, state))
    }

    /// Everything a woken session needs; marks nothing.
    pub fn read_resume<'a>(&'a self, id: &'a str, tail: i64) -> Call<'a, Resume> {
        self.run(ReadResume(id, tail))
    }

    /// One registered session.
    pub fn get_session<'a>(&'a self, id: &'a str) -> Call<'a, Option<Session>> {
        self.run(GetSession(id))
    }

    /// Sessions, most recently changed first.
    pub fn list_sessions<'a>(
        &'a self,
        status: Option<&'a str>,
        project: Option<&'a str>,
    ) -> Call<'a, Vec<Session>> {
        self.run(ListSessions(status, project))
    }

    /// Every session (of `project`) and what it is doing now, by project.
    pub fn fleet<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<FleetSession>> {
        self.run(Fleet(project))
    }

    /// Mark a session ended.
    pub fn end_session<'a>(&'a self, id: &'a str) -> Call<'a, Ended> {
        self.run(EndSession(id))
    }

    /// Record that a call is about to run.
    pub fn ledger_begin<'a>(&'a self, call: &'a NewCall<'a>) -> Call<'a, Begin> {
        self.run(LedgerBegin(call))
    }

    /// Record a begun call's outcome.
    pub fn ledger_complete<'a>(
        &'a self,
        session: &'a str,
        event_id: &'a str,
        ok: bool,
        result: &'a Value,
    ) -> Call<'a, Complete> {
        self.run(LedgerComplete(session, event_id, ok, result))
    }

    /// A session's ledger, oldest first (the newest `last` rows).
    pub fn ledger_list<'a>(
        &'a self,
        session: &'a str,
        last: Option<i64>,
    ) -> Call<'a, Vec<LedgerEntry>> {
        self.run(LedgerList(session, last))
    }

    /// Block until something arrives for the session (or `wait` passes:
    /// empty), claim and return it. `None` waits forever.
    pub fn wait_arrivals<'a>(
        &'a self,
        session: &'a str,
        by: &'a str,
        wait: Option<Duration>,
    ) -> Call<'a, Vec<Arrival>> {
        self.run(WaitArrivals(session, by, wait))
    }

    /// Events after `after`, oldest first, at most `limit`, and where to continue.
    pub fn events_page(&self, after: i64, limit: i64) -> Call<'_, EventPage> {
        self.run(EventsPage(after, limit))
    }

    /// The newest `n` events, oldest first, and where to follow the log from.
    pub fn events_tail(&self, n: i64) -> Call<'_, EventPage> {
        self.run(EventsTail(n))
    }
}
