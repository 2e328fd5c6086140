//! The command line: every flag and subcommand, in one file that the
//! build script includes too (it renders the man page from it). No tern
//! types here: only clap's.

use std::path::PathBuf;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// A flag's usual values, for shell completion (its help already names
/// them, so the flags using it hide the list from help). The value itself
/// is any string, checked where tern uses it: so every spelling tern takes
/// still parses (Claude Code's `acceptEdits`, `bypassPermissions`,
/// `dontAsk`, `auto`; any case), with tern's own message when it is wrong.
#[derive(Debug, Clone, Copy)]
pub struct Suggested(&'static [(&'static str, &'static str)]);

impl TypedValueParser for Suggested {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|(name, help)| PossibleValue::new(*name).help(*help))))
    }
}

/// `--permission-mode` (tern's names; Claude Code's parse too).
const PERMISSION_MODES: Suggested = Suggested(&[
    ("default", "ask before edits and commands that change things"),
    ("accept-edits", "edit files in the workspace without asking"),
    ("plan", "read-only: explore and plan"),
    ("dont-ask", "refuse whatever would be asked"),
    ("bypass", "ask nothing (deny rules and protected paths still hold)"),
]);

/// `--sandbox`.
const SANDBOX_LEVELS: Suggested = Suggested(&[
    ("workspace-write", "writes only in the workspace (default)"),
    ("read-only", "no writes"),
    ("off", "not confined"),
]);

/// `--effort`.
const EFFORTS: Suggested = Suggested(&[
    ("low", "2k thinking tokens"),
    ("medium", "8k thinking tokens"),
    ("high", "16k thinking tokens"),
    ("xhigh", "24k thinking tokens"),
    ("max", "32k thinking tokens"),
]);

/// `--thinking`.
const THINKING: Suggested = Suggested(&[
    ("adaptive", "the config's budget"),
    ("enabled", "8k tokens unless a budget is set"),
    ("disabled", "no thinking"),
]);

/// `--tool-call-format`.
const TOOL_CALL_FORMATS: [&str; 3] = ["native", "text", "prompt"];

/// `--provider`.
const PROVIDERS: Suggested = Suggested(&[
    ("anthropic", "Anthropic's Messages API"),
    ("openai", "OpenAI's Chat Completions, or a compatible server"),
    ("openai-responses", "OpenAI's Responses API"),
]);

/// `tern tools --role`.
const ROLES: Suggested = Suggested(&[
    ("explore", "looks around and reports: read-only"),
    ("worker", "does delegated work, may not delegate further"),
    ("verifier", "checks work: read-only"),
]);

/// `--permission-prompt-tool`.
const PROMPT_TOOLS: Suggested = Suggested(&[("stdio", "control requests to the caller")]);

/// How `-p` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The final answer as plain text.
    Text,
    /// One JSON result object (Claude Code's fields, then tern's).
    Json,
    /// One JSON object per line in Claude Code's shapes: `system/init`, `assistant` and `user` messages,
    /// `stream_event` deltas (with --include-partial-messages), then the result.
    StreamJson,
    /// One JSON object per line: tern's own events (turns, retries, tool progress, notices), then the result.
    TernEvents,
}

/// Where `-p` reads its prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// One prompt: the argument, or all of stdin.
    Text,
    /// JSON lines on stdin: user messages (one result each, in one session) and control requests, until stdin
    /// closes.
    StreamJson,
}

/// What `tern --help` ends with.
const AFTER_HELP: &str = "\
Examples:
  tern                                    the full-screen TUI in this folder
  tern \"why does the parser test fail?\"  the TUI, starting with a prompt
  tern -c                                 go on with the last session here
  tern -p \"fix the failing test\" --allowed-tools 'bash(cargo test:*)' edit
                                          one prompt headless; questions are refused
  git diff | tern -p \"review this\" --output-format json | jq -r .result
  tern -p --input-format stream-json --output-format stream-json
                                          JSON lines in and out (the Claude Agent SDK's protocol)
  tern acp                                an Agent Client Protocol agent for editors
  tern tools --explain                    which tools the model sees, and why
  tern permissions check 'bash(rm -rf build)'
  tern completions zsh > ~/.zfunc/_tern   shell completions

Environment:
  ANTHROPIC_API_KEY, OPENAI_API_KEY       provider keys (never passed to commands, hooks or MCP servers)
  ANTHROPIC_BASE_URL, OPENAI_BASE_URL     provider endpoints (--base-url wins)
  TERN_HOME                               tern's config and data in one folder (default: the XDG folders)
  HOME                                    the home folder (~ in rules; secrets there stay unreadable)
  NO_COLOR                                no colors in the TUI
  MINIMAX_*                               for the media CLI: the key is brokered (commands get a session token)

Exit codes (-p): 0 done, 1 the run failed (provider error, turn limit), 2 usage or config error,
130 interrupted. Docs: README.md and docs/ (headless.md, ci.md, acp.md, permissions.md).";

#[derive(Debug, Parser)]
#[command(name = "tern", version, about = "A terminal coding agent", long_about = None, after_help = AFTER_HELP)]
#[command(group = clap::ArgGroup::new("session_source").args(["continue_session", "resume"]))]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Run one prompt headless and print the result (prompt from the argument, or from stdin when piped).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// The prompt.
    pub prompt: Option<String>,

    /// Output format for --print.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    /// Input format for --print (stream-json implies --print and needs --output-format stream-json).
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,

    /// With --output-format stream-json: also the model's words as they stream (`stream_event` lines).
    #[arg(long)]
    pub include_partial_messages: bool,

    /// With stream-json in and out: each user message is printed back as a `user` line with a `uuid` as it
    /// starts (`rewind_files` takes that uuid).
    #[arg(long)]
    pub replay_user_messages: bool,

    /// Where permission questions go in --print: `stdio` sends each to the caller as a `can_use_tool` control
    /// request (with --input-format stream-json); without it they are refused.
    #[arg(long, value_name = "TOOL", value_parser = PROMPT_TOOLS, hide_possible_values = true)]
    pub permission_prompt_tool: Option<String>,

    /// Replace tern's own instructions in the system prompt (the tool list, environment and instruction files
    /// still follow).
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,

    /// The id of the new session (letters, digits, `-`, `_`; a UUID works).
    #[arg(long, value_name = "ID", conflicts_with = "session_source")]
    pub session_id: Option<String>,

    /// Stop after this many model turns.
    #[arg(long)]
    pub max_turns: Option<u32>,

    /// Text appended to the system prompt.
    #[arg(long)]
    pub append_system_prompt: Option<String>,

    /// --system-prompt, read from this file.
    #[arg(long, value_name = "FILE", conflicts_with = "system_prompt")]
    pub system_prompt_file: Option<PathBuf>,

    /// --append-system-prompt, read from this file.
    #[arg(long, value_name = "FILE", conflicts_with = "append_system_prompt")]
    pub append_system_prompt_file: Option<PathBuf>,

    /// Print progress (tool calls, retries) on stderr.
    #[arg(short, long)]
    pub verbose: bool,

    /// Go on with the session last written in this folder.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,

    /// Go on with the session ID (or a prefix of it); with no ID, pick one (the TUI) or the latest (-p).
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,

    /// With --continue or --resume: go on in a new session file, leaving the original as it was.
    #[arg(long, requires = "session_source")]
    pub fork_session: bool,

    /// Write no session file (this run cannot be resumed).
    #[arg(long)]
    pub no_session: bool,

    /// Run as this agent (.tern/agents/NAME.md or agents/NAME.md in the config dir): its tools, model, mode
    /// and instructions.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    #[command(flatten)]
    pub common: Common,
}

/// Options shared by runs and the inspection subcommands.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Provider: anthropic, openai (also OpenAI-compatible servers) or openai-responses.
    #[arg(long, global = true, value_parser = PROVIDERS, hide_possible_values = true)]
    pub provider: Option<String>,

    /// Model name.
    #[arg(long, global = true)]
    pub model: Option<String>,

    /// Base URL (Anthropic: http://host:port; OpenAI: http://host:port/v1).
    #[arg(long, global = true)]
    pub base_url: Option<String>,

    /// Work in this directory instead of the current one.
    #[arg(long, global = true)]
    pub cwd: Option<PathBuf>,

    /// Deny rules, comma- or space-separated (repeatable): a bare name (`ls`) also removes the tool from the
    /// catalog; a pattern (`bash(rm:*)`) refuses matching calls.
    #[arg(long = "disallowed-tools", alias = "disallowedTools", global = true, num_args = 1..)]
    pub disallowed_tools: Vec<String>,

    /// Allow rules, comma- or space-separated (repeatable), e.g. `bash(npm run test:*)` `edit(src/**)` `mcp__github__*`.
    #[arg(long = "allowed-tools", alias = "allowedTools", global = true, num_args = 1..)]
    pub allowed_tools: Vec<String>,

    /// Permission mode: default, accept-edits, plan, bypass or dont-ask (refuse whatever would be asked);
    /// Claude Code's names (acceptEdits, bypassPermissions, dontAsk) work too.
    #[arg(
        long = "permission-mode",
        global = true,
        value_name = "MODE",
        value_parser = PERMISSION_MODES,
        hide_possible_values = true
    )]
    pub permission_mode: Option<String>,

    /// The same as --permission-mode bypass: nothing is asked (deny rules and protected paths still hold).
    #[arg(long, global = true, conflicts_with = "permission_mode")]
    pub dangerously_skip_permissions: bool,

    /// Let bypass be entered later in the session (`/mode bypass`, an SDK's or editor's mode change)
    /// without starting in it. Without this, or starting in bypass, no front end can switch to it.
    #[arg(long, global = true)]
    pub allow_dangerously_skip_permissions: bool,

    /// Another folder tools may read and edit as they do the workspace (repeatable); the sandbox lets
    /// commands write there too.
    #[arg(long = "add-dir", global = true, value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,

    /// More MCP servers from a JSON file in the `.mcp.json` format, or that JSON itself (repeatable).
    #[arg(long = "mcp-config", global = true)]
    pub mcp_config: Vec<PathBuf>,

    /// Trust the working directory for this run: its project hooks, MCP servers and allow rules apply (`tern trust`
    /// saves it). Folders above it keep their own trust.
    #[arg(long, global = true)]
    pub trust: bool,

    /// Only the MCP servers of --mcp-config; the config files' and `.mcp.json` servers are not started.
    #[arg(long = "strict-mcp-config", global = true)]
    pub strict_mcp_config: bool,

    /// The built-in tools the model has, comma- or space-separated (Claude Code's names work): `Bash,Read,Edit`;
    /// "" for none, `default` for all, `minimal` for read, write, edit and bash.
    #[arg(long, global = true, value_name = "TOOLS")]
    pub tools: Option<String>,

    /// The model's thinking budget in tokens (0: none), over `thinking_budget` in config.
    #[arg(long = "max-thinking-tokens", global = true, value_name = "N")]
    pub max_thinking_tokens: Option<u64>,

    /// Thinking effort: low, medium, high, xhigh or max (a thinking budget of 2k, 8k, 16k, 24k or 32k tokens;
    /// --max-thinking-tokens wins).
    #[arg(long, global = true, value_name = "LEVEL", value_parser = EFFORTS, hide_possible_values = true)]
    pub effort: Option<String>,

    /// Thinking: adaptive (the config's budget), enabled (a budget of 8k tokens unless one is set) or disabled.
    #[arg(long, global = true, value_name = "MODE", value_parser = THINKING, hide_possible_values = true)]
    pub thinking: Option<String>,

    /// Stop a prompt once the prompts of this run have cost this many dollars (priced by the model table).
    #[arg(long = "max-budget-usd", global = true, value_name = "USD")]
    pub max_budget_usd: Option<f64>,

    /// When the model stays overloaded after retries, go on with this one for the rest of the prompt.
    #[arg(long = "fallback-model", global = true, value_name = "MODEL")]
    pub fallback_model: Option<String>,

    /// How the model's tool calls are read, over its model-table entry: native, text (also calls it
    /// writes as text, for small local models), or prompt (no `tools` in the request: they are described
    /// in the system prompt, for servers that refuse them; docs/local-models.md).
    #[arg(long = "tool-call-format", global = true, value_name = "FORMAT", value_parser = TOOL_CALL_FORMATS)]
    pub tool_call_format: Option<String>,

    /// End each prompt with an answer as JSON matching this JSON Schema (an object schema; the result's
    /// `structured_output`).
    #[arg(long = "json-schema", global = true, value_name = "SCHEMA")]
    pub json_schema: Option<String>,

    /// Anthropic beta features to turn on (sent as `anthropic-beta`), comma- or space-separated.
    #[arg(long, global = true, value_name = "BETAS", num_args = 1..)]
    pub betas: Vec<String>,

    /// Taken from the Agent SDKs and named at start as not applied: tern has no such setting.
    #[arg(long = "thinking-display", global = true, value_name = "MODE", hide = true)]
    pub thinking_display: Option<String>,

    /// Taken from the Agent SDKs and named at start as not applied: tern does not load Claude Code plugins.
    #[arg(long = "plugin-dir", global = true, value_name = "DIR", hide = true)]
    pub plugin_dir: Vec<PathBuf>,

    /// Taken from the Agent SDKs and named at start as not applied.
    #[arg(long = "task-budget", global = true, value_name = "N", hide = true)]
    pub task_budget: Option<String>,

    /// Taken from the Agent SDKs and named at start as not applied.
    #[arg(long = "session-mirror", global = true, hide = true)]
    pub session_mirror: bool,

    /// Taken from the TypeScript Agent SDK: in stream-json input tern reads a first `initialize` line
    /// before the session starts anyway.
    #[arg(long = "await-initialize", global = true, hide = true)]
    pub await_initialize: bool,

    /// Refused: tern resumes a whole session (use /rewind to go back in one).
    #[arg(long = "resume-session-at", global = true, value_name = "UUID", hide = true)]
    pub resume_session_at: Option<String>,

    /// Refused: tern resumes a whole session (use /rewind to go back in one).
    #[arg(long = "resume-drops-turn", global = true, value_name = "UUID", hide = true)]
    pub resume_drops_turn: Option<String>,

    /// Taken from the Agent SDKs and named at start as not applied: stream-json does not carry hook events.
    #[arg(long = "include-hook-events", global = true, hide = true)]
    pub include_hook_events: bool,

    /// Claude Code's settings (a file or its JSON), applied as the person's own: their permission rules,
    /// defaultMode and hooks; what does not map is named at start.
    #[arg(long, global = true, value_name = "FILE_OR_JSON")]
    pub settings: Vec<String>,

    /// Which of Claude Code's settings files are read: user (~/.claude/settings.json), project
    /// (.claude/settings.json), local (.claude/settings.local.json), comma-separated; all without it.
    #[arg(long = "setting-sources", global = true, value_name = "SOURCES")]
    pub setting_sources: Option<String>,

    /// The loosest sandbox any command runs in: off, read-only or workspace-write (default; auto-allowed commands
    /// always run read-only and offline).
    #[arg(long, global = true, value_name = "LEVEL", value_parser = SANDBOX_LEVELS, hide_possible_values = true)]
    pub sandbox: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the tools the next request would carry, in order, with sizes.
    Tools(ToolsArgs),
    /// MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Permissions.
    #[command(subcommand)]
    Permissions(PermissionsCommand),
    /// Trust a folder (default: the current one) so its project config, hooks and MCP servers apply.
    Trust(TrustArgs),
    /// Sessions in the data dir.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Have the model study the repository and write AGENTS.md (headless; only that file may be written).
    Init(InitArgs),
    /// What fills the model's context window: system prompt, instruction files, tools, messages, free space,
    /// and where auto-compaction triggers.
    Context(ContextArgs),
    /// Skills: SKILL.md instructions the model loads by name (bundled, user config dir, project).
    #[command(subcommand)]
    Skills(ListCommand),
    /// Custom slash commands: prompt templates in .tern/commands/ and the user config dir.
    #[command(subcommand)]
    Commands(ListCommand),
    /// Check tern's setup: config files, provider key and reachability, MCP servers, sandbox, session dir,
    /// terminal. Exits 1 when a check fails.
    Doctor(DoctorArgs),
    /// Print a completion script for a shell: `tern completions bash > /etc/bash_completion.d/tern`,
    /// `tern completions zsh > ~/.zfunc/_tern`, `tern completions fish > ~/.config/fish/completions/tern.fish`.
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print tern's man page (roff; `tern man | man -l -`).
    #[command(hide = true)]
    Man,
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim, Emacs): each
    /// session a tern session, questions asked through the editor. See docs/acp.md.
    Acp,
    /// The external media CLI (`mmx`): install it from its pinned npm package into the data dir's
    /// internal-bin/, check it, or remove it.
    #[command(name = "media-cli", subcommand)]
    MediaCli(MediaCliCommand),
}

/// `tern media-cli ...`.
#[derive(Debug, Subcommand)]
pub enum MediaCliCommand {
    /// Fetch the pinned tarballs with `npm pack` (or take them from --from), check their integrity,
    /// lay out the pinned files and write the `mmx` launcher.
    Install {
        /// A directory holding the tarballs (`mmx-cli-1.0.27.tgz`, ...) instead of the npm registry.
        #[arg(long, value_name = "DIR")]
        from: Option<PathBuf>,
    },
    /// Whether it is installed, intact and runnable here.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove it.
    Remove,
}

/// `tern doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Skip the network probe of the provider's base URL.
    #[arg(long)]
    pub offline: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tern skills ...` / `tern commands ...`.
#[derive(Debug, Subcommand)]
pub enum ListCommand {
    /// Every one found, with where it came from; files skipped are named on stderr.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `tern init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Revise an AGENTS.md that is already there (without this, an existing one is left alone).
    #[arg(long)]
    pub update: bool,
    /// Print progress (tool calls) on stderr.
    #[arg(short, long)]
    pub verbose: bool,
}

/// `tern context`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Measure the session last written in this folder (default: a new session).
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,
    /// Measure this session (id or prefix).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tern sessions ...`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// The sessions of this folder (or every folder), newest first: id, model, size, first prompt.
    List {
        /// Sessions of every folder.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A session's conversation as a readable transcript.
    Show {
        /// The session id (or a prefix of it).
        id: String,
    },
    /// A session's conversation as Markdown or JSON.
    Export {
        /// The session id (or a prefix of it).
        id: String,
        /// markdown (a transcript) or json (the header and the messages as sent to the provider).
        #[arg(long, value_enum, default_value_t = ExportFormat::Markdown)]
        format: ExportFormat,
    },
}

/// `tern sessions export --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// A readable transcript.
    Markdown,
    /// `{"header": ..., "messages": [...]}`.
    Json,
}

/// `tern trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The folder (and everything below it); default: the current directory (or --cwd).
    pub dir: Option<PathBuf>,
    /// List the trusted folders, and whether this one is trusted.
    #[arg(long, conflicts_with = "remove")]
    pub list: bool,
    /// Stop trusting the folder.
    #[arg(long)]
    pub remove: bool,
}

/// `tern permissions ...`.
#[derive(Debug, Subcommand)]
pub enum PermissionsCommand {
    /// Decide a call as a run would, and say why: `tern permissions check 'bash(rm -rf build)'`.
    Check {
        /// The call: `tool(argument)`, e.g. `bash(git push --force)`, `edit(src/main.rs)`, `read(~/.ssh/id_rsa)`,
        /// `web_fetch(https://docs.rs)`, `mcp__github__create_issue`; or `tool` with --input JSON.
        call: String,
        /// The full tool input as JSON (instead of the argument in parentheses).
        #[arg(long)]
        input: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List every rule with its source, and the mode.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `tern tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Also list every tool removed, with the layer and reason, and the disclosure decision.
    #[arg(long)]
    pub explain: bool,
    /// See the catalog as this agent profile (.tern/agents/NAME.md) would.
    #[arg(long)]
    pub agent: Option<String>,
    /// See the catalog as a subagent of this role would: explore, worker or verifier.
    #[arg(long, value_parser = ROLES, hide_possible_values = true)]
    pub role: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `tern mcp ...`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Each configured server, its state and its tool count.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}
