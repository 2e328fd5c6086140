//! `tool_use_result` in Claude Code's shapes, which SDK code reads: Bash's
//! `stdout`/`stderr`/`interrupted`, Edit's `filePath`/`oldString`/
//! `newString`/`structuredPatch`, Write's `type`/`filePath`/`content`,
//! Read's `file`, and an MCP tool's content blocks. tern's own details of
//! the call stay in the same object (Claude's keys first), so nothing a
//! tern-aware reader used is lost. Pure: a call's input, result and details
//! in, a JSON value out.

use serde_json::{Map, Value, json};
use tern_protocol::{ToolDetails, ToolResultContent};

/// The `tool_use_result` of a call of `tool` with `input`, which returned
/// `content` and `details`.
pub fn tool_use_result(
    tool: &str,
    input: &Value,
    content: &[ToolResultContent],
    details: Option<&ToolDetails>,
) -> Option<Value> {
    let details = details?;
    let text = || ToolResultContent::joined_text(content);
    let file_path = |path: &str| input.get("path").and_then(Value::as_str).unwrap_or(path).to_string();
    let claude = match details {
        ToolDetails::Bash(b) => json!({
            // tern runs a command with its streams together: the output is all in `stdout`.
            "stdout": text(),
            "stderr": "",
            "interrupted": b.interrupted || b.timed_out,
            "isImage": false,
        }),
        ToolDetails::Edit(e) => json!({
            "filePath": file_path(&e.path),
            "oldString": input.get("old_string").cloned().unwrap_or(Value::Null),
            "newString": input.get("new_string").cloned().unwrap_or(Value::Null),
            "replaceAll": input.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
            "userModified": false,
            "structuredPatch": structured_patch(&e.change.hunks),
        }),
        ToolDetails::Write(w) => json!({
            "type": if w.created { "create" } else { "update" },
            "filePath": file_path(&w.path),
            "content": input.get("content").cloned().unwrap_or(Value::Null),
            "structuredPatch": w.change.as_ref().map(|c| structured_patch(&c.hunks)).unwrap_or_default(),
        }),
        ToolDetails::Read(r) if r.image.is_none() => json!({
            "type": "text",
            "file": {
                "filePath": file_path(&r.path),
                "content": text(),
                "numLines": r.end_line.zip(r.start_line).map_or(0, |(end, start)| end.saturating_sub(start) + 1),
                "startLine": r.start_line.unwrap_or(1),
                "totalLines": r.total_lines,
            },
        }),
        // An MCP tool's result is its content blocks, as Claude Code gives them.
        ToolDetails::Mcp(_) => return Some(mcp_blocks(content)),
        other => return serde_json::to_value(other).ok(),
    };
    let _ = tool;
    let mut merged: Map<String, Value> = claude.as_object().cloned().unwrap_or_default();
    if let Ok(Value::Object(ours)) = serde_json::to_value(details) {
        for (k, v) in ours {
            merged.entry(k).or_insert(v);
        }
    }
    Some(Value::Object(merged))
}

/// Hunks as Claude Code's `structuredPatch`: each with its line ranges and
/// lines prefixed `+`, `-` or ` `.
fn structured_patch(hunks: &[tern_protocol::Hunk]) -> Vec<Value> {
    hunks
        .iter()
        .map(|h| {
            let old_lines = h.lines.iter().filter(|l| l.tag != '+').count();
            let new_lines = h.lines.iter().filter(|l| l.tag != '-').count();
            json!({
                "oldStart": h.old_start,
                "oldLines": old_lines,
                "newStart": h.new_start,
                "newLines": new_lines,
                "lines": h.lines.iter().map(|l| format!("{}{}", l.tag, l.text)).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// Content as MCP's blocks (`text`, `image`).
fn mcp_blocks(content: &[ToolResultContent]) -> Value {
    Value::Array(
        content
            .iter()
            .map(|c| match c {
                ToolResultContent::Text { text } => json!({"type": "text", "text": text}),
                ToolResultContent::Image { source } => {
                    json!({"type": "image", "data": source.data, "mimeType": source.media_type})
                }
            })
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use tern_protocol::{BashDetails, DiffLine, EditDetails, FileChange, Hunk, McpDetails};

    #[test]
    fn claude_shapes_with_terns_details_kept() {
        let bash = ToolDetails::Bash(BashDetails { exit_code: Some(0), ..BashDetails::default() });
        let r = tool_use_result("bash", &json!({"command": "ls"}), &[ToolResultContent::text("a\nb")], Some(&bash))
            .unwrap();
        assert_eq!(
            (r["stdout"].as_str(), r["stderr"].as_str(), r["interrupted"].as_bool()),
            (Some("a\nb"), Some(""), Some(false))
        );
        assert_eq!(r["exit_code"], 0);
        let line = |tag, text: &str| DiffLine { tag, old: None, new: None, text: text.into() };
        let change = FileChange {
            hunks: vec![Hunk {
                old_start: 3,
                new_start: 3,
                lines: vec![line(' ', "a"), line('-', "b"), line('+', "c")],
            }],
            ..FileChange::default()
        };
        let edit = ToolDetails::Edit(EditDetails { path: "src/x.rs".into(), replacements: 1, fallback: false, change });
        let input = json!({"path": "/w/src/x.rs", "old_string": "b", "new_string": "c"});
        let r = tool_use_result("edit", &input, &[], Some(&edit)).unwrap();
        assert_eq!(r["filePath"], "/w/src/x.rs");
        assert_eq!(
            r["structuredPatch"][0],
            json!({"oldStart": 3, "oldLines": 2, "newStart": 3, "newLines": 2, "lines": [" a", "-b", "+c"]})
        );
        let mcp = ToolDetails::Mcp(McpDetails { server: "s".into(), tool: "t".into(), structured_content: None });
        let r = tool_use_result("mcp__s__t", &json!({}), &[ToolResultContent::text("hi")], Some(&mcp)).unwrap();
        assert_eq!(r, json!([{"type": "text", "text": "hi"}]));
    }
}
