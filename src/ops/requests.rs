//! The values the agent-side operations take: plain JSON-friendly structs
//! (`deny_unknown_fields`, serializable both ways, with a JSON Schema) so the
//! MCP server, the CLI and a later HTTP client all send the same thing.
//!
//! Fields a caller usually leaves to its environment (project, agent,
//! session, executor owner) are optional here; the front end (e.g. the MCP
//! server, from `HANDOFF_PROJECT` / `HANDOFF_AGENT` / `HANDOFF_SESSION`)
//! fills them before calling [`super::Ops`]. These types hold no handles or
//! closures: everything here can cross HTTP.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest bounded wait, in seconds (10 minutes).
pub const MAX_WAIT_SECONDS: u64 = 600;

/// One labelled choice offered with a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoiceSpec {
    /// What the button says (≤ 64 characters, unique within the question).
    pub label: String,
    /// Your suggestion; at most one option may carry it.
    #[serde(default)]
    pub recommended: bool,
}

impl From<ChoiceSpec> for crate::store::questions::QuestionOption {
    fn from(o: ChoiceSpec) -> Self {
        crate::store::questions::QuestionOption {
            label: o.label,
            recommended: o.recommended,
        }
    }
}

/// Flag a question for a human (`ask`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// The question, one line (≤ 120 characters).
    pub title: String,
    /// One more line of detail (≤ 500 characters).
    #[serde(default)]
    pub detail: String,
    /// Long context the human may need (≤ 64 KiB).
    #[serde(default)]
    pub context: String,
    /// 2–4 labelled choices (optional).
    #[serde(default)]
    pub options: Vec<ChoiceSpec>,
    /// Stable key for this question within the project. Asking again with the
    /// same key while it is open updates it in place (no duplicate).
    #[serde(default)]
    pub key: Option<String>,
    /// Project [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
    /// Agent name [default: the server's agent].
    #[serde(default)]
    pub agent: Option<String>,
    /// Agent session to wake when answered [default: the server's session].
    #[serde(default)]
    pub session: Option<String>,
    /// Block up to this many seconds (≤ 600) for a reply, and pick it up.
    /// 0 or absent: return at once.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// Collect the replies waiting for the agent (`pending`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PendingRequest {
    /// Only this project [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
    /// Only this session [default: the server's session, if it has one].
    #[serde(default)]
    pub session: Option<String>,
    /// Only replies not delivered before (default false: delivered replies on
    /// open questions come back until you resolve them).
    #[serde(default)]
    pub new_only: bool,
    /// Who picks up (recorded in the event log) [default: the agent name].
    #[serde(default)]
    pub by: Option<String>,
}

/// The agent records an answer the human gave it directly (`answer`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// Question id or its 8-character short id.
    pub id: String,
    /// What the human told you, as you will act on it.
    pub text: String,
    /// `answer` (default), `clarify` or `decline`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Who answered [default: the agent name].
    #[serde(default)]
    pub by: Option<String>,
    /// Refuse unless the question is still at this revision.
    #[serde(default)]
    pub revision: Option<i64>,
}

/// Close a question with what came of it (`resolve`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// Question id or its 8-character short id.
    pub id: String,
    /// What was decided or done (required).
    pub outcome: String,
    /// Who resolves [default: the agent name].
    #[serde(default)]
    pub by: Option<String>,
}

/// One choice a blocked row offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowChoice {
    /// The choice, short.
    pub label: String,
    /// The trade-off shown beside it.
    #[serde(default)]
    pub detail: String,
    /// You recommend this one.
    #[serde(default)]
    pub recommended: bool,
}

/// One row as the agent writes it. Omitted fields keep their stored value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    /// Label, unique in the board.
    pub label: String,
    /// The row's current `revision` (required for an existing row, absent for a new one).
    #[serde(default)]
    pub revision: Option<i64>,
    /// tracked, partial, missing, na, done or blocked (blocked = a human must act).
    #[serde(default)]
    pub status: Option<String>,
    /// A line shown under the label (what is going on in this row).
    #[serde(default)]
    pub note: Option<String>,
    /// What is asked of the human next (for blocked rows).
    #[serde(default)]
    pub next_step: Option<String>,
    /// Who must act: decision, task or approval.
    #[serde(default)]
    pub owner: Option<String>,
    /// What depends on it.
    #[serde(default)]
    pub impact: Option<String>,
    /// Choices offered (at most 4).
    #[serde(default)]
    pub options: Option<Vec<RowChoice>>,
    /// Longer background for the human, shown collapsed (up to 20,000 characters).
    #[serde(default)]
    pub context: Option<String>,
    /// The result of the current step (required to leave `blocked` once a human marked it handled).
    #[serde(default)]
    pub outcome: Option<String>,
}

/// Create or update a board and some of its rows, all or nothing (`board_upsert`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoardUpsertRequest {
    /// Board title, unique in the project.
    pub title: String,
    /// Project [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
    /// The board's current `board_version`; omit only to create a new board.
    #[serde(default)]
    pub board_version: Option<i64>,
    /// Owning agent [default: the server's agent].
    #[serde(default)]
    pub agent: Option<String>,
    /// Owning session [default: the server's session].
    #[serde(default)]
    pub session: Option<String>,
    /// Rows to create or change; rows not named are left alone.
    #[serde(default)]
    pub rows: Vec<RowSpec>,
}

/// Write one row (`board_row`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoardRowRequest {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
    /// The board's current `board_version` (optional: the row revision is always checked).
    #[serde(default)]
    pub board_version: Option<i64>,
    /// The row; its `revision` is the CAS token.
    pub row: RowSpec,
    /// Who writes [default: the agent name].
    #[serde(default)]
    pub by: Option<String>,
}

/// Finish a row's current step and install the next (blocked) one (`board_advance`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoardAdvanceRequest {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
    /// The row's label (unique in its board).
    pub label: String,
    /// The row's current `revision` (from board_get).
    pub revision: i64,
    /// The board's current `board_version` (from board_get).
    pub board_version: i64,
    /// Outcome of the step being finished (archived with it).
    #[serde(default)]
    pub outcome: Option<String>,
    /// What is asked of the human now (required).
    pub next_step: String,
    /// Note for the new step.
    #[serde(default)]
    pub note: String,
    /// Who must act: decision, task or approval.
    #[serde(default)]
    pub owner: Option<String>,
    /// What depends on it.
    #[serde(default)]
    pub impact: String,
    /// Choices offered (at most 4).
    #[serde(default)]
    pub options: Vec<RowChoice>,
    /// Longer background for the human, shown collapsed (up to 20,000 characters).
    #[serde(default)]
    pub context: String,
    /// Who advances [default: the agent name].
    #[serde(default)]
    pub by: Option<String>,
}

/// Read a board with all its rows and their current versions (`board_get`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoardGetRequest {
    /// Board id, short id or title.
    pub board: String,
    /// Project, to find the board by title [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
}

/// Propose an action that must be approved before it runs (`propose_action`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeRequest {
    /// What sort of action, e.g. `email.send`, `deploy`.
    pub kind: String,
    /// One line for the person deciding.
    pub summary: String,
    /// The arguments, a JSON object (exactly what will run).
    #[serde(default)]
    pub args: Option<Value>,
    /// Live actions with the same key are the same action (same payload:
    /// the existing one is returned; different payload: refused).
    #[serde(default)]
    pub dedup_key: Option<String>,
    /// Decisions are refused after this long, e.g. `30m`, `24h`.
    #[serde(default)]
    pub ttl: Option<String>,
    /// Distinct approvals needed (default 1).
    #[serde(default)]
    pub approvals: Option<i64>,
    /// What expiry turns it into: `expire` (default) or `reject`.
    #[serde(default)]
    pub on_expire: Option<String>,
    /// Project [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
    /// Session woken on decisions [default: the server's session].
    #[serde(default)]
    pub session: Option<String>,
    /// Proposer name [default: the agent name].
    #[serde(default)]
    pub proposer: Option<String>,
}

/// Read an action's status, optionally waiting for a decision (`action_status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionStatusRequest {
    /// Action id or its 8-character short id.
    pub id: String,
    /// Wait up to this many seconds (≤ 600) until `until` holds. 0 or absent: read at once.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
    /// What to wait for: `decided` (default: no longer pending) or `settled`
    /// (executed, failed, unknown, rejected or expired).
    #[serde(default)]
    pub until: Option<String>,
}

/// Claim an approved action before running it (`claim_action`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    /// Action id or its 8-character short id.
    pub id: String,
    /// Executor id; pass the same to complete_action [default: the server's session or agent].
    #[serde(default)]
    pub owner: Option<String>,
    /// How long the claim holds, in seconds (default 300).
    #[serde(default)]
    pub lease_seconds: Option<u64>,
}

/// Report how a claimed action's run ended (`complete_action`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRequest {
    /// Action id or its 8-character short id.
    pub id: String,
    /// True: it ran and did what it should (executed). False: it failed.
    pub success: bool,
    /// What the run produced (any JSON).
    #[serde(default)]
    pub result: Option<Value>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The executor id used to claim [default: the server's session or agent].
    #[serde(default)]
    pub owner: Option<String>,
}

/// Save the agent's state (`checkpoint`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointRequest {
    /// The session's current revision (from resume; 0 for a session never checkpointed or registered).
    pub revision: i64,
    /// The state to keep (any JSON, ≤ 1 MiB).
    pub state: Value,
    /// Session id [default: the server's session].
    #[serde(default)]
    pub session: Option<String>,
    /// Agent name, used if the session must be registered first [default: the server's agent].
    #[serde(default)]
    pub agent: Option<String>,
    /// Project, used if the session must be registered first [default: the server's project].
    #[serde(default)]
    pub project: Option<String>,
}

/// Record a tool call in the execution ledger (`ledger_record`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerRecordRequest {
    /// Your idempotency key for this call (the same for its start and its end).
    pub event_id: String,
    /// `started` (before the call runs), `completed` or `failed` (after).
    pub phase: String,
    /// Tool name (for `started`).
    #[serde(default)]
    pub tool: Option<String>,
    /// The call's input (for `started`).
    #[serde(default)]
    pub payload: Option<Value>,
    /// Safe to run again if interrupted (for `started`; default false).
    #[serde(default)]
    pub replay_safe: bool,
    /// The call's result (for `completed` / `failed`).
    #[serde(default)]
    pub result: Option<Value>,
    /// Session id [default: the server's session].
    #[serde(default)]
    pub session: Option<String>,
}

/// The longest one `wait` call blocks, in seconds: under the 60 s an MCP
/// client waits for a tool call by default, so the client never gives up
/// first.
pub const MAX_SESSION_WAIT_SECONDS: u64 = 50;

/// Block until the next answer, decision or wake for a session (`wait`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitRequest {
    /// Session id [default: the server's session].
    #[serde(default)]
    pub session: Option<String>,
    /// How long to block, 1 to 50 seconds (default 50).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub wait_seconds: Option<u64>,
    /// Who picks it up, recorded in the event log [default: the agent].
    #[serde(default)]
    pub by: Option<String>,
}

/// Everything a woken agent needs (`resume`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// Session id [default: the server's session].
    #[serde(default)]
    pub session: Option<String>,
    /// How many ledger rows to return (default 20).
    #[serde(default)]
    pub ledger_tail: Option<i64>,
}
