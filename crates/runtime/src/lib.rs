//! tern's runtime: configuration, provider setup, the system prompt, the
//! session log, and one [`Runtime::run_prompt`] that wires a turn together.
//! Both front ends (the TUI and headless `tern -p`) stand on it, so nothing
//! here prints or renders: results and events go to the caller.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tern_runtime::RuntimeError> {
//! let rt = tern_runtime::Runtime::new(tern_runtime::Overrides::default())?;
//! let events: tern_agent_loop::EventSink = std::sync::Arc::new(|_| {});
//! let report = rt.run_prompt("list the files", &events, &Default::default()).await;
//! println!("{}", report.outcome.final_text);
//! # Ok(()) }
//! ```

pub mod config;
pub mod prompt;
mod session;
mod setup;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tern_agent_loop::{AgentLoop, EventSink, LoopConfig, NoHooks, RunOutcome, RuntimeTool};
use tern_llm::ModelInfo;
use tern_protocol::Message;
use tokio_util::sync::CancellationToken;

pub use config::{FileConfig, TernPaths};
pub use session::Session;
pub use setup::ResolvedProvider;

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
    /// `--cwd` (default: the current directory).
    pub cwd: Option<PathBuf>,
}

/// What a run produced, with cost and timing.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The loop's outcome.
    pub outcome: RunOutcome,
    /// Estimated cost in USD from the model table.
    pub cost_usd: f64,
    /// Wall time of the run.
    pub duration_ms: u64,
}

/// A configured runtime for one session.
pub struct Runtime {
    workspace: PathBuf,
    paths: TernPaths,
    provider: ResolvedProvider,
    model_info: ModelInfo,
    tools: Vec<RuntimeTool>,
    session: Arc<Session>,
    config: FileConfig,
    overrides: Overrides,
    warnings: Vec<String>,
}

impl Runtime {
    /// Load config (user, project, flags), set up the provider and tools,
    /// and open a new session log.
    pub fn new(overrides: Overrides) -> Result<Self, RuntimeError> {
        let cwd = match &overrides.cwd {
            Some(c) => c.clone(),
            None => std::env::current_dir()
                .map_err(|e| RuntimeError::Io(format!("cannot read the current directory: {e}")))?,
        };
        let workspace =
            std::fs::canonicalize(&cwd).map_err(|e| RuntimeError::Config(format!("--cwd {}: {e}", cwd.display())))?;
        if !workspace.is_dir() {
            return Err(RuntimeError::Config(format!("--cwd {} is not a directory", workspace.display())));
        }
        let paths = TernPaths::discover()?;
        let config =
            FileConfig::load(&paths.user_config())?.merge(FileConfig::load(&config::project_config(&workspace))?);
        let mut warnings = Vec::new();
        let (provider, model_info) = setup::resolve(&config, &overrides, &mut warnings)?;
        let session = Session::create(
            &paths.sessions_dir(),
            json!({"cwd": workspace.display().to_string(), "provider": provider.name, "model": provider.model,
                   "version": env!("CARGO_PKG_VERSION")}),
        )?;
        let mut env = tern_tools::ToolEnv::new(workspace.clone(), session.tool_outputs_dir());
        env.image_input = model_info.image_input;
        let tools = tern_tools::builtin_tools(Arc::new(env));
        Ok(Self {
            workspace,
            paths,
            provider,
            model_info,
            tools,
            session: Arc::new(session),
            config,
            overrides,
            warnings,
        })
    }

    /// Warnings found while setting up (unknown model, ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.provider.model
    }

    /// The provider name.
    pub fn provider_name(&self) -> &str {
        &self.provider.name
    }

    /// The workspace root.
    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The tools offered, in order.
    pub fn tools(&self) -> &[RuntimeTool] {
        &self.tools
    }

    /// The system prompt for this session.
    pub fn system_prompt(&self) -> String {
        let defs: Vec<_> = self.tools.iter().map(|t| t.definition.clone()).collect();
        let append = [self.config.append_system_prompt.clone(), self.overrides.append_system_prompt.clone()];
        prompt::system_prompt(&prompt::PromptInputs {
            workspace: &self.workspace,
            tools: &defs,
            config_dir: &self.paths.config_dir,
            date: prompt::today_utc(),
            append: append.into_iter().flatten().collect(),
        })
    }

    /// Run one prompt to the end. Events go to `events` and to the session log.
    pub async fn run_prompt(&self, prompt: &str, events: &EventSink, cancel: &CancellationToken) -> RunReport {
        let started = Instant::now();
        let max_tokens = self.config.max_tokens.unwrap_or(self.model_info.max_output.min(32_000));
        let loop_config = LoopConfig {
            model: self.provider.model.clone(),
            system: self.system_prompt(),
            max_tokens,
            max_turns: self.overrides.max_turns.or(self.config.max_turns),
            thinking_budget: self.config.thinking_budget,
        };
        let agent = AgentLoop::new(self.provider.client.clone(), self.tools.clone(), Arc::new(NoHooks), loop_config);
        let session = self.session.clone();
        let outer = events.clone();
        let sink: EventSink = Arc::new(move |e| {
            let todos = todo_update(&e);
            session.record(&e);
            outer(e);
            if let Some(todos) = todos {
                session.record(&todos);
                outer(todos);
            }
        });
        self.session.append(&json!({"type": "user_message", "message": Message::user_text(prompt)}));
        let mut history = vec![Message::user_text(prompt)];
        let outcome = agent.run(&mut history, &sink, cancel).await;
        let cost_usd = outcome.responses.iter().map(|u| self.model_info.cost_usd(u)).sum();
        RunReport { outcome, cost_usd, duration_ms: started.elapsed().as_millis() as u64 }
    }
}

/// A successful `todo_write` becomes a `todo_update` event carrying the list.
fn todo_update(e: &tern_protocol::AgentEvent) -> Option<tern_protocol::AgentEvent> {
    match e {
        tern_protocol::AgentEvent::ToolExecutionEnd { name, is_error: false, details: Some(d), .. }
            if name == "todo_write" =>
        {
            let todos = serde_json::from_value(d.get("todos")?.clone()).ok()?;
            Some(tern_protocol::AgentEvent::TodoUpdate { todos })
        }
        _ => None,
    }
}
