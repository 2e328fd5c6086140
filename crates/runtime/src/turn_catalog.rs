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
    mcp_generation: Mutex<Option<u64>>,
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
            mcp_generation: Mutex::new(None),
            policy,
        };
        catalog.refresh_mcp();
        catalog
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
        let Some(mcp) = &self.mcp else { return };
        let generation = mcp.generation();
        let mut seen = self.mcp_generation.lock_or_recover();
        if *seen == Some(generation) {
            return;
        }
        *seen = Some(generation);
        let tools: Vec<_> = mcp.tools().into_iter().map(|t| (t.tool, t.read_only)).collect();
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
