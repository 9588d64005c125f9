//! The MCP test client: rmcp's client over a child `handoff mcp` process.
#![allow(dead_code)]

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use crate::common::TempDb;

pub type Client = RunningService<RoleClient, ()>;

/// Start `handoff mcp` on `db` as agent `claude`, project `demo`, session `sess-1`.
pub async fn connect(db: &TempDb) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
    cmd.arg("mcp")
        .env("HANDOFF_DB", &db.path)
        .env("HANDOFF_PROJECT", "demo")
        .env("HANDOFF_AGENT", "claude")
        .env("HANDOFF_SESSION", "sess-1")
        // No config file from the developer's home or working directory.
        .env("HOME", db.dir.path())
        .env_remove("HANDOFF_RULES")
        .env_remove("HANDOFF_OWNER")
        .env_remove("HANDOFF_URL")
        .current_dir(db.dir.path());
    let transport = TokioChildProcess::new(cmd).expect("spawn handoff mcp");
    ().serve(transport).await.expect("MCP initialize")
}

pub async fn call(c: &Client, tool: &str, args: Value) -> CallToolResult {
    let args = args.as_object().expect("arguments are an object").clone();
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed at the protocol level: {e}"))
}

/// The structured body of a successful call (panics with the text if it failed).
pub async fn ok(c: &Client, tool: &str, args: Value) -> Value {
    let r = call(c, tool, args).await;
    assert_ne!(r.is_error, Some(true), "{tool} failed: {:?}", r.content);
    r.structured_content.expect("structured content")
}

/// The `{reason, message, detail}` body of a refused call.
pub async fn refused(c: &Client, tool: &str, args: Value) -> Value {
    let r = call(c, tool, args).await;
    assert_eq!(r.is_error, Some(true), "{tool} should be refused: {r:?}");
    let text = r.content[0].as_text().expect("text content").text.clone();
    let body = r.structured_content.expect("structured error");
    assert!(
        text.contains(body["message"].as_str().unwrap()),
        "the text leads with the message: {text}"
    );
    body
}
