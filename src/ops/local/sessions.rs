//! The session, ledger, arrival and event primitives on the store: one store call each,
//! plus the polling wait for a session's arrivals that needs no daemon.

use std::sync::atomic::{AtomicI64, Ordering};

use super::{Local, POLL};
use crate::ops::Result;
use crate::ops::backend::{Run, sessions as call};
use crate::ops::wait::Deadline;
use crate::store::events::EventPage;
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, Ended, FleetSession, LedgerEntry, NewSession, Resume,
    Session,
};

impl Run<call::ResolveSessionId<'_>> for Local {
    async fn run(
        &self,
        call::ResolveSessionId(id): call::ResolveSessionId<'_>,
    ) -> Result<Option<String>> {
        Ok(self.store.resolve_session_id(id, self.scope()).await?)
    }
}

impl Run<call::RegisterSession<'_>> for Local {
    async fn run(&self, call::RegisterSession(s): call::RegisterSession<'_>) -> Result<Session> {
        Ok(self
            .store
            .register_session_on(s, &crate::ops::this_host())
            .await?)
    }
}

impl Run<call::SaveCheckpoint<'_>> for Local {
    async fn run(
        &self,
        call::SaveCheckpoint(id, revision, state): call::SaveCheckpoint<'_>,
    ) -> Result<Checkpointed> {
        Ok(self.store.checkpoint(id, revision, state).await?)
    }
}

impl Run<call::ReadResume<'_>> for Local {
    async fn run(&self, call::ReadResume(id, tail): call::ReadResume<'_>) -> Result<Resume> {
        Ok(self.store.resume(id, tail).await?)
    }
}

impl Run<call::GetSession<'_>> for Local {
    async fn run(&self, call::GetSession(id): call::GetSession<'_>) -> Result<Option<Session>> {
        Ok(self.store.get_session(id).await?)
    }
}

impl Run<call::ListSessions<'_>> for Local {
    async fn run(
        &self,
        call::ListSessions(status, project): call::ListSessions<'_>,
    ) -> Result<Vec<Session>> {
        Ok(self
            .store
            .list_sessions(status, self.scope().or(project))
            .await?)
    }
}

impl Run<call::Fleet<'_>> for Local {
    async fn run(&self, call::Fleet(project): call::Fleet<'_>) -> Result<Vec<FleetSession>> {
        Ok(self.store.fleet(self.scope().or(project)).await?)
    }
}

impl Run<call::EndSession<'_>> for Local {
    async fn run(&self, call::EndSession(id): call::EndSession<'_>) -> Result<Ended> {
        Ok(self.store.end_session(id).await?)
    }
}

impl Run<call::LedgerBegin<'_>> for Local {
    async fn run(&self, call::LedgerBegin(call): call::LedgerBegin<'_>) -> Result<Begin> {
        Ok(self.store.ledger_begin(call).await?)
    }
}

impl Run<call::LedgerComplete<'_>> for Local {
    async fn run(
        &self,
        call::LedgerComplete(session, event_id, ok, result): call::LedgerComplete<'_>,
    ) -> Result<Complete> {
        Ok(self
            .store
            .ledger_complete(session, event_id, ok, result)
            .await?)
    }
}

impl Run<call::LedgerList<'_>> for Local {
    async fn run(
        &self,
        call::LedgerList(session, last): call::LedgerList<'_>,
    ) -> Result<Vec<LedgerEntry>> {
        Ok(self.store.ledger_list(session, last).await?)
    }
}

// Poll the store until something arrives for `session`, re-claiming
// only when the newest event about it moved (one indexed `MAX(seq)`
// read per tick). Needs no daemon.
impl Run<call::WaitArrivals<'_>> for Local {
    async fn run(
        &self,
        call::WaitArrivals(session, by, wait): call::WaitArrivals<'_>,
    ) -> Result<Vec<Arrival>> {
        self.known_session(session).await?;
        let deadline = Deadline::after(wait);
        let seen = AtomicI64::new(i64::MIN);
        loop {
            let arrivals = self.arrivals_since(session, by, &seen).await?;
            if !arrivals.is_empty() {
                return Ok(arrivals);
            }
            if deadline.passed() {
                return Ok(Vec::new());
            }
            self.pause(deadline.left(POLL)).await;
        }
    }
}

impl Local {
    /// Refuse a session nothing ever happened under (not found, saying how
    /// to check the id or register it).
    pub async fn known_session(&self, session: &str) -> Result<()> {
        if !self.store.session_known(session).await? {
            return Err(crate::ops::Error::not_found(unknown_session(session)));
        }
        Ok(())
    }

    /// One step of a wait for what arrived for `session`: claim it for
    /// `by` when the newest event about the session moved past `seen`
    /// (`i64::MIN`: nothing seen yet), else nothing. The mark is read *before*
    /// claiming, so an event committed during the claim moves it again
    /// and the next step claims that too; one indexed `MAX(seq)` read per
    /// step when nothing moved.
    pub async fn arrivals_since(
        &self,
        session: &str,
        by: &str,
        seen: &AtomicI64,
    ) -> Result<Vec<Arrival>> {
        let mark = self.store.session_event_mark(session).await?;
        if seen.swap(mark, Ordering::Relaxed) == mark {
            return Ok(Vec::new());
        }
        Ok(self.store.claim_arrivals(session, by).await?)
    }

    /// Record an inbound wake of `session` from `source`, once per
    /// `delivery_id` (a repeat is answered with the first record).
    pub async fn record_wake(
        &self,
        session: &str,
        source: &str,
        delivery_id: &str,
        payload: serde_json::Value,
    ) -> Result<crate::store::sessions::WakeRecorded> {
        Ok(self
            .store
            .record_wake(session, source, delivery_id, payload)
            .await?)
    }

    /// The items' counts by kind and status, of the scope's project (every
    /// project's without one): what `/metrics` shows.
    pub async fn counts(&self) -> Result<crate::store::counts::Counts> {
        Ok(self.store.counts(self.scope()).await?)
    }

    /// The newest event's seq in the log.
    pub async fn last_event_seq(&self) -> Result<i64> {
        Ok(self.store.last_event_seq().await?)
    }

    /// Register (or refresh) a session as registered from `host`.
    pub async fn register_session_on(&self, s: &NewSession, host: &str) -> Result<Session> {
        Ok(self.store.register_session_on(s, host).await?)
    }

    /// The sessions (at most `limit`, of the scope's project) whose ledger
    /// began `event_id`.
    pub async fn ledger_sessions(&self, event_id: &str, limit: i64) -> Result<Vec<String>> {
        Ok(self
            .store
            .ledger_sessions(event_id, self.scope(), limit)
            .await?)
    }
}

impl Run<call::EventsPage> for Local {
    async fn run(&self, call::EventsPage(after, limit): call::EventsPage) -> Result<EventPage> {
        Ok(self.store.events_page(after, limit).await?)
    }
}

impl Run<call::EventsTail> for Local {
    async fn run(&self, call::EventsTail(n): call::EventsTail) -> Result<EventPage> {
        Ok(self.store.events_tail(n).await?)
    }
}

/// Why `wait` refuses a session nothing ever happened under.
fn unknown_session(id: &str) -> String {
    format!(
        "no session `{id}`: nothing was ever registered, asked or woken under that id; \
         check it (`handoff session list`) or register it first (`handoff session register --session {id}`)"
    )
}
