//! The MCP tool table: one tool per agent-side operation. Each tool fills
//! missing identity fields from the server's [`Defaults`], calls [`Ops`]
//! and turns the outcome into a tool result.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_router};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Defaults, docs};
use crate::ops::requests::*;
use crate::ops::{self, Ops};

/// Every tool this server offers, in the order they are documented.
pub const TOOL_NAMES: [&str; 16] = [
    "ask",
    "pending",
    "answer",
    "resolve",
    "board_upsert",
    "board_row",
    "board_advance",
    "board_get",
    "propose_action",
    "action_status",
    "claim_action",
    "complete_action",
    "checkpoint",
    "ledger_record",
    "resume",
    "wait",
];

/// The prefix rmcp gives a tool-argument deserialization failure.
const BAD_ARGS_PREFIX: &str = "failed to deserialize parameters";

/// The MCP server: operations plus the caller's defaults.
#[derive(Clone)]
pub struct Server {
    ops: Ops,
    d: Arc<Defaults>,
    tool_router: ToolRouter<Server>,
}

/// `v` unless it is missing or blank, else the default `d`.
fn or(v: Option<String>, d: &str) -> Option<String> {
    match v {
        Some(v) if !v.trim().is_empty() => Some(v),
        _ if d.is_empty() => None,
        _ => Some(d.to_string()),
    }
}

/// A tool result: the value as JSON, or the error as `isError` with
/// `{reason, message, detail}`.
fn reply<T: Serialize>(r: ops::Result<T>) -> CallToolResult {
    match r {
        Ok(v) => {
            let v = serde_json::to_value(&v).unwrap_or(Value::Null);
            CallToolResult::structured(v)
        }
        Err(e) => {
            if let ops::Error::Internal { message } = &e {
                tracing::error!(error = %message, "tool call failed");
            }
            error_result(e.to_json())
        }
    }
}

/// An `isError` result whose text leads with the message, then the JSON.
fn error_result(body: Value) -> CallToolResult {
    let reason = body["reason"].as_str().unwrap_or("error");
    let message = body["message"].as_str().unwrap_or("");
    let text = format!("refused ({reason}): {message}\n{body}");
    let mut r = CallToolResult::structured_error(body.clone());
    r.content = vec![ContentBlock::text(text)];
    r
}

#[tool_router]
impl Server {
    /// A server running `ops` on behalf of the caller `defaults` describes.
    pub fn new(ops: Ops, defaults: Defaults) -> Server {
        Server {
            ops,
            d: Arc::new(defaults),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = docs::ASK)]
    async fn ask(&self, Parameters(mut r): Parameters<AskRequest>) -> CallToolResult {
        r.project = or(r.project, &self.d.project);
        r.agent = or(r.agent, &self.d.agent);
        r.session = or(r.session, &self.d.session);
        reply(self.ops.ask(r).await)
    }

    #[tool(description = docs::PENDING)]
    async fn pending(&self, Parameters(mut r): Parameters<PendingRequest>) -> CallToolResult {
        r.project = or(r.project, &self.d.project);
        r.session = or(r.session, &self.d.session);
        r.by = or(r.by, &self.d.actor);
        reply(self.ops.pending(r).await)
    }

    #[tool(description = docs::ANSWER)]
    async fn answer(&self, Parameters(mut r): Parameters<AnswerRequest>) -> CallToolResult {
        r.by = or(r.by, &self.d.actor);
        reply(self.ops.answer(r).await)
    }

    #[tool(description = docs::RESOLVE)]
    async fn resolve(&self, Parameters(mut r): Parameters<ResolveRequest>) -> CallToolResult {
        r.by = or(r.by, &self.d.actor);
        reply(self.ops.resolve(r).await)
    }

    #[tool(description = docs::BOARD_UPSERT)]
    async fn board_upsert(
        &self,
        Parameters(mut r): Parameters<BoardUpsertRequest>,
    ) -> CallToolResult {
        r.project = or(r.project, &self.d.project);
        r.agent = or(r.agent, &self.d.agent);
        r.session = or(r.session, &self.d.session);
        reply(self.ops.board_upsert(r).await)
    }

    #[tool(description = docs::BOARD_ROW)]
    async fn board_row(&self, Parameters(mut r): Parameters<BoardRowRequest>) -> CallToolResult {
        r.project = or(r.project, &self.d.project);
        r.by = or(r.by, &self.d.actor);
        reply(self.ops.board_row(r).await)
    }

    #[tool(description = docs::BOARD_ADVANCE)]
    async fn board_advance(
        &self,
        Parameters(mut r): Parameters<BoardAdvanceRequest>,
    ) -> CallToolResult {
        r.project = or(r.project, &self.d.project);
        r.by = or(r.by, &self.d.actor);
        reply(self.ops.board_advance(r).await)
    }

    #[tool(description = docs::BOARD_GET)]
    async fn board_get(&self, Parameters(mut r): Parameters<BoardGetRequest>) -> CallToolResult {
        r.project = or(r.project, &self.d.project);
        reply(self.ops.board_get(r).await)
    }

    #[tool(description = docs::PROPOSE_ACTION)]
    async fn propose_action(
        &self,
        Parameters(mut r): Parameters<ProposeRequest>,
    ) -> CallToolResult {
        r.project = or(r.project, &self.d.project);
        r.session = or(r.session, &self.d.session);
        r.proposer = or(r.proposer, &self.d.actor);
        reply(self.ops.propose_action(r).await)
    }

    #[tool(description = docs::ACTION_STATUS)]
    async fn action_status(
        &self,
        Parameters(r): Parameters<ActionStatusRequest>,
    ) -> CallToolResult {
        reply(self.ops.action_status(r).await)
    }

    #[tool(description = docs::CLAIM_ACTION)]
    async fn claim_action(&self, Parameters(mut r): Parameters<ClaimRequest>) -> CallToolResult {
        r.owner = or(r.owner, &self.d.owner);
        reply(self.ops.claim_action(r).await)
    }

    #[tool(description = docs::COMPLETE_ACTION)]
    async fn complete_action(
        &self,
        Parameters(mut r): Parameters<CompleteRequest>,
    ) -> CallToolResult {
        r.owner = or(r.owner, &self.d.owner);
        reply(self.ops.complete_action(r).await)
    }

    #[tool(description = docs::CHECKPOINT)]
    async fn checkpoint(&self, Parameters(mut r): Parameters<CheckpointRequest>) -> CallToolResult {
        r.session = or(r.session, &self.d.session);
        r.agent = or(r.agent, &self.d.agent);
        r.project = or(r.project, &self.d.project);
        reply(self.ops.checkpoint(r).await)
    }

    #[tool(description = docs::LEDGER_RECORD)]
    async fn ledger_record(
        &self,
        Parameters(mut r): Parameters<LedgerRecordRequest>,
    ) -> CallToolResult {
        r.session = or(r.session, &self.d.session);
        reply(self.ops.ledger_record(r).await)
    }

    #[tool(description = docs::RESUME)]
    async fn resume(&self, Parameters(mut r): Parameters<ResumeRequest>) -> CallToolResult {
        r.session = or(r.session, &self.d.session);
        reply(self.ops.resume(r).await)
    }

    #[tool(description = docs::WAIT)]
    async fn wait(&self, Parameters(mut r): Parameters<WaitRequest>) -> CallToolResult {
        r.session = or(r.session, &self.d.session);
        r.by = or(r.by, &self.d.actor);
        reply(self.ops.wait(r).await)
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("handoff", env!("CARGO_PKG_VERSION")))
            .with_instructions(docs::INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tool_router.list_all()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool_router.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if self.tool_router.get(&name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("no tool `{name}`; the tools are: {}", TOOL_NAMES.join(", ")),
                None,
            ));
        }
        let tcc = ToolCallContext::new(self, request, context);
        let out = self.tool_router.call(tcc).await?;
        // rmcp already turns undecodable arguments into an isError result;
        // give it the same {reason, message} shape as every other refusal.
        if let CallToolResponse::Complete(r) = &out
            && r.is_error == Some(true)
            && r.structured_content.is_none()
            && let Some(text) = r.content.first().and_then(|c| c.as_text())
            && text.text.starts_with(BAD_ARGS_PREFIX)
        {
            tracing::debug!(tool = %name, error = %text.text, "bad tool arguments");
            let message = format!(
                "bad arguments for `{name}`: {}; see the tool's input schema",
                text.text
                    .trim_start_matches(BAD_ARGS_PREFIX)
                    .trim_start_matches(':')
                    .trim()
            );
            return Ok(
                error_result(json!({"reason": "invalid_arguments", "message": message})).into(),
            );
        }
        Ok(out)
    }
}
