//! The writes on one named row in one call (see `call`): the agent's
//! `board_advance`, and the human's annotations and handled marks.
//!
//! The deciding statement bumps the board when the row named (`?5`–`?7`)
//! of the board named (`?1`–`?4`) passes the writer's guard; the event is
//! built from the row before its write, with the revision it will have.

use std::sync::{Arc, LazyLock};

use serde_json::json;

use super::call::{BOARD_REF, Head, WON, args, decode_full, extra, read_back, row_ref, settle};
use super::human::RowChange;
use super::{Advance, Annotate, BoardFull, Channel, Handled, Who, row_from};
use crate::store::writer::{Turn, call_text};
use crate::store::{Result, Store};

/// How many parameters these calls number.
const N: usize = 20;

/// RFC 3339 with milliseconds in UTC, as the store's serde writes a time
/// (`clock::format_rfc3339`), of the epoch milliseconds `{t}`.
const RFC3339: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', {t} / 1000.0, 'unixepoch')";

fn rfc3339(t: &str) -> String {
    RFC3339.replace("{t}", t)
}

/// The deciding statement of a one-row call: bump the board named when
/// it passes `board_guard` (SQL over `boards`) and the row named passes
/// `row_guard` (SQL over `r`), stamping it with the call's token.
fn decide(board_guard: &str, row_guard: &str) -> String {
    let a = args(N);
    let named = row_ref("boards.id");
    format!(
        "WITH {a} UPDATE boards SET revision = revision + 1, updated_at = ?8, write_token = ?9
         WHERE id = {BOARD_REF} AND {board_guard}
           AND EXISTS (SELECT 1 FROM board_rows r WHERE r.id = {named} AND {row_guard});"
    )
}

/// Append the event `kind` about the row the call won, built from the row
/// `r` before its write: `own` is the event's own payload (JSON over `r`),
/// into which the keys every row event carries are set, with the values
/// the write leaves (`row`).
fn row_event(kind: &str, own: &str, row: Leaves) -> String {
    let a = args(N);
    let won_row = row_ref("b.id");
    format!(
        "WITH {a} INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
         SELECT ?8, '{kind}', 'row', r.id, ?10, ?11, b.project, b.session,
                json_set({own}, '$.board_id', b.id, '$.board_title', b.title,
                         '$.board_version', b.revision, '$.label', r.label, '$.status', {status},
                         '$.revision', r.revision + 1, '$.action_version', r.action_version + {step})
         FROM boards b JOIN board_rows r ON r.id = {won_row} WHERE b.write_token = ?9;",
        status = row.status,
        step = row.step,
    )
}

/// What a row's write leaves in the event's payload.
#[derive(Clone, Copy)]
struct Leaves {
    /// Its status (SQL over `r`).
    status: &'static str,
    /// How far its `action_version` moves.
    step: u8,
}

/// A human's write: the row keeps its status and step.
const KEPT: Leaves = Leaves {
    status: "r.status",
    step: 0,
};

/// A human writes only on an active board.
const ACTIVE: &str = "archived_at IS NULL";

/// The row's write: `set` on the row the call won, and its revision bumped.
fn write_row(set: &str) -> String {
    let a = args(N);
    let won_row = row_ref(WON);
    format!(
        "WITH {a} UPDATE board_rows SET {set}, revision = revision + 1, updated_at = ?8 WHERE id = {won_row};"
    )
}

/// The row the call wrote and the board version it left.
fn read_row() -> String {
    let a = args(N);
    let won_row = row_ref("b.id");
    format!(
        "WITH {a} SELECT b.revision AS board_version, r.* FROM boards b JOIN board_rows r ON r.id = {won_row}
         WHERE b.write_token = ?9;"
    )
}

/// `board_advance`: `?12` the revision read, `?13` the board version read,
/// `?14` the outcome given (trimmed; NULL keeps the stored one), `?15`–`?20`
/// the next step (note, next step, owner, impact, options, context).
static ADVANCE: LazyLock<String> = LazyLock::new(|| {
    // Why guarded: both versions are the CAS tokens; a handled mark needs
    // an outcome to archive with the step, and an answer nobody read would
    // be archived unseen.
    let guard = "r.revision = ?12
        AND NOT (r.handled_at IS NOT NULL AND COALESCE(?14, r.outcome) = '')
        AND NOT (r.annotation IS NOT NULL AND r.annotation_seen_at IS NULL)";
    let next = Leaves {
        status: "'blocked'",
        step: 1,
    };
    let mut s = vec![
        decide("revision = ?13", guard),
        row_event(
            "row.advanced",
            "json_object('from_action_version', r.action_version, 'from_status', r.status,
                         'outcome', COALESCE(?14, r.outcome))",
            next,
        ),
        row_event("row.blocked", "json_object('fresh', json('true'))", next),
    ];
    // The step as `Step` serializes, appended to the history.
    let step = format!(
        "json_object('action_version', action_version, 'status', status, 'note', note,
            'next_step', next_step, 'owner', owner, 'impact', impact, 'options', json(options),
            'context', context, 'annotation', annotation, 'annotation_kind', annotation_kind,
            'annotation_source', annotation_source, 'annotated_by', annotated_by,
            'annotated_at', {annotated_at}, 'annotation_seen_at', {seen_at},
            'handled_at', {handled_at}, 'handled_by', handled_by,
            'outcome', COALESCE(?14, outcome), 'started_at', {started_at}, 'ended_at', {ended_at})",
        annotated_at = rfc3339("annotated_at"),
        seen_at = rfc3339("annotation_seen_at"),
        handled_at = rfc3339("handled_at"),
        started_at = rfc3339("action_started_at"),
        ended_at = rfc3339("?8"),
    );
    s.push(write_row(&format!(
        "history = json_insert(history, '$[#]', {step}),
         status = 'blocked', note = ?15, next_step = ?16, owner = ?17, impact = ?18, options = ?19,
         context = ?20, outcome = '', outcome_at = NULL,
         annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
         annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL,
         handled_at = NULL, handled_by = NULL, handled_seen_at = NULL, response_open = 0,
         action_version = action_version + 1, action_started_at = ?8"
    )));
    s.push(settle(N));
    s.push(read_back(N));
    call_text(&s)
});

/// An annotation: `?12` the text (trimmed; NULL clears), `?13` its kind,
/// `?14` the revision and `?15` the step the human saw (NULL: not
/// tracked), `?16` the event's own payload.
fn annotation(variant: Variant) -> String {
    let seen = "(?14 IS NULL OR r.revision = ?14) AND (?15 IS NULL OR r.action_version = ?15)";
    let (guard, set) = match variant {
        // Why guarded: a blank clears only an annotation no agent has
        // received; erasing one it may have acted on would lie to the human.
        Variant::Clear => (
            "r.annotation IS NOT NULL AND r.annotation_seen_at IS NULL",
            "annotation = NULL, annotation_kind = NULL, annotation_source = NULL,
             annotated_by = NULL, annotated_at = NULL, annotation_seen_at = NULL",
        ),
        // Why unconditional (but for the versions seen): the Inbox always
        // wins, and resetting annotation_seen_at makes the agent pick the
        // new text up.
        Variant::Inbox => (
            "1",
            "annotation = ?12, annotation_kind = ?13, annotation_source = 'inbox',
             annotated_by = ?10, annotated_at = ?8, annotation_seen_at = NULL, response_open = 1",
        ),
        // Why guarded: chat may write only while no unclaimed annotation
        // waits, so an unread Inbox answer always beats a later chat one; a
        // chat `clarify` may also correct an unclaimed *chat* answer.
        Variant::Chat => (
            "(r.annotation IS NULL OR r.annotation_seen_at IS NOT NULL
              OR (?13 = 'clarify' AND r.annotation_source = 'chat'))",
            "annotation = ?12, annotation_kind = ?13, annotation_source = 'chat',
             annotated_by = ?10, annotated_at = ?8, annotation_seen_at = NULL, response_open = 1",
        ),
    };
    let a = args(N);
    let won_row = row_ref("b.id");
    let mut s = vec![
        decide(ACTIVE, &format!("{seen} AND {guard}")),
        row_event("row.annotated", "?16", KEPT),
    ];
    // Kept in the row's annotation log, under the step it was written on.
    s.push(format!(
        "WITH {a} INSERT INTO board_row_annotations (row_id, board_id, action_version, annotation, kind, source, by, at)
         SELECT r.id, b.id, r.action_version, ?12, CASE WHEN ?12 IS NULL THEN NULL ELSE ?13 END, ?11, ?10, ?8
         FROM boards b JOIN board_rows r ON r.id = {won_row} WHERE b.write_token = ?9;"
    ));
    s.push(write_row(set));
    s.push(read_row());
    call_text(&s)
}

/// Which annotation write.
#[derive(Clone, Copy)]
enum Variant {
    Clear,
    Inbox,
    Chat,
}

static CLEAR: LazyLock<String> = LazyLock::new(|| annotation(Variant::Clear));
static INBOX: LazyLock<String> = LazyLock::new(|| annotation(Variant::Inbox));
static CHAT: LazyLock<String> = LazyLock::new(|| annotation(Variant::Chat));

/// A handled mark (`clear`: its clearing): `?12` the revision seen (NULL:
/// not tracked), `?13` the event's own payload.
fn handled(clear: bool) -> String {
    let (guard, set, kind) = if clear {
        // Why guarded: once an agent received the mark, un-marking cannot
        // un-tell it; refuse instead of pretending.
        (
            "r.handled_at IS NOT NULL AND r.handled_seen_at IS NULL",
            "handled_at = NULL, handled_by = NULL, handled_seen_at = NULL",
            "row.handled_cleared",
        )
    } else {
        // Why guarded: only a blocked row waits on a human; a new mark
        // resets its delivery so the agent is told again.
        (
            "r.status = 'blocked'",
            "handled_at = ?8, handled_by = ?10, handled_seen_at = NULL, response_open = 1",
            "row.handled",
        )
    };
    let mut s = vec![
        decide(
            ACTIVE,
            &format!("(?12 IS NULL OR r.revision = ?12) AND {guard}"),
        ),
        row_event(kind, "?13", KEPT),
    ];
    s.push(write_row(set));
    s.push(read_row());
    call_text(&s)
}

static MARK: LazyLock<String> = LazyLock::new(|| handled(false));
static UNMARK: LazyLock<String> = LazyLock::new(|| handled(true));

/// A one-row call's own parameters (`?12` on), bound in order.
#[derive(Clone)]
enum Arg {
    Int(Option<i64>),
    Text(Option<String>),
}

/// One call: its text, the shared parameters and its own.
struct One {
    sql: &'static str,
    head: Head,
    own: Vec<Arg>,
}

impl Store {
    /// Run `one` under SQLite's write turn; `decode` reads its result
    /// rows (none: it did not win). On PostgreSQL, `None`.
    async fn one_call<T, D>(&self, one: One, decode: D) -> Result<Option<T>>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
        D: Fn(Vec<sqlx::sqlite::SqliteRow>) -> Result<Option<T>> + Copy + Send + Sync + 'static,
    {
        self.write_lite(Arc::new(one), move |turn: &mut Turn, one, now| {
            Box::pin(async move {
                let mut q = one.head.bind(sqlx::query(one.sql), now);
                for arg in &one.own {
                    q = match arg {
                        Arg::Int(v) => q.bind(*v),
                        Arg::Text(v) => q.bind(v.as_deref()),
                    };
                }
                decode(turn.savepoint_call(q).await?)
            })
        })
        .await
    }

    /// `board_advance` in one call, or `None`: refused (the older
    /// transaction then says why).
    pub(super) async fn board_advance_call(&self, a: &Advance) -> Result<Option<BoardFull>> {
        let who = Who {
            actor: &a.by,
            channel: Channel::Agent,
        };
        let outcome = a
            .outcome
            .as_deref()
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(str::to_owned);
        let next = &a.next;
        let options = serde_json::to_string(&next.options).unwrap_or_else(|_| "[]".into());
        let one = One {
            sql: &ADVANCE,
            head: Head::new(a.board.trim(), a.project.as_deref(), &a.label, who),
            own: vec![
                Arg::Int(Some(a.expected_revision)),
                Arg::Int(Some(a.board_version)),
                Arg::Text(outcome),
                Arg::Text(Some(next.note.clone())),
                Arg::Text(Some(next.next_step.clone())),
                Arg::Text(Some(next.owner.as_str().to_owned())),
                Arg::Text(Some(next.impact.clone())),
                Arg::Text(Some(options)),
                Arg::Text(Some(next.context.clone())),
            ],
        };
        self.one_call(one, |rows| decode_full(&rows)).await
    }

    /// `annotate` in one call, or `None` as for
    /// [`Store::board_advance_call`] (also when clearing what is clear).
    pub(super) async fn annotate_call(&self, a: &Annotate) -> Result<Option<RowChange>> {
        let text = a.text.trim();
        let clear = text.is_empty();
        let variant = match (clear, a.source) {
            (true, _) => &CLEAR,
            (false, Channel::Inbox) => &INBOX,
            (false, _) => &CHAT,
        };
        let text = (!clear).then(|| text.to_owned());
        // The answer itself travels with the event (for wake-up receivers).
        let own_payload = extra(&json!({
            "kind": (!clear).then_some(a.kind),
            "text": text,
            "source": a.source,
            "by": a.by,
            "cleared": clear,
        }))?;
        let who = Who {
            actor: &a.by,
            channel: a.source,
        };
        let one = One {
            sql: variant,
            head: Head::new(a.board.trim(), a.project.as_deref(), &a.label, who),
            own: vec![
                Arg::Text(text),
                Arg::Text(Some(a.kind.as_str().to_owned())),
                Arg::Int(a.expected_revision),
                Arg::Int(a.action_version),
                Arg::Text(Some(own_payload)),
            ],
        };
        self.one_call(one, |rows| row_change(&rows)).await
    }

    /// `mark_handled` (`clear`: `clear_handled`) in one call, or `None` as
    /// for [`Store::annotate_call`].
    pub(super) async fn handled_call(&self, h: &Handled, clear: bool) -> Result<Option<RowChange>> {
        let who = Who {
            actor: &h.by,
            channel: h.source,
        };
        let own_payload = extra(&json!({"by": h.by, "source": h.source}))?;
        let one = One {
            sql: if clear { &UNMARK } else { &MARK },
            head: Head::new(h.board.trim(), h.project.as_deref(), &h.label, who),
            own: vec![Arg::Int(h.expected_revision), Arg::Text(Some(own_payload))],
        };
        self.one_call(one, |rows| row_change(&rows)).await
    }
}

/// The result of a call ending in [`read_row`].
fn row_change(rows: &[sqlx::sqlite::SqliteRow]) -> Result<Option<RowChange>> {
    let Some(r) = rows.first() else {
        return Ok(None);
    };
    Ok(Some(RowChange {
        board_version: sqlx::Row::try_get(r, "board_version")?,
        changed: true,
        row: row_from(r)?,
    }))
}
