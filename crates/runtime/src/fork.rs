//! The `fork` subagent type: a child that goes on from the parent's
//! conversation as it stands at the `task` call, so its first request is the
//! parent's last request plus two messages and the provider's prompt cache
//! (Anthropic's `cache_control` marks, OpenAI's prefix cache under the same
//! `prompt_cache_key`, a local server's KV cache) serves the whole prefix.
//!
//! - The run's hooks keep the last request the parent sent and the reply to
//!   it ([`ForkPoint`]); a fork takes both when its `task` call runs.
//! - Its first request: the parent's system prompt, tool array and messages
//!   unchanged (the same [`ModelRequest`] fields, so the same bytes on every
//!   wire), then the parent's reply that made the call, then one user
//!   message answering every call of that reply: the `task` call's result
//!   is the fork's brief ([`brief`]), the others say they are the parent's.
//!   A `task` call must be answered by a tool result on every wire, so the
//!   instructions go there rather than in a message of their own.
//! - It sends the parent's tool array as it was, but what it may run is
//!   capped at execution: the tools no subagent gets
//!   ([`tern_catalog::SUBAGENT_NEVER`], `task` included: no nesting) and
//!   `tool_search` (it would load tools into the parent's list) answer with
//!   a refusal instead of running. Removing them would change the prefix.
//! - Bounded: a parent whose context is past the compaction threshold (or
//!   the model's window when auto-compaction is off) is not forked
//!   ([`too_large`]); the fork stops at the same threshold.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, TurnTools, UpdateSink};
use tern_llm::ModelRequest;
use tern_protocol::sync::LockExt as _;
use tern_protocol::{ContentBlock, Message, Role, ToolResultContent};
use tokio_util::sync::CancellationToken;

/// The `subagent_type` that forks.
pub const FORK: &str = "fork";

/// What a fork may not run although its tool array offers it: the tools no
/// subagent gets, whatever delegates to another agent (`task_append` too:
/// delegation is only the main agent's), and `tool_search`.
fn refused_in_fork(name: &str) -> bool {
    tern_catalog::SUBAGENT_NEVER.contains(&name)
        || tern_protocol::ToolKind::of(name) == tern_protocol::ToolKind::Delegate
        || name == "tool_search"
}

/// The parent's last request and the reply to it, kept by the run's hooks.
#[derive(Default)]
pub(crate) struct ForkPoint {
    last: Mutex<Option<ParentTurn>>,
}

struct ParentTurn {
    request: Arc<ModelRequest>,
    tools: Vec<RuntimeTool>,
    reply: Option<Message>,
}

impl ForkPoint {
    /// The parent sent `request` offering `tools`.
    pub(crate) fn sent(&self, request: &Arc<ModelRequest>, tools: &[RuntimeTool]) {
        *self.last.lock_or_recover() =
            Some(ParentTurn { request: request.clone(), tools: tools.to_vec(), reply: None });
    }

    /// The parent's loop appended `message`: an assistant message is the
    /// reply to the last request.
    pub(crate) fn appended(&self, message: &Message) {
        if message.role == Role::Assistant
            && let Some(turn) = self.last.lock_or_recover().as_mut()
        {
            turn.reply = Some(message.clone());
        }
    }

    /// The run ended: nothing to fork from until the next request.
    pub(crate) fn clear(&self) {
        *self.last.lock_or_recover() = None;
    }

    /// The fork of the call `call_id` with the brief `prompt`: the parent's
    /// request, tools and the fork's conversation.
    pub(crate) fn fork(&self, call_id: &str, prompt: &str) -> Result<Fork, String> {
        let last = self.last.lock_or_recover();
        let Some(ParentTurn { request, tools, reply: Some(reply) }) = last.as_ref() else {
            return Err("nothing to fork: this conversation has no reply to fork from yet".into());
        };
        let history = fork_history(&request.messages, reply, call_id, prompt)?;
        Ok(Fork { request: request.clone(), tools: tools.clone(), history })
    }
}

/// A fork about to run.
#[derive(Debug)]
pub(crate) struct Fork {
    /// The parent's last request (model, system prompt, tools, limits, cache key).
    pub request: Arc<ModelRequest>,
    /// The tools it offered, in its order.
    pub tools: Vec<RuntimeTool>,
    /// The fork's conversation: the request's messages, the reply, the brief.
    pub history: Vec<Message>,
}

impl Fork {
    /// Why the fork is not started when its first request would be past
    /// `limit` tokens (estimated as compaction estimates).
    pub(crate) fn too_large(&self, limit: u64) -> Option<String> {
        let tokens = crate::context::request_tokens(&self.request.system, &self.request.tools, &self.history);
        too_large(tokens, limit)
    }

    /// Its tool list: the parent's array as sent, the refused tools answering
    /// with a refusal; deferred tools stay callable by name through `parent`.
    pub(crate) fn turn_tools(&self, parent: Arc<dyn TurnTools>) -> Arc<dyn TurnTools> {
        Arc::new(ForkTools { listed: self.tools.iter().map(capped).collect(), parent })
    }
}

/// Why a fork of a conversation of `tokens` is refused with this `limit`.
fn too_large(tokens: u64, limit: u64) -> Option<String> {
    (tokens > limit).then(|| {
        format!(
            "not forked: this conversation is about {tokens} tokens, past the {limit} at which it is compacted, so a \
             fork would start out too large. Use another subagent type with a self-contained prompt instead"
        )
    })
}

/// What the `task` call's result tells the fork.
fn brief(prompt: &str) -> String {
    format!(
        "You are a fork: a copy of the agent that made this `task` call, with the conversation above as your \
         context. That agent goes on without you and gets your final message as this call's result. Your task:\n\n\
         {prompt}\n\nDo only this task, on your own: nobody answers questions. You cannot start subagents, ask the \
         person, change the todo list or plan mode, or load tools with tool_search: those calls are refused. End \
         with a complete, self-contained final message."
    )
}

/// What the parent's other calls of the same reply answer in the fork.
const NOT_IN_FORK: &str = "Not run in this fork: this call belongs to the agent you were forked from, which runs it.";

/// The fork's conversation: `messages`, the `reply` holding the call
/// `call_id`, and a tool result for each of the reply's calls.
fn fork_history(messages: &[Message], reply: &Message, call_id: &str, prompt: &str) -> Result<Vec<Message>, String> {
    let calls: Vec<&str> = reply
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    if !calls.contains(&call_id) {
        return Err("not forked: this `task` call is not in the conversation's last reply".into());
    }
    let results = calls
        .into_iter()
        .map(|id| ContentBlock::ToolResult {
            tool_use_id: id.to_string(),
            content: vec![ToolResultContent::text(if id == call_id { brief(prompt) } else { NOT_IN_FORK.into() })],
            is_error: false,
        })
        .collect();
    let mut history = Vec::with_capacity(messages.len() + 2);
    history.extend_from_slice(messages);
    history.push(reply.clone());
    history.push(Message { role: Role::User, content: results });
    Ok(history)
}

/// `tool` as a fork offers it: itself, or, for a refused one, the same
/// definition over a refusal.
fn capped(tool: &RuntimeTool) -> RuntimeTool {
    if !refused_in_fork(tool.name()) {
        return tool.clone();
    }
    RuntimeTool::new(tool.definition.clone(), Arc::new(Refused(tool.name().to_string())), tool.source.clone())
}

/// A tool a fork may not run.
struct Refused(String);

impl Refused {
    fn error(&self) -> ToolError {
        let name = &self.0;
        let why = match name.as_str() {
            "task" => "a fork cannot start subagents; do the work yourself",
            "task_append" => "only the agent you were forked from gives its subagents more work",
            "ask_user" => "nobody answers a fork's questions; decide, and say what you assumed in your final message",
            "tool_search" => {
                "a fork's tool list is the one it was forked with (kept the same for the prompt cache); use the \
                 tools you have"
            }
            _ => "only the agent you were forked from changes the todo list and plan mode",
        };
        ToolError::new(format!("`{name}` is refused in a fork: {why}."))
    }
}

impl Tool for Refused {
    fn precheck(&self, _input: &Value) -> Result<(), ToolError> {
        Err(self.error())
    }

    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        _input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Err(self.error()) })
    }
}

/// A fork's tools: always the parent's array; deferred tools through the parent's catalog.
struct ForkTools {
    listed: Vec<RuntimeTool>,
    parent: Arc<dyn TurnTools>,
}

impl TurnTools for ForkTools {
    fn tools_for_turn(&self) -> Vec<RuntimeTool> {
        self.listed.clone()
    }

    fn callable_unlisted(&self) -> Vec<RuntimeTool> {
        self.parent.callable_unlisted().iter().map(capped).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str) -> ContentBlock {
        ContentBlock::ToolUse { id: id.into(), name: name.into(), input: json!({}) }
    }

    #[test]
    fn the_fork_answers_every_call_of_the_reply_and_its_own_with_the_brief() {
        let before = vec![Message::user_text("hello")];
        let reply = Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: "two things".into() }, call("a", "read"), call("b", "task")],
        };
        let history = fork_history(&before, &reply, "b", "COUNT THE FILES").unwrap();
        assert_eq!(history[..2], [before[0].clone(), reply.clone()]);
        let ContentBlock::ToolResult { tool_use_id, content, is_error: false } = &history[2].content[1] else {
            panic!("{:?}", history[2])
        };
        assert_eq!(tool_use_id, "b");
        assert!(
            matches!(&content[0], ToolResultContent::Text { text } if text.contains("Your task:\n\nCOUNT THE FILES"))
        );
        assert_eq!(
            history[2].content[0],
            ContentBlock::ToolResult {
                tool_use_id: "a".into(),
                content: vec![ToolResultContent::text(NOT_IN_FORK)],
                is_error: false
            }
        );
        assert!(fork_history(&before, &reply, "zz", "p").unwrap_err().contains("not in the conversation's last reply"));
    }

    #[test]
    fn a_fork_point_needs_a_reply_and_is_cleared_at_the_end_of_the_run() {
        let point = ForkPoint::default();
        assert!(point.fork("b", "p").is_err(), "nothing sent yet");
        point.sent(&Arc::new(ModelRequest::new("m", "SYSTEM", vec![Message::user_text("hi")])), &[]);
        assert!(point.fork("b", "p").unwrap_err().contains("no reply"));
        point.appended(&Message { role: Role::Assistant, content: vec![call("b", "task")] });
        let fork = point.fork("b", "p").unwrap();
        assert_eq!((fork.request.system.as_str(), fork.history.len()), ("SYSTEM", 3));
        point.clear();
        assert!(point.fork("b", "p").is_err());
    }

    #[test]
    fn a_fork_past_the_threshold_is_refused() {
        assert_eq!(too_large(100, 100), None);
        assert!(too_large(101, 100).unwrap().contains("about 101 tokens, past the 100"));
    }

    #[test]
    fn nesting_and_the_parents_own_tools_are_refused_by_name() {
        for name in
            ["task", "task_append", "ask_user", "todo_write", "enter_plan_mode", "exit_plan_mode", "tool_search"]
        {
            assert!(refused_in_fork(name), "{name}");
            let e = Refused(name.into()).precheck(&json!({})).unwrap_err();
            assert!(e.message.starts_with(&format!("`{name}` is refused in a fork: ")), "{}", e.message);
        }
        assert!(!refused_in_fork("bash") && !refused_in_fork("read"));
    }
}
