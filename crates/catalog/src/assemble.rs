//! The pure function at the heart of the catalog: registry + turn facts in,
//! the ordered tool list and every decision out.
//!
//! Layers run in a fixed order and the first one that removes a tool is the
//! one recorded, with a reason a person can act on. Order is stable so the
//! bytes of the request prefix stay cacheable: built-ins (and SDK and
//! extension tools) first in registry order, less the rarely used built-ins
//! that wait (see [`builtin_disclosure`]), then `tool_search` when anything
//! waits and `mcp_invoke` when MCP tools do, then inline MCP tools sorted by name, then
//! tools activated by search, in activation order.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use tern_agent_loop::RuntimeTool;
use tern_protocol::ToolSource;

use crate::builtin_disclosure;
use crate::disclosure::{self, Disclosure};
use crate::disclosure_tools::DisclosureTools;
use crate::facts::{AgentKind, FrontEnd, SubagentRole, TurnFacts};
use crate::names::{NameSet, normalize_name};
use crate::registry::{Capability, Entry, Registry};

/// Tools a subagent never gets, whatever its definition says.
pub const SUBAGENT_NEVER: [&str; 5] = ["task", "todo_write", "ask_user", "enter_plan_mode", "exit_plan_mode"];

/// The reason recorded for a deferred tool.
pub const DEFERRED_REASON: &str = "deferred: find it with tool_search";

/// The layer that removed a tool, in the order the layers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// Config `exclude_tools` and `--disallowed-tools`.
    Excluded,
    /// The tool's backend is missing on this machine or front end.
    Availability,
    /// The agent's `tools` / `disallowed_tools`.
    AgentSelector,
    /// MCP server allow/deny lists.
    McpServer,
    /// Delegation is only for the authoritative main agent.
    Delegation,
    /// What no subagent gets.
    ProfileCap,
    /// What a built-in subagent role may not do.
    RoleCap,
    /// The model cannot use it or does not need it.
    ModelCapability,
    /// Deferred behind `tool_search`.
    Disclosure,
}

impl Layer {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Excluded => "excluded",
            Layer::Availability => "availability",
            Layer::AgentSelector => "agent_selector",
            Layer::McpServer => "mcp_server",
            Layer::Delegation => "delegation",
            Layer::ProfileCap => "profile_cap",
            Layer::RoleCap => "role_cap",
            Layer::ModelCapability => "model_capability",
            Layer::Disclosure => "disclosure",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tool a layer removed, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Removal {
    /// The tool's name.
    pub name: String,
    /// Where it came from.
    pub source: ToolSource,
    /// The first layer that removed it.
    pub layer: Layer,
    /// Why, for a person.
    pub reason: String,
}

/// The result of [`assemble`]: what the model gets and why.
#[derive(Debug, Clone)]
pub struct Assembly {
    /// The tools of the request, in order.
    pub tools: Vec<RuntimeTool>,
    /// Every tool left out, in registry order (deferred ones last).
    pub removed: Vec<Removal>,
    /// The disclosure decision with its numbers.
    pub disclosure: Disclosure,
    /// Every deferred tool, activated or not: what `tool_search` searches and
    /// `mcp_invoke` calls. Hand it to [`DisclosureState::set_deferred`](crate::DisclosureState::set_deferred).
    pub deferred: Vec<RuntimeTool>,
}

/// Decide which tools the turn sees, in which order. Pure: no I/O, and the
/// same inputs always give the same output.
pub fn assemble(registry: &Registry, facts: &TurnFacts, disclosure_tools: &DisclosureTools) -> Assembly {
    let filters = Filters::new(facts);
    let mut removed = Vec::new();
    let mut keep = |entry: &Entry| match filters.removal(entry) {
        Some((layer, reason)) => {
            removed.push(Removal { name: entry.name().to_string(), source: entry.tool.source.clone(), layer, reason });
            false
        }
        None => true,
    };
    let prefix: Vec<&Entry> = registry.non_mcp().filter(|e| keep(e)).collect();
    let mcp: Vec<&Entry> = registry.mcp().iter().filter(|e| keep(e)).collect();

    let builtins_refusal = builtin_disclosure::refusal(facts);
    let (waiting, prefix): (Vec<&Entry>, Vec<&Entry>) =
        prefix.into_iter().partition(|e| builtin_disclosure::defers(e, facts, builtins_refusal.is_some()));
    let mut plan = disclosure::plan(&mcp, facts);
    plan.disclosure.builtins_deferred = waiting.iter().map(|e| e.name().to_string()).collect();
    plan.disclosure.builtins_reason = builtins_refusal.unwrap_or_else(|| match waiting.len() {
        0 => "no deferrable built-in survived the layers".to_string(),
        _ => "rarely used built-ins wait behind tool_search ([tool_disclosure] defer_builtins)".to_string(),
    });
    let mut tools: Vec<RuntimeTool> = prefix.iter().map(|e| e.tool.clone()).collect();
    if plan.disclosure.deferred || !waiting.is_empty() {
        tools.push(disclosure_tools.tool_search.clone());
    }
    if plan.disclosure.deferred {
        tools.push(disclosure_tools.mcp_invoke.clone());
    }
    let (deferred_mcp, inline): (Vec<&Entry>, Vec<&Entry>) = mcp.iter().partition(|e| plan.defers(e));
    tools.extend(inline.iter().map(|e| e.tool.clone()));
    let deferred: Vec<&Entry> = waiting.into_iter().chain(deferred_mcp).collect();

    let mut activated = BTreeSet::new();
    for name in &facts.activated {
        if let Some(entry) = deferred.iter().find(|e| e.name() == name)
            && activated.insert(name.as_str())
        {
            tools.push(entry.tool.clone());
        }
    }
    for entry in deferred.iter().filter(|e| !activated.contains(e.name())) {
        removed.push(Removal {
            name: entry.name().to_string(),
            source: entry.tool.source.clone(),
            layer: Layer::Disclosure,
            reason: match entry.tool.source {
                ToolSource::Builtin => builtin_disclosure::reason(entry.name()),
                _ => DEFERRED_REASON.to_string(),
            },
        });
    }
    Assembly {
        tools,
        removed,
        disclosure: plan.disclosure,
        deferred: deferred.iter().map(|e| e.tool.clone()).collect(),
    }
}

/// Layers 1-8, with the facts' lists normalised once.
struct Filters<'a> {
    facts: &'a TurnFacts,
    excluded: NameSet,
    unavailable: Vec<(String, &'a str)>,
    agent_disallowed: NameSet,
    agent_tools: Option<NameSet>,
    mcp_allow: Option<NameSet>,
    mcp_deny: NameSet,
}

impl<'a> Filters<'a> {
    fn new(facts: &'a TurnFacts) -> Self {
        let config = &facts.config;
        let agent = &facts.agent;
        Self {
            facts,
            excluded: NameSet::removal(&config.excluded),
            unavailable: facts.platform.unavailable.iter().map(|(k, v)| (normalize_name(k), v.as_str())).collect(),
            agent_disallowed: NameSet::removal(&agent.disallowed_tools),
            agent_tools: (!agent.tools.is_empty()).then(|| NameSet::selection(&agent.tools)),
            mcp_allow: config.mcp_allow.as_ref().map(|l| NameSet::selection(l)),
            mcp_deny: NameSet::removal(&config.mcp_deny),
        }
    }

    /// The first layer that removes `entry`, with the reason.
    fn removal(&self, entry: &Entry) -> Option<(Layer, String)> {
        let name = normalize_name(entry.name());
        let layers: [(Layer, Option<String>); 8] = [
            (Layer::Excluded, self.excluded(&name)),
            (Layer::Availability, self.availability(&name)),
            (Layer::AgentSelector, self.agent_selector(&name)),
            (Layer::McpServer, self.mcp_server(&entry.tool.source)),
            (Layer::Delegation, self.delegation(entry)),
            (Layer::ProfileCap, self.profile_cap(&name)),
            (Layer::RoleCap, self.role_cap(entry)),
            (Layer::ModelCapability, self.model_capability(entry)),
        ];
        layers.into_iter().find_map(|(layer, reason)| reason.map(|r| (layer, r)))
    }

    fn excluded(&self, name: &str) -> Option<String> {
        self.excluded.contains(name).then(|| "excluded by --disallowed-tools / config `exclude_tools`".to_string())
    }

    fn availability(&self, name: &str) -> Option<String> {
        if let Some((_, why)) = self.unavailable.iter().find(|(n, _)| n == name) {
            return Some(format!("backend missing: {why}"));
        }
        // The plan-mode tools, per turn: entering only outside plan mode, leaving only inside it.
        let plan_mode = self.facts.agent.plan_mode;
        match name {
            "ask_user" if self.facts.front_end == FrontEnd::Headless => {
                Some("nobody can answer questions in headless mode".to_string())
            }
            "enter_plan_mode" if plan_mode => Some("already in plan mode".to_string()),
            "exit_plan_mode" if !plan_mode => Some("only offered in plan mode".to_string()),
            _ => None,
        }
    }

    fn agent_selector(&self, name: &str) -> Option<String> {
        let agent = match &self.facts.agent.name {
            Some(n) => format!("agent `{n}`"),
            None => "the agent".to_string(),
        };
        if self.agent_disallowed.contains(name) {
            return Some(format!("{agent} disallows it"));
        }
        match &self.agent_tools {
            Some(keep) if !keep.contains(name) => Some(format!("not in {agent}'s tools list")),
            _ => None,
        }
    }

    fn mcp_server(&self, source: &ToolSource) -> Option<String> {
        let server = match source {
            ToolSource::BuiltinMcp { server } | ToolSource::ConfiguredMcp { server } => server,
            _ => return None,
        };
        let normalized = normalize_name(server);
        if self.mcp_deny.contains(&normalized) {
            return Some(format!("MCP server `{server}` denied"));
        }
        match &self.mcp_allow {
            Some(allow) if !allow.contains(&normalized) => {
                Some(format!("MCP server `{server}` is not in the allowed servers"))
            }
            _ => None,
        }
    }

    fn delegation(&self, entry: &Entry) -> Option<String> {
        (entry.meta.delegation && self.facts.agent.kind != (AgentKind::Main { authoritative: true }))
            .then(|| "delegation is only for the authoritative main agent".to_string())
    }

    fn profile_cap(&self, name: &str) -> Option<String> {
        (self.facts.agent.kind == AgentKind::Subagent && SUBAGENT_NEVER.contains(&name))
            .then(|| "subagents never get todo_write/task/ask_user or the plan-mode tools".to_string())
    }

    fn role_cap(&self, entry: &Entry) -> Option<String> {
        if self.facts.agent.plan_mode && entry.meta.writes {
            return Some("plan mode is read-only: no changes until the plan is approved".to_string());
        }
        match self.facts.agent.role? {
            role @ (SubagentRole::Explore | SubagentRole::Verifier) if entry.meta.writes => {
                Some(format!("role `{role}` is read-only"))
            }
            SubagentRole::Worker if entry.meta.delegation => Some("worker may not delegate".to_string()),
            _ => None,
        }
    }

    fn model_capability(&self, entry: &Entry) -> Option<String> {
        let model = &self.facts.model;
        if !model.supports_tools {
            return Some(format!("model `{}` does not support tools", model.name));
        }
        match entry.tool.implementation.server_tool() {
            Some(_) if model.web_search_unavailable.is_some() => return model.web_search_unavailable.clone(),
            Some(Err(why)) => return Some(why),
            _ => {}
        }
        match entry.meta.helper_for {
            Some(Capability::ImageInput) if model.image_input => Some("model sees images itself".to_string()),
            _ => None,
        }
    }
}
