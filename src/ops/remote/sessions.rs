//! Session, ledger, wait and event primitives over `/v1/sessions`,
//! `/v1/ledger` and `/v1/events`. Outcomes the API reports as 404/409 with
//! the store's outcome in `detail` (stale or ended checkpoints, ledger
//! conflicts, a call never begun) come back as those outcomes.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Answer, MAX_POLL, Remote, host_only, query};
use crate::ops::Result;
use crate::ops::backend::{Run, sessions as call};
use crate::ops::wait::Deadline;
use crate::store::events::EventPage;
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, Ended, FleetSession, LedgerEntry, Resume, Session,
    WakeTarget,
};

/// The answer, or the outcome the API put in the failure's `detail`.
fn or_detail<T: DeserializeOwned>(a: Answer<T>) -> Result<T> {
    match a {
        Ok(v) => Ok(v),
        Err(f) => match f.detail_as::<T>() {
            Some(v) => Ok(v),
            None => Err(f.into()),
        },
    }
}

#[derive(Deserialize)]
struct Waited {
    arrivals: Vec<Arrival>,
}

impl Run<call::ResolveSessionId<'_>> for Remote {
    async fn run(
        &self,
        call::ResolveSessionId(id): call::ResolveSessionId<'_>,
    ) -> Result<Option<String>> {
        Ok(self.run(call::GetSession(id)).await?.map(|s| s.session_id))
    }
}

impl Run<call::RegisterSession<'_>> for Remote {
    async fn run(&self, call::RegisterSession(s): call::RegisterSession<'_>) -> Result<Session> {
        if matches!(
            s.wake_target,
            Some(WakeTarget::Exec { .. } | WakeTarget::Tmux { .. })
        ) {
            return Err(host_only(
                "registering an exec or tmux wake target (it runs on the daemon's machine; use --wake-webhook remotely)",
            ));
        }
        let body = json!({
            "session_id": s.session_id,
            "agent": s.agent,
            "project": s.project,
            "cwd": s.cwd,
            "wake_target": s.wake_target,
            "host": crate::ops::this_host(),
        });
        Ok(self.post(&["sessions"], body).await?)
    }
}

impl Run<call::SaveCheckpoint<'_>> for Remote {
    async fn run(
        &self,
        call::SaveCheckpoint(id, revision, state): call::SaveCheckpoint<'_>,
    ) -> Result<Checkpointed> {
        let body = json!({"revision": revision, "state": state});
        match self.post(&["sessions", id, "checkpoint"], body).await {
            // Not registered (or not this token's): the store's NotFound.
            Err(f) if f.status == 404 && f.detail.is_none() => Ok(Checkpointed::NotFound),
            a => or_detail(a),
        }
    }
}

impl Run<call::ReadResume<'_>> for Remote {
    async fn run(&self, call::ReadResume(id, tail): call::ReadResume<'_>) -> Result<Resume> {
        let q = [("tail", tail.to_string())];
        Ok(self.get(&["sessions", id, "resume"], &q).await?)
    }
}

impl Run<call::GetSession<'_>> for Remote {
    async fn run(&self, call::GetSession(id): call::GetSession<'_>) -> Result<Option<Session>> {
        match self.get(&["sessions", id.trim()], &[]).await {
            Ok(s) => Ok(Some(s)),
            Err(f) if f.status == 404 => Ok(None),
            Err(f) => Err(f.into()),
        }
    }
}

impl Run<call::ListSessions<'_>> for Remote {
    async fn run(
        &self,
        call::ListSessions(status, project): call::ListSessions<'_>,
    ) -> Result<Vec<Session>> {
        let q = query(&[
            ("status", status.map(str::to_string)),
            ("project", project.map(str::to_string)),
        ]);
        Ok(self.get_all(&["sessions"], &q).await?)
    }
}

impl Run<call::Fleet<'_>> for Remote {
    async fn run(&self, call::Fleet(project): call::Fleet<'_>) -> Result<Vec<FleetSession>> {
        #[derive(Deserialize)]
        struct Fleet {
            sessions: Vec<crate::store::sessions::FleetSession>,
        }
        let q = query(&[("project", project.map(str::to_string))]);
        let f: Fleet = self.get(&["fleet"], &q).await?;
        Ok(f.sessions)
    }
}

impl Run<call::EndSession<'_>> for Remote {
    async fn run(&self, call::EndSession(id): call::EndSession<'_>) -> Result<Ended> {
        match self.post(&["sessions", id, "end"], json!({})).await {
            Ok(e) => Ok(e),
            Err(f) if f.status == 404 => Ok(Ended::NotFound),
            Err(f) => Err(f.into()),
        }
    }
}

impl Run<call::LedgerBegin<'_>> for Remote {
    async fn run(&self, call::LedgerBegin(call): call::LedgerBegin<'_>) -> Result<Begin> {
        let body = json!({
            "event_id": call.event_id,
            "tool": call.tool,
            "payload": call.payload,
            "replay_safe": call.replay_safe,
        });
        or_detail(
            self.post(&["sessions", call.session_id, "ledger"], body)
                .await,
        )
    }
}

impl Run<call::LedgerComplete<'_>> for Remote {
    async fn run(
        &self,
        call::LedgerComplete(session, event_id, ok, result): call::LedgerComplete<'_>,
    ) -> Result<Complete> {
        let body = json!({"ok": ok, "result": result, "session": session});
        or_detail(self.post(&["ledger", event_id, "complete"], body).await)
    }
}

impl Run<call::LedgerList<'_>> for Remote {
    async fn run(
        &self,
        call::LedgerList(session, last): call::LedgerList<'_>,
    ) -> Result<Vec<LedgerEntry>> {
        let q = query(&[("last", last.map(|l| l.to_string()))]);
        Ok(self.get_all(&["sessions", session, "ledger"], &q).await?)
    }
}

// Long polls (the daemon's `session:<id>` waiter wakes them; no
// polling here) until something arrives or `wait` passes.
impl Run<call::WaitArrivals<'_>> for Remote {
    async fn run(
        &self,
        call::WaitArrivals(session, by, wait): call::WaitArrivals<'_>,
    ) -> Result<Vec<Arrival>> {
        let deadline = Deadline::after(wait);
        loop {
            let poll = deadline.left(MAX_POLL);
            let q = query(&[
                ("timeout", Some(format!("{}ms", poll.as_millis()))),
                ("by", super::named(by)),
            ]);
            let w: Waited = self
                .call(
                    reqwest::Method::GET,
                    &["sessions", session, "wait"],
                    &q,
                    None,
                    Some(poll),
                )
                .await?;
            if !w.arrivals.is_empty() {
                return Ok(w.arrivals);
            }
            if deadline.passed() {
                return Ok(Vec::new());
            }
        }
    }
}

impl Run<call::EventsPage> for Remote {
    async fn run(&self, call::EventsPage(after, limit): call::EventsPage) -> Result<EventPage> {
        let q = [("after", after.to_string()), ("limit", limit.to_string())];
        Ok(self.get(&["events"], &q).await?)
    }
}

impl Run<call::EventsTail> for Remote {
    async fn run(&self, call::EventsTail(n): call::EventsTail) -> Result<EventPage> {
        Ok(self.get(&["events"], &[("tail", n.to_string())]).await?)
    }
}
