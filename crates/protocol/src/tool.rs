//! Tool definitions (what the model sees) and tool calls (what it asks for).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The one form tool names are compared in, everywhere (catalog filters,
/// permission rules, agent tool lists, hook matchers): Unicode NFKC (so a
/// full-width `ＲＥＡＤ` is `read`), trimmed, lowercase, and Claude Code's
/// names mapped to tern's (`TodoWrite` is `todo_write`, `MultiEdit` is `edit`).
pub fn canonical_tool_name(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let lower = name.nfkc().collect::<String>().trim().to_lowercase();
    match lower.as_str() {
        "multiedit" | "multi_edit" => "edit".into(),
        "toolsearch" => "tool_search".into(),
        // Claude Code's names, from the one table of them.
        _ => crate::claude::tern_name_of(&lower).map_or(lower, str::to_string),
    }
}

/// What a tool does, for everyone who treats tools by what they do (the
/// policy's tiers and path rules, the catalog's read-only roles, the TUI's
/// questions, `tern permissions check`). Declared once, in [`ToolKind::of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads or searches files: `read`, `grep`, `glob`, `ls`.
    Read,
    /// Changes files: `write`, `edit`, `notebook_edit`.
    Edit,
    /// Runs commands: `bash`.
    Execute,
    /// Reaches the network for the model: `web_fetch`, `web_search`.
    Fetch,
    /// Works on tern's own state: `todo_write`, `tool_search`, `skill`, the plan-mode tools.
    Meta,
    /// Asks the person: `ask_user`.
    Ask,
    /// Delegates to another agent: `task`, `task_append`.
    Delegate,
    /// Anything else (MCP, extension and SDK tools): judged by its rules.
    External,
}

impl ToolKind {
    /// The kind of the tool named `name` (any spelling [`canonical_tool_name`] accepts).
    pub fn of(name: &str) -> ToolKind {
        match canonical_tool_name(name).as_str() {
            "read" | "grep" | "glob" | "ls" => ToolKind::Read,
            "write" | "edit" | "notebook_edit" => ToolKind::Edit,
            "bash" => ToolKind::Execute,
            "web_fetch" | "web_search" => ToolKind::Fetch,
            "todo_write" | "tool_search" | "skill" | "enter_plan_mode" | "exit_plan_mode" | "task_output"
            | "task_stop" => ToolKind::Meta,
            "ask_user" => ToolKind::Ask,
            "task" | "task_append" => ToolKind::Delegate,
            _ => ToolKind::External,
        }
    }

    /// The argument that says what the call is about, for rules, questions
    /// and `tern permissions check 'tool(argument)'`.
    pub fn subject_arg(name: &str) -> Option<&'static str> {
        match canonical_tool_name(name).as_str() {
            "bash" => Some("command"),
            "web_fetch" => Some("url"),
            "web_search" => Some("query"),
            _ => match ToolKind::of(name) {
                ToolKind::Read | ToolKind::Edit => Some("path"),
                _ => None,
            },
        }
    }
}

/// Whether a tool may run concurrently with others of the same batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// Safe to run at the same time as other parallel tools (read-only work).
    Parallel,
    /// Must run alone, in call order. The default for a tool that declares nothing.
    #[default]
    Sequential,
}

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Unique name (`read`, `bash`, `mcp__server__tool`).
    pub name: String,
    /// Description written for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// A one-line summary of the tool. Not sent: the tools describe themselves, and the system prompt
    /// names only the built-ins waiting behind `tool_search`, from the catalog's own table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// Batch scheduling mode; absent means sequential.
    #[serde(default)]
    pub execution_mode: ExecutionMode,
}

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSource {
    /// Built into tern.
    Builtin,
    /// An MCP server that ships with tern.
    BuiltinMcp {
        /// Server name.
        server: String,
    },
    /// An MCP server from the user's or project's configuration.
    ConfiguredMcp {
        /// Server name.
        server: String,
    },
    /// Registered by an extension.
    Extension {
        /// Extension id.
        id: String,
    },
    /// Supplied by an embedding program through the SDK.
    Sdk,
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider's call id.
    pub id: String,
    /// Tool name as the model wrote it.
    pub name: String,
    /// Arguments as parsed JSON.
    pub input: Value,
}

#[cfg(test)]
mod name_tests {
    use super::canonical_tool_name;

    #[test]
    fn kinds_and_subjects() {
        use super::ToolKind;
        assert_eq!(ToolKind::of("MultiEdit"), ToolKind::Edit);
        assert_eq!(ToolKind::of("grep"), ToolKind::Read);
        assert_eq!(ToolKind::of("mcp__x__y"), ToolKind::External);
        assert_eq!(ToolKind::subject_arg("glob"), Some("path"));
        assert_eq!(ToolKind::subject_arg("bash"), Some("command"));
        assert_eq!(ToolKind::subject_arg("todo_write"), None);
    }

    #[test]
    fn names_compare_in_one_form() {
        assert_eq!(canonical_tool_name(" TodoWrite "), "todo_write");
        assert_eq!(canonical_tool_name("ＲＥＡＤ"), "read");
        assert_eq!(canonical_tool_name("MultiEdit"), "edit");
        assert_eq!(canonical_tool_name("mcp__GitHub__x"), "mcp__github__x");
    }
}

/// The domains `web_search(domain:…)` rules name, for the provider's filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebSearchScope {
    /// Results only from these (allow rules).
    pub allowed_domains: Vec<String>,
    /// Never results from these (deny rules).
    pub blocked_domains: Vec<String>,
}

/// Why the provider's `web_search` must not be offered: the rule that says
/// so, as written, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebSearchRefused {
    /// A deny rule on the whole tool.
    #[error("denied by rule `{rule}` ({origin})")]
    Denied {
        /// The rule as written.
        rule: String,
        /// Where it came from (a config file, a flag, `session`).
        origin: String,
    },
    /// An ask rule, which cannot be honoured on the provider's servers.
    #[error(
        "rule `{rule}` ({origin}) asks before searches, but they run on the provider's servers where tern \
         cannot ask: allow or deny web_search instead"
    )]
    Asks {
        /// The rule as written.
        rule: String,
        /// Where it came from (a config file, a flag, `session`).
        origin: String,
    },
}

#[cfg(test)]
mod refusal_tests {
    use super::WebSearchRefused;

    #[test]
    fn a_web_search_refusal_names_its_rule_and_origin() {
        let denied = WebSearchRefused::Denied { rule: "web_search".into(), origin: "/w/.tern/config.toml".into() };
        assert_eq!(denied.to_string(), "denied by rule `web_search` (/w/.tern/config.toml)");
        let asks = WebSearchRefused::Asks { rule: "WebSearch".into(), origin: "--ask".into() };
        assert!(asks.to_string().starts_with("rule `WebSearch` (--ask) asks before searches"), "{asks}");
    }
}
