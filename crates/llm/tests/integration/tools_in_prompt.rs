//! `tool_call_format = "prompt"` over real HTTP against the mock server:
//! the request carries no tools, the system prompt describes them and the
//! history goes as text, on every wire; a server that refuses `tools` (as
//! llama.cpp's does without Jinja) is answered with what to set, at once.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_llm::{Api, HttpProvider, LlmError, ModelRequest, Provider, ProviderConfig, ToolCallFormat};
use tern_mock_llm::{MockServer, Script};
use tern_protocol::{ContentBlock, Message, Role, ToolDefinition, ToolResultContent};
use tokio_util::sync::CancellationToken;

async fn mock(script: Value) -> MockServer {
    MockServer::start(Script::from_json(&script.to_string()).unwrap(), None).await.unwrap()
}

fn provider(server: &MockServer, api: Api) -> HttpProvider {
    let base = if api == Api::Anthropic { server.url() } else { server.openai_url() };
    let mut config = ProviderConfig::new(api, base, "k");
    config.retry.base_delay = Duration::from_millis(1);
    HttpProvider::new(config).unwrap()
}

fn read_tool() -> ToolDefinition {
    serde_json::from_value(json!({"name": "read", "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}))
    .unwrap()
}

/// A prompt, a `read` call and its result.
fn request(format: ToolCallFormat) -> ModelRequest {
    let messages = vec![
        Message::user_text("What is in notes.txt?"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "read".into(),
                input: json!({"path": "notes.txt"}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: vec![ToolResultContent::Text { text: "1\tThe code is 7341.".into() }],
                is_error: false,
            }],
        },
    ];
    let mut req = ModelRequest::new("qwen", "You are tern.", messages);
    req.tools = vec![read_tool()];
    req.tool_call_format = format;
    req
}

async fn ask(p: &HttpProvider, req: &ModelRequest) -> Result<tern_llm::Completion, LlmError> {
    p.stream(req, &|_| {}, &CancellationToken::new()).await
}

const CALL: &str = "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\":\"notes.txt\"}}\n</tool_call>";
const RESPONSE: &str = "<tool_response name=\"read\">\n1\tThe code is 7341.\n</tool_response>";

#[tokio::test]
async fn the_chat_request_has_no_tools_and_the_history_is_text() {
    let server = mock(json!({"turns": [{"text": "unused"}, {"text": "The code is 7341."}]})).await;
    let done = ask(&provider(&server, Api::OpenAiChat), &request(ToolCallFormat::Prompt)).await.unwrap();
    assert_eq!(done.message.text(), "The code is 7341.");
    let body = &server.requests()[0].body;
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none(), "{body}");
    let messages = body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are tern.\n\n# Tools\n"), "{system}");
    assert!(
        system.contains(
            "\n<tools>\n{\"name\":\"read\",\"description\":\"Read a file.\",\"parameters\":\
             {\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}\n</tools>\n"
        ),
        "{system}"
    );
    assert_eq!(
        messages[1..],
        [
            json!({"role": "user", "content": "What is in notes.txt?"}),
            json!({"role": "assistant", "content": CALL}),
            json!({"role": "user", "content": RESPONSE}),
        ]
    );
}

#[tokio::test]
async fn the_other_wires_send_no_tools_either() {
    for api in [Api::Anthropic, Api::OpenAiResponses] {
        let server = mock(json!({"turns": [{"text": "unused"}, {"text": "done"}]})).await;
        ask(&provider(&server, api), &request(ToolCallFormat::Prompt)).await.unwrap();
        let body = &server.requests()[0].body;
        assert!(body.get("tools").is_none(), "{api:?}: {body}");
        let text = body.to_string();
        assert!(
            text.contains("# Tools") && text.contains("</tool_call>") && text.contains("<tool_response"),
            "{api:?}"
        );
        assert!(!text.contains("call_1"), "{api:?}: the call's id went as a native call: {body}");
    }
}

#[tokio::test]
async fn a_server_that_refuses_tools_says_what_to_set_without_retrying() {
    let server = mock(json!({"refuse_tools": true, "turns": [{"text": "unused"}, {"text": "done"}]})).await;
    let p = provider(&server, Api::OpenAiChat);
    let err = ask(&p, &request(ToolCallFormat::Text)).await.unwrap_err();
    assert!(err.refuses_tools(), "{err}");
    let said = err.to_string();
    assert!(said.contains("HTTP 500") && said.contains("tools param requires --jinja flag"), "{said}");
    assert!(said.contains("tool_call_format = \"prompt\"") && said.contains("[models.\"qwen\"]"), "{said}");
    assert_eq!(server.requests().len(), 1, "a refusal of tools is not tried again");
    // The same conversation in prompt form is taken.
    let done = ask(&p, &request(ToolCallFormat::Prompt)).await.unwrap();
    assert_eq!(done.message.text(), "done");
}
