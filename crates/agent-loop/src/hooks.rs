//! Hooks around every tool call and model request. Policy (permissions,
//! external hook commands) is installed here by the runtime; the loop only
//! calls them.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tern_llm::ModelRequest;
use tern_protocol::{Confinement, JudgedPath, Message, ToolCall};

use crate::{RuntimeTool, ToolCallResult};

/// What `before_tool_call` decided.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeToolCall {
    /// Run the call, with rewritten arguments if given.
    Continue {
        /// Replacement arguments (re-validated against the schema).
        input: Option<Value>,
        /// How confined the call's subprocesses run (`None`: the tool's own default).
        confinement: Option<Confinement>,
        /// The path judged for the call, which the tool must touch and no
        /// other (`None`: nothing judged a path).
        judged: Option<JudgedPath>,
    },
    /// Do not run it; the reason becomes the error result the model sees.
    Block {
        /// Why, worded for the model.
        reason: String,
    },
}

/// Optional callbacks. Every method has a do-nothing default.
pub trait Hooks: Send + Sync {
    /// Before a validated call runs.
    fn before_tool_call<'a>(&'a self, _call: &'a ToolCall) -> BoxFuture<'a, BeforeToolCall> {
        Box::pin(async { BeforeToolCall::Continue { input: None, confinement: None, judged: None } })
    }

    /// After a batch's results joined the conversation: `Some(answer)` ends
    /// the run as completed, with `answer` as its final text (a plan nobody
    /// can approve). Default: go on.
    fn end_run(&self) -> Option<String> {
        None
    }

    /// Before each request after the first: `Some(why)` when the spending
    /// limit is reached by the run's `responses` so far (the run then ends
    /// as [`tern_protocol::AgentStopReason::MaxBudget`]). Default: no limit.
    fn spending_limit(&self, _responses: &[tern_protocol::Usage]) -> Option<String> {
        None
    }

    /// After a call finished; may rewrite the result.
    fn after_tool_call<'a>(&'a self, _call: &'a ToolCall, result: ToolCallResult) -> BoxFuture<'a, ToolCallResult> {
        Box::pin(async move { result })
    }

    /// Each message the loop appends to the history (assistant replies, tool
    /// results, its own notices to the model), as it is appended: the
    /// runtime records them so a session can be resumed.
    fn on_message(&self, _message: &Message) {}

    /// Before each model request, on the copy of the conversation that is
    /// sent (the history itself is not changed).
    fn transform_context<'a>(&'a self, _messages: &'a mut Vec<Message>) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Each request as it goes to the provider, with the tools it offers (in
    /// its order): the runtime keeps the last one so a fork can send the same
    /// prefix. Shared, not copied: keeping it costs a reference count.
    fn on_request(&self, _request: &Arc<ModelRequest>, _tools: &[RuntimeTool]) {}
}

/// Hooks that do nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}
