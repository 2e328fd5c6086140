//! The one event stream of a run. The TUI renders it, headless `stream-json`
//! prints it line by line, and the session log stores it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Message, Mode, StopReason, TodoItem, ToolResultContent, Usage, UsageTotals};

/// What kind of failure a retry follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryCause {
    /// The provider answered with an HTTP status ([`RetryInfo::status`]).
    Http,
    /// The provider said it is overloaded inside the stream.
    Overloaded,
    /// The connection failed or broke.
    Connect,
    /// The stream ended early or sent something unreadable.
    Stream,
    /// Something else.
    #[default]
    Other,
}

/// A provider request is being retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryInfo {
    /// The attempt that is about to start (2 = first retry).
    pub attempt: u32,
    /// Attempts allowed in all.
    pub max_attempts: u32,
    /// How long we wait before it.
    pub delay_ms: u64,
    /// What went wrong with the previous attempt, for a person.
    pub error: String,
    /// The kind of failure, for a front end to word.
    #[serde(default)]
    pub cause: RetryCause,
    /// The HTTP status, when the provider answered with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Whether deltas already streamed for this response must be discarded.
    pub discard_partial: bool,
}

/// The model has the request and has not begun to answer: it is reading the
/// prompt (a local model on a CPU may take minutes). Sent about once a
/// second at first, then every few seconds, until the answer begins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitInfo {
    /// The request's estimated input tokens.
    pub input_tokens: u64,
    /// Time since the request was sent.
    pub elapsed_ms: u64,
    /// How long after the request the wait ends if the model does not begin.
    pub limit_secs: u64,
}

impl WaitInfo {
    /// What the wait is, for a person: `the model is reading 4.2k tokens… 12 s`.
    pub fn describe(&self) -> String {
        format!("{}… {} s", self.reading(), self.elapsed_ms / 1_000)
    }

    /// The same without the time, for a status line that keeps its own
    /// clock: `the model is reading 4.2k tokens`.
    pub fn reading(&self) -> String {
        let tokens = match self.input_tokens {
            n if n < 1_000 => n.to_string(),
            n if n < 100_000 => format!("{:.1}k", n as f64 / 1_000.0),
            n => format!("{}k", n / 1_000),
        };
        format!("the model is reading {tokens} tokens")
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStopReason {
    /// The model gave its final answer.
    Completed,
    /// `--max-turns` was reached while the model still wanted tools.
    MaxTurns,
    /// `--max-budget-usd` was spent while the model still wanted to go on.
    MaxBudget,
    /// `--json-schema`: the model ended without giving its structured answer.
    NoStructuredOutput,
    /// Interrupted (Ctrl-C, SIGTERM, timeout).
    Aborted,
    /// The provider failed after retries, or another fatal error.
    Error,
    /// The conversation reached the context limit between turns, before the
    /// tool results went back (the runtime compacts and goes on; a run
    /// reports it only when that failed).
    ContextFull,
}

/// Something a session's setup left for the person to know, as every front
/// end shows it ([`StartupNotice::warning`] ones always, notes when asked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartupNotice {
    /// A problem (a config value ignored, an MCP server that failed), not a note.
    pub warning: bool,
    /// What to say.
    pub message: String,
}

/// Why a conversation was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactReason {
    /// The conversation neared the window.
    Auto,
    /// The provider refused a request as too long.
    Overflow,
    /// The person asked (`/compact`).
    Manual,
}

impl CompactReason {
    /// Its word in output formats.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactReason::Auto => "auto",
            CompactReason::Overflow => "overflow",
            CompactReason::Manual => "manual",
        }
    }
}

impl std::fmt::Display for CompactReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a front end's session became another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSwitch {
    /// `/resume`: an earlier session, with its conversation, usage and model.
    Resumed,
    /// `/fork`: a copy of this one.
    Forked,
    /// `/clear`: a new, empty conversation.
    Cleared,
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
    /// The model has not begun to answer yet (it is reading the prompt).
    Waiting(WaitInfo),
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
    /// A tool call's arguments begin to stream (the model is writing it).
    ToolInputStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A piece of a streaming tool call's arguments (JSON text).
    ToolInputDelta {
        /// Call id.
        id: String,
        /// The piece.
        json: String,
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
        /// What the tool reports besides its result (exit code, diff, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Box<crate::ToolDetails>>,
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
        /// Why.
        reason: CompactReason,
        /// The summary, as the model will read it.
        summary: String,
        /// Estimated tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// Instructions given to the run while it ran (a parent's `task_append`
    /// to a background subagent) joined its conversation as a user message.
    InputAppended {
        /// The message as the model reads it.
        text: String,
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
    /// A prompt starts to run: `text` is what the model is sent; `command`
    /// the `/NAME args` it was expanded from, when it was one.
    PromptStarted {
        /// The prompt as it runs.
        text: String,
        /// The custom command or skill as typed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
    },
    /// The permission mode changed (a command, a plan-mode tool, an answer).
    ModeChanged {
        /// The mode now.
        mode: Mode,
        /// The mode before.
        previous: Mode,
    },
    /// The model changed (a command, a resume, a command's `model`).
    ModelChanged {
        /// The model now.
        model: String,
        /// Its context window in tokens.
        context_window: u64,
        /// Whether a price is known for it.
        priced: bool,
    },
    /// The session's usage so far (after each run, and after a resume).
    UsageUpdated {
        /// Tokens in all, subagents included.
        totals: UsageTotals,
        /// What they cost, in US dollars (0 when no price is known).
        cost_usd: f64,
    },
    /// The session is now another one.
    SessionSwitched {
        /// The session's id now.
        id: String,
        /// How.
        how: SessionSwitch,
    },
    /// A background task started or ended (bash `run_in_background`, a call
    /// moved there with Ctrl+B, a background subagent). Sent outside runs
    /// too, to the front end that watches the session's tasks.
    BackgroundTask {
        /// The task as it stands now (running: it started; else: it ended).
        task: crate::TaskSummary,
    },
    /// An event of a subagent started by the `task` call `parent_tool_use_id`.
    Subagent {
        /// The parent's `task` call.
        parent_tool_use_id: String,
        /// The child's event.
        event: Box<AgentEvent>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_says_how_many_tokens_are_read_and_for_how_long() {
        let w = |input_tokens, elapsed_ms| WaitInfo { input_tokens, elapsed_ms, limit_secs: 1800 }.describe();
        assert_eq!(w(4_213, 12_400), "the model is reading 4.2k tokens… 12 s");
        assert_eq!(w(640, 1_000), "the model is reading 640 tokens… 1 s");
        assert_eq!(w(152_000, 61_000), "the model is reading 152k tokens… 61 s");
    }
}
