"""An MCP client built on the official MCP Python SDK (the `mcp` package):
starts `handoff mcp` over stdio, lists the tools, optionally asks a
question, then calls `wait` once and prints one JSON line with what it saw.

    python wait_client.py HANDOFF_BIN ask|wait-only [WAIT_ARGS_JSON]

Environment: the server's (HANDOFF_DB, HANDOFF_SESSION, ...), passed on.
Also prints `asked <question id>` on its own line, flushed, before it
waits, so the test knows when to answer.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def structured(result):
    """The result's structured content (`structured_content` in SDK 2.x,
    `structuredContent` before)."""
    for name in ("structured_content", "structuredContent"):
        value = getattr(result, name, None)
        if value is not None:
            return value
    return None


async def main() -> None:
    binary, mode = sys.argv[1], sys.argv[2]
    wait_args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        # The SDK's own default tool-call timeout is what an agent has: 60 s.
        async with ClientSession(read, write, read_timeout_seconds=60) as session:
            await session.initialize()
            tools = await session.list_tools()
            wait = next(t for t in tools.tools if t.name == "wait")
            if mode == "ask":
                asked = await session.call_tool(
                    "ask", {"title": "Ship on Friday?", "key": "ship"}
                )
                qid = structured(asked)["question"]["id"]
                print(f"asked {qid}", flush=True)
            else:
                print("asked -", flush=True)
            start = time.monotonic()
            result = await session.call_tool("wait", wait_args, read_timeout_seconds=60)
            elapsed = time.monotonic() - start
            print(
                json.dumps(
                    {
                        "elapsed": elapsed,
                        "is_error": bool(getattr(result, "is_error", None) or getattr(result, "isError", None)),
                        "structured": structured(result),
                        "description": wait.description,
                    }
                ),
                flush=True,
            )


asyncio.run(main())
