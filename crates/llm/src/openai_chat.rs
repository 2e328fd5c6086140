//! OpenAI Chat Completions (and compatible servers): request body and stream
//! accumulator, tolerant of the quirks listed in the wire-fixtures README.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use tern_protocol::{ContentBlock, Message, Role, StopReason, ToolResultContent, Usage};

use crate::accumulate::{assistant_message, parse_json, u64_at};
use crate::{Accumulator, Completion, LlmError, ModelRequest, StreamDelta};

const PROVIDER: &str = "openai";

/// The JSON body of a streaming `POST {base}/chat/completions`, as a value
/// (tests); the same as [`request_bytes`] without a cache key.
/// `max_tokens_field` is `max_completion_tokens` for OpenAI itself and
/// `max_tokens` for compatible servers, most of which know only that one.
pub fn request_body(req: &ModelRequest, max_tokens_field: &str) -> Value {
    serde_json::to_value(wire(req, max_tokens_field, None)).unwrap_or(Value::Null)
}

/// The body serialized straight from the request (no copy of the
/// conversation as a JSON tree), with `prompt_cache_key` when given.
pub fn request_bytes(req: &ModelRequest, max_tokens_field: &str, cache_key: Option<&str>) -> Vec<u8> {
    serde_json::to_vec(&wire(req, max_tokens_field, cache_key)).unwrap_or_default()
}

fn wire<'a>(req: &'a ModelRequest, max_tokens_field: &str, cache_key: Option<&'a str>) -> WireBody<'a> {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(WireMessage::System { content: &req.system });
    }
    for m in &req.messages {
        push_message(m, &mut messages);
    }
    let completion = max_tokens_field == "max_completion_tokens";
    WireBody {
        model: &req.model,
        messages,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens: (!completion).then_some(req.max_tokens),
        max_completion_tokens: completion.then_some(req.max_tokens),
        tools: req
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction { name: &t.name, description: &t.description, parameters: &t.input_schema },
            })
            .collect(),
        prompt_cache_key: cache_key,
    }
}

#[derive(Serialize)]
struct WireBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
    User {
        content: UserContent<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCallFunction<'a>,
}

#[derive(Serialize)]
struct WireCallFunction<'a> {
    name: &'a str,
    arguments: String,
}

fn image_url(source: &tern_protocol::ImageSource) -> Part<'static> {
    Part::ImageUrl { image_url: ImageUrl { url: format!("data:{};base64,{}", source.media_type, source.data) } }
}

fn push_message<'a>(m: &'a Message, out: &mut Vec<WireMessage<'a>>) {
    match m.role {
        Role::Assistant => {
            let text = m.text();
            let tool_calls = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } => Some(WireCall {
                        id,
                        kind: "function",
                        function: WireCallFunction { name, arguments: input.to_string() },
                    }),
                    _ => None,
                })
                .collect();
            out.push(WireMessage::Assistant { content: (!text.is_empty()).then_some(text), tool_calls });
        }
        Role::User => {
            // Tool results become `tool` messages, which must directly follow
            // the assistant's calls; images they carry go in a user message after.
            let mut parts: Vec<Part<'a>> = Vec::new();
            let mut result_images = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                        let mut texts = Vec::new();
                        for c in content {
                            match c {
                                ToolResultContent::Text { text } => texts.push(text.as_str()),
                                ToolResultContent::Image { source } => {
                                    // Tool messages cannot carry images: they follow in a
                                    // user message, each labelled with its call.
                                    result_images.push(Part::Text {
                                        text: Cow::Owned(format!("Image from tool call {tool_use_id}:")),
                                    });
                                    result_images.push(image_url(source))
                                }
                            }
                        }
                        let text: Cow<'a, str> = match texts.as_slice() {
                            [one] => Cow::Borrowed(one),
                            many => Cow::Owned(many.join("\n")),
                        };
                        let text = crate::marked_as_error(text, *is_error);
                        out.push(WireMessage::Tool { tool_call_id: tool_use_id, content: text });
                    }
                    ContentBlock::Text { text } => parts.push(Part::Text { text: Cow::Borrowed(text) }),
                    ContentBlock::Image { source } => parts.push(image_url(source)),
                    _ => {}
                }
            }
            parts.extend(result_images);
            match parts.as_slice() {
                [Part::Text { text: Cow::Borrowed(text) }] => {
                    out.push(WireMessage::User { content: UserContent::Text(text) })
                }
                [] => {}
                _ => out.push(WireMessage::User { content: UserContent::Parts(parts) }),
            }
        }
    }
}

#[derive(Debug, Default)]
struct ToolAcc {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates one Chat Completions stream.
#[derive(Debug, Default)]
pub struct ChatAccumulator {
    text: String,
    reasoning: String,
    tools: BTreeMap<u64, ToolAcc>,
    finish: Option<String>,
    usage: Option<Usage>,
    model: String,
    chunks: usize,
    done: bool,
}

impl ChatAccumulator {
    /// A fresh accumulator.
    pub fn new() -> Self {
        Self::default()
    }
}

fn read_usage(u: &Value) -> Usage {
    let prompt = u64_at(u, "/prompt_tokens").unwrap_or(0);
    let cached = u64_at(u, "/prompt_tokens_details/cached_tokens")
        .or_else(|| u64_at(u, "/prompt_cache_hit_tokens"))
        .unwrap_or(0)
        .min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: u64_at(u, "/completion_tokens").unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        web_search_requests: 0,
    }
}

impl Accumulator for ChatAccumulator {
    fn on_event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamDelta>, LlmError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let v = parse_json(PROVIDER, data)?;
        self.chunks += 1;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let kind = err["type"]
                .as_str()
                .map(str::to_string)
                .or_else(|| err["code"].as_str().map(str::to_string))
                .or_else(|| err["code"].as_u64().map(|c| c.to_string()))
                .unwrap_or_else(|| "error".into());
            let message = err["message"].as_str().unwrap_or("unknown error").to_string();
            let code = err["code"].as_u64();
            let retryable = matches!(kind.as_str(), "server_error" | "overloaded_error" | "rate_limit_exceeded")
                || code.is_some_and(|c| u16::try_from(c).is_ok_and(crate::is_retryable_status));
            return Err(LlmError::Stream { provider: PROVIDER.into(), kind, message, retryable });
        }
        if let Some(m) = v["model"].as_str().filter(|m| !m.is_empty()) {
            self.model = m.to_string();
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(read_usage(u));
        }
        let mut out = Vec::new();
        let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(out);
        };
        let delta = &choice["delta"];
        // DeepSeek/llama.cpp: reasoning_content; OpenRouter/Ollama: reasoning
        // (OpenRouter repeats it in reasoning_details: use one of them only).
        let reasoning = delta["reasoning_content"].as_str().or_else(|| delta["reasoning"].as_str());
        if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
            self.reasoning.push_str(r);
            out.push(StreamDelta::Thinking(r.to_string()));
        }
        if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(t);
            out.push(StreamDelta::Text(t.to_string()));
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (pos, call) in calls.iter().enumerate() {
                let index = call["index"].as_u64().unwrap_or(pos as u64);
                let acc = self.tools.entry(index).or_default();
                // Qwen re-sends `"id": ""` on every delta: never overwrite a known id.
                if let Some(id) = call["id"].as_str().filter(|s| !s.is_empty()) {
                    acc.id = id.to_string();
                }
                if let Some(name) = call.pointer("/function/name").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    let first = acc.name.is_empty();
                    acc.name = name.to_string();
                    if first {
                        out.push(StreamDelta::ToolCallStart { id: acc.id.clone(), name: acc.name.clone() });
                    }
                }
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    acc.arguments.push_str(args);
                    if !args.is_empty() && !acc.name.is_empty() {
                        out.push(StreamDelta::ToolInputDelta { id: acc.id.clone(), json: args.to_string() });
                    }
                }
            }
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            self.finish = Some(f.to_string());
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(self: Box<Self>) -> Result<Completion, LlmError> {
        let this = *self;
        if !this.done && this.finish.is_none() {
            return Err(LlmError::Incomplete {
                provider: PROVIDER.into(),
                detail: format!("no finish_reason and no [DONE] after {} chunks", this.chunks),
            });
        }
        let has_tools = !this.tools.is_empty();
        let calls = this.tools.into_iter().map(|(index, t)| {
            let id = if t.id.is_empty() { format!("call_{index}") } else { t.id };
            (id, t.name, t.arguments)
        });
        let (message, incomplete) = assistant_message(this.reasoning, this.text, calls);
        // `[DONE]` without a finish_reason (Snowflake) is a normal stop, unless
        // tool calls are pending: then we cannot know they were complete.
        let stop_reason = match this.finish {
            Some(f) => Some(StopReason::from_openai(&f)),
            None if !has_tools => Some(StopReason::EndTurn),
            None => None,
        };
        Ok(Completion {
            message,
            stop_reason,
            usage: this.usage.unwrap_or_default(),
            model: this.model,
            incomplete_tool_calls: incomplete,
        })
    }
}
