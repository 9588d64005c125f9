//! The event routes' bodies, written as the client takes them.
//!
//! A page or a stream covers a [`Span`] of the log, whose payload sizes are
//! known before any payload is read. Its events are read a group at a time
//! (about [`GROUP_BYTES`] of payload, at least one event) with their
//! payloads kept as stored text, encoded, and handed to the connection in
//! frames of at most [`FRAME_BYTES`]. A group is read only once the client
//! took the one before, and only once it holds its share of [`BUDGET`]:
//! the payload bytes all event answers of this process hold at once. So
//! what the event routes hold is bounded however large the payloads and
//! however many clients read them: the budget, and per connection the
//! frames the HTTP server has queued for its socket (it asks for more only
//! below a few hundred KiB). A client that stops reading keeps at most one
//! group's share.
//!
//! Not here: which events a route covers and who may see them (the
//! handlers, `events.rs`).

use std::collections::VecDeque;
use std::io;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::ops::{Local, Result};
use crate::store::events::{AsTree, RawEvent, Span, UNREADABLE};

/// Payload the event answers of this process hold at once, in KiB.
const BUDGET_KIB: usize = 16 * 1024;

/// About how much payload one group reads (at least one event).
const GROUP_BYTES: i64 = 256 * 1024;

/// The largest frame handed to the connection.
const FRAME_BYTES: usize = 64 * 1024;

/// The budget, one permit per KiB of payload. Why bytes and not callers:
/// one caller's megabyte events cost what a thousand callers' small ones
/// do, and the payload is what the memory goes to.
static BUDGET: Semaphore = Semaphore::const_new(BUDGET_KIB);

/// A group's share of the budget: its payload in KiB, rounded up, and at
/// most the whole budget (a group larger than that reads alone).
fn share(bytes: i64) -> u32 {
    let kib = u64::try_from(bytes).unwrap_or(0).div_ceil(1024);
    // At most BUDGET_KIB (16 Ki), which fits a u32.
    u32::try_from(kib.min(BUDGET_KIB as u64)).unwrap_or(u32::MAX)
}

/// A group's events, holding their share of the budget until dropped.
pub(super) struct Group {
    pub events: Vec<RawEvent>,
    held: SemaphorePermit<'static>,
}

/// The events of a span not read yet, taken a group at a time.
pub(super) struct Groups {
    /// Every event left has a greater seq.
    after: i64,
    sizes: VecDeque<(i64, i64)>,
}

impl Groups {
    pub(super) fn new(span: Span) -> Self {
        Groups {
            after: span.after,
            sizes: span.sizes.into(),
        }
    }

    /// Where the events left start: past every group read so far.
    pub(super) fn after(&self) -> i64 {
        self.after
    }

    pub(super) fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Read the next group, `None` once the span is done: first its share
    /// of the budget (waiting holds no database connection), then its rows.
    /// A failed read leaves the group to be read again.
    pub(super) async fn next(&mut self, ops: &Local) -> Option<Result<Group>> {
        let (mut count, mut bytes) = (0usize, 0i64);
        for &(_, b) in &self.sizes {
            if count > 0 && bytes + b > GROUP_BYTES {
                break;
            }
            count += 1;
            bytes += b;
        }
        let &(last, _) = self.sizes.get(count.checked_sub(1)?)?;
        // The budget is never closed, so acquiring can only wait.
        let held = BUDGET
            .acquire_many(share(bytes))
            .await
            .expect("the event budget is never closed");
        match ops.events_raw(self.after, last).await {
            Ok(events) => {
                self.sizes.drain(..count);
                self.after = last;
                Some(Ok(Group { events, held }))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

/// Encoded text handed out a frame at a time, holding the budget share of
/// the events it was made from until the frame after its last is asked
/// for (by then the server has written all but its own small queue).
#[derive(Default)]
pub(super) struct Out {
    text: Vec<u8>,
    at: usize,
    /// Held for its drop, which gives the share back.
    _held: Option<SemaphorePermit<'static>>,
}

impl Out {
    /// `text` to hand out, holding nothing of the budget.
    pub(super) fn text(text: impl Into<Vec<u8>>) -> Self {
        Out {
            text: text.into(),
            ..Out::default()
        }
    }

    /// The encoding of `group` by `encode` (each event appended to the
    /// text), holding the group's share.
    pub(super) fn of(group: Group, mut encode: impl FnMut(&mut Vec<u8>, RawEvent)) -> Self {
        let Group { events, held } = group;
        let mut text = Vec::new();
        // Each event is let go once encoded, so the group is not held twice.
        for ev in events {
            encode(&mut text, ev);
        }
        Out {
            text,
            at: 0,
            _held: Some(held),
        }
    }

    /// The next frame; `None` once all is handed out, letting go of the
    /// text and its share.
    pub(super) fn frame(&mut self) -> Option<Bytes> {
        if self.at < self.text.len() {
            let end = self.text.len().min(self.at + FRAME_BYTES);
            // A copy, so a frame the server still queues keeps only itself.
            let frame = Bytes::copy_from_slice(&self.text[self.at..end]);
            self.at = end;
            return Some(frame);
        }
        *self = Out::default();
        None
    }
}

/// Append `ev` as JSON to `text`: the same bytes as the event read as a
/// tree would give ([`AsTree`]), compact, so without a line break.
pub(super) fn write_json(text: &mut Vec<u8>, ev: RawEvent) {
    // The event's fields without its payload, which stays here for the
    // tree to borrow (`map_payload` hands it over exactly once).
    let mut stored = None;
    let head = ev.map_payload(|_, p| stored = Some(p));
    let Some(stored) = stored else { return };
    let ev = head.map_payload(|_, ()| AsTree(&stored));
    let from = text.len();
    if let Err(e) = serde_json::to_writer(&mut *text, &ev) {
        // Cannot happen: the payload was checked to read as JSON when it
        // was read. Were it to, the event goes out as unreadable.
        text.truncate(from);
        let stand_in = ev.map_payload(|kind, _| {
            let stored = std::mem::replace(kind, UNREADABLE.to_string());
            serde_json::json!({"type": stored, "error": format!("event payload: {e}")})
        });
        // A tree of strings and integers always encodes.
        text.extend_from_slice(
            serde_json::to_string(&stand_in)
                .unwrap_or_default()
                .as_bytes(),
        );
    }
}

/// Append `ev` as one server-sent event (`id:` its seq, `data:` the event
/// as JSON, one line) to `text`.
pub(super) fn write_sse(text: &mut Vec<u8>, ev: RawEvent) {
    text.extend_from_slice(format!("id: {}\ndata: ", ev.seq).as_bytes());
    write_json(text, ev);
    text.extend_from_slice(b"\n\n");
}

/// A response whose body is `frames`, of `content_type`.
pub(super) fn streamed<S>(content_type: &'static str, frames: S) -> Response
where
    S: futures_util::Stream<Item = io::Result<Bytes>> + Send + 'static,
{
    let mut resp = Body::from_stream(frames).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_the_payload_in_kib_and_at_most_the_budget() {
        for (bytes, kib) in [
            (0, 0),
            (1, 1),
            (1024, 1),
            (1025, 2),
            (GROUP_BYTES, 256),
            (1 << 40, BUDGET_KIB as u32),
            (-5, 0),
        ] {
            assert_eq!(share(bytes), kib, "{bytes}");
        }
    }

    #[test]
    fn text_goes_out_in_frames_of_at_most_frame_bytes() {
        let mut out = Out::text(vec![7u8; FRAME_BYTES * 2 + 3]);
        let sizes: Vec<usize> = std::iter::from_fn(|| out.frame())
            .map(|f| f.len())
            .collect();
        assert_eq!(sizes, [FRAME_BYTES, FRAME_BYTES, 3]);
        assert!(out.frame().is_none());
    }
}
