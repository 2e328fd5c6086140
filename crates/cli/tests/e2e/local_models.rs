//! Local models that write their tool calls as text: a reply recorded from
//! Qwen2.5-Coder 0.5B behind llama.cpp's `llama-server --jinja` (a fenced
//! JSON `read` call passed through as plain content), replayed by the mock
//! on the OpenAI Chat wire. With `tool_call_format = "text"` for the model
//! the call runs and goes back as a native call with its result; without
//! it the reply is the answer, as before.

use crate::common;

use common::{Harness, Wire};
use serde_json::{Value, json};

/// The recorded llama.cpp stream of Qwen2.5-Coder 0.5B answering tern's
/// first request for "Use the read tool to read notes.txt.": a fenced
/// `read` of `notes.txt` from line 5 (see the wire-fixtures README).
const RECORDED: &str = "llama-cpp/01-qwen25-coder-05b-fenced-read.sse";

/// The text of a recorded Chat Completions stream: every `delta.content`, in order.
fn recorded_text(rel: &str) -> String {
    let path = format!("{}/../llm/tests/wire-fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    let body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_string))
        .collect()
}

fn opt_in(h: &Harness) {
    let config = h.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[models.mock]\ntool_call_format = \"text\"\n");
    std::fs::write(config, text).unwrap();
}

const PROMPT: &str = "Use the read tool to read notes.txt.";

/// The file the recorded call reads, its answer on line 5 (where the call starts).
const NOTES: &str = "line 1\nline 2\nline 3\nline 4\nThe launch code is 7341.\n";

#[tokio::test]
async fn a_recorded_text_call_runs_when_the_model_is_opted_in_and_goes_back_as_a_native_call() {
    let reply = recorded_text(RECORDED);
    let script = json!({"turns": [{"text": reply}, {"text": "The launch code is 7341."}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;
    common::write(&h.path("notes.txt"), NOTES);
    opt_in(&h);

    let out = h.run(&["-p", PROMPT, "--output-format", "stream-json", "--verbose"]).await;

    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.events_of_type("result")[0]["result"], "The launch code is 7341.");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "{}", out.stderr);
    let messages = bodies[1]["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    let calls = assistant["tool_calls"].as_array().unwrap();
    assert_eq!((assistant["content"].clone(), calls.len()), (Value::Null, 1), "{assistant}");
    let id = calls[0]["id"].as_str().unwrap();
    assert!(id.starts_with("call_"), "{id}");
    assert_eq!(calls[0]["function"]["name"], "read");
    let args: Value = serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "notes.txt", "offset": 5, "limit": 2000}));
    let result = &messages[messages.len() - 1];
    assert_eq!((result["role"].as_str(), result["tool_call_id"].as_str()), (Some("tool"), Some(id)));
    let read = result["content"].as_str().unwrap();
    assert!(read.contains("The launch code is 7341.") && !read.contains("line 4"), "{result}");
    // Nothing of the call was shown as text.
    let lines = out.json_lines();
    let said: Vec<&Value> = lines.iter().filter(|l| l["type"] == "assistant").collect();
    assert!(said.iter().all(|l| !l.to_string().contains("```")), "{said:?}");
}

#[tokio::test]
async fn the_same_recorded_reply_stays_the_answer_without_the_opt_in() {
    let reply = recorded_text(RECORDED);
    let script = json!({"turns": [{"text": reply}, {"text": "never asked"}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;
    common::write(&h.path("notes.txt"), NOTES);

    let out = h.run(&["-p", PROMPT, "--output-format", "json"]).await;

    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(h.bodies().len(), 1);
    assert_eq!(out.json_lines()[0]["result"].as_str(), Some(reply.as_str()));
}

#[tokio::test]
async fn the_flag_turns_text_calls_on_for_one_run_and_off_over_the_table() {
    let reply = recorded_text(RECORDED);
    let script = json!({"turns": [{"text": reply}, {"text": "The launch code is 7341."}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;
    common::write(&h.path("notes.txt"), NOTES);

    let on = h.run(&["-p", PROMPT, "--output-format", "json", "--tool-call-format", "text"]).await;
    assert_eq!(on.code, Some(0), "{}", on.stderr);
    assert_eq!(on.json_lines()[0]["result"], "The launch code is 7341.");
    assert_eq!(h.bodies().len(), 2);

    // `native` wins over the table's `text`.
    opt_in(&h);
    let off = h.run(&["-p", PROMPT, "--output-format", "json", "--tool-call-format", "native"]).await;
    assert_eq!(off.json_lines()[0]["result"].as_str(), Some(reply.as_str()));
    assert_eq!(h.bodies().len(), 3);

    let bad = h.run(&["-p", PROMPT, "--tool-call-format", "xml"]).await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("native") && bad.stderr.contains("text"), "{}", bad.stderr);
}

// Tools described in the prompt, for servers that ignore or refuse `tools`.

/// A `read` of notes.txt as the prompt's instructions ask a model to write it.
const TAGGED_READ: &str = "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>";

/// The request's messages, checking it carried no tool definitions.
fn text_only(body: &Value) -> Vec<Value> {
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none(), "tools were sent: {body}");
    body["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn with_the_prompt_format_the_tools_are_in_the_system_prompt_and_the_history_is_text() {
    let script = json!({"refuse_tools": true, "turns": [{"text": TAGGED_READ}, {"text": "The launch code is 7341."}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;
    common::write(&h.path("notes.txt"), NOTES);

    let out = h.run(&["-p", PROMPT, "--output-format", "json", "--tool-call-format", "prompt"]).await;

    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["result"], "The launch code is 7341.");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "{}", out.stderr);
    let first = text_only(&bodies[0]);
    let system = first[0]["content"].as_str().unwrap();
    assert!(
        system.contains("\n# Tools\n") && system.contains("\n{\"name\":\"read\",\"description\":\"Read a file"),
        "{system}"
    );
    let second = text_only(&bodies[1]);
    // The system prompt is the same bytes on the second turn.
    assert_eq!(second[0], first[0]);
    let [.., call, result] = second.as_slice() else { panic!("{second:?}") };
    assert_eq!(
        *call,
        json!({"role": "assistant",
               "content": "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\":\"notes.txt\"}}\n</tool_call>"})
    );
    assert_eq!(result["role"], "user");
    let result = result["content"].as_str().unwrap();
    assert!(
        result.starts_with("<tool_response name=\"read\">\n") && result.ends_with("\n</tool_response>"),
        "{result}"
    );
    assert!(result.contains("The launch code is 7341."), "{result}");
}

#[tokio::test]
async fn a_model_on_text_goes_on_in_the_prompt_format_when_the_server_refuses_tools() {
    let script = json!({"refuse_tools": true, "turns": [{"text": TAGGED_READ}, {"text": "The launch code is 7341."}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;
    common::write(&h.path("notes.txt"), NOTES);
    opt_in(&h);

    let out = h.run(&["-p", PROMPT, "--output-format", "json"]).await;

    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.json_lines()[0]["result"], "The launch code is 7341.");
    assert!(
        out.stderr.contains("tools param requires --jinja flag")
            && out.stderr.contains("going on with them described in the system prompt")
            && out.stderr.contains("tool_call_format = \"prompt\""),
        "{}",
        out.stderr
    );
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3, "one refusal, then the two turns: {}", out.stderr);
    assert!(bodies[0]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    text_only(&bodies[1]);
    text_only(&bodies[2]);
}

/// The refusal is remembered for the session: the next prompt starts in
/// prompt form, not refused again.
#[tokio::test]
async fn the_next_prompt_of_the_session_starts_in_prompt_form() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let script = json!({"refuse_tools": true, "turns": [{"text": "first"}, {"text": "second"}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;
    opt_in(&h);
    let mut child = h
        .command(&["--input-format", "stream-json", "--output-format", "stream-json"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for text in ["one", "two"] {
        let line = json!({"type": "user", "session_id": "", "message": {"role": "user", "content": text}, "parent_tool_use_id": null});
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let result = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                if v["type"] == "result" {
                    return v;
                }
            }
            panic!("stdout ended before the result");
        };
        let result = tokio::time::timeout(std::time::Duration::from_secs(30), result).await.unwrap();
        assert_eq!(result["is_error"], false, "{result}");
    }
    drop(stdin);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await;
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3, "one refusal, then each prompt once in prompt form");
    assert!(bodies[0]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    text_only(&bodies[1]);
    text_only(&bodies[2]);
}

#[tokio::test]
async fn a_model_on_native_tools_is_told_what_to_set_when_the_server_refuses_them() {
    let script = json!({"refuse_tools": true, "turns": [{"text": "never served"}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;

    let out = h.run(&["-p", PROMPT, "--output-format", "json"]).await;

    assert_ne!(out.code, Some(0), "{}", out.stderr);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(
        said.contains("tools param requires --jinja flag")
            && said.contains("tool_call_format = \\\"prompt\\\"")
            && said.contains("--tool-call-format prompt"),
        "{said}"
    );
    assert_eq!(h.bodies().len(), 1, "a refusal of tools is not tried again");
}

#[tokio::test]
async fn a_tool_found_by_tool_search_joins_the_end_of_the_prompt_and_the_rest_stays_byte_for_byte() {
    let search = "<tool_call>{\"name\": \"tool_search\", \"arguments\": {\"query\": \"select:web_fetch\"}}</tool_call>";
    let script = json!({"refuse_tools": true, "turns": [{"text": search}, {"text": "Loaded."}]});
    let h = Harness::new(Wire::OpenAi, &script.to_string()).await;

    let out = h.run(&["-p", "Load web_fetch.", "--output-format", "json", "--tool-call-format", "prompt"]).await;

    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "{}", out.stderr);
    let before = text_only(&bodies[0])[0]["content"].as_str().unwrap().to_string();
    let after = text_only(&bodies[1])[0]["content"].as_str().unwrap().to_string();
    let listed = before.split("\n<tools>\n").nth(1).unwrap();
    assert!(listed.contains("\n{\"name\":\"tool_search\"") && !listed.contains("{\"name\":\"web_fetch\""), "{listed}");
    // Everything before the end of the list stays; the new tool's line comes next.
    let end = before.find("</tools>\n").unwrap();
    let added =
        after.strip_prefix(&before[..end]).unwrap_or_else(|| panic!("the prompt changed:\n{before}\n---\n{after}"));
    let (line, rest) = added.split_once('\n').unwrap();
    assert!(line.starts_with("{\"name\":\"web_fetch\",\"description\":"), "{line}");
    assert_eq!(rest, &before[end..]);
}
