//! tern's session core: configuration, provider setup, the system prompt,
//! the session log, and one entry point, [`Runtime::apply`], that every
//! front end (the TUI, headless `tern -p`, stream-json, ACP) sends its
//! [`tern_protocol::Command`]s to. Nothing here prints or renders: results
//! and events go to the caller.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tern_runtime::Runtime::new(tern_runtime::Overrides::default()).await?;
//! let events: tern_agent_loop::EventSink = std::sync::Arc::new(|_| {});
//! let report = rt.prompt("list the files", &events).await?;
//! println!("{}", report.outcome.final_text);
//! # Ok(()) }
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod agent_servers;
pub mod apply;
mod command_lines;
pub mod compaction;
pub mod context;
mod elicitation;
pub mod ending;
pub mod extension;
mod fork;
pub mod health;
pub mod images;
mod interactive;
pub mod mentions;
pub mod output_budget;
pub mod permissions;
pub mod prompt;
mod run;
mod setup;
mod skill_library;
mod startup;
mod structured_output;
mod subagents;
mod turn_catalog;
pub mod web_search;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tern_agent_loop::{RunOutcome, RuntimeTool};
use tern_catalog::{
    AgentFacts, AgentKind, Assembly, CatalogConfig, DisclosureConfig, FrontEnd, ModelFacts, PlatformFacts, Registry,
    SubagentRole, TurnFacts,
};
use tern_llm::ModelInfo;
use tern_mcp::{McpManager, ServerState, ServerStatus};
use tern_policy::hooks::HookRunner;
use tern_protocol::sync::{LockExt as _, RwLockExt as _};
use tern_protocol::{Message, SessionRecord};

pub use agents::{AgentOrigin, AgentProfile};
pub use config::{FileConfig, TernPaths};
pub use mcp_config::ConfiguredServer;
pub use permissions::{
    PermissionAnswer, PermissionDenial, PermissionFlags, PermissionPrompt, PermissionRequest, RefuseAll, RuleInForce,
    RuleScope,
};
pub use session::Session;
pub use setup::ResolvedProvider;
pub use tern_policy::engine::{DecidedBy, Decision, Mode, Policy, Verdict};
// What front ends use of the crates beneath the core, so that a front end
// depends on the core and the protocol alone (crates/cli/tests/e2e/layout.rs).
pub use structured_output::{SchemaError, parse_schema};
pub use tern_agent_loop::EventSink;
pub use tern_llm::ToolCallFormat;

/// Where an image the person attaches comes from ([`Runtime::prompt_image`]).
#[derive(Debug)]
pub enum ImageFrom<'a> {
    /// A file (a pasted or dropped path).
    File(&'a std::path::Path),
    /// Bytes (the clipboard's).
    Bytes(Vec<u8>),
}
pub use tern_config::{
    ConfigError, agents, claude_settings, commands, config, frontmatter, mcp_config, project, secrets, skills, trust,
};
pub use tern_llm::{UnknownEffort, effort_budget};
pub use tern_mcp::{ElicitHost, Elicitation, Elicitor, Host, SdkHost, SdkRelay};
pub use tern_media as media_cli;
pub use tern_policy::{bash::BashClass, hooks, rules::RuleKind};
pub use tern_process as process;
pub use tern_store::damaged as damaged_sessions;
pub use tern_store::index as session_index;
pub use tern_store::{Resume, StoreError, checkpoints, export as session_export, session};
pub use tern_tools::ClientFiles;
pub use turn_catalog::TurnCatalog;

/// Errors that stop tern before or outside a run. All are usage/config
/// problems (exit code 2) except `Io`.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A config file or flag is wrong.
    #[error("config error: {0}")]
    Config(String),
    /// The provider cannot be set up (missing key, bad URL).
    #[error("{0}")]
    Provider(#[from] tern_llm::LlmError),
    /// A file could not be written or read.
    #[error("{0}")]
    Io(String),
    /// A config file could not be changed (it is left as it was).
    #[error(transparent)]
    Edit(#[from] config::EditError),
    /// A session file could not be created, opened, read or found.
    #[error(transparent)]
    Store(#[from] tern_store::StoreError),
    /// A config file or setting cannot be used.
    #[error(transparent)]
    Configuration(#[from] tern_config::ConfigError),
    /// The `--agent` profile cannot be used.
    #[error("config error: {0}")]
    Agent(#[from] agents::AgentError),
    /// A required MCP server of the `--agent` profile did not start.
    #[error("{0}")]
    AgentServer(String),
    /// A `[models."NAME"]` entry in config cannot be used.
    #[error("config error: {0}")]
    ModelOverride(#[from] tern_llm::ModelOverrideError),
    /// A `.mcp.json` or `--mcp-config` file cannot be used.
    #[error("config error: {0}")]
    McpConfig(#[from] mcp_config::McpConfigError),
    /// A permission rule or mode cannot be read.
    #[error("config error: {0}")]
    Policy(#[from] permissions::PolicyError),
}

/// Command-line values that override config.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--append-system-prompt`.
    pub append_system_prompt: Option<String>,
    /// `--system-prompt`: replaces tern's own instructions (the tool list,
    /// environment and instruction files still follow).
    pub system_prompt: Option<String>,
    /// `--session-id`: the id of the new session (letters, digits, `-`, `_`).
    pub session_id: Option<String>,
    /// `--add-dir` (repeatable): more folders tools may read and edit as
    /// they do the workspace.
    pub add_dirs: Vec<PathBuf>,
    /// `--cwd` (default: the current directory).
    pub cwd: Option<PathBuf>,
    /// `--strict-mcp-config`: only the `--mcp-config` servers.
    pub strict_mcp_config: bool,
    /// `--tools`: the built-in tools the model has (`default`: all).
    pub tools: Option<Vec<String>>,
    /// `--max-thinking-tokens`: the thinking budget (0: none), over the config's.
    pub thinking_budget: Option<u64>,
    /// `--settings`: Claude Code's settings (a file or its JSON), named as not applied.
    pub claude_settings: Vec<String>,
    /// `--setting-sources`: Claude Code's settings files to read; tern reads none.
    pub setting_sources: Option<String>,
    /// Where tern keeps its config and data, as `TERN_HOME` would say, for
    /// an embedding program (and tests) that keeps its own without setting
    /// the process's environment. None: `TERN_HOME`, else the platform dirs.
    pub tern_home: Option<PathBuf>,
    /// Not a flag: the program driving tern that hosts Agent SDK MCP
    /// servers (`"type": "sdk"`), set by the stream-json front end.
    /// `--max-budget-usd`: what the prompts of this process may cost
    /// (priced by the model table); a prompt that reaches it stops.
    pub max_budget_usd: Option<f64>,
    /// `--json-schema` (checked by [`parse_schema`]): each prompt ends with
    /// an answer that matches it (`structured_output` in the result).
    pub json_schema: Option<serde_json::Value>,
    /// `--fallback-model`: the model a prompt goes on with when its own stays overloaded.
    pub fallback_model: Option<String>,
    /// `--tool-call-format`: how the model's tool calls are read, over its
    /// model-table entry (`text`: also calls written as text; `prompt`: the
    /// tools described in the system prompt, none in the request).
    pub tool_call_format: Option<ToolCallFormat>,
    /// `--betas`: Anthropic beta features (the `anthropic-beta` header).
    pub betas: Vec<String>,
    /// Flags taken but not applied, each named at start.
    pub notes: Vec<String>,
    pub sdk_host: Option<tern_mcp::SdkHost>,
    /// Not a flag: who fills MCP servers' forms when not the person at a
    /// terminal (the stream-json front end asks the driving program).
    pub elicitor: Option<tern_mcp::ElicitHost>,
    /// `--disallowed-tools`: tool names never offered.
    pub disallowed_tools: Vec<String>,
    /// `--mcp-config FILE` (repeatable): more MCP servers, `.mcp.json` format.
    pub mcp_config: Vec<PathBuf>,
    /// `--agent NAME`: narrow the catalog by an agent profile.
    pub agent: Option<String>,
    /// `--role ROLE`: see the catalog as a subagent of this role would.
    pub role: Option<String>,
    /// Which front end runs (TUI, headless).
    pub front_end: Option<FrontEnd>,
    /// Do not start MCP servers (the session runs with built-in tools only).
    pub no_mcp: bool,
    /// Inspect only: open no session log (`tern tools`, `tern mcp list`).
    pub ephemeral: bool,
    /// `--permission-mode`.
    pub permission_mode: Option<String>,
    /// `--allow-dangerously-skip-permissions`: `bypass` may be entered later
    /// (a command, a client's request) without starting in it.
    pub allow_bypass: bool,
    /// `--allowed-tools` rules.
    pub allowed_tools: Vec<String>,
    /// `--trust`: trust the workspace for this run.
    pub trust: bool,
    /// `--sandbox`: the loosest level any command runs at.
    pub sandbox: Option<String>,
    /// `--continue` / `--resume [ID]`: go on with an earlier session.
    pub resume: Option<Resume>,
    /// `--fork-session`: resume into a new session file.
    pub fork_session: bool,
    /// `--no-session`: write no session file.
    pub no_session: bool,
}

/// A prompt `/rewind` listed without a place in the conversation (both come from one index line).
fn no_point() -> RuntimeError {
    RuntimeError::Io("that prompt's checkpoint is incomplete".into())
}

/// What resuming found, for the front ends.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// The session resumed (the file's id; with `--fork-session` the new
    /// session's header names it).
    pub from: String,
    /// Messages in the conversation as it goes on (after any compaction,
    /// repaired). The messages themselves are the runtime's history, held
    /// once: front ends replay them with [`Runtime::with_conversation`].
    pub message_count: usize,
    /// The todo list as last written.
    pub todos: Vec<tern_protocol::TodoItem>,
    /// The title from `/rename`.
    pub title: Option<String>,
    /// The model the session last switched to with `/model`.
    pub model: Option<String>,
    /// The session's tokens and estimated cost so far.
    pub usage: (tern_protocol::UsageTotals, f64),
    /// Compactions the conversation went through.
    pub compactions: usize,
    /// What was repaired or skipped, one line each.
    pub notices: Vec<String>,
    /// The figures kept of its tool calls (time, details), by call id: a
    /// session written before they were kept has none. Only a replay needs
    /// them: the session a runtime starts with hands them over once
    /// ([`Runtime::take_resumed_tool_runs`]; empty here), a `/resume` in its
    /// outcome.
    pub tool_runs: std::collections::HashMap<String, tern_protocol::ToolRun>,
}

pub use startup::{ignored_claude_settings, resolve_workspace, tern_paths};
pub use tern_sandbox::small_file;

/// What a run produced, with cost and timing.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The loop's outcome.
    pub outcome: RunOutcome,
    /// Estimated cost in USD from the model table.
    pub cost_usd: f64,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Calls refused by permissions (rules, mode, or a question nobody answered yes).
    pub permission_denials: Vec<PermissionDenial>,
    /// `--json-schema`: the answer the model gave, matching the schema.
    pub structured_output: Option<serde_json::Value>,
    /// Things the person should know (a hook warning, a rule saved).
    pub notices: Vec<String>,
    /// What this run recorded that is not on disk when it ends (session
    /// entries a failing disk holds back, checkpoints not saved). Not
    /// empty: the run failed to keep what it did, and every front end says
    /// so as an error (`-p` exits non-zero).
    pub unsaved: Vec<String>,
}

/// Sets up a [`Runtime`] in steps, so a front end (or an embedder) can act
/// between them: the config is loaded once, under the workspace's trust, by
/// [`RuntimeBuilder::new`]; [`RuntimeBuilder::trust_question`] says whether
/// the folder's project would run or widen something a person should agree
/// to first; [`RuntimeBuilder::build`] starts everything else.
///
/// ```no_run
/// # async fn f() -> Result<(), tern_runtime::RuntimeError> {
/// let builder = tern_runtime::RuntimeBuilder::new(tern_runtime::Overrides::default())?;
/// let builder = match builder.trust_question() {
///     Some(_question) => builder.trusted_for_this_run()?, // after the person said yes
///     None => builder,
/// };
/// let runtime = builder.build().await?;
/// # Ok(()) }
/// ```
pub struct RuntimeBuilder {
    overrides: Overrides,
    loaded: startup::Loaded,
    prompt: Option<Arc<dyn PermissionPrompt>>,
    /// Tools of the embedding program ([`RuntimeBuilder::tool`]).
    sdk_tools: Vec<RuntimeTool>,
    /// Extensions ([`RuntimeBuilder::extension`]).
    extensions: Vec<Arc<dyn extension::Extension>>,
    /// Files as an editor holds them ([`RuntimeBuilder::client_files`]).
    client_files: Option<Arc<dyn tern_tools::ClientFiles>>,
}

impl RuntimeBuilder {
    /// Step 1: resolve the workspace and load the user and project config,
    /// the project's restricted by the folder's trust.
    pub fn new(overrides: Overrides) -> Result<Self, RuntimeError> {
        let loaded = startup::load_config(&overrides)?;
        Ok(Self { overrides, loaded, prompt: None, sdk_tools: Vec::new(), extensions: Vec::new(), client_files: None })
    }

    /// The question to ask before going on, when the folder is not trusted
    /// and its own project files have hooks, MCP servers, allow rules or a
    /// mode (an answer vouches for this folder only, not the ones above it).
    pub fn trust_question(&self) -> Option<trust::TrustQuestion> {
        let l = &self.loaded;
        let own = l.layers.iter().find(|layer| layer.dir == l.workspace).map(|layer| layer.as_written.clone());
        trust::question(&l.trust, &own.unwrap_or_default(), &l.workspace, l.paths.user_config())
    }

    /// Trust the folder for this run (the person said yes): the project
    /// config asked about applies without the restrictions that need trust
    /// (it is not read again: what runs is what was shown).
    pub fn trusted_for_this_run(mut self) -> Result<Self, RuntimeError> {
        self.overrides.trust = true;
        self.loaded = startup::trusted(self.loaded);
        Ok(self)
    }

    /// The project config files that do not load, each error naming its
    /// file: a run goes on without them while their folder is not trusted
    /// (trusted, the same error stops it).
    pub fn broken_project_configs(&self) -> Vec<String> {
        self.loaded.layers.iter().filter_map(|l| l.error.clone()).collect()
    }

    /// The agent profiles `--agent` can name here (the user's, and the
    /// project's in a trusted folder), each with its `description:`.
    pub fn agents(&self) -> Vec<(String, Option<String>)> {
        let l = &self.loaded;
        agents::agent_summaries(&l.folders, &l.paths.config_dir, tern_protocol::paths::home().as_deref())
    }

    /// This folder's sessions that can be resumed, last written first (for a picker).
    pub fn sessions(&self) -> Vec<session_index::SessionSummary> {
        session_index::resumable(&self.loaded.paths.sessions_dir(), Some(&self.loaded.workspace))
    }

    /// Every folder's sessions that can be resumed, last written first (the picker's "all").
    pub fn sessions_everywhere(&self) -> Vec<session_index::SessionSummary> {
        session_index::resumable(&self.loaded.paths.sessions_dir(), None)
    }

    /// The folder the session will work in.
    pub fn workspace(&self) -> &Path {
        &self.loaded.workspace
    }

    /// Where sessions are kept (the picker renames and previews there).
    pub fn sessions_dir(&self) -> PathBuf {
        self.loaded.paths.sessions_dir()
    }

    /// Add a tool of the embedding program: after the built-ins, or in place
    /// of the built-in of the same name ([`extension`]).
    pub fn tool(mut self, tool: RuntimeTool) -> Self {
        self.sdk_tools.push(tool);
        self
    }

    /// Add an extension: its tools, slash commands, call checks and event
    /// listener ([`extension::Extension`]).
    pub fn extension(mut self, extension: Arc<dyn extension::Extension>) -> Self {
        self.extensions.push(extension);
        self
    }

    /// The skills a session here would offer (`tern skills list`), without starting anything.
    pub fn skills(&self) -> skills::Skills {
        let l = &self.loaded;
        let mut found = skills::Skills::discover(&l.folders, &l.paths.config_dir);
        if media_for(l).ready() {
            found.add_media_skill();
        }
        found
    }

    /// The media CLI as a session here would find it (its config applied).
    pub fn media_cli(&self) -> media_cli::MediaCli {
        media_for(&self.loaded)
    }

    /// The custom slash commands a session here would offer.
    pub fn commands(&self) -> commands::Commands {
        let l = &self.loaded;
        commands::Commands::discover(&l.folders, &l.paths.config_dir)
    }

    /// Go on with an earlier session (or, with `None`, start a new one).
    pub fn resume(mut self, which: Option<Resume>) -> Self {
        self.overrides.resume = which;
        self
    }

    /// Where permission questions go; without one, every question is refused.
    pub fn permission_prompt(mut self, prompt: Arc<dyn PermissionPrompt>) -> Self {
        self.prompt = Some(prompt);
        self
    }

    /// Read, edit and write text files through an editor (an ACP client's
    /// `fs/*`), so they see its unsaved changes.
    pub fn client_files(mut self, files: Arc<dyn tern_tools::ClientFiles>) -> Self {
        self.client_files = Some(files);
        self
    }

    /// The rest of the steps (each a function in [`startup`]): resolve the
    /// provider, build the children's environment and the sandbox, start the
    /// MCP servers (all at once), open the session log, build the policy and
    /// hooks, and assemble the catalog.
    pub async fn build(self) -> Result<Runtime, RuntimeError> {
        let RuntimeBuilder { mut overrides, mut loaded, prompt, sdk_tools, extensions, client_files } = self;
        // No turns at all is a mistake, not a run that fails.
        if overrides.max_turns == Some(0) {
            return Err(RuntimeError::Config("--max-turns 0: give at least 1".into()));
        }
        if loaded.config.max_turns == Some(0) {
            return Err(RuntimeError::Config("`max_turns = 0` in the config: give at least 1".into()));
        }
        let mut warnings = std::mem::take(&mut loaded.warnings);
        let warnings = &mut warnings;
        let agent = startup::agent(&mut overrides, &loaded, warnings)?;
        let (provider, model_info) = setup::resolve(&loaded.config, &overrides, warnings)?;
        // Checking the media CLI hashes its files: done on a blocking thread
        // while the MCP servers start and the session opens.
        let media = {
            let data_dir = loaded.paths.data_dir.clone();
            let enabled = loaded.config.media_cli.enabled.unwrap_or(true);
            tokio::task::spawn_blocking(move || media_cli::detect_here(&data_dir, enabled))
        };
        let child_env = startup::child_env(&loaded, &[]);
        let mut servers = startup::configure_servers(&loaded, &overrides, &child_env, warnings)?;
        if let Some(a) = &agent {
            let (no_mcp, rules) = (overrides.no_mcp, &loaded.config.mcp);
            agent_servers::add_to_session(a, &mut servers, no_mcp, rules, &loaded.workspace, &child_env);
        }
        // The person answers servers' forms through the running prompt's front end.
        let interaction = Arc::new(interactive::Interaction::default());
        let elicitor = overrides.elicitor.clone().unwrap_or_else(|| {
            tern_mcp::Host(Arc::new(elicitation::SessionElicitor { interaction: interaction.clone() }))
        });
        let mcp = startup::start_servers(&servers, &overrides, &child_env, &loaded.paths, elicitor).await;
        if let Some(a) = &agent
            && let Err(why) = agent_servers::check_required(a, &servers, mcp.as_deref()).await
        {
            if let Some(mcp) = &mcp {
                mcp.shutdown().await;
            }
            return Err(RuntimeError::AgentServer(why));
        }
        let (session, resumed) = startup::open_session(&overrides, &loaded, &provider)?;
        let (mut resumed, history) = match resumed {
            Some((r, messages)) => (Some(r), messages),
            None => (None, Vec::new()),
        };
        let resumed_tool_runs = resumed.as_mut().map(|r| std::mem::take(&mut r.tool_runs)).unwrap_or_default();
        // A resumed conversation larger than the window: said now, compacted before the next request.
        let history_tokens = compaction::estimate_tokens(&history);
        let sandbox = startup::sandbox(&loaded, &overrides, &session, warnings)?;
        let policy = Arc::new(startup::policy(&loaded, &overrides, &session, warnings)?);
        if overrides.allow_bypass {
            policy.allow_bypass();
        }
        let hook_runner = startup::hooks(&loaded, &child_env)?;
        startup::clear_stale_writes(&loaded, warnings);
        let media = media.await.map_err(|e| RuntimeError::Io(format!("checking the media CLI: {e}")))?;
        let media_broker = startup::media_broker(&media, warnings);
        let env = startup::tool_env(
            &loaded,
            &session,
            client_files,
            &model_info,
            &sandbox,
            (&media, media_broker.as_ref()),
            &child_env,
            &policy,
        );
        let background = env.background.clone();
        let folders = loaded.folders.clone();
        let (skills, commands) = startup::markdown_resources(&loaded, media.ready(), &extensions, warnings);
        let subagents = subagents::Subagents::new();
        let mut tools = tern_tools::builtin_tools(Arc::new(env));
        tools.push(subagents::SessionDelegate::runtime_tool(subagents.clone()));
        tools.extend(interactive::tools(&interaction, &policy));
        let structured = overrides.json_schema.clone().map(|schema| {
            let answer = Arc::new(structured_output::Answer::default());
            tools.push(structured_output::runtime_tool(schema, answer.clone(), interaction.clone()));
            answer
        });
        tools.push(tern_tools::web_fetch::runtime_tool(Arc::new(permissions::PolicyGate(policy.clone()))));
        tools.push(web_search::runtime_tool(policy.clone(), provider.api, &loaded.config.web_search));
        if !skills.list.is_empty() {
            tools.push(tern_tools::skill::runtime_tool(Arc::new(skill_library::SkillLibrary {
                skills: skills.clone(),
                policy: policy.clone(),
            })));
        }
        let mut registry = Registry::new(tools).map_err(|e| RuntimeError::Config(format!("tool registry: {e}")))?;
        for tool in sdk_tools {
            let meta = tern_catalog::ToolMeta::mcp(false);
            registry.add_sdk_tool(tool, meta);
        }
        for ext in &extensions {
            for tool in ext.tools() {
                registry.add_extension_tool(tool, tern_catalog::ToolMeta::mcp(false));
            }
        }
        warnings.extend(registry.warnings().iter().cloned());
        // A subagent's catalog is made of the same tools (an SDK replacement included).
        // (The final answer is the session's own: a child answers its parent in text.)
        let builtin_tools: Vec<tern_catalog::Entry> =
            registry.entries().filter(|e| e.tool.name() != structured_output::NAME).cloned().collect();
        startup::warn_rules_naming_no_tool(&overrides, &builtin_tools, warnings);
        startup::keep_only_tools(&mut overrides, &builtin_tools, warnings);
        let statuses = mcp.as_ref().map(|m| m.statuses()).unwrap_or_default();
        let facts = turn_facts(&loaded.config, &overrides, &provider, &model_info, agent.as_ref(), &statuses)?;
        let catalog = Arc::new(TurnCatalog::new(registry, facts, mcp.clone(), policy.clone()));
        if resumed.is_some() {
            let names: Vec<String> = skills.list.iter().map(|s| s.name.clone()).collect();
            catalog.restore_loaded(&history, &resumed_tool_runs, &names);
        }
        let warnings = std::mem::take(warnings);
        let startup::Loaded { workspace, paths, config, trust, .. } = loaded;
        let checkpoints = Arc::new(checkpoints::Checkpoints::open(session.dir(), &workspace));
        let mut runtime = Runtime {
            workspace,
            paths,
            current: std::sync::RwLock::new((provider.model.clone(), model_info)),
            provider,
            catalog,
            mcp,
            servers,
            outputs_dir: session.tool_outputs_dir(),
            session: std::sync::RwLock::new(Arc::new(session)),
            config,
            overrides,
            warnings,
            policy,
            hook_runner: std::sync::Mutex::new(hook_runner),
            defined_agents: std::sync::Mutex::default(),
            agent_files: std::sync::OnceLock::new(),
            structured,
            prompt: prompt.unwrap_or_else(|| Arc::new(RefuseAll)),
            started_session: std::sync::atomic::AtomicBool::new(false),
            history: tokio::sync::Mutex::new(history),
            todos: Arc::new(std::sync::Mutex::new(resumed.as_ref().map(|r| r.todos.clone()).unwrap_or_default())),
            usage: std::sync::Mutex::new(resumed.as_ref().map(|r| r.usage).unwrap_or_default()),
            spent_usd: std::sync::Mutex::default(),
            checkpoints: std::sync::Mutex::new(checkpoints),
            compactions: std::sync::atomic::AtomicUsize::new(resumed.as_ref().map_or(0, |r| r.compactions)),
            resumed,
            resumed_tool_runs: std::sync::Mutex::new(resumed_tool_runs),
            trust,
            folders,
            sandbox,
            child_env,
            media,
            media_broker,
            skills,
            commands,
            agent,
            subagents,
            refused_tools: Arc::default(),
            server_kit: Default::default(),
            builtin_tools,
            interaction,
            background,
            extensions: Arc::new(extensions),
            running: Arc::default(),
        };
        // A resumed session goes on with the model it last switched to, unless --model says otherwise.
        if runtime.overrides.model.is_none()
            && let Some(model) = runtime.resumed.as_ref().and_then(|r| r.model.clone())
            && model != runtime.current.read_or_recover().0
        {
            runtime.set_model(&model)?;
        }
        let over = runtime.resumed.as_ref().and_then(|_| runtime.over_window_notice(history_tokens));
        if let Some(r) = runtime.resumed.as_mut() {
            r.notices.extend(over);
        }
        Ok(runtime)
    }
}

/// A configured runtime for one session.
pub struct Runtime {
    /// The media CLI as found at start.
    media: media_cli::MediaCli,
    /// Its credential broker, when tern has a key to keep from commands.
    media_broker: Option<Arc<media_cli::broker::MediaBroker>>,
    workspace: PathBuf,
    paths: TernPaths,
    provider: ResolvedProvider,
    /// The model in use and its facts; `/model` can change it between turns.
    current: std::sync::RwLock<(String, ModelInfo)>,
    catalog: Arc<TurnCatalog>,
    mcp: Option<Arc<McpManager>>,
    servers: Vec<ConfiguredServer>,
    /// The session file in use; `/resume` and `/fork` switch it.
    session: std::sync::RwLock<Arc<Session>>,
    /// Where large tool outputs go: the first session's folder for the
    /// whole process (the sandbox lets commands read it).
    outputs_dir: PathBuf,
    config: FileConfig,
    overrides: Overrides,
    warnings: Vec<String>,
    policy: Arc<Policy>,
    /// The hooks (configured commands, then a driving program's callbacks).
    hook_runner: std::sync::Mutex<Option<Arc<HookRunner>>>,
    prompt: Arc<dyn PermissionPrompt>,
    started_session: std::sync::atomic::AtomicBool,
    /// The conversation so far: each prompt continues it (`/clear` empties it).
    history: tokio::sync::Mutex<Vec<Message>>,
    /// What `--continue` / `--resume` brought back.
    resumed: Option<Resumed>,
    /// Its tool calls' figures, until the front end takes them to replay.
    resumed_tool_runs: std::sync::Mutex<std::collections::HashMap<String, tern_protocol::ToolRun>>,
    /// The todo list as last written (kept verbatim through compaction).
    todos: Arc<std::sync::Mutex<Vec<tern_protocol::TodoItem>>>,
    /// The session's tokens and estimated cost so far (with what a resumed session had).
    usage: std::sync::Mutex<(tern_protocol::UsageTotals, f64)>,
    /// What the prompts of this process cost so far (`--max-budget-usd`).
    spent_usd: std::sync::Mutex<f64>,
    /// The files as they were before each prompt changed them (`/rewind`).
    checkpoints: std::sync::Mutex<Arc<checkpoints::Checkpoints>>,
    /// Compactions so far (a rewind of the conversation cannot cross one).
    compactions: std::sync::atomic::AtomicUsize,
    trust: trust::Trust,
    /// The project's folders, nearest first, with their trust.
    folders: Vec<(PathBuf, bool)>,
    sandbox: tern_tools::SandboxSettings,
    /// The environment children start from.
    child_env: tern_protocol::ChildEnv,
    /// Skills found at start.
    skills: Arc<skills::Skills>,
    /// Custom slash commands found at start.
    commands: Arc<commands::Commands>,
    /// `--agent NAME`: the profile this session runs as.
    agent: Option<AgentProfile>,
    /// Agents the program driving the session defined (the Agent SDK's
    /// `agents`): found before the files' profiles of the same name.
    defined_agents: std::sync::Mutex<Vec<AgentProfile>>,
    /// The agent files' names and descriptions, read once ([`Runtime::agent_names`]).
    agent_files: std::sync::OnceLock<Vec<(String, Option<String>)>>,
    /// `--json-schema`: where the run's structured answer is put.
    structured: Option<Arc<structured_output::Answer>>,
    /// What the `task` tool's children borrow from the running prompt.
    subagents: Arc<subagents::Subagents>,
    /// Models whose server refused `tools` this session (see [`tern_agent_loop::LoopConfig::refused_tools`]).
    refused_tools: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// What an agent's own MCP servers start with, made once.
    server_kit: std::sync::OnceLock<Arc<agent_servers::ServerKit>>,
    /// The session's tools before MCP (a subagent's catalog is made from them).
    builtin_tools: Vec<tern_catalog::Entry>,
    /// What `ask_user` and the plan-mode tools borrow from the running prompt.
    interaction: Arc<interactive::Interaction>,
    /// Commands started with `run_in_background`.
    background: Arc<tern_tools::background::BackgroundTasks>,
    /// Extensions given by an embedding program.
    extensions: Arc<Vec<Arc<dyn extension::Extension>>>,
    /// The prompts running or waiting for the conversation ([`tern_protocol::Command::Interrupt`]).
    running: Arc<apply::Running>,
}

impl Runtime {
    /// Set up a session: [`RuntimeBuilder::new`] then [`RuntimeBuilder::build`].
    pub async fn new(overrides: Overrides) -> Result<Self, RuntimeError> {
        RuntimeBuilder::new(overrides)?.build().await
    }

    /// Hooks the program driving this session registered (the Agent SDK's
    /// `initialize.hooks`), answered by `program`: they run after the
    /// configured hooks, from the next prompt on. A matcher that is not a
    /// regex is an error naming it, and nothing is added.
    pub fn add_hook_callbacks(
        &self,
        hooks: Vec<tern_policy::hooks::CallbackHook>,
        program: Arc<dyn tern_policy::hooks::HookCallbacks>,
    ) -> Result<(), tern_policy::hooks::HooksError> {
        let mut current = self.hook_runner.lock_or_recover();
        let runner = match current.as_deref() {
            Some(runner) => runner.clone(),
            None => HookRunner::new(Default::default(), self.workspace.clone())?,
        };
        *current = Some(Arc::new(runner.with_callbacks(hooks, program)?));
        Ok(())
    }

    /// Where permission questions go (the TUI's prompt). Headless mode
    /// keeps the default, which refuses.
    pub fn set_permission_prompt(&mut self, prompt: Arc<dyn PermissionPrompt>) {
        self.prompt = prompt;
    }

    /// What `--continue` / `--resume` brought back (`None` for a new session).
    pub fn resumed(&self) -> Option<&Resumed> {
        self.resumed.as_ref()
    }

    /// The resumed session's tool-call figures, for the one replay that
    /// shows them; later calls get none. Not held for the whole run: a long
    /// session's edit diffs would stay in memory for nothing.
    pub fn take_resumed_tool_runs(&self) -> std::collections::HashMap<String, tern_protocol::ToolRun> {
        std::mem::take(&mut *self.resumed_tool_runs.lock_or_recover())
    }

    /// Whether the workspace is trusted, and why.
    pub fn trust(&self) -> &trust::Trust {
        &self.trust
    }

    /// How tool subprocesses are confined.
    pub fn sandbox(&self) -> &tern_tools::SandboxSettings {
        &self.sandbox
    }

    /// What is enforced, one line each, for `--verbose` and the TUI: trust,
    /// the sandbox (or why it is weaker than asked), what children do not see.
    pub fn security_summary(&self) -> Vec<String> {
        let mut lines = vec![format!("workspace {}: {}", self.workspace.display(), self.trust.describe())];
        let status = tern_sandbox::support();
        let sandbox = if self.sandbox.mode == tern_protocol::SandboxLevel::Off {
            "sandbox: off (--sandbox off / [sandbox] mode): commands run unconfined".to_string()
        } else if let Some(w) = status.warning() {
            format!("sandbox: {w}")
        } else {
            format!(
                "sandbox: Landlock ABI {}; auto-allowed commands run read-only and offline, approved ones {}{}",
                status.abi,
                self.sandbox.mode.min(tern_protocol::SandboxLevel::WorkspaceWrite),
                if self.sandbox.network_for_approved { " with network" } else { " offline" }
            )
        };
        lines.push(sandbox);
        // What the media CLI's commands get is shown as passed or brokered, not hidden.
        let brokered = |name: &str| self.media_broker.is_some() && media_cli::broker::BROKERED.contains(&name);
        let (passed, hidden): (Vec<String>, Vec<String>) =
            secrets::removed_names(&self.child_env).into_iter().filter(|name| !brokered(name)).partition(|name| {
                self.media.ready() && self.media.env.contains(name) && name != media_cli::broker::KEY_VAR
            });
        if let Some(broker) = &self.media_broker {
            lines.push(broker.summary());
        }
        if !hidden.is_empty() {
            lines.push(format!("not passed to commands, hooks and MCP servers: {}", hidden.join(", ")));
        }
        if !passed.is_empty() {
            lines.push(format!(
                "passed to commands (not hooks or MCP servers) for the media CLI: {}",
                passed.join(", ")
            ));
        }
        let dropped = secrets::dropped_path_entries();
        if !dropped.is_empty() {
            lines.push(format!(
                "PATH entries left out for commands (not absolute, so they would name the repository's own \
                 programs): {}",
                dropped.join(", ")
            ));
        }
        lines
    }

    /// The media CLI as found at start.
    pub fn media_cli(&self) -> &media_cli::MediaCli {
        &self.media
    }

    /// Everything about this session one might ask for, a line each
    /// (`/status`): version, model and where it is served, mode, session
    /// file, instruction files, MCP servers, trust, sandbox, hidden variables.
    pub fn status_lines(&self) -> Vec<String> {
        let info = self.model_info();
        let session = self.session();
        let mut lines = vec![
            format!("tern {}", env!("CARGO_PKG_VERSION")),
            format!(
                "model {} · {} at {} · context window {} tokens",
                self.model(),
                self.provider.name,
                self.provider.base_url,
                info.context_window
            ),
            format!("permission mode {}", self.policy.mode()),
            if session.is_recording() {
                format!("session {} · {}", session.id(), session.path().display())
            } else {
                format!("session {} · not recorded (--no-session)", session.id())
            },
        ];
        let files: Vec<String> = self.instruction_files().iter().map(|f| f.path.display().to_string()).collect();
        lines.push(if files.is_empty() {
            "instruction files: none".into()
        } else {
            format!("instruction files: {}", files.join(", "))
        });
        let servers = self.mcp_servers();
        if servers.is_empty() {
            lines.push("MCP servers: none".into());
        } else {
            for s in servers {
                lines.push(format!("MCP server {}: {} · {} tools", s.name, s.state, s.tool_count));
            }
        }
        lines.extend(self.security_summary());
        lines.push(self.media.summary());
        lines
    }

    /// The mode and every rule with its source, deny first (`/permissions`,
    /// `tern permissions list`).
    pub fn permissions_report(&self) -> String {
        use tern_policy::rules::RuleKind;
        let rules = self.policy.rules();
        let mut text = format!("mode: {}\n", self.policy.mode());
        if rules.is_empty() {
            text.push_str("no rules (add [permissions] allow/ask/deny to config, or --allowed-tools)\n");
        }
        for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
            for r in rules.iter().filter(|r| r.kind == kind) {
                text.push_str(&format!("{:<6} {:<40} {}\n", kind.to_string(), r.text, r.source));
            }
        }
        text
    }

    /// Every rule in force with where it comes from, deny first, then ask, then allow (the permissions picker).
    pub fn permission_rules(&self) -> Vec<permissions::RuleInForce> {
        use tern_policy::rules::RuleKind;
        let file = self.paths.user_config();
        let rules = self.policy.rules();
        [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow]
            .into_iter()
            .flat_map(|kind| rules.iter().filter(move |r| r.kind == kind))
            .map(|r| permissions::RuleInForce {
                kind: r.kind,
                rule: r.text.clone(),
                source: r.source.clone(),
                scope: permissions::scope_of(&r.source, &file, &self.workspace),
            })
            .collect()
    }

    /// `/permissions allow|ask|deny [session|project|user] RULE`: the rule
    /// holds from now on, and is saved for `scope` in the user config
    /// (comments kept); returns the file it was saved in.
    pub(crate) fn add_rule(
        &self,
        kind: tern_policy::rules::RuleKind,
        rule: &str,
        scope: permissions::RuleScope,
    ) -> Result<Option<PathBuf>, RuntimeError> {
        let file = self.paths.user_config();
        let source = permissions::rule_source(&file, &self.workspace, scope);
        let parsed = tern_policy::rules::Rule::parse(rule, kind, &source, self.policy.context())
            .map_err(|e| RuntimeError::Config(format!("`{rule}`: {e}")))?;
        permissions::save_rule(&file, &self.workspace, kind, rule, scope)?;
        self.policy.add_rule(parsed);
        Ok((scope != permissions::RuleScope::Session).then_some(file))
    }

    /// `/permissions remove RULE`: the rule no longer holds, in this session
    /// and in the user config (this project's and the global lists). Returns
    /// where it was removed from. A rule that also comes from a file tern
    /// does not edit (the project config, a flag) is left alone and named in
    /// the error.
    pub(crate) fn remove_rule(&self, rule: &str) -> Result<Vec<String>, RuntimeError> {
        use tern_policy::rules::RuleKind;
        let file = self.paths.user_config();
        let user_source = file.display().to_string();
        let elsewhere: Vec<String> = self
            .policy
            .rules()
            .iter()
            .filter(|r| {
                // Session rules, including those a skill or command added, go; files tern does not edit stay.
                let session = permissions::scope_of(&r.source, &file, &self.workspace) == Some(RuleScope::Session);
                r.text == rule && !session && !r.source.starts_with(&user_source)
            })
            .map(|r| r.source.clone())
            .collect();
        if !elsewhere.is_empty() {
            return Err(RuntimeError::Config(format!(
                "`{rule}` comes from {}: tern edits only your user config; change it there",
                elsewhere.join(", ")
            )));
        }
        let mut removed = permissions::unsave_rule(&file, &self.workspace, rule)?;
        let in_session = [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny]
            .into_iter()
            .map(|kind| self.policy.remove_rules(kind, rule))
            .sum::<usize>();
        if in_session > 0 && removed.is_empty() {
            removed.push("this session".into());
        }
        Ok(removed)
    }

    /// `/permissions move RULE session|project|user`: the same rule, kept
    /// at another scope (removed from the others).
    pub(crate) fn move_rule(
        &self,
        rule: &str,
        to: permissions::RuleScope,
    ) -> Result<(tern_policy::rules::RuleKind, Option<PathBuf>), RuntimeError> {
        let Some(kind) = self.policy.rules().iter().find(|r| r.text == rule).map(|r| r.kind) else {
            return Err(RuntimeError::Config(format!("no rule `{rule}` in force (/permissions lists them)")));
        };
        self.remove_rule(rule)?;
        Ok((kind, self.add_rule(kind, rule, to)?))
    }

    /// The commands started in the background, oldest first (`/tasks`).
    pub fn background_tasks(&self) -> Vec<tern_protocol::TaskSummary> {
        self.background.list()
    }

    /// An image the person attaches outside the prompt's text (a pasted
    /// path, the clipboard): `file` is read wherever it is (the person chose
    /// it), `bytes` taken as they are; refused when the model reads no images.
    pub fn prompt_image(&self, from: ImageFrom<'_>) -> Result<images::PromptImage, images::ImageRefused> {
        let (model, info) = self.current.read_or_recover().clone();
        if !info.image_input {
            return Err(images::ImageRefused::NoImageInput { model });
        }
        match from {
            ImageFrom::File(path) => images::image_from_file(path, None),
            ImageFrom::Bytes(bytes) => images::image_from_bytes(bytes),
        }
    }

    /// Send [`tern_protocol::AgentEvent::BackgroundTask`] to `events` whenever a background
    /// task starts or ends, from now on (a front end's count of running
    /// tasks); one front end watches at a time.
    pub fn watch_background(&self, events: EventSink) {
        self.background.set_listener(Arc::new(move |task| events(tern_protocol::AgentEvent::BackgroundTask { task })));
    }

    /// Something that stops every background command at once (for an exit
    /// that skips [`Runtime::shutdown`], e.g. a second Ctrl+C).
    pub fn background_stopper(&self) -> Arc<dyn Fn() + Send + Sync> {
        let background = self.background.clone();
        Arc::new(move || background.stop_all())
    }

    /// The skills found at start (`tern skills list`, the `/` popup).
    pub fn skills(&self) -> &skills::Skills {
        &self.skills
    }

    /// The custom slash commands found at start.
    pub fn commands(&self) -> &commands::Commands {
        &self.commands
    }

    /// `text` as `/NAME args` naming a custom command or a skill (None
    /// otherwise); [`Runtime::apply`] runs it.
    pub(crate) fn invocation(&self, text: &str) -> Option<Result<commands::Invocation, skills::SkillError>> {
        commands::invocation(text, &self.commands, &self.skills).or_else(|| {
            // `/mcp__server__prompt args`: a connected server's prompt, fetched when the prompt runs.
            let specs: Vec<commands::McpPromptSpec> = self
                .mcp
                .as_ref()
                .map(|m| m.prompts())
                .unwrap_or_default()
                .into_iter()
                .map(|p| commands::McpPromptSpec {
                    command: p.command,
                    server: p.server,
                    prompt: p.name,
                    arguments: p.arguments,
                })
                .collect();
            commands::mcp_prompt_invocation(text, &specs)
        })
    }

    /// Every `/NAME` a prompt may start with besides the front end's own:
    /// custom commands, skills, and the connected MCP servers' prompts.
    pub fn slash_commands(&self) -> Vec<tern_protocol::SlashCommand> {
        use tern_protocol::{SlashCommand, SlashKind};
        let commands = self.commands.list.iter().map(|c| SlashCommand {
            name: c.name.clone(),
            description: c.description.clone(),
            argument_hint: c.argument_hint.clone(),
            kind: SlashKind::Command,
        });
        let skills = self.skills.list.iter().map(|s| SlashCommand {
            name: s.name.clone(),
            description: s.description.clone(),
            argument_hint: None,
            kind: SlashKind::Skill,
        });
        let prompts = self.mcp.as_ref().map(|m| m.prompts()).unwrap_or_default().into_iter().map(|p| {
            let hint =
                p.arguments.iter().map(|(a, required)| if *required { format!("<{a}>") } else { format!("[{a}]") });
            let hint: Vec<String> = hint.collect();
            SlashCommand {
                name: p.command,
                description: p.description,
                argument_hint: (!hint.is_empty()).then(|| hint.join(" ")),
                kind: SlashKind::McpPrompt,
            }
        });
        commands.chain(skills).chain(prompts).collect()
    }

    /// The permission policy (mode, rules, decisions).
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The model's context window and prices.
    pub fn model_info(&self) -> ModelInfo {
        self.current.read_or_recover().1.clone()
    }

    /// Estimated cost of one response.
    pub fn cost_of(&self, usage: &tern_protocol::Usage) -> f64 {
        self.model_info().cost_usd(usage)
    }

    /// Estimated cost of one response of `model` (a custom subagent's own);
    /// empty: this session's model.
    pub fn cost_of_model(&self, usage: &tern_protocol::Usage, model: &str) -> f64 {
        let current = self.model_info();
        if model.is_empty() || model == self.model() {
            return current.cost_usd(usage);
        }
        setup::price_for(&self.config.models, model, &current).cost_usd(usage)
    }

    /// Use another model of the same provider from the next turn on. An
    /// unknown model is used with default limits; the returned warning says so.
    pub(crate) fn set_model(&self, name: &str) -> Result<Option<String>, RuntimeError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(RuntimeError::Config("no model name given".into()));
        }
        let name = tern_llm::claude_alias(name, self.provider.api).unwrap_or(name);
        let (info, warning) = setup::lookup_model(&self.config, name)?;
        // A model the table places with another provider would be sent to the wrong API.
        if let Some(other) = info.provider.as_deref()
            && warning.is_none()
            && tern_llm::provider_family(other) != tern_llm::provider_family(&self.provider.name)
        {
            let choices: Vec<String> = self.model_choices().into_iter().map(|(n, _)| n).collect();
            return Err(RuntimeError::Config(format!(
                "`{name}` is a model of {other}; this session talks to {} at {}. Start tern with `--provider {other}` \
                 to use it, or choose one of: {}",
                self.provider.name,
                self.provider.base_url,
                choices.join(", ")
            )));
        }
        self.catalog.set_model(name, &info);
        *self.current.write_or_recover() = (name.to_string(), info);
        let session = self.session();
        session.write(&SessionRecord::ModelChanged { model: name.to_string() });
        session.sync();
        Ok(warning)
    }

    /// The listed models of this session's provider, with their facts (`/model`).
    pub fn model_choices(&self) -> Vec<(String, ModelInfo)> {
        tern_llm::ModelTable::bundled()
            .with_overrides(&self.config.models)
            .map(|t| t.models_of(&self.provider.name))
            .unwrap_or_default()
    }

    /// The models of [`Runtime::model_choices`], each with what the
    /// pickers say of it: `200k context · $3.00 in / $15.00 out per Mtok`.
    pub fn model_menu(&self) -> Vec<(String, String)> {
        self.model_choices()
            .into_iter()
            .map(|(name, info)| {
                let price = if info.input_per_mtok > 0.0 {
                    format!("${:.2} in / ${:.2} out per Mtok", info.input_per_mtok, info.output_per_mtok)
                } else {
                    "no price".into()
                };
                (name, format!("{}k context · {price}", info.context_window / 1000))
            })
            .collect()
    }

    /// Forget the conversation (the next prompt starts afresh; the session
    /// log keeps everything).
    pub(crate) async fn clear_history(&self) {
        let mut history = self.history.lock().await;
        history.clear();
        // The conversation cannot be rewound to before a clear (files still can).
        self.compactions.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.todos.lock_or_recover().clear();
        self.session().write(&SessionRecord::HistoryCleared);
    }

    /// Warnings found while setting up (unknown model, ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What setup left for the person, as every front end shows it: the
    /// config's warnings, what resuming repaired, MCP servers that failed
    /// (warnings), and servers still starting (a note).
    pub fn startup_notices(&self) -> Vec<tern_protocol::StartupNotice> {
        let warn = |message: String| tern_protocol::StartupNotice { warning: true, message };
        let mut out: Vec<_> = self.warnings.iter().map(|w| warn(format!("warning: {w}"))).collect();
        out.extend(self.resumed().iter().flat_map(|r| &r.notices).map(|n| warn(format!("warning: {n}"))));
        for s in self.mcp_servers() {
            match s.state {
                McpState::Failed => {
                    out.push(warn(format!("warning: MCP server `{}` failed: {}", s.name, s.detail.unwrap_or_default())))
                }
                McpState::Starting => out.push(tern_protocol::StartupNotice {
                    warning: false,
                    message: format!(
                        "note: MCP server `{}` is still starting; its tools join when it is ready",
                        s.name
                    ),
                }),
                _ => {}
            }
        }
        out
    }

    /// The model name.
    pub fn model(&self) -> String {
        self.current.read_or_recover().0.clone()
    }

    /// The provider name.
    pub fn provider_name(&self) -> &str {
        &self.provider.name
    }

    /// The model this run was started with (`--model`, the config, the
    /// provider's default), whatever `/model` chose since.
    pub fn configured_model(&self) -> String {
        self.provider.model.clone()
    }

    /// The agents a `task` call may name: the built-in roles, then the
    /// profiles found (user, and project in a trusted folder).
    pub fn agent_names(&self) -> Vec<String> {
        let mut names: Vec<String> = SubagentRole::ALL.iter().map(|r| r.as_str().to_string()).collect();
        names.extend(self.agent_summaries().into_iter().map(|(name, _)| name));
        names
    }

    /// [`Runtime::agent_names`], each with what it is for (the built-in
    /// roles' own words; a custom agent's `description:`).
    pub fn agents(&self) -> Vec<(String, String)> {
        let roles = SubagentRole::ALL.iter().map(|r| {
            let about = match r {
                SubagentRole::Explore => "Reads and searches to answer a question; changes nothing",
                SubagentRole::Worker => "Does a bounded piece of work: changes files, runs commands",
                SubagentRole::Verifier => "Checks work by reading and running tests; asks before changing anything",
            };
            (r.as_str().to_string(), about.to_string())
        });
        let custom = self.agent_summaries().into_iter().map(|(n, d)| (n, d.unwrap_or_default()));
        roles.chain(custom).collect()
    }

    /// The custom agents a `task` call may name, each with its description:
    /// those the driving program defined, then the profiles found.
    fn agent_summaries(&self) -> Vec<(String, Option<String>)> {
        let mut found: Vec<(String, Option<String>)> =
            self.defined_agents.lock_or_recover().iter().map(|a| (a.name.clone(), a.description.clone())).collect();
        // Read once, at first need (each prompt's system prompt lists them): found at start,
        // as skills and commands are, so the prompt's bytes stay the same for caching.
        let files = self.agent_files.get_or_init(|| {
            agents::agent_summaries(&self.folders, &self.paths.config_dir, self.policy.context().home.as_deref())
        });
        for (name, description) in files.iter().cloned() {
            if !found.iter().any(|(n, _)| *n == name) {
                found.push((name, description));
            }
        }
        found
    }

    /// Agents the program driving the session defines (the Agent SDK's
    /// `agents`), for `task` calls from the next prompt on; one of the same
    /// name replaces the earlier one.
    pub fn define_agents(&self, defined: Vec<AgentProfile>) {
        let mut agents = self.defined_agents.lock_or_recover();
        for agent in defined {
            agents.retain(|a| a.name != agent.name);
            agents.push(agent);
        }
    }

    /// Where the provider key came from: its environment variable's name,
    /// `config`, or `none`.
    pub fn api_key_source(&self) -> &str {
        &self.provider.key_source
    }

    /// The provider's base URL.
    pub fn provider_base_url(&self) -> &str {
        &self.provider.base_url
    }

    /// The workspace root.
    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// The session file in use.
    pub fn session(&self) -> Arc<Session> {
        self.session.read_or_recover().clone()
    }

    /// Name the session (`/rename`): recorded, shown by `tern sessions list` and the picker.
    pub(crate) fn rename(&self, title: &str, which: Option<&str>) -> Result<(), RuntimeError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(RuntimeError::Config("give the session a name: /rename NAME".into()));
        }
        let session = self.session();
        // Another session: named in its own file, which this one never writes to otherwise.
        if let Some(id) = which.filter(|id| *id != session.id()) {
            return session_index::rename(&self.paths.sessions_dir(), id, title).map_err(Into::into);
        }
        session.write(&SessionRecord::Renamed { title: title.to_string() });
        session.sync();
        Ok(())
    }

    /// The conversation so far as Markdown.
    pub async fn export_markdown(&self) -> String {
        let messages = self.history.lock().await.clone();
        let session = self.session();
        session_export::markdown(session.header(), session.title().as_deref(), &messages)
    }

    /// Write the conversation as Markdown to `file` (relative to the
    /// workspace; default `tern-session-ID.md`), whole or not at all (`/export`).
    pub(crate) async fn export_to(&self, file: &str) -> Result<PathBuf, RuntimeError> {
        let text = self.export_markdown().await;
        let name = if file.trim().is_empty() {
            format!("tern-session-{}.md", self.session().id())
        } else {
            file.trim().to_string()
        };
        let path = tern_tools::real_path(&self.workspace, &name);
        tern_tools::write_atomic(&path, text.as_bytes())
            .map_err(|e| RuntimeError::Io(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }

    /// Go on in a new session file that starts with this one's conversation
    /// (`/fork`); this file is left as it is. Returns the new id.
    pub(crate) async fn fork(&self) -> Result<String, RuntimeError> {
        let _history = self.history.lock().await;
        let current = self.session();
        if !current.is_recording() {
            return Err(RuntimeError::Config(
                "this session is not being recorded (--no-session); nothing to fork".into(),
            ));
        }
        current.sync();
        // A fork is made from the file: what it lacks would be missing from the fork.
        if let Some(why) = current.unsaved() {
            return Err(RuntimeError::Io(format!("cannot fork while the session file is behind: {why}")));
        }
        let loaded = session::LoadedSession::load(current.path())?;
        let start = session::SessionStart {
            cwd: self.workspace.display().to_string(),
            git_branch: prompt::git_branch(&self.workspace),
            provider: self.provider.name.clone(),
            model: self.model(),
        };
        let forked = Arc::new(Session::fork(&self.paths.sessions_dir(), &loaded, start)?);
        forked.set_title(current.title());
        forked.sync();
        let id = forked.id().to_string();
        *self.checkpoints.lock_or_recover() = Arc::new(checkpoints::Checkpoints::open(forked.dir(), &self.workspace));
        *self.session.write_or_recover() = forked;
        Ok(id)
    }

    /// Switch to an earlier session of this folder (`/resume ID`): its
    /// conversation replaces this one, and new entries go to its file.
    pub(crate) async fn resume(&self, which: &Resume) -> Result<Resumed, RuntimeError> {
        let mut history = self.history.lock().await;
        let path = session_index::find(&self.paths.sessions_dir(), &self.workspace, which)?;
        let current = self.session();
        // Under --no-session nothing is written, to the resumed file either.
        let how = if current.is_recording() { startup::Reopen::Append } else { startup::Reopen::Ephemeral };
        let (session, resumed, messages) =
            startup::resume_from(&path, &self.workspace, &self.paths.sessions_dir(), how)?;
        current.sync();
        // Moved, not copied: front ends replay from the history.
        *history = messages;
        // What the resumed conversation had loaded behind tool_search, loaded again.
        let names: Vec<String> = self.skills.list.iter().map(|s| s.name.clone()).collect();
        self.catalog.restore_loaded(&history, &resumed.tool_runs, &names);
        *self.todos.lock_or_recover() = resumed.todos.clone();
        *self.usage.lock_or_recover() = resumed.usage;
        self.compactions.store(resumed.compactions, std::sync::atomic::Ordering::SeqCst);
        *self.checkpoints.lock_or_recover() = Arc::new(checkpoints::Checkpoints::open(session.dir(), &self.workspace));
        *self.session.write_or_recover() = Arc::new(session);
        if self.overrides.model.is_none()
            && let Some(model) = &resumed.model
            && *model != self.model()
        {
            self.set_model(model)?;
        }
        let mut resumed = resumed;
        resumed.notices.extend(self.over_window_notice(compaction::estimate_tokens(&history)));
        Ok(resumed)
    }

    /// This folder's sessions that can be resumed, last written first (for `/resume`).
    pub fn sessions(&self) -> Vec<session_index::SessionSummary> {
        session_index::resumable(&self.paths.sessions_dir(), Some(&self.workspace))
    }

    /// Every folder's sessions that can be resumed, last written first (the resume picker's "all").
    pub fn sessions_everywhere(&self) -> Vec<session_index::SessionSummary> {
        session_index::resumable(&self.paths.sessions_dir(), None)
    }

    /// Where sessions are kept (the resume picker renames and previews there).
    pub fn sessions_dir(&self) -> PathBuf {
        self.paths.sessions_dir()
    }

    /// The tools the next request carries, in order.
    pub fn tools(&self) -> Vec<RuntimeTool> {
        self.catalog.assemble().tools
    }

    /// The catalog with every decision (what `tern tools --explain` shows).
    pub fn assemble_catalog(&self) -> Assembly {
        self.catalog.assemble()
    }

    /// The per-turn catalog.
    pub fn catalog(&self) -> &Arc<TurnCatalog> {
        &self.catalog
    }

    /// Wait until every MCP server finished starting (a session starts
    /// after [`MCP_READY_WAIT`] at most; inspection commands wait for all).
    pub async fn mcp_ready(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.ready().await;
        }
    }

    /// [`Command::ReconnectMcp`] (`on`) and [`Command::SetMcpEnabled`]: the
    /// server after.
    pub(crate) async fn mcp_switch(&self, server: String, on: bool) -> Result<apply::Outcome, apply::CommandError> {
        let known = || self.servers.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        let Some(mcp) = &self.mcp else {
            return Err(apply::CommandError::NoMcpServer { server, known: known() });
        };
        if mcp.set_enabled(&server, on).await.is_none() {
            return Err(apply::CommandError::NoMcpServer { server, known: known() });
        }
        let report = self.mcp_servers().into_iter().find(|s| s.name == server);
        report.map(apply::Outcome::McpServer).ok_or(apply::CommandError::NoMcpServer { server, known: known() })
    }

    /// Every configured MCP server and where it stands: connected, failed (and
    /// why), disabled or denied.
    pub fn mcp_servers(&self) -> Vec<McpServerReport> {
        let live = self.mcp.as_ref().map(|m| m.statuses()).unwrap_or_default();
        self.servers
            .iter()
            .map(|s| {
                let status = live.iter().find(|l| l.name == s.name);
                let (state, detail) = match (&s.config, &s.denied, status) {
                    (Err(e), _, _) => (McpState::Failed, Some(e.to_string())),
                    (_, Some(why), _) => (McpState::Denied, Some(why.clone())),
                    (Ok(c), None, _) if !c.enabled => (McpState::Disabled, None),
                    (Ok(_), None, Some(st)) => match &st.state {
                        ServerState::Starting => (McpState::Starting, None),
                        ServerState::Connected => (McpState::Connected, None),
                        ServerState::Failed(e) => (McpState::Failed, Some(e.clone())),
                        ServerState::Disabled => (McpState::Disabled, None),
                    },
                    (Ok(_), None, None) => (McpState::NotStarted, None),
                };
                McpServerReport {
                    name: s.name.clone(),
                    origin: s.origin.clone(),
                    state,
                    detail,
                    tool_count: status.map_or(0, |st| st.tool_count),
                    transport: status.map(|st| st.transport.clone()).unwrap_or_default(),
                }
            })
            .collect()
    }

    /// Stop every MCP server.
    pub async fn shutdown(&self) {
        // Nothing started in the background outlives the session.
        self.background.stop_all();
        // Background subagents end on their stop; what they used still
        // counts in the session's totals.
        self.background.wait_ended(std::time::Duration::from_secs(2)).await;
        let children = self.subagents.end();
        if !children.responses.is_empty() {
            self.record_child_usage(&children);
        }
        // The media token dies with the session: after everything that could
        // still run a command has ended, and for good (a late command gets none).
        if let Some(broker) = &self.media_broker {
            broker.revoke();
        }
        self.session().sync();
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
    }

    /// The instruction file names (`[context] files`, default AGENTS.md, CLAUDE.md).
    pub fn context_names(&self) -> Vec<String> {
        self.config
            .context
            .files
            .clone()
            .unwrap_or_else(|| prompt::DEFAULT_CONTEXT_NAMES.iter().map(|s| s.to_string()).collect())
    }

    /// The instruction files read into the system prompt, in order.
    pub fn instruction_files(&self) -> Vec<prompt::InstructionFile> {
        prompt::instruction_files(&self.workspace, &self.paths.config_dir, &self.context_names())
    }

    /// The session's tokens and estimated cost so far.
    pub fn session_usage(&self) -> (tern_protocol::UsageTotals, f64) {
        *self.usage.lock_or_recover()
    }

    /// `/config KEY VALUE`: keep a setting in the user config (comments and
    /// the rest kept). Keys: `theme`, `notify`, `title`, `print_on_exit`,
    /// `vim`, `fullscreen` (`[tui]`) and `mode` (the permission mode new sessions start in; not
    /// `bypass`, which only a flag or an edit of the file may choose).
    pub(crate) fn set_setting(&self, key: &str, value: &str) -> Result<PathBuf, RuntimeError> {
        let file = self.paths.user_config();
        let bad = |allowed: &str| RuntimeError::Config(format!("`{key}` takes {allowed}, not `{value}`"));
        match key {
            "theme" if ["auto", "dark", "light", "high-contrast", "colorblind"].contains(&value) => {
                config::set_value(&file, &["tui", "theme"], value)
            }
            "theme" => return Err(bad("auto, dark, light, high-contrast or colorblind")),
            "notify" if ["auto", "bell", "osc9", "never"].contains(&value) => {
                config::set_value(&file, &["tui", "notify"], value)
            }
            "notify" => return Err(bad("auto, bell, osc9 or never")),
            "notify_after_secs" => match value.parse::<u32>() {
                Ok(secs) => config::set_value(&file, &["tui", key], i64::from(secs)),
                Err(_) => return Err(bad("a number of seconds")),
            },
            "print_on_exit" if ["none", "last", "all"].contains(&value) => {
                config::set_value(&file, &["tui", "print_on_exit"], value)
            }
            "print_on_exit" => return Err(bad("none, last or all")),
            "title" | "vim" | "fullscreen" => match value {
                "true" | "on" => config::set_value(&file, &["tui", key], true),
                "false" | "off" => config::set_value(&file, &["tui", key], false),
                _ => return Err(bad("true or false")),
            },
            // The words every front end takes for a mode (Claude's too), written as tern's.
            "mode" => match value.parse::<Mode>() {
                Ok(Mode::Bypass) => {
                    return Err(RuntimeError::Config(
                        "`mode` is never bypass here: bypass only by --permission-mode or the file".into(),
                    ));
                }
                Err(_) => return Err(bad("default, accept-edits, plan or dont-ask")),
                Ok(mode) => config::set_value(&file, &["permissions", "mode"], mode.as_str()),
            },
            _ => {
                return Err(RuntimeError::Config(format!(
                    "no setting `{key}`: theme, notify, notify_after_secs, title, print_on_exit, vim, fullscreen, mode"
                )));
            }
        }?;
        Ok(file)
    }

    /// The user config file.
    pub fn user_config_path(&self) -> PathBuf {
        self.paths.user_config()
    }

    /// The permission mode the config sets for new sessions, if any.
    pub fn configured_mode(&self) -> Option<String> {
        self.config.permissions.mode.clone()
    }

    /// The `[tui]` settings.
    pub fn tui_settings(&self) -> &config::TuiSection {
        &self.config.tui
    }

    /// The checkpoints of the session in use.
    pub fn checkpoints(&self) -> Arc<checkpoints::Checkpoints> {
        self.checkpoints.lock_or_recover().clone()
    }

    /// The conversation as it stands (a copy; to go through it once, e.g.
    /// to replay it, use [`Runtime::with_conversation`]).
    pub async fn conversation(&self) -> Vec<Message> {
        self.history.lock().await.clone()
    }

    /// Go through the conversation in place: how front ends replay a resumed
    /// session without a second copy of it. No turn starts while `f` runs.
    pub async fn with_conversation<R>(&self, f: impl FnOnce(&[Message]) -> R) -> R {
        f(&self.history.lock().await)
    }

    /// `/rewind`: put the files (`code`) and/or the conversation back as
    /// they were before prompt `number`. Files changed by someone else
    /// since are left alone unless `force`. Returns what the files did and
    /// the prompt, for the composer.
    pub(crate) async fn rewind(
        &self,
        number: usize,
        code: bool,
        conversation: bool,
        force: bool,
    ) -> Result<(checkpoints::Restored, String), RuntimeError> {
        let mut history = self.history.lock().await;
        let cps = self.checkpoints();
        let turns = cps.turns();
        let turn = turns
            .get(number.wrapping_sub(1))
            .ok_or_else(|| RuntimeError::Io(format!("no prompt {number} to go back to (/rewind lists them)")))?;
        let point = cps.conversation_point(number);
        if conversation {
            let compactions = point.as_ref().map(|p| p.2).ok_or_else(no_point)?;
            if compactions != self.compactions.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(RuntimeError::Io(
                    "the conversation was compacted or cleared after that prompt, so it cannot go back there; the files can \
                     (`/rewind N code`)"
                        .into(),
                ));
            }
        }
        // A checkpoint that is not there is said, not acted on: nothing changes unless forced.
        let missing = if code && !force { cps.missing(number) } else { Vec::new() };
        if !missing.is_empty() {
            let files: Vec<String> = missing
                .iter()
                .map(|(path, why)| {
                    let shown = path.strip_prefix(&self.workspace).unwrap_or(path);
                    format!("{} ({why})", shown.display())
                })
                .collect();
            return Err(RuntimeError::Io(format!(
                "the checkpoint of prompt {number} is missing for {}; nothing was changed. `/rewind {number} code force` \
                 puts back the files that were kept, `/rewind {number} conversation` goes back in the conversation alone",
                files.join(", ")
            )));
        }
        let restored = if code { cps.restore(number, force) } else { checkpoints::Restored::default() };
        if conversation && let Some((parent, len, _)) = point {
            history.truncate(len);
            let session = self.session();
            session.set_leaf(parent);
            session.write(&SessionRecord::Rewound { prompt: number });
            session.sync();
            cps.drop_from(number);
        }
        Ok((restored, turn.prompt.clone()))
    }

    /// Prompts typed in this folder in earlier sessions, oldest first (Up and Ctrl+R in the TUI).
    pub fn prompt_history(&self) -> Vec<String> {
        tern_store::history::load(&self.paths.data_dir, &self.workspace)
    }

    /// Keep a prompt typed in the TUI for later sessions (not secrets, not long pastes).
    pub fn remember_prompt(&self, text: &str) {
        tern_store::history::append(&self.paths.data_dir, &self.workspace, text);
    }

    /// The todo list as last written.
    pub fn todos(&self) -> Vec<tern_protocol::TodoItem> {
        self.todos.lock_or_recover().clone()
    }

    /// The system prompt for this session.
    pub fn system_prompt(&self) -> String {
        // A blank one (SDKs pass `--system-prompt ""` by default) keeps tern's own.
        let base = self.overrides.system_prompt.as_deref().filter(|p| !p.trim().is_empty());
        let waiting = self.catalog.assemble().deferred_builtins_notice();
        prompt::with_tools(base, waiting.as_deref(), &self.prompt_parts(true).read())
    }

    /// What a system prompt says after its tools, to be read when needed.
    /// `main`: for the session's own agent (its agent file's body joins); a
    /// subagent gets the rest.
    pub(crate) fn prompt_parts(&self, main: bool) -> prompt::ContextParts {
        let agent = self.agent.as_ref().filter(|a| main && !a.body.trim().is_empty()).map(|a| {
            format!("# Agent: {}\nYou are running as this agent. Its instructions:\n\n{}", a.name, a.body.trim())
        });
        let media = self.media.ready().then(|| {
            "The media CLI `mmx` is installed: for image, video, speech or music requests, load the `media-tools` \
             skill and use `mmx` through bash."
                .to_string()
        });
        // The model learns the custom agents' names here (the `task` tool's own text stays the same for caching).
        let summaries = self.agent_summaries();
        let custom = (!summaries.is_empty()).then(|| {
            let mut block = String::from("# Custom agents\nThe `task` tool's subagent_type also takes these:\n");
            for (name, description) in summaries {
                let description = description.map(|d| format!(": {}", d.trim())).unwrap_or_default();
                block.push_str(&format!("- {name}{description}\n"));
            }
            block
        });
        let final_answer =
            self.structured.as_ref().filter(|_| main).map(|_| structured_output::INSTRUCTION.to_string());
        let append = [
            custom,
            self.config.append_system_prompt.clone(),
            agent,
            self.overrides.append_system_prompt.clone(),
            media,
            final_answer,
        ];
        prompt::ContextParts {
            workspace: self.workspace.clone(),
            config_dir: self.paths.config_dir.clone(),
            append: append.into_iter().flatten().collect(),
            context_names: self.context_names(),
            skills: self.skills.prompt_block(),
        }
    }
}

/// How long a session waits for its MCP servers before the first request:
/// one still starting then joins when it is ready (from the next request
/// after that), so a slow server never holds up the prompt by its whole
/// startup timeout.
pub const MCP_READY_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Where an MCP server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McpState {
    /// Started and listed its tools.
    Connected,
    /// Could not start, or its configuration is wrong (`detail` says why).
    Failed,
    /// `enabled = false`.
    Disabled,
    /// Refused by `[mcp] allowed_servers` / `denied_servers`.
    Denied,
    /// Configured but not started (`--no-mcp`-like runs).
    #[serde(rename = "not started")]
    NotStarted,
    /// Still starting: its tools join from the next request after it is ready.
    Starting,
}

impl McpState {
    /// The word lists and tables show.
    pub fn as_str(self) -> &'static str {
        match self {
            McpState::Connected => "connected",
            McpState::Failed => "failed",
            McpState::Disabled => "disabled",
            McpState::Denied => "denied",
            McpState::NotStarted => "not started",
            McpState::Starting => "starting",
        }
    }
}

impl std::fmt::Display for McpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One MCP server as `tern mcp list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct McpServerReport {
    /// Server name.
    pub name: String,
    /// The file that configured it.
    pub origin: String,
    /// Connected, failed, disabled, denied or not started.
    pub state: McpState,
    /// Why it failed or is denied.
    pub detail: Option<String>,
    /// Tools it offers.
    pub tool_count: usize,
    /// How it is reached.
    pub transport: String,
}

/// Built-ins the person named in `--tools` (a named one is never deferred).
fn named_builtins(overrides: &Overrides) -> std::collections::BTreeSet<String> {
    overrides.tools.as_deref().map(startup::tools_named).unwrap_or_default().into_iter().collect()
}

/// The media CLI for `loaded`'s config, found now.
fn media_for(loaded: &startup::Loaded) -> media_cli::MediaCli {
    media_cli::detect_here(&loaded.paths.data_dir, loaded.config.media_cli.enabled.unwrap_or(true))
}

/// The facts the catalog decides on, from config, flags and the model.
fn turn_facts(
    config: &FileConfig,
    overrides: &Overrides,
    provider: &ResolvedProvider,
    info: &ModelInfo,
    agent: Option<&AgentProfile>,
    statuses: &[ServerStatus],
) -> Result<TurnFacts, RuntimeError> {
    let role_name = overrides.role.clone().or_else(|| agent.and_then(|a| a.role.clone()));
    let role = match role_name.as_deref().map(str::parse::<SubagentRole>).transpose() {
        Ok(role) => role,
        Err(e) => return Err(RuntimeError::Config(e.to_string())),
    };
    let kind = if overrides.role.is_some() { AgentKind::Subagent } else { AgentKind::Main { authoritative: true } };
    let mut excluded = config.exclude_tools.clone();
    excluded.extend(overrides.disallowed_tools.iter().cloned());
    let d = &config.tool_disclosure;
    let mut unavailable = std::collections::BTreeMap::new();
    if !std::path::Path::new("/bin/sh").exists() && cfg!(unix) {
        unavailable.insert("bash".to_string(), "no /bin/sh on this system".to_string());
    }
    Ok(TurnFacts {
        model: ModelFacts {
            name: provider.model.clone(),
            context_window: info.context_window,
            supports_tools: true,
            image_input: info.image_input,
            web_search_unavailable: web_search::unavailable(provider.api, &provider.base_url, &config.web_search),
        },
        front_end: overrides.front_end.unwrap_or(FrontEnd::Headless),
        agent: AgentFacts {
            name: agent.map(|a| a.name.clone()),
            kind,
            role,
            tools: agent.map(|a| a.tools.clone()).unwrap_or_default(),
            disallowed_tools: agent.map(|a| a.disallowed_tools.clone()).unwrap_or_default(),
            plan_mode: false,
        },
        platform: PlatformFacts { os: std::env::consts::OS.to_string(), unavailable },
        config: CatalogConfig {
            excluded,
            mcp_allow: agent.and_then(|a| a.mcp_servers.clone()),
            mcp_deny: Vec::new(),
            always_load_servers: TurnCatalog::always_load(statuses),
            disclosure: DisclosureConfig {
                enabled: d.enabled.unwrap_or(true),
                eligible_models: d.eligible_models.clone(),
                min_defer_count: d.min_defer_count.unwrap_or(1),
                threshold_pct: d.threshold_pct.unwrap_or(0.15),
                defer_builtins: d.defer_builtins.unwrap_or(true),
            },
            inline_builtins: named_builtins(overrides),
        },
        activated: Vec::new(),
    })
}
