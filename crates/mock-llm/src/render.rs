//! Render one scripted reply in each wire format, streamed (SSE events) or
//! whole (one JSON body), the way the real services shape them.

use serde_json::{Value, json};

/// A reply in neutral form.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Model name.
    pub model: String,
    /// Turn index (for ids).
    pub turn: usize,
    /// Reasoning.
    pub thinking: Option<String>,
    /// Text.
    pub text: String,
    /// `(id, name, arguments as text)`.
    pub tool_calls: Vec<(String, String, String)>,
    /// A provider-side search before the text (the text cites its pages).
    pub search: Option<crate::script::ScriptSearch>,
    /// `end_turn`, `tool_use`, `max_tokens` or `none`.
    pub stop: String,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads.
    pub cache_read_tokens: u64,
}

/// Split text into small pieces on char boundaries, like token deltas.
fn pieces(s: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(size.max(1)).map(|c| c.iter().collect()).collect()
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// Anthropic Messages stream events.
pub fn anthropic_events(r: &Reply) -> Vec<String> {
    let mut ev = Vec::new();
    let push = |ev: &mut Vec<String>, v: Value| {
        let name = v["type"].as_str().unwrap_or("unknown").to_string();
        ev.push(sse(Some(&name), &v));
    };
    push(
        &mut ev,
        json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{}", r.turn), "type": "message", "role": "assistant", "model": r.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": r.input_tokens, "output_tokens": 1, "cache_read_input_tokens": r.cache_read_tokens, "cache_creation_input_tokens": 0}
        }}),
    );
    let mut index = 0;
    if let Some(t) = &r.thinking {
        push(
            &mut ev,
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        );
        for p in pieces(t, 16) {
            push(
                &mut ev,
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}),
            );
        }
        push(
            &mut ev,
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": format!("mock-signature-{}", r.turn)}}),
        );
        push(&mut ev, json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if let Some(search) = &r.search {
        let [use_block, result_block] = anthropic_search_blocks(r, search);
        let mut start = use_block.clone();
        start["input"] = json!({});
        push(&mut ev, json!({"type": "content_block_start", "index": index, "content_block": start}));
        push(
            &mut ev,
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": use_block["input"].to_string()}}),
        );
        push(&mut ev, json!({"type": "content_block_stop", "index": index}));
        index += 1;
        push(&mut ev, json!({"type": "content_block_start", "index": index, "content_block": result_block}));
        push(&mut ev, json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if !r.text.is_empty() {
        let cites = anthropic_citations(r);
        let mut block = json!({"type": "text", "text": ""});
        if !cites.is_empty() {
            block["citations"] = json!([]);
        }
        push(&mut ev, json!({"type": "content_block_start", "index": index, "content_block": block}));
        for c in cites {
            push(
                &mut ev,
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "citations_delta", "citation": c}}),
            );
        }
        ev.push(sse(Some("ping"), &json!({"type": "ping"})));
        for p in pieces(&r.text, 12) {
            push(
                &mut ev,
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}),
            );
        }
        push(&mut ev, json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for (id, name, args) in &r.tool_calls {
        push(
            &mut ev,
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        push(
            &mut ev,
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        );
        for p in pieces(args, 20) {
            push(
                &mut ev,
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}),
            );
        }
        push(&mut ev, json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if r.stop != "none" {
        push(
            &mut ev,
            json!({"type": "message_delta", "delta": {"stop_reason": r.stop, "stop_sequence": null}, "usage": anthropic_final_usage(r)}),
        );
        push(&mut ev, json!({"type": "message_stop"}));
    }
    ev
}

fn anthropic_final_usage(r: &Reply) -> Value {
    let mut u = json!({"output_tokens": r.output_tokens});
    if r.search.is_some() {
        u["server_tool_use"] = json!({"web_search_requests": 1});
    }
    u
}

/// The `server_tool_use` and `web_search_tool_result` blocks of a search.
fn anthropic_search_blocks(r: &Reply, s: &crate::script::ScriptSearch) -> [Value; 2] {
    let id = format!("srvtoolu_mock_{}", r.turn);
    let content = match &s.error {
        Some(code) => json!({"type": "web_search_tool_result_error", "error_code": code}),
        None => Value::Array(
            s.results
                .iter()
                .enumerate()
                .map(|(i, p)| json!({"type": "web_search_result", "url": p.url, "title": p.title, "encrypted_content": format!("mock-encrypted-{}-{i}", r.turn), "page_age": null}))
                .collect(),
        ),
    };
    [
        json!({"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": s.query}}),
        json!({"type": "web_search_tool_result", "tool_use_id": id, "content": content}),
    ]
}

/// A citation of every page found, for the text that follows a search.
fn anthropic_citations(r: &Reply) -> Vec<Value> {
    let Some(s) = r.search.as_ref().filter(|s| s.error.is_none()) else { return Vec::new() };
    s.results
        .iter()
        .enumerate()
        .map(|(i, p)| json!({"type": "web_search_result_location", "url": p.url, "title": p.title, "encrypted_index": format!("mock-index-{}-{i}", r.turn), "cited_text": format!("from {}", p.title)}))
        .collect()
}

/// Anthropic Messages non-streaming body.
pub fn anthropic_body(r: &Reply) -> Value {
    let mut content = Vec::new();
    if let Some(t) = &r.thinking {
        content.push(json!({"type": "thinking", "thinking": t, "signature": format!("mock-signature-{}", r.turn)}));
    }
    if let Some(search) = &r.search {
        content.extend(anthropic_search_blocks(r, search));
    }
    if !r.text.is_empty() {
        let cites = anthropic_citations(r);
        content.push(if cites.is_empty() {
            json!({"type": "text", "text": r.text})
        } else {
            json!({"type": "text", "text": r.text, "citations": cites})
        });
    }
    for (id, name, args) in &r.tool_calls {
        let input: Value = serde_json::from_str(args).unwrap_or(Value::String(args.clone()));
        content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    }
    json!({"id": format!("msg_mock_{}", r.turn), "type": "message", "role": "assistant", "model": r.model,
        "content": content, "stop_reason": if r.stop == "none" { Value::Null } else { json!(r.stop) }, "stop_sequence": null,
        "usage": {"input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "cache_read_input_tokens": r.cache_read_tokens, "server_tool_use": {"web_search_requests": u64::from(r.search.is_some())}}})
}

fn openai_finish(stop: &str) -> Value {
    match stop {
        "end_turn" => json!("stop"),
        "tool_use" => json!("tool_calls"),
        "max_tokens" => json!("length"),
        "none" => Value::Null,
        other => json!(other),
    }
}

fn openai_usage(r: &Reply) -> Value {
    let prompt = r.input_tokens + r.cache_read_tokens;
    json!({"prompt_tokens": prompt, "completion_tokens": r.output_tokens, "total_tokens": prompt + r.output_tokens,
        "prompt_tokens_details": {"cached_tokens": r.cache_read_tokens}})
}

/// OpenAI Chat Completions stream events (`include_usage` adds the usage chunk).
pub fn chat_events(r: &Reply, include_usage: bool) -> Vec<String> {
    let id = format!("chatcmpl-mock-{}", r.turn);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": r.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null})
    };
    let mut ev = vec![sse(None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null))];
    if let Some(t) = &r.thinking {
        for p in pieces(t, 16) {
            ev.push(sse(None, &chunk(json!({"reasoning_content": p}), Value::Null)));
        }
    }
    for p in pieces(&r.text, 12) {
        ev.push(sse(None, &chunk(json!({"content": p}), Value::Null)));
    }
    for (i, (cid, name, args)) in r.tool_calls.iter().enumerate() {
        ev.push(sse(None, &chunk(json!({"tool_calls": [{"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}]}), Value::Null)));
        for p in pieces(args, 20) {
            ev.push(sse(
                None,
                &chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}), Value::Null),
            ));
        }
    }
    if r.stop != "none" {
        ev.push(sse(None, &chunk(json!({}), openai_finish(&r.stop))));
        if include_usage {
            ev.push(sse(None, &json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": r.model, "choices": [], "usage": openai_usage(r)})));
        }
        ev.push("data: [DONE]\n\n".to_string());
    }
    ev
}

/// OpenAI Chat Completions non-streaming body.
pub fn chat_body(r: &Reply) -> Value {
    let calls: Vec<Value> = r
        .tool_calls
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    let mut message =
        json!({"role": "assistant", "content": if r.text.is_empty() { Value::Null } else { json!(r.text) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({"id": format!("chatcmpl-mock-{}", r.turn), "object": "chat.completion", "created": 0, "model": r.model,
        "choices": [{"index": 0, "message": message, "finish_reason": openai_finish(&r.stop)}], "usage": openai_usage(r)})
}

fn responses_usage(r: &Reply) -> Value {
    let input = r.input_tokens + r.cache_read_tokens;
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": r.cache_read_tokens},
        "output_tokens": r.output_tokens, "total_tokens": input + r.output_tokens})
}

fn response_object(r: &Reply, status: &str, output: Value) -> Value {
    let mut o = json!({"id": format!("resp_mock_{}", r.turn), "object": "response", "status": status, "model": r.model, "output": output});
    if status != "in_progress" {
        o["usage"] = responses_usage(r);
    }
    if r.stop == "max_tokens" {
        o["status"] = json!("incomplete");
        o["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    o
}

/// OpenAI Responses stream events.
pub fn responses_events(r: &Reply) -> Vec<String> {
    let mut ev = Vec::new();
    let mut seq = 0;
    let mut push = |ev: &mut Vec<String>, mut v: Value| {
        v["sequence_number"] = json!(seq);
        seq += 1;
        let name = v["type"].as_str().unwrap_or("unknown").to_string();
        ev.push(sse(Some(&name), &v));
    };
    push(&mut ev, json!({"type": "response.created", "response": response_object(r, "in_progress", json!([]))}));
    let mut out_index = 0;
    let mut output = Vec::new();
    if let Some(search) = &r.search {
        let item = responses_search_item(r, search);
        let id = item["id"].clone();
        push(
            &mut ev,
            json!({"type": "response.output_item.added", "output_index": out_index, "item": {"type": "web_search_call", "id": id, "status": "in_progress"}}),
        );
        for step in ["in_progress", "searching", "completed"] {
            push(
                &mut ev,
                json!({"type": format!("response.web_search_call.{step}"), "output_index": out_index, "item_id": id}),
            );
        }
        push(&mut ev, json!({"type": "response.output_item.done", "output_index": out_index, "item": item}));
        output.push(item);
        out_index += 1;
    }
    if !r.text.is_empty() {
        let item_id = format!("msg_mock_{}", r.turn);
        push(
            &mut ev,
            json!({"type": "response.output_item.added", "output_index": out_index, "item": {"type": "message", "id": item_id, "role": "assistant", "content": []}}),
        );
        for p in pieces(&r.text, 12) {
            push(
                &mut ev,
                json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": out_index, "content_index": 0, "delta": p}),
            );
        }
        let annotations = responses_annotations(r);
        for (i, a) in annotations.iter().enumerate() {
            push(
                &mut ev,
                json!({"type": "response.output_text.annotation.added", "item_id": item_id, "output_index": out_index, "content_index": 0, "annotation_index": i, "annotation": a}),
            );
        }
        push(
            &mut ev,
            json!({"type": "response.output_text.done", "item_id": item_id, "output_index": out_index, "content_index": 0, "text": r.text}),
        );
        let item = json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": r.text, "annotations": annotations}]});
        push(&mut ev, json!({"type": "response.output_item.done", "output_index": out_index, "item": item}));
        output.push(item);
        out_index += 1;
    }
    for (i, (cid, name, args)) in r.tool_calls.iter().enumerate() {
        let item_id = format!("fc_mock_{}_{i}", r.turn);
        push(
            &mut ev,
            json!({"type": "response.output_item.added", "output_index": out_index, "item": {"type": "function_call", "id": item_id, "call_id": cid, "name": name, "arguments": ""}}),
        );
        for p in pieces(args, 20) {
            push(
                &mut ev,
                json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": out_index, "delta": p}),
            );
        }
        push(
            &mut ev,
            json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": out_index, "arguments": args}),
        );
        let item = json!({"type": "function_call", "id": item_id, "call_id": cid, "name": name, "arguments": args, "status": "completed"});
        push(&mut ev, json!({"type": "response.output_item.done", "output_index": out_index, "item": item}));
        output.push(item);
        out_index += 1;
    }
    if r.stop != "none" {
        let kind = if r.stop == "max_tokens" { "response.incomplete" } else { "response.completed" };
        push(&mut ev, json!({"type": kind, "response": response_object(r, "completed", Value::Array(output))}));
    }
    ev
}

/// A finished `web_search_call` item, with the sources `include` asks for.
fn responses_search_item(r: &Reply, s: &crate::script::ScriptSearch) -> Value {
    let sources: Vec<Value> = s.results.iter().map(|p| json!({"type": "url", "url": p.url})).collect();
    json!({"type": "web_search_call", "id": format!("ws_mock_{}", r.turn),
        "status": if s.error.is_some() { "failed" } else { "completed" },
        "action": {"type": "search", "query": s.query, "sources": sources}})
}

/// A `url_citation` of every page found, spanning the whole text.
fn responses_annotations(r: &Reply) -> Vec<Value> {
    let Some(s) = r.search.as_ref().filter(|s| s.error.is_none()) else { return Vec::new() };
    let end = r.text.chars().count();
    s.results
        .iter()
        .map(|p| json!({"type": "url_citation", "url": p.url, "title": p.title, "start_index": 0, "end_index": end}))
        .collect()
}

/// OpenAI Responses non-streaming body.
pub fn responses_body(r: &Reply) -> Value {
    let mut output = Vec::new();
    if let Some(search) = &r.search {
        output.push(responses_search_item(r, search));
    }
    if !r.text.is_empty() {
        output.push(json!({"type": "message", "id": format!("msg_mock_{}", r.turn), "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": r.text, "annotations": responses_annotations(r)}]}));
    }
    for (i, (cid, name, args)) in r.tool_calls.iter().enumerate() {
        output.push(json!({"type": "function_call", "id": format!("fc_mock_{}_{i}", r.turn), "call_id": cid, "name": name, "arguments": args, "status": "completed"}));
    }
    response_object(r, "completed", Value::Array(output))
}

/// An in-stream error event in the given format.
pub fn stream_error(format: crate::WireFormat) -> String {
    match format {
        crate::WireFormat::Anthropic => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        crate::WireFormat::Chat => sse(
            None,
            &json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}),
        ),
        crate::WireFormat::Responses => {
            sse(Some("error"), &json!({"type": "error", "code": "server_error", "message": "The server had an error."}))
        }
    }
}

/// A keep-alive that carries nothing.
pub fn keep_alive(format: crate::WireFormat) -> String {
    match format {
        crate::WireFormat::Anthropic => sse(Some("ping"), &json!({"type": "ping"})),
        crate::WireFormat::Chat | crate::WireFormat::Responses => ": keep-alive\n\n".to_string(),
    }
}

/// A text delta of the first content block (for an endless stream).
pub fn text_delta(format: crate::WireFormat, text: &str) -> String {
    match format {
        crate::WireFormat::Anthropic => sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        crate::WireFormat::Chat => sse(
            None,
            &json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "model": "mock",
                    "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
        ),
        crate::WireFormat::Responses => sse(
            Some("response.output_text.delta"),
            &json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": text}),
        ),
    }
}

/// An HTTP error body in the given format.
pub fn error_body(format: crate::WireFormat, status: u16, message: &str) -> Value {
    match format {
        crate::WireFormat::Anthropic => {
            let kind = match status {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                400 => "invalid_request_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        _ => {
            json!({"error": {"message": message, "type": if status >= 500 { "server_error" } else { "invalid_request_error" }, "code": status}})
        }
    }
}
