//! The two tools that stand in for deferred MCP tools, and the state they
//! share with the runtime: which tools are deferred right now, and which of
//! them `tool_search` has activated.
//!
//! The runtime owns the loop: after each [`assemble`](crate::assemble) it
//! calls [`DisclosureState::set_deferred`] with [`Assembly::deferred`](crate::Assembly::deferred),
//! and it feeds [`DisclosureState::activated`] back into
//! [`TurnFacts::activated`](crate::TurnFacts::activated) for the next request.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tern_agent_loop::RuntimeTool;
use tern_protocol::ToolSource;

use crate::mcp_invoke::McpInvoke;
use crate::names::{edit_distance, normalize_name};
use crate::search_index::SearchIndex;
use crate::tool_search::ToolSearch;

/// `tool_search` and `mcp_invoke`, ready to insert, and their shared state.
#[derive(Debug, Clone)]
pub struct DisclosureTools {
    /// Finds deferred tools and activates them.
    pub tool_search: RuntimeTool,
    /// Calls a deferred tool by name.
    pub mcp_invoke: RuntimeTool,
    /// What both read: the deferred tools and the activated names.
    pub state: Arc<DisclosureState>,
}

impl DisclosureTools {
    /// Both tools over a fresh, empty state.
    pub fn new() -> Self {
        let state = Arc::new(DisclosureState::new());
        let tool_search = RuntimeTool::new(
            crate::tool_search::definition(),
            Arc::new(ToolSearch::new(state.clone())),
            ToolSource::Builtin,
        );
        let mcp_invoke = RuntimeTool::new(
            crate::mcp_invoke::definition(),
            Arc::new(McpInvoke::new(state.clone())),
            ToolSource::Builtin,
        );
        Self { tool_search, mcp_invoke, state }
    }
}

impl Default for DisclosureTools {
    fn default() -> Self {
        Self::new()
    }
}

/// The deferred tools of the current turn and the names activated so far.
#[derive(Debug, Default)]
pub struct DisclosureState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    deferred: Vec<RuntimeTool>,
    /// Built on the first search after the deferred set changes.
    index: Option<Arc<SearchIndex>>,
    activated: Vec<String>,
}

impl DisclosureState {
    /// Nothing deferred, nothing activated.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replace the deferred tools (call after each `assemble`). The search
    /// index is kept when the definitions did not change.
    pub fn set_deferred(&self, tools: Vec<RuntimeTool>) {
        let mut inner = self.lock();
        let same = inner.deferred.len() == tools.len()
            && inner.deferred.iter().zip(&tools).all(|(a, b)| a.definition == b.definition && a.source == b.source);
        if !same {
            inner.index = None;
        }
        inner.deferred = tools;
    }

    /// The deferred tools.
    pub fn deferred(&self) -> Vec<RuntimeTool> {
        self.lock().deferred.clone()
    }

    /// Names activated by `tool_search`, in activation order.
    pub fn activated(&self) -> Vec<String> {
        self.lock().activated.clone()
    }

    /// Restore the activated names (resuming a session).
    pub fn set_activated(&self, names: Vec<String>) {
        self.lock().activated = names;
    }

    /// Append names not yet activated; returns those that were new.
    pub fn activate(&self, names: &[String]) -> Vec<String> {
        let mut inner = self.lock();
        let mut added = Vec::new();
        for name in names {
            if !inner.activated.contains(name) {
                inner.activated.push(name.clone());
                added.push(name.clone());
            }
        }
        added
    }

    /// The deferred tools with their index, built now if needed.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut inner = self.lock();
        let index = match &inner.index {
            Some(index) => index.clone(),
            None => {
                let index = Arc::new(SearchIndex::build(inner.deferred.iter().map(|t| &t.definition)));
                inner.index = Some(index.clone());
                index
            }
        };
        Snapshot { tools: inner.deferred.clone(), index }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent even if a holder panicked: each update is one assignment.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A consistent view of the deferred tools for one call.
pub(crate) struct Snapshot {
    pub tools: Vec<RuntimeTool>,
    pub index: Arc<SearchIndex>,
}

/// How a name the model wrote resolved.
#[derive(Debug, PartialEq)]
pub(crate) enum Lookup {
    Found(usize),
    Ambiguous(Vec<String>),
    Missing,
}

impl Snapshot {
    /// Find a tool by full name (`mcp__server__tool`), or by the tool's own
    /// name when only one server has it. `server` narrows the bare-name search.
    pub fn lookup(&self, name: &str, server: Option<&str>) -> Lookup {
        if let Some(i) = self.tools.iter().position(|t| t.name() == name) {
            return Lookup::Found(i);
        }
        let wanted = normalize_name(name);
        if let Some(i) = self.tools.iter().position(|t| normalize_name(t.name()) == wanted) {
            return Lookup::Found(i);
        }
        let server = server.map(normalize_name).filter(|s| !s.is_empty());
        let hits: Vec<usize> = (0..self.tools.len())
            .filter(|&i| {
                let tool = &self.tools[i];
                bare_name(tool.name()).is_some_and(|b| normalize_name(b) == wanted)
                    && server.as_ref().is_none_or(|s| server_of(tool).is_some_and(|t| &normalize_name(t) == s))
            })
            .collect();
        match hits.as_slice() {
            [] => Lookup::Missing,
            [i] => Lookup::Found(*i),
            _ => {
                let mut names: Vec<String> = hits.iter().map(|&i| self.tools[i].name().to_string()).collect();
                names.sort();
                Lookup::Ambiguous(names)
            }
        }
    }

    /// Deferred tools per server.
    pub fn servers(&self) -> BTreeMap<String, usize> {
        let mut servers = BTreeMap::new();
        for tool in &self.tools {
            *servers.entry(server_of(tool).unwrap_or("tern's built-ins").to_string()).or_insert(0) += 1;
        }
        servers
    }

    /// `github (30), linear (10)`.
    pub fn servers_line(&self) -> String {
        self.servers().iter().map(|(s, n)| format!("{s} ({n})")).collect::<Vec<_>>().join(", ")
    }

    /// Names that resemble `text`, best first, for "did you mean": by shared
    /// words, or failing that by spelling.
    pub fn close_names(&self, text: &str, limit: usize) -> Vec<String> {
        let by_words: Vec<String> = self
            .index
            .search(text, |_| true)
            .into_iter()
            .take(limit)
            .map(|(i, _)| self.tools[i].name().to_string())
            .collect();
        if !by_words.is_empty() {
            return by_words;
        }
        let wanted = normalize_name(bare_name(text).unwrap_or(text));
        let tolerance = (wanted.chars().count() / 3).max(2);
        let mut by_spelling: Vec<(usize, &str)> = self
            .tools
            .iter()
            .map(|t| (edit_distance(&wanted, &normalize_name(bare_name(t.name()).unwrap_or(t.name()))), t.name()))
            .filter(|(d, _)| *d <= tolerance)
            .collect();
        by_spelling.sort();
        by_spelling.into_iter().take(limit).map(|(_, name)| name.to_string()).collect()
    }
}

/// `mcp__server__tool` → `tool`.
pub(crate) fn bare_name(name: &str) -> Option<&str> {
    name.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")).map(|(_, tool)| tool)
}

/// The MCP server a tool came from.
pub(crate) fn server_of(tool: &RuntimeTool) -> Option<&str> {
    match &tool.source {
        ToolSource::BuiltinMcp { server } | ToolSource::ConfiguredMcp { server } => Some(server),
        _ => None,
    }
}
