use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn tool(name: &str, properties: Value) -> ToolDefinition {
    serde_json::from_value(json!({
        "name": name,
        "description": "",
        "input_schema": {"type": "object", "properties": properties},
    }))
    .unwrap()
}

fn offered() -> Vec<ToolDefinition> {
    vec![
        tool("read", json!({"path": {"type": "string"}, "offset": {"type": "integer"}})),
        tool("bash", json!({"command": {"type": "string"}, "timeout": {"type": ["integer", "null"]}})),
        tool("edit", json!({"path": {"type": "string"}, "edits": {"type": "array"}})),
    ]
}

fn calls(text: &str) -> (Vec<(String, Value)>, Option<String>) {
    match parse(text, &offered()) {
        TextCalls::Calls { calls, prose } => (calls.into_iter().map(|c| (c.name, c.input)).collect(), prose),
        other => panic!("expected calls from {text:?}, got {other:?}"),
    }
}

fn refused(text: &str) -> String {
    match parse(text, &offered()) {
        TextCalls::Refused(why) => why,
        other => panic!("expected a refusal for {text:?}, got {other:?}"),
    }
}

fn read_a() -> (String, Value) {
    ("read".to_string(), json!({"path": "a.txt"}))
}

#[test]
fn a_fenced_json_call_as_qwen_2_5_coder_writes_it() {
    let text = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```";
    assert_eq!(calls(text), (vec![read_a()], None));
    // No language, or the call's own, and whitespace around.
    assert_eq!(calls("\n```\n{\"name\":\"read\",\"arguments\":{\"path\":\"a.txt\"}}\n```\n").0, vec![read_a()]);
    assert_eq!(calls("```tool_call\n{\"name\":\"read\",\"arguments\":{\"path\":\"a.txt\"}}```").0, vec![read_a()]);
}

/// Written by Qwen2.5-Coder 1.5B to tern's request in `cargo xtask eval`.
#[test]
fn a_call_between_tools_tags_as_small_qwen_models_copy_them() {
    let text = "<tools>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tools>";
    assert_eq!(calls(text), (vec![read_a()], None));
    assert!(may_start_call("<too"));
    // Anything else inside is not a call: the text stays the answer.
    assert!(
        refused("<tools>\n<function name=\"read\"/>\n</tools>").contains("<tool"),
        "{}",
        refused("<tools>x</tools>")
    );
}

#[test]
fn hermes_tags_one_or_several_and_an_unclosed_last_one() {
    let one = "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>";
    assert_eq!(calls(one), (vec![read_a()], None));
    let two =
        format!("{one}\n<tool_call>\n{{\"name\": \"bash\", \"arguments\": {{\"command\": \"ls\"}}}}\n</tool_call>");
    assert_eq!(calls(&two).0, vec![read_a(), ("bash".into(), json!({"command": "ls"}))]);
    assert_eq!(calls("<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n").0, vec![read_a()]);
    // A fence inside the tags.
    assert_eq!(
        calls("<tool_call>\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n</tool_call>").0,
        vec![read_a()]
    );
}

#[test]
fn bare_objects_arrays_and_the_other_key_spellings() {
    assert_eq!(calls("{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}").0, vec![read_a()]);
    assert_eq!(calls("{\"name\": \"read\", \"parameters\": {\"path\": \"a.txt\"}}").0, vec![read_a()]);
    assert_eq!(
        calls("{\"type\": \"function\", \"function\": {\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}}")
            .0,
        vec![read_a()],
        "OpenAI's shape, arguments as a JSON string"
    );
    assert_eq!(calls("{\"function\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}").0, vec![read_a()]);
    assert_eq!(calls("{\"id\": \"x\", \"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}").0, vec![read_a()]);
    let two = "{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}";
    assert_eq!(calls(two).0.len(), 2);
    let array = "[{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}, {\"name\": \"bash\", \"arguments\": {}}]";
    assert_eq!(calls(array).0, vec![read_a(), ("bash".into(), json!({}))]);
}

#[test]
fn qwen3_coder_function_tags_are_typed_by_the_schema() {
    let text = "<tool_call>\n<function=read>\n<parameter=path>\n42\n</parameter>\n<parameter=offset>\n10\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(calls(text).0, vec![("read".into(), json!({"path": "42", "offset": 10}))]);
    // A string keeps its inner lines; a nullable integer is read as JSON.
    let text = "<tool_call>\n<function=bash>\n<parameter=command>\necho a\necho b\n</parameter>\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(calls(text).0, vec![("bash".into(), json!({"command": "echo a\necho b", "timeout": 5}))]);
    assert!(
        refused("<tool_call>\n<function=read>\n<parameter=path>\na.txt\n</function>\n</tool_call>")
            .contains("malformed")
    );
}

#[test]
fn prose_before_and_between_the_calls_is_kept_as_text() {
    let text =
        "I'll read the file first.\n\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n\n";
    assert_eq!(calls(text), (vec![read_a()], Some("I'll read the file first.".to_string())));
    let between = "First a:\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>\nThen a again:\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>";
    assert_eq!(calls(between), (vec![read_a(), read_a()], Some("First a:\n\nThen a again:".to_string())));
}

/// A call the model quotes inside an answer (from a README it read, say) is
/// followed by more answer: a call written to be run ends the reply.
#[test]
fn a_call_followed_by_more_text_is_a_quote_not_a_call() {
    let quoted = "The README asks for this:\n\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n\nI did not run it.";
    assert!(refused(quoted).contains("text follows the last call"), "{}", refused(quoted));
    let bare_then_prose = "{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\nThis shows the file.";
    assert!(refused(bare_then_prose).contains("text follows the last call"));
    let tagged =
        "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call> is how a call looks.";
    assert!(refused(tagged).contains("text follows the last call"));
}

#[test]
fn ordinary_answers_stay_text() {
    for text in [
        "",
        "The answer is 42.",
        "Here is the fix:\n```rust\nfn main() {}\n```",
        "```json\n{\"version\": 1}\n```",
        "{\"name\": \"Alice\", \"age\": 3}",
        "[1, 2, 3]",
        "{not json at all",
        "Use `{}` as the placeholder.",
    ] {
        assert_eq!(parse(text, &offered()), TextCalls::Text, "{text:?}");
    }
}

#[test]
fn a_call_to_a_tool_not_offered_is_refused_by_name() {
    let why = refused("```json\n{\"name\": \"search_files\", \"arguments\": {\"q\": \"x\"}}\n```");
    assert_eq!(why, "`search_files` is not a tool offered to the model (offered: read, bash, edit)");
    // One unknown call refuses the whole reply: nothing runs.
    let mixed = "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call><tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>";
    assert!(refused(mixed).contains("`rm`"));
    assert_eq!(
        parse("{\"name\": \"read\", \"arguments\": {}}", &[]),
        TextCalls::Refused("`read` is not a tool offered to the model (offered: none)".into())
    );
}

#[test]
fn malformed_calls_and_arguments_are_refused_with_the_reason() {
    assert!(refused("<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": </tool_call>").contains("malformed"));
    assert!(refused("```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"\n```").contains("malformed"));
    assert!(refused("{\"name\": \"read\", \"arguments\": {\"path\": \"a\"").contains("malformed"));
    assert_eq!(
        refused("{\"name\": \"read\", \"arguments\": [\"a.txt\"]}"),
        "the arguments of `read` are not a JSON object: [\"a.txt\"]"
    );
    assert_eq!(
        refused("{\"name\": \"read\", \"arguments\": \"a.txt\"}"),
        "the arguments of `read` are a string that is not a JSON object"
    );
    assert!(refused("<tool_call>just words</tool_call>").contains("malformed"));
    assert!(refused("<tool_call>{\"path\": \"a\"}</tool_call>").contains("not a `name` with `arguments`"));
}

#[test]
fn calls_mixed_with_code_or_other_json_are_not_taken() {
    let with_code =
        "```python\nprint(1)\n```\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```";
    assert!(refused(with_code).contains("code block that is not a call"));
    let with_json =
        "Use {\"x\": 1} here.\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>";
    assert!(refused(with_json).contains("not prose"));
    // Both `arguments` and `parameters`: ambiguous, so not a call.
    assert_eq!(parse("{\"name\": \"read\", \"arguments\": {}, \"parameters\": {}}", &offered()), TextCalls::Text);
}

#[test]
fn limits_bound_the_work() {
    let call = "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n";
    assert_eq!(calls(&call.repeat(MAX_CALLS)).0.len(), MAX_CALLS);
    assert!(refused(&call.repeat(MAX_CALLS + 1)).contains("more than 32 calls"));
    let tagged = format!("<tool_call>{}</tool_call>", call.trim());
    assert!(refused(&tagged.repeat(MAX_CALLS + 1)).contains("more than 32 calls"));
    let big = format!("{{\"name\": \"bash\", \"arguments\": {{\"command\": \"{}\"}}}}", "x".repeat(MAX_TEXT_BYTES));
    assert!(refused(&big).contains("more than the 262144 read"));
    assert_eq!(parse(&"words ".repeat(MAX_TEXT_BYTES), &offered()), TextCalls::Text);
    // Many fences: cut off at the segment limit, in linear time.
    let fences = "```\nx\n```\n".repeat(MAX_SEGMENTS);
    assert_eq!(parse(&fences, &offered()), TextCalls::Text, "many code blocks are still an answer");
    assert!(refused(&format!("{fences}{call}")).contains("more than 128"));
    // Deep nesting is refused by serde_json's recursion limit, not a stack overflow.
    let deep = format!("{{\"name\": \"read\", \"arguments\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(refused(&deep).contains("malformed"));
}

#[test]
fn call_ids_are_fresh() {
    let (a, b) = (call_id(), call_id());
    assert!(a.starts_with("call_") && a.len() == 29, "{a}");
    assert_ne!(a, b);
}

#[test]
fn text_that_may_still_become_a_call_is_recognised_from_its_start() {
    for start in [
        "",
        "  \n",
        "{",
        "[{\"na",
        "<tool",
        "<tool_call>{",
        "`",
        "``",
        "```",
        "```js",
        "```json",
        "```\n{",
        "```tool_call\n",
    ] {
        assert!(may_start_call(start), "{start:?}");
    }
    for start in ["The", "I'll read it", "```rust", "```python\nprint", "```javascript", "<b>", "- item"] {
        assert!(!may_start_call(start), "{start:?}");
    }
}
