//! Claude Code's headless shapes, so scripts and SDKs written for
//! `claude -p --output-format stream-json|json` read tern unchanged:
//! `system/init`, `assistant` and `user` message lines (Anthropic Messages
//! content blocks), `stream_event` deltas with `--include-partial-messages`,
//! `system/api_retry` and `system/compact_boundary`, and the `result`
//! object. Every line starts with its `type` and carries `session_id`.
//! tern's own events stay available as `--output-format tern-events`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tern_protocol::claude;
use tern_protocol::sync::LockExt as _;
use tern_protocol::{AgentEvent, AgentStopReason, ContentBlock, Message, StopReason, ToolResultContent, Usage};
use tern_runtime::RunReport;

use crate::claude_wire::{
    AssistantMessage, AssistantMessageStart, Block, ClaudeUsage, CompactMetadata, Delta, Denial, ImageSource, Line,
    MessageDeltaBody, ModelUsage, ResultLine, ServerToolUse, StreamEvent, System, UserMessage,
};

/// Turns tern's events into Claude Code's stream lines for one session.
pub struct ClaudeStream {
    session_id: String,
    partial: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// When each agent's (main: "", a subagent: its `task` call) model request started.
    api_since: HashMap<String, Instant>,
    /// Time spent waiting on the provider in this prompt.
    api_ms: u64,
    /// The main agent's partial message: its id, the open block's index and kind.
    message_id: String,
    open: Option<(u32, &'static str)>,
    next_index: u32,
    /// Why the main agent's last reply stopped (Anthropic's names).
    last_stop: Option<String>,
    /// The calls running (by id): their tool and input, for their `tool_use_result`.
    calls: std::collections::HashMap<String, (String, Value)>,
}

/// A random version-4 UUID, as Claude's lines carry in `uuid`.
pub fn uuid() -> String {
    let mut b: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

fn message_id() -> String {
    let tail: String = (0..24).map(|_| fastrand::alphanumeric()).collect();
    format!("msg_{tail}")
}

impl ClaudeStream {
    /// For `session_id`; `partial`: also `stream_event` deltas.
    pub fn new(session_id: &str, partial: bool) -> Self {
        Self { session_id: session_id.to_string(), partial, state: Mutex::new(State::default()) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock_or_recover()
    }

    /// Start of a prompt: the API time is counted afresh.
    pub fn begin_prompt(&self) {
        let mut s = self.state();
        s.api_ms = 0;
        s.api_since.clear();
        s.last_stop = None;
        s.calls.clear();
    }

    /// Milliseconds spent waiting on the provider since [`ClaudeStream::begin_prompt`].
    pub fn api_ms(&self) -> u64 {
        self.state().api_ms
    }

    /// Why the main agent's last reply of this prompt stopped.
    pub fn last_stop(&self) -> Option<String> {
        self.state().last_stop.clone()
    }

    /// Count what the result needs from an event (provider time, the last
    /// stop reason) without making its lines; [`ClaudeStream::lines`] does
    /// this too.
    pub fn observe(&self, event: &AgentEvent) {
        let (event, who) = match event {
            AgentEvent::Subagent { parent_tool_use_id, event } => (event.as_ref(), parent_tool_use_id.clone()),
            e => (e, String::new()),
        };
        let mut s = self.state();
        match event {
            AgentEvent::TurnStart { .. } => {
                s.api_since.insert(who, Instant::now());
            }
            AgentEvent::AssistantMessage { stop_reason, .. } => {
                if let Some(since) = s.api_since.remove(&who) {
                    s.api_ms += since.elapsed().as_millis() as u64;
                }
                if who.is_empty() {
                    s.last_stop = stop_reason.as_ref().map(stop_reason_name);
                }
            }
            _ => {}
        }
    }

    /// The lines for one event (none for events Claude's stream has no shape for).
    pub fn lines(&self, event: AgentEvent) -> Vec<Line> {
        self.observe(&event);
        let (event, parent) = match event {
            AgentEvent::Subagent { parent_tool_use_id, event } => (*event, Some(parent_tool_use_id)),
            e => (e, None),
        };
        let session_id = || self.session_id.clone();
        let mut out = Vec::new();
        match event {
            AgentEvent::TurnStart { .. } if self.partial && parent.is_none() => out.push(self.message_start()),
            AgentEvent::TextDelta { text } if self.partial && parent.is_none() => {
                self.delta(&mut out, "text", Delta::TextDelta { text });
            }
            AgentEvent::ThinkingDelta { text } if self.partial && parent.is_none() => {
                self.delta(&mut out, "thinking", Delta::ThinkingDelta { thinking: text });
            }
            // A tool call as the model writes it: its own block, its arguments as JSON pieces.
            AgentEvent::ToolInputStart { id, name } if self.partial && parent.is_none() => {
                let mut s = self.state();
                if let Some((index, _)) = s.open.take() {
                    out.push(self.stream_event(StreamEvent::ContentBlockStop { index }));
                }
                let index = s.next_index;
                s.next_index += 1;
                s.open = Some((index, "tool_use"));
                drop(s);
                let name = tern_protocol::claude::claude_tool_name(&name, &Value::Null);
                let content_block = Block::ToolUse { id, name, input: Value::Object(Default::default()) };
                out.push(self.stream_event(StreamEvent::ContentBlockStart { index, content_block }));
            }
            AgentEvent::ToolInputDelta { json, .. } if self.partial && parent.is_none() => {
                let open = self.state().open;
                if let Some((index, "tool_use")) = open {
                    let delta = Delta::InputJsonDelta { partial_json: json };
                    out.push(self.stream_event(StreamEvent::ContentBlockDelta { index, delta }));
                }
            }
            AgentEvent::AssistantMessage { message, stop_reason, usage, model } => {
                let id = {
                    let s = self.state();
                    if self.partial && parent.is_none() && !s.message_id.is_empty() {
                        s.message_id.clone()
                    } else {
                        message_id()
                    }
                };
                let stop = stop_reason.as_ref().map(stop_reason_name);
                if self.partial && parent.is_none() {
                    if let Some((index, _)) = self.state().open.take() {
                        out.push(self.stream_event(StreamEvent::ContentBlockStop { index }));
                    }
                    out.push(self.stream_event(StreamEvent::MessageDelta {
                        delta: MessageDeltaBody { stop_reason: stop.clone(), stop_sequence: None },
                        usage: claude_usage(&usage),
                    }));
                    out.push(self.stream_event(StreamEvent::MessageStop));
                }
                out.push(Line::Assistant {
                    message: AssistantMessage {
                        id,
                        kind: "message",
                        role: "assistant",
                        model,
                        content: content_blocks(&message),
                        stop_reason: stop,
                        stop_sequence: None,
                        usage: claude_usage(&usage),
                    },
                    parent_tool_use_id: parent,
                    session_id: session_id(),
                    uuid: uuid(),
                });
            }
            AgentEvent::ToolCallStart { id, name, input } => {
                self.state().calls.insert(id, (name, input));
            }
            AgentEvent::ToolExecutionEnd { id, content, is_error, details, name, .. } => {
                let (tool, input) = self.state().calls.remove(&id).unwrap_or((name, Value::Null));
                let result = crate::claude_results::tool_use_result(&tool, &input, &content, details.as_deref());
                out.push(Line::User {
                    message: UserMessage {
                        role: "user",
                        content: vec![Block::ToolResult {
                            tool_use_id: id,
                            content: tool_result_content(&content),
                            is_error,
                        }],
                    },
                    parent_tool_use_id: parent,
                    session_id: session_id(),
                    uuid: uuid(),
                    tool_use_result: result,
                })
            }
            // Instructions a subagent read (task_append): a user message of its conversation.
            AgentEvent::InputAppended { text } => out.push(Line::User {
                message: UserMessage { role: "user", content: vec![Block::Text { text }] },
                parent_tool_use_id: parent,
                session_id: session_id(),
                uuid: uuid(),
                tool_use_result: None,
            }),
            AgentEvent::Retry(r) => {
                let restart = r.discard_partial && self.partial && parent.is_none();
                out.push(Line::System(System::ApiRetry {
                    attempt: r.attempt,
                    max_retries: r.max_attempts,
                    retry_delay_ms: r.delay_ms,
                    error: r.error,
                    parent_tool_use_id: parent,
                    session_id: session_id(),
                    uuid: uuid(),
                }));
                // What the broken attempt streamed is abandoned (its message never stops):
                // the next attempt streams a new message, under a new id, from index 0,
                // so a reader that joins deltas per message never repeats the text.
                if restart {
                    out.push(self.message_start());
                }
            }
            AgentEvent::Compaction { reason, tokens_before, tokens_after, .. } => {
                out.push(Line::System(System::CompactBoundary {
                    compact_metadata: CompactMetadata {
                        trigger: if reason == tern_protocol::CompactReason::Manual { "manual" } else { "auto" },
                        pre_tokens: tokens_before,
                        post_tokens: tokens_after,
                    },
                    parent_tool_use_id: parent,
                    session_id: session_id(),
                    uuid: uuid(),
                }))
            }
            // Claude's status line carries the permission mode as it changes.
            AgentEvent::ModeChanged { mode, .. } if parent.is_none() => out.push(Line::System(System::Status {
                status: None,
                permission_mode: mode.claude_name().to_string(),
                session_id: session_id(),
                uuid: uuid(),
            })),
            _ => {}
        }
        out
    }

    /// The `message_start` of a new streamed message (a turn, or the attempt
    /// after a retry that abandoned what streamed): a new id, blocks from 0.
    fn message_start(&self) -> Line {
        let mut s = self.state();
        s.message_id = message_id();
        s.open = None;
        s.next_index = 0;
        let id = s.message_id.clone();
        drop(s);
        self.stream_event(StreamEvent::MessageStart {
            message: AssistantMessageStart {
                id,
                kind: "message",
                role: "assistant",
                content: Vec::new(),
                stop_reason: None,
                stop_sequence: None,
                usage: ClaudeUsage::default(),
            },
        })
    }

    /// A delta of `kind` ("text", "thinking"): a new content block when the kind changes.
    fn delta(&self, out: &mut Vec<Line>, kind: &'static str, delta: Delta) {
        let mut s = self.state();
        let index = match s.open {
            Some((index, open)) if open == kind => index,
            open => {
                if let Some((index, _)) = open {
                    out.push(self.stream_event(StreamEvent::ContentBlockStop { index }));
                }
                let index = s.next_index;
                s.next_index += 1;
                s.open = Some((index, kind));
                let content_block = if kind == "text" {
                    Block::Text { text: String::new() }
                } else {
                    Block::Thinking { thinking: String::new(), signature: String::new() }
                };
                out.push(self.stream_event(StreamEvent::ContentBlockStart { index, content_block }));
                index
            }
        };
        drop(s);
        out.push(self.stream_event(StreamEvent::ContentBlockDelta { index, delta }));
    }

    fn stream_event(&self, event: StreamEvent) -> Line {
        Line::StreamEvent { uuid: uuid(), session_id: self.session_id.clone(), event, parent_tool_use_id: None }
    }
}

/// Anthropic's name for a stop reason.
fn stop_reason_name(r: &StopReason) -> String {
    match r {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::StopSequence => "stop_sequence".into(),
        StopReason::Refusal => "refusal".into(),
        StopReason::PauseTurn => "pause_turn".into(),
        StopReason::Other(s) => s.clone(),
    }
}

/// Usage with Anthropic's names.
pub fn claude_usage(u: &Usage) -> ClaudeUsage {
    ClaudeUsage {
        input_tokens: u.input_tokens,
        cache_creation_input_tokens: u.cache_write_tokens,
        cache_read_input_tokens: u.cache_read_tokens,
        output_tokens: u.output_tokens,
        server_tool_use: ServerToolUse { web_search_requests: u.web_search_requests, web_fetch_requests: 0 },
    }
}

/// A message's blocks as Anthropic Messages content blocks.
pub fn content_blocks(message: &Message) -> Vec<Block> {
    message
        .content
        .iter()
        .filter_map(|b| {
            Some(match b {
                ContentBlock::Text { text } => Block::Text { text: text.clone() },
                ContentBlock::Thinking { thinking, signature } => {
                    Block::Thinking { thinking: thinking.clone(), signature: signature.clone().unwrap_or_default() }
                }
                ContentBlock::RedactedThinking { data } => Block::RedactedThinking { data: data.clone() },
                ContentBlock::Image { source } => Block::Image { source: image(source) },
                // Claude Code's names and keys (`Bash`, `file_path`): SDK apps check them.
                ContentBlock::ToolUse { id, name, input } => Block::ToolUse {
                    id: id.clone(),
                    name: claude::claude_tool_name(name, input),
                    input: claude::claude_tool_input(name, input),
                },
                ContentBlock::ServerToolUse { id, name, input, .. } => {
                    Block::ServerToolUse { id: id.clone(), name: name.clone(), input: input.clone() }
                }
                ContentBlock::ServerToolResult { tool_use_id, sources, error, .. } => {
                    let content: Value = match error {
                        Some(e) => json!({"type": "web_search_tool_result_error", "error_code": e}),
                        None => sources
                            .iter()
                            .map(|s| json!({"type": "web_search_result", "url": s.url, "title": s.title}))
                            .collect(),
                    };
                    Block::WebSearchToolResult { tool_use_id: tool_use_id.clone(), content }
                }
                ContentBlock::Citations { .. } => return None,
                ContentBlock::ToolResult { tool_use_id, content, is_error } => Block::ToolResult {
                    tool_use_id: tool_use_id.clone(),
                    content: tool_result_content(content),
                    is_error: *is_error,
                },
            })
        })
        .collect()
}

fn image(source: &tern_protocol::ImageSource) -> ImageSource {
    ImageSource { kind: "base64", media_type: source.media_type.clone(), data: source.data.clone() }
}

/// A tool result's content: a string when it is all text (as Claude Code
/// writes it), else a list of blocks.
fn tool_result_content(content: &[ToolResultContent]) -> Value {
    if content.iter().all(|c| matches!(c, ToolResultContent::Text { .. })) {
        return Value::String(ToolResultContent::joined_text(content));
    }
    let blocks: Vec<Block> = content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => Block::Text { text: text.clone() },
            ToolResultContent::Image { source } => Block::Image { source: image(source) },
        })
        .collect();
    serde_json::to_value(blocks).unwrap_or(Value::Null)
}

/// Claude's result subtype and tern's terminal reason for a stop.
fn subtype(stop: AgentStopReason) -> (&'static str, &'static str) {
    match stop {
        AgentStopReason::Completed => ("success", "completed"),
        AgentStopReason::MaxTurns => ("error_max_turns", "max_turns"),
        AgentStopReason::MaxBudget => ("error_max_budget_usd", "max_budget_usd"),
        AgentStopReason::NoStructuredOutput => ("error_max_structured_output_retries", "structured_output"),
        AgentStopReason::Error => ("error_during_execution", "error"),
        AgentStopReason::Aborted => ("error_during_execution", "aborted"),
        AgentStopReason::ContextFull => ("error_during_execution", "prompt_too_long"),
    }
}

/// What the result object needs besides the run's report.
pub struct ResultFacts<'a> {
    /// The session.
    pub session_id: &'a str,
    /// Provider wait time in this prompt.
    pub duration_api_ms: u64,
    /// The model (for `modelUsage`).
    pub model: &'a str,
    /// Its context window.
    pub context_window: u64,
    /// Why the last reply stopped (Anthropic's names: `end_turn`, `tool_use`, ...).
    pub stop_reason: Option<String>,
}

/// The `result` object, Claude Code's field names first, then tern's own
/// (`session_usage`, `background_tasks` are set by the caller).
pub fn result_object(report: &RunReport, facts: &ResultFacts<'_>) -> ResultLine {
    let o = &report.outcome;
    let (mut subtype, mut terminal) = subtype(o.stop_reason);
    // A run whose session (or checkpoints) did not reach the disk failed to keep what it did.
    if o.stop_reason == AgentStopReason::Completed && !report.unsaved.is_empty() {
        (subtype, terminal) = ("error_session_not_saved", "session_not_saved");
    }
    let is_error = o.stop_reason != AgentStopReason::Completed || !report.unsaved.is_empty();
    let usage = Usage {
        input_tokens: o.usage.input_tokens,
        output_tokens: o.usage.output_tokens,
        cache_read_tokens: o.usage.cache_read_tokens,
        cache_write_tokens: o.usage.cache_write_tokens,
        web_search_requests: o.usage.web_search_requests,
    };
    // `+ 0.0` turns a negative zero (an empty float sum) into 0.
    let cost = report.cost_usd.max(0.0) + 0.0;
    let mut errors: Vec<String> = o.error.iter().cloned().collect();
    if o.stop_reason == AgentStopReason::MaxTurns && errors.is_empty() {
        errors.push(format!("reached the maximum number of turns ({})", o.turns));
    }
    if o.stop_reason == AgentStopReason::Aborted && errors.is_empty() {
        errors.push("interrupted".into());
    }
    errors.extend(report.unsaved.iter().map(|why| format!("not saved: {why}")));
    let denials = report
        .permission_denials
        .iter()
        .map(|d| Denial {
            tool_name: claude::claude_tool_name(&d.tool_name, &d.tool_input),
            tool_use_id: d.tool_use_id.clone(),
            tool_input: claude::claude_tool_input(&d.tool_name, &d.tool_input),
            reason: d.reason.clone(),
            how_to_allow: d.how_to_allow.clone(),
        })
        .collect();
    let model_usage = ModelUsage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_input_tokens: usage.cache_read_tokens,
        cache_creation_input_tokens: usage.cache_write_tokens,
        web_search_requests: usage.web_search_requests,
        cost_usd: cost,
        context_window: facts.context_window,
    };
    ResultLine {
        subtype,
        is_error,
        duration_ms: report.duration_ms,
        duration_api_ms: facts.duration_api_ms,
        num_turns: o.turns,
        result: o.final_text.clone(),
        session_id: facts.session_id.to_string(),
        total_cost_usd: cost,
        usage: claude_usage(&usage),
        model_usage: Some(BTreeMap::from([(facts.model.to_string(), model_usage)])),
        permission_denials: denials,
        stop_reason: facts.stop_reason.clone(),
        terminal_reason: terminal,
        structured_output: report.structured_output.clone(),
        uuid: uuid(),
        errors: is_error.then_some(errors),
        background_tasks: None,
        session_usage: None,
        session_cost_usd: None,
    }
}

/// The result of a message that never ran (it could not be read), so a
/// caller waiting for one result per message gets it.
pub fn rejected_result(session_id: &str, why: &str) -> Line {
    Line::Result(Box::new(ResultLine {
        subtype: "error_during_execution",
        is_error: true,
        duration_ms: 0,
        duration_api_ms: 0,
        num_turns: 0,
        result: String::new(),
        session_id: session_id.to_string(),
        total_cost_usd: 0.0,
        usage: ClaudeUsage::default(),
        model_usage: None,
        permission_denials: Vec::new(),
        stop_reason: None,
        terminal_reason: "error",
        structured_output: None,
        uuid: uuid(),
        errors: Some(vec![why.to_string()]),
        background_tasks: None,
        session_usage: None,
        session_cost_usd: None,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_version_4() {
        let u = uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
    }

    #[test]
    fn partial_deltas_open_and_close_blocks() {
        let s = ClaudeStream::new("s1", true);
        let mut lines = s.lines(AgentEvent::TurnStart { turn: 1 });
        lines.extend(s.lines(AgentEvent::ThinkingDelta { text: "hm".into() }));
        lines.extend(s.lines(AgentEvent::TextDelta { text: "Hi".into() }));
        lines.extend(s.lines(AgentEvent::TextDelta { text: "!".into() }));
        lines.extend(s.lines(AgentEvent::AssistantMessage {
            message: Message::assistant_text("Hi!"),
            stop_reason: Some(StopReason::EndTurn),
            usage: Usage::default(),
            model: "m".into(),
        }));
        let lines: Vec<Value> = lines.iter().map(|l| serde_json::to_value(l).unwrap()).collect();
        let kinds: Vec<String> = lines
            .iter()
            .map(|l| match l["type"].as_str().unwrap() {
                "stream_event" => l["event"]["type"].as_str().unwrap().to_string(),
                t => t.to_string(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
                "assistant"
            ]
        );
        assert_eq!(lines[5]["event"]["index"], 1);
        assert_eq!(lines[10]["message"]["id"], lines[0]["event"]["message"]["id"]);
        for l in &lines {
            assert_eq!(l.as_object().unwrap().keys().next().unwrap(), "type");
            assert_eq!(l["session_id"], "s1");
        }
    }
}
