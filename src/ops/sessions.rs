//! Durable sessions for the agent: checkpoint (CAS on the revision; the
//! first checkpoint of an unregistered session registers it), the
//! execution ledger, and resume.

use serde_json::{Value, json};

use super::local::{detail, required};
use super::requests::{
    CheckpointRequest, LedgerRecordRequest, MAX_SESSION_WAIT_SECONDS, ResumeRequest, WaitRequest,
};
use super::results::Ledgered;
use super::{Error, Ops, Result};
use crate::store::sessions::{
    Begin, Checkpointed, Complete, DEFAULT_LEDGER_TAIL, NewCall, NewSession, Resume, Session,
};

/// The session id a request names, or a clear error.
fn session_of(s: Option<String>) -> Result<String> {
    match s.map(|s| s.trim().to_string()) {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(Error::invalid(
            "no session: pass `session`, or start the server with HANDOFF_SESSION set",
        )),
    }
}

impl Ops {
    pub async fn checkpoint(&self, r: CheckpointRequest) -> Result<Session> {
        let id = session_of(r.session)?;
        let state = r.state.to_string();
        // `0` says "my first checkpoint": a session a hook registered stands
        // at its registration revision with no state yet, and that is the
        // revision the CAS expects. Once a state exists, 0 is stale.
        let mut expected = r.revision;
        if expected == 0
            && let Some(s) = self.get_session(&id).await?
            && s.state_blob.is_none()
        {
            expected = s.revision;
        }
        let mut out = self.save_checkpoint(&id, expected, &state).await?;
        if out == Checkpointed::NotFound {
            // A session the agent never registered: register it (an upsert
            // that keeps any wake target set meanwhile), then let the
            // revision CAS decide as usual.
            let new = NewSession {
                session_id: id.clone(),
                agent: r.agent.unwrap_or_default(),
                project: r.project.unwrap_or_default(),
                cwd: String::new(),
                wake_target: None,
            };
            self.register_session(&new).await?;
            // A fresh session stands at revision 1; `0` is how a caller that
            // never saw the session (resume gave no revision) says "new".
            let expected = if r.revision == 0 { 1 } else { r.revision };
            out = self.save_checkpoint(&id, expected, &state).await?;
        }
        match out {
            Checkpointed::Saved { session } => Ok(session),
            Checkpointed::Stale { expected, current } => Err(Error::refused(
                "stale",
                format!(
                    "the session is at revision {current}, not {expected}: someone checkpointed in between; call resume, merge, and checkpoint with revision {current}"
                ),
                json!({"expected": expected, "current": current}),
            )),
            Checkpointed::Ended { session } => Err(Error::refused(
                "ended",
                format!(
                    "session {} was ended; nothing was saved",
                    session.session_id
                ),
                detail(&session),
            )),
            Checkpointed::NotFound => Err(Error::not_found(format!("no session `{id}`"))),
        }
    }

    pub async fn ledger_record(&self, r: LedgerRecordRequest) -> Result<Ledgered> {
        let session = session_of(r.session)?;
        required("event_id", &r.event_id)?;
        match r.phase.as_str() {
            "started" => {
                let tool = r.tool.unwrap_or_default();
                required("tool", &tool)?;
                let payload = r.payload.unwrap_or_else(|| json!({}));
                let call = NewCall {
                    event_id: &r.event_id,
                    session_id: &session,
                    tool: &tool,
                    payload: &payload,
                    replay_safe: r.replay_safe,
                };
                match self.ledger_begin(&call).await? {
                    b @ Begin::Conflict { .. } => Err(Error::refused(
                        "conflict",
                        format!(
                            "event_id `{}` was already recorded for another call (see detail.differs); use a new event_id for a new call",
                            r.event_id
                        ),
                        detail(&b),
                    )),
                    b => Ok(Ledgered::Begin(b)),
                }
            }
            "completed" | "failed" => {
                let ok = r.phase == "completed";
                let result = r.result.unwrap_or(Value::Null);
                match self
                    .ledger_complete(&session, &r.event_id, ok, &result)
                    .await?
                {
                    c @ Complete::Conflict { .. } => Err(Error::refused(
                        "conflict",
                        format!(
                            "another outcome or result was already recorded for event_id `{}`",
                            r.event_id
                        ),
                        detail(&c),
                    )),
                    Complete::NotStarted => Err(Error::refused(
                        "not_started",
                        format!(
                            "no call was started under event_id `{}`: record phase `started` first",
                            r.event_id
                        ),
                        Value::Null,
                    )),
                    c => Ok(Ledgered::Complete(c)),
                }
            }
            other => Err(Error::invalid(format!(
                "phase `{other}` is not `started`, `completed` or `failed`"
            ))),
        }
    }

    pub async fn resume(&self, r: ResumeRequest) -> Result<Resume> {
        let id = session_of(r.session)?;
        let tail = r.ledger_tail.unwrap_or(DEFAULT_LEDGER_TAIL);
        if !(0..=1000).contains(&tail) {
            return Err(Error::invalid("ledger_tail is 0 to 1000"));
        }
        self.read_resume(&id, tail).await
    }

    /// Block up to `wait_seconds` (at most 50) for the next answer,
    /// decision or wake for the session, claim and return it: what
    /// `handoff wait --session` does, bounded so an MCP client's own
    /// timeout never trips. `waiting: true` when nothing came in time.
    pub async fn wait(&self, r: WaitRequest) -> Result<Value> {
        let id = session_of(r.session)?;
        crate::store::sessions::check_id(&id).map_err(|e| Error::invalid(e.to_string()))?;
        let secs = r.wait_seconds.unwrap_or(MAX_SESSION_WAIT_SECONDS);
        if !(1..=MAX_SESSION_WAIT_SECONDS).contains(&secs) {
            return Err(Error::invalid(format!(
                "wait_seconds is 1 to {MAX_SESSION_WAIT_SECONDS}: call `wait` again to keep waiting"
            )));
        }
        let by =
            r.by.filter(|b| !b.trim().is_empty())
                .unwrap_or_else(|| "handoff wait".into());
        let arrivals = self
            .wait_arrivals(&id, &by, Some(std::time::Duration::from_secs(secs)))
            .await?;
        Ok(if arrivals.is_empty() {
            json!({"waiting": true, "session_id": id})
        } else {
            json!({"waiting": false, "session_id": id, "arrivals": arrivals})
        })
    }
}
