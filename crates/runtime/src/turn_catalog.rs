//! The catalog as a run sees it: the registry, the facts of this session, the
//! MCP manager, and the disclosure tools' state. Before every request the
//! loop asks it for the tools ([`TurnTools`]); it refreshes MCP tools when a
//! server's list changed, then assembles.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use tern_agent_loop::{RuntimeTool, TurnTools};
use tern_catalog::{Assembly, DisclosureTools, Registry, TurnFacts};
use tern_mcp::McpManager;
use tern_protocol::sync::LockExt as _;

/// Registry + facts + MCP, assembled per turn.
pub struct TurnCatalog {
    registry: Mutex<Registry>,
    facts: Mutex<TurnFacts>,
    disclosure: DisclosureTools,
    mcp: Option<Arc<McpManager>>,
    /// A subagent's own servers ([`crate::agent_servers`]): seen only by it.
    own: Option<Arc<McpManager>>,
    mcp_generation: Mutex<Option<(u64, u64)>>,
    policy: Arc<tern_policy::engine::Policy>,
}

impl TurnCatalog {
    /// A catalog over `registry` with these facts.
    pub fn new(
        registry: Registry,
        facts: TurnFacts,
        mcp: Option<Arc<McpManager>>,
        policy: Arc<tern_policy::engine::Policy>,
    ) -> Self {
        let catalog = Self {
            registry: Mutex::new(registry),
            facts: Mutex::new(facts),
            disclosure: DisclosureTools::new(),
            mcp,
            own: None,
            mcp_generation: Mutex::new(None),
            policy,
        };
        catalog.refresh_mcp();
        catalog
    }

    /// The same catalog with the tools of an agent's own servers beside
    /// the session's.
    pub(crate) fn with_own_servers(mut self, own: Option<Arc<McpManager>>) -> Self {
        self.own = own;
        *self.mcp_generation.lock_or_recover() = None;
        self.refresh_mcp();
        self
    }

    /// The facts every assembly starts from.
    pub fn facts(&self) -> TurnFacts {
        self.facts.lock_or_recover().clone()
    }

    /// Another model from the next assembly on (its context window and
    /// image input change the layers and the disclosure decision).
    pub fn set_model(&self, name: &str, info: &tern_llm::ModelInfo) {
        let mut facts = self.facts.lock_or_recover();
        facts.model.name = name.to_string();
        facts.model.context_window = info.context_window;
        facts.model.image_input = info.image_input;
    }

    /// Take the MCP servers' current tools into the registry if they changed.
    fn refresh_mcp(&self) {
        if self.mcp.is_none() && self.own.is_none() {
            return;
        }
        let generation = |m: &Option<Arc<McpManager>>| m.as_ref().map_or(0, |m| m.generation());
        let generation = (generation(&self.mcp), generation(&self.own));
        let mut seen = self.mcp_generation.lock_or_recover();
        if *seen == Some(generation) {
            return;
        }
        *seen = Some(generation);
        // The session's first: of two tools with one name, the registry keeps the first.
        let tools: Vec<_> =
            self.mcp.iter().chain(&self.own).flat_map(|m| m.tools()).map(|t| (t.tool, t.read_only)).collect();
        // Plan mode: the policy refuses what the catalog leaves out (tools not marked read-only).
        let read_only = tools.iter().filter(|(_, read_only)| *read_only).map(|(tool, _)| tool.name().to_string());
        self.policy.set_read_only_tools(read_only.collect());
        self.registry.lock_or_recover().set_mcp_tools(tools);
    }

    /// The catalog for the next request, with every decision.
    pub fn assemble(&self) -> Assembly {
        self.refresh_mcp();
        let mut facts = self.facts();
        facts.activated = self.disclosure.state.activated();
        // Plan mode can start or end between turns (Shift+Tab in the TUI).
        facts.agent.plan_mode = self.policy.mode() == tern_policy::engine::Mode::Plan;
        let registry = self.registry.lock_or_recover();
        let assembly = tern_catalog::assemble(&registry, &facts, &self.disclosure);
        self.disclosure.state.set_deferred(assembly.deferred.clone());
        assembly
    }

    /// Load up front the waiting built-ins the person's first prompt clearly
    /// asks for ([`tern_catalog::wanted_by_prompt`]): they join the end of
    /// the tool list like any tool `tool_search` loaded. Returns what was
    /// loaded and why.
    pub fn load_for_first_prompt(&self, prompt: &str, skills: &[String]) -> Vec<(String, String)> {
        let waiting = self.assemble().disclosure.builtins_deferred;
        let wanted: Vec<(String, String)> = tern_catalog::wanted_by_prompt(prompt, skills)
            .into_iter()
            .filter(|(name, _)| waiting.iter().any(|w| w == name))
            .map(|(name, why)| (name.to_string(), why))
            .collect();
        let names: Vec<String> = wanted.iter().map(|(name, _)| name.clone()).collect();
        let added = self.disclosure.state.activate(&names);
        wanted.into_iter().filter(|(name, _)| added.contains(name)).collect()
    }

    /// A resumed session goes on with the tools it had loaded, in the order
    /// it loaded them (so the request's tool list is the one the provider
    /// cached): those its first prompt loaded, then those `tool_search`
    /// loaded in the calls the conversation still holds.
    pub fn restore_loaded(
        &self,
        messages: &[tern_protocol::Message],
        runs: &std::collections::HashMap<String, tern_protocol::ToolRun>,
        skills: &[String],
    ) {
        if let Some(prompt) = messages.iter().find(|m| m.role == tern_protocol::Role::User).and_then(first_prompt_text)
        {
            self.load_for_first_prompt(prompt, skills);
        }
        for block in messages.iter().flat_map(|m| &m.content) {
            let tern_protocol::ContentBlock::ToolResult { tool_use_id, .. } = block else { continue };
            if let Some(tern_protocol::ToolDetails::ToolSearch(d)) =
                runs.get(tool_use_id).and_then(|r| r.details.as_deref())
            {
                self.disclosure.state.activate(&d.activated);
            }
        }
    }

    /// Servers whose tools stay inline whatever the disclosure decides.
    pub fn always_load(statuses: &[tern_mcp::ServerStatus]) -> BTreeSet<String> {
        statuses.iter().filter(|s| s.always_load).map(|s| s.name.clone()).collect()
    }
}

impl TurnTools for TurnCatalog {
    fn tools_for_turn(&self) -> Vec<RuntimeTool> {
        self.assemble().tools
    }

    /// Deferred MCP tools stay callable by their exact name: a model that
    /// read the name in the deferred notice or a search result and calls it
    /// directly gets it run (validated against its real schema).
    fn callable_unlisted(&self) -> Vec<RuntimeTool> {
        self.disclosure.state.deferred()
    }
}

/// The person's words in the first prompt's message: its first text block
/// other than the deferred-MCP notice that run.rs puts before it.
fn first_prompt_text(message: &tern_protocol::Message) -> Option<&str> {
    message.content.iter().find_map(|b| match b {
        tern_protocol::ContentBlock::Text { text } if !text.starts_with(tern_catalog::DEFERRED_NOTICE_START) => {
            Some(text.as_str())
        }
        _ => None,
    })
}
