//! The slash commands: one declaration each — name, what it does, its
//! argument, whether it may run while a turn is running — read by the `/`
//! popup, `/help` and the dispatcher alike.

/// A slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slash {
    /// `/help`.
    Help,
    /// `/model [NAME]`.
    Model,
    /// `/mode [MODE]`.
    Mode,
    /// `/tools`.
    Tools,
    /// `/mcp`.
    Mcp,
    /// `/todos`.
    Todos,
    /// `/clear`.
    Clear,
    /// `/cost`.
    Cost,
    /// `/status`.
    Status,
    /// `/theme [NAME]`.
    Theme,
    /// `/permissions [allow RULE | remove RULE]`.
    Permissions,
    /// `/config [KEY VALUE]`.
    Config,
    /// `/vim`.
    Vim,
    /// `/init [update]`.
    Init,
    /// `/compact [FOCUS]`.
    Compact,
    /// `/context`.
    Context,
    /// `/rewind [N [code|conversation] [force]]`.
    Rewind,
    /// `/resume [ID]`.
    Resume,
    /// `/fork`.
    Fork,
    /// `/rename NAME`.
    Rename,
    /// `/export [FILE]`.
    Export,
    /// `/tasks [stop ID]`.
    Tasks,
    /// `/doctor`.
    Doctor,
    /// `/quit` (also `/exit`).
    Quit,
}

impl Slash {
    /// Every command, in the order `/help` and the popup list them.
    pub const ALL: [Slash; 24] = [
        Slash::Help,
        Slash::Model,
        Slash::Mode,
        Slash::Tools,
        Slash::Mcp,
        Slash::Todos,
        Slash::Clear,
        Slash::Cost,
        Slash::Status,
        Slash::Theme,
        Slash::Permissions,
        Slash::Config,
        Slash::Vim,
        Slash::Init,
        Slash::Compact,
        Slash::Context,
        Slash::Rewind,
        Slash::Resume,
        Slash::Fork,
        Slash::Rename,
        Slash::Export,
        Slash::Tasks,
        Slash::Doctor,
        Slash::Quit,
    ];

    /// Its name, without the `/`.
    pub fn name(self) -> &'static str {
        match self {
            Slash::Help => "help",
            Slash::Model => "model",
            Slash::Mode => "mode",
            Slash::Tools => "tools",
            Slash::Mcp => "mcp",
            Slash::Todos => "todos",
            Slash::Clear => "clear",
            Slash::Cost => "cost",
            Slash::Status => "status",
            Slash::Theme => "theme",
            Slash::Permissions => "permissions",
            Slash::Config => "config",
            Slash::Vim => "vim",
            Slash::Init => "init",
            Slash::Compact => "compact",
            Slash::Context => "context",
            Slash::Rewind => "rewind",
            Slash::Resume => "resume",
            Slash::Fork => "fork",
            Slash::Rename => "rename",
            Slash::Export => "export",
            Slash::Tasks => "tasks",
            Slash::Doctor => "doctor",
            Slash::Quit => "quit",
        }
    }

    /// One line about what it does.
    pub fn description(self) -> &'static str {
        match self {
            Slash::Help => "keys and commands",
            Slash::Model => "pick one of the provider's models, or switch: /model NAME (from the next turn)",
            Slash::Mode => "show or set the permission mode: /mode accept-edits",
            Slash::Tools => "the tool catalog of the next request, with every removal and why",
            Slash::Mcp => "MCP servers, their state and tool counts",
            Slash::Todos => "show or hide the todo panel",
            Slash::Clear => "start a new conversation (the session log keeps everything)",
            Slash::Cost => "tokens and estimated cost so far",
            Slash::Permissions => "the rules by scope (remove, move); list for the report; allow RULE / remove RULE",
            Slash::Theme => "pick colours, shown as you move: dark, light, high-contrast or colorblind",
            Slash::Config => "settings kept in your config: theme, notify, title, print_on_exit, vim, fullscreen, mode",
            Slash::Vim => "vim keys in the prompt (normal and insert mode), on or off",
            Slash::Status => "version, model and provider, mode, session file, instruction files, MCP servers, sandbox",
            Slash::Init => "study the repository and write AGENTS.md (update: revise the one there)",
            Slash::Compact => "summarise the conversation so far to free the context: /compact [what to focus on]",
            Slash::Context => "what fills the context window, and where compaction triggers",
            Slash::Rewind => {
                "go back to before a prompt: files, conversation or both (a picker of the prompts; Esc Esc)"
            }
            Slash::Resume => "pick a session (this folder's or all) to go on with, or /resume ID",
            Slash::Fork => "go on in a new session file; this one stays as it is",
            Slash::Rename => "name this session: /rename NAME",
            Slash::Export => "write the conversation as Markdown: /export [FILE]",
            Slash::Tasks => "commands and subagents in the background: /tasks, /tasks stop ID",
            Slash::Doctor => "check the setup: provider and its reachability, MCP servers, sandbox, session dir",
            Slash::Quit => "leave tern",
        }
    }

    /// What its argument is, if it takes one.
    pub fn argument(self) -> Option<&'static str> {
        match self {
            Slash::Model => Some("NAME"),
            Slash::Mode => Some("default|accept-edits|plan"),
            Slash::Init => Some("[update]"),
            Slash::Theme => Some("[dark|light|high-contrast|colorblind]"),
            Slash::Permissions => {
                Some("[list | allow|ask|deny [session|project|user] RULE | remove RULE | move RULE SCOPE]")
            }
            Slash::Config => Some("[KEY VALUE]"),
            Slash::Compact => Some("[FOCUS]"),
            Slash::Rewind => Some("[N [code|conversation] [force]]"),
            Slash::Resume => Some("[ID]"),
            Slash::Rename => Some("NAME"),
            Slash::Export => Some("[FILE]"),
            Slash::Tasks => Some("[stop ID]"),
            _ => None,
        }
    }

    /// Whether it may run while a turn is running.
    pub fn during_turn(self) -> bool {
        !matches!(self, Slash::Clear | Slash::Resume | Slash::Fork | Slash::Compact | Slash::Init | Slash::Rewind)
    }

    /// The command named `name` (without the `/`).
    pub fn parse(name: &str) -> Option<Slash> {
        match name {
            "exit" => Some(Slash::Quit),
            _ => Slash::ALL.into_iter().find(|c| c.name() == name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_parses_by_its_name() {
        for c in Slash::ALL {
            assert_eq!(Slash::parse(c.name()), Some(c));
            assert!(!c.description().is_empty());
        }
        assert_eq!(Slash::parse("exit"), Some(Slash::Quit));
        assert_eq!(Slash::parse("nope"), None);
    }
}
