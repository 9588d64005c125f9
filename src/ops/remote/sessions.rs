//! Session, ledger, wait and event primitives over `/v1/sessions`,
//! `/v1/ledger` and `/v1/events`. Outcomes the API reports as 404/409 with
//! the store's outcome in `detail` (stale or ended checkpoints, ledger
//! conflicts, a call never begun) come back as those outcomes.

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Answer, MAX_POLL, Remote, host_only, query};
use crate::ops::Result;
use crate::ops::backend::{Call, EventOps, SessionOps};
use crate::ops::wait::Deadline;
use crate::store::events::EventPage;
use crate::store::sessions::{
    Arrival, Begin, Checkpointed, Complete, Ended, FleetSession, LedgerEntry, NewCall, NewSession,
    Resume, Session, WakeTarget,
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

impl SessionOps for Remote {
    fn resolve_session_id<'a>(&'a self, id: &'a str) -> Call<'a, Option<String>> {
        Box::pin(async move { Ok(self.get_session(id).await?.map(|s| s.session_id)) })
    }

    fn register_session<'a>(&'a self, s: &'a NewSession) -> Call<'a, Session> {
        Box::pin(async move {
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
        })
    }

    fn save_checkpoint<'a>(
        &'a self,
        id: &'a str,
        revision: i64,
        state: &'a str,
    ) -> Call<'a, Checkpointed> {
        Box::pin(async move {
            let body = json!({"revision": revision, "state": state});
            match self.post(&["sessions", id, "checkpoint"], body).await {
                // Not registered (or not this token's): the store's NotFound.
                Err(f) if f.status == 404 && f.detail.is_none() => Ok(Checkpointed::NotFound),
                a => or_detail(a),
            }
        })
    }

    fn read_resume<'a>(&'a self, id: &'a str, tail: i64) -> Call<'a, Resume> {
        Box::pin(async move {
            let q = [("tail", tail.to_string())];
            Ok(self.get(&["sessions", id, "resume"], &q).await?)
        })
    }

    fn get_session<'a>(&'a self, id: &'a str) -> Call<'a, Option<Session>> {
        Box::pin(async move {
            match self.get(&["sessions", id.trim()], &[]).await {
                Ok(s) => Ok(Some(s)),
                Err(f) if f.status == 404 => Ok(None),
                Err(f) => Err(f.into()),
            }
        })
    }

    fn list_sessions<'a>(
        &'a self,
        status: Option<&'a str>,
        project: Option<&'a str>,
    ) -> Call<'a, Vec<Session>> {
        Box::pin(async move {
            let q = query(&[
                ("status", status.map(str::to_string)),
                ("project", project.map(str::to_string)),
            ]);
            Ok(self.get_all(&["sessions"], &q).await?)
        })
    }

    fn fleet<'a>(&'a self, project: Option<&'a str>) -> Call<'a, Vec<FleetSession>> {
        Box::pin(async move {
            #[derive(Deserialize)]
            struct Fleet {
                sessions: Vec<crate::store::sessions::FleetSession>,
            }
            let q = query(&[("project", project.map(str::to_string))]);
            let f: Fleet = self.get(&["fleet"], &q).await?;
            Ok(f.sessions)
        })
    }

    fn end_session<'a>(&'a self, id: &'a str) -> Call<'a, Ended> {
        Box::pin(async move {
            match self.post(&["sessions", id, "end"], json!({})).await {
                Ok(e) => Ok(e),
                Err(f) if f.status == 404 => Ok(Ended::NotFound),
                Err(f) => Err(f.into()),
            }
        })
    }

    fn ledger_begin<'a>(&'a self, call: &'a NewCall<'a>) -> Call<'a, Begin> {
        Box::pin(async move {
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
        })
    }

    fn ledger_complete<'a>(
        &'a self,
        session: &'a str,
        event_id: &'a str,
        ok: bool,
        result: &'a Value,
    ) -> Call<'a, Complete> {
        Box::pin(async move {
            let body = json!({"ok": ok, "result": result, "session": session});
            or_detail(self.post(&["ledger", event_id, "complete"], body).await)
        })
    }

    fn ledger_list<'a>(
        &'a self,
        session: &'a str,
        last: Option<i64>,
    ) -> Call<'a, Vec<LedgerEntry>> {
        Box::pin(async move {
            let q = query(&[("last", last.map(|l| l.to_string()))]);
            Ok(self.get_all(&["sessions", session, "ledger"], &q).await?)
        })
    }

    // Long polls (the daemon's `session:<id>` waiter wakes them; no
    // polling here) until something arrives or `wait` passes.
    fn wait_arrivals<'a>(
        &'a self,
        session: &'a str,
        by: &'a str,
        wait: Option<Duration>,
    ) -> Call<'a, Vec<Arrival>> {
        Box::pin(async move {
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
        })
    }
}

impl EventOps for Remote {
    fn events_page<'a>(&'a self, after: i64, limit: i64) -> Call<'a, EventPage> {
        Box::pin(async move {
            let q = [("after", after.to_string()), ("limit", limit.to_string())];
            Ok(self.get(&["events"], &q).await?)
        })
    }

    fn events_tail<'a>(&'a self, n: i64) -> Call<'a, EventPage> {
        Box::pin(async move { Ok(self.get(&["events"], &[("tail", n.to_string())]).await?) })
    }
}
