//! Configuration: TOML files (user, then project `.tern/config.toml`), then
//! command-line overrides. Every key is optional; defaults live here.
//!
//! ```toml
//! provider = "anthropic"          # anthropic | openai | openai-responses
//! model = "claude-sonnet-4-5"
//! max_turns = 50
//! max_tokens = 16000              # output tokens per response (default: the model's, capped at 32000)
//! append_system_prompt = "Prefer small commits."
//! max_tool_output_kib = 64               # bigger tool results are saved and replaced by a receipt
//!
//! [providers.anthropic]
//! api_key_env = "MY_ANTHROPIC_KEY" # or api_key = "…"
//! base_url = "https://api.anthropic.com"
//!
//! [providers.openai]
//! base_url = "http://127.0.0.1:11434/v1"   # any OpenAI-compatible server
//! api = "chat"                             # chat | responses
//!
//! [retry]
//! max_attempts = 4
//! base_delay_ms = 500
//!
//! [models."my-local-model"]
//! context_window = 32768
//! max_output = 4096
//!
//! exclude_tools = ["ls"]                   # never offer these tools
//!
//! [tool_disclosure]                        # deferred tools (docs/catalog.md)
//! enabled = true
//! threshold_pct = 0.15
//! defer_builtins = true                    # rarely used built-ins wait behind tool_search
//!
//! [mcp]
//! denied_servers = ["untrusted"]
//!
//! [permissions]                            # docs/permissions.md
//! mode = "default"                         # default | accept-edits | plan | bypass
//! allow = ["bash(npm run test:*)", "edit(src/**)"]
//! deny = ["read(~/.ssh/**)"]
//!
//! [[hooks.pre_tool_use]]
//! matcher = "bash"
//! command = "python3 .tern/hooks/check.py"
//!
//! [bash]                                   # docs/tools.md
//! full_output_mb = 32                      # a command's full-output file keeps its head and its last 32 MB
//! shell = "/usr/local/bin/bash"            # user config only: the shell commands run with (`SHELL -c CMD`)
//! command_prefix = "set -o pipefail"       # user config only: a line run before every command
//!
//! [sandbox]                                # docs/sandbox.md
//! mode = "workspace-write"                 # off | read-only | workspace-write
//! network = true                           # for approved commands
//!
//! [env]                                    # docs/security.md
//! passthrough = ["NPM_TOKEN"]              # secrets tool subprocesses may see
//!
//! [trust]                                  # user config only: `tern trust`
//! folders = ["/home/me/src"]
//!
//! [mcp_servers.github]                     # docs/mcp.md
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-github"]
//! env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }
//! tool_timeout_sec = 60
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ConfigError;

/// Provider-side web searches one request may make, unless `[web_search] max_uses` says otherwise.
pub const DEFAULT_WEB_SEARCH_MAX_USES: u32 = 5;

/// One config file's content.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Provider name.
    pub provider: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Turn limit.
    pub max_turns: Option<u32>,
    /// Output-token limit per response.
    pub max_tokens: Option<u64>,
    /// Extended thinking budget (Anthropic).
    pub thinking_budget: Option<u64>,
    /// Extra text after the system prompt.
    pub append_system_prompt: Option<String>,
    /// KiB of text one tool result may carry whole before it is saved and
    /// replaced by a receipt (default 64).
    pub max_tool_output_kib: Option<usize>,
    /// Per-provider settings.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSection>,
    /// Model table overrides.
    #[serde(default)]
    pub models: BTreeMap<String, toml::Value>,
    /// Retry settings.
    #[serde(default)]
    pub retry: RetrySection,
    /// Tools never offered (names; compared after NFKC + lowercase).
    #[serde(default)]
    pub exclude_tools: Vec<String>,
    /// Deferred MCP disclosure settings.
    #[serde(default)]
    pub tool_disclosure: DisclosureSection,
    /// Which MCP servers may start.
    #[serde(default)]
    pub mcp: McpSection,
    /// MCP servers by name.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerSection>,
    /// Permission mode and rules.
    #[serde(default)]
    pub permissions: PermissionsSection,
    /// Hook commands.
    #[serde(default)]
    pub hooks: tern_policy::hooks::HooksConfig,
    /// The bash tool's settings.
    #[serde(default)]
    pub bash: BashSection,
    /// Landlock confinement of tool subprocesses.
    #[serde(default)]
    pub sandbox: SandboxSection,
    /// What child processes may see of the environment.
    #[serde(default)]
    pub env: EnvSection,
    /// Trusted folders (user config only).
    #[serde(default)]
    pub trust: TrustSection,
    /// Per-project settings kept in the user config, keyed by the project's
    /// absolute path: where "allow always" answers are saved (user config only).
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectSection>,
    /// When and how the conversation is compacted.
    #[serde(default)]
    pub compaction: CompactionSection,
    /// Which instruction files are read into the system prompt.
    #[serde(default)]
    pub context: ContextSection,
    /// The TUI's own settings.
    #[serde(default)]
    pub tui: TuiSection,
    /// The provider's server-side web search.
    #[serde(default)]
    pub web_search: WebSearchSection,
    /// The external media CLI in internal-bin/.
    #[serde(default)]
    pub media_cli: MediaCliSection,
}

/// `[media_cli]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaCliSection {
    /// Offer the installed media CLI to tool subprocesses (default true).
    pub enabled: Option<bool>,
}

/// `[bash]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashSection {
    /// MB of a command's output end its full-output file keeps, besides its
    /// head (default 32; between 1 and [`MAX_FULL_OUTPUT_MB`]).
    pub full_output_mb: Option<u64>,
    /// The shell commands run with, as `SHELL -c COMMAND`: an absolute path
    /// (default `bash` from `PATH`). User config only.
    pub shell: Option<PathBuf>,
    /// Text run before every command, in the same shell (`set -o pipefail`,
    /// `source ~/.profile`). User config only.
    pub command_prefix: Option<String>,
}

/// The largest `[bash] full_output_mb`: one call's file must not fill a disk.
pub const MAX_FULL_OUTPUT_MB: u64 = 4096;
/// The longest `[bash] command_prefix`: it goes with every command.
pub const MAX_COMMAND_PREFIX_BYTES: usize = 16 * 1024;

impl BashSection {
    /// Whether `shell`, when set, is an executable file now (`path`: the
    /// config file that set it). Checked for the user config at start, where
    /// the shell is taken from (a project config cannot set it).
    pub fn check_shell(&self, path: &Path) -> Result<(), ConfigError> {
        use std::os::unix::fs::PermissionsExt;
        let Some(shell) = &self.shell else { return Ok(()) };
        let why = match std::fs::metadata(shell) {
            Err(e) => e.to_string(),
            Ok(m) if !m.is_file() => "not a regular file".into(),
            Ok(m) if m.permissions().mode() & 0o111 == 0 => "not executable".into(),
            Ok(_) => return Ok(()),
        };
        Err(ConfigError::Invalid(format!(
            "{}: `[bash] shell = {:?}`: {why}. Give the absolute path of an installed shell (`command -v bash` prints \
             one), or remove the line to use bash from PATH",
            path.display(),
            shell.display().to_string()
        )))
    }

    /// `full_output_mb` in bytes, when set.
    pub fn full_output_bytes(&self) -> Option<u64> {
        self.full_output_mb.map(|mb| mb.saturating_mul(1024 * 1024))
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |what: String| Err(ConfigError::Invalid(format!("{}: {what}", path.display())));
        if let Some(shell) = &self.shell
            && !shell.is_absolute()
        {
            return invalid(format!(
                "`[bash] shell = {:?}`: give the shell's absolute path (e.g. \"/bin/bash\"; `command -v bash` prints it)",
                shell.display().to_string()
            ));
        }
        if let Some(prefix) = &self.command_prefix {
            if prefix.len() > MAX_COMMAND_PREFIX_BYTES {
                return invalid(format!(
                    "`[bash] command_prefix` is {} bytes; it goes before every command, so keep it under {} KB \
                     (source a file for more)",
                    prefix.len(),
                    MAX_COMMAND_PREFIX_BYTES / 1024
                ));
            }
            if prefix.contains('\0') {
                return invalid("`[bash] command_prefix` contains a NUL byte, which no command line can carry".into());
            }
        }
        match self.full_output_mb {
            Some(mb) if !(1..=MAX_FULL_OUTPUT_MB).contains(&mb) => Err(ConfigError::Invalid(format!(
                "{}: `[bash] full_output_mb = {mb}`: give a number of MB between 1 and {MAX_FULL_OUTPUT_MB} (the \
                 most of a command's output end its full-output file keeps; default 32)",
                path.display()
            ))),
            _ => Ok(()),
        }
    }
}

/// `[web_search]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchSection {
    /// `false` never offers it; `true` offers it on an endpoint other than
    /// the provider's official one (default: only there).
    pub enabled: Option<bool>,
    /// Most searches the provider may run in one response (default 5).
    pub max_uses: Option<u32>,
}

/// `[tui]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiSection {
    /// How tern calls you back when a turn ends or a question waits while
    /// the terminal is not focused: `auto` (a desktop notification where the
    /// terminal supports OSC 9, else the bell), `bell`, `osc9`, `never`.
    pub notify: Option<String>,
    /// Also call the person back while the terminal is focused (or never
    /// reports focus) once a question has waited this many seconds, or when
    /// a turn that ran this long ends (default: only when unfocused).
    pub notify_after_secs: Option<u64>,
    /// Set the terminal's title to tern's state and folder (default true).
    pub title: Option<bool>,
    /// Colours: `auto` (from `COLORFGBG`), `dark`, `light`, `high-contrast`, `colorblind`.
    pub theme: Option<String>,
    /// What to print on the normal screen when the TUI ends: `none`
    /// (default), `last` (the last answer) or `all` (the conversation).
    pub print_on_exit: Option<String>,
    /// Start the prompt in vim mode (default false).
    pub vim: Option<bool>,
    /// Draw on the alternate screen, the whole terminal tern's (default
    /// false: inline, the conversation written into the terminal's own
    /// scrollback as it finishes, so it stays after exit and selects natively).
    pub fullscreen: Option<bool>,
}

/// `[compaction]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSection {
    /// Compact automatically near the context window (default true).
    pub auto: Option<bool>,
    /// Tokens kept free below the window (default: the reply limit + 8,000,
    /// at most a quarter of the window).
    pub reserve_tokens: Option<u64>,
    /// Prompts (with what followed each) kept verbatim after the summary (default 2).
    pub keep_turns: Option<usize>,
}

/// `[context]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSection {
    /// Instruction file names, in order of preference within one directory
    /// (default `["AGENTS.md", "CLAUDE.md"]`: the first that exists is read).
    pub files: Option<Vec<String>>,
}

/// `[projects."/abs/path"]` in the user config.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSection {
    /// Rules the person chose to allow always in that project.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules the person chose to be asked about in that project.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules the person chose to refuse in that project.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// The loosest level any command runs at: off, read-only or workspace-write (default).
    pub mode: Option<String>,
    /// Whether approved commands may use the network (default true; auto-allowed ones never may).
    pub network: Option<bool>,
    /// More directories approved commands may write.
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// More directories every command may read.
    #[serde(default)]
    pub readable: Vec<PathBuf>,
}

/// `[env]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSection {
    /// Variables that look secret but may reach tool subprocesses, hooks and
    /// MCP servers anyway (exact names, or prefixes ending in `*`).
    #[serde(default)]
    pub passthrough: Vec<String>,
}

/// `[trust]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustSection {
    /// Folders (and everything below them) whose project config, hooks and
    /// MCP servers are trusted.
    #[serde(default)]
    pub folders: Vec<PathBuf>,
}

/// `[permissions]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsSection {
    /// default, accept-edits, plan or bypass.
    pub mode: Option<String>,
    /// Rules that run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that always ask.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules that never run.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// `[tool_disclosure]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisclosureSection {
    /// Defer large MCP tool sets behind `tool_search` (default true).
    pub enabled: Option<bool>,
    /// Models that may defer (`*` globs); default every model with tools.
    pub eligible_models: Option<Vec<String>>,
    /// Fewest deferrable tools that make deferral worth it (default 1).
    pub min_defer_count: Option<usize>,
    /// Share of the context window the MCP tools must exceed (default 0.15).
    pub threshold_pct: Option<f64>,
    /// Rarely used built-ins (`task`, `web_fetch`, `skill`, …) wait behind
    /// `tool_search` (default true); false sends every built-in inline.
    pub defer_builtins: Option<bool>,
}

/// `[mcp]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// When set, only these servers start.
    pub allowed_servers: Option<Vec<String>>,
    /// These servers never start.
    #[serde(default)]
    pub denied_servers: Vec<String>,
}

/// `[mcp_servers.NAME]`: a stdio server (`command`) or a streamable HTTP
/// server (`url`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    /// Program to start (stdio).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory (default: the workspace).
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP endpoint.
    pub url: Option<String>,
    /// HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Variable holding a bearer token for `url`.
    pub bearer_token_env: Option<String>,
    /// `false` keeps it configured but not started.
    pub enabled: Option<bool>,
    /// Seconds a tool call may take (default 60).
    pub tool_timeout_sec: Option<f64>,
    /// Seconds to start and list tools (default 30).
    pub startup_timeout_sec: Option<f64>,
    /// Keep this server's tools inline even when others are deferred.
    pub always_load: Option<bool>,
    /// A `.mcp.json` `type` tern does not speak (`sse`, or unknown): this
    /// server fails to start with a message saying so; the others go on.
    #[serde(skip)]
    pub unsupported_type: Option<String>,
    /// An Agent SDK in-process server (`"type": "sdk"` in `.mcp.json` or
    /// `--mcp-config`): reached through the program driving tern.
    #[serde(skip)]
    pub sdk: bool,
}

/// `[providers.NAME]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// The key itself (prefer `api_key_env`).
    pub api_key: Option<String>,
    /// The variable holding the key.
    pub api_key_env: Option<String>,
    /// Base URL (SDK convention).
    pub base_url: Option<String>,
    /// For OpenAI: `chat` or `responses`.
    pub api: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// `[retry]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySection {
    /// Attempts in all.
    pub max_attempts: Option<u32>,
    /// First backoff in ms.
    pub base_delay_ms: Option<u64>,
    /// Longest wait in ms.
    pub max_delay_ms: Option<u64>,
    /// Seconds from a request to the first byte of its response (default 120).
    pub first_byte_timeout_secs: Option<u64>,
    /// Seconds a response may go without an event that carries something
    /// (pings do not count; default 180).
    pub idle_timeout_secs: Option<u64>,
}

impl FileConfig {
    /// Read and parse one file; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_within(path, None)
    }

    /// [`FileConfig::load`] for a file that must stay inside `inside` once
    /// links are followed (a project's config). A regular file of at most
    /// 1 MiB either way: a committed link to `/dev/zero` or a FIFO is an
    /// error, not a hang.
    pub fn load_within(path: &Path, inside: Option<&Path>) -> Result<Self, ConfigError> {
        let text = match tern_sandbox::small_file::read_bounded(path, MAX_CONFIG_BYTES, inside) {
            Ok(t) => t,
            Err(tern_sandbox::small_file::Refused::Missing) => return Ok(Self::default()),
            Err(tern_sandbox::small_file::Refused::Unreadable(why)) => return Err(ConfigError::Invalid(why)),
        };
        let config: Self =
            toml::from_str(&text).map_err(|e| ConfigError::Invalid(format!("{}: {e}", path.display())))?;
        config.bash.check(path)?;
        Ok(config)
    }

    /// Layer `other` over `self`: its values win, maps merge by key.
    pub fn merge(mut self, other: FileConfig) -> Self {
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f; } )* };
        }
        take!(provider, model, max_turns, max_tokens, thinking_budget, append_system_prompt, max_tool_output_kib);
        for (name, p) in other.providers {
            let base = self.providers.remove(&name).unwrap_or_default();
            let mut headers = base.headers;
            headers.extend(p.headers);
            self.providers.insert(
                name,
                ProviderSection {
                    api_key: p.api_key.or(base.api_key),
                    api_key_env: p.api_key_env.or(base.api_key_env),
                    base_url: p.base_url.or(base.base_url),
                    api: p.api.or(base.api),
                    headers,
                },
            );
        }
        self.models.extend(other.models);
        let r = other.retry;
        self.retry = RetrySection {
            max_attempts: r.max_attempts.or(self.retry.max_attempts),
            base_delay_ms: r.base_delay_ms.or(self.retry.base_delay_ms),
            max_delay_ms: r.max_delay_ms.or(self.retry.max_delay_ms),
            first_byte_timeout_secs: r.first_byte_timeout_secs.or(self.retry.first_byte_timeout_secs),
            idle_timeout_secs: r.idle_timeout_secs.or(self.retry.idle_timeout_secs),
        };
        self.exclude_tools.extend(other.exclude_tools);
        let d = other.tool_disclosure;
        self.tool_disclosure = DisclosureSection {
            enabled: d.enabled.or(self.tool_disclosure.enabled),
            eligible_models: d.eligible_models.or(self.tool_disclosure.eligible_models.take()),
            min_defer_count: d.min_defer_count.or(self.tool_disclosure.min_defer_count),
            threshold_pct: d.threshold_pct.or(self.tool_disclosure.threshold_pct),
            defer_builtins: d.defer_builtins.or(self.tool_disclosure.defer_builtins),
        };
        if other.mcp.allowed_servers.is_some() {
            self.mcp.allowed_servers = other.mcp.allowed_servers;
        }
        self.mcp.denied_servers.extend(other.mcp.denied_servers);
        // A server defined again replaces the earlier definition as a whole.
        self.mcp_servers.extend(other.mcp_servers);
        // Rules keep their own files (see permissions::build_policy); the
        // merged lists are for display only.
        if other.permissions.mode.is_some() {
            self.permissions.mode = other.permissions.mode;
        }
        self.permissions.allow.extend(other.permissions.allow);
        self.permissions.ask.extend(other.permissions.ask);
        self.permissions.deny.extend(other.permissions.deny);
        self.hooks = std::mem::take(&mut self.hooks).merge(other.hooks);
        let sb = other.sandbox;
        self.sandbox.mode = sb.mode.or(self.sandbox.mode.take());
        self.sandbox.network = sb.network.or(self.sandbox.network);
        self.sandbox.writable.extend(sb.writable);
        self.sandbox.readable.extend(sb.readable);
        self.env.passthrough.extend(other.env.passthrough);
        self.trust.folders.extend(other.trust.folders);
        for (path, p) in other.projects {
            let entry = self.projects.entry(path).or_default();
            entry.allow.extend(p.allow);
            entry.ask.extend(p.ask);
            entry.deny.extend(p.deny);
        }
        let c = other.compaction;
        self.compaction = CompactionSection {
            auto: c.auto.or(self.compaction.auto),
            reserve_tokens: c.reserve_tokens.or(self.compaction.reserve_tokens),
            keep_turns: c.keep_turns.or(self.compaction.keep_turns),
        };
        self.context.files = other.context.files.or(self.context.files.take());
        self.tui.notify = other.tui.notify.or(self.tui.notify.take());
        self.tui.notify_after_secs = other.tui.notify_after_secs.or(self.tui.notify_after_secs);
        self.tui.title = other.tui.title.or(self.tui.title);
        self.tui.theme = other.tui.theme.or(self.tui.theme.take());
        self.tui.print_on_exit = other.tui.print_on_exit.or(self.tui.print_on_exit.take());
        self.tui.vim = other.tui.vim.or(self.tui.vim);
        self.tui.fullscreen = other.tui.fullscreen.or(self.tui.fullscreen);
        self.web_search.enabled = other.web_search.enabled.or(self.web_search.enabled);
        self.web_search.max_uses = other.web_search.max_uses.or(self.web_search.max_uses);
        self.media_cli.enabled = other.media_cli.enabled.or(self.media_cli.enabled);
        self.bash.full_output_mb = other.bash.full_output_mb.or(self.bash.full_output_mb);
        self.bash.shell = other.bash.shell.or(self.bash.shell.take());
        self.bash.command_prefix = other.bash.command_prefix.or(self.bash.command_prefix.take());
        self
    }
}

/// The largest config file tern reads.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Where tern keeps its files.
#[derive(Debug, Clone)]
pub struct TernPaths {
    /// Holds `config.toml` and the user's `AGENTS.md`.
    pub config_dir: PathBuf,
    /// Holds `sessions/` and `logs/`.
    pub data_dir: PathBuf,
}

impl TernPaths {
    /// Everything under `home` (as `TERN_HOME` says).
    pub fn at(home: &Path) -> Self {
        Self { config_dir: home.to_path_buf(), data_dir: home.to_path_buf() }
    }

    /// `TERN_HOME` when set (everything under it), else the platform dirs.
    pub fn discover() -> Result<Self, ConfigError> {
        if let Some(home) = std::env::var_os("TERN_HOME").filter(|h| !h.is_empty()) {
            return Ok(Self::at(Path::new(&home)));
        }
        let dirs = directories::ProjectDirs::from("", "", "tern").ok_or_else(|| {
            ConfigError::Invalid("cannot find a home directory for config and data; set TERN_HOME".into())
        })?;
        Ok(Self { config_dir: dirs.config_dir().to_path_buf(), data_dir: dirs.data_dir().to_path_buf() })
    }

    /// The user config file.
    pub fn user_config(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    /// The sessions directory.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }

    /// tern's log file (MCP servers' stderr goes here).
    pub fn log_file(&self) -> PathBuf {
        self.data_dir.join("logs").join("tern.log")
    }
}

/// A config file tern could not change; it is left as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct EditError {
    /// The file.
    pub file: PathBuf,
    /// What went wrong (it names the file).
    pub why: String,
}

impl EditError {
    fn of(file: &Path) -> impl FnOnce(String) -> EditError + '_ {
        move |why| EditError { file: file.to_path_buf(), why }
    }
}

/// Change the string list at `path` (tables, created when missing) in the
/// TOML file `file`, keeping everything else as it is (comments, order);
/// written atomically through a symlinked config, keeping its mode. `change`
/// says whether it changed anything; nothing is written when it did not.
pub fn edit_string_list(
    file: &Path,
    path: &[&str],
    change: impl FnOnce(&mut toml_edit::Array) -> bool,
) -> Result<bool, EditError> {
    edit_toml(file, |doc| {
        let Some((last, tables)) = path.split_last() else { return Ok(false) };
        let (table, at) = table_at(doc, tables, file)?;
        let list = table
            .entry(last)
            .or_insert(toml_edit::value(toml_edit::Array::new()))
            .as_array_mut()
            .ok_or_else(|| format!("{}: `{at}.{last}` is not a list", file.display()))?;
        Ok(change(list))
    })
    .map_err(EditError::of(file))
}

/// Remove `value` from every string list at `paths` in `file` that holds it
/// (nothing is created), in one read and at most one write, keeping the
/// rest as [`edit_string_list`] does; which of `paths` held it.
pub fn remove_from_string_lists(file: &Path, paths: &[Vec<String>], value: &str) -> Result<Vec<usize>, EditError> {
    let mut found = Vec::new();
    edit_toml(file, |doc| {
        for (i, path) in paths.iter().enumerate() {
            let mut item = Some(doc.as_item_mut());
            for key in path {
                item = item.and_then(|it| it.get_mut(key.as_str()));
            }
            if let Some(list) = item.and_then(toml_edit::Item::as_array_mut) {
                let before = list.len();
                list.retain(|v| v.as_str() != Some(value));
                if list.len() != before {
                    found.push(i);
                }
            }
        }
        Ok(!found.is_empty())
    })
    .map_err(EditError::of(file))?;
    Ok(found)
}

/// Set the value at `path` (tables created when missing) in `file`,
/// keeping everything else as it is, as [`edit_string_list`] does.
pub fn set_value(file: &Path, path: &[&str], value: impl Into<toml_edit::Value>) -> Result<(), EditError> {
    edit_toml(file, |doc| {
        let Some((last, tables)) = path.split_last() else { return Ok(false) };
        let (table, _) = table_at(doc, tables, file)?;
        table.insert(last, toml_edit::Item::Value(value.into()));
        Ok(true)
    })
    .map(|_| ())
    .map_err(EditError::of(file))
}

/// The table at `tables` in `doc`, created when missing, and its dotted name.
fn table_at<'a>(
    doc: &'a mut toml_edit::DocumentMut,
    tables: &[&str],
    file: &Path,
) -> Result<(&'a mut dyn toml_edit::TableLike, String), String> {
    let mut table = doc.as_table_mut() as &mut dyn toml_edit::TableLike;
    let mut at = String::new();
    for (i, key) in tables.iter().enumerate() {
        at = if at.is_empty() { (*key).to_string() } else { format!("{at}.\"{key}\"") };
        let dotted = i + 1 < tables.len();
        table = table
            .entry(key)
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                // `[projects."/path"]` without an empty `[projects]` above it.
                t.set_implicit(dotted);
                toml_edit::Item::Table(t)
            })
            .as_table_like_mut()
            .ok_or_else(|| format!("{}: `{at}` is not a table", file.display()))?;
    }
    Ok((table, at))
}

/// Read `file` as TOML (empty when missing), let `change` edit it, and
/// write it back atomically (through a symlink, keeping the mode) when it
/// says it changed something.
fn edit_toml(
    file: &Path,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<bool, String>,
) -> Result<bool, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| format!("{} is not valid TOML, so it was not changed: {e}", file.display()))?;
    if !change(&mut doc)? {
        return Ok(false);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Write through a symlinked config (dotfile managers); the atomic
    // writer keeps the file's mode.
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    tern_tools::write_atomic(&file, doc.to_string().as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    Ok(true)
}

/// The project config file for a workspace.
pub fn project_config(workspace: &Path) -> PathBuf {
    workspace.join(".tern").join("config.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_layers_win_and_maps_merge() {
        let user: FileConfig = toml::from_str(
            "model = \"a\"\nmax_turns = 3\n[providers.openai]\nbase_url = \"http://x/v1\"\napi_key_env = \"K\"\n[retry]\nmax_attempts = 2",
        )
        .unwrap();
        let project: FileConfig =
            toml::from_str("model = \"b\"\n[providers.openai]\nbase_url = \"http://y/v1\"\n[retry]\nbase_delay_ms = 1")
                .unwrap();
        let c = user.merge(project);
        assert_eq!(c.model.as_deref(), Some("b"));
        assert_eq!(c.max_turns, Some(3));
        let p = &c.providers["openai"];
        assert_eq!(p.base_url.as_deref(), Some("http://y/v1"));
        assert_eq!(p.api_key_env.as_deref(), Some("K"));
        assert_eq!((c.retry.max_attempts, c.retry.base_delay_ms), (Some(2), Some(1)));
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("config.toml");
        std::fs::write(&f, "modle = \"x\"\n").unwrap();
        let err = FileConfig::load(&f).unwrap_err().to_string();
        assert!(err.contains("config.toml") && err.contains("modle"), "{err}");
        assert!(FileConfig::load(&dir.path().join("missing.toml")).is_ok());
    }

    #[test]
    fn bash_full_output_mb_is_read_merged_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("config.toml");
        std::fs::write(&f, "[bash]\nfull_output_mb = 2\n").unwrap();
        let user = FileConfig::load(&f).unwrap();
        assert_eq!(user.bash.full_output_bytes(), Some(2 * 1024 * 1024));
        assert_eq!(user.clone().merge(FileConfig::default()).bash.full_output_mb, Some(2));
        for bad in ["0", "4097"] {
            std::fs::write(&f, format!("[bash]\nfull_output_mb = {bad}\n")).unwrap();
            let err = FileConfig::load(&f).unwrap_err().to_string();
            assert!(err.contains("config.toml") && err.contains("between 1 and 4096"), "{err}");
        }
    }

    #[test]
    fn bash_shell_must_be_absolute_and_the_prefix_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("config.toml");
        std::fs::write(&f, "[bash]\nshell = \"/bin/sh\"\ncommand_prefix = \"set -e\"\n").unwrap();
        let c = FileConfig::load(&f).unwrap().merge(FileConfig::default());
        assert_eq!(
            (c.bash.shell.as_deref(), c.bash.command_prefix.as_deref()),
            (Some(Path::new("/bin/sh")), Some("set -e"))
        );
        std::fs::write(&f, "[bash]\nshell = \"zsh\"\n").unwrap();
        let err = FileConfig::load(&f).unwrap_err().to_string();
        assert!(err.contains("config.toml: `[bash] shell = \"zsh\"`: give the shell's absolute path"), "{err}");
        std::fs::write(&f, format!("[bash]\ncommand_prefix = \"{}\"\n", "x".repeat(20_000))).unwrap();
        let err = FileConfig::load(&f).unwrap_err().to_string();
        assert!(err.contains("`[bash] command_prefix` is 20000 bytes"), "{err}");
        let missing = BashSection { shell: Some(dir.path().join("no-shell")), ..Default::default() };
        let err = missing.check_shell(&f).unwrap_err().to_string();
        assert!(err.contains("no-shell\"`: No such file or directory"), "{err}");
        std::fs::write(dir.path().join("plain"), "").unwrap();
        let plain = BashSection { shell: Some(dir.path().join("plain")), ..Default::default() };
        assert!(plain.check_shell(&f).unwrap_err().to_string().contains("not executable"));
        let sh = BashSection { shell: Some("/bin/sh".into()), ..Default::default() };
        assert!(sh.check_shell(&f).is_ok());
    }
}
