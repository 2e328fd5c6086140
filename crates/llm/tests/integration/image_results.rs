//! Image tool results in each wire format's request body.

use pretty_assertions::assert_eq;
use serde_json::json;
use tern_llm::ModelRequest;
use tern_protocol::{ContentBlock, ImageSource, Message, Role, ToolResultContent};

fn request() -> ModelRequest {
    let image = ImageSource { media_type: "image/png".into(), data: "iVBORw0K".into() };
    ModelRequest::new(
        "m",
        "",
        vec![
            Message::user_text("look"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "read".into(),
                    input: json!({"path": "a.png"}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: vec![
                        ToolResultContent::text("Image: a.png (PNG, 1x1, 70 B)"),
                        ToolResultContent::Image { source: image },
                    ],
                    is_error: false,
                }],
            },
        ],
    )
}

#[test]
fn anthropic_puts_the_image_inside_the_tool_result() {
    let body = tern_llm::anthropic::request_body(&request());
    assert_eq!(
        body["messages"][2]["content"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}})
    );
}

#[test]
fn chat_moves_images_to_a_labelled_user_message_after_the_tool_messages() {
    let body = tern_llm::openai_chat::request_body(&request(), "max_tokens");
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs[2], json!({"role": "tool", "tool_call_id": "call_1", "content": "Image: a.png (PNG, 1x1, 70 B)"}));
    assert_eq!(
        msgs[3],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Image from tool call call_1:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}
        ]})
    );
}

#[test]
fn responses_sends_images_as_output_parts() {
    let body = tern_llm::openai_responses::request_body(&request());
    assert_eq!(
        body["input"][2],
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Image: a.png (PNG, 1x1, 70 B)"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K"}
        ]})
    );
}
