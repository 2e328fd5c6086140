//! tern's shared vocabulary: conversation messages and their content blocks,
//! tool definitions and calls, token usage, and the [`AgentEvent`] stream that
//! the TUI, headless output and the session log all consume.
//!
//! This crate holds plain data with serde derives and nothing else: no I/O, no
//! provider wire formats (those live in `tern-llm`), no policy.
//!
//! ```
//! use tern_protocol::{ContentBlock, Message};
//! let m = Message::user_text("hello");
//! assert_eq!(m.text(), "hello");
//! assert!(matches!(m.content[0], ContentBlock::Text { .. }));
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod background;
mod call_args;
pub mod claude;
mod command;
mod details;
mod event;
pub mod exit;
pub mod hosts;
mod judged;
mod message;
mod mode;
pub mod paths;
mod question;
mod rules;
mod sandbox;
pub mod sanitize;
pub mod secrets;
mod session;
mod slash;
pub mod sync;
pub mod text;
pub mod time;
mod title;
mod todo;
mod tool;
mod usage;

pub use background::{TaskStatus, TaskSummary};
pub use call_args::{CallArgs, EditArg};
pub use command::Command;
pub use details::{
    AnswersDetails, BackgroundDetails, BashDetails, DiffLine, EditDetails, FileChange, Hunk, ImageDetails, McpDetails,
    PlanDetails, QUEUED_PREVIEW_BYTES, ReadDetails, SearchDetails, SkillDetails, SubagentActivity, SubagentReport,
    SubagentState, TaskDetails, TodoDetails, ToolDetails, ToolSearchDetails, WebFetchDetails, WebSearchDetails,
    WriteDetails, queued_preview,
};
pub use event::{
    AgentEvent, AgentStopReason, CompactReason, RetryCause, RetryInfo, SessionSwitch, StartupNotice, WaitInfo,
};
pub use judged::{FileIdentity, JudgedPath};
pub use message::{ContentBlock, ImageSource, Message, Role, ServerTool, StopReason, ToolResultContent, WebSource};
pub use mode::{MODES, Mode, UnknownMode};
pub use question::{QuestionOption, UserAnswer, UserQuestion};
pub use rules::{RuleKind, RuleScope};
pub use sandbox::{ChildEnv, Confinement, HOME_SECRETS, SandboxLevel};
pub use session::{
    COMPACTION_SUMMARY_PREFIX, ForkedFrom, HeaderTag, SESSION_FORMAT_VERSION, SessionEntry, SessionHeader,
    SessionRecord, ToolRun, compaction_summary_messages,
};
pub use slash::{SlashCommand, SlashKind};
pub use title::{CallTitle, call_title, count, first_line};
pub use todo::{TodoItem, TodoStatus};
pub use tool::{
    ExecutionMode, ToolCall, ToolDefinition, ToolKind, ToolSource, WebSearchRefused, WebSearchScope,
    canonical_tool_name,
};
pub use usage::{Usage, UsageTotals, sum_usd};
