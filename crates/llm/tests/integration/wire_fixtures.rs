//! Every recorded stream in `tests/wire-fixtures/` fed through the SSE parser
//! and the matching accumulator, checked against the expected parse that
//! `tests/wire-fixtures/README.md` gives for it. Each file is fed whole and in
//! chunks of 1, 7 and 64 bytes, which must not change the result.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tern_llm::anthropic::AnthropicAccumulator;
use tern_llm::openai_chat::ChatAccumulator;
use tern_llm::openai_responses::ResponsesAccumulator;
use tern_llm::sse::SseParser;
use tern_llm::{Accumulator, Completion, IncompleteToolCall, LlmError, ModelRequest, StreamDelta};
use tern_protocol::{ContentBlock, Message, Role, StopReason, ToolDefinition, ToolResultContent, Usage};

// ---------------------------------------------------------------------------
// Driving the parsers
// ---------------------------------------------------------------------------

/// Feed `bytes` in `chunk`-byte pieces through a fresh SSE parser into `acc`.
/// Stops at the first error from `on_event` and returns it; otherwise
/// returns what `finish` gives.
fn run(mut acc: Box<dyn Accumulator>, bytes: &[u8], chunk: usize) -> (Vec<StreamDelta>, Result<Completion, LlmError>) {
    let mut sse = SseParser::new();
    let mut deltas = Vec::new();
    let mut events = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        events.extend(sse.feed(piece));
        for ev in events.drain(..) {
            match acc.on_event(&ev.event, &ev.data) {
                Ok(d) => deltas.extend(d),
                Err(e) => return (deltas, Err(e)),
            }
        }
    }
    for ev in sse.finish() {
        match acc.on_event(&ev.event, &ev.data) {
            Ok(d) => deltas.extend(d),
            Err(e) => return (deltas, Err(e)),
        }
    }
    (deltas, acc.finish())
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Format {
    Anthropic,
    Chat,
    Responses,
}

fn accumulator(format: Format) -> Box<dyn Accumulator> {
    match format {
        Format::Anthropic => Box::new(AnthropicAccumulator::new()),
        Format::Chat => Box::new(ChatAccumulator::new()),
        Format::Responses => Box::new(ResponsesAccumulator::new()),
    }
}

fn read_fixture(rel: &str) -> Vec<u8> {
    let path = format!("{}/{rel}", concat!(env!("CARGO_MANIFEST_DIR"), "/tests/wire-fixtures"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A result that can be compared across runs (`LlmError` is not `PartialEq`).
fn comparable(r: &Result<Completion, LlmError>) -> Result<Completion, String> {
    match r {
        Ok(c) => Ok(c.clone()),
        Err(e) => Err(format!("{e:?}")),
    }
}

/// Parse `bytes` with every chunk size and check they all agree.
fn parse_bytes(format: Format, name: &str, bytes: &[u8]) -> (Vec<StreamDelta>, Result<Completion, LlmError>) {
    let (deltas, result) = run(accumulator(format), bytes, bytes.len());
    for chunk in [1, 7, 64] {
        let (d, r) = run(accumulator(format), bytes, chunk);
        assert_eq!(d, deltas, "{name}: deltas with {chunk}-byte chunks differ from the whole-file parse");
        assert_eq!(
            comparable(&r),
            comparable(&result),
            "{name}: result with {chunk}-byte chunks differs from the whole-file parse"
        );
    }
    (deltas, result)
}

pub(crate) fn parse(format: Format, rel: &str) -> (Vec<StreamDelta>, Result<Completion, LlmError>) {
    parse_bytes(format, rel, &read_fixture(rel))
}

// ---------------------------------------------------------------------------
// Expectations
// ---------------------------------------------------------------------------

/// How a thinking block's signature is checked.
enum Sig<'a> {
    None,
    Exact(&'a str),
    /// Long signatures: prefix, suffix and length in characters.
    Affix(&'a str, &'a str, usize),
}

/// The expected parse of a stream that completes.
struct Want<'a> {
    model: &'a str,
    thinking: &'a str,
    signature: Sig<'a>,
    text: &'a str,
    /// (name, id, arguments), in call order.
    tools: Vec<(&'a str, &'a str, Value)>,
    /// (name, id, raw arguments).
    incomplete: Vec<(&'a str, &'a str, &'a str)>,
    stop: Option<StopReason>,
    usage: Usage,
}

impl Default for Want<'_> {
    fn default() -> Self {
        Self {
            model: "",
            thinking: "",
            signature: Sig::None,
            text: "",
            tools: Vec::new(),
            incomplete: Vec::new(),
            stop: None,
            usage: Usage::default(),
        }
    }
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        web_search_requests: 0,
    }
}

fn delta_text(deltas: &[StreamDelta]) -> String {
    deltas.iter().filter_map(|d| if let StreamDelta::Text(t) = d { Some(t.as_str()) } else { None }).collect()
}

fn delta_thinking(deltas: &[StreamDelta]) -> String {
    deltas.iter().filter_map(|d| if let StreamDelta::Thinking(t) = d { Some(t.as_str()) } else { None }).collect()
}

fn delta_tool_starts(deltas: &[StreamDelta]) -> Vec<(String, String)> {
    deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCallStart { id, name } => Some((name.clone(), id.clone())),
            _ => None,
        })
        .collect()
}

fn kind(b: &ContentBlock) -> &'static str {
    match b {
        ContentBlock::Text { .. } => "text",
        ContentBlock::Thinking { .. } => "thinking",
        ContentBlock::RedactedThinking { .. } => "redacted_thinking",
        ContentBlock::Image { .. } => "image",
        ContentBlock::ToolUse { .. } => "tool_use",
        ContentBlock::ToolResult { .. } => "tool_result",
        ContentBlock::ServerToolUse { .. } => "server_tool_use",
        ContentBlock::ServerToolResult { .. } => "server_tool_result",
        ContentBlock::Citations { .. } => "citations",
    }
}

/// Parse a fixture that must complete, and check it against `want`.
fn check(format: Format, rel: &str, want: Want<'_>) -> Completion {
    let (deltas, result) = parse(format, rel);
    let done = result.unwrap_or_else(|e| panic!("{rel}: expected a completion, got {e:?}"));
    let msg = &done.message;
    assert_eq!(msg.role, Role::Assistant, "{rel}: role");
    assert_eq!(done.model, want.model, "{rel}: model");

    // Text, in the message and as streamed.
    assert_eq!(msg.text(), want.text, "{rel}: message text");
    assert_eq!(delta_text(&deltas), want.text, "{rel}: concatenated text deltas");

    // Thinking, in the message and as streamed.
    let thinking: Vec<(&str, Option<&str>)> = msg
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking { thinking, signature } => Some((thinking.as_str(), signature.as_deref())),
            _ => None,
        })
        .collect();
    if want.thinking.is_empty() {
        assert_eq!(thinking, Vec::<(&str, Option<&str>)>::new(), "{rel}: no thinking block expected");
    } else {
        assert_eq!(thinking.len(), 1, "{rel}: one thinking block expected");
        assert_eq!(thinking[0].0, want.thinking, "{rel}: thinking text");
        let sig = thinking[0].1;
        match want.signature {
            Sig::None => assert_eq!(sig, None, "{rel}: signature"),
            Sig::Exact(s) => assert_eq!(sig, Some(s), "{rel}: signature"),
            Sig::Affix(prefix, suffix, len) => {
                let sig = sig.unwrap_or_else(|| panic!("{rel}: signature missing"));
                assert!(sig.starts_with(prefix), "{rel}: signature {sig} should start with {prefix}");
                assert!(sig.ends_with(suffix), "{rel}: signature {sig} should end with {suffix}");
                assert_eq!(sig.chars().count(), len, "{rel}: signature length");
            }
        }
    }
    assert_eq!(delta_thinking(&deltas), want.thinking, "{rel}: concatenated thinking deltas");

    // Complete tool calls, in order, and nothing else is a ToolUse.
    let tools: Vec<(&str, &str, &Value)> = msg
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((name.as_str(), id.as_str(), input)),
            _ => None,
        })
        .collect();
    let want_tools: Vec<(&str, &str, &Value)> = want.tools.iter().map(|(n, i, a)| (*n, *i, a)).collect();
    assert_eq!(tools, want_tools, "{rel}: tool calls (name, id, args)");

    let incomplete: Vec<IncompleteToolCall> = want
        .incomplete
        .iter()
        .map(|(name, id, raw)| IncompleteToolCall {
            id: (*id).to_string(),
            name: (*name).to_string(),
            raw_arguments: (*raw).to_string(),
        })
        .collect();
    assert_eq!(done.incomplete_tool_calls, incomplete, "{rel}: incomplete tool calls");

    // Every call, complete or not, was announced once while streaming.
    let mut starts = delta_tool_starts(&deltas);
    let mut want_starts: Vec<(String, String)> = want
        .tools
        .iter()
        .map(|(n, i, _)| (n.to_string(), i.to_string()))
        .chain(want.incomplete.iter().map(|(n, i, _)| (n.to_string(), i.to_string())))
        .collect();
    starts.sort();
    want_starts.sort();
    assert_eq!(starts, want_starts, "{rel}: ToolCallStart deltas");

    // Block order: reasoning first, then text, then tool calls (every fixture
    // here has that shape).
    let mut want_kinds = Vec::new();
    if !want.thinking.is_empty() {
        want_kinds.push("thinking");
    }
    if !want.text.is_empty() {
        want_kinds.push("text");
    }
    want_kinds.extend(std::iter::repeat_n("tool_use", want.tools.len()));
    assert_eq!(msg.content.iter().map(kind).collect::<Vec<_>>(), want_kinds, "{rel}: content block kinds");

    assert_eq!(done.stop_reason, want.stop, "{rel}: stop reason");
    assert_eq!(done.usage, want.usage, "{rel}: usage");
    done
}

/// Parse a fixture that must fail with an in-stream error, after streaming
/// `partial_text` / `partial_thinking`.
fn check_stream_error(
    format: Format,
    rel: &str,
    partial_text: &str,
    partial_thinking: &str,
    (provider, kind, message, retryable): (&str, &str, &str, bool),
) {
    let (deltas, result) = parse(format, rel);
    assert_eq!(delta_text(&deltas), partial_text, "{rel}: text streamed before the error");
    assert_eq!(delta_thinking(&deltas), partial_thinking, "{rel}: thinking streamed before the error");
    assert_eq!(delta_tool_starts(&deltas), Vec::<(String, String)>::new(), "{rel}: no tool calls before the error");
    match result {
        Err(e @ LlmError::Stream { .. }) => {
            assert_eq!(e.is_retryable(), retryable, "{rel}: is_retryable()");
            let LlmError::Stream { provider: p, kind: k, message: m, retryable: r } = e else { unreachable!() };
            assert_eq!((p.as_str(), k.as_str(), m.as_str(), r), (provider, kind, message, retryable), "{rel}: error");
        }
        other => panic!("{rel}: expected LlmError::Stream, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// anthropic/
// ---------------------------------------------------------------------------

const A: Format = Format::Anthropic;

#[test]
fn anthropic_01_text_ping_usage() {
    check(
        A,
        "anthropic/01-text-ping-usage.sse",
        Want {
            model: "claude-opus-4-8",
            text: "Hello!",
            stop: Some(StopReason::EndTurn),
            usage: usage(25, 15, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_02_tool_use_input_json_delta() {
    check(
        A,
        "anthropic/02-tool-use-input-json-delta.sse",
        Want {
            model: "claude-opus-4-8",
            text: "Okay, let's check the weather for San Francisco, CA:",
            tools: vec![("get_weather", "toolu_01T1x1fJ34qAmk2tNTrN7Up6", json!({"location": "San Francisco, CA"}))],
            stop: Some(StopReason::ToolUse),
            usage: usage(472, 89, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_03_parallel_tool_use() {
    check(
        A,
        "anthropic/03-parallel-tool-use.sse",
        Want {
            model: "claude-sonnet-4-20250514",
            thinking: r#"The user wants me to read two files: "foo" and "bar". I'll read both of them."#,
            signature: Sig::Affix("Eu8BCkYI", "MYAQ==", 328),
            tools: vec![
                ("Read", "toolu_01ParallelFirst000000000", json!({"file_path": "/tmp/blah/foo"})),
                ("Read", "toolu_01ParallelSecond00000000", json!({"file_path": "/tmp/blah/bar"})),
            ],
            stop: Some(StopReason::ToolUse),
            // cache_creation 22 → cache_write, cache_read 13993 → cache_read.
            usage: usage(2, 72, 13993, 22),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_03b_parallel_tool_use_empty_input() {
    check(
        A,
        "anthropic/03b-parallel-tool-use-empty-input.sse",
        Want {
            model: "claude-3-5-haiku-latest",
            text: "I'll help you generate two names for a pet pelican using the pelican name generator tool.",
            tools: vec![
                ("pelican_name_generator", "toolu_017ngBid8gmdReTeroVSZf7r", json!({})),
                ("pelican_name_generator", "toolu_01FJrHJrmnfEqR6NxkQ3yhpu", json!({})),
            ],
            stop: Some(StopReason::ToolUse),
            usage: usage(310, 82, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_03c_parallel_tool_use_no_text() {
    check(
        A,
        "anthropic/03c-parallel-tool-use-no-text-2026.sse",
        Want {
            model: "claude-haiku-4-5-20251001",
            tools: vec![
                ("pelican_name_generator", "toolu_01LtHJmixrs9NcWQkK8hu8hj", json!({})),
                ("pelican_name_generator", "toolu_01N8a4jWyf116qKTMqKKmjyt", json!({})),
            ],
            stop: Some(StopReason::ToolUse),
            usage: usage(542, 62, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_04_thinking_signature_text() {
    check(
        A,
        "anthropic/04-thinking-signature-text.sse",
        Want {
            model: "claude-opus-4-8",
            thinking: "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\nThe remainder is 0, so GCD(1071, 462) = 21.",
            signature: Sig::Exact("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."),
            text: "The greatest common divisor of 1071 and 462 is **21**.",
            stop: Some(StopReason::EndTurn),
            // No usage anywhere in the stream: zeros, and no crash.
            usage: Usage::default(),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_05_error_overloaded_midstream() {
    check_stream_error(
        A,
        "anthropic/05-error-overloaded-midstream.sse",
        "Hello",
        "",
        ("anthropic", "overloaded_error", "Overloaded", true),
    );
}

#[test]
fn anthropic_05b_error_after_ping() {
    check_stream_error(A, "anthropic/05b-error-after-ping.sse", "", "", ("anthropic", "api_error", "Overloaded", true));
}

#[test]
fn anthropic_05c_error_as_first_event() {
    check_stream_error(
        A,
        "anthropic/05c-error-as-first-event.sse",
        "",
        "",
        ("anthropic", "overloaded_error", "Overloaded", true),
    );
}

#[test]
fn anthropic_06_max_tokens_mid_tool_use() {
    check(
        A,
        "anthropic/06-max-tokens-mid-tool-use.sse",
        Want {
            model: "claude-3-7-sonnet-20250219",
            text: "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now.",
            incomplete: vec![(
                "make_file",
                "toolu_01EKqbqmZrGRXy18eN7m9kvY",
                "{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n\"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s\",\n\"\",\n\"## INTRODUCTION\",\n\"\",\n\"Filing taxes",
            )],
            stop: Some(StopReason::MaxTokens),
            usage: usage(450, 124, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_06b_max_tokens_mid_tool_use_with_block_stop() {
    check(
        A,
        "anthropic/06b-max-tokens-mid-tool-use-with-block-stop.sse",
        Want {
            model: "claude-sonnet-4-20250514",
            incomplete: vec![("Read", "toolu_01TruncatedRead00000001", "{\"file_path\": \"/tmp/bl")],
            stop: Some(StopReason::MaxTokens),
            usage: usage(12, 32, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn anthropic_07_redacted_thinking() {
    let rel = "anthropic/07-redacted-thinking.sse";
    let text = "I notice that you've sent what appears to be some kind of test string or command. I don't have any special \"magic string\" triggers or backdoor commands that would expose internal systems or change my behavior.\n\nI'm Claude, an AI assistant created by Anthropic to be helpful, harmless, and honest. How can I assist you today with a legitimate task or question?";
    let (deltas, result) = parse(A, rel);
    let done = result.unwrap();
    let content = &done.message.content;
    assert_eq!(content.iter().map(kind).collect::<Vec<_>>(), vec!["redacted_thinking", "redacted_thinking", "text"]);
    let redacted: Vec<&str> = content
        .iter()
        .filter_map(|b| if let ContentBlock::RedactedThinking { data } = b { Some(data.as_str()) } else { None })
        .collect();
    assert_eq!(redacted[0].len(), 744);
    assert!(redacted[0].starts_with("EqkECkYIBxgC"), "{}", redacted[0]);
    assert_eq!(redacted[1].len(), 296);
    assert!(redacted[1].starts_with("EtgBCkYIBxgC"), "{}", redacted[1]);
    assert_eq!(done.message.text(), text);
    assert_eq!(delta_text(&deltas), text);
    assert_eq!(delta_thinking(&deltas), "", "redacted thinking has no readable deltas");
    assert_eq!(done.incomplete_tool_calls, Vec::<IncompleteToolCall>::new());
    assert_eq!(done.stop_reason, Some(StopReason::EndTurn));
    // message_start said 88; message_delta's repeated input_tokens wins.
    assert_eq!(done.usage, usage(92, 189, 0, 0));
    assert_eq!(done.model, "claude-sonnet-4-5-20250929");
}

// ---------------------------------------------------------------------------
// openai-chat/
// ---------------------------------------------------------------------------

const C: Format = Format::Chat;

#[test]
fn openai_chat_01_text() {
    check(
        C,
        "openai-chat/01-text.sse",
        Want {
            model: "gpt-4o-2024-08-06",
            text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
            stop: Some(StopReason::EndTurn),
            usage: usage(14, 30, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn openai_chat_02_tool_call_split_args() {
    check(
        C,
        "openai-chat/02-tool-call-split-args.sse",
        Want {
            model: "gpt-4o-2024-08-06",
            tools: vec![("get_weather", "call_4XzlGBLtUe9dy3GVNV4jhq7h", json!({"city": "New York City"}))],
            stop: Some(StopReason::ToolUse),
            usage: usage(44, 16, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn openai_chat_03_parallel_tool_calls() {
    check(
        C,
        "openai-chat/03-parallel-tool-calls.sse",
        Want {
            model: "gpt-4o-2024-08-06",
            tools: vec![
                (
                    "GetWeatherArgs",
                    "call_JMW1whyEaYG438VE1OIflxA2",
                    json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
                ),
                ("get_stock_price", "call_DNYTawLBoN8fj3KN6qU9N1Ou", json!({"ticker": "AAPL", "exchange": "NASDAQ"})),
            ],
            stop: Some(StopReason::ToolUse),
            usage: usage(149, 60, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn openai_chat_04_include_usage() {
    check(
        C,
        "openai-chat/04-include-usage.sse",
        Want {
            model: "gpt-4o-mini-2024-07-18",
            text: "The capital of the UK is London.",
            stop: Some(StopReason::EndTurn),
            usage: usage(78, 9, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn openai_chat_04b_tool_call_include_usage() {
    check(
        C,
        "openai-chat/04b-tool-call-include-usage.sse",
        Want {
            model: "gpt-4o-mini-2024-07-18",
            tools: vec![("get_capital", "call_ZR5UUuTt3pf61kjwAJIYdVMj", json!({"country": "UK"}))],
            stop: Some(StopReason::ToolUse),
            usage: usage(53, 15, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn openai_chat_05_finish_length() {
    check(
        C,
        "openai-chat/05-finish-length.sse",
        Want {
            model: "gpt-4o-2024-08-06",
            // Structured output cut mid-value: plain text, not a tool call.
            text: "{\"",
            stop: Some(StopReason::MaxTokens),
            usage: usage(79, 1, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn openai_chat_06_error_midstream() {
    check_stream_error(
        C,
        "openai-chat/06-error-midstream.sse",
        "The question \"",
        "",
        ("openai", "server_error", "The server had an error while processing your request. Sorry about that!", true),
    );
}

// ---------------------------------------------------------------------------
// openai-compatible/
// ---------------------------------------------------------------------------

#[test]
fn compat_01_deepseek_reasoning_content_tool_call() {
    check(
        C,
        "openai-compatible/01-deepseek-reasoning-content-tool-call.sse",
        Want {
            model: "deepseek-reasoner",
            thinking: "The user is asking for the weather in San Francisco. I need to use the weather tool to get this information. Let me invoke the weather tool with the location parameter set to \"San Francisco\".",
            tools: vec![("weather", "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", json!({"location": "San Francisco"}))],
            stop: Some(StopReason::ToolUse),
            // prompt 339 of which 320 cached.
            usage: usage(19, 83, 320, 0),
            ..Want::default()
        },
    );
}

#[test]
fn compat_02_openrouter_comments_reasoning_error() {
    check_stream_error(
        C,
        "openai-compatible/02-openrouter-comments-minimax-reasoning-error.sse",
        "",
        "We need to respond to a greeting. The user",
        ("openai", "400", "Token limit reached", false),
    );
}

#[test]
fn compat_03_groq_tool_call_whole_chunk() {
    check(
        C,
        "openai-compatible/03-groq-tool-call-whole-chunk.sse",
        Want {
            model: "llama-3.3-70b-versatile",
            tools: vec![("weather", "tk85n1k4m", json!({}))],
            stop: Some(StopReason::ToolUse),
            usage: usage(210, 15, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn compat_04_qwen_dashscope_empty_id_deltas() {
    check(
        C,
        "openai-compatible/04-qwen-dashscope-empty-id-deltas.sse",
        Want {
            model: "qwen3-max",
            tools: vec![("weather", "call_eee11723464a4b9eb8cee71d", json!({"location": "San Francisco"}))],
            stop: Some(StopReason::ToolUse),
            usage: usage(295, 22, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn compat_05_gateway_tool_index_starts_at_1() {
    check(
        C,
        "openai-compatible/05-gateway-tool-index-starts-at-1.sse",
        Want {
            model: "claude-haiku-4.5",
            text: "Now listing your Coder workspaces:",
            tools: vec![("bmcp_coder_coder_list_workspaces", "toolu_vrtx_01DbFqUgk6aAtJ4nDBqzFWDF", json!({}))],
            stop: Some(StopReason::ToolUse),
            // prompt 25939 of which 25429 cached.
            usage: usage(510, 58, 25429, 0),
            ..Want::default()
        },
    );
}

#[test]
fn compat_06_snowflake_no_finish_reason() {
    check(
        C,
        "openai-compatible/06-snowflake-no-finish-reason.sse",
        Want {
            model: "claude-sonnet-4-6",
            text: "4",
            // [DONE] without any finish_reason is a normal stop.
            stop: Some(StopReason::EndTurn),
            usage: usage(22, 5, 0, 0),
            ..Want::default()
        },
    );
}

// ---------------------------------------------------------------------------
// openai-responses/
// ---------------------------------------------------------------------------

const R: Format = Format::Responses;

#[test]
fn openai_responses_01_output_text() {
    check(
        R,
        "openai-responses/01-output-text.sse",
        Want {
            model: "gpt-4o-mini-2024-07-18",
            text: "Why did the scarecrow win an award?\n\nBecause he was outstanding in his field!",
            stop: Some(StopReason::EndTurn),
            usage: usage(11, 18, 0, 0),
            ..Want::default()
        },
    );
}

#[test]
fn openai_responses_02_function_call_arguments() {
    check(
        R,
        "openai-responses/02-function-call-arguments.sse",
        Want {
            model: "gpt-4.1-2025-04-14",
            thinking: "The user wants to add 3 and 5. Let me call the add function.",
            // The tool call's id is the call_id (what the result must name), not the fc_ item id.
            tools: vec![("add", "call_7VaiUXZYuuuwWwviCrckxq6t", json!({"a": 3, "b": 5}))],
            stop: Some(StopReason::ToolUse),
            usage: usage(58, 18, 0, 0),
            ..Want::default()
        },
    );
}

// ---------------------------------------------------------------------------
// Streams cut before their terminal event
// ---------------------------------------------------------------------------

/// The fixture's events (each without its blank-line terminator).
fn events_of(rel: &str) -> Vec<String> {
    let text = String::from_utf8(read_fixture(rel)).unwrap();
    text.split("\n\n").filter(|e| !e.is_empty()).map(str::to_string).collect()
}

/// The first `n` events, framed again as an SSE body.
fn first_events(events: &[String], n: usize) -> Vec<u8> {
    events[..n].iter().map(|e| format!("{e}\n\n")).collect::<String>().into_bytes()
}

fn assert_incomplete(format: Format, name: &str, bytes: &[u8], want_text: &str) {
    let (deltas, result) = parse_bytes(format, name, bytes);
    assert_eq!(delta_text(&deltas), want_text, "{name}: text streamed before the cut");
    match result {
        Err(e @ LlmError::Incomplete { .. }) => assert!(e.is_retryable(), "{name}: Incomplete is retryable"),
        other => panic!("{name}: expected LlmError::Incomplete, got {other:?}"),
    }
}

#[test]
fn anthropic_cut_before_message_delta_is_incomplete() {
    let rel = "anthropic/01-text-ping-usage.sse";
    let events = events_of(rel);
    assert!(events[events.len() - 2].contains("message_delta"));
    assert!(events[events.len() - 1].contains("message_stop"));
    // Sanity: the whole file re-framed still completes.
    let (_, whole) = parse_bytes(A, rel, &first_events(&events, events.len()));
    assert_eq!(whole.unwrap().message.text(), "Hello!");
    assert_incomplete(
        A,
        "anthropic/01 minus message_delta and message_stop",
        &first_events(&events, events.len() - 2),
        "Hello!",
    );
    // Nothing at all, or an empty body, is incomplete too.
    assert_incomplete(A, "anthropic empty body", b"", "");
}

#[test]
fn openai_chat_cut_before_finish_is_incomplete() {
    let rel = "openai-chat/01-text.sse";
    let events = events_of(rel);
    let finish = events.iter().position(|e| e.contains("\"finish_reason\":\"stop\"")).unwrap();
    assert!(events[finish + 1..].iter().all(|e| !e.contains("\"content\":")), "only usage and [DONE] after finish");
    let text = "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.";
    assert_incomplete(C, "openai-chat/01 cut before finish_reason", &first_events(&events, finish), text);
    assert_incomplete(C, "openai-chat empty body", b"", "");
}

#[test]
fn openai_responses_cut_before_completed_is_incomplete() {
    let rel = "openai-responses/01-output-text.sse";
    let events = events_of(rel);
    let completed = events.iter().position(|e| e.contains("response.completed")).unwrap();
    assert_eq!(completed, events.len() - 1);
    let text = "Why did the scarecrow win an award?\n\nBecause he was outstanding in his field!";
    assert_incomplete(R, "openai-responses/01 cut before response.completed", &first_events(&events, completed), text);
}

// ---------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------

fn conversation() -> ModelRequest {
    let messages = vec![
        Message::user_text("List the files."),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "Listing them.".into() },
                ContentBlock::ToolUse { id: "toolu_01A".into(), name: "ls".into(), input: json!({"path": "src"}) },
            ],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "toolu_01A".into(),
                content: vec![ToolResultContent::text("no such directory: src")],
                is_error: true,
            }],
        },
    ];
    let mut req = ModelRequest::new("test-model", "You are terse.", messages);
    req.tools = vec![ToolDefinition {
        name: "ls".into(),
        description: "List a directory.".into(),
        input_schema: ls_schema(),
        snippet: None,
        execution_mode: Default::default(),
    }];
    req.max_tokens = 1024;
    req
}

fn ls_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
}

#[test]
fn anthropic_request_body() {
    let body = tern_llm::anthropic::request_body(&conversation());
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "max_tokens": 1024,
            "stream": true,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                // The previous user turn is a breakpoint too (the last request wrote it).
                {"role": "user", "content": [{"type": "text", "text": "List the files.", "cache_control": {"type": "ephemeral"}}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Listing them."},
                    {"type": "tool_use", "id": "toolu_01A", "name": "ls", "input": {"path": "src"}},
                ]},
                {"role": "user", "content": [{
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A",
                    "content": [{"type": "text", "text": "no such directory: src"}],
                    "is_error": true,
                    "cache_control": {"type": "ephemeral"},
                }]},
            ],
            "tools": [{
                "name": "ls",
                "description": "List a directory.",
                "input_schema": ls_schema(),
                "cache_control": {"type": "ephemeral"},
            }],
        })
    );
}

#[test]
fn anthropic_request_body_has_at_most_four_cache_breakpoints() {
    let mut req = conversation();
    for i in 0..5 {
        req.messages
            .push(Message { role: Role::Assistant, content: vec![ContentBlock::Text { text: format!("a{i}") }] });
        req.messages.push(Message::user_text(format!("u{i}")));
    }
    let body = tern_llm::anthropic::request_body(&req);
    let marks = body.to_string().matches("cache_control").count();
    assert_eq!(marks, 4, "{body:#}");
    let messages = body["messages"].as_array().unwrap();
    let n = messages.len();
    assert!(messages[n - 1]["content"][0]["cache_control"].is_object());
    assert!(messages[n - 3]["content"][0]["cache_control"].is_object());
}

#[test]
fn anthropic_request_body_thinking_budget() {
    let mut req = conversation();
    req.thinking_budget = Some(2048);
    let body = tern_llm::anthropic::request_body(&req);
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
}

#[test]
fn openai_chat_request_body() {
    let body = tern_llm::openai_chat::request_body(&conversation(), "max_tokens");
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "max_tokens": 1024,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "List the files."},
                {"role": "assistant", "content": "Listing them.", "tool_calls": [{
                    "id": "toolu_01A",
                    "type": "function",
                    "function": {"name": "ls", "arguments": "{\"path\":\"src\"}"},
                }]},
                // No is_error in this API: the failure is said in the content.
                {"role": "tool", "tool_call_id": "toolu_01A", "content": "Error: no such directory: src"},
            ],
            "tools": [{
                "type": "function",
                "function": {"name": "ls", "description": "List a directory.", "parameters": ls_schema()},
            }],
        })
    );
    // `arguments` is a JSON *string* holding the input object.
    let args = body["messages"][2]["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(args).unwrap(), json!({"path": "src"}));

    let openai = tern_llm::openai_chat::request_body(&conversation(), "max_completion_tokens");
    assert_eq!(openai["max_completion_tokens"], json!(1024));
    assert_eq!(openai.get("max_tokens"), None);
}

#[test]
fn openai_responses_request_body() {
    let body = tern_llm::openai_responses::request_body(&conversation());
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "instructions": "You are terse.",
            "stream": true,
            "store": false,
            "max_output_tokens": 1024,
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "List the files."}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Listing them."}]},
                {"type": "function_call", "call_id": "toolu_01A", "name": "ls", "arguments": "{\"path\":\"src\"}"},
                {"type": "function_call_output", "call_id": "toolu_01A", "output": "Error: no such directory: src"},
            ],
            "tools": [{
                "type": "function",
                "name": "ls",
                "description": "List a directory.",
                "parameters": ls_schema(),
            }],
        })
    );
}
