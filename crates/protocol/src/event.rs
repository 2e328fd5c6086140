//! The one event stream of a run. The TUI renders it, headless `stream-json`
//! prints it line by line, and the session log stores it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Message, StopReason, TodoItem, ToolResultContent, Usage};

/// A provider request is being retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryInfo {
    /// The attempt that is about to start (2 = first retry).
    pub attempt: u32,
    /// Attempts allowed in all.
    pub max_attempts: u32,
    /// How long we wait before it.
    pub delay_ms: u64,
    /// What went wrong with the previous attempt.
    pub error: String,
    /// Whether deltas already streamed for this response must be discarded.
    pub discard_partial: bool,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStopReason {
    /// The model gave its final answer.
    Completed,
    /// `--max-turns` was reached while the model still wanted tools.
    MaxTurns,
    /// Interrupted (Ctrl-C, SIGTERM, timeout).
    Aborted,
    /// The provider failed after retries, or another fatal error.
    Error,
    /// The conversation reached the context limit between turns, before the
    /// tool results went back (the runtime compacts and goes on; a run
    /// reports it only when that failed).
    ContextFull,
}

/// One event of a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A model request is about to be sent (turn numbers start at 1).
    TurnStart {
        /// Turn number.
        turn: u32,
    },
    /// Streamed assistant text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Streamed reasoning text.
    ThinkingDelta {
        /// The new reasoning.
        text: String,
    },
    /// The provider request is retried after an error.
    Retry(RetryInfo),
    /// The complete assistant message of this turn.
    AssistantMessage {
        /// The message as it enters the history.
        message: Message,
        /// Why the model stopped.
        stop_reason: Option<StopReason>,
        /// Tokens of this response.
        usage: Usage,
        /// Model that answered, as the provider named it.
        model: String,
    },
    /// A tool call was received; emitted for every call, before validation
    /// and hooks, with the arguments as the model sent them.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        input: Value,
    },
    /// Partial output of a running tool (bash lines).
    ToolExecutionUpdate {
        /// Call id.
        id: String,
        /// New output.
        text: String,
    },
    /// A tool call finished (or was refused).
    ToolExecutionEnd {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Result as sent to the model.
        content: Vec<ToolResultContent>,
        /// Whether it failed.
        is_error: bool,
        /// Structured details for front ends (exit code, paths, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// Wall time of the execution.
        duration_ms: u64,
    },
    /// The todo list changed (after a successful `todo_write`).
    TodoUpdate {
        /// The whole list, in order.
        todos: Vec<TodoItem>,
    },
    /// The conversation was compacted: all but its last turns replaced by a
    /// summary the model wrote.
    Compaction {
        /// Why: `auto` (near the window), `overflow` (the provider said the
        /// prompt is too long), `manual` (`/compact`).
        reason: String,
        /// The summary, as the model will read it.
        summary: String,
        /// Estimated tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// The loop told the model something on its own (e.g. a cut reply).
    Notice {
        /// What it said.
        message: String,
    },
    /// A turn (model response plus its tools) ended.
    TurnEnd {
        /// Turn number.
        turn: u32,
    },
    /// A recoverable or fatal error, described for a person.
    Error {
        /// The message.
        message: String,
    },
    /// The run ended.
    AgentEnd {
        /// Why.
        stop_reason: AgentStopReason,
    },
    /// An event of a subagent started by the `task` call `parent_tool_use_id`.
    Subagent {
        /// The parent's `task` call.
        parent_tool_use_id: String,
        /// The child's event.
        event: Box<AgentEvent>,
    },
}
