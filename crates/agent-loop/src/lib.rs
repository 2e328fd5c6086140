//! The agent loop: send the conversation to a model, run the tools it asks
//! for, send the results back, until it answers without tools.
//!
//! This crate is mechanism only. It defines the tool contract
//! ([`Tool`], [`RuntimeTool`]), schedules a batch of calls (all
//! [`ExecutionMode::Parallel`] → concurrently, any `Sequential` → in order,
//! results always in call order), conforms arguments to each tool's JSON
//! Schema where only one reading is possible (saying what was understood)
//! and validates them, calls [`Hooks`] around every call, honours cancellation and
//! reports everything as one stream of [`AgentEvent`]s. It never decides
//! permissions, never renders, never touches files: whoever installs the
//! hooks and tools does.
//!
//! ```no_run
//! # async fn demo(provider: std::sync::Arc<dyn tern_llm::Provider>, tools: Vec<tern_agent_loop::RuntimeTool>) {
//! use tern_agent_loop::{AgentLoop, LoopConfig, NoHooks};
//! let agent = AgentLoop::new(provider, tools, std::sync::Arc::new(NoHooks), LoopConfig::new("mock", "You are terse."));
//! let mut history = vec![tern_protocol::Message::user_text("hi")];
//! let events: tern_agent_loop::EventSink = std::sync::Arc::new(|e| println!("{e:?}"));
//! let outcome = agent.run(&mut history, &events, &tokio_util::sync::CancellationToken::new()).await;
//! println!("{:?}", outcome.stop_reason);
//! # }
//! ```
//!
//! [`ExecutionMode::Parallel`]: tern_protocol::ExecutionMode::Parallel
//! [`AgentEvent`]: tern_protocol::AgentEvent

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod batch;
mod conform;
mod hooks;
mod run;
mod text_calls;
mod tool;

pub use batch::{ToolCallResult, execute_batch};
pub use conform::{conform_to_schema, understood_note};
pub use hooks::{BeforeToolCall, Hooks, NoHooks};
pub use run::{AgentLoop, EventSink, Inbox, InputTokenEstimate, LoopConfig, RunOutcome, TurnTools};
pub use tool::{
    InvalidInput, RuntimeTool, SchemaViolation, Tool, ToolContext, ToolError, ToolOutput, UpdateSink, request_tools,
};
