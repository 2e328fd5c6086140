"""Drive `tern` with the Claude Agent SDK, as an integration written for
Claude Code would: a one-tool conversation through `query()`, whose one bash
call is asked through the SDK's `can_use_tool` callback, then a two-turn
`ClaudeSDKClient` session. Prints one JSON line of what it saw; the Rust
test (crates/cli/tests/python_sdk.rs) checks it.

Usage: python one_tool.py TERN_BINARY WORKDIR
"""

import json
import sys

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

TERN, WORKDIR = sys.argv[1], sys.argv[2]
seen = {"asked": [], "query": [], "client": [], "results": []}


async def can_use_tool(tool_name, tool_input, context):
    seen["asked"].append({"tool": tool_name, "input": tool_input})
    if "forbidden" in json.dumps(tool_input):
        return PermissionResultDeny(message="not that one")
    return PermissionResultAllow(updated_input=tool_input)


def describe(message):
    if isinstance(message, SystemMessage):
        return {"system": message.subtype}
    if isinstance(message, AssistantMessage):
        blocks = []
        for b in message.content:
            if isinstance(b, TextBlock):
                blocks.append({"text": b.text})
            elif isinstance(b, ToolUseBlock):
                blocks.append({"tool_use": b.name, "input": b.input, "id": b.id})
        return {"assistant": blocks, "model": message.model}
    if isinstance(message, UserMessage):
        blocks = []
        if isinstance(message.content, list):
            for b in message.content:
                if isinstance(b, ToolResultBlock):
                    blocks.append({"tool_result": b.tool_use_id, "is_error": b.is_error, "content": b.content})
        return {"user": blocks}
    if isinstance(message, ResultMessage):
        seen["results"].append(
            {
                "subtype": message.subtype,
                "is_error": message.is_error,
                "result": message.result,
                "session_id": message.session_id,
                "num_turns": message.num_turns,
                "duration_api_ms": message.duration_api_ms,
                "total_cost_usd": message.total_cost_usd,
            }
        )
        return {"result": message.subtype}
    return {"other": type(message).__name__}


async def main():
    options = ClaudeAgentOptions(cli_path=TERN, cwd=WORKDIR, model="mock", can_use_tool=can_use_tool)
    async for message in query(prompt="create the file", options=options):
        seen["query"].append(describe(message))
    async with ClaudeSDKClient(ClaudeAgentOptions(cli_path=TERN, cwd=WORKDIR, model="mock")) as client:
        for prompt in ["first question", "second question"]:
            await client.query(prompt)
            async for message in client.receive_response():
                seen["client"].append(describe(message))
    print(json.dumps(seen))


anyio.run(main)
