//! What a front end asks of a session. The TUI's slash commands and keys,
//! stream-json's user lines and control requests, and ACP's requests are
//! all translated into a [`Command`]; the session core applies it, with
//! every rule (which modes may be entered, how `/NAME` expands, what a
//! resume switches) in one place.

use serde::{Deserialize, Serialize};

use crate::{ContentBlock, Mode, RuleKind, RuleScope};

/// One thing a front end asks a session to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Run a prompt: its text (a `/NAME args` custom command or skill is
    /// expanded) and the blocks sent with it (images, documents), which
    /// are kept whether or not the text expands.
    Submit {
        /// The text as the person typed or the client sent it.
        text: String,
        /// Images and documents sent with it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        blocks: Vec<ContentBlock>,
    },
    /// Stop the running prompt (its model request and every tool).
    Interrupt,
    /// Enter a permission mode. `bypass` only when the session may
    /// (started in it, or `--allow-dangerously-skip-permissions`).
    SetMode {
        /// The mode.
        mode: Mode,
    },
    /// The next mode of the Shift+Tab cycle (default → accept-edits → plan).
    CycleMode,
    /// Switch the model from the next request; `None` goes back to the
    /// configured one.
    SetModel {
        /// The model's name.
        model: Option<String>,
    },
    /// Summarise the conversation now.
    Compact {
        /// What the summary should keep in focus.
        focus: Option<String>,
    },
    /// Start a new, empty conversation.
    Clear,
    /// Go back to before prompt `prompt` (numbered from 1).
    Rewind {
        /// The prompt's number.
        prompt: usize,
        /// Put the files back.
        code: bool,
        /// Cut the conversation back.
        conversation: bool,
        /// Put back files changed since tern wrote them too.
        force: bool,
    },
    /// Go on with another session of this folder (an id or its prefix).
    Resume {
        /// The session.
        id: String,
    },
    /// Go on in a copy of this session.
    Fork,
    /// Name this session, or another one of the store (the resume picker's rename).
    Rename {
        /// The name.
        title: String,
        /// The session to name (an id); `None`: this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
    },
    /// Write the conversation as Markdown to a file.
    Export {
        /// The file (workspace-relative or absolute).
        file: String,
    },
    /// Send the bash calls running in the foreground to the background
    /// (Ctrl+B): each goes on as a `bg-N` task, as if started with
    /// `run_in_background`, and its call returns to the model at once. Only
    /// calls already running (so already allowed) can be moved.
    MoveToBackground,
    /// Stop a background task.
    StopTask {
        /// Its id.
        id: String,
    },
    /// End an MCP server's session and start a new one.
    ReconnectMcp {
        /// The server's name.
        server: String,
    },
    /// Turn an MCP server off (its tools leave the list) or on again.
    SetMcpEnabled {
        /// The server's name.
        server: String,
        /// On or off.
        enabled: bool,
    },
    /// Add a permission rule, for the session or kept in the user config.
    AddRule {
        /// Its list.
        kind: RuleKind,
        /// The rule as written (`bash(npm test:*)`).
        rule: String,
        /// How far it holds.
        scope: RuleScope,
    },
    /// Remove a rule from wherever the person can remove it.
    RemoveRule {
        /// The rule as written.
        rule: String,
    },
    /// Make a rule in force hold for the session, this project or every project.
    MoveRule {
        /// The rule as written.
        rule: String,
        /// Where it holds from now on.
        to: RuleScope,
    },
    /// Keep a setting in the user config (`/config KEY VALUE`).
    Setting {
        /// The setting.
        key: String,
        /// Its value, in the words the config file takes.
        value: String,
    },
}

impl Command {
    /// Its name, as errors and logs say it.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Submit { .. } => "submit",
            Command::Interrupt => "interrupt",
            Command::SetMode { .. } => "set_mode",
            Command::CycleMode => "cycle_mode",
            Command::SetModel { .. } => "set_model",
            Command::Compact { .. } => "compact",
            Command::Clear => "clear",
            Command::Rewind { .. } => "rewind",
            Command::Resume { .. } => "resume",
            Command::Fork => "fork",
            Command::Rename { .. } => "rename",
            Command::Export { .. } => "export",
            Command::MoveToBackground => "move_to_background",
            Command::StopTask { .. } => "stop_task",
            Command::ReconnectMcp { .. } => "reconnect_mcp",
            Command::SetMcpEnabled { .. } => "set_mcp_enabled",
            Command::AddRule { .. } => "add_rule",
            Command::RemoveRule { .. } => "remove_rule",
            Command::MoveRule { .. } => "move_rule",
            Command::Setting { .. } => "setting",
        }
    }

    /// A prompt of text alone.
    pub fn submit(text: impl Into<String>) -> Command {
        Command::Submit { text: text.into(), blocks: Vec::new() }
    }
}
