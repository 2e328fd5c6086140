//! Compaction: when a conversation nears the model's context window, old
//! tool results become receipts (they are most of the bytes) and the part
//! before the last turns is replaced by a structured summary the model
//! writes; the todo list and the last turns stay verbatim.
//!
//! The pure parts live here (where to cut, what to archive, what to ask);
//! [`crate::Runtime`] sends the request and records the result.

use std::path::Path;

use tern_protocol::{ContentBlock, Message, Role, TodoItem, ToolResultContent};

pub use tern_protocol::COMPACTION_SUMMARY_PREFIX as SUMMARY_PREFIX;

/// Tool results longer than this are archived as receipts when compacting.
const ARCHIVE_MIN_BYTES: usize = 2 * 1024;

/// A marker in the request for a summary (the mock model keys on it).
pub const SUMMARY_REQUEST_MARKER: &str = "[tern: compaction request]";

/// What to ask the model for.
const INSTRUCTIONS: &str = "\
Your conversation with the user so far is about to be replaced by a summary, because it is close to the \
limit of your context window. Write that summary now. Do not call any tools; answer with the summary only.

It must let you (or another engineer) continue the work without the conversation. Use these headings:

## Goal
What the user asked for, in their words where it matters, and any constraints they set.
## Decisions
What was decided and why; approaches rejected and why.
## Files
Files read (what was learned) and files changed (what changed), with paths.
## Commands
Commands that worked and commands that failed (with the error), so they are not retried blindly.
## Current state
Where the work stands right now; anything half-done.
## Next steps
What remains, in order.

Be specific: paths, names, numbers, error messages. Leave out pleasantries and anything no longer relevant.";

/// When to compact and what to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Compact automatically (as well as on `/compact` and "prompt too long").
    pub auto: bool,
    /// Tokens kept free below the window for the reply and the next turn.
    pub reserve_tokens: u64,
    /// User turns kept verbatim after the summary.
    pub keep_turns: usize,
}

impl Settings {
    /// The reserve when none is configured: the reply's limit plus room for
    /// a turn of tool results, at most a quarter of the window.
    pub fn default_reserve(window: u64, max_output: u64) -> u64 {
        (max_output.min(32_000) + 8_000).min(window / 4)
    }

    /// Where auto-compaction triggers for `window`.
    pub fn threshold(&self, window: u64) -> u64 {
        window.saturating_sub(self.reserve_tokens)
    }
}

/// A rough token count of `messages` (4 bytes a token; an image ~1,600),
/// used where the provider's own count is not known yet.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    let mut bytes = 0usize;
    let mut images = 0u64;
    for m in messages {
        for b in &m.content {
            match b {
                ContentBlock::Text { text } => bytes += text.len(),
                ContentBlock::Thinking { thinking, signature } => {
                    bytes += thinking.len() + signature.as_ref().map_or(0, String::len)
                }
                ContentBlock::RedactedThinking { data } => bytes += data.len(),
                ContentBlock::Image { .. } => images += 1,
                ContentBlock::ToolUse { name, input, .. } | ContentBlock::ServerToolUse { name, input, .. } => {
                    bytes += name.len() + input.to_string().len()
                }
                ContentBlock::ServerToolResult { raw, .. } => bytes += raw.to_string().len(),
                ContentBlock::Citations { .. } => {}
                ContentBlock::ToolResult { content, .. } => {
                    for c in content {
                        match c {
                            ToolResultContent::Text { text } => bytes += text.len(),
                            ToolResultContent::Image { .. } => images += 1,
                        }
                    }
                }
            }
            bytes += 8;
        }
    }
    (bytes as u64).div_ceil(4) + images * 1_600
}

/// Whether a user message is a prompt (not tool results).
fn is_prompt(m: &Message) -> bool {
    m.role == Role::User && !m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

/// Where the kept part starts: at the `keep`-th prompt from the end
/// (a prompt, never a tool result, so no call is separated from its
/// result). `None` when there is nothing before it to summarise.
/// When there are not that many turns before them, as few as `at_least`
/// are kept; one pass over the messages.
pub fn split_point_between(messages: &[Message], keep: usize, at_least: usize) -> Option<usize> {
    let prompts: Vec<usize> = messages.iter().enumerate().filter(|(_, m)| is_prompt(m)).map(|(i, _)| i).collect();
    // Keeping more turns than there are prompts is keeping them all: no more tries than prompts.
    let keep = keep.min(prompts.len());
    (at_least..=keep.max(at_least)).rev().find_map(|k| {
        let from = if k == 0 { messages.len() } else { *prompts.get(prompts.len().checked_sub(k)?)? };
        (from > 0).then_some(from)
    })
}

/// Replace the big tool results of `messages` with receipts pointing at
/// files saved under `dir`; returns how many. A result that cannot be
/// saved is cut to a head and tail instead.
pub fn archive_tool_results(messages: &mut [Message], dir: &Path) -> usize {
    let mut names = std::collections::HashMap::new();
    for m in messages.iter() {
        for b in &m.content {
            if let ContentBlock::ToolUse { id, name, .. } = b {
                names.insert(id.clone(), name.clone());
            }
        }
    }
    let mut archived = 0;
    for m in messages.iter_mut() {
        for b in &mut m.content {
            let ContentBlock::ToolResult { tool_use_id, content, .. } = b else { continue };
            let text = ToolResultContent::joined_text(content);
            if text.len() <= ARCHIVE_MIN_BYTES || crate::output_budget::is_receipt(&text) {
                continue;
            }
            let tool = names.get(tool_use_id.as_str()).map_or("a tool", String::as_str);
            let replacement = crate::output_budget::archive(dir, tool, tool_use_id, &text);
            let images: Vec<ToolResultContent> =
                content.drain(..).filter(|c| matches!(c, ToolResultContent::Image { .. })).collect();
            content.push(ToolResultContent::text(replacement));
            content.extend(images);
            archived += 1;
        }
    }
    archived
}

/// The conversation to send for a summary: `old` (archived), then the
/// instructions (and the person's focus, if any) as the last user turn.
pub fn summary_request(old: &[Message], focus: Option<&str>) -> Vec<Message> {
    let mut ask = format!("{SUMMARY_REQUEST_MARKER}\n{INSTRUCTIONS}");
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        ask.push_str(&format!("\n\nThe user asks the summary to focus on: {f}"));
    }
    let mut messages = old.to_vec();
    match messages.last_mut() {
        // Tool results (or a prompt) last: the instructions join that user turn.
        Some(last) if last.role == Role::User => last.content.push(ContentBlock::Text { text: ask }),
        _ => messages.push(Message::user_text(ask)),
    }
    messages
}

/// The most summary requests one compaction makes: a history that needs
/// more is summarised from its newest part, and the oldest messages are
/// left out of the summary (they stay in the session file).
pub const MAX_SUMMARY_PARTS: usize = 16;

/// How a history too large for one summary request is summarised: each
/// part in turn, each request holding the summary so far and the part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryParts {
    /// The parts, oldest first: ranges of the history, each starting at a
    /// prompt (the first may start anywhere), together covering
    /// `left_out..` of it.
    pub parts: Vec<std::ops::Range<usize>>,
    /// How many of the oldest messages are in no part (more than
    /// [`MAX_SUMMARY_PARTS`] would have been needed).
    pub left_out: usize,
}

/// Cut `old` into parts of at most `budget` estimated tokens, at prompts
/// (a call is never parted from its result); a single turn larger than
/// the budget is a part of its own (see [`shrink_to`]).
pub fn plan_parts(old: &[Message], budget: u64) -> SummaryParts {
    // The turns (a prompt and what followed it; the start may precede the first prompt).
    let mut starts: Vec<usize> =
        old.iter().enumerate().filter(|&(i, m)| i > 0 && is_prompt(m)).map(|(i, _)| i).collect();
    starts.insert(0, 0);
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain(std::iter::once(old.len())).collect();
    let turns = starts.iter().zip(ends.iter());
    let mut parts: Vec<std::ops::Range<usize>> = Vec::new();
    let mut tokens = 0;
    for (&start, &end) in turns.filter(|(s, e)| s < e) {
        let t = estimate_tokens(&old[start..end]);
        match parts.last_mut() {
            Some(part) if tokens + t <= budget => {
                part.end = end;
                tokens += t;
            }
            _ => {
                parts.push(start..end);
                tokens = t;
            }
        }
    }
    let drop = parts.len().saturating_sub(MAX_SUMMARY_PARTS);
    let parts: Vec<_> = parts.into_iter().skip(drop).collect();
    let left_out = parts.first().map_or(0, |p| p.start);
    SummaryParts { parts, left_out }
}

/// Cut the longest texts, tool results and tool inputs of `messages` (a
/// copy sent for a summary) to a head and a tail until they fit `budget`
/// estimated tokens, or are cut to 256 bytes each.
pub fn shrink_to(messages: &mut [Message], budget: u64) {
    let mut cap = 64 * 1024;
    while estimate_tokens(messages) > budget && cap >= 256 {
        for m in messages.iter_mut() {
            for b in &mut m.content {
                match b {
                    ContentBlock::Text { text } => cut(text, cap),
                    ContentBlock::ToolResult { content, .. } => {
                        for c in content.iter_mut() {
                            if let ToolResultContent::Text { text } = c {
                                cut(text, cap);
                            }
                        }
                    }
                    ContentBlock::ToolUse { input, .. } => {
                        let len = input.to_string().len();
                        if len > cap {
                            *input =
                                serde_json::json!({"note": format!("an input of {len} bytes, left out of this copy")});
                        }
                    }
                    _ => {}
                }
            }
        }
        cap /= 2;
    }
}

/// `text` cut to about `cap` bytes: its head and tail, and what was left out between.
fn cut(text: &mut String, cap: usize) {
    if text.len() <= cap {
        return;
    }
    let half = cap / 2;
    let head = tern_protocol::text::prefix_within(text, half);
    let tail = &text[tern_protocol::text::floor_char_boundary(text, text.len() - half)..];
    let left_out = text.len() - head.len() - tail.len();
    *text = format!("{head}\n[… {left_out} bytes left out of this copy …]\n{tail}");
}

/// The summary text with the todo list appended (kept verbatim).
pub fn with_todos(summary: &str, todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return summary.trim().to_string();
    }
    let mut out = format!("{}\n\n## Todo list (current)\n", summary.trim());
    for t in todos {
        out.push_str(&format!("{} {}\n", t.status.mark(), t.content));
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse { id: id.into(), name: "bash".into(), input: serde_json::json!({}) }],
        }
    }

    fn result(id: &str, text: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content: vec![ToolResultContent::text(text)],
                is_error: false,
            }],
        }
    }

    #[test]
    fn the_cut_falls_on_a_prompt_never_between_a_call_and_its_result() {
        let m = vec![
            Message::user_text("one"),
            call("a"),
            result("a", "x"),
            Message::assistant_text("done"),
            Message::user_text("two"),
            call("b"),
            result("b", "y"),
        ];
        assert_eq!(split_point_between(&m, 1, 1), Some(4));
        assert_eq!(split_point_between(&m, 2, 2), None, "nothing before the first prompt");
        assert_eq!(split_point_between(&m, 0, 0), Some(7));
        assert_eq!(split_point_between(&m[4..], 1, 1), None);
        assert_eq!(split_point_between(&m, 2, 1), Some(4), "two are not there: one");
        assert_eq!(split_point_between(&m, usize::MAX, 0), Some(4), "a huge keep is bounded by the prompts");
    }

    #[test]
    fn big_results_become_receipts_and_small_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let big = "line\n".repeat(2000);
        let mut m = vec![call("a"), result("a", &big), call("b"), result("b", "small")];
        assert_eq!(archive_tool_results(&mut m, dir.path()), 1);
        let ContentBlock::ToolResult { content, .. } = &m[1].content[0] else { panic!() };
        let text = ToolResultContent::joined_text(content);
        assert!(text.len() < 4096 && text.contains("saved at"), "{text}");
        assert!(crate::output_budget::is_receipt(&text));
        let saved = std::fs::read_dir(dir.path()).unwrap().flatten().next().unwrap().path();
        assert_eq!(std::fs::read_to_string(saved).unwrap(), big);
        // Archiving again changes nothing.
        assert_eq!(archive_tool_results(&mut m, dir.path()), 0);
    }

    #[test]
    fn the_request_ends_with_the_instructions_in_a_user_turn() {
        let old = vec![Message::user_text("one"), call("a"), result("a", "x")];
        let r = summary_request(&old, Some("the parser"));
        assert_eq!(r.len(), 3, "joined the tool results' turn");
        assert!(r[2].text().contains(SUMMARY_REQUEST_MARKER) && r[2].text().contains("the parser"));
        let old = vec![Message::user_text("one"), Message::assistant_text("ok")];
        assert_eq!(summary_request(&old, None).len(), 3);
    }

    #[test]
    fn estimates_grow_with_the_text() {
        let small = estimate_tokens(&[Message::user_text("hi")]);
        let big = estimate_tokens(&[Message::user_text("x".repeat(40_000))]);
        assert!(small < 10 && (10_000..10_100).contains(&big), "{small} {big}");
    }

    #[test]
    fn a_history_too_large_for_one_request_is_parted_at_prompts_and_bounded() {
        let turn = |i: usize| {
            vec![
                Message::user_text(format!("prompt {i}")),
                call(&format!("c{i}")),
                result(&format!("c{i}"), &"x".repeat(4000)),
            ]
        };
        let old: Vec<Message> = (0..10).flat_map(turn).collect();
        let plan = plan_parts(&old, 2_500);
        assert_eq!(plan.left_out, 0);
        assert!(plan.parts.len() >= 5, "{plan:?}");
        assert!(plan.parts.iter().all(|p| is_prompt(&old[p.start])), "{plan:?}");
        assert_eq!(plan.parts.last().unwrap().end, old.len());
        // More parts than allowed: the newest are kept, the oldest left out.
        let many: Vec<Message> = (0..100).flat_map(turn).collect();
        let plan = plan_parts(&many, 1_100);
        assert_eq!(plan.parts.len(), MAX_SUMMARY_PARTS);
        assert_eq!(plan.left_out, plan.parts[0].start);
        assert!(plan.left_out > 0 && is_prompt(&many[plan.left_out]));
        // One turn larger than the budget is cut down in the copy sent.
        let mut one = turn(0);
        shrink_to(&mut one, 300);
        assert!(estimate_tokens(&one) <= 300, "{}", estimate_tokens(&one));
        assert!(
            ToolResultContent::joined_text(match &one[2].content[0] {
                ContentBlock::ToolResult { content, .. } => content,
                _ => unreachable!(),
            })
            .contains("left out of this copy")
        );
    }
}
