//! The `fork` subagent type through the real binary, on each wire: the
//! fork's first request is the parent's request at the `task` call, byte for
//! byte (every field but the conversation, and the conversation as a prefix),
//! followed by the parent's reply and the fork's brief as the call's result;
//! a fork's own `task` call is refused; its usage counts in the run's.

use crate::common;

use common::{Harness, Wire, write};
use serde_json::{Value, json};

/// The three request shapes a fork must reproduce.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Anthropic,
    Chat,
    Responses,
}

impl Shape {
    async fn harness(self, script: &str) -> Harness {
        let wire = if matches!(self, Shape::Anthropic) { Wire::Anthropic } else { Wire::OpenAi };
        let h = Harness::new(wire, script).await;
        if matches!(self, Shape::Responses) {
            let config = h.home.path().join("config.toml");
            let mut text = std::fs::read_to_string(&config).unwrap();
            text.push_str("\n[providers.openai]\napi = \"responses\"\n");
            std::fs::write(config, text).unwrap();
        }
        h
    }

    /// The conversation's key in a body (Chat's holds the system prompt first).
    fn conversation(self) -> &'static str {
        if matches!(self, Shape::Responses) { "input" } else { "messages" }
    }
}

fn script() -> String {
    let usage = |input: u64, output: u64| json!({"input_tokens": input, "output_tokens": output});
    json!({"turns": [
        // The fork's second request: its `task` call was refused.
        {"when_request_contains": "is refused in a fork", "text": "FORK-ANSWER", "usage": usage(400, 4)},
        // The fork's first request: it tries to nest, and writes a file.
        {"when_request_contains": "You are a fork", "usage": usage(300, 3), "tool_calls": [
            {"name": "task", "arguments": {"description": "nested", "prompt": "go deeper", "subagent_type": "fork"}},
            {"name": "todo_write", "arguments": {"todos": [{"content": "x", "status": "pending", "active_form": "x-ing"}]}},
            {"name": "write", "arguments": {"path": "fork.txt", "content": "FROM-FORK"}}
        ]},
        {"usage": usage(1000, 10), "tool_calls": [
            {"name": "read", "arguments": {"path": "a.txt"}},
            {"name": "task", "arguments": {"description": "side task", "prompt": "COUNT-THE-FILES", "subagent_type": "fork"}}
        ]},
        {"text": "parent done", "usage": usage(2000, 20)}
    ]})
    .to_string()
}

fn items(body: &Value, shape: Shape) -> Vec<String> {
    body[shape.conversation()].as_array().unwrap().iter().map(Value::to_string).collect()
}

/// The body without its conversation: model, system prompt, tools, limits
/// (Chat's system prompt is its first message: kept here too).
fn without_conversation(body: &Value, shape: Shape) -> String {
    let mut rest = body.clone();
    rest.as_object_mut().unwrap().remove(shape.conversation());
    if matches!(shape, Shape::Chat) {
        assert_eq!(body["messages"][0]["role"], "system");
        rest["system"] = body["messages"][0].clone();
    }
    rest.to_string()
}

/// Each tool result's text and whether it is an error, in a body of `shape`.
fn results(body: &Value, shape: Shape) -> Vec<(String, bool)> {
    let conversation = body[shape.conversation()].as_array().unwrap();
    let openai = |text: &str| (text.to_string(), text.starts_with("Error"));
    match shape {
        Shape::Anthropic => conversation
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| {
                let text: String = b["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
                (text, b["is_error"] == true)
            })
            .collect(),
        Shape::Chat => conversation
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| openai(m["content"].as_str().unwrap()))
            .collect(),
        Shape::Responses => conversation
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| openai(i["output"].as_str().unwrap()))
            .collect(),
    }
}

#[tokio::test]
async fn a_forks_first_request_is_the_parents_request_plus_its_brief_on_every_wire() {
    for shape in [Shape::Anthropic, Shape::Chat, Shape::Responses] {
        let h = shape.harness(&script()).await;
        write(&h.path("a.txt"), "ALPHA\n");
        let out = h.run(&["-p", "PARENT-PROMPT", "--output-format", "stream-json"]).await;
        assert_eq!(out.code, Some(0), "{shape:?}: {}", out.stderr);
        let bodies = h.bodies();
        let is_fork = |b: &Value| b.to_string().contains("You are a fork");
        assert_eq!(bodies.len(), 4, "{shape:?}: parent, fork twice, parent");
        let (parent, fork, parent_next) = (&bodies[0], &bodies[1], &bodies[3]);
        assert!(!is_fork(parent) && is_fork(fork) && is_fork(&bodies[2]) && !is_fork(parent_next), "{shape:?}");
        // Every field but the conversation is the parent's, byte for byte:
        // model, system prompt, the whole tool array in its order, limits.
        assert_eq!(without_conversation(fork, shape), without_conversation(parent, shape), "{shape:?}");
        assert_eq!(fork["tools"].to_string(), parent["tools"].to_string(), "{shape:?}");
        // The conversation: the parent's as sent, then what the parent itself
        // sends next up to the call's results (its reply), then the results.
        let (sent, forked, next) = (items(parent, shape), items(fork, shape), items(parent_next, shape));
        assert_eq!(forked[..sent.len()], sent[..], "{shape:?}: the parent's messages are the fork's prefix");
        let common = forked.iter().zip(&next).take_while(|(a, b)| a == b).count();
        assert!(common > sent.len(), "{shape:?}: the parent's reply is in the prefix too");
        assert_eq!(forked.len(), next.len(), "{shape:?}: one result for each of the reply's calls");
        let tail = forked[common..].join("\n");
        assert!(tail.contains("You are a fork") && tail.contains("COUNT-THE-FILES"), "{shape:?}: {tail}");
        assert!(tail.contains("Not run in this fork"), "{shape:?}: the read call is the parent's: {tail}");
        assert!(!tail.contains("ALPHA"), "{shape:?}: the parent's read did not run for the fork");
        // The fork's nested `task` was refused; its write went through (bypass mode).
        let refused = results(&bodies[2], shape);
        assert!(
            refused.iter().any(|(t, e)| *e && t.contains("`task` is refused in a fork: a fork cannot start subagents")),
            "{shape:?}: {refused:?}"
        );
        // `todo_write` is in the array the fork sends (`task` waits behind tool_search): refused when called.
        assert!(fork["tools"].to_string().contains("\"todo_write\""), "{shape:?}");
        assert!(
            refused.iter().any(|(t, e)| *e && t.contains("`todo_write` is refused in a fork: only the agent")),
            "{shape:?}: {refused:?}"
        );
        assert_eq!(std::fs::read_to_string(h.path("fork.txt")).unwrap(), "FROM-FORK");
        // The parent got the fork's answer and its own read.
        let answered = results(parent_next, shape);
        assert!(answered.iter().any(|(t, _)| t.contains("ALPHA")), "{shape:?}: {answered:?}");
        assert!(answered.iter().any(|(t, _)| t == "FORK-ANSWER"), "{shape:?}: {answered:?}");
        // The fork's usage counts in the run's.
        let result = out.json_lines().into_iter().rfind(|l| l["type"] == "result").unwrap();
        assert_eq!(result["usage"]["input_tokens"], 1000 + 300 + 400 + 2000, "{shape:?}: {result}");
        assert_eq!(result["usage"]["output_tokens"], 10 + 3 + 4 + 20, "{shape:?}: {result}");
    }
}

#[tokio::test]
async fn a_conversation_past_the_compaction_threshold_is_not_forked() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a fork", "text": "should not run"},
        {"tool_calls": [{"name": "task", "arguments": {"description": "side", "prompt": "p", "subagent_type": "fork"}}]},
        {"text": "parent done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    // Compacted past 2,000 tokens; the request without the prompt is about 1,900.
    let config = "[retry]\nbase_delay_ms = 1\nmax_delay_ms = 20\n\n[models.mock]\ncontext_window = 4000\n\
                  max_output = 1000\n\n[compaction]\nreserve_tokens = 2000\n";
    std::fs::write(h.home.path().join("config.toml"), config).unwrap();
    let prompt = format!("FILLER {}", "x".repeat(4000));
    let out = h.run(&["-p", &prompt]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    assert!(bodies.iter().all(|b| !b.to_string().contains("You are a fork")), "no fork request was sent");
    let answered = results(bodies.last().unwrap(), Shape::Anthropic);
    assert_eq!(answered.len(), 1, "{answered:?}");
    let (text, is_error) = &answered[0];
    assert!(*is_error && text.contains("not forked: this conversation is about"), "{text}");
    assert!(text.contains("past the 2000 at which it is compacted"), "{text}");
}

#[tokio::test]
async fn a_fork_in_the_background_starts_from_the_call_and_its_answer_comes_with_task_output() {
    let script = json!({"turns": [
        {"when_request_contains": "You are a fork", "text": "BG-FORK-ANSWER"},
        {"tool_calls": [{"name": "task", "arguments": {
            "description": "side", "prompt": "BG-BRIEF", "subagent_type": "fork", "run_in_background": true}}]},
        {"tool_calls": [{"name": "task_output", "arguments": {"id": "bg-1", "wait": true}}]},
        {"text": "parent done"}
    ]});
    let h = Harness::new(Wire::Anthropic, &script.to_string()).await;
    let out = h.run(&["-p", "PARENT-PROMPT"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bodies = h.bodies();
    let fork = bodies.iter().find(|b| b.to_string().contains("You are a fork")).expect("the fork ran");
    let sent = items(&bodies[0], Shape::Anthropic);
    assert_eq!(items(fork, Shape::Anthropic)[..sent.len()], sent[..], "the parent's conversation at the call");
    assert!(fork.to_string().contains("BG-BRIEF"));
    let last = results(bodies.last().unwrap(), Shape::Anthropic);
    assert!(last.iter().any(|(t, _)| t.contains("Started the subagent (fork) in the background as bg-1")), "{last:?}");
    assert!(last.iter().any(|(t, _)| t.contains("BG-FORK-ANSWER")), "{last:?}");
}
