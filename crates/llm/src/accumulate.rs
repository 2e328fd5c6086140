//! What every wire format's accumulator produces, and the common trait.

use serde_json::Value;
use tern_protocol::{ContentBlock, Message, Role, StopReason, Usage};

use crate::LlmError;

/// A piece of a response, forwarded to listeners as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// Assistant text.
    Text(String),
    /// Reasoning text.
    Thinking(String),
    /// A tool call began (its arguments stream afterwards).
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A piece of a tool call's arguments (JSON text, as it streams).
    ToolInputDelta {
        /// Call id.
        id: String,
        /// The piece.
        json: String,
    },
    /// The request is retried; see [`tern_protocol::RetryInfo`].
    Retry(tern_protocol::RetryInfo),
    /// The model has not begun to answer; see [`tern_protocol::WaitInfo`].
    Waiting(tern_protocol::WaitInfo),
}

/// A tool call whose arguments did not arrive as valid JSON (usually cut by
/// the output-token limit). It is never executed.
#[derive(Debug, Clone, PartialEq)]
pub struct IncompleteToolCall {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The argument text as received.
    pub raw_arguments: String,
}

/// A finished response.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant message, holding only complete tool calls.
    pub message: Message,
    /// Why it stopped; `None` when the stream ended without saying.
    pub stop_reason: Option<StopReason>,
    /// Token usage (zeros when the provider sent none).
    pub usage: Usage,
    /// The model as the provider named it.
    pub model: String,
    /// Tool calls whose arguments were not valid JSON.
    pub incomplete_tool_calls: Vec<IncompleteToolCall>,
}

/// Turns one wire format's SSE events into deltas and a final [`Completion`].
pub trait Accumulator: Send {
    /// Feed one SSE event (`event:` name, possibly empty, and its `data:`).
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, LlmError>;
    /// Whether the terminal event has been seen.
    fn is_done(&self) -> bool;
    /// Build the completion. `Err(LlmError::Incomplete)` when the stream ended
    /// before anything that counts as an end.
    fn finish(self: Box<Self>) -> Result<Completion, LlmError>;
}

/// The assistant message of an OpenAI-style stream (Chat Completions and
/// Responses alike): reasoning, then text, then each call `(id, name, raw
/// arguments)` in order — complete calls as tool uses, those whose
/// arguments are not JSON set aside.
pub(crate) fn assistant_message(
    reasoning: String,
    text: String,
    calls: impl IntoIterator<Item = (String, String, String)>,
) -> (Message, Vec<IncompleteToolCall>) {
    let mut content = Vec::new();
    if !reasoning.is_empty() {
        content.push(ContentBlock::Thinking { thinking: reasoning, signature: None });
    }
    if !text.is_empty() {
        content.push(ContentBlock::Text { text });
    }
    let mut incomplete = Vec::new();
    for (id, name, raw_arguments) in calls {
        match parse_arguments(&raw_arguments) {
            Some(input) => content.push(ContentBlock::ToolUse { id, name, input }),
            None => incomplete.push(IncompleteToolCall { id, name, raw_arguments }),
        }
    }
    (Message { role: Role::Assistant, content }, incomplete)
}

/// Parse accumulated tool arguments: empty means `{}`; anything else must be
/// a JSON object.
pub(crate) fn parse_arguments(raw: &str) -> Option<Value> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Some(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

/// Parse an event's JSON data or fail with a message naming the provider.
pub(crate) fn parse_json(provider: &str, data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| LlmError::Malformed {
        provider: provider.to_string(),
        detail: format!("{e} in chunk {}", crate::error::preview(data)),
    })
}

/// Read a u64 at a JSON pointer, if present.
pub(crate) fn u64_at(v: &Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer).and_then(Value::as_u64)
}

/// Read a string at a JSON pointer, if present.
pub(crate) fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// A page from a provider's JSON (`url`, `title`, and `cited_text` when it
/// is a citation); `None` without a URL.
pub(crate) fn web_source(v: &Value) -> Option<tern_protocol::WebSource> {
    Some(tern_protocol::WebSource {
        url: v["url"].as_str()?.to_string(),
        title: v["title"].as_str().unwrap_or_default().to_string(),
        cited_text: v["cited_text"].as_str().map(str::to_string),
    })
}

/// Add `source` unless the same page is there already.
pub(crate) fn push_source(sources: &mut Vec<tern_protocol::WebSource>, source: tern_protocol::WebSource) {
    if !sources.iter().any(|s| s.url == source.url) {
        sources.push(source);
    }
}
