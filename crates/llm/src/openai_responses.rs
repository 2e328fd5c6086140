//! OpenAI Responses API: request body and stream accumulator.
//!
//! Function calls stream keyed by `item_id` (`fc_…`); the result must
//! reference `call_id` (`call_…`), which we keep as the tool call's id.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use serde_json::Value;
use tern_protocol::{ContentBlock, Role, ServerTool, StopReason, ToolResultContent, Usage, WebSource};

use crate::accumulate::{assistant_message, parse_json, push_source, str_at, u64_at, web_source};
use crate::{Accumulator, Completion, LlmError, ModelRequest, StreamDelta};

const PROVIDER: &str = "openai-responses";

/// The JSON body of a streaming `POST {base}/responses` (stateless:
/// `store: false`), as a value (tests); the same as [`request_bytes`]
/// without a cache key.
pub fn request_body(req: &ModelRequest) -> Value {
    serde_json::to_value(wire(req, None)).unwrap_or(Value::Null)
}

/// The body serialized straight from the request (no copy of the
/// conversation as a JSON tree), with `prompt_cache_key` when given.
pub fn request_bytes(req: &ModelRequest, cache_key: Option<&str>) -> Vec<u8> {
    serde_json::to_vec(&wire(req, cache_key)).unwrap_or_default()
}

fn data_url(source: &tern_protocol::ImageSource) -> String {
    format!("data:{};base64,{}", source.media_type, source.data)
}

fn wire<'a>(req: &'a ModelRequest, cache_key: Option<&'a str>) -> WireBody<'a> {
    let mut input = Vec::new();
    for m in &req.messages {
        for b in &m.content {
            match (m.role, b) {
                (Role::User, ContentBlock::Text { text }) => input
                    .push(Item::Message { role: "user", content: vec![Part::InputText { text: Cow::Borrowed(text) }] }),
                (Role::User, ContentBlock::Image { source }) => input.push(Item::Message {
                    role: "user",
                    content: vec![Part::InputImage { image_url: data_url(source) }],
                }),
                (Role::Assistant, ContentBlock::Text { text }) => {
                    input.push(Item::Message { role: "assistant", content: vec![Part::OutputText { text }] })
                }
                // A search call goes back as the item the API sent; one made by
                // another provider (no `raw`) cannot, and its result never does.
                (Role::Assistant, ContentBlock::ServerToolUse { raw: Some(Value::Object(item)), .. })
                    if item.get("type").and_then(Value::as_str) == Some("web_search_call") =>
                {
                    input.push(Item::Verbatim(item))
                }
                (_, ContentBlock::ToolUse { id, name, input: args }) => input.push(Item::FunctionCall {
                    kind: "function_call",
                    call_id: id,
                    name,
                    arguments: args.to_string(),
                }),
                (_, ContentBlock::ToolResult { tool_use_id, content, is_error }) => {
                    let text = ToolResultContent::joined_text(content);
                    // The format has no error flag: say it in the text, as for Chat.
                    let text = crate::marked_as_error(text.into(), *is_error).into_owned();
                    let images: Vec<Part<'a>> = content
                        .iter()
                        .filter_map(|c| match c {
                            ToolResultContent::Image { source } => {
                                Some(Part::InputImage { image_url: data_url(source) })
                            }
                            ToolResultContent::Text { .. } => None,
                        })
                        .collect();
                    // Images travel as content parts of the output itself.
                    let output = if images.is_empty() {
                        Output::Text(text)
                    } else {
                        let mut parts = vec![Part::InputText { text: Cow::Owned(text) }];
                        parts.extend(images);
                        Output::Parts(parts)
                    };
                    input.push(Item::FunctionCallOutput { kind: "function_call_output", call_id: tool_use_id, output });
                }
                _ => {}
            }
        }
    }
    WireBody {
        model: &req.model,
        input,
        stream: true,
        store: false,
        max_output_tokens: req.max_tokens,
        instructions: (!req.system.is_empty()).then_some(req.system.as_str()),
        tools: req
            .server_tools
            .iter()
            .map(|t| match t {
                ServerTool::WebSearch { allowed_domains, .. } => WireTool::WebSearch {
                    kind: "web_search",
                    filters: (!allowed_domains.is_empty()).then_some(Filters { allowed_domains }),
                },
            })
            .chain(req.tools.iter().map(|t| WireTool::Function {
                kind: "function",
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
            }))
            .collect(),
        include: if req.server_tools.is_empty() { Vec::new() } else { vec!["web_search_call.action.sources"] },
        prompt_cache_key: cache_key,
    }
}

#[derive(Serialize)]
struct WireBody<'a> {
    model: &'a str,
    input: Vec<Item<'a>>,
    stream: bool,
    store: bool,
    max_output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireTool<'a> {
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
    },
    /// The API's `web_search` tool: an allow list is all it filters by.
    WebSearch {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        filters: Option<Filters<'a>>,
    },
}

#[derive(Serialize)]
struct Filters<'a> {
    allowed_domains: &'a [String],
}

/// One input item. Messages carry no `type` (as the API allows); calls and outputs do.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    FunctionCall {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        output: Output<'a>,
    },
    /// An output item of an earlier response, sent back as it came.
    Verbatim(&'a serde_json::Map<String, Value>),
}

#[derive(Serialize)]
#[serde(untagged)]
enum Output<'a> {
    Text(String),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText { text: Cow<'a, str> },
    InputImage { image_url: String },
    OutputText { text: &'a str },
}

#[derive(Debug, Default)]
struct Call {
    call_id: String,
    name: String,
    arguments: String,
}

/// Accumulates one Responses stream.
#[derive(Debug, Default)]
pub struct ResponsesAccumulator {
    text: String,
    reasoning: String,
    calls: BTreeMap<u64, Call>,
    item_to_output: BTreeMap<String, u64>,
    usage: Usage,
    model: String,
    status: Option<String>,
    incomplete_reason: Option<String>,
    /// Finished `web_search_call` items by output index.
    searches: BTreeMap<u64, Value>,
    /// Pages the text cites (`url_citation` annotations).
    citations: Vec<WebSource>,
}

impl ResponsesAccumulator {
    /// A fresh accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    fn call_for(&mut self, v: &Value) -> Option<&mut Call> {
        let index = u64_at(v, "/output_index")
            .or_else(|| str_at(v, "/item_id").and_then(|id| self.item_to_output.get(id).copied()))?;
        self.calls.get_mut(&index)
    }
}

impl Accumulator for ResponsesAccumulator {
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, LlmError> {
        let v = parse_json(PROVIDER, data)?;
        let kind = v["type"].as_str().unwrap_or(event);
        let mut out = Vec::new();
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(m) = str_at(&v, "/response/model") {
                    self.model = m.to_string();
                }
            }
            "response.output_text.delta" => {
                let d = v["delta"].as_str().unwrap_or_default();
                self.text.push_str(d);
                out.push(StreamDelta::Text(d.to_string()));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let d = v["delta"].as_str().unwrap_or_default();
                self.reasoning.push_str(d);
                out.push(StreamDelta::Thinking(d.to_string()));
            }
            "response.output_item.added"
                if v.pointer("/item/type").and_then(Value::as_str) == Some("function_call") =>
            {
                let index = u64_at(&v, "/output_index").unwrap_or(self.calls.len() as u64);
                let item = &v["item"];
                let call = Call {
                    call_id: item["call_id"].as_str().unwrap_or_default().to_string(),
                    name: item["name"].as_str().unwrap_or_default().to_string(),
                    arguments: item["arguments"].as_str().unwrap_or_default().to_string(),
                };
                if let Some(id) = item["id"].as_str() {
                    self.item_to_output.insert(id.to_string(), index);
                }
                out.push(StreamDelta::ToolCallStart { id: call.call_id.clone(), name: call.name.clone() });
                self.calls.insert(index, call);
            }
            "response.output_item.done"
                if v.pointer("/item/type").and_then(Value::as_str) == Some("web_search_call") =>
            {
                let index = u64_at(&v, "/output_index").unwrap_or(self.searches.len() as u64);
                self.searches.insert(index, v["item"].clone());
            }
            "response.output_text.annotation.added" => {
                let a = &v["annotation"];
                if a["type"].as_str() == Some("url_citation")
                    && let Some(source) = web_source(a)
                {
                    push_source(&mut self.citations, source);
                }
            }
            "response.function_call_arguments.delta" => {
                let d = v["delta"].as_str().unwrap_or_default().to_string();
                if let Some(c) = self.call_for(&v) {
                    c.arguments.push_str(&d);
                    if !d.is_empty() {
                        out.push(StreamDelta::ToolInputDelta { id: c.call_id.clone(), json: d });
                    }
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(args) = v["arguments"].as_str().map(str::to_string)
                    && let Some(c) = self.call_for(&v)
                {
                    c.arguments = args;
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let r = &v["response"];
                self.status = r["status"].as_str().map(str::to_string).or_else(|| Some("completed".into()));
                self.incomplete_reason = str_at(r, "/incomplete_details/reason").map(str::to_string);
                if let Some(m) = r["model"].as_str() {
                    self.model = m.to_string();
                }
                if let Some(u) = r.get("usage").filter(|u| u.is_object()) {
                    let input = u64_at(u, "/input_tokens").unwrap_or(0);
                    let cached = u64_at(u, "/input_tokens_details/cached_tokens").unwrap_or(0).min(input);
                    self.usage = Usage {
                        input_tokens: input - cached,
                        output_tokens: u64_at(u, "/output_tokens").unwrap_or(0),
                        cache_read_tokens: cached,
                        cache_write_tokens: 0,
                        web_search_requests: 0,
                    };
                }
                if kind == "response.failed" {
                    let kind = str_at(r, "/error/code").unwrap_or("failed").to_string();
                    let message = str_at(r, "/error/message").unwrap_or("the response failed").to_string();
                    let retryable = kind == "server_error" || kind == "rate_limit_exceeded";
                    return Err(LlmError::Stream { provider: PROVIDER.into(), kind, message, retryable });
                }
            }
            "error" => {
                let kind = v["code"].as_str().or_else(|| str_at(&v, "/error/type")).unwrap_or("error").to_string();
                let message = v["message"]
                    .as_str()
                    .or_else(|| str_at(&v, "/error/message"))
                    .unwrap_or("unknown error")
                    .to_string();
                let retryable = kind == "server_error" || kind == "rate_limit_exceeded";
                return Err(LlmError::Stream { provider: PROVIDER.into(), kind, message, retryable });
            }
            _ => {}
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.status.is_some()
    }

    fn finish(self: Box<Self>) -> Result<Completion, LlmError> {
        let this = *self;
        let Some(status) = this.status else {
            return Err(LlmError::Incomplete { provider: PROVIDER.into(), detail: "no response.completed".into() });
        };
        let has_calls = !this.calls.is_empty();
        let calls = this.calls.into_values().map(|c| (c.call_id, c.name, c.arguments));
        let (mut message, incomplete) = assistant_message(this.reasoning, this.text, calls);
        let mut usage = this.usage;
        // Searches come before the text that used them; citations after it.
        let at = message.content.iter().take_while(|b| matches!(b, ContentBlock::Thinking { .. })).count();
        let mut searches = Vec::new();
        for item in this.searches.into_values() {
            if item.pointer("/action/type").and_then(Value::as_str).is_none_or(|t| t == "search") {
                usage.web_search_requests += 1;
            }
            searches.extend(search_blocks(item));
        }
        message.content.splice(at..at, searches);
        if !this.citations.is_empty() {
            let after_text = message
                .content
                .iter()
                .rposition(|b| matches!(b, ContentBlock::Text { .. }))
                .map_or(message.content.len(), |i| i + 1);
            message.content.insert(after_text, ContentBlock::Citations { sources: this.citations });
        }
        let stop_reason = match (status.as_str(), this.incomplete_reason.as_deref()) {
            ("incomplete", Some("max_output_tokens")) => StopReason::MaxTokens,
            ("incomplete", Some("content_filter")) => StopReason::Refusal,
            ("incomplete", other) => StopReason::Other(other.unwrap_or("incomplete").to_string()),
            _ if has_calls => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        Ok(Completion {
            message,
            stop_reason: Some(stop_reason),
            usage,
            model: this.model,
            incomplete_tool_calls: incomplete,
        })
    }
}

/// A `web_search_call` item as a server call (which carries the item back)
/// and its result (the sources it read, when the API listed them).
fn search_blocks(item: Value) -> [ContentBlock; 2] {
    let id = item["id"].as_str().unwrap_or_default().to_string();
    let mut input = serde_json::Map::new();
    if let Some(q) = item.pointer("/action/query").and_then(Value::as_str) {
        input.insert("query".into(), Value::String(q.to_string()));
    }
    let sources = item
        .pointer("/action/sources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(web_source)
        .collect();
    let error = (item["status"].as_str() == Some("failed")).then(|| "search failed".to_string());
    [
        ContentBlock::ServerToolUse {
            id: id.clone(),
            name: "web_search".into(),
            input: Value::Object(input),
            raw: Some(item),
        },
        ContentBlock::ServerToolResult { tool_use_id: id, sources, error, raw: Value::Null },
    ]
}
