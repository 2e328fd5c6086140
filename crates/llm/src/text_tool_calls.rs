//! Tool calls a model wrote as text, for models opted in with
//! `tool_call_format = "text"` ([`crate::ToolCallFormat::Text`]).
//!
//! Small local models asked with `tools` often answer with the call in
//! their text instead of a native tool call, and servers such as
//! llama.cpp's pass it through as plain content. [`parse`] reads a reply's
//! text and says whether it is such a call, and if so which.
//!
//! The forms read (each naming one call; a reply may hold several):
//!
//! - Hermes / Qwen 2.5 tags: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`
//!   (the closing tag may be missing at the very end of the reply), or the
//!   same between `<tools>` and `</tools>`, as small Qwen models write it;
//! - Qwen 3 Coder tags: `<tool_call><function=NAME><parameter=KEY>value</parameter>…</function></tool_call>`,
//!   each value typed by the tool's schema (a `string` property stays text,
//!   anything else is read as JSON);
//! - a fenced block (```` ``` ```` or ```` ```json ````) holding a call object;
//! - a bare call object (or several, or an array of them) as the whole reply.
//!
//! A call object is `{"name": N, "arguments": {…}}`, with `parameters` for
//! `arguments`, or `{"function": {"name": N, "arguments": …}}`, or
//! `{"function": N, "arguments": …}`; `type` and `id` keys are allowed
//! beside them, any other key makes it an ordinary object. Arguments may be
//! a JSON object or a string holding one (OpenAI's wire form).
//!
//! The rules, strict on purpose (a wrong guess would run a tool the model
//! did not ask for):
//!
//! - Every call must name an **offered** tool with arguments that are a JSON
//!   object; otherwise nothing runs and the text stays the answer
//!   ([`TextCalls::Refused`] says why).
//! - Text before and between the calls is kept as assistant text only when
//!   it is clearly prose: no code fence, no tool-call tag and no JSON object
//!   (`{"`) in it. A reply that mixes calls with code or other JSON is not
//!   a call (the text stays the answer).
//! - A call to run ends the reply: text after the last call makes it a
//!   quote (a call the model copied from a file into its answer), which is
//!   not run.
//! - Bounded: a reply longer than [`MAX_TEXT_BYTES`], more than
//!   [`MAX_CALLS`] calls or more than [`MAX_SEGMENTS`] pieces is refused.
//!   Scanning is linear in the text; JSON is read by `serde_json`.
//!
//! ```
//! use tern_llm::text_tool_calls::{parse, TextCalls};
//! let read: tern_protocol::ToolDefinition = serde_json::from_value(serde_json::json!(
//!     {"name": "read", "description": "", "input_schema": {"type": "object"}}
//! )).unwrap();
//! let reply = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```";
//! let TextCalls::Calls { calls, prose } = parse(reply, &[read]) else { panic!() };
//! assert_eq!((calls[0].name.as_str(), prose), ("read", None));
//! ```

use serde_json::{Map, Value};
use tern_protocol::ToolDefinition;

/// The longest reply read for calls; a longer one stays text.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// The most calls taken from one reply.
pub const MAX_CALLS: usize = 32;
/// The most pieces (tags, fences, text between them) one reply is cut into.
pub const MAX_SEGMENTS: usize = 128;

/// One call read from text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    /// The offered tool it names.
    pub name: String,
    /// Its arguments (a JSON object).
    pub input: Value,
}

/// What a reply's text is.
#[derive(Debug, Clone, PartialEq)]
pub enum TextCalls {
    /// Ordinary text: nothing in it looks like a call.
    Text,
    /// Tool calls, in order, and the prose around them (trimmed, joined by
    /// a blank line), if any.
    Calls {
        /// The calls.
        calls: Vec<TextCall>,
        /// The prose written around them.
        prose: Option<String>,
    },
    /// It looks like a call but is not taken: why, for a person (the text
    /// stays the answer).
    Refused(String),
}

/// A fresh id for a call read from text (`call_` and 24 letters and digits),
/// as unique as the providers' own.
pub fn call_id() -> String {
    let mut id = String::from("call_");
    id.extend(std::iter::repeat_with(fastrand::alphanumeric).take(24));
    id
}

/// Read `text` for calls to the `offered` tools (see the module docs).
pub fn parse(text: &str, offered: &[ToolDefinition]) -> TextCalls {
    if text.len() > MAX_TEXT_BYTES {
        return if looks_like_call(text) {
            TextCalls::Refused(format!(
                "the reply is {} bytes, more than the {MAX_TEXT_BYTES} read for calls written as text",
                text.len()
            ))
        } else {
            TextCalls::Text
        };
    }
    let segments = match segments(text) {
        Ok(s) => s,
        Err(why) if looks_like_call(text) => return TextCalls::Refused(why),
        Err(_) => return TextCalls::Text,
    };
    let mut calls = Vec::new();
    let mut prose = Vec::new();
    let mut not_prose = None;
    // Whether text came after the last call read so far.
    let mut text_after_call = false;
    for segment in segments {
        let before = calls.len();
        // Text after a bare call, in the same piece.
        let mut after_bare = false;
        match segment {
            Segment::Prose(p) => {
                let p = p.trim();
                if p.is_empty() {
                    continue;
                }
                if !is_prose(p) {
                    not_prose.get_or_insert("text that is not prose (code or JSON)");
                }
                text_after_call |= !calls.is_empty();
                prose.push(p);
            }
            Segment::Fenced { lang, body } => match fenced_calls(lang, body) {
                Some(Ok(found)) => calls.extend(found),
                Some(Err(why)) => return TextCalls::Refused(why),
                None => {
                    not_prose.get_or_insert("a code block that is not a call");
                }
            },
            Segment::Tagged(inner) => match tagged_call(inner) {
                Ok(call) => calls.push(call),
                Err(why) => return TextCalls::Refused(why),
            },
            Segment::Bare(body) => match bare_calls(body) {
                Ok((found, after)) => {
                    calls.extend(found);
                    if !after.is_empty() {
                        if !is_prose(after) {
                            not_prose.get_or_insert("text that is not prose (code or JSON)");
                        }
                        after_bare = true;
                        prose.push(after);
                    }
                }
                Err(Some(why)) => return TextCalls::Refused(why),
                Err(None) => return TextCalls::Text,
            },
        }
        if calls.len() > before {
            text_after_call = after_bare;
        }
        if calls.len() > MAX_CALLS {
            return TextCalls::Refused(format!("the reply holds more than {MAX_CALLS} calls"));
        }
    }
    if calls.is_empty() {
        return TextCalls::Text;
    }
    if let Some(what) = not_prose {
        return TextCalls::Refused(format!("besides the calls, the reply holds {what}"));
    }
    if text_after_call {
        return TextCalls::Refused(
            "text follows the last call: a call quoted inside an answer is not run (a call to run ends the reply)"
                .into(),
        );
    }
    let mut taken = Vec::with_capacity(calls.len());
    for c in calls {
        let Some(tool) = offered.iter().find(|t| t.name == c.name) else {
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
            return TextCalls::Refused(format!(
                "`{}` is not a tool offered to the model (offered: {})",
                c.name,
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ));
        };
        let input = match c.arguments {
            RawArguments::Json(v) => match arguments(&tool.name, v) {
                Ok(input) => input,
                Err(why) => return TextCalls::Refused(why),
            },
            RawArguments::Parameters(pairs) => typed_parameters(tool, pairs),
        };
        taken.push(TextCall { name: tool.name.clone(), input });
    }
    let prose = (!prose.is_empty()).then(|| prose.join("\n\n"));
    TextCalls::Calls { calls: taken, prose }
}

/// A call as written, before it is checked against the offered tools.
struct Written<'a> {
    name: String,
    arguments: RawArguments<'a>,
}

enum RawArguments<'a> {
    /// A JSON value (an object, or a string holding one).
    Json(Value),
    /// Qwen 3 Coder's `<parameter=KEY>value</parameter>` pairs, untyped.
    Parameters(Vec<(&'a str, &'a str)>),
}

/// A piece of the reply.
enum Segment<'a> {
    Prose(&'a str),
    /// A fenced block: its info string and body.
    Fenced {
        lang: &'a str,
        body: &'a str,
    },
    /// The inside of `<tool_call>…</tool_call>`.
    Tagged(&'a str),
    /// The whole reply, starting with `{` or `[`.
    Bare(&'a str),
}

const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
/// The tag pairs a call is written between: Hermes/Qwen's own, and
/// `<tools>`, which small Qwen models copy from the way their chat template
/// lists the tools (seen from Qwen2.5-Coder 1.5B in `cargo xtask eval`).
const TAGS: [(&str, &str); 2] = [(OPEN_TAG, CLOSE_TAG), ("<tools>", "</tools>")];

/// The first opening tag in `text`: where, and its pair.
fn first_tag(text: &str) -> Option<(usize, &'static str, &'static str)> {
    TAGS.iter().filter_map(|&(open, close)| text.find(open).map(|at| (at, open, close))).min_by_key(|t| t.0)
}
const FENCE: &str = "```";

/// Cut the reply into prose, fenced blocks and tagged calls (or one bare
/// JSON piece), left to right, each marker found once.
fn segments(text: &str) -> Result<Vec<Segment<'_>>, String> {
    let trimmed = text.trim();
    if (trimmed.starts_with('{') || trimmed.starts_with('[')) && first_tag(trimmed).is_none() {
        return Ok(vec![Segment::Bare(trimmed)]);
    }
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if out.len() >= MAX_SEGMENTS {
            return Err(format!("the reply has more than {MAX_SEGMENTS} tagged or fenced pieces"));
        }
        let tag = first_tag(rest);
        let fence = rest.find(FENCE);
        match (tag, fence) {
            (Some((t, open, close)), f) if f.is_none_or(|f| t < f) => {
                out.push(Segment::Prose(&rest[..t]));
                let after = &rest[t + open.len()..];
                match after.find(close) {
                    Some(end) => {
                        out.push(Segment::Tagged(&after[..end]));
                        rest = &after[end + close.len()..];
                    }
                    // Models often stop before the closing tag.
                    None => {
                        out.push(Segment::Tagged(after));
                        rest = "";
                    }
                }
            }
            (_, Some(f)) => {
                out.push(Segment::Prose(&rest[..f]));
                let after = &rest[f + FENCE.len()..];
                let (lang, body_start) = match after.find('\n') {
                    Some(nl) => (after[..nl].trim(), nl + 1),
                    None => ("", 0),
                };
                let body = &after[body_start..];
                match body.find(FENCE) {
                    Some(end) => {
                        out.push(Segment::Fenced { lang, body: &body[..end] });
                        rest = &body[end + FENCE.len()..];
                    }
                    None => {
                        out.push(Segment::Fenced { lang, body });
                        rest = "";
                    }
                }
            }
            _ => {
                out.push(Segment::Prose(rest));
                rest = "";
            }
        }
    }
    Ok(out)
}

/// Whether a reply that begins with `text` may still turn out to be a call
/// (its first non-blank characters start a tag, a JSON value, or a fence
/// whose language is a call's): a front end holds such text back until the
/// reply is complete, instead of showing a call as text.
pub fn may_start_call(text: &str) -> bool {
    let t = text.trim_start();
    if t.is_empty()
        || t.starts_with(['{', '['])
        || TAGS.iter().any(|(open, _)| open.starts_with(t) || t.starts_with(open))
    {
        return true;
    }
    if FENCE.starts_with(t) {
        return true;
    }
    let Some(after) = t.strip_prefix(FENCE) else { return false };
    match after.find('\n') {
        Some(nl) => is_call_fence(after[..nl].trim()),
        // The language is still arriving.
        None => {
            after.len() <= "tool_call".len()
                && ["json", "tool_call", "tool_code"].iter().any(|l| l.starts_with(after.trim()))
        }
    }
}

/// A fence language a call may be written in.
fn is_call_fence(lang: &str) -> bool {
    matches!(lang.to_ascii_lowercase().as_str(), "" | "json" | "tool_call" | "tool_code")
}

/// Prose: no fence, no tag, no JSON object.
fn is_prose(text: &str) -> bool {
    !(text.contains(FENCE)
        || text.contains("<tool_call")
        || text.contains("</tool_call")
        || text.contains("<tools>")
        || text.contains("{\""))
}

/// Whether text looks like an attempt at a call (for saying why it was not
/// taken rather than treating it as ordinary text).
fn looks_like_call(text: &str) -> bool {
    first_tag(text).is_some() || text.contains("\"name\"") || text.contains("\"function\"")
}

/// The calls of a fenced block: `None` when it is not a call block (other
/// code, or JSON that is not call-shaped).
fn fenced_calls(lang: &str, body: &str) -> Option<Result<Vec<Written<'static>>, String>> {
    if !is_call_fence(lang) {
        return None;
    }
    let body = body.trim();
    if !(body.starts_with('{') || body.starts_with('[')) {
        return None;
    }
    match bare_calls(body) {
        Ok((calls, "")) => Some(Ok(calls)),
        Ok(_) | Err(None) => None,
        Err(Some(why)) => Some(Err(why)),
    }
}

/// One or more call objects (or one array of them), and the text after
/// them when that does not start another JSON value. `Err(None)`: JSON that
/// is not a call; `Err(Some(why))`: a call that is not well formed.
fn bare_calls(body: &str) -> Result<(Vec<Written<'static>>, &str), Option<String>> {
    let mut values = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let mut found = Vec::new();
    let mut after = "";
    while let Some(value) = values.next() {
        let value = match value {
            Ok(v) => v,
            Err(e) => {
                let rest = body[values.byte_offset()..].trim_start();
                if !found.is_empty() && !rest.starts_with(['{', '[']) {
                    after = rest;
                    break;
                }
                if looks_like_call(body) {
                    return Err(Some(format!("the call's JSON is malformed ({e})")));
                }
                return Err(None);
            }
        };
        match value {
            Value::Array(items) if !items.is_empty() => {
                for item in items {
                    found.push(call_object(item).ok_or(None)?);
                }
            }
            other => found.push(call_object(other).ok_or(None)?),
        }
        if found.len() > MAX_CALLS {
            return Err(Some(format!("the reply holds more than {MAX_CALLS} calls")));
        }
    }
    if found.is_empty() {
        return Err(None);
    }
    Ok((found, after))
}

/// The call a JSON value stands for; `None` when it is not call-shaped.
fn call_object(value: Value) -> Option<Written<'static>> {
    let Value::Object(mut obj) = value else { return None };
    if !obj.keys().all(|k| matches!(k.as_str(), "name" | "arguments" | "parameters" | "function" | "type" | "id")) {
        return None;
    }
    let args = |obj: &mut Map<String, Value>| match (obj.remove("arguments"), obj.remove("parameters")) {
        (Some(a), None) | (None, Some(a)) => Some(a),
        _ => None,
    };
    let (name, arguments) = match (obj.remove("name"), obj.remove("function")) {
        (Some(Value::String(name)), None) => (name, args(&mut obj)?),
        (None, Some(Value::String(name))) => (name, args(&mut obj)?),
        (None, Some(Value::Object(mut inner))) => {
            if obj.contains_key("arguments") || obj.contains_key("parameters") {
                return None;
            }
            if !inner.keys().all(|k| matches!(k.as_str(), "name" | "arguments" | "parameters")) {
                return None;
            }
            let Some(Value::String(name)) = inner.remove("name") else { return None };
            (name, args(&mut inner)?)
        }
        _ => return None,
    };
    Some(Written { name, arguments: RawArguments::Json(arguments) })
}

/// The call inside `<tool_call>…</tool_call>`: JSON (possibly fenced) or
/// Qwen 3 Coder's `<function=…>` form. Anything else is refused: the tag
/// says the model meant a call.
fn tagged_call(inner: &str) -> Result<Written<'_>, String> {
    let mut body = inner.trim();
    if let Some(fenced) = body.strip_prefix(FENCE) {
        let start = fenced.find('\n').map_or(0, |nl| nl + 1);
        body = fenced[start..].trim_end().trim_end_matches(FENCE).trim();
    }
    if body.starts_with("<function=") {
        return function_tags(body);
    }
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("the JSON inside <tool_call> is malformed ({e})"))?;
    call_object(value).ok_or_else(|| "the JSON inside <tool_call> is not a `name` with `arguments`".to_string())
}

/// `<function=NAME><parameter=KEY>value</parameter>…</function>`.
fn function_tags(body: &str) -> Result<Written<'_>, String> {
    let malformed = || "the <function=…> call inside <tool_call> is malformed".to_string();
    let rest = body.strip_prefix("<function=").ok_or_else(malformed)?;
    let end = rest.find('>').ok_or_else(malformed)?;
    let name = rest[..end].trim().to_string();
    let mut rest = rest[end + 1..].trim_start();
    let mut pairs = Vec::new();
    while let Some(after) = rest.strip_prefix("<parameter=") {
        let end = after.find('>').ok_or_else(malformed)?;
        let key = after[..end].trim();
        let value_and_rest = &after[end + 1..];
        let close = value_and_rest.find("</parameter>").ok_or_else(malformed)?;
        if pairs.len() >= MAX_SEGMENTS {
            return Err(format!("the call has more than {MAX_SEGMENTS} parameters"));
        }
        pairs.push((key, &value_and_rest[..close]));
        rest = value_and_rest[close + "</parameter>".len()..].trim_start();
    }
    // The closing tag may be missing at the very end.
    if !(rest.is_empty() || rest.trim() == "</function>") {
        return Err(malformed());
    }
    Ok(Written { name, arguments: RawArguments::Parameters(pairs) })
}

/// Arguments given as JSON: an object, or a string holding one.
fn arguments(tool: &str, value: Value) -> Result<Value, String> {
    match value {
        v @ Value::Object(_) => Ok(v),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err(format!("the arguments of `{tool}` are a string that is not a JSON object")),
        },
        other => Err(format!(
            "the arguments of `{tool}` are not a JSON object: {}",
            tern_protocol::text::prefix_within(&other.to_string(), 80)
        )),
    }
}

/// `<parameter=…>` values typed by the tool's schema: a property declared
/// `string` (or of unknown type) keeps its text (one newline trimmed at
/// each end, as the template writes it); any other is read as JSON, and
/// kept as text when it is not (the tool's validation then says what is
/// wrong).
fn typed_parameters(tool: &ToolDefinition, pairs: Vec<(&str, &str)>) -> Value {
    let mut out = Map::new();
    for (key, raw) in pairs {
        let text = raw.strip_prefix('\n').unwrap_or(raw);
        let text = text.strip_suffix('\n').unwrap_or(text);
        let declared = tool.input_schema.pointer(&format!("/properties/{key}/type"));
        let is_string = match declared {
            None => true,
            Some(Value::String(t)) => t == "string",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
            Some(_) => true,
        };
        let value = if is_string {
            Value::String(text.to_string())
        } else {
            serde_json::from_str(text.trim()).unwrap_or_else(|_| Value::String(text.to_string()))
        };
        out.insert(key.to_string(), value);
    }
    Value::Object(out)
}

#[cfg(test)]
#[path = "text_tool_calls_tests.rs"]
mod tests;
