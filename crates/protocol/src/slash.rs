//! What a person (or a client) can invoke as `/NAME args`: custom commands,
//! skills, and MCP servers' prompts, listed once for every front end.

use serde::{Deserialize, Serialize};

/// Where a slash command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlashKind {
    /// A custom command (a Markdown template).
    Command,
    /// A skill.
    Skill,
    /// A prompt of an MCP server (`/mcp__server__prompt`).
    McpPrompt,
}

/// One `/NAME` a prompt may start with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlashCommand {
    /// The name, without the slash.
    pub name: String,
    /// One line on what it does.
    pub description: String,
    /// Its arguments, as shown (`[issue number]`), when it takes any.
    pub argument_hint: Option<String>,
    /// Where it comes from.
    pub kind: SlashKind,
}
