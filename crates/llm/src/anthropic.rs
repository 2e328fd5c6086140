//! Anthropic Messages API: request body and stream accumulator.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use tern_protocol::{ContentBlock, Message, Role, ServerTool, StopReason, ToolResultContent, Usage, WebSource};

use crate::accumulate::{parse_arguments, parse_json, push_source, str_at, u64_at, web_source};
use crate::{Accumulator, Completion, IncompleteToolCall, LlmError, ModelRequest, StreamDelta};

const PROVIDER: &str = "anthropic";

/// The JSON body of a streaming `POST /v1/messages`, as a value (tests
/// and callers that add fields); the same bytes as [`request_bytes`].
pub fn request_body(req: &ModelRequest) -> Value {
    serde_json::to_value(wire(req)).unwrap_or(Value::Null)
}

/// The JSON body of a streaming `POST /v1/messages`, serialized straight
/// from the request: no copy of the conversation is made, which matters
/// with a long one (every turn sends it all).
pub fn request_bytes(req: &ModelRequest) -> Vec<u8> {
    serde_json::to_vec(&wire(req)).unwrap_or_default()
}

/// Prompt caching (at most 4 breakpoints: tools, system, and the two latest
/// user turns): the end of the conversation, so the next turn reads
/// everything before it from cache, and the turn before it, which the last
/// request wrote, so a turn that added many blocks still reads the cache.
fn cache_marks(messages: &[WireMessage<'_>]) -> Vec<usize> {
    let user_turns: Vec<usize> =
        messages.iter().enumerate().filter(|(_, m)| m.role == "user").map(|(i, _)| i).rev().take(2).collect();
    let mut marks: Vec<usize> = user_turns;
    if let Some(last) = messages.len().checked_sub(1)
        && !marks.contains(&last)
    {
        marks.truncate(1);
        marks.insert(0, last);
    }
    marks
}

fn wire(req: &ModelRequest) -> WireBody<'_> {
    let mut messages: Vec<WireMessage<'_>> = req.messages.iter().map(message_wire).collect();
    for at in cache_marks(&messages) {
        if let Some(block) = messages.get_mut(at).and_then(|m| m.content.last_mut())
            && matches!(&block.block, Wire::Block(b) if !matches!(b, WireBlock::Thinking { .. } | WireBlock::RedactedThinking { .. }))
        {
            block.cache_control = Some(EPHEMERAL);
        }
    }
    // Server tools first: the cache mark stays on the last function tool.
    let mut tools: Vec<WireTool<'_>> = req.server_tools.iter().map(server_tool_wire).collect();
    tools.extend(req.tools.iter().map(|t| WireTool::Function {
        name: &t.name,
        description: &t.description,
        input_schema: &t.input_schema,
        cache_control: None,
    }));
    if let Some(WireTool::Function { cache_control, .. }) = tools.last_mut() {
        *cache_control = Some(EPHEMERAL);
    }
    WireBody {
        model: &req.model,
        max_tokens: req.max_tokens,
        messages,
        stream: true,
        system: (!req.system.is_empty())
            .then(|| [SystemBlock { kind: "text", text: &req.system, cache_control: EPHEMERAL }]),
        tools,
        thinking: req.thinking_budget.map(|budget_tokens| Thinking { kind: "enabled", budget_tokens }),
    }
}

#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct WireBody<'a> {
    model: &'a str,
    max_tokens: u64,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[SystemBlock<'a>; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u64,
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireTool<'a> {
    Function {
        name: &'a str,
        description: &'a str,
        input_schema: &'a Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// `web_search_20250305`: `allowed_domains` and `blocked_domains` may
    /// not both be sent; the allow list wins (it is the narrower).
    WebSearch {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_uses: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        allowed_domains: Option<&'a [String]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        blocked_domains: Option<&'a [String]>,
    },
}

/// The version of Anthropic's web search tool tern speaks.
pub const WEB_SEARCH_TOOL_TYPE: &str = "web_search_20250305";

fn server_tool_wire(t: &ServerTool) -> WireTool<'_> {
    match t {
        ServerTool::WebSearch { max_uses, allowed_domains, blocked_domains } => WireTool::WebSearch {
            kind: WEB_SEARCH_TOOL_TYPE,
            name: "web_search",
            max_uses: *max_uses,
            allowed_domains: (!allowed_domains.is_empty()).then_some(allowed_domains.as_slice()),
            blocked_domains: (allowed_domains.is_empty() && !blocked_domains.is_empty())
                .then_some(blocked_domains.as_slice()),
        },
    }
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Marked<'a>>,
}

/// A content block and, on the ones that end a cached prefix, its marker.
#[derive(Serialize)]
struct Marked<'a> {
    #[serde(flatten)]
    block: Wire<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A block tern writes, or one the provider sent that goes back verbatim
/// (always a JSON object: [`block_wire`] checks).
#[derive(Serialize)]
#[serde(untagged)]
enum Wire<'a> {
    Block(WireBlock<'a>),
    Verbatim(&'a serde_json::Map<String, Value>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text { text: &'a str },
    Thinking { thinking: &'a str, signature: &'a str },
    RedactedThinking { data: &'a str },
    Image { source: ImageWire<'a> },
    ToolUse { id: &'a str, name: &'a str, input: &'a Value },
    ServerToolUse { id: &'a str, name: &'a str, input: &'a Value },
    ToolResult { tool_use_id: &'a str, content: Vec<WireBlock<'a>>, is_error: bool },
}

#[derive(Serialize)]
struct ImageWire<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

fn message_wire(m: &Message) -> WireMessage<'_> {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let content = m
        .content
        .iter()
        .filter_map(|b| block_wire(b, &m.content))
        .map(|block| Marked { block, cache_control: None })
        .collect();
    WireMessage { role, content }
}

/// The verbatim result block Anthropic sent for the server call `id`, if
/// the message holds one.
fn anthropic_result<'a>(id: &str, siblings: &'a [ContentBlock]) -> Option<&'a serde_json::Map<String, Value>> {
    siblings.iter().find_map(|b| match b {
        ContentBlock::ServerToolResult { tool_use_id, raw: Value::Object(raw), .. }
            if tool_use_id == id
                && raw.get("type").and_then(Value::as_str).is_some_and(|t| t.ends_with("_tool_result")) =>
        {
            Some(raw)
        }
        _ => None,
    })
}

fn block_wire<'a>(b: &'a ContentBlock, siblings: &'a [ContentBlock]) -> Option<Wire<'a>> {
    // A server call goes back only with its result (the API wants both),
    // and only one Anthropic made (another provider's has its own `raw`).
    match b {
        ContentBlock::ServerToolUse { id, name, input, raw: None } => {
            anthropic_result(id, siblings)?;
            return Some(Wire::Block(WireBlock::ServerToolUse { id, name, input }));
        }
        ContentBlock::ServerToolResult { tool_use_id, .. } => {
            let paired = siblings
                .iter()
                .any(|s| matches!(s, ContentBlock::ServerToolUse { id, raw: None, .. } if id == tool_use_id));
            return anthropic_result(tool_use_id, siblings).filter(|_| paired).map(Wire::Verbatim);
        }
        ContentBlock::ServerToolUse { .. } | ContentBlock::Citations { .. } => return None,
        _ => {}
    }
    Some(Wire::Block(match b {
        ContentBlock::Text { text } => WireBlock::Text { text },
        // Thinking without a signature cannot be verified by the API: drop it.
        ContentBlock::Thinking { thinking, signature } => {
            WireBlock::Thinking { thinking, signature: signature.as_deref()? }
        }
        ContentBlock::RedactedThinking { data } => WireBlock::RedactedThinking { data },
        ContentBlock::Image { source } => image_wire(source),
        ContentBlock::ToolUse { id, name, input } => WireBlock::ToolUse { id, name, input },
        ContentBlock::ToolResult { tool_use_id, content, is_error } => WireBlock::ToolResult {
            tool_use_id,
            content: content
                .iter()
                .map(|c| match c {
                    ToolResultContent::Text { text } => WireBlock::Text { text },
                    ToolResultContent::Image { source } => image_wire(source),
                })
                .collect(),
            is_error: *is_error,
        },
        ContentBlock::ServerToolUse { .. } | ContentBlock::ServerToolResult { .. } | ContentBlock::Citations { .. } => {
            return None;
        }
    }))
}

fn image_wire(source: &tern_protocol::ImageSource) -> WireBlock<'_> {
    WireBlock::Image { source: ImageWire { kind: "base64", media_type: &source.media_type, data: &source.data } }
}

#[derive(Debug)]
enum Block {
    Text {
        text: String,
        citations: Vec<WebSource>,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    /// A call the provider runs itself; `input` when the start carried it whole.
    ServerTool {
        id: String,
        name: String,
        json: String,
        input: Value,
    },
    /// A server tool's result block, verbatim.
    ServerResult(Value),
    Ignored,
}

/// The pages (or the error code) of a `web_search_tool_result` block.
fn search_result_sources(block: &Value) -> (Vec<WebSource>, Option<String>) {
    match &block["content"] {
        Value::Array(items) => (items.iter().filter_map(web_source).collect(), None),
        Value::Object(o) => {
            (Vec::new(), Some(o.get("error_code").and_then(Value::as_str).unwrap_or("unknown_error").to_string()))
        }
        _ => (Vec::new(), None),
    }
}

/// Accumulates one Anthropic message stream.
#[derive(Debug, Default)]
pub struct AnthropicAccumulator {
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    model: String,
    stop_reason: Option<StopReason>,
    started: bool,
    done: bool,
}

impl AnthropicAccumulator {
    /// A fresh accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    fn read_usage(&mut self, u: &Value) {
        if let Some(n) = u64_at(u, "/input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = u64_at(u, "/output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = u64_at(u, "/cache_read_input_tokens") {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = u64_at(u, "/cache_creation_input_tokens") {
            self.usage.cache_write_tokens = n;
        }
        if let Some(n) = u64_at(u, "/server_tool_use/web_search_requests") {
            self.usage.web_search_requests = n;
        }
    }
}

impl Accumulator for AnthropicAccumulator {
    fn on_event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamDelta>, LlmError> {
        let v = parse_json(PROVIDER, data)?;
        let mut out = Vec::new();
        // The `type` inside the data is authoritative; the SSE event name repeats it.
        match v["type"].as_str().unwrap_or_default() {
            "message_start" => {
                self.started = true;
                self.model = str_at(&v, "/message/model").unwrap_or_default().to_string();
                if let Some(u) = v.pointer("/message/usage") {
                    self.read_usage(u);
                }
            }
            "content_block_start" => {
                let index = u64_at(&v, "/index").unwrap_or(0);
                let b = &v["content_block"];
                let block = match b["type"].as_str().unwrap_or_default() {
                    "text" => {
                        let text = b["text"].as_str().unwrap_or_default().to_string();
                        if !text.is_empty() {
                            out.push(StreamDelta::Text(text.clone()));
                        }
                        let mut citations = Vec::new();
                        for c in b["citations"].as_array().into_iter().flatten() {
                            if let Some(s) = web_source(c) {
                                push_source(&mut citations, s);
                            }
                        }
                        Block::Text { text, citations }
                    }
                    "server_tool_use" => Block::ServerTool {
                        id: b["id"].as_str().unwrap_or_default().to_string(),
                        name: b["name"].as_str().unwrap_or_default().to_string(),
                        json: String::new(),
                        input: b["input"].clone(),
                    },
                    t if t.ends_with("_tool_result") && b.is_object() => Block::ServerResult(b.clone()),
                    "thinking" => Block::Thinking {
                        text: b["thinking"].as_str().unwrap_or_default().to_string(),
                        signature: b["signature"].as_str().unwrap_or_default().to_string(),
                    },
                    "redacted_thinking" => Block::Redacted(b["data"].as_str().unwrap_or_default().to_string()),
                    "tool_use" => {
                        let id = b["id"].as_str().unwrap_or_default().to_string();
                        let name = b["name"].as_str().unwrap_or_default().to_string();
                        out.push(StreamDelta::ToolCallStart { id: id.clone(), name: name.clone() });
                        Block::Tool { id, name, json: String::new() }
                    }
                    _ => Block::Ignored,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = u64_at(&v, "/index").unwrap_or(0);
                let d = &v["delta"];
                match (self.blocks.get_mut(&index), d["type"].as_str().unwrap_or_default()) {
                    (Some(Block::Text { text, .. }), "text_delta") => {
                        let s = d["text"].as_str().unwrap_or_default();
                        text.push_str(s);
                        out.push(StreamDelta::Text(s.to_string()));
                    }
                    (Some(Block::Text { citations, .. }), "citations_delta") => {
                        if let Some(s) = web_source(&d["citation"]) {
                            push_source(citations, s);
                        }
                    }
                    (Some(Block::ServerTool { json, .. }), "input_json_delta") => {
                        json.push_str(d["partial_json"].as_str().unwrap_or_default());
                    }
                    (Some(Block::Thinking { text, .. }), "thinking_delta") => {
                        let s = d["thinking"].as_str().unwrap_or_default();
                        text.push_str(s);
                        out.push(StreamDelta::Thinking(s.to_string()));
                    }
                    (Some(Block::Thinking { signature, .. }), "signature_delta") => {
                        signature.push_str(d["signature"].as_str().unwrap_or_default());
                    }
                    (Some(Block::Tool { json, id, .. }), "input_json_delta") => {
                        let piece = d["partial_json"].as_str().unwrap_or_default();
                        json.push_str(piece);
                        if !piece.is_empty() {
                            out.push(StreamDelta::ToolInputDelta { id: id.clone(), json: piece.to_string() });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = str_at(&v, "/delta/stop_reason") {
                    self.stop_reason = Some(StopReason::from_anthropic(r));
                }
                if let Some(u) = v.get("usage") {
                    self.read_usage(u);
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let kind = str_at(&v, "/error/type").unwrap_or("error").to_string();
                let message = str_at(&v, "/error/message").unwrap_or("unknown error").to_string();
                let retryable =
                    matches!(kind.as_str(), "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error");
                return Err(LlmError::Stream { provider: PROVIDER.into(), kind, message, retryable });
            }
            // ping, content_block_stop and event types added later: nothing to do.
            _ => {}
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(self: Box<Self>) -> Result<Completion, LlmError> {
        let this = *self;
        if !this.started {
            return Err(LlmError::Incomplete { provider: PROVIDER.into(), detail: "no message_start".into() });
        }
        if !this.done && this.stop_reason.is_none() {
            return Err(LlmError::Incomplete { provider: PROVIDER.into(), detail: "no message_stop".into() });
        }
        let mut content = Vec::new();
        let mut incomplete = Vec::new();
        for block in this.blocks.into_values() {
            match block {
                Block::Text { text, citations } => {
                    if !text.is_empty() {
                        content.push(ContentBlock::Text { text });
                    }
                    if !citations.is_empty() {
                        content.push(ContentBlock::Citations { sources: citations });
                    }
                }
                Block::ServerTool { id, name, json, input } => {
                    let input = match parse_arguments(&json) {
                        Some(parsed) if !json.trim().is_empty() => parsed,
                        _ if input.is_object() => input,
                        _ => Value::Object(Default::default()),
                    };
                    content.push(ContentBlock::ServerToolUse { id, name, input, raw: None });
                }
                Block::ServerResult(raw) => {
                    let (sources, error) = search_result_sources(&raw);
                    let tool_use_id = raw["tool_use_id"].as_str().unwrap_or_default().to_string();
                    content.push(ContentBlock::ServerToolResult { tool_use_id, sources, error, raw });
                }
                Block::Thinking { text, signature } => content.push(ContentBlock::Thinking {
                    thinking: text,
                    signature: (!signature.is_empty()).then_some(signature),
                }),
                Block::Redacted(data) => content.push(ContentBlock::RedactedThinking { data }),
                Block::Tool { id, name, json } => match parse_arguments(&json) {
                    Some(input) => content.push(ContentBlock::ToolUse { id, name, input }),
                    None => incomplete.push(IncompleteToolCall { id, name, raw_arguments: json }),
                },
                _ => {}
            }
        }
        Ok(Completion {
            message: Message { role: Role::Assistant, content },
            stop_reason: this.stop_reason,
            usage: this.usage,
            model: this.model,
            incomplete_tool_calls: incomplete,
        })
    }
}
