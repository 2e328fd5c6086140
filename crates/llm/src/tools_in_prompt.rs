//! Tools described in the system prompt, for servers that ignore or refuse
//! `tools` in the request (`tool_call_format = "prompt"`,
//! [`crate::ToolCallFormat::Prompt`]): llama.cpp's server without Jinja
//! templates, some Ollama models, older vLLM and TGI, koboldcpp, simple shims.
//!
//! [`prompt_form`] turns a request into one that carries no tools at all:
//!
//! - the system prompt ends with a section that lists the tools between
//!   `<tools>` tags, one compact JSON object a line (`name`, the first line of
//!   its `description`, its `parameters` schema), then says how to call one:
//!   the Hermes form `<tool_call>{"name": …, "arguments": {…}}</tool_call>`,
//!   the one small models (Qwen 2.5 and others) are trained on, which
//!   [`crate::text_tool_calls::parse`] reads back;
//! - the history is plain text: an assistant's calls become that same text
//!   in its message, and the results of one turn's calls one user message of
//!   `<tool_response name="…">` blocks, one per call, in order.
//!
//! It is a pure function of the request: the same conversation gives the same
//! bytes on every turn, so a local server reuses the prompt prefix it has
//! already read. Tools added during a session (found by `tool_search`) come
//! last in the request's list, so they join the end of the list and all that
//! comes before them stays as it was.
//!
//! ```
//! use tern_llm::tools_in_prompt::{call_text, tools_section};
//! let read: tern_protocol::ToolDefinition = serde_json::from_value(serde_json::json!(
//!     {"name": "read", "description": "Read a file.\n- more", "input_schema": {"type": "object"}}
//! )).unwrap();
//! let section = tools_section(&[read]);
//! assert!(section.contains("<tools>\n{\"name\":\"read\",\"description\":\"Read a file.\",\"parameters\":{\"type\":\"object\"}}\n</tools>"));
//! assert_eq!(call_text("read", &serde_json::json!({"path": "a"})),
//!            "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\":\"a\"}}\n</tool_call>");
//! ```

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;
use tern_protocol::{ContentBlock, Message, Role, ToolDefinition, ToolResultContent};

use crate::{ModelRequest, ToolCallFormat};

/// The most characters of a tool's description line kept in the list (an
/// MCP tool may describe itself in one long paragraph).
pub const MAX_DESCRIPTION_CHARS: usize = 300;

/// Before the list of tools. Qwen2.5-Coder 1.5B, asked with the same tools
/// as `- name: description Parameters: {…}` lines, wrote out a schema
/// instead of a call; as JSON objects between `<tools>` tags (the form of its
/// training) it wrote the call.
const LIST_START: &str = "# Tools

You can call these tools, each described as a JSON object within <tools></tools>:
<tools>
";

/// After the list: how to call a tool.
const INSTRUCTIONS: &str = "</tools>

To call a tool, write a JSON object with its name and arguments within <tool_call></tool_call> tags, then stop \
and wait for the result:
<tool_call>
{\"name\": \"TOOL_NAME\", \"arguments\": {ARGUMENTS}}
</tool_call>
To call several tools, write one block for each. When you need no tool, answer in plain text.
";

/// The section the system prompt ends with: the tools in the order given,
/// one JSON object a line, then how to call one (empty for no tools).
pub fn tools_section(tools: &[ToolDefinition]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut out = String::from(LIST_START);
    for tool in tools {
        out.push_str(&tool_line(tool));
        out.push('\n');
    }
    out.push_str(INSTRUCTIONS);
    out
}

/// One tool as a compact JSON object: name, description line (left out when
/// empty), parameters schema.
fn tool_line(tool: &ToolDefinition) -> String {
    let mut object = serde_json::Map::new();
    object.insert("name".into(), Value::from(tool.name.as_str()));
    let line = description_line(&tool.description);
    if !line.is_empty() {
        object.insert("description".into(), Value::from(line.as_ref()));
    }
    object.insert("parameters".into(), tool.input_schema.clone());
    Value::Object(object).to_string()
}

/// The first non-empty line of a description, within [`MAX_DESCRIPTION_CHARS`].
fn description_line(description: &str) -> Cow<'_, str> {
    let line = description.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    match line.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}…", line[..cut].trim_end())),
        None => Cow::Borrowed(line),
    }
}

/// One call as the model is asked to write it.
pub fn call_text(name: &str, input: &Value) -> String {
    format!("<tool_call>\n{{\"name\": {}, \"arguments\": {input}}}\n</tool_call>", Value::from(name))
}

/// One call's result, named by its tool when known (a call no longer in the
/// conversation, e.g. after compaction, is not).
pub fn response_text(tool: Option<&str>, result: &str, is_error: bool) -> String {
    let name = tool.map(|t| format!(" name={}", Value::from(t))).unwrap_or_default();
    let result = crate::marked_as_error(defang(result), is_error);
    format!("<tool_response{name}>\n{result}\n</tool_response>")
}

/// The tags of this markup inside a result (a file or a web page quoting
/// them) with their `<` written `&lt;`: a result can then neither close its
/// block early, passing what follows off as the person's words, nor show a
/// call. Everything else is kept as it was; the same text always gives the
/// same bytes.
fn defang(text: &str) -> Cow<'_, str> {
    const TAGS: [&str; 6] = ["tool_call", "/tool_call", "tool_response", "/tool_response", "tools>", "/tools>"];
    let starts_tag =
        |rest: &str| TAGS.iter().any(|t| rest.get(..t.len()).is_some_and(|head| head.eq_ignore_ascii_case(t)));
    if !text.match_indices('<').any(|(i, _)| starts_tag(&text[i + 1..])) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for (i, _) in text.match_indices('<') {
        if starts_tag(&text[i + 1..]) {
            out.push_str(&text[last..i]);
            out.push_str("&lt;");
            last = i + 1;
        }
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// The request with its tools in the system prompt and its history as text,
/// for [`ToolCallFormat::Prompt`]; any other request as it is.
pub fn prompt_form(req: &ModelRequest) -> Cow<'_, ModelRequest> {
    if req.tool_call_format != ToolCallFormat::Prompt {
        return Cow::Borrowed(req);
    }
    let section = tools_section(&req.tools);
    let system = match (req.system.is_empty(), section.is_empty()) {
        (_, true) => req.system.clone(),
        (true, false) => section,
        (false, false) => format!("{}\n\n{section}", req.system.trim_end()),
    };
    let mut names: HashMap<&str, &str> = HashMap::new();
    let messages = req.messages.iter().map(|m| message_as_text(m, &mut names)).collect();
    Cow::Owned(ModelRequest {
        model: req.model.clone(),
        system,
        messages,
        tools: Vec::new(),
        // The provider's own tools are declared in the request too: none go.
        server_tools: Vec::new(),
        max_tokens: req.max_tokens,
        thinking_budget: req.thinking_budget,
        cache_key: req.cache_key.clone(),
        input_tokens: req.input_tokens,
        tool_call_format: req.tool_call_format,
    })
}

/// One message with its calls or results as text; `names` learns each
/// call's tool, for the results that follow.
fn message_as_text<'a>(m: &'a Message, names: &mut HashMap<&'a str, &'a str>) -> Message {
    let has_tools =
        m.content.iter().any(|b| matches!(b, ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. }));
    if !has_tools {
        return m.clone();
    }
    match m.role {
        Role::Assistant => {
            let mut kept = Vec::new();
            let mut prose = String::new();
            let mut calls = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::Text { text } => prose.push_str(text),
                    ContentBlock::ToolUse { id, name, input } => {
                        names.insert(id, name);
                        calls.push(call_text(name, input));
                    }
                    other => kept.push(other.clone()),
                }
            }
            let calls = calls.join("\n");
            let prose = prose.trim_end();
            let text = if prose.is_empty() { calls } else { format!("{prose}\n\n{calls}") };
            kept.push(ContentBlock::Text { text });
            Message { role: Role::Assistant, content: kept }
        }
        Role::User => {
            let mut responses = Vec::new();
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                        let mut parts = Vec::new();
                        for c in content {
                            match c {
                                ToolResultContent::Text { text } => parts.push(Cow::Borrowed(text.as_str())),
                                ToolResultContent::Image { source } => {
                                    images.push(ContentBlock::Image { source: source.clone() });
                                    parts.push(Cow::Owned(format!("[image {} after this text]", images.len())));
                                }
                            }
                        }
                        let tool = names.get(tool_use_id.as_str()).copied();
                        responses.push(response_text(tool, &parts.join("\n"), *is_error));
                    }
                    ContentBlock::Text { text } => texts.push(text.as_str()),
                    ContentBlock::Image { source } => images.push(ContentBlock::Image { source: source.clone() }),
                    _ => {}
                }
            }
            let mut text = responses.join("\n");
            for t in texts {
                text.push_str("\n\n");
                text.push_str(t);
            }
            let mut content = vec![ContentBlock::Text { text }];
            content.extend(images);
            Message { role: Role::User, content }
        }
    }
}

#[cfg(test)]
#[path = "tools_in_prompt_tests.rs"]
mod tests;
