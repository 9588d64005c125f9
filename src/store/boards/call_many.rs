//! The agent's row writes in one call (see `call`): `board_upsert` (a new
//! board, or an existing one with any number of rows), `board_row` and
//! `board_outcome`.
//!
//! The rows given travel as one JSON parameter (`?12`), so the call's text
//! is the same for one row or five hundred; each statement reads them with
//! `json_each` and joins them to the stored rows. The merge is the one
//! `write` does in Rust, written in SQL: an omitted field keeps its stored
//! value, a row that would not change is not written, a fresh block resets
//! the human's fields, leaving `blocked` needs the outcome a handled mark
//! asks for and no unread answer. The events are built from the stored
//! rows before the row writes, with the values those writes leave.

use std::sync::{Arc, LazyLock};

use serde_json::json;

use super::call::{
    BOARD_REF, Head, WON, args, board_call, board_event, read_back, read_back_of, settle,
};
use super::{BoardFull, BoardUpsert, RowInput, RowWrite, Who};
use crate::store::writer::call_text;
use crate::store::{Channel, Result, Store, new_id};

/// How many parameters these calls number.
const N: usize = 18;

/// Which writer a call is for.
#[derive(Clone, Copy)]
struct Shape {
    /// The board is created by this call (an upsert without a version).
    create: bool,
    /// An upsert: it may change the owner and logs `board.upserted`.
    upsert: bool,
    /// The one row is named by label or id (`?5`–`?7`), not by its label
    /// in the JSON, and is never created (an outcome).
    by_ref: bool,
}

static ROW: LazyLock<String> = LazyLock::new(|| {
    sql(Shape {
        create: false,
        upsert: false,
        by_ref: false,
    })
});
static OUTCOME: LazyLock<String> = LazyLock::new(|| {
    sql(Shape {
        create: false,
        upsert: false,
        by_ref: true,
    })
});
static UPSERT: LazyLock<String> = LazyLock::new(|| {
    sql(Shape {
        create: false,
        upsert: true,
        by_ref: false,
    })
});
static CREATE: LazyLock<String> = LazyLock::new(|| {
    sql(Shape {
        create: true,
        upsert: true,
        by_ref: false,
    })
});

/// The rows given (`i`); with [`MERGE`], each joined to its stored row in board `{B}`
/// (`m`), with what the write makes of it (`p`, `q`): `a_*` the merged
/// fields, `changed`, `fresh` (a fresh block), `o_final` (the outcome it
/// stores), `refused` (it would leave `blocked` against the rules), `stale`
/// (its revision does not match).
const INPUTS: &str = "i AS (SELECT CAST(key AS INTEGER) AS k, value->>'id' AS nid, value->>'label' AS label,
        value->>'revision' AS i_rev, value->>'status' AS i_status, value->>'note' AS i_note,
        value->>'next_step' AS i_next, value->>'owner' AS i_owner, value->>'impact' AS i_impact,
        value->>'options' AS i_options, value->>'context' AS i_context, value->>'outcome' AS i_outcome
      FROM json_each(?12))";

/// See [`INPUTS`].
const MERGE: &str = "m AS (SELECT i.*, r.id AS r_id, r.label AS r_label, r.revision AS r_rev, r.action_version AS r_av,
        r.status AS o_status, r.note AS o_note, r.next_step AS o_next, r.owner AS o_owner,
        r.impact AS o_impact, r.options AS o_options, r.context AS o_context, r.outcome AS o_outcome,
        r.handled_at AS o_handled, r.annotation AS o_annotation, r.annotation_seen_at AS o_seen,
        COALESCE(i.i_status, r.status, 'tracked') AS a_status, COALESCE(i.i_note, r.note, '') AS a_note,
        COALESCE(i.i_next, r.next_step, '') AS a_next, COALESCE(i.i_owner, r.owner, '') AS a_owner,
        COALESCE(i.i_impact, r.impact, '') AS a_impact, COALESCE(i.i_options, r.options, '[]') AS a_options,
        COALESCE(i.i_context, r.context, '') AS a_context, COALESCE(i.i_outcome, r.outcome, '') AS a_outcome
      FROM i LEFT JOIN board_rows r ON r.board_id = {B} AND {JOIN}),
  p AS (SELECT m.*,
        r_id IS NOT NULL AND (a_status IS NOT o_status OR a_note IS NOT o_note OR a_next IS NOT o_next
            OR a_owner IS NOT o_owner OR a_impact IS NOT o_impact OR a_options IS NOT o_options
            OR a_context IS NOT o_context OR a_outcome IS NOT o_outcome) AS changed,
        o_status <> 'blocked' AND a_status = 'blocked' AS fresh,
        o_status = 'blocked' AND a_status <> 'blocked' AS leaving,
        a_note = o_note AND a_next = o_next AND a_owner = o_owner AND a_impact = o_impact
            AND a_options = o_options AND a_context = o_context AS same_step
      FROM m),
  q AS (SELECT p.*, CASE WHEN fresh AND i_outcome IS NULL THEN '' ELSE a_outcome END AS o_final,
        changed AND leaving AND ((o_handled IS NOT NULL AND a_outcome = '')
            OR (o_annotation IS NOT NULL AND o_seen IS NULL)) AS refused,
        r_rev IS NOT i_rev AS stale
      FROM p)";

/// [`INPUTS`] and [`MERGE`] over board `board`.
fn plan(board: &str, by_ref: bool) -> String {
    let join = if by_ref {
        format!("r.id = {}", super::call::row_ref(board))
    } else {
        "r.label = i.label".to_owned()
    };
    let merge = MERGE.replace("{JOIN}", &join).replace("{B}", board);
    format!("{INPUTS},\n  {merge}")
}

/// The call of one shape.
fn sql(shape: Shape) -> String {
    let a = args(N);
    let decide = decide_sql(shape, &a);
    let won = plan(WON, shape.by_ref);
    let mut statements = vec![decide];
    if shape.upsert {
        statements.push(board_event(
            N,
            "board.upserted",
            "json_object('created', json(CASE WHEN ?18 THEN 'true' ELSE 'false' END),
                         'rows', json(?16), 'title', b.title)",
            "1",
        ));
    }
    statements.push(events_sql(&a, &won));
    statements.push(rows_update_sql(&a, &won));
    if !shape.by_ref {
        // New rows go after every stored one, each at its place in the
        // input (gaps are fine), as `write` numbers them.
        statements.push(format!(
            "WITH {a}, {INPUTS} INSERT INTO board_rows (id, board_id, label, status, note, next_step, owner,
                impact, options, context, outcome, outcome_at, action_started_at, position, created_at, updated_at)
             SELECT i.nid, b.id, i.label, COALESCE(i.i_status, 'tracked'), COALESCE(i.i_note, ''),
                COALESCE(i.i_next, ''), COALESCE(i.i_owner, ''), COALESCE(i.i_impact, ''),
                COALESCE(i.i_options, '[]'), COALESCE(i.i_context, ''), COALESCE(i.i_outcome, ''),
                CASE WHEN COALESCE(i.i_outcome, '') <> '' THEN ?8 END, ?8,
                (SELECT COALESCE(MAX(position), 0) + 1 FROM board_rows WHERE board_id = b.id) + i.k, ?8, ?8
             FROM i JOIN boards b ON b.write_token = ?9
             WHERE NOT EXISTS (SELECT 1 FROM board_rows r WHERE r.board_id = b.id AND r.label = i.label)
             ORDER BY i.k;"
        ));
    }
    if !shape.create {
        // A board this write created stays in the list even when every
        // row is done (see `write::finish`).
        statements.push(settle(N));
    }
    statements.push(read_back_sql(shape, &a));
    call_text(&statements)
}

/// The statement that decides the call: the new board's INSERT, or the
/// board's guarded version bump.
fn decide_sql(shape: Shape, a: &str) -> String {
    if shape.create {
        // Why guarded: a title already taken is an existing board (the
        // older path refuses it as stale), and a new board has no row
        // revisions to match.
        format!(
            "WITH {a} INSERT INTO boards (id, project, title, revision, agent, session, created_at, updated_at, write_token)
             SELECT ?17, ?2, ?1, 1, ?14, ?15, ?8, ?8, ?9
             WHERE NOT EXISTS (SELECT 1 FROM boards WHERE project = ?2 AND title = ?1)
               AND NOT EXISTS (SELECT 1 FROM json_each(?12) WHERE value->>'revision' IS NOT NULL);"
        )
    } else {
        let board = if shape.upsert {
            "(SELECT id FROM boards WHERE project = ?2 AND title = ?1)"
        } else {
            BOARD_REF
        };
        let owner = if shape.upsert {
            ", agent = CASE WHEN ?14 = '' THEN agent ELSE ?14 END,
               session = CASE WHEN ?15 = '' THEN session ELSE ?15 END"
        } else {
            ""
        };
        // Why guarded: the board version and every row revision are the
        // CAS tokens; a write that would leave `blocked` against the rules
        // or change nothing is not this call's to make.
        format!(
            "WITH {a}, {plan} UPDATE boards SET revision = revision + 1, updated_at = ?8, write_token = ?9{owner}
             WHERE id = {board} AND (?13 IS NULL OR revision = ?13)
               AND NOT EXISTS (SELECT 1 FROM q WHERE stale OR refused)
               AND EXISTS (SELECT 1 FROM q WHERE r_id IS NULL OR changed);",
            plan = plan(board, shape.by_ref)
        )
    }
}

/// The events of the rows this call changed, in input order.
fn events_sql(a: &str, won: &str) -> String {
    format!(
    "WITH {a}, {won}, e AS (
        SELECT k, 0 AS n, 'row.updated' AS kind, nid AS rid, label, a_status AS status, 1 AS rev,
               1 AS av, json_object('created', json('true')) AS extra
          FROM q WHERE r_id IS NULL
        UNION ALL SELECT k, 1, 'row.blocked', nid, label, a_status, 1, 1, json_object('fresh', json('true'))
          FROM q WHERE r_id IS NULL AND a_status = 'blocked'
        UNION ALL SELECT k, 0, 'row.updated', r_id, r_label, a_status, r_rev + 1, r_av,
               json_object('from_status', o_status)
          FROM q WHERE changed
        UNION ALL SELECT k, 1, 'row.blocked', r_id, r_label, a_status, r_rev + 1, r_av,
               json_object('fresh', json(CASE WHEN fresh THEN 'true' ELSE 'false' END))
          FROM q WHERE changed AND a_status = 'blocked' AND (fresh OR NOT same_step)
        UNION ALL SELECT k, 2, 'row.outcome', r_id, r_label, a_status, r_rev + 1, r_av,
               json_object('outcome', o_final)
          FROM q WHERE changed AND o_final <> '' AND o_final <> o_outcome)
     INSERT INTO events (at, type, entity_kind, entity_id, actor, channel, project, session, payload)
     SELECT ?8, e.kind, 'row', e.rid, ?10, ?11, b.project, b.session,
            json_set(e.extra, '$.board_id', b.id, '$.board_title', b.title, '$.board_version', b.revision,
                     '$.label', e.label, '$.status', e.status, '$.revision', e.rev, '$.action_version', e.av)
     FROM e JOIN boards b ON b.write_token = ?9 ORDER BY e.k, e.n;"
)
}

// A fresh block is a new ask: the human's mark and the old outcome
// die, and so does an annotation an agent already received (one nobody
// picked up stays, so it is still delivered).
fn rows_update_sql(a: &str, won: &str) -> String {
    format!(
    "WITH {a}, {won} UPDATE board_rows SET status = q.a_status, note = q.a_note, next_step = q.a_next,
        owner = q.a_owner, impact = q.a_impact, options = q.a_options, context = q.a_context,
        outcome = q.o_final,
        outcome_at = CASE WHEN board_rows.outcome IS q.o_final THEN board_rows.outcome_at
                          WHEN q.o_final = '' THEN NULL ELSE ?8 END,
        handled_at = CASE WHEN q.fresh THEN NULL ELSE board_rows.handled_at END,
        handled_by = CASE WHEN q.fresh THEN NULL ELSE board_rows.handled_by END,
        handled_seen_at = CASE WHEN q.fresh THEN NULL ELSE board_rows.handled_seen_at END,
        annotation = CASE WHEN q.fresh AND board_rows.annotation_seen_at IS NOT NULL THEN NULL
                          ELSE board_rows.annotation END,
        annotation_kind = CASE WHEN q.fresh AND board_rows.annotation_seen_at IS NOT NULL THEN NULL
                               ELSE board_rows.annotation_kind END,
        annotation_source = CASE WHEN q.fresh AND board_rows.annotation_seen_at IS NOT NULL THEN NULL
                                 ELSE board_rows.annotation_source END,
        annotated_by = CASE WHEN q.fresh AND board_rows.annotation_seen_at IS NOT NULL THEN NULL
                            ELSE board_rows.annotated_by END,
        annotated_at = CASE WHEN q.fresh AND board_rows.annotation_seen_at IS NOT NULL THEN NULL
                            ELSE board_rows.annotated_at END,
        annotation_seen_at = CASE WHEN q.fresh THEN NULL ELSE board_rows.annotation_seen_at END,
        response_open = CASE WHEN board_rows.annotation IS NOT NULL AND board_rows.annotation_seen_at IS NULL
                             THEN board_rows.response_open ELSE 0 END,
        revision = board_rows.revision + 1, updated_at = ?8
     FROM q WHERE board_rows.id = q.r_id AND q.changed;"
)
}

/// The board as the call leaves it, read back in the same call.
fn read_back_sql(shape: Shape, a: &str) -> String {
    if shape.create {
        read_back(N)
    } else {
        // The board this call won — or, when the write changes nothing
        // and every version matched, the board as it stands: a refresh is
        // a success, answered in the same call.
        let named = if shape.upsert {
            "(SELECT id FROM boards WHERE project = ?2 AND title = ?1)"
        } else {
            BOARD_REF
        };
        let ctes = format!("{a}, {}", plan(named, shape.by_ref));
        let unchanged = format!(
            "(SELECT id FROM boards WHERE id = {named} AND (?13 IS NULL OR revision = ?13)
                AND NOT EXISTS (SELECT 1 FROM q WHERE stale OR r_id IS NULL OR changed))"
        );
        read_back_of(&ctes, &format!("COALESCE({WON}, {unchanged})"))
    }
}

/// The rows given, as the JSON the call reads (`?12`): each with an id in
/// case it is new, its outcome trimmed, its options as the text stored.
fn rows_json(rows: &[RowInput]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            json!({
                "id": new_id(),
                "label": r.label,
                "revision": r.revision,
                "status": r.status.map(|s| s.as_str()),
                "note": r.note,
                "next_step": r.next_step,
                "owner": r.owner.map(|o| o.as_str()),
                "impact": r.impact,
                "options": r.options.as_ref().map(|o| serde_json::to_string(o).unwrap_or_else(|_| "[]".into())),
                "context": r.context,
                "outcome": r.outcome.as_deref().map(str::trim),
            })
        })
        .collect();
    serde_json::Value::Array(rows).to_string()
}

/// One call's parameters beyond the [`Head`].
struct Many {
    sql: &'static str,
    head: Head,
    rows: String,
    board_version: Option<i64>,
    agent: String,
    session: String,
    labels: String,
    created: bool,
}

impl Store {
    /// Run one of the calls above under SQLite's write turn: the board as
    /// it left it, or `None` when it did not win (on PostgreSQL, always).
    async fn many_call(&self, m: Many) -> Result<Option<BoardFull>> {
        self.write_lite(Arc::new(m), |turn, m, now| {
            Box::pin(async move {
                let q = m
                    .head
                    .bind(sqlx::query(m.sql), now)
                    .bind(&m.rows)
                    .bind(m.board_version)
                    .bind(&m.agent)
                    .bind(&m.session)
                    .bind(&m.labels)
                    .bind(new_id())
                    .bind(m.created);
                board_call(turn, q).await
            })
        })
        .await
    }

    /// `board_upsert` in one call (the board as it stands when the write
    /// changes nothing), or `None`: refused (the caller's older transaction
    /// then says why).
    pub(super) async fn board_upsert_call(&self, up: &BoardUpsert) -> Result<Option<BoardFull>> {
        let created = up.board_version.is_none();
        let who = Who {
            actor: &up.agent,
            channel: Channel::Agent,
        };
        let labels: Vec<&str> = up.rows.iter().map(|r| r.label.as_str()).collect();
        self.many_call(Many {
            sql: if created { &CREATE } else { &UPSERT },
            head: Head::new(&up.title, Some(&up.project), "", who),
            rows: rows_json(&up.rows),
            board_version: up.board_version,
            agent: up.agent.clone(),
            session: up.session.clone(),
            labels: json!(labels).to_string(),
            created,
        })
        .await
    }

    /// `board_row` (or, `by_ref`, the write of `board_outcome`, its row
    /// named by label or id) in one call, or `None` as for
    /// [`Store::board_upsert_call`].
    pub(super) async fn board_row_call(
        &self,
        w: &RowWrite,
        by_ref: bool,
    ) -> Result<Option<BoardFull>> {
        let who = Who {
            actor: &w.by,
            channel: Channel::Agent,
        };
        let head = Head::new(w.board.trim(), w.project.as_deref(), &w.row.label, who);
        self.many_call(Many {
            sql: if by_ref { &OUTCOME } else { &ROW },
            head,
            rows: rows_json(std::slice::from_ref(&w.row)),
            board_version: w.board_version,
            agent: String::new(),
            session: String::new(),
            labels: "[]".into(),
            created: false,
        })
        .await
    }
}
