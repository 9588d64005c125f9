//! Boards and rows (DESIGN §3): a project's named checklists whose `blocked`
//! rows wait on a person.
//!
//! The agent owns the step fields of a row (status, note, next step, owner,
//! impact, options, context, outcome) and writes them with CAS on the board's
//! `board_version` and the row's `revision`. A human owns the response
//! fields: an `annotation` (answer / clarify / decline, through the Inbox or
//! chat, with the asymmetric rule of §2) and `handled_at` ("I did my part").
//! Delivery to an agent is recorded in `annotation_seen_at` /
//! `handled_seen_at`; it is *not* an acknowledgement — a blocked row with a
//! response keeps coming back in [`Store::pending_rows`] until the agent
//! changes its status.
//!
//! Layout: this file holds the types and shared helpers; `write` the agent's
//! writes (upsert, row, advance, outcome, archive), `human` the human's
//! (annotate, handled), `read` the reads and delivery (get, pending,
//! unprocessed handoffs). It does not push anything to chat: followers of the
//! event log do.

mod human;
mod read;
mod write;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{Row as _, SqliteConnection};

use super::{Error, Result};

pub use human::{Annotate, Handled, RowChange};
pub use read::PendingRow;
pub use write::{Advance, Archived, BoardUpsert, NextStep, OutcomeWrite, RowInput, RowWrite};

/// Longest board title or row label, in characters.
pub const MAX_TITLE: usize = 120;
/// Longest note, next step, impact, annotation or outcome, in characters.
pub const MAX_TEXT: usize = 4000;
/// Longest context, in characters.
pub const MAX_CONTEXT: usize = 20_000;
/// Most options a row may offer.
pub const MAX_OPTIONS: usize = 4;
/// Most rows one upsert may write.
pub const MAX_ROWS: usize = 500;

/// A row's status. `blocked` means a human must act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RowStatus {
    /// Known and followed, nothing done yet.
    #[default]
    Tracked,
    /// Half done (counts 0.5 in progress).
    Partial,
    /// Missing: should exist and does not.
    Missing,
    /// Not applicable (left out of progress).
    Na,
    /// Done (counts 1 in progress).
    Done,
    /// Waiting on a human.
    Blocked,
}

impl RowStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Tracked => "tracked",
            RowStatus::Partial => "partial",
            RowStatus::Missing => "missing",
            RowStatus::Na => "na",
            RowStatus::Done => "done",
            RowStatus::Blocked => "blocked",
        }
    }
}

impl std::str::FromStr for RowStatus {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "tracked" => RowStatus::Tracked,
            "partial" => RowStatus::Partial,
            "missing" => RowStatus::Missing,
            "na" => RowStatus::Na,
            "done" => RowStatus::Done,
            "blocked" => RowStatus::Blocked,
            _ => {
                return Err(Error::Invalid(format!(
                    "`{s}` is not a row status: use tracked, partial, missing, na, done or blocked"
                )));
            }
        })
    }
}

/// Who must act on a blocked row: nobody named (`""`), a decision, a task, an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RowOwner {
    /// Not said.
    #[default]
    #[serde(rename = "")]
    None,
    /// A human must decide between options.
    Decision,
    /// A human must do something (create an account, record a demo).
    Task,
    /// A human must approve.
    Approval,
}

impl RowOwner {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RowOwner::None => "",
            RowOwner::Decision => "decision",
            RowOwner::Task => "task",
            RowOwner::Approval => "approval",
        }
    }
}

impl std::str::FromStr for RowOwner {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "" | "none" => RowOwner::None,
            "decision" => RowOwner::Decision,
            "task" => RowOwner::Task,
            "approval" => RowOwner::Approval,
            _ => {
                return Err(Error::Invalid(format!(
                    "`{s}` is not a row owner: use decision, task or approval"
                )));
            }
        })
    }
}

/// What a human's annotation means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationKind {
    /// An answer to the step.
    #[default]
    Answer,
    /// A correction: the earlier answer is corrected or the step needs rewording.
    Clarify,
    /// The human declines the step.
    Decline,
}

impl AnnotationKind {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AnnotationKind::Answer => "answer",
            AnnotationKind::Clarify => "clarify",
            AnnotationKind::Decline => "decline",
        }
    }
}

impl std::str::FromStr for AnnotationKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "answer" => AnnotationKind::Answer,
            "clarify" => AnnotationKind::Clarify,
            "decline" => AnnotationKind::Decline,
            _ => {
                return Err(Error::Invalid(format!(
                    "`{s}` is not an annotation kind: use answer, clarify or decline"
                )));
            }
        })
    }
}

/// Through which door a human responded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The web Inbox or `handoff board annotate`: always wins.
    #[default]
    Inbox,
    /// Chat (Telegram): only while no unclaimed annotation waits.
    Chat,
}

impl Source {
    /// The stored spelling (also the event channel).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Inbox => "inbox",
            Source::Chat => "chat",
        }
    }
}

impl std::str::FromStr for Source {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "inbox" => Ok(Source::Inbox),
            "chat" => Ok(Source::Chat),
            _ => Err(Error::Invalid(format!(
                "`{s}` is not a channel: use inbox or chat"
            ))),
        }
    }
}

/// One labelled choice a blocked row offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowOption {
    /// The choice, short.
    pub label: String,
    /// The trade-off shown beside it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The agent recommends this one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recommended: bool,
}

/// Progress of a board: done = 1, partial = 0.5, `na` left out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Progress {
    /// All rows.
    pub rows: i64,
    /// Rows that count (all but `na`).
    pub counted: i64,
    /// done + partial / 2.
    pub score: f64,
    /// Blocked rows.
    pub blocked: i64,
    /// score / counted in percent; `None` when no row counts (empty or all `na`).
    pub percent: Option<f64>,
}

impl Progress {
    /// Every counted row is done (and at least one counts).
    pub fn complete(&self) -> bool {
        self.counted > 0 && self.score >= self.counted as f64
    }
}

/// A board without its rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Board {
    /// Full id.
    pub id: String,
    /// Project it belongs to.
    pub project: String,
    /// Title, unique in the project.
    pub title: String,
    /// The board's CAS token; pass it back on writes.
    pub board_version: i64,
    /// When it was archived; `None` while active.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub archived_at: Option<i64>,
    /// Archived because progress reached 100 % (a later lowering write reactivates it).
    pub auto_archived: bool,
    /// Owning agent.
    pub agent: String,
    /// Owning session.
    pub session: String,
    /// Progress over its rows.
    pub progress: Progress,
    /// Created.
    #[serde(with = "crate::clock::rfc3339")]
    pub created_at: i64,
    /// Last changed.
    #[serde(with = "crate::clock::rfc3339")]
    pub updated_at: i64,
}

/// A board with all its rows, read from the database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardFull {
    /// The board.
    #[serde(flatten)]
    pub board: Board,
    /// Its rows in board order.
    pub rows: Vec<Row>,
}

impl BoardFull {
    /// The row labelled `label`.
    pub fn row(&self, label: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.label == label)
    }
}

/// One archived step of a row, kept in its `history` by `board_advance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Which step this was.
    pub action_version: i64,
    /// Status when archived.
    pub status: RowStatus,
    /// Note.
    pub note: String,
    /// Next step as asked.
    pub next_step: String,
    /// Owner.
    pub owner: RowOwner,
    /// Impact.
    pub impact: String,
    /// Options offered.
    pub options: Vec<RowOption>,
    /// Context.
    pub context: String,
    /// The human's annotation, if any.
    pub annotation: Option<String>,
    /// Its kind.
    pub annotation_kind: Option<AnnotationKind>,
    /// Its channel.
    pub annotation_source: Option<Source>,
    /// Who wrote it.
    pub annotated_by: Option<String>,
    /// When.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub annotated_at: Option<i64>,
    /// When an agent first received it.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub annotation_seen_at: Option<i64>,
    /// When the human marked it handled.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub handled_at: Option<i64>,
    /// Who marked it handled.
    pub handled_by: Option<String>,
    /// What the agent recorded as the result.
    pub outcome: String,
    /// When the step started.
    #[serde(with = "crate::clock::rfc3339")]
    pub started_at: i64,
    /// When it was archived.
    #[serde(with = "crate::clock::rfc3339")]
    pub ended_at: i64,
}

/// One row of a board, as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Full id.
    pub id: String,
    /// Board id.
    pub board_id: String,
    /// Label, unique in the board.
    pub label: String,
    /// Status.
    pub status: RowStatus,
    /// Note.
    pub note: String,
    /// What is asked next.
    pub next_step: String,
    /// Who must act.
    pub owner: RowOwner,
    /// What depends on it.
    pub impact: String,
    /// Choices offered.
    pub options: Vec<RowOption>,
    /// Long context.
    pub context: String,
    /// The agent's recorded result of the current step.
    pub outcome: String,
    /// When the outcome was stored.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub outcome_at: Option<i64>,
    /// The row's CAS token.
    pub revision: i64,
    /// Which step (bumped by advance).
    pub action_version: i64,
    /// When the current step started.
    #[serde(with = "crate::clock::rfc3339")]
    pub action_started_at: i64,
    /// Archived steps, oldest first.
    pub history: Vec<Step>,
    /// The human's annotation.
    pub annotation: Option<String>,
    /// Its kind.
    pub annotation_kind: Option<AnnotationKind>,
    /// Its channel.
    pub annotation_source: Option<Source>,
    /// Who wrote it.
    pub annotated_by: Option<String>,
    /// When.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub annotated_at: Option<i64>,
    /// When an agent first received it (delivery, not acknowledgement).
    #[serde(with = "crate::clock::rfc3339::option")]
    pub annotation_seen_at: Option<i64>,
    /// When the human marked their part done.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub handled_at: Option<i64>,
    /// Who did.
    pub handled_by: Option<String>,
    /// When an agent first received the mark.
    #[serde(with = "crate::clock::rfc3339::option")]
    pub handled_seen_at: Option<i64>,
    /// Order in the board.
    pub position: i64,
    /// Created.
    #[serde(with = "crate::clock::rfc3339")]
    pub created_at: i64,
    /// Last changed.
    #[serde(with = "crate::clock::rfc3339")]
    pub updated_at: i64,
}

/// The current revision of a row that did not match (`None`: no such row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaleRow {
    /// Row label.
    pub label: String,
    /// Its current revision, or `None` if the row does not exist.
    pub revision: Option<i64>,
}

/// Why a board write was refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "refused", rename_all = "snake_case")]
pub enum Refusal {
    /// A version did not match: re-read and retry. Carries the current values.
    Stale {
        /// The board's current version (0 if the board does not exist).
        board_version: i64,
        /// Every mismatched row with its current revision.
        rows: Vec<StaleRow>,
    },
    /// No such board or row.
    NotFound {
        /// What was looked for, in words.
        what: String,
    },
    /// A blank text where one is required.
    Empty,
    /// A chat annotation while an unclaimed one waits: here is the waiting one.
    UnreadAnswer {
        /// The waiting annotation.
        annotation: String,
        /// Its kind.
        kind: Option<AnnotationKind>,
        /// Its channel.
        source: Option<Source>,
        /// Who wrote it.
        by: Option<String>,
    },
    /// The row is not blocked, so there is nothing to mark handled.
    NotBlocked {
        /// Its current status.
        status: RowStatus,
    },
    /// The board is archived.
    Archived,
    /// An agent already received this response; it cannot be taken back.
    AlreadyDelivered,
    /// A human marked the row handled: leaving `blocked` needs a non-empty outcome.
    OutcomeRequired {
        /// The row.
        label: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Stale {
                board_version,
                rows,
            } => {
                write!(f, "stale: the board is at version {board_version}")?;
                for r in rows {
                    match r.revision {
                        Some(rev) => write!(f, ", row `{}` at revision {rev}", r.label)?,
                        None => write!(f, ", row `{}` does not exist", r.label)?,
                    }
                }
                write!(f, "; re-read with `handoff board get` and retry")
            }
            Refusal::NotFound { what } => write!(f, "{what} not found"),
            Refusal::Empty => write!(f, "the text is empty"),
            Refusal::UnreadAnswer {
                annotation, source, ..
            } => write!(
                f,
                "already answered in the {} and not yet picked up: {annotation}",
                source.map_or("inbox", Source::as_str)
            ),
            Refusal::NotBlocked { status } => {
                write!(f, "the row is {}, not blocked", status.as_str())
            }
            Refusal::Archived => write!(f, "the board is archived"),
            Refusal::AlreadyDelivered => write!(
                f,
                "an agent already received this response; it can no longer be taken back"
            ),
            Refusal::OutcomeRequired { label } => write!(
                f,
                "row `{label}` was marked handled: store a non-empty outcome to move it out of blocked"
            ),
        }
    }
}

/// A store result that may be a typed refusal.
pub type Decided<T> = std::result::Result<T, Refusal>;

fn not_found(what: impl Into<String>) -> Refusal {
    Refusal::NotFound { what: what.into() }
}

// ---------------------------------------------------------------------------
// Validation.

fn check_len(what: &str, s: &str, max: usize) -> Result<()> {
    let n = s.chars().count();
    if n > max {
        return Err(Error::Invalid(format!(
            "{what} is {n} characters long; the limit is {max}"
        )));
    }
    Ok(())
}

fn check_name(what: &str, s: &str) -> Result<()> {
    if s.trim().is_empty() {
        return Err(Error::Invalid(format!("{what} must not be empty")));
    }
    check_len(what, s, MAX_TITLE)
}

fn check_options(options: &[RowOption]) -> Result<()> {
    if options.len() > MAX_OPTIONS {
        return Err(Error::Invalid(format!(
            "{} options given; a row offers at most {MAX_OPTIONS}",
            options.len()
        )));
    }
    for o in options {
        check_name("an option label", &o.label)?;
        check_len("an option detail", &o.detail, MAX_TEXT)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Row decoding and lookups shared by the submodules.

fn parse_opt<T: std::str::FromStr<Err = Error>>(s: Option<String>) -> Result<Option<T>> {
    s.map(|s| s.parse().map_err(|e: Error| Error::Corrupt(e.to_string())))
        .transpose()
}

fn row_from(r: &sqlx::sqlite::SqliteRow) -> Result<Row> {
    let corrupt = |e: Error| Error::Corrupt(e.to_string());
    let options: String = r.try_get("options")?;
    let history: String = r.try_get("history")?;
    Ok(Row {
        id: r.try_get("id")?,
        board_id: r.try_get("board_id")?,
        label: r.try_get("label")?,
        status: r.try_get::<String, _>("status")?.parse().map_err(corrupt)?,
        note: r.try_get("note")?,
        next_step: r.try_get("next_step")?,
        owner: r.try_get::<String, _>("owner")?.parse().map_err(corrupt)?,
        impact: r.try_get("impact")?,
        options: serde_json::from_str(&options)
            .map_err(|e| Error::Corrupt(format!("row options: {e}")))?,
        context: r.try_get("context")?,
        outcome: r.try_get("outcome")?,
        outcome_at: r.try_get("outcome_at")?,
        revision: r.try_get("revision")?,
        action_version: r.try_get("action_version")?,
        action_started_at: r.try_get("action_started_at")?,
        history: serde_json::from_str(&history)
            .map_err(|e| Error::Corrupt(format!("row history: {e}")))?,
        annotation: r.try_get("annotation")?,
        annotation_kind: parse_opt(r.try_get("annotation_kind")?)?,
        annotation_source: parse_opt(r.try_get("annotation_source")?)?,
        annotated_by: r.try_get("annotated_by")?,
        annotated_at: r.try_get("annotated_at")?,
        annotation_seen_at: r.try_get("annotation_seen_at")?,
        handled_at: r.try_get("handled_at")?,
        handled_by: r.try_get("handled_by")?,
        handled_seen_at: r.try_get("handled_seen_at")?,
        position: r.try_get("position")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// The board columns plus progress aggregated over its rows.
const BOARD_SELECT: &str = "SELECT b.*,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id) AS n_rows,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id AND r.status <> 'na') AS n_counted,
    (SELECT COALESCE(SUM(CASE r.status WHEN 'done' THEN 2 WHEN 'partial' THEN 1 ELSE 0 END), 0)
       FROM board_rows r WHERE r.board_id = b.id) AS halves,
    (SELECT COUNT(*) FROM board_rows r WHERE r.board_id = b.id AND r.status = 'blocked') AS n_blocked
  FROM boards b";

fn board_from(r: &sqlx::sqlite::SqliteRow) -> Result<Board> {
    let rows: i64 = r.try_get("n_rows")?;
    let counted: i64 = r.try_get("n_counted")?;
    let halves: i64 = r.try_get("halves")?;
    let score = halves as f64 / 2.0;
    Ok(Board {
        id: r.try_get("id")?,
        project: r.try_get("project")?,
        title: r.try_get("title")?,
        board_version: r.try_get("revision")?,
        archived_at: r.try_get("archived_at")?,
        auto_archived: r.try_get::<i64, _>("auto_archived")? != 0,
        agent: r.try_get("agent")?,
        session: r.try_get("session")?,
        progress: Progress {
            rows,
            counted,
            score,
            blocked: r.try_get("n_blocked")?,
            percent: (counted > 0).then(|| score * 100.0 / counted as f64),
        },
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

async fn load_board(conn: &mut SqliteConnection, id: &str) -> Result<Option<Board>> {
    let sql = format!("{BOARD_SELECT} WHERE b.id = ?");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(board_from).transpose()
}

async fn load_rows(conn: &mut SqliteConnection, board_id: &str) -> Result<Vec<Row>> {
    let rows = sqlx::query("SELECT * FROM board_rows WHERE board_id = ? ORDER BY position, id")
        .bind(board_id)
        .fetch_all(conn)
        .await?;
    rows.iter().map(row_from).collect()
}

async fn load_full(conn: &mut SqliteConnection, id: &str) -> Result<Option<BoardFull>> {
    let Some(board) = load_board(conn, id).await? else {
        return Ok(None);
    };
    let rows = load_rows(conn, id).await?;
    Ok(Some(BoardFull { board, rows }))
}

async fn load_row(conn: &mut SqliteConnection, row_id: &str) -> Result<Option<Row>> {
    let row = sqlx::query("SELECT * FROM board_rows WHERE id = ?")
        .bind(row_id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(row_from).transpose()
}

/// Find a board by full id, by title in `project`, by a unique id suffix
/// (the short id), or by a title unique across projects.
async fn resolve_board(
    conn: &mut SqliteConnection,
    reference: &str,
    project: Option<&str>,
) -> Result<Decided<String>> {
    let reference = reference.trim();
    if reference.is_empty() {
        return Err(Error::Invalid(
            "no board given: pass its id, short id or title".into(),
        ));
    }
    if let Some(id) = sqlx::query_scalar::<_, String>("SELECT id FROM boards WHERE id = ?")
        .bind(reference)
        .fetch_optional(&mut *conn)
        .await?
    {
        return Ok(Ok(id));
    }
    if let Some(p) = project {
        if let Some(id) =
            sqlx::query_scalar::<_, String>("SELECT id FROM boards WHERE project = ? AND title = ?")
                .bind(p)
                .bind(reference)
                .fetch_optional(&mut *conn)
                .await?
        {
            return Ok(Ok(id));
        }
    }
    let by_suffix: Vec<String> =
        if reference.len() >= 4 && reference.bytes().all(|b| b.is_ascii_hexdigit()) {
            sqlx::query_scalar(
                "SELECT id FROM boards WHERE id LIKE '%' || ? AND (? IS NULL OR project = ?)",
            )
            .bind(reference.to_ascii_lowercase())
            .bind(project)
            .bind(project)
            .fetch_all(&mut *conn)
            .await?
        } else {
            Vec::new()
        };
    let found = if by_suffix.is_empty() && project.is_none() {
        sqlx::query_scalar("SELECT id FROM boards WHERE title = ?")
            .bind(reference)
            .fetch_all(&mut *conn)
            .await?
    } else {
        by_suffix
    };
    match found.len() {
        0 => Ok(Err(not_found(match project {
            Some(p) => format!("board `{reference}` in project `{p}`"),
            None => format!("board `{reference}`"),
        }))),
        1 => Ok(Ok(found.into_iter().next().unwrap_or_default())),
        n => Err(Error::Invalid(format!(
            "`{reference}` matches {n} boards: use the full id, or the title with --project"
        ))),
    }
}

/// Find a row of `board_id` by label, else by full id or unique id suffix.
async fn resolve_row(
    conn: &mut SqliteConnection,
    board_id: &str,
    reference: &str,
) -> Result<Decided<String>> {
    if let Some(id) = sqlx::query_scalar::<_, String>(
        "SELECT id FROM board_rows WHERE board_id = ? AND label = ?",
    )
    .bind(board_id)
    .bind(reference)
    .fetch_optional(&mut *conn)
    .await?
    {
        return Ok(Ok(id));
    }
    let found: Vec<String> =
        if reference.len() >= 4 && reference.bytes().all(|b| b.is_ascii_hexdigit()) {
            sqlx::query_scalar("SELECT id FROM board_rows WHERE board_id = ? AND id LIKE '%' || ?")
                .bind(board_id)
                .bind(reference.to_ascii_lowercase())
                .fetch_all(&mut *conn)
                .await?
        } else {
            Vec::new()
        };
    match found.len() {
        0 => Ok(Err(not_found(format!("row `{reference}`")))),
        1 => Ok(Ok(found.into_iter().next().unwrap_or_default())),
        n => Err(Error::Invalid(format!(
            "`{reference}` matches {n} rows: use the label or the full id"
        ))),
    }
}

/// Resolve board and row together.
async fn resolve(
    conn: &mut SqliteConnection,
    board: &str,
    project: Option<&str>,
    label: &str,
) -> Result<Decided<(String, String)>> {
    let board_id = match resolve_board(conn, board, project).await? {
        Ok(id) => id,
        Err(r) => return Ok(Err(r)),
    };
    Ok(resolve_row(conn, &board_id, label)
        .await?
        .map(|row_id| (board_id, row_id)))
}

/// Event payload common to row events.
fn row_payload(board: &Board, row: &Row, extra: Value) -> Value {
    let mut v = serde_json::json!({
        "board_id": board.id,
        "board_title": board.title,
        "board_version": board.board_version,
        "label": row.label,
        "status": row.status,
        "revision": row.revision,
        "action_version": row.action_version,
    });
    if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), extra) {
        obj.extend(extra);
    }
    v
}

/// Who caused a change and through which door, for events.
#[derive(Debug, Clone, Copy)]
struct Who<'a> {
    actor: &'a str,
    channel: &'a str,
}

/// Record that the board changed: bump its version. Called inside the
/// transaction that already decided the write.
async fn bump_version(conn: &mut SqliteConnection, now: i64, board_id: &str) -> Result<Board> {
    sqlx::query("UPDATE boards SET revision = revision + 1, updated_at = ? WHERE id = ?")
        .bind(now)
        .bind(board_id)
        .execute(&mut *conn)
        .await?;
    load_board(conn, board_id)
        .await?
        .ok_or_else(|| Error::Corrupt(format!("board {board_id} vanished mid-transaction")))
}

/// After an agent's write: auto-archive the board at 100 % or reactivate an
/// archived board that is no longer complete, appending `board.archived` /
/// `board.reactivated`. A board archived by hand is reactivated too: the
/// agent wrote to it again. Empty and all-`na` boards never complete.
async fn settle(
    conn: &mut SqliteConnection,
    now: i64,
    board: Board,
    who: Who<'_>,
) -> Result<Board> {
    let complete = board.progress.complete();
    let kind = if complete && board.archived_at.is_none() {
        // Why guarded: only an active board auto-archives.
        sqlx::query(
            "UPDATE boards SET archived_at = ?, auto_archived = 1 WHERE id = ? AND archived_at IS NULL",
        )
        .bind(now)
        .bind(&board.id)
        .execute(&mut *conn)
        .await?;
        "board.archived"
    } else if !complete && board.archived_at.is_some() {
        // Why guarded: reactivate only what is archived now.
        sqlx::query(
            "UPDATE boards SET archived_at = NULL, auto_archived = 0 WHERE id = ? AND archived_at IS NOT NULL",
        )
        .bind(&board.id)
        .execute(&mut *conn)
        .await?;
        "board.reactivated"
    } else {
        return Ok(board);
    };
    super::events::append(
        conn,
        now,
        &super::NewEvent {
            kind,
            entity_kind: "board",
            entity_id: &board.id,
            actor: who.actor,
            channel: who.channel,
            project: &board.project,
            session: &board.session,
            payload: serde_json::json!({
                "title": board.title,
                "board_version": board.board_version,
                "auto": true,
                "progress": board.progress.percent,
            }),
        },
    )
    .await?;
    load_board(conn, &board.id)
        .await?
        .ok_or_else(|| Error::Corrupt(format!("board {} vanished mid-transaction", board.id)))
}

/// Append an event about `row` of `board`.
async fn row_event(
    conn: &mut SqliteConnection,
    now: i64,
    kind: &str,
    board: &Board,
    row: &Row,
    who: Who<'_>,
    extra: Value,
) -> Result<i64> {
    super::events::append(
        conn,
        now,
        &super::NewEvent {
            kind,
            entity_kind: "row",
            entity_id: &row.id,
            actor: who.actor,
            channel: who.channel,
            project: &board.project,
            session: &board.session,
            payload: row_payload(board, row, extra),
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_done_partial_and_skips_na() {
        let p = |counted, score| Progress {
            rows: counted,
            counted,
            score,
            blocked: 0,
            percent: None,
        };
        assert!(p(2, 2.0).complete());
        assert!(!p(2, 1.5).complete());
        assert!(!p(0, 0.0).complete(), "all-na or empty never completes");
    }

    #[test]
    fn enums_round_trip_their_spelling() {
        for s in ["tracked", "partial", "missing", "na", "done", "blocked"] {
            assert_eq!(s.parse::<RowStatus>().unwrap().as_str(), s);
        }
        for s in ["", "decision", "task", "approval"] {
            assert_eq!(s.parse::<RowOwner>().unwrap().as_str(), s);
        }
        assert!("later".parse::<RowStatus>().is_err());
        assert_eq!(
            serde_json::to_string(&RowOwner::None).unwrap(),
            "\"\"",
            "no owner is the empty string"
        );
    }

    #[test]
    fn stale_message_names_every_row() {
        let r = Refusal::Stale {
            board_version: 4,
            rows: vec![
                StaleRow {
                    label: "a".into(),
                    revision: Some(2),
                },
                StaleRow {
                    label: "b".into(),
                    revision: None,
                },
            ],
        };
        let m = r.to_string();
        assert!(m.contains("version 4") && m.contains("`a` at revision 2"));
        assert!(m.contains("`b` does not exist") && m.contains("handoff board get"));
    }
}
