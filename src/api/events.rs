//! The event log over HTTP: a JSON page (`GET /v1/events?after=SEQ`, or
//! `?tail=N` for the newest), a server-sent-events stream
//! (`GET /v1/events/stream`, `id:` = seq, resumes from `Last-Event-ID`), and
//! the long-poll helper the item routes use.
//!
//! Both the stream and long polls are driven by the daemon's in-process
//! waiters (woken when the waiter follower applies an event) and always
//! re-read the store: a wake is a hint, the store is the truth. They end at
//! shutdown. Project-scoped tokens see only their project's events.
//!
//! The page and the stream write their events as the client takes them,
//! payloads as stored, within one budget for the whole process (`body`).

mod body;

use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde::Deserialize;
use serde_json::json;
use std::io;
use tokio::time::Instant;

use super::auth::Caller;
use super::doc::{Answer, Described, Gens, Reply, json_answer};
use super::error::{ApiError, ApiResult};
use super::input::{Ctx, Params};
use super::long_poll::RECHECK;
use crate::shared::Shared;
use crate::store::Event;
use crate::store::events::Span;
use body::{Groups, Out};

/// Most events one page returns.
const MAX_PAGE: i64 = 1000;

/// Events read per store query by the stream.
const STREAM_BATCH: i64 = 256;

/// How long a stream stays silent before a keep-alive comment.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

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
pub(crate) async fn page(Ctx { s, c }: Ctx, Params(q): Params<PageQuery>) -> ApiResult<PageBody> {
    let span = match (q.tail, q.after, q.limit) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ApiError::invalid(
                "tail cannot be combined with after or limit: ask for one or the other",
            ));
        }
        (Some(n), None, None) => {
            if !(0..=MAX_PAGE).contains(&n) {
                return Err(ApiError::invalid(format!("tail must be 0 to {MAX_PAGE}")));
            }
            s.ops.events_span_tail(n).await?
        }
        (None, after, limit) => {
            let limit = limit.unwrap_or(100);
            if !(1..=MAX_PAGE).contains(&limit) {
                return Err(ApiError::invalid(format!("limit must be 1 to {MAX_PAGE}")));
            }
            s.ops.events_span_after(after.unwrap_or(0), limit).await?
        }
    };
    Ok(PageBody { s, caller: c, span })
}

/// `GET /v1/events`'s answer.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct EventPage {
    /// The events the caller may see, oldest first.
    events: Vec<Event>,
    /// Where the next page starts (`after=`).
    next_after: i64,
}

/// An [`EventPage`] written as the client takes it: its envelope as serde
/// writes it, the events of `span` the caller sees written in between.
pub(crate) struct PageBody {
    s: Shared,
    caller: Caller,
    span: Span,
}

struct PageState {
    s: Shared,
    caller: Caller,
    groups: Groups,
    out: Out,
    /// No event written yet (no comma before the next).
    first: bool,
    /// What follows the events, until it is written.
    end: Option<String>,
}

impl IntoResponse for PageBody {
    fn into_response(self) -> Response {
        let envelope = EventPage {
            events: Vec::new(),
            next_after: self.span.next_after,
        };
        // `{"events":[],"next_after":N}`: the events go between the brackets.
        let text = serde_json::to_string(&envelope).expect("a page envelope encodes");
        let cut = text.find("[]").map_or(0, |i| i + 1);
        let st = PageState {
            s: self.s,
            caller: self.caller,
            groups: Groups::new(self.span),
            out: Out::text(&text.as_bytes()[..cut]),
            first: true,
            end: Some(text[cut..].to_string()),
        };
        let frames = stream::unfold(st, |mut st| async move {
            loop {
                if let Some(frame) = st.out.frame() {
                    return Some((Ok(frame), st));
                }
                match st.groups.next(&st.s.ops).await {
                    Some(Ok(group)) => {
                        let (caller, first) = (&st.caller, &mut st.first);
                        st.out = Out::of(group, |text, ev| {
                            if caller.sees(&ev.project) {
                                if !std::mem::take(first) {
                                    text.push(b',');
                                }
                                body::write_json(text, ev);
                            }
                        });
                    }
                    Some(Err(e)) => {
                        // The status went out: all that is left is to cut
                        // the answer short, which the client sees as such.
                        tracing::warn!(error = %e, "an event page cannot read the log; cut short");
                        st.groups = Groups::new(Span::default());
                        st.end = None;
                        return Some((Err(io::Error::other(e.to_string())), st));
                    }
                    None => match st.end.take() {
                        Some(end) => st.out = Out::text(end),
                        None => return None,
                    },
                }
            }
        });
        body::streamed("application/json", frames)
    }
}

impl Reply for PageBody {
    fn describe(d: &mut Described, g: &mut Gens) {
        let s = g.answer_schema::<EventPage>();
        d.answers.push(json_answer(200, s, false));
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamQuery {
    after: Option<i64>,
}

/// `GET /v1/events/stream`: every event after `Last-Event-ID` (or
/// `?after=`, or from now), in `seq` order, as SSE with `id:` = seq and the
/// event as JSON data; a keep-alive comment after 15 s of silence. The
/// caller's credential is re-checked before each batch and at least every
/// [`RECHECK`]: once revoked (or the Inbox session ends) the stream sends
/// one `event: end` with `{reason, message}` and closes.
pub(crate) async fn stream(
    Ctx { s, c }: Ctx,
    headers: HeaderMap,
    Params(q): Params<StreamQuery>,
) -> ApiResult<EventStream> {
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
        None => s.ops.last_event_seq().await?,
    };
    Ok(EventStream {
        s,
        caller: c,
        after,
    })
}

/// The server-sent events of `GET /v1/events/stream`, from `after` on.
pub(crate) struct EventStream {
    s: Shared,
    caller: Caller,
    after: i64,
}

struct Cursor {
    s: Shared,
    caller: Caller,
    /// The batch being written, and where the log continues after it.
    groups: Groups,
    out: Out,
    /// When the last frame went out, for the keep-alive.
    sent: Instant,
    /// The closing `end` event is written: the stream is over after it.
    ended: bool,
}

/// The last event of a stream whose credential no longer holds.
fn end_event(why: &str) -> String {
    let data = json!({"reason": "credential_revoked", "message": why});
    format!("event: end\ndata: {data}\n\n")
}

impl Cursor {
    /// The next frame: the batch being written, the end, a keep-alive; or
    /// `None` once the stream is over.
    async fn next(&mut self) -> Option<io::Result<axum::body::Bytes>> {
        loop {
            if let Some(frame) = self.out.frame() {
                self.sent = Instant::now();
                return Some(Ok(frame));
            }
            if self.ended || self.s.shutdown.is_cancelled() {
                return None;
            }
            if !self.groups.is_empty() {
                match self.groups.next(&self.s.ops).await {
                    Some(Ok(group)) => {
                        let caller = &self.caller;
                        self.out = Out::of(group, |text, ev| {
                            if caller.sees(&ev.project) {
                                body::write_sse(text, ev);
                            }
                        });
                        continue;
                    }
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "event stream cannot read the log; retrying")
                    }
                    None => {}
                }
            } else {
                // Why here: before every batch is handed out and after
                // every idle RECHECK, so a revoked token or an ended Inbox
                // session gets nothing more, at most RECHECK late.
                if let Some(why) = self.caller.revoked(&self.s).await {
                    tracing::info!(caller = %self.caller.name, "event stream ended: {why}");
                    self.ended = true;
                    self.out = Out::text(end_event(why));
                    continue;
                }
                let notify = self.s.waiters.watch("any");
                // Before the read, as in `long_poll::wait_until`: no event slips between.
                let notified = notify.notified();
                let after = self.groups.after();
                match self.s.ops.events_span_after(after, STREAM_BATCH).await {
                    Ok(span) if !span.sizes.is_empty() => {
                        self.groups = Groups::new(span);
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "event stream cannot read the log; retrying")
                    }
                }
                let quiet = tokio::time::sleep_until(self.sent + KEEP_ALIVE);
                tokio::select! {
                    _ = notified => {}
                    _ = quiet => self.out = Out::text(":\n\n"),
                    _ = tokio::time::sleep(RECHECK) => {}
                    _ = self.s.shutdown.cancelled() => return None,
                }
                continue;
            }
            // A failed read of a group: wait a moment, then try it again.
            tokio::select! {
                _ = tokio::time::sleep(RECHECK) => {}
                _ = self.s.shutdown.cancelled() => return None,
            }
        }
    }
}

impl IntoResponse for EventStream {
    fn into_response(self) -> Response {
        let cur = Cursor {
            s: self.s,
            caller: self.caller,
            groups: Groups::new(Span {
                after: self.after,
                ..Span::default()
            }),
            out: Out::default(),
            sent: Instant::now(),
            ended: false,
        };
        let frames = stream::unfold(cur, |mut cur| async move {
            let frame = cur.next().await?;
            Some((frame, cur))
        });
        let mut resp = body::streamed("text/event-stream", frames);
        resp.headers_mut().insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-cache"),
        );
        resp
    }
}

impl Reply for EventStream {
    fn describe(d: &mut Described, _g: &mut Gens) {
        // Each server-sent event: `id` is the event's seq, `data` the
        // event as JSON; a closing `end` event carries `{reason, message}`.
        d.answers.push(Answer {
            status: 200,
            media: "text/event-stream",
            schema: Some(schemars::json_schema!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "the event's seq"},
                    "event": {"type": "string", "enum": ["message", "end"]},
                    "data": {"type": "string", "description": "the Event as JSON; for `end`, {reason, message}"},
                },
            })),
            paged: false,
        });
    }
}
