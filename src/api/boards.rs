//! Board routes. Agent side: upsert a board, write one row, advance a row
//! to its next step, store a step's outcome; reads for everyone. Human
//! side: annotate a row (the Inbox channel) and mark it handled.
//!
//! `{board}` is a board id, short id or title (a title needs `project`, or
//! a project-scoped token). The board is looked up first to apply the
//! token's scope (a foreign board is 404), then the write names it by id;
//! the store's version checks decide every race.

use axum::extract::Path;
use serde::Deserialize;

use super::auth::Caller;
use super::error::ApiResult;
use super::input::{Body, Ctx, NAME, Name, Params};
use super::page::{Paged, Paging, list_query};
use super::questions::wrote;
use crate::shared::Shared;
use crate::store::boards::{
    Advance, Annotate, AnnotationKind, Board, BoardFull, BoardUpsert, Channel, Handled, NextStep,
    OutcomeWrite, PendingRow, RowChange, RowInput, RowStatus, RowWrite,
};

/// The board `board` if the caller may see it.
async fn visible(
    s: &Shared,
    c: &Caller,
    board: &str,
    project: Option<String>,
) -> ApiResult<BoardFull> {
    let project = c.filter(project)?;
    Ok(c.ops(s).read_board(board, project.as_deref()).await??)
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpsertBody {
    #[serde(default)]
    project: Name,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    title: String,
    board_version: Option<i64>,
    #[serde(default)]
    agent: Name,
    #[serde(default)]
    session: Name,
    #[serde(default)]
    rows: Vec<RowInput>,
}

/// `PUT /v1/boards`: create or update a board and some rows, all or nothing
/// (409 `stale` carries the current versions).
pub(crate) async fn upsert(
    Ctx { s, c }: Ctx,
    Body(b): Body<UpsertBody>,
) -> ApiResult<axum::Json<BoardFull>> {
    let up = BoardUpsert {
        project: c.write_project(&b.project.0)?,
        title: b.title,
        board_version: b.board_version,
        agent: c.agent_or(&s, b.agent.0).await?,
        session: b.session.0,
        rows: b.rows,
    };
    let out = c.ops(&s).upsert_board(&up).await?;
    wrote(&s);
    Ok(axum::Json(out?))
}

list_query! {
    ListQuery {
        project: Option<String>,
        #[serde(default)]
        archived: bool,
    }
}

/// `GET /v1/boards?project&archived&limit&after`: boards with progress,
/// newest first, paged.
pub(crate) async fn list(
    Ctx { s, c }: Ctx,
    Params(q): Params<ListQuery>,
) -> ApiResult<Paged<Board>> {
    let project = c.filter(q.project.clone())?;
    let all = c
        .ops(&s)
        .list_boards(project.as_deref(), q.archived)
        .await?;
    q.page(all, |b| b.id.clone())
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetQuery {
    project: Option<String>,
}

/// `GET /v1/boards/{board}?project`: one board with all its rows.
pub(crate) async fn get(
    Ctx { s, c }: Ctx,
    Path(board): Path<String>,
    Params(q): Params<GetQuery>,
) -> ApiResult<axum::Json<BoardFull>> {
    Ok(axum::Json(visible(&s, &c, &board, q.project).await?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RowBody {
    project: Option<String>,
    board_version: Option<i64>,
    row: RowInput,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/boards/{board}/rows`: create one row, or change it with its `revision`.
pub(crate) async fn row(
    Ctx { s, c }: Ctx,
    Path(board): Path<String>,
    Body(b): Body<RowBody>,
) -> ApiResult<axum::Json<BoardFull>> {
    let full = visible(&s, &c, &board, b.project).await?;
    let w = RowWrite {
        board: full.board.id,
        project: None,
        board_version: b.board_version,
        row: b.row,
        by: c.actor(b.by.as_deref())?,
    };
    let out = c.ops(&s).write_row(&w).await?;
    wrote(&s);
    Ok(axum::Json(out?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AdvanceBody {
    project: Option<String>,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    label: String,
    expected_revision: i64,
    board_version: i64,
    outcome: Option<String>,
    next: NextStep,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/boards/{board}/advance`: archive a row's step, install the next (blocked).
pub(crate) async fn advance(
    Ctx { s, c }: Ctx,
    Path(board): Path<String>,
    Body(b): Body<AdvanceBody>,
) -> ApiResult<axum::Json<BoardFull>> {
    let full = visible(&s, &c, &board, b.project).await?;
    let a = Advance {
        board: full.board.id,
        project: None,
        label: b.label,
        expected_revision: b.expected_revision,
        board_version: b.board_version,
        outcome: b.outcome,
        next: b.next,
        by: c.actor(b.by.as_deref())?,
    };
    let out = c.ops(&s).advance_row(&a).await?;
    wrote(&s);
    Ok(axum::Json(out?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutcomeBody {
    project: Option<String>,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    label: String,
    expected_revision: i64,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    outcome: String,
    status: Option<RowStatus>,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/boards/{board}/outcome`: store a step's result and leave `blocked`.
pub(crate) async fn outcome(
    Ctx { s, c }: Ctx,
    Path(board): Path<String>,
    Body(b): Body<OutcomeBody>,
) -> ApiResult<axum::Json<BoardFull>> {
    let full = visible(&s, &c, &board, b.project).await?;
    let w = OutcomeWrite {
        board: full.board.id,
        project: None,
        label: b.label,
        expected_revision: b.expected_revision,
        outcome: b.outcome,
        status: b.status,
        by: c.actor(b.by.as_deref())?,
    };
    let out = c.ops(&s).store_outcome(&w).await?;
    wrote(&s);
    Ok(axum::Json(out?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnnotateBody {
    project: Option<String>,
    #[serde(default)]
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    text: String,
    #[serde(default)]
    kind: AnnotationKind,
    expected_revision: Option<i64>,
    action_version: Option<i64>,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/boards/{board}/rows/{label}/annotate`: a human's answer on a
/// row through the Inbox channel (always wins; blank clears an unpicked one).
pub(crate) async fn annotate(
    Ctx { s, c }: Ctx,
    Path((board, label)): Path<(String, String)>,
    Body(b): Body<AnnotateBody>,
) -> ApiResult<axum::Json<RowChange>> {
    let full = visible(&s, &c, &board, b.project).await?;
    let a = Annotate {
        board: full.board.id,
        project: None,
        label,
        text: b.text,
        kind: b.kind,
        source: Channel::Inbox,
        by: c.actor(b.by.as_deref())?,
        expected_revision: b.expected_revision,
        action_version: b.action_version,
    };
    let out = c.ops(&s).annotate_row(&a).await?;
    wrote(&s);
    Ok(axum::Json(out?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HandledBody {
    project: Option<String>,
    expected_revision: Option<i64>,
    /// Take the mark back instead (only while no agent received it).
    #[serde(default)]
    clear: bool,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/boards/{board}/rows/{label}/handled`: "I did my part" (or,
/// with `clear`, take it back). The row stays blocked until the agent
/// stores an outcome.
pub(crate) async fn handled(
    Ctx { s, c }: Ctx,
    Path((board, label)): Path<(String, String)>,
    Body(b): Body<HandledBody>,
) -> ApiResult<axum::Json<RowChange>> {
    let full = visible(&s, &c, &board, b.project).await?;
    let h = Handled {
        board: full.board.id,
        project: None,
        label,
        source: Channel::Inbox,
        by: c.actor(b.by.as_deref())?,
        expected_revision: b.expected_revision,
    };
    let out = c.ops(&s).mark_handled(&h, b.clear).await?;
    wrote(&s);
    Ok(axum::Json(out?))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArchiveBody {
    project: Option<String>,
    board_version: i64,
    #[schemars(regex(pattern = NAME))]
    by: Option<String>,
}

/// `POST /v1/boards/{board}/archive`: archive a board at the version the
/// caller read (a later agent write reactivates it).
pub(crate) async fn archive(
    Ctx { s, c }: Ctx,
    Path(board): Path<String>,
    Body(b): Body<ArchiveBody>,
) -> ApiResult<axum::Json<Board>> {
    let full = visible(&s, &c, &board, b.project).await?;
    let by = c.actor(b.by.as_deref())?;
    let out = c
        .ops(&s)
        .archive_board(&full.board.id, None, b.board_version, &by)
        .await?;
    wrote(&s);
    Ok(axum::Json(out?))
}

list_query! {
    HandoffsQuery {
        project: Option<String>,
    }
}

/// `GET /v1/handoffs?project&limit&after`: rows a human marked handled
/// whose outcome no agent has stored yet, paged (reads only; nothing is marked).
pub(crate) async fn handoffs(
    Ctx { s, c }: Ctx,
    Params(q): Params<HandoffsQuery>,
) -> ApiResult<Paged<PendingRow>> {
    let project = c.filter(q.project.clone())?;
    let all = c.ops(&s).handoffs(project.as_deref()).await?;
    q.page(all, |p| p.row.id.clone())
}
