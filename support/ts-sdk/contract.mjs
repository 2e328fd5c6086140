// Drive `tern` with the Claude Agent SDK for TypeScript, as an integration
// written for Claude Code would. Two scenarios, one per Rust test
// (crates/cli/tests/e2e/ts_sdk.rs), each printing one JSON line of what it
// saw as its last line:
//
// - `conversation`: a one-tool `query()` whose bash call is asked through
//   `canUseTool`, then a three-turn session (streaming input) with control
//   requests between the turns (`initializationResult()`,
//   `mcpServerStatus()`, `setPermissionMode()`, `getContextUsage()`,
//   `setModel()`) and an `interrupt()` that stops the third turn's command.
// - `surface`: a PreToolUse hook callback that denies `rm -rf` in bypass
//   mode, an agent from the `agents` option the model delegates to, an
//   in-process MCP server (`createSdkMcpServer` + `tool()`) whose tool the
//   model calls, and a stdio MCP server from `mcpServers` (tern's own test
//   server), sent in `initialize` as the SDK does by default, then as a
//   flag (`mcpServersDelivery: "argv"`).
//
// Usage: node contract.mjs conversation|surface TERN_BINARY WORKDIR [TERN_TEST_MCP]

import { createSdkMcpServer, query, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";

const [scenario, TERN, WORKDIR, TEST_MCP] = process.argv.slice(2);

/** What every query shares: the real tern as Claude Code, in the test's folder, on the mock. */
function options(extra) {
  return {
    // A native executable: the SDK runs it directly (no node in front).
    pathToClaudeCodeExecutable: TERN,
    cwd: WORKDIR,
    model: "mock",
    // tern's stderr, on ours, so a failing test shows it.
    stderr: (data) => process.stderr.write(data),
    ...extra,
  };
}

function describe(message, seen) {
  switch (message.type) {
    case "system":
      return { system: message.subtype, ...(message.subtype === "status" ? { permissionMode: message.permissionMode } : {}) };
    case "assistant":
      return {
        assistant: message.message.content.flatMap((b) => {
          if (b.type === "text") return [{ text: b.text }];
          if (b.type === "tool_use") return [{ tool_use: b.name, input: b.input, id: b.id }];
          return [];
        }),
        model: message.message.model,
        parent_tool_use_id: message.parent_tool_use_id,
      };
    case "user": {
      const content = Array.isArray(message.message.content) ? message.message.content : [];
      return {
        user: content
          .filter((b) => b.type === "tool_result")
          .map((b) => ({ tool_result: b.tool_use_id, is_error: b.is_error ?? false, content: b.content })),
      };
    }
    case "result":
      seen.results.push({
        subtype: message.subtype,
        is_error: message.is_error,
        result: message.result,
        session_id: message.session_id,
        num_turns: message.num_turns,
        total_cost_usd: message.total_cost_usd,
        permission_denials: message.permission_denials,
        terminal_reason: message.terminal_reason,
      });
      return { result: message.subtype };
    default:
      return { other: message.type };
  }
}

/** A queue of user messages that the session reads as its streaming input. */
function inputQueue() {
  const waiting = [];
  let wake = null;
  let closed = false;
  return {
    push(text) {
      waiting.push({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" });
      wake?.();
    },
    close() {
      closed = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (waiting.length > 0) {
          yield waiting.shift();
        } else if (closed) {
          return;
        } else {
          await new Promise((resolve) => (wake = resolve));
          wake = null;
        }
      }
    },
  };
}

const calcCalls = [];
function calculator() {
  return createSdkMcpServer({
    name: "calc",
    version: "1.0.0",
    tools: [
      tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async (args) => {
        calcCalls.push(args);
        return { content: [{ type: "text", text: `sum is ${args.a + args.b}` }] };
      }),
    ],
  });
}

async function conversation() {
  const seen = { asked: [], query: [], session: [], results: [], control: {} };
  const canUseTool = async (toolName, input, { toolUseID }) => {
    seen.asked.push({ tool: toolName, input, tool_use_id: toolUseID });
    return { behavior: "allow", updatedInput: input };
  };
  for await (const message of query({ prompt: "create the file", options: options({ canUseTool }) })) {
    seen.query.push(describe(message, seen));
  }

  // A session: one process, prompts fed as they are wanted, control requests between turns.
  const input = inputQueue();
  let session;
  const stopTheSleep = async (toolName, toolInput) => {
    seen.asked.push({ tool: toolName, input: toolInput });
    // Once the answer is on its way, stop the turn (the result says how it ended).
    setImmediate(() => session.interrupt());
    return { behavior: "allow", updatedInput: toolInput };
  };
  session = query({ prompt: input, options: options({ mcpServers: { calc: calculator() }, canUseTool: stopTheSleep }) });
  input.push("first question");
  let turn = 0;
  for await (const message of session) {
    seen.session.push(describe(message, seen));
    if (message.type !== "result") continue;
    turn += 1;
    if (turn === 1) {
      const init = await session.initializationResult();
      seen.control.init_models = init.models.map((m) => m.value);
      seen.control.mcp_status = (await session.mcpServerStatus()).map((s) => ({ name: s.name, status: s.status }));
      seen.control.set_permission_mode = (await session.setPermissionMode("acceptEdits")) ?? null;
      const usage = await session.getContextUsage();
      seen.control.context = { model: usage.model, maxTokens: usage.maxTokens, hasCategories: Array.isArray(usage.categories) };
      await session.setModel("mock-two");
      input.push("second question");
    } else if (turn === 2) {
      input.push("third question");
    } else {
      input.close();
    }
  }
  return seen;
}

async function surface() {
  const seen = { hook_inputs: [], results: [], tool_calls: calcCalls, messages: [] };
  const noRm = async (hookInput, toolUseID) => {
    seen.hook_inputs.push({
      event: hookInput.hook_event_name,
      tool: hookInput.tool_name,
      command: hookInput.tool_input?.command,
      tool_use_id: toolUseID,
      mode: hookInput.permission_mode,
    });
    if ((hookInput.tool_input?.command ?? "").includes("rm -rf")) {
      return {
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "deny",
          permissionDecisionReason: "no rm from the sdk hook",
        },
      };
    }
    return {};
  };
  const bypass = { permissionMode: "bypassPermissions", allowDangerouslySkipPermissions: true };
  const run = async (prompt, extra) => {
    for await (const message of query({ prompt, options: options({ ...bypass, ...extra }) })) {
      seen.messages.push(describe(message, seen));
    }
  };
  await run("hooked-prompt", { hooks: { PreToolUse: [{ matcher: "Bash", hooks: [noRm] }] } });
  await run("delegate-it", {
    agents: {
      reviewer: { description: "Reviews code for bugs", prompt: "You review the code, carefully.", tools: ["Read", "Grep"] },
    },
  });
  await run("use-the-calculator", { mcpServers: { calc: calculator() } });
  // The SDK's default: the server in `initialize` (`--await-initialize`); then as a flag.
  await run("use-the-stdio-server", { mcpServers: { stdio: { command: TEST_MCP, args: ["--tools", "2"] } } });
  await run("use-the-stdio-server", {
    mcpServers: { stdio: { command: TEST_MCP, args: ["--tools", "2"] } },
    mcpServersDelivery: "argv",
  });
  return seen;
}

const scenarios = { conversation, surface };
if (!scenarios[scenario]) {
  console.error(`usage: node contract.mjs ${Object.keys(scenarios).join("|")} TERN_BINARY WORKDIR [TERN_TEST_MCP]`);
  process.exit(2);
}
console.log(JSON.stringify(await scenarios[scenario]()));
