//! Claude Code's names for tern's built-in tools and their arguments, for
//! what Claude-shaped clients read: hook commands written for Claude Code
//! check `tool_name == "Bash"` and `tool_input.file_path`. One table, both
//! ways: [`crate::canonical_tool_name`] reads every name here back.

use serde_json::Value;

/// tern's name → Claude Code's, for the built-ins Claude Code has too.
const NAMES: &[(&str, &str)] = &[
    ("bash", "Bash"),
    ("read", "Read"),
    ("write", "Write"),
    ("edit", "Edit"),
    ("grep", "Grep"),
    ("glob", "Glob"),
    ("ls", "LS"),
    ("notebook_edit", "NotebookEdit"),
    ("web_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
    ("todo_write", "TodoWrite"),
    ("task", "Task"),
    ("ask_user", "AskUserQuestion"),
    ("exit_plan_mode", "ExitPlanMode"),
    ("enter_plan_mode", "EnterPlanMode"),
    ("skill", "Skill"),
    ("structured_output", "StructuredOutput"),
];

/// tern's name for the built-in Claude Code calls `claude` (any case).
pub(crate) fn tern_name_of(claude: &str) -> Option<&'static str> {
    NAMES.iter().find(|(_, c)| c.eq_ignore_ascii_case(claude)).map(|(tern, _)| *tern)
}

/// The built-ins whose `path` Claude Code calls `file_path`.
const FILE_PATH_TOOLS: &[&str] = &["read", "write", "edit", "notebook_edit"];

/// Claude Code's name for the tool tern calls `name` (any spelling
/// [`crate::canonical_tool_name`] takes); MCP, SDK and extension tools keep
/// theirs. An `edit` with `edits` is Claude's `MultiEdit`.
pub fn claude_tool_name(name: &str, input: &Value) -> String {
    let canonical = crate::canonical_tool_name(name);
    if canonical == "edit" && input.get("edits").is_some() {
        return "MultiEdit".into();
    }
    match NAMES.iter().find(|(tern, _)| *tern == canonical) {
        Some((_, claude)) => (*claude).to_string(),
        None => name.to_string(),
    }
}

/// A call's arguments as Claude Code's tools name them: a file tool's
/// `path` is also given as `file_path` (both keys, so a script written for
/// either reads it). Anything else is unchanged.
pub fn claude_tool_input(name: &str, input: &Value) -> Value {
    let canonical = crate::canonical_tool_name(name);
    let mut input = input.clone();
    if FILE_PATH_TOOLS.contains(&canonical.as_str())
        && let Some(obj) = input.as_object_mut()
        && let Some(path) = obj.get("path").cloned()
    {
        obj.entry("file_path").or_insert(path);
    }
    input
}

/// Arguments a Claude-shaped client sent back (a hook's `updatedInput`) as
/// tern's tool `name` reads them: `file_path` is `path` (when they differ,
/// `file_path` wins: it is the key such a client changes).
pub fn tern_tool_input(name: &str, input: Value) -> Value {
    let canonical = crate::canonical_tool_name(name);
    let Value::Object(mut obj) = input else { return input };
    if FILE_PATH_TOOLS.contains(&canonical.as_str())
        && let Some(path) = obj.remove("file_path")
    {
        obj.insert("path".into(), path);
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_claude_name_reads_back_as_terns() {
        for (tern, claude) in NAMES {
            assert_eq!(crate::canonical_tool_name(claude), *tern, "{claude}");
            assert_eq!(claude_tool_name(tern, &json!({})), *claude);
        }
        assert_eq!(claude_tool_name("edit", &json!({"edits": []})), "MultiEdit");
        assert_eq!(crate::canonical_tool_name("MultiEdit"), "edit");
        assert_eq!(claude_tool_name("mcp__fs__read_file", &json!({})), "mcp__fs__read_file");
    }

    #[test]
    fn file_tools_carry_file_path_both_ways() {
        let claude = claude_tool_input("write", &json!({"path": "a.txt", "content": "x"}));
        assert_eq!(claude, json!({"path": "a.txt", "file_path": "a.txt", "content": "x"}));
        assert_eq!(claude_tool_input("bash", &json!({"command": "ls"})), json!({"command": "ls"}));
        // A hook that rewrote the path in Claude's key: that is the path now.
        let back = tern_tool_input("write", json!({"path": "a.txt", "file_path": "b.txt", "content": "x"}));
        assert_eq!(back, json!({"path": "b.txt", "content": "x"}));
        assert_eq!(tern_tool_input("Edit", json!({"file_path": "c.rs"})), json!({"path": "c.rs"}));
        assert_eq!(tern_tool_input("bash", json!({"file_path": "keep"})), json!({"file_path": "keep"}));
    }
}
