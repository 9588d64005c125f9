//! The event log over HTTP: a JSON page (`GET /v1/events?after=SEQ`, or
//! `?tail=N` for the newest), a server-sent-events stream
//! (`GET /v1/events/stream`, `id:` = seq, resumes from `Last-Event-ID`), and
//! the long-poll helper the item routes use.
//!
//! Both the stream and long polls are driven by the daemon's in-process
//! waiters (woken when the waiter follower applies an event) and always
//! re-read the store: a wake is a hint, the store is the truth. They end at
//! shutdown. Project-scoped tokens see only their project's events.

use axum::Extension;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::json;
use std::collections::VecDeque;
use std::convert::Infallible;

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::input::Params;
use super::long_poll::RECHECK;
use crate::shared::Shared;
use crate::store::Event;

/// Most events one page returns.
const MAX_PAGE: i64 = 1000;

/// Events read per store query by the stream.
const STREAM_BATCH: i64 = 256;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    after: Option<i64>,
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<i64>,
    /// The newest N events instead of a page after a seq.
    #[schemars(range(min = 0, max = 1000))]
    tail: Option<i64>,
}

/// `GET /v1/events?after=SEQ&limit=N`: events after `SEQ`, oldest first;
/// or `?tail=N`: the newest N. `next_after` is where to continue (it moves
/// past events a scoped token may not see, so paging never stalls; after a
/// tail it is the newest seq, where following the log starts).
pub(crate) async fn page(
    State(s): State<Shared>,
    Extension(c): Extension<Caller>,
    Params(q): Params<PageQuery>,
) -> ApiResult<axum::Json<EventPage>> {
    let page = match (q.tail, q.after, q.limit) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ApiError::invalid(
                "tail cannot be combined with after or limit: ask for one or the other",
            ));
        }
        (Some(n), None, None) => {
            if !(0..=MAX_PAGE).contains(&n) {
                return Err(ApiError::invalid(format!("tail must be 0 to {MAX_PAGE}")));
            }
            s.store.events_tail(n).await?
        }
        (None, after, limit) => {
            let limit = limit.unwrap_or(100);
            if !(1..=MAX_PAGE).contains(&limit) {
                return Err(ApiError::invalid(format!("limit must be 1 to {MAX_PAGE}")));
            }
            s.store.events_page(after.unwrap_or(0), limit).await?
        }
    };
    let events: Vec<Event> = page
        .events
        .into_iter()
        .filter(|e| c.sees(&e.project))
        .collect();
    Ok(axum::Json(EventPage {
        events,
        next_after: page.next_after,
    }))
}

/// `GET /v1/events`'s answer.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct EventPage {
    /// The events the caller may see, oldest first.
    events: Vec<Event>,
    /// Where the next page starts (`after=`).
    next_after: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamQuery {
    after: Option<i64>,
}

struct Cursor {
    s: Shared,
    caller: Caller,
    after: i64,
    buf: VecDeque<Event>,
    /// The closing `end` event went out: the stream is over.
    ended: bool,
}

/// The last event of a stream whose credential no longer holds.
fn end_event(why: &str) -> SseEvent {
    let data = json!({"reason": "credential_revoked", "message": why}).to_string();
    SseEvent::default().event("end").data(data)
}

/// `GET /v1/events/stream`: every event after `Last-Event-ID` (or
/// `?after=`, or from now), in `seq` order, as SSE with `id:` = seq and the
/// event as JSON data; a keep-alive comment every 15 s. The caller's
/// credential is re-checked before each batch and at least every
/// [`RECHECK`]: once revoked (or the Inbox session ends) the stream sends
/// one `event: end` with `{reason, message}` and closes.
pub(crate) async fn stream(
    State(s): State<Shared>,
    Extension(c): Extension<Caller>,
    headers: HeaderMap,
    Params(q): Params<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let from_header = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or_else(|| ApiError::invalid("Last-Event-ID must be an event seq number"))?,
        ),
        None => None,
    };
    let after = match from_header.or(q.after) {
        Some(a) => a,
        None => s.store.last_event_seq().await?,
    };
    let cursor = Cursor {
        s,
        caller: c,
        after,
        buf: VecDeque::new(),
        ended: false,
    };
    let events = futures_util::stream::unfold(cursor, |mut cur| async move {
        if cur.ended {
            return None;
        }
        loop {
            if let Some(ev) = cur.buf.pop_front() {
                let data = serde_json::to_string(&ev).unwrap_or_else(|_| "{}".into());
                let sse = SseEvent::default().id(ev.seq.to_string()).data(data);
                return Some((Ok(sse), cur));
            }
            if cur.s.shutdown.is_cancelled() {
                return None;
            }
            // Why here: before every batch is handed out and after every
            // idle RECHECK, so a revoked token or an ended Inbox session
            // gets nothing more, at most RECHECK late.
            if let Some(why) = cur.caller.revoked(&cur.s).await {
                tracing::info!(caller = %cur.caller.name, "event stream ended: {why}");
                cur.ended = true;
                return Some((Ok(end_event(why)), cur));
            }
            let notify = cur.s.waiters.watch("any");
            // Before the read, as in `long_poll::wait_until`: no event slips between.
            let notified = notify.notified();
            match cur.s.store.events_after(cur.after, STREAM_BATCH).await {
                Ok(evs) if !evs.is_empty() => {
                    cur.after = evs.last().map_or(cur.after, |e| e.seq);
                    let caller = &cur.caller;
                    cur.buf
                        .extend(evs.into_iter().filter(|e| caller.sees(&e.project)));
                    continue;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "event stream cannot read the log; retrying"),
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(RECHECK) => {}
                _ = cur.s.shutdown.cancelled() => return None,
            }
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
