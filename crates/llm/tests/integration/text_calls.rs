//! Replies recorded from Qwen2.5-Coder 0.5B and 1.5B behind llama.cpp's
//! `llama-server --jinja`, answering tern's real requests (which offered
//! tern's tools natively): each is plain text with `finish_reason: "stop"`,
//! and the text-call parser reads from it exactly the call the model wrote,
//! or refuses a call to a tool that was not offered. See `llama-cpp/` in
//! `tests/wire-fixtures/README.md`.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_llm::text_tool_calls::{TextCalls, parse as parse_calls};
use tern_protocol::{StopReason, ToolDefinition};

use super::wire_fixtures::{Format, parse};

/// The tools tern's recorded requests offered, in order.
const OFFERED: &str =
    "read write edit bash grep glob ls todo_write task_output task_stop task enter_plan_mode web_fetch skill";

fn offered() -> Vec<ToolDefinition> {
    OFFERED
        .split(' ')
        .map(|name| {
            serde_json::from_value(json!({"name": name, "description": "", "input_schema": {"type": "object"}}))
                .unwrap()
        })
        .collect()
}

/// The recorded reply's text, after checking it came as plain content that
/// finished normally, with no native call.
fn recorded_text(rel: &str) -> String {
    let (_, result) = parse(Format::Chat, rel);
    let completion = result.unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(completion.stop_reason, Some(StopReason::EndTurn), "{rel}");
    assert!(completion.message.tool_calls().is_empty() && completion.incomplete_tool_calls.is_empty(), "{rel}");
    assert!(completion.model.starts_with("/work/eval/qwen"), "{rel}: {}", completion.model);
    completion.message.text()
}

fn the_call(rel: &str) -> (String, Value, Option<String>) {
    match parse_calls(&recorded_text(rel), &offered()) {
        TextCalls::Calls { calls, prose } => {
            assert_eq!(calls.len(), 1, "{rel}");
            let call = calls.into_iter().next().unwrap();
            (call.name, call.input, prose)
        }
        other => panic!("{rel}: expected one call, got {other:?}"),
    }
}

#[test]
fn fenced_json_calls_to_offered_tools_are_read_as_written() {
    assert_eq!(
        the_call("llama-cpp/01-qwen25-coder-05b-fenced-read.sse"),
        ("read".into(), json!({"path": "notes.txt", "offset": 5, "limit": 2000}), None)
    );
    // An argument the tool does not have stays: the tool's own validation answers it.
    assert_eq!(
        the_call("llama-cpp/02-qwen25-coder-05b-fenced-bash.sse"),
        ("bash".into(), json!({"command": "ls -a", "path": "~"}), None)
    );
    assert_eq!(
        the_call("llama-cpp/03-qwen25-coder-05b-fenced-ls.sse"),
        ("ls".into(), json!({"path": "/tmp/tc/ws"}), None)
    );
}

#[test]
fn the_1_5b_model_writes_its_calls_the_same_way() {
    assert_eq!(
        the_call("llama-cpp/07-qwen25-coder-15b-fenced-read-absolute-path.sse"),
        ("read".into(), json!({"path": "/tmp/tc/ws/notes.txt"}), None)
    );
    assert_eq!(
        the_call("llama-cpp/08-qwen25-coder-15b-fenced-read.sse"),
        ("read".into(), json!({"path": "notes.txt"}), None)
    );
    assert_eq!(
        the_call("llama-cpp/09-qwen25-coder-15b-fenced-ls.sse"),
        ("ls".into(), json!({"path": "/tmp/tc/ws"}), None)
    );
}

#[test]
fn a_bare_json_call_is_read_as_written() {
    assert_eq!(
        the_call("llama-cpp/04-qwen25-coder-05b-bare-edit.sse"),
        ("edit".into(), json!({"old_string": "a - b", "new_string": "a + b"}), None)
    );
}

#[test]
fn calls_to_tools_that_were_not_offered_are_refused_by_name() {
    let text = recorded_text("llama-cpp/06-qwen25-coder-05b-unknown-tool.sse");
    assert_eq!(
        parse_calls(&text, &offered()),
        TextCalls::Refused(format!(
            "`fix_calc.py` is not a tool offered to the model (offered: {})",
            OFFERED.replace(' ', ", ")
        ))
    );
}

/// The 0.5B model showing "code" that calls a tool and then explaining it:
/// a call followed by more answer is a quote, not a call to run.
#[test]
fn a_call_shown_as_an_example_and_explained_is_not_run() {
    let text = recorded_text("llama-cpp/05-qwen25-coder-05b-unknown-tool-after-prose.sse");
    match parse_calls(&text, &offered()) {
        TextCalls::Refused(why) => assert!(why.starts_with("text follows the last call"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// Asked through `llama-server --no-jinja` with no `tools` and the tools
/// described in the system prompt (`tool_call_format = "prompt"`), the 0.5B
/// model still fences a JSON object rather than writing the `<tool_call>`
/// tag the prompt shows: the parser reads it all the same.
#[test]
fn in_prompt_form_the_0_5b_model_still_fences_its_call() {
    assert_eq!(
        the_call("llama-cpp/10-qwen25-coder-05b-prompt-form-fenced-read.sse"),
        ("read".into(), json!({"path": "notes.txt"}), None)
    );
    // A stray key beside `name` and `arguments` (grep's `output_mode`) makes an ordinary
    // object, not a call: the reply stays the answer.
    let stray = recorded_text("llama-cpp/12-qwen25-coder-05b-prompt-form-stray-key.sse");
    assert!(stray.contains("\"output_mode\": \"content\""), "{stray}");
    assert_eq!(parse_calls(&stray, &offered()), TextCalls::Text);
    // Given its result as text, the model may echo it back: that is an answer, not a call.
    let echo = recorded_text("llama-cpp/11-qwen25-coder-05b-prompt-form-echoes-the-result.sse");
    assert!(echo.starts_with("<tool_response name=\"read\">\n") && echo.contains("The launch code is 7341."), "{echo}");
    assert_eq!(parse_calls(&echo, &offered()), TextCalls::Text);
}

/// The 1.5B model, asked with the tools as JSON objects between `<tools>`
/// tags (the shipped section), calls `read`, then answers from the result it
/// was given as text.
#[test]
fn in_prompt_form_the_1_5b_model_calls_then_answers() {
    assert_eq!(
        the_call("llama-cpp/13-qwen25-coder-15b-prompt-form-fenced-read.sse"),
        ("read".into(), json!({"path": "notes.txt"}), None)
    );
    let answer = recorded_text("llama-cpp/14-qwen25-coder-15b-prompt-form-answer.sse");
    assert!(answer.contains("7341"), "{answer}");
    assert_eq!(parse_calls(&answer, &offered()), TextCalls::Text);
}
