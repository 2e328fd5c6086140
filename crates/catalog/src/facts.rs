//! What the catalog is told about a turn: the model, the front end, the
//! agent, the platform, the configuration and what `tool_search` activated.
//! Plain data; the runtime fills it in, [`assemble`](crate::assemble) reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

/// Everything one call of [`assemble`](crate::assemble) depends on besides the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnFacts {
    /// The model the request goes to.
    pub model: ModelFacts,
    /// Who is driving the session.
    pub front_end: FrontEnd,
    /// The agent whose turn it is.
    pub agent: AgentFacts,
    /// What this machine can run.
    pub platform: PlatformFacts,
    /// The user's and project's tool configuration.
    pub config: CatalogConfig,
    /// Tools activated by `tool_search` so far, in activation order.
    pub activated: Vec<String>,
}

impl TurnFacts {
    /// Facts for the authoritative main agent in the TUI with default configuration.
    pub fn new(model: ModelFacts) -> Self {
        Self {
            model,
            front_end: FrontEnd::default(),
            agent: AgentFacts::default(),
            platform: PlatformFacts::default(),
            config: CatalogConfig::default(),
            activated: Vec::new(),
        }
    }
}

/// What the catalog needs to know about the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFacts {
    /// Model name as configured (`claude-sonnet-4-5`, `qwen3:8b`).
    pub name: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Whether the model can call tools at all.
    pub supports_tools: bool,
    /// Whether the model accepts images.
    pub image_input: bool,
    /// Why the provider cannot run web searches for this model; `None`
    /// when it can (the server-side `web_search` tool is then offered).
    pub web_search_unavailable: Option<String>,
}

impl ModelFacts {
    /// A model that calls tools, does not take images and has no
    /// provider-side search.
    pub fn new(name: impl Into<String>, context_window: u64) -> Self {
        Self {
            name: name.into(),
            context_window,
            supports_tools: true,
            image_input: false,
            web_search_unavailable: Some("the provider has no server-side search".into()),
        }
    }
}

/// Who is driving the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrontEnd {
    /// The interactive terminal UI: a person can answer questions.
    #[default]
    Tui,
    /// One-shot print mode or CI: nobody answers questions.
    Headless,
    /// An embedding program.
    Sdk,
}

/// Main agent or subagent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// The agent the person talks to. `authoritative` is false for a main
    /// agent running under another's control (e.g. a forked side session),
    /// which must not delegate.
    Main {
        /// Whether this main agent may start subagents.
        authoritative: bool,
    },
    /// An agent started by another through `task`.
    Subagent,
}

impl Default for AgentKind {
    fn default() -> Self {
        AgentKind::Main { authoritative: true }
    }
}

/// The built-in subagent roles, each with a capability cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentRole {
    /// Looks around and reports: read-only.
    Explore,
    /// Does delegated work, but may not delegate further.
    Worker,
    /// Checks work: read-only.
    Verifier,
}

impl SubagentRole {
    /// Every role, in the order lists show them.
    pub const ALL: [SubagentRole; 3] = [SubagentRole::Explore, SubagentRole::Worker, SubagentRole::Verifier];

    /// The role's name as written in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            SubagentRole::Explore => "explore",
            SubagentRole::Worker => "worker",
            SubagentRole::Verifier => "verifier",
        }
    }
}

/// A word that names no subagent role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRole(pub String);

impl fmt::Display for UnknownRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown role `{}`: use explore, worker or verifier", self.0)
    }
}

impl std::error::Error for UnknownRole {}

impl std::str::FromStr for SubagentRole {
    type Err = UnknownRole;
    /// Any case; Claude Code's `general-purpose` (and `explorer`) are `explore`.
    fn from_str(s: &str) -> Result<Self, UnknownRole> {
        match s.trim().to_ascii_lowercase().as_str() {
            "explore" | "explorer" | "general-purpose" => Ok(SubagentRole::Explore),
            "worker" => Ok(SubagentRole::Worker),
            "verifier" => Ok(SubagentRole::Verifier),
            _ => Err(UnknownRole(s.trim().to_string())),
        }
    }
}

impl fmt::Display for SubagentRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The agent whose turn it is, and its own tool selection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentFacts {
    /// The agent's name (from its definition), if it has one.
    pub name: Option<String>,
    /// Main agent or subagent.
    pub kind: AgentKind,
    /// A built-in role's cap, if the agent has one.
    pub role: Option<SubagentRole>,
    /// When non-empty, keep only these tools (names or `prefix*` patterns).
    pub tools: Vec<String>,
    /// Remove these tools (names or `prefix*` patterns).
    pub disallowed_tools: Vec<String>,
    /// The session is in plan mode: every writing tool leaves the list
    /// (the permission policy refuses writes as well).
    pub plan_mode: bool,
}

/// What this machine can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformFacts {
    /// `linux`, `macos`, `windows`, ...
    pub os: String,
    /// Tools whose backend is missing here, with the reason (`"rg not found"`).
    pub unavailable: BTreeMap<String, String>,
}

impl Default for PlatformFacts {
    fn default() -> Self {
        Self { os: std::env::consts::OS.to_string(), unavailable: BTreeMap::new() }
    }
}

/// The tool configuration of the user and the project, plus command-line
/// flags, as the runtime resolved it (config `exclude_tools`,
/// `[tool_disclosure]`, per-server `always_load`; see docs/catalog.md).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CatalogConfig {
    /// Config `exclude_tools` plus `--disallowed-tools`: names or `prefix*`
    /// patterns, compared after normalisation. Permission rules such as
    /// `bash(rm:*)` are not names and are left to the policy.
    pub excluded: Vec<String>,
    /// MCP servers whose tools may be offered; `None` means all.
    pub mcp_allow: Option<Vec<String>>,
    /// MCP servers whose tools are never offered.
    pub mcp_deny: Vec<String>,
    /// Configured MCP servers whose tools are never deferred.
    pub always_load_servers: BTreeSet<String>,
    /// When to defer MCP tools (and rarely used built-ins) behind `tool_search`.
    pub disclosure: DisclosureConfig,
    /// Built-ins the person named on purpose (`--tools web_fetch,…`): never deferred.
    pub inline_builtins: BTreeSet<String>,
}

/// When to defer configured MCP tools behind `tool_search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DisclosureConfig {
    /// Master switch (default on).
    pub enabled: bool,
    /// Models that may get deferred tools: `None` = every model that calls
    /// tools; otherwise names, where `*` matches any run (`claude-*`).
    pub eligible_models: Option<Vec<String>>,
    /// Fewest candidate tools worth deferring (default 1).
    pub min_defer_count: usize,
    /// Defer when the candidates' estimated tokens exceed this share of the
    /// context window (default 0.15).
    pub threshold_pct: f64,
    /// Rarely used built-ins (`task`, `web_fetch`, `skill`, …) wait behind
    /// `tool_search` (default on; see `DEFERRABLE_BUILTINS`).
    pub defer_builtins: bool,
}

impl Default for DisclosureConfig {
    fn default() -> Self {
        Self { enabled: true, eligible_models: None, min_defer_count: 1, threshold_pct: 0.15, defer_builtins: true }
    }
}

impl DisclosureConfig {
    /// Whether `model` may get deferred tools.
    pub fn model_eligible(&self, model: &ModelFacts) -> bool {
        if !model.supports_tools {
            return false;
        }
        match &self.eligible_models {
            None => true,
            Some(list) => {
                let name = model.name.to_lowercase();
                list.iter().any(|p| crate::names::glob_match(&p.trim().to_lowercase(), &name))
            }
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_role_is_read_in_one_way_everywhere() {
        for r in SubagentRole::ALL {
            assert_eq!(r.as_str().parse::<SubagentRole>(), Ok(r));
        }
        assert_eq!(" General-Purpose ".parse::<SubagentRole>(), Ok(SubagentRole::Explore));
        assert!("boss".parse::<SubagentRole>().unwrap_err().to_string().contains("explore, worker or verifier"));
    }

    use super::*;

    #[test]
    fn eligible_models_accept_globs_and_need_tool_support() {
        let mut config = DisclosureConfig::default();
        let claude = ModelFacts::new("claude-sonnet-4-5", 200_000);
        assert!(config.model_eligible(&claude));
        config.eligible_models = Some(vec!["gpt-5".into(), "Claude-*".into()]);
        assert!(config.model_eligible(&claude));
        assert!(!config.model_eligible(&ModelFacts::new("gpt-5-mini", 400_000)));
        assert!(config.model_eligible(&ModelFacts::new("gpt-5", 400_000)));
        let no_tools = ModelFacts { supports_tools: false, ..claude };
        assert!(!config.model_eligible(&no_tools));
    }

    #[test]
    fn config_reads_from_partial_json() {
        let config: CatalogConfig =
            serde_json::from_str(r#"{"excluded": ["bash"], "disclosure": {"threshold_pct": 0.1}}"#).unwrap();
        assert_eq!(config.excluded, vec!["bash".to_string()]);
        assert_eq!(config.disclosure, DisclosureConfig { threshold_pct: 0.1, ..DisclosureConfig::default() });
    }
}
