//! Claude Code's headless wire shapes as types: the lines `-p
//! --output-format stream-json|json` prints and the lines
//! `--input-format stream-json` reads. Each output line starts with its
//! `type` (serde writes an internally tagged enum's tag first); field names
//! are Claude's (`permissionMode`, `modelUsage`, `apiKeySource`), then
//! tern's own where it adds facts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One output line.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// `system/*`.
    System(System),
    /// A reply of the model (or of a subagent, with `parent_tool_use_id`).
    Assistant {
        /// The message, Anthropic Messages' shape.
        message: AssistantMessage,
        /// The `task` call a subagent's line belongs to.
        parent_tool_use_id: Option<String>,
        /// The session.
        session_id: String,
        /// This line's id.
        uuid: String,
    },
    /// A tool's result, as the user turn that carries it.
    User {
        /// `{"role": "user", "content": [tool_result]}`.
        message: UserMessage,
        /// The `task` call a subagent's line belongs to.
        parent_tool_use_id: Option<String>,
        /// The session.
        session_id: String,
        /// This line's id.
        uuid: String,
        /// The tool's details (tern's `ToolDetails`), as Claude's `tool_use_result`.
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_use_result: Option<Value>,
    },
    /// A partial-message event (`--include-partial-messages`).
    StreamEvent {
        /// This line's id.
        uuid: String,
        /// The session.
        session_id: String,
        /// The Anthropic streaming event.
        event: StreamEvent,
        /// Always null: partial messages are the main agent's.
        parent_tool_use_id: Option<String>,
    },
    /// The result of one prompt.
    Result(Box<ResultLine>),
    /// A request to the caller (`can_use_tool`, `hook_callback`, `mcp_message`).
    ControlRequest {
        /// Its id, answered by a `control_response`.
        request_id: String,
        /// What is asked.
        request: Outgoing,
    },
    /// The answer to the caller's control request.
    ControlResponse {
        /// `success` or `error`, with the request's id.
        response: ControlAnswer,
    },
}

/// The `system` lines, by `subtype`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum System {
    /// The first line: what the session has.
    Init(Box<Init>),
    /// A model request is tried again.
    ApiRetry {
        /// This attempt's number.
        attempt: u32,
        /// Attempts at most.
        max_retries: u32,
        /// The wait before it.
        retry_delay_ms: u64,
        /// What failed.
        error: String,
        /// The `task` call a subagent's line belongs to.
        parent_tool_use_id: Option<String>,
        /// The session.
        session_id: String,
        /// This line's id.
        uuid: String,
    },
    /// The conversation was compacted.
    CompactBoundary {
        /// What triggered it, and the sizes.
        compact_metadata: CompactMetadata,
        /// The `task` call a subagent's line belongs to.
        parent_tool_use_id: Option<String>,
        /// The session.
        session_id: String,
        /// This line's id.
        uuid: String,
    },
    /// The status line: the permission mode as it changes.
    Status {
        /// Always null.
        status: Option<String>,
        /// Claude's name for the mode.
        #[serde(rename = "permissionMode")]
        permission_mode: String,
        /// The session.
        session_id: String,
        /// This line's id.
        uuid: String,
    },
}

/// `system/init`.
#[derive(Debug, Clone, Serialize)]
pub struct Init {
    /// The workspace.
    pub cwd: String,
    /// The session.
    pub session_id: String,
    /// The tools the model has (Claude Code's names).
    pub tools: Vec<String>,
    /// Each MCP server and its state.
    pub mcp_servers: Vec<McpServerStatus>,
    /// The model.
    pub model: String,
    /// Claude's name for the permission mode.
    #[serde(rename = "permissionMode")]
    pub permission_mode: String,
    /// Custom commands and skills, as `/NAME`.
    pub slash_commands: Vec<String>,
    /// Where the key came from.
    #[serde(rename = "apiKeySource")]
    pub api_key_source: String,
    /// Always `default`.
    pub output_style: String,
    /// The subagent types.
    pub agents: Vec<String>,
    /// The skills.
    pub skills: Vec<String>,
    /// Always empty.
    pub plugins: Vec<String>,
    /// The level of Claude Code's stream-json tern speaks ([`CLAUDE_CODE_VERSION`]).
    pub claude_code_version: &'static str,
    /// This line's id.
    pub uuid: String,
    /// tern's own: its version.
    pub tern_version: String,
    /// tern's own: the provider.
    pub provider: String,
    /// tern's own: the instruction files read.
    pub instruction_files: Vec<String>,
    /// tern's own: the session this one resumed.
    pub resumed_from: Option<String>,
}

/// One MCP server in `system/init`.
#[derive(Debug, Clone, Serialize)]
pub struct McpServerStatus {
    /// Its name.
    pub name: String,
    /// Its state (`connected`, `failed`, …).
    pub status: Value,
}

/// What a compaction did.
#[derive(Debug, Clone, Serialize)]
pub struct CompactMetadata {
    /// `manual` or `auto`.
    pub trigger: &'static str,
    /// Tokens before.
    pub pre_tokens: u64,
    /// Tokens after.
    pub post_tokens: u64,
}

/// An `assistant` line's message.
#[derive(Debug, Clone, Serialize)]
pub struct AssistantMessage {
    /// `msg_…`.
    pub id: String,
    /// Always `message`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Always `assistant`.
    pub role: &'static str,
    /// The model that wrote it.
    pub model: String,
    /// Its blocks.
    pub content: Vec<Block>,
    /// Why it stopped (Anthropic's names).
    pub stop_reason: Option<String>,
    /// Always null.
    pub stop_sequence: Option<String>,
    /// Its usage.
    pub usage: ClaudeUsage,
}

/// A `user` line's message (a tool's result).
#[derive(Debug, Clone, Serialize)]
pub struct UserMessage {
    /// Always `user`.
    pub role: &'static str,
    /// The result.
    pub content: Vec<Block>,
}

/// An Anthropic Messages content block.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning.
    Thinking {
        /// The reasoning.
        thinking: String,
        /// Its signature (empty when none).
        signature: String,
    },
    /// Reasoning the provider keeps hidden.
    RedactedThinking {
        /// Opaque.
        data: String,
    },
    /// An image.
    Image {
        /// Base64 with its media type.
        source: ImageSource,
    },
    /// A tool call (Claude Code's name and keys).
    ToolUse {
        /// Its id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// A call the provider runs (web search).
    ServerToolUse {
        /// Its id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// The provider's web search result.
    WebSearchToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The results, or the error.
        content: Value,
    },
    /// A tool's result.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// A string when all text, else blocks.
        content: Value,
        /// Whether it failed.
        is_error: bool,
    },
}

/// An image's data.
#[derive(Debug, Clone, Serialize)]
pub struct ImageSource {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `image/png`, …
    pub media_type: String,
    /// Base64.
    pub data: String,
}

/// Usage with Anthropic's names.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ClaudeUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Cache writes.
    pub cache_creation_input_tokens: u64,
    /// Cache reads.
    pub cache_read_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Server tools used.
    pub server_tool_use: ServerToolUse,
}

/// Server tools used.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ServerToolUse {
    /// Web searches.
    pub web_search_requests: u64,
    /// Web fetches (the provider's; tern's `web_fetch` runs locally).
    pub web_fetch_requests: u64,
}

/// Anthropic's streaming events, for partial messages.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A message starts.
    MessageStart {
        /// Empty so far.
        message: AssistantMessageStart,
    },
    /// A block starts.
    ContentBlockStart {
        /// Its index.
        index: u32,
        /// Empty so far.
        content_block: Block,
    },
    /// More of a block.
    ContentBlockDelta {
        /// Its index.
        index: u32,
        /// The delta.
        delta: Delta,
    },
    /// A block ends.
    ContentBlockStop {
        /// Its index.
        index: u32,
    },
    /// The message's stop reason and usage.
    MessageDelta {
        /// Why it stopped.
        delta: MessageDeltaBody,
        /// Its usage.
        usage: ClaudeUsage,
    },
    /// The message ends.
    MessageStop,
}

/// `message_start`'s message.
#[derive(Debug, Clone, Serialize)]
pub struct AssistantMessageStart {
    /// `msg_…`.
    pub id: String,
    /// Always `message`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Always `assistant`.
    pub role: &'static str,
    /// Empty.
    pub content: Vec<Block>,
    /// Null.
    pub stop_reason: Option<String>,
    /// Null.
    pub stop_sequence: Option<String>,
    /// Zero.
    pub usage: ClaudeUsage,
}

/// A block's delta.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// Text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning.
    ThinkingDelta {
        /// The reasoning.
        thinking: String,
    },
    /// A piece of a tool call's arguments (JSON text).
    InputJsonDelta {
        /// The piece.
        partial_json: String,
    },
}

/// `message_delta`'s body.
#[derive(Debug, Clone, Serialize)]
pub struct MessageDeltaBody {
    /// Why it stopped.
    pub stop_reason: Option<String>,
    /// Null.
    pub stop_sequence: Option<String>,
}

/// The `result` line.
#[derive(Debug, Clone, Serialize)]
pub struct ResultLine {
    /// `success`, `error_max_turns`, `error_during_execution`.
    pub subtype: &'static str,
    /// Whether the prompt failed.
    pub is_error: bool,
    /// Wall time.
    pub duration_ms: u64,
    /// Time waiting on the provider.
    pub duration_api_ms: u64,
    /// Model requests.
    pub num_turns: u32,
    /// The final answer.
    pub result: String,
    /// The session.
    pub session_id: String,
    /// This prompt's cost.
    pub total_cost_usd: f64,
    /// This prompt's usage.
    pub usage: ClaudeUsage,
    /// Per model (Claude's camelCase).
    #[serde(rename = "modelUsage", skip_serializing_if = "Option::is_none")]
    pub model_usage: Option<BTreeMap<String, ModelUsage>>,
    /// Calls refused.
    pub permission_denials: Vec<Denial>,
    /// Why the last reply stopped (the model's reason).
    pub stop_reason: Option<String>,
    /// Why the run ended (tern's reason).
    pub terminal_reason: &'static str,
    /// `--json-schema`: the answer, matching the schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
    /// This line's id.
    pub uuid: String,
    /// What went wrong, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    /// tern's own: what ran in the background.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_tasks: Option<Value>,
    /// tern's own: the whole session's usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_usage: Option<Value>,
    /// tern's own: the whole session's cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_cost_usd: Option<f64>,
}

/// One model's usage in `modelUsage`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads.
    pub cache_read_input_tokens: u64,
    /// Cache writes.
    pub cache_creation_input_tokens: u64,
    /// Web searches.
    pub web_search_requests: u64,
    /// Cost.
    #[serde(rename = "costUSD")]
    pub cost_usd: f64,
    /// The context window.
    pub context_window: u64,
}

/// A refused call in `permission_denials` (Claude Code's name and keys).
#[derive(Debug, Clone, Serialize)]
pub struct Denial {
    /// The tool.
    pub tool_name: String,
    /// The call.
    pub tool_use_id: String,
    /// Its arguments.
    pub tool_input: Value,
    /// tern's own: why.
    pub reason: String,
    /// tern's own: how to allow it.
    pub how_to_allow: Option<String>,
}

/// What tern asks the caller, by `subtype`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum Outgoing {
    /// May this call run?
    CanUseTool(CanUseTool),
    /// Run one of the hook callbacks `initialize` registered.
    HookCallback {
        /// The callback, as registered.
        callback_id: String,
        /// Claude Code's hook input.
        input: Value,
        /// The call, for tool events.
        tool_use_id: Option<String>,
    },
    /// A form an MCP server asks to have filled (`onElicitation` in the SDKs).
    Elicitation {
        /// The server.
        mcp_server_name: String,
        /// What it asks.
        message: String,
        /// Always `form`.
        mode: &'static str,
        /// The form's JSON Schema.
        requested_schema: Value,
    },
    /// A JSON-RPC message for one of the caller's in-process MCP servers.
    McpMessage {
        /// The server (`"type": "sdk"` in `--mcp-config`).
        server_name: String,
        /// The JSON-RPC message.
        message: Value,
    },
}

/// A `can_use_tool` question.
#[derive(Debug, Clone, Serialize)]
pub struct CanUseTool {
    /// The tool (Claude Code's name).
    pub tool_name: String,
    /// Its arguments (Claude Code's keys).
    pub input: Value,
    /// The call.
    pub tool_use_id: String,
    /// Rules that would allow it.
    pub permission_suggestions: Vec<Suggestion>,
    /// Why it is asked.
    pub decision_reason: String,
}

/// A rule suggestion: `addRules` for the session.
#[derive(Debug, Clone, Serialize)]
pub struct Suggestion {
    /// Always `addRules`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The rule.
    pub rules: Vec<RuleValue>,
    /// Always `allow`.
    pub behavior: &'static str,
    /// Always `session`.
    pub destination: &'static str,
}

/// Claude's rule shape: the tool, and what is inside its parentheses.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuleValue {
    /// The tool (Claude Code's name).
    #[serde(rename = "toolName")]
    pub tool_name: Option<String>,
    /// What is inside the parentheses.
    #[serde(rename = "ruleContent", skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<String>,
}

/// The answer to `initialize`: what the session offers.
#[derive(Debug, Clone, Serialize)]
pub struct InitializeAnswer {
    /// Custom commands and skills.
    pub commands: Vec<SlashCommand>,
    /// The models `set_model` takes.
    pub models: Vec<ModelChoice>,
    /// Always `default`.
    pub output_style: &'static str,
    /// Always `["default"]`.
    pub available_output_styles: Vec<&'static str>,
    /// The subagent types (the SDKs' `AgentInfo`).
    pub agents: Vec<AgentInfo>,
    /// Where the provider key came from (the SDKs' `AccountInfo`).
    pub account: AccountInfo,
    /// Hook matchers' `onFailure` is honoured.
    pub hook_on_failure_supported: bool,
    /// The hooks sent were registered.
    pub hooks_applied: bool,
    /// `initialize.mcpServers` were started with the session (only said when sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_servers_applied: Option<bool>,
}

/// An agent in `initialize`'s answer.
#[derive(Debug, Clone, Serialize)]
pub struct AgentInfo {
    /// Its name (a `task` call's `subagent_type`).
    pub name: String,
    /// What it is for.
    pub description: String,
}

/// The account in `initialize`'s answer: tern knows only where its key came from.
#[derive(Debug, Clone, Serialize)]
pub struct AccountInfo {
    /// The key's variable, `config` or `none`.
    #[serde(rename = "apiKeySource")]
    pub api_key_source: String,
}

/// A slash command in `initialize`'s answer.
#[derive(Debug, Clone, Serialize)]
pub struct SlashCommand {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its argument, as shown (empty when it takes none: the SDKs' type is a string).
    #[serde(rename = "argumentHint")]
    pub argument_hint: String,
}

/// A model in `initialize`'s answer.
#[derive(Debug, Clone, Serialize)]
pub struct ModelChoice {
    /// Its name.
    pub value: String,
    /// Shown as.
    #[serde(rename = "displayName")]
    pub display_name: String,
}

/// The answer to a control request.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlAnswer {
    /// Done, with a body.
    Success {
        /// The request's id.
        request_id: Value,
        /// The body.
        response: Value,
    },
    /// Refused.
    Error {
        /// The request's id.
        request_id: Value,
        /// Why.
        error: String,
    },
}

/// One input line (`--input-format stream-json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputLine {
    /// A prompt.
    User {
        /// `{"role": "user", "content": …}`.
        message: InputMessage,
    },
    /// A request of the caller, answered with a `control_response`.
    ControlRequest {
        /// Its id (echoed back).
        #[serde(default)]
        request_id: Value,
        /// What is asked: a [`ControlRequest`], read on its own so that one
        /// tern does not know is still answered (with an error).
        #[serde(default)]
        request: Value,
    },
    /// The caller's answer to a `can_use_tool` question.
    ControlResponse {
        /// `{"subtype": "success"|"error", "request_id": …, …}`.
        #[serde(default)]
        response: Value,
    },
    /// Taken and ignored.
    ControlCancelRequest {},
    /// Taken and ignored.
    KeepAlive {},
}

/// A user line's message.
#[derive(Debug, Clone, Deserialize)]
pub struct InputMessage {
    /// Text, or blocks ([`InputMessage::content`] reads it).
    #[serde(default)]
    content: Value,
}

/// A user message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum InputContent {
    /// Plain text.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<InputBlock>),
}

impl InputMessage {
    /// Its content; what is wrong with it, naming the block (a block is
    /// read on its own, so an unsupported one is named, not "no variant").
    pub fn content(self) -> Result<InputContent, String> {
        match self.content {
            Value::String(text) => Ok(InputContent::Text(text)),
            Value::Array(items) => items
                .into_iter()
                .map(|item| {
                    serde_json::from_value::<InputBlock>(item)
                        .map_err(|e| format!("a content block tern does not take in a user message: {e}"))
                })
                .collect::<Result<_, _>>()
                .map(InputContent::Blocks),
            _ => Err("message.content must be a string or a list of blocks".into()),
        }
    }
}

/// A block of a user message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A base64 image.
    Image {
        /// Its data.
        source: InputImage,
    },
}

/// An image block's source.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InputImage {
    /// `image/png`, …
    pub media_type: String,
    /// Base64.
    pub data: String,
}

/// The Claude Code release whose stream-json and control protocol tern
/// speaks, as `system/init`'s `claude_code_version` says it to the Agent
/// SDKs (which warn when it is missing). It is not a Claude Code that tern
/// contains: it is above the SDKs' minimum (2.0.0) and below the releases
/// of features tern does not implement (such as `verbatim_prompts`, 2.1.248),
/// so an SDK's own checks tell the truth. `tern_version` is tern's own.
pub const CLAUDE_CODE_VERSION: &str = "2.1.0";

/// An MCP server in the answer to `mcp_status` (the SDKs' `McpServerStatus`).
#[derive(Debug, Clone, Serialize)]
pub struct McpStatusEntry {
    /// Its name.
    pub name: String,
    /// `connected`, `failed`, `pending`, `disabled`.
    pub status: &'static str,
    /// Why it failed, or is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How it is reached.
    pub config: Value,
    /// Where it was configured.
    pub scope: String,
}

/// The answer to `get_context_usage` (the SDKs' `ContextUsageResponse`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    /// What fills the window.
    pub categories: Vec<ContextCategory>,
    /// All of it.
    pub total_tokens: u64,
    /// Where compaction starts (the window when it is off).
    pub max_tokens: u64,
    /// The model's window.
    pub raw_max_tokens: u64,
    /// `total_tokens` of `raw_max_tokens`, 0–100.
    pub percentage: f64,
    /// The model.
    pub model: String,
    /// Whether the conversation is compacted when it nears the window.
    pub is_auto_compact_enabled: bool,
    /// The instruction files read.
    pub memory_files: Vec<Value>,
    /// MCP tools (tern lists them in `categories`).
    pub mcp_tools: Vec<Value>,
    /// Custom agents.
    pub agents: Vec<Value>,
    /// Claude Code's grid for its terminal view (tern sends none).
    pub grid_rows: Vec<Vec<Value>>,
    /// Where compaction starts, when it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_compact_threshold: Option<u64>,
}

/// One category of [`ContextUsage`].
#[derive(Debug, Clone, Serialize)]
pub struct ContextCategory {
    /// What it is.
    pub name: String,
    /// Estimated tokens.
    pub tokens: u64,
    /// A colour for a display.
    pub color: &'static str,
}

/// The control requests tern answers, by `subtype`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlRequest {
    /// What the session offers: commands, models, agents; and what the
    /// caller brings: hook callbacks and agents.
    Initialize {
        /// Hook callbacks by Claude Code's event name (`PreToolUse`).
        #[serde(default)]
        hooks: Option<std::collections::BTreeMap<String, Vec<HookMatcher>>>,
        /// Agents by name.
        #[serde(default)]
        agents: Option<std::collections::BTreeMap<String, AgentDefinition>>,
        /// Anything else the caller asked for (named in a note: tern does not apply it).
        #[serde(flatten)]
        other: std::collections::BTreeMap<String, Value>,
    },
    /// Stop the running prompt.
    Interrupt {},
    /// Enter a permission mode (Claude's names or tern's).
    SetPermissionMode {
        /// The mode.
        mode: String,
    },
    /// Switch the model (null: the default).
    SetModel {
        /// The model.
        #[serde(default)]
        model: Option<String>,
    },
    /// The MCP servers and where each stands.
    McpStatus {},
    /// What fills the context window.
    GetContextUsage {},
    /// End an MCP server's session and start a new one.
    McpReconnect {
        /// The server.
        #[serde(rename = "serverName")]
        server_name: String,
    },
    /// Turn an MCP server on or off.
    McpToggle {
        /// The server.
        #[serde(rename = "serverName")]
        server_name: String,
        /// On or off.
        enabled: bool,
    },
    /// Stop a background task.
    StopTask {
        /// Its id.
        task_id: String,
    },
    /// Put the files back as they were before a replayed user message.
    RewindFiles {
        /// The `uuid` of the message's replay (`--replay-user-messages`).
        user_message_id: String,
        /// Only say what would change.
        #[serde(default)]
        dry_run: bool,
    },
}

/// One matcher of `initialize.hooks`: the callbacks it selects.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookMatcher {
    /// Regex on the tool name (tool events); absent: every tool.
    #[serde(default)]
    pub matcher: Option<String>,
    /// The callbacks, in order.
    #[serde(default)]
    pub hook_callback_ids: Vec<String>,
    /// Seconds each may take.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// `block` or `continue`: what a failing callback does.
    #[serde(default)]
    pub on_failure: Option<String>,
}

/// An agent of `initialize.agents` (the Agent SDK's `AgentDefinition`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDefinition {
    /// What it is for (the model reads it to choose).
    #[serde(default)]
    pub description: String,
    /// Its instructions.
    #[serde(default)]
    pub prompt: String,
    /// Only these tools (Claude's names or tern's).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Never these.
    #[serde(default)]
    pub disallowed_tools: Option<Vec<String>>,
    /// `sonnet`, `opus`, `haiku`, `inherit`, or a model id.
    #[serde(default)]
    pub model: Option<String>,
    /// MCP servers: names, or inline `{name: config}` (not taken).
    #[serde(default)]
    pub mcp_servers: Option<Vec<Value>>,
    /// The rest (skills, memory, maxTurns, effort, permissionMode, …): named in a note.
    #[serde(flatten)]
    pub other: std::collections::BTreeMap<String, Value>,
}

/// The caller's `control_response` to a `can_use_tool` question.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum PermissionReply {
    /// An answer.
    Success {
        /// The question's id.
        request_id: String,
        /// The answer.
        #[serde(default)]
        response: PermissionBody,
    },
    /// The caller's prompt failed.
    Error {
        /// The question's id.
        request_id: String,
        /// Why.
        #[serde(default)]
        error: Option<String>,
    },
}

impl PermissionReply {
    /// The question it answers.
    pub fn request_id(&self) -> &str {
        match self {
            PermissionReply::Success { request_id, .. } | PermissionReply::Error { request_id, .. } => request_id,
        }
    }
}

/// An answer to `can_use_tool`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PermissionBody {
    /// `allow` or `deny`.
    pub behavior: Option<String>,
    /// The input to run (Claude Code's keys or tern's).
    #[serde(rename = "updatedInput")]
    pub updated_input: Option<Value>,
    /// Rules to keep.
    #[serde(rename = "updatedPermissions", default)]
    pub updated_permissions: Vec<PermissionUpdate>,
    /// Why not (a `deny`), for the model.
    pub message: Option<String>,
    /// A `deny` that stops the whole prompt.
    #[serde(default)]
    pub interrupt: bool,
}

/// One entry of `updatedPermissions`.
#[derive(Debug, Clone, Deserialize)]
pub struct PermissionUpdate {
    /// `allow` (others are not rules tern keeps).
    pub behavior: Option<String>,
    /// `session`, `projectSettings`, `localSettings`, `userSettings`.
    pub destination: Option<String>,
    /// The rules.
    #[serde(default)]
    pub rules: Vec<RuleValue>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_lines_start_with_their_type_and_input_lines_parse_into_types() {
        let line = Line::System(System::Status {
            status: None,
            permission_mode: "acceptEdits".into(),
            session_id: "s".into(),
            uuid: "u".into(),
        });
        let text = serde_json::to_string(&line).unwrap();
        assert!(text.starts_with(r#"{"type":"system","subtype":"status","status":null,"permissionMode""#), "{text}");
        let user: InputLine = serde_json::from_value(json!({"type": "user", "session_id": "", "message": {
            "role": "user", "content": [{"type": "text", "text": "hi"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}}))
        .unwrap();
        let InputLine::User { message } = user else { panic!("a user line") };
        let Ok(InputContent::Blocks(blocks)) = message.content() else { panic!("blocks") };
        assert!(matches!(&blocks[1], InputBlock::Image { source } if source.media_type == "image/png"));
        let mode: ControlRequest =
            serde_json::from_value(json!({"subtype": "set_permission_mode", "mode": "plan"})).unwrap();
        assert!(matches!(mode, ControlRequest::SetPermissionMode { mode } if mode == "plan"));
        let err = serde_json::from_value::<ControlRequest>(json!({"subtype": "channel_enable"})).unwrap_err();
        assert!(err.to_string().contains("channel_enable"), "{err}");
        let err = serde_json::from_value::<InputLine>(json!({"type": "assistant"})).unwrap_err();
        assert!(err.to_string().contains("assistant"), "{err}");
    }
}
