"""Drive `tern` through the parts of the Claude Agent SDK that go beyond
`query()`: hook callbacks registered in `initialize` (a PreToolUse guard that
denies `rm`), agents defined in the options (a subagent the model delegates
to), and an in-process MCP server (`create_sdk_mcp_server`) whose tool the
model calls. Prints one JSON line of what it saw; the Rust test
(crates/cli/tests/e2e/python_sdk.rs) checks it and the requests the mock got.

Usage: python sdk_surface.py TERN_BINARY WORKDIR
"""

import json
import sys

import anyio
from claude_agent_sdk import (
    AgentDefinition,
    ClaudeAgentOptions,
    HookMatcher,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

TERN, WORKDIR = sys.argv[1], sys.argv[2]
seen = {"hook_inputs": [], "results": [], "tool_calls": []}


async def no_rm(input_data, tool_use_id, context):
    seen["hook_inputs"].append(
        {
            "event": input_data.get("hook_event_name"),
            "tool": input_data.get("tool_name"),
            "command": input_data.get("tool_input", {}).get("command"),
            "tool_use_id": tool_use_id,
            "mode": input_data.get("permission_mode"),
        }
    )
    if "rm -rf" in input_data.get("tool_input", {}).get("command", ""):
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no rm from the sdk hook",
            }
        }
    return {}


@tool("add", "Add two numbers", {"a": int, "b": int})
async def add(args):
    seen["tool_calls"].append(args)
    return {"content": [{"type": "text", "text": f"sum is {args['a'] + args['b']}"}]}


async def run(prompt, options):
    async for message in query(prompt=prompt, options=options):
        if isinstance(message, ResultMessage):
            seen["results"].append({"result": message.result, "subtype": message.subtype})


async def main():
    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[no_rm])]}
    await run(
        "hooked-prompt",
        ClaudeAgentOptions(cli_path=TERN, cwd=WORKDIR, model="mock", permission_mode="bypassPermissions", hooks=hooks),
    )
    agents = {
        "reviewer": AgentDefinition(
            description="Reviews code for bugs", prompt="You review the code, carefully.", tools=["Read", "Grep"]
        )
    }
    await run(
        "delegate-it",
        ClaudeAgentOptions(cli_path=TERN, cwd=WORKDIR, model="mock", permission_mode="bypassPermissions", agents=agents),
    )
    calc = create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])
    await run(
        "use-the-calculator",
        ClaudeAgentOptions(
            cli_path=TERN,
            cwd=WORKDIR,
            model="mock",
            permission_mode="bypassPermissions",
            mcp_servers={"calc": calc},
        ),
    )
    print(json.dumps(seen))


anyio.run(main)
