//! A model's reply text through the text-form tool-call parser
//! (`tool_call_format = "text"`): never a panic; a call it reads names an
//! offered tool with an object of arguments, and no more calls than the cap.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tern_llm::text_tool_calls::{MAX_CALLS, TextCalls, may_start_call, parse};
use tern_protocol::ToolDefinition;

fn offered() -> &'static Vec<ToolDefinition> {
    static TOOLS: OnceLock<Vec<ToolDefinition>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        ["read", "bash", "edit"]
            .iter()
            .map(|name| {
                serde_json::from_value(serde_json::json!({
                    "name": name,
                    "description": "",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}
                }))
                .unwrap()
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = may_start_call(text);
    if let TextCalls::Calls { calls, .. } = parse(text, offered()) {
        assert!(!calls.is_empty() && calls.len() <= MAX_CALLS);
        for call in calls {
            assert!(offered().iter().any(|t| t.name == call.name), "{}", call.name);
            assert!(call.input.is_object(), "{}", call.input);
        }
    }
});
