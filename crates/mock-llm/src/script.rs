//! The JSON script a mock server plays: one entry per model turn (a turn
//! with `when_request_contains` answers any request holding that text).
//!
//! ```json
//! {"turns": [
//!   {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]},
//!   {"faults": [{"status": 429, "retry_after": "0"}], "text": "Done."}
//! ]}
//! ```

use serde::Deserialize;
use serde_json::Value;

/// A whole script.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Model name reported in responses (default: the requested model).
    #[serde(default)]
    pub model: Option<String>,
    /// Delay between streamed events, for demos (default 0).
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// A request body larger than this many bytes is refused with HTTP 400
    /// "prompt is too long", as a provider refuses one over the model's
    /// context window (default: no limit).
    #[serde(default)]
    pub max_request_bytes: Option<u64>,
    /// Refuse a request that declares tools (a non-empty `tools` list, or
    /// `tool_choice`) with HTTP 500 "tools param requires --jinja flag", as
    /// llama.cpp's server started without Jinja templates does (default false).
    #[serde(default)]
    pub refuse_tools: bool,
    /// Hand each streamed event to the socket in a write of its own, as small
    /// Python proxies and llama.cpp's server do (the mock never sets
    /// TCP_NODELAY): on a reused connection Nagle's algorithm then holds each
    /// write until the client's delayed ACK, about 40 ms (default false).
    #[serde(default)]
    pub small_writes: bool,
    /// The turns, in order; turn N answers a conversation that already has N
    /// assistant replies.
    pub turns: Vec<Turn>,
}

/// One assistant reply, plus faults to inject before it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Reasoning to stream first.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Assistant text.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    /// A search the provider runs itself before the text, which then cites
    /// every result — served only when the request declares the provider's
    /// web search tool (Anthropic `web_search_20250305`, Responses
    /// `web_search`), as a real provider would.
    #[serde(default)]
    pub web_search: Option<ScriptSearch>,
    /// Override the stop reason (`end_turn`, `tool_use`, `max_tokens`, or
    /// `none` to send no stop reason at all).
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Override usage; default is derived from sizes.
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    /// Serve this turn for any request whose body contains this text (e.g.
    /// a compaction request's marker), whatever its position; such turns
    /// are left out when counting the others.
    #[serde(default)]
    pub when_request_contains: Option<String>,
    /// Faults for successive attempts at this turn: attempt 1 gets
    /// `faults[0]`, attempt 2 `faults[1]`, …; once they run out, the turn is
    /// served normally (unless the last fault has `repeat`).
    #[serde(default)]
    pub faults: Vec<Fault>,
}

/// A tool call in a script.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Tool name.
    pub name: String,
    /// Arguments as JSON (ignored when `raw_arguments` is set).
    #[serde(default)]
    pub arguments: Value,
    /// Arguments as raw text, to send something that is not JSON.
    #[serde(default)]
    pub raw_arguments: Option<String>,
    /// Call id (default derived from turn and position).
    #[serde(default)]
    pub id: Option<String>,
}

/// A provider-side web search in a script.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptSearch {
    /// What the model searched for.
    pub query: String,
    /// The pages found.
    #[serde(default)]
    pub results: Vec<ScriptPage>,
    /// Fail with this error code instead (Anthropic `max_uses_exceeded`, ...).
    #[serde(default)]
    pub error: Option<String>,
}

/// A page a scripted search found.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptPage {
    /// Its address.
    pub url: String,
    /// Its title.
    pub title: String,
}

/// Usage numbers to report.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads.
    #[serde(default)]
    pub cache_read_tokens: u64,
}

/// Something to go wrong on one attempt.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Answer with this HTTP status and an error body.
    #[serde(default)]
    pub status: Option<u16>,
    /// Error message in the body.
    #[serde(default)]
    pub message: Option<String>,
    /// `retry-after` header value.
    #[serde(default)]
    pub retry_after: Option<String>,
    /// Wait this long before the first byte (then serve normally unless
    /// another field of this fault applies).
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Close the stream after this many SSE events.
    #[serde(default)]
    pub cut_after_events: Option<usize>,
    /// Send a chunk that is not JSON after this many events.
    #[serde(default)]
    pub malformed_after_events: Option<usize>,
    /// Send an in-stream error event (Anthropic `overloaded_error`, OpenAI
    /// `server_error`) after this many events, then end the stream.
    #[serde(default)]
    pub stream_error_after_events: Option<usize>,
    /// After this many events, send nothing more and keep the connection
    /// open (0: headers without a body).
    #[serde(default)]
    pub stall_after_events: Option<usize>,
    /// After this many events, send keep-alives forever (Anthropic `ping`
    /// events, SSE comments for OpenAI), every 10 ms.
    #[serde(default)]
    pub pings_after_events: Option<usize>,
    /// After this many events, stream text deltas forever.
    #[serde(default)]
    pub endless_text_after_events: Option<usize>,
    /// Apply this fault to every later attempt too.
    #[serde(default)]
    pub repeat: bool,
}

/// A script that cannot be read: where in its text, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid mock script: {why}")]
pub struct ScriptError {
    /// The line of the script text (1-based; 0 when the text ended early).
    pub line: usize,
    /// The column of that line (1-based).
    pub column: usize,
    /// What is wrong, as the JSON reader says (with the line and column).
    pub why: String,
}

impl Script {
    /// Parse a script, with a message that names what is wrong.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        serde_json::from_str(text).map_err(|e| ScriptError { line: e.line(), column: e.column(), why: e.to_string() })
    }
}

impl Turn {
    /// The fault for a 1-based attempt, if any.
    pub fn fault_for(&self, attempt: usize) -> Option<&Fault> {
        match self.faults.get(attempt.saturating_sub(1)) {
            Some(f) => Some(f),
            None => self.faults.last().filter(|f| f.repeat),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_script_says_where_and_what() {
        let err = Script::from_json("{\"turns\": [\n  {\"text\": 3}\n]}").unwrap_err();
        assert_eq!((err.line, err.column), (2, 12), "{err}");
        assert!(err.why.contains("invalid type"), "{err}");
        assert!(err.to_string().starts_with("invalid mock script: invalid type"), "{err}");
        assert!(err.to_string().ends_with("at line 2 column 12"), "{err}");
    }
}
