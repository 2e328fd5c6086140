//! The raw material of every turn: built-ins, SDK tools, extension tools and
//! MCP tools, each with what the layers need to know about it ([`ToolMeta`]).
//!
//! The registry keeps one invariant: every name appears once. Built-in
//! duplicates are an error; SDK tools replace on purpose; among extensions
//! the first registration wins; an MCP tool whose name is already taken is
//! left out. Each refusal is a warning the runtime shows.

use serde::Serialize;
use tern_agent_loop::RuntimeTool;
use tern_protocol::ToolSource;

/// A capability a model may have; a helper tool for it is only useful to
/// models without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// The model understands images itself.
    ImageInput,
}

/// What the layers need to know about a tool beyond its definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolMeta {
    /// It changes files or other state (removed for read-only roles).
    pub writes: bool,
    /// It starts other agents (only the authoritative main agent gets it).
    pub delegation: bool,
    /// It stands in for a capability; dropped for models that have it.
    pub helper_for: Option<Capability>,
}

impl ToolMeta {
    /// Neither writes nor delegates.
    pub const READ_ONLY: ToolMeta = ToolMeta { writes: false, delegation: false, helper_for: None };
    /// Writes.
    pub const WRITES: ToolMeta = ToolMeta { writes: true, delegation: false, helper_for: None };
    /// Delegates to other agents.
    pub const DELEGATION: ToolMeta = ToolMeta { writes: false, delegation: true, helper_for: None };

    /// The fixed table for built-ins: `write`, `edit`, `notebook_edit` write;
    /// `task` delegates; the rest neither. (`bash` is judged per command by
    /// the policy, not here.)
    pub fn for_builtin(name: &str) -> ToolMeta {
        match tern_protocol::ToolKind::of(name) {
            tern_protocol::ToolKind::Edit => Self::WRITES,
            tern_protocol::ToolKind::Delegate => Self::DELEGATION,
            _ => Self::READ_ONLY,
        }
    }

    /// An MCP tool: it writes unless its server marks it read-only.
    pub fn mcp(read_only: bool) -> ToolMeta {
        ToolMeta { writes: !read_only, ..Self::READ_ONLY }
    }
}

/// A tool as the registry holds it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Definition, implementation and source.
    pub tool: RuntimeTool,
    /// What the layers need to know.
    pub meta: ToolMeta,
}

impl Entry {
    /// The tool's name.
    pub fn name(&self) -> &str {
        self.tool.name()
    }
}

/// Names of the disclosure tools, which the catalog inserts itself.
pub const RESERVED: [&str; 2] = ["tool_search", "mcp_invoke"];

/// Registration errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// Two built-in tools share a name: a programming error in tern itself.
    #[error("two built-in tools are named `{0}`; built-in names must be unique (rename or drop one)")]
    DuplicateBuiltin(String),
}

/// Every tool that could be offered, before the per-turn layers.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    builtins: Vec<Entry>,
    sdk_extras: Vec<Entry>,
    extensions: Vec<Entry>,
    /// Sorted by name, names unique and distinct from the other groups.
    mcp: Vec<Entry>,
    registration_warnings: Vec<String>,
    mcp_warnings: Vec<String>,
    /// `registration_warnings` then `mcp_warnings`, kept for `warnings()`.
    warnings: Vec<String>,
}

impl Registry {
    /// Built-ins in their fixed order, with meta from [`ToolMeta::for_builtin`].
    pub fn new(builtins: Vec<RuntimeTool>) -> Result<Registry, CatalogError> {
        let mut registry = Registry::default();
        for tool in builtins {
            let meta = ToolMeta::for_builtin(tool.name());
            registry.builtin_with_meta(tool, meta)?;
        }
        Ok(registry)
    }

    /// Append one built-in with explicit meta (e.g. an image-description helper).
    pub fn builtin_with_meta(&mut self, tool: RuntimeTool, meta: ToolMeta) -> Result<(), CatalogError> {
        if self.non_mcp().any(|e| e.name() == tool.name()) {
            return Err(CatalogError::DuplicateBuiltin(tool.name().to_string()));
        }
        self.drop_mcp_named(tool.name());
        self.builtins.push(Entry { tool, meta });
        Ok(())
    }

    /// Replace the MCP tools (from every connected server) with `tools`;
    /// the flag is the server's read-only hint.
    pub fn set_mcp_tools(&mut self, tools: Vec<(RuntimeTool, bool)>) {
        let mut entries: Vec<Entry> =
            tools.into_iter().map(|(tool, read_only)| Entry { tool, meta: ToolMeta::mcp(read_only) }).collect();
        // Stable: of two tools with one name, the first given is kept.
        entries.sort_by(|a, b| a.name().cmp(b.name()));
        self.mcp_warnings.clear();
        let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
        for entry in entries {
            if let Some(first) = kept.last().filter(|k| k.name() == entry.name()) {
                self.mcp_warnings.push(format!(
                    "MCP tool `{}` from {} has the same name as one from {}; keeping the first",
                    entry.name(),
                    origin(&entry.tool.source),
                    origin(&first.tool.source)
                ));
            } else if self.non_mcp().any(|e| e.name() == entry.name()) {
                self.mcp_warnings.push(format!(
                    "MCP tool `{}` from {} has the name of another tool; leaving it out",
                    entry.name(),
                    origin(&entry.tool.source)
                ));
            } else {
                kept.push(entry);
            }
        }
        self.mcp = kept;
        self.refresh_warnings();
    }

    /// Register an extension's tool. The first registration of a name wins;
    /// a later one, or one named like a built-in or SDK tool, is ignored and
    /// the warning returned (and kept in [`warnings`](Self::warnings)).
    pub fn add_extension_tool(&mut self, tool: RuntimeTool, meta: ToolMeta) -> Option<String> {
        let name = tool.name().to_string();
        let refused = if let Some(first) = self.extensions.iter().find(|e| e.name() == name) {
            Some(format!(
                "{} registers tool `{name}`, already registered by {}; keeping the first",
                origin(&tool.source),
                origin(&first.tool.source)
            ))
        } else if RESERVED.contains(&name.as_str())
            || self.builtins.iter().chain(&self.sdk_extras).any(|e| e.name() == name)
        {
            Some(format!("{} registers tool `{name}`, the name of a built-in tool; ignoring it", origin(&tool.source)))
        } else {
            None
        };
        if let Some(warning) = refused {
            self.registration_warnings.push(warning.clone());
            self.refresh_warnings();
            return Some(warning);
        }
        self.drop_mcp_named(&name);
        self.extensions.push(Entry { tool, meta });
        None
    }

    /// Register an SDK tool. Same name as a built-in (or an earlier SDK tool):
    /// it takes that tool's place. Otherwise it is appended after the
    /// built-ins; an extension tool of the same name is dropped with a warning.
    pub fn add_sdk_tool(&mut self, tool: RuntimeTool, meta: ToolMeta) {
        let name = tool.name().to_string();
        if let Some(slot) = self.builtins.iter_mut().chain(self.sdk_extras.iter_mut()).find(|e| e.name() == name) {
            *slot = Entry { tool, meta };
            return;
        }
        if let Some(i) = self.extensions.iter().position(|e| e.name() == name) {
            let dropped = self.extensions.remove(i);
            self.registration_warnings.push(format!(
                "SDK tool `{name}` replaces the tool of the same name from {}",
                origin(&dropped.tool.source)
            ));
            self.refresh_warnings();
        }
        self.drop_mcp_named(&name);
        self.sdk_extras.push(Entry { tool, meta });
    }

    /// Registration problems worth showing (duplicates refused or replaced).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Every entry in catalog order: built-ins (SDK replacements in place),
    /// SDK extras, extension tools, then MCP tools sorted by name.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.non_mcp().chain(&self.mcp)
    }

    /// The entry with this exact name.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries().find(|e| e.name() == name)
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.builtins.len() + self.sdk_extras.len() + self.extensions.len() + self.mcp.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Built-ins (SDK replacements in place), SDK extras, extension tools.
    pub(crate) fn non_mcp(&self) -> impl Iterator<Item = &Entry> {
        self.builtins.iter().chain(&self.sdk_extras).chain(&self.extensions)
    }

    /// MCP tools, sorted by name.
    pub(crate) fn mcp(&self) -> &[Entry] {
        &self.mcp
    }

    fn drop_mcp_named(&mut self, name: &str) {
        if let Some(i) = self.mcp.iter().position(|e| e.name() == name) {
            let dropped = self.mcp.remove(i);
            self.mcp_warnings.push(format!(
                "MCP tool `{name}` from {} has the name of another tool; leaving it out",
                origin(&dropped.tool.source)
            ));
            self.refresh_warnings();
        }
    }

    fn refresh_warnings(&mut self) {
        self.warnings = self.registration_warnings.iter().chain(&self.mcp_warnings).cloned().collect();
    }
}

/// "extension `x`", "MCP server `y`", ... for warnings.
fn origin(source: &ToolSource) -> String {
    match source {
        ToolSource::Builtin => "tern".to_string(),
        ToolSource::BuiltinMcp { server } | ToolSource::ConfiguredMcp { server } => format!("MCP server `{server}`"),
        ToolSource::Extension { id } => format!("extension `{id}`"),
        ToolSource::Sdk => "the SDK".to_string(),
    }
}
