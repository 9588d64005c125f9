//! [`SessionOps`] and [`EventOps`] on the store: one store call each,
//! plus the polling wait for a session's arrivals that needs no daemon.

use std::time::Duration;

use serde_json::Value;

use super::{Local, POLL};
use crate::ops::backend::{Call, EventOps, SessionOps};
use crate::ops::wait::Deadline;
use crate::store::events::EventPage;
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, Ended, FleetSession, LedgerEntry, NewCall, NewSession,
    Resume, Session,
};

impl SessionOps for Local {
    fn resolve_session_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        Box::pin(async move { Ok(self.store.resolve_session_id(id, None).await?) })
    }

    fn register_session<'a>(&'a self, s: &'a NewSession) -> Call<'a, Session> {
        Box::pin(async move {
            Ok(self
                .store
                .register_session_on(s, &crate::ops::this_host())
                .await?)
        })
    }

    fn save_checkpoint<'a>(
        &'a self,
        id: &'a str,
        revision: i64,
        state: &'a str,
    ) -> Call<'a, Checkpointed> {
        Box::pin(async move { Ok(self.store.checkpoint(id, revision, state).await?) })
    }

    fn read_resume<'a>(&'a self, id: &'a str, tail: i64) -> Call<'a, Resume> {
        Box::pin(async move { Ok(self.store.resume(id, tail).await?) })
    }

    fn get_session<'a>(&'a self, id: &'a str) -> Call<'a, Option<Session>> {
        Box::pin(async move { Ok(self.store.get_session(id).await?) })
    }

    fn list_sessions<'a>(
        &'a self,
        status: Option<&'a str>,
        project: Option<&'a str>,
    ) -> Call<'a, Vec<Session>> {
        Box::pin(async move { Ok(self.store.list_sessions(status, project).await?) })
    }

    fn fleet<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<FleetSession>> {
        Box::pin(async move { Ok(self.store.fleet(project).await?) })
    }

    fn end_session<'a>(&'a self, id: &'a str) -> Call<'a, Ended> {
        Box::pin(async move { Ok(self.store.end_session(id).await?) })
    }

    fn ledger_begin<'a>(&'a self, call: &'a NewCall<'a>) -> Call<'a, Begin> {
        Box::pin(async move { Ok(self.store.ledger_begin(call).await?) })
    }

    fn ledger_complete<'a>(
        &'a self,
        session: &'a str,
        event_id: &'a str,
        ok: bool,
        result: &'a Value,
    ) -> Call<'a, Complete> {
        Box::pin(async move {
            Ok(self
                .store
                .ledger_complete(session, event_id, ok, result)
                .await?)
        })
    }

    fn ledger_list<'a>(
        &'a self,
        session: &'a str,
        last: Option<i64>,
    ) -> Call<'a, Vec<LedgerEntry>> {
        Box::pin(async move { Ok(self.store.ledger_list(session, last).await?) })
    }

    // Poll the store until something arrives for `session`, re-claiming
    // only when the newest event about it moved (one indexed `MAX(seq)`
    // read per tick). Needs no daemon.
    fn wait_arrivals<'a>(
        &'a self,
        session: &'a str,
        by: &'a str,
        wait: Option<Duration>,
    ) -> Call<'a, Vec<Arrival>> {
        Box::pin(async move {
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
        })
    }
}

impl EventOps for Local {
    fn events_page<'a>(&'a self, after: i64, limit: i64) -> Call<'a, EventPage> {
        Box::pin(async move { Ok(self.store.events_page(after, limit).await?) })
    }

    fn events_tail<'a>(&'a self, n: i64) -> Call<'a, EventPage> {
        Box::pin(async move { Ok(self.store.events_tail(n).await?) })
    }
}

/// Why `wait` refuses a session nothing ever happened under.
pub(crate) fn unknown_session(id: &str) -> String {
    format!(
        "no session `{id}`: nothing was ever registered, asked or woken under that id; \
         check it (`handoff session list`) or register it first (`handoff session register --session {id}`)"
    )
}
