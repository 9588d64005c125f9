//! The append-only event log.
//!
//! [`append`] is called inside the transaction of every state change, so an
//! event exists exactly when its change committed. Triggers make the table
//! refuse UPDATE and DELETE. `seq` is `AUTOINCREMENT`: a rolled-back
//! transaction does not consume a number, so committed `seq`s have no gaps.
//!
//! No stored row may ever stop a reader: [`append`] refuses a payload nested
//! deeper than [`MAX_PAYLOAD_DEPTH`] (so it can be read back), and a row that
//! still does not decode (a hand-edited file, a bug) is read as an
//! [`UNREADABLE`] event carrying the error, which followers skip loudly.
//!
//! Payloads are read as [`Value`] trees for the daemon's followers, or kept
//! as their stored text ([`RawEvent`], `payload`) for readers that only pass
//! them on: the HTTP event routes, which also read a page's rows a few at a
//! time ([`Store::events_span_after`], [`Store::events_span_tail`],
//! [`Store::events_raw`]).

mod kinds;
mod payload;

use serde::Serialize;
use serde_json::Value;
use sqlx::{ColumnIndex, Decode, FromRow, Row, Type};

pub use kinds::{DECISION_EVENTS, WAKE_EVENTS};
pub use payload::{AsTree, Payload, RawPayload};

use super::depth::{MAX_PAYLOAD_DEPTH, value_depth};
use super::engine::{Stmt, Tx};
use super::{Result, Store};
use crate::store::Channel;

/// The type given to a stored event whose payload does not decode. Its
/// payload is `{"type": <the stored type>, "error": <why>}`.
pub const UNREADABLE: &str = "event.unreadable";

/// An event about to be appended.
#[derive(Debug, Clone, Default)]
pub struct NewEvent<'a> {
    /// Event type, e.g. `question.answered`.
    pub kind: &'a str,
    /// `question`, `row`, `board`, `action` or `session`.
    pub entity_kind: &'a str,
    /// Id of the entity the event is about.
    pub entity_id: &'a str,
    /// Who caused it (a user name, an agent, `rule:<name>`).
    pub actor: &'a str,
    /// Through which door: `inbox`, `chat`, `agent`, `cli`, `daemon`.
    pub channel: Channel,
    /// Project of the entity, for routing and filtering.
    pub project: &'a str,
    /// Agent session the entity belongs to, for wake-ups.
    pub session: &'a str,
    /// Anything else a follower needs, as JSON.
    pub payload: Value,
}

/// A committed event.
// `P`: the payload as a `Value` tree, or as its stored text (`RawEvent`):
// the same JSON either way. (A `//` comment: the doc is the API's.)
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(rename = "Event")]
pub struct Event<P = Value> {
    /// Position in the log; strictly increasing, no gaps.
    pub seq: i64,
    /// When it was appended.
    #[serde(with = "crate::clock::Timestamp")]
    pub at: i64,
    /// Event type, e.g. `question.answered`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `question`, `row`, `board`, `action` or `session`.
    pub entity_kind: String,
    /// Id of the entity.
    pub entity_id: String,
    /// Who caused it.
    pub actor: String,
    /// Through which door.
    pub channel: String,
    /// Project of the entity.
    pub project: String,
    /// Agent session of the entity.
    pub session: String,
    /// Event details.
    pub payload: P,
}

/// An event whose payload is kept as its stored JSON text.
pub type RawEvent = Event<RawPayload>;

/// A slice of the event log and where to continue reading it.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct EventPage {
    /// The events, oldest first.
    pub events: Vec<Event>,
    /// The `after` for the next read: past every event this read covered,
    /// including any the reader was not shown (another project's, for a
    /// project-scoped token), so paging and following never stall.
    pub next_after: i64,
}

/// Refuse a payload nested deeper than the reader's recursion limit. Why
/// everywhere: every writer checks its payload before it is stored (here,
/// or before a statement whose trigger appends the event), so no door can
/// store an event nobody can read back.
pub(crate) fn check_depth(payload: &Value) -> Result<()> {
    let depth = value_depth(payload);
    if depth > MAX_PAYLOAD_DEPTH {
        return Err(super::Error::Invalid(format!(
            "the data is nested {depth} levels deep; at most {MAX_PAYLOAD_DEPTH} can be stored: flatten it"
        )));
    }
    Ok(())
}

/// Append one event, returning its seq: the same statement on both
/// engines. `$10` is its audit details (an action's audit entry), or NULL.
const APPEND: &str = "INSERT INTO events
     (at, type, entity_kind, entity_id, actor, channel, project, session, payload, audit)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING seq";

/// [`APPEND`] for `ev` written at `at`, its payload's text `payload`, its
/// audit details `audit`. The payload is serialised by Rust on both
/// engines, so its text is the same byte for byte.
fn append_stmt<'q>(
    at: i64,
    ev: &NewEvent<'q>,
    payload: &'q str,
    audit: Option<&'q str>,
) -> Stmt<'q> {
    Stmt::new(APPEND)
        .int(at)
        .text(ev.kind)
        .text(ev.entity_kind)
        .text(ev.entity_id)
        .text(ev.actor)
        .text(ev.channel.as_str())
        .text(ev.project)
        .text(ev.session)
        .text(payload)
        .text(audit)
}

impl Tx<'_> {
    /// Append `ev` at time `at`, last in the write (on PostgreSQL the
    /// event counter's row stays locked until commit); its seq. Refuses
    /// a payload nested too deep to be read back.
    pub(crate) async fn append(&mut self, at: i64, ev: &NewEvent<'_>) -> Result<i64> {
        self.append_with(at, ev, None).await
    }

    /// [`Tx::append`] for an event that is also an action's audit entry
    /// (docs/design.md §4): `details` are the entry's details, secrets
    /// already redacted; the entry's name is `ev.kind` without `action.`.
    pub(crate) async fn append_audited(
        &mut self,
        at: i64,
        ev: &NewEvent<'_>,
        details: &str,
    ) -> Result<i64> {
        self.append_with(at, ev, Some(details)).await
    }

    async fn append_with(
        &mut self,
        at: i64,
        ev: &NewEvent<'_>,
        audit: Option<&str>,
    ) -> Result<i64> {
        check_depth(&ev.payload)?;
        let payload = ev.payload.to_string();
        let appended = self.row(&append_stmt(at, ev, &payload, audit)).await?;
        appended
            .map(|(seq,)| seq)
            .ok_or_else(|| sqlx::Error::RowNotFound.into())
    }
}

/// A stored row as an event, of either engine (its columns are text and
/// 64-bit integers on both). A payload that does not decode yields an
/// [`UNREADABLE`] event in its place rather than an error, so one bad row
/// cannot stop a reader of the log: only a missing or mistyped column is
/// an error.
impl<'r, R, P: Payload> FromRow<'r, R> for Event<P>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(r: &'r R) -> sqlx::Result<Event<P>> {
        let mut kind: String = r.try_get("type")?;
        let payload = r
            .try_get::<String, _>("payload")
            .map_err(|e| e.to_string())
            .and_then(P::decode);
        let payload = or_unreadable(&mut kind, payload);
        Ok(Event {
            seq: r.try_get("seq")?,
            at: r.try_get("at")?,
            kind,
            entity_kind: r.try_get("entity_kind")?,
            entity_id: r.try_get("entity_id")?,
            actor: r.try_get("actor")?,
            channel: r.try_get("channel")?,
            project: r.try_get("project")?,
            session: r.try_get("session")?,
            payload,
        })
    }
}

/// The payload `decoded`, or in its place the [`UNREADABLE`] stand-in
/// (`kind` then becomes [`UNREADABLE`]).
fn or_unreadable<P: Payload>(kind: &mut String, decoded: std::result::Result<P, String>) -> P {
    decoded.unwrap_or_else(|error| {
        let stored = std::mem::replace(kind, UNREADABLE.to_string());
        P::from_value(
            serde_json::json!({"type": stored, "error": format!("event payload: {error}")}),
        )
    })
}

impl<P> Event<P> {
    /// This event with its payload made into `Q` by `f`, which may also
    /// change its type (a payload that does not read makes it
    /// [`UNREADABLE`]).
    pub fn map_payload<Q>(self, f: impl FnOnce(&mut String, P) -> Q) -> Event<Q> {
        let mut kind = self.kind;
        let payload = f(&mut kind, self.payload);
        Event {
            seq: self.seq,
            at: self.at,
            kind,
            entity_kind: self.entity_kind,
            entity_id: self.entity_id,
            actor: self.actor,
            channel: self.channel,
            project: self.project,
            session: self.session,
            payload,
        }
    }
}

impl RawEvent {
    /// This event with its payload as a tree (`with_payload`), or as
    /// `null` for a reader that has said it does not look at it.
    pub fn decoded(self, with_payload: bool) -> Event {
        self.map_payload(|kind, payload| {
            if with_payload {
                // Checked when read, by the walk that builds the tree.
                or_unreadable(
                    kind,
                    serde_json::from_str(payload.get()).map_err(|e| e.to_string()),
                )
            } else {
                Value::Null
            }
        })
    }
}

/// About how many bytes of event payload one read of the log returns.
pub const PAGE_BYTES: i64 = 4 * 1024 * 1024;

/// How many of `sizes` (seq, payload bytes; in reading order) fit
/// [`PAGE_BYTES`] counted from the first: always at least the first.
/// Both engines page the log with it.
pub(crate) fn fitting(sizes: &[(i64, i64)]) -> usize {
    let mut total = 0i64;
    let mut n = 0;
    for &(_, bytes) in sizes {
        if n > 0 && total + bytes > PAGE_BYTES {
            break;
        }
        total += bytes;
        n += 1;
    }
    n
}

/// Where one read of the log lies, known before any payload is read: the
/// seq and payload size of each event it covers, and where to continue.
/// Its events are exactly those with `after < seq <= last`: seqs become
/// visible in order and a stored event never changes, so they can be read
/// later, in parts, and still be what the sizes described.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Span {
    /// Where reading starts: every event covered has a greater seq.
    pub after: i64,
    /// `(seq, payload bytes)` of each event covered, oldest first.
    pub sizes: Vec<(i64, i64)>,
    /// As [`EventPage::next_after`].
    pub next_after: i64,
}

impl Span {
    /// The first of `sizes` (oldest first, after `after`) that fit the
    /// budget.
    fn forward(after: i64, mut sizes: Vec<(i64, i64)>) -> Span {
        sizes.truncate(fitting(&sizes));
        let next_after = sizes.last().map_or(after, |&(seq, _)| seq);
        Span {
            after,
            sizes,
            next_after,
        }
    }

    /// The first of `sizes` (newest first, at most `newest`) that fit the
    /// budget, oldest first; continued from `newest`.
    pub(crate) fn backward(newest: i64, mut sizes: Vec<(i64, i64)>) -> Span {
        sizes.truncate(fitting(&sizes));
        sizes.reverse();
        let after = sizes.first().map_or(newest, |&(seq, _)| seq - 1);
        Span {
            after,
            sizes,
            next_after: newest,
        }
    }

    /// The newest seq covered, if any.
    pub fn last(&self) -> Option<i64> {
        self.sizes.last().map(|&(seq, _)| seq)
    }
}

/// The events with `$1 < seq <= $2`, oldest first: the same on both engines.
pub(crate) const BETWEEN: &str = "SELECT * FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq";

impl Store {
    /// Events with `seq > after`, oldest first, at most `limit` — and at
    /// most about [`PAGE_BYTES`] of payload: a batch stops before the event
    /// that would cross it (but always holds at least one), so a log of
    /// megabyte payloads (an action's arguments) is read a few at a time
    /// instead of hundreds of megabytes at once. Callers continue from the
    /// last `seq` they got, as for `limit`.
    pub async fn events_after(&self, after: i64, limit: i64) -> Result<Vec<Event>> {
        let span = self.events_span_after(after, limit).await?;
        self.events_between(span.after, span.last()).await
    }

    /// [`Store::events_after`], the payloads as stored text.
    pub async fn events_after_raw(&self, after: i64, limit: i64) -> Result<Vec<RawEvent>> {
        let span = self.events_span_after(after, limit).await?;
        self.events_between(span.after, span.last()).await
    }

    /// Where [`Store::events_after`] reads, without reading a payload.
    pub async fn events_span_after(&self, after: i64, limit: i64) -> Result<Span> {
        // octet_length reads the record headers, not the payloads (a
        // 32-bit integer on PostgreSQL); no LIMIT is -1 on SQLite, NULL on
        // PostgreSQL (which refuses a negative one).
        let sizes = Stmt::spelled(
            "SELECT seq, octet_length(payload) FROM events WHERE seq > $1
             ORDER BY seq LIMIT coalesce($2, -1)",
            "SELECT seq, octet_length(payload)::BIGINT FROM events WHERE seq > $1
             ORDER BY seq LIMIT $2",
        )
        .int(after)
        .int((limit >= 0).then_some(limit));
        Ok(Span::forward(after, self.rows(sizes).await?))
    }

    /// The events with `after < seq <= last`, their payloads as stored
    /// text: a [`Span`]'s events, or a part of them.
    pub async fn events_raw(&self, after: i64, last: i64) -> Result<Vec<RawEvent>> {
        self.events_between(after, Some(last)).await
    }

    async fn events_between<P>(&self, after: i64, last: Option<i64>) -> Result<Vec<Event<P>>>
    where
        P: Payload + Send + Unpin + 'static,
    {
        let Some(last) = last else {
            return Ok(Vec::new());
        };
        self.rows(Stmt::new(BETWEEN).int(after).int(last)).await
    }

    /// The newest `n` events (0 to any number), oldest first, within the
    /// same payload budget as [`Store::events_after`] counted from the
    /// newest end, so a few huge payloads make it return fewer. The page's
    /// `next_after` is the newest `seq` when it was read (0 for an empty
    /// log): following the log from there misses nothing and repeats
    /// nothing.
    pub async fn events_tail(&self, n: i64) -> Result<EventPage> {
        // One snapshot, so the sizes and the rows agree even while other
        // processes append.
        let mut snap = self.snapshot().await?;
        let span = tail_span_in(&mut snap.tx(), n).await?;
        let events = match span.last() {
            Some(last) => {
                let between = Stmt::new(BETWEEN).int(span.after).int(last);
                snap.tx().rows(&between).await?
            }
            None => Vec::new(),
        };
        snap.end().await?;
        Ok(EventPage {
            events,
            next_after: span.next_after,
        })
    }

    /// Where [`Store::events_tail`] reads, without reading a payload: the
    /// newest seq and the sizes from one snapshot.
    pub async fn events_span_tail(&self, n: i64) -> Result<Span> {
        let mut snap = self.snapshot().await?;
        let span = tail_span_in(&mut snap.tx(), n).await?;
        snap.end().await?;
        Ok(span)
    }

    /// Like [`Store::events_after`], with where to continue: the last
    /// `seq` returned, else `after`.
    pub async fn events_page(&self, after: i64, limit: i64) -> Result<EventPage> {
        let events = self.events_after(after, limit).await?;
        let next_after = events.last().map_or(after, |e| e.seq);
        Ok(EventPage { events, next_after })
    }

    /// Events about one entity, oldest first.
    pub async fn events_for(&self, entity_kind: &str, entity_id: &str) -> Result<Vec<Event>> {
        let about = Stmt::new(
            "SELECT * FROM events WHERE entity_kind = $1 AND entity_id = $2 ORDER BY seq",
        )
        .text(entity_kind)
        .text(entity_id);
        self.rows(about).await
    }

    /// The newest `seq`, or 0 for an empty log.
    pub async fn last_event_seq(&self) -> Result<i64> {
        let seq: Option<i64> = self.first(Stmt::new(NEWEST)).await?;
        Ok(seq.unwrap_or(0))
    }
}

/// The newest seq (NULL for an empty log).
const NEWEST: &str = "SELECT MAX(seq) FROM events";

/// The newest seq and the sizes of the newest `n` events within the page
/// budget, read on `tx` (one snapshot).
async fn tail_span_in(tx: &mut Tx<'_>, n: i64) -> Result<Span> {
    let newest: Option<(Option<i64>,)> = tx.row(&Stmt::new(NEWEST)).await?;
    let newest = newest.and_then(|(seq,)| seq).unwrap_or(0);
    let sizes = Stmt::spelled(
        "SELECT seq, octet_length(payload) FROM events WHERE seq <= $1 ORDER BY seq DESC LIMIT $2",
        "SELECT seq, octet_length(payload)::BIGINT FROM events WHERE seq <= $1
         ORDER BY seq DESC LIMIT $2",
    )
    .int(newest)
    .int(n.max(0));
    Ok(Span::backward(newest, tx.rows(&sizes).await?))
}
