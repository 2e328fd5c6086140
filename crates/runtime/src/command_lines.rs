//! `` !`cmd` `` in a custom command (Claude Code's bash lines, as in
//! Anthropic's `/commit`: `` Status: !`git status` ``): before the prompt is
//! sent, each runs as the model's own bash call would — the `pre_tool_use`
//! hooks, the policy (with the command's `allowed-tools` in force), the
//! person when the policy asks, the sandbox, the output budget, the same
//! events for front ends — and its output takes the line's place. A
//! repository's command in a folder that is not trusted runs none of them.

use std::fmt::Write as _;

use tern_agent_loop::{EventSink, Hooks, RuntimeTool};
use tern_config::commands::{ShellLines, shell_lines};
use tern_protocol::{ToolCall, ToolResultContent};
use tokio_util::sync::CancellationToken;

/// `prompt` with each of its `` !`cmd` `` lines replaced by what it printed
/// (or by why it did not run), as `mode` says.
pub(crate) async fn expand(
    prompt: &str,
    mode: ShellLines,
    tools: &[RuntimeTool],
    hooks: &dyn Hooks,
    events: &EventSink,
    cancel: &CancellationToken,
) -> String {
    let lines = match mode {
        ShellLines::Keep => return prompt.to_string(),
        ShellLines::Run | ShellLines::NotTrusted => shell_lines(prompt),
    };
    if lines.is_empty() {
        return prompt.to_string();
    }
    let mut out = String::with_capacity(prompt.len());
    let mut copied = 0;
    for (n, (range, command)) in lines.into_iter().enumerate() {
        out.push_str(&prompt[copied..range.start]);
        copied = range.end;
        if mode == ShellLines::NotTrusted {
            let _ = write!(out, "[`{command}` was not run: this command comes from a folder that is not trusted]");
            continue;
        }
        let call = ToolCall {
            id: format!("command-line-{}", n + 1),
            name: "bash".into(),
            input: serde_json::json!({"command": command, "description": "a line of the custom command"}),
        };
        let result = tern_agent_loop::execute_batch(tools, std::slice::from_ref(&call), hooks, events, cancel).await;
        let Some(result) = result.into_iter().next() else { continue };
        let text = ToolResultContent::joined_text(&result.content);
        // A command that ran has its details (exit code, output); one refused or not started has none.
        if result.is_error && result.details.is_none() {
            // The model reads why instead of an output.
            let _ = write!(out, "[`{command}` was not run: {}]", text.trim());
        } else {
            out.push_str(text.trim_end());
        }
    }
    out.push_str(&prompt[copied..]);
    out
}
