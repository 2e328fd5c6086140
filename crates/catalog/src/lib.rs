//! Which tools a turn sees, in which order, and why.
//!
//! The [`Registry`] holds every tool that could be offered: built-ins in a
//! fixed order (SDK tools may replace one on purpose), SDK extras, extension
//! tools (first registration of a name wins), and MCP tools. [`assemble`] is
//! a pure function of the registry and the [`TurnFacts`]: it runs nine
//! layers in a fixed order — excluded names, availability, the agent's
//! selector, MCP server allow/deny, delegation, profile caps, role caps,
//! model capability, MCP disclosure — records the first layer that removed
//! each tool and why, and returns the tools in a stable order: built-ins
//! first, then MCP tools sorted by name, then tools activated by search. So
//! adding an MCP server never changes the bytes of the built-in prefix.
//!
//! Rarely used built-ins (`task`, `web_fetch`, `skill`, …) wait behind
//! `tool_search` by default, each named in a one-line notice
//! ([`Assembly::deferred_builtins_notice`]); the first prompt can load one up
//! front ([`wanted_by_prompt`]). When configured MCP tools would cost too
//! much of the context window they are deferred too: [`DisclosureTools`] supplies `tool_search` (BM25 over
//! names, descriptions and schemas; `select:` exact names) and `mcp_invoke`.
//!
//! This crate never does I/O: no files, no network, no MCP connections. MCP
//! tools arrive as [`RuntimeTool`](tern_agent_loop::RuntimeTool)s whose
//! implementation talks to the server.
//!
//! ```
//! use tern_catalog::{DisclosureTools, ModelFacts, Registry, TurnFacts, assemble};
//! let registry = Registry::new(Vec::new()).unwrap();
//! let facts = TurnFacts::new(ModelFacts::new("claude-sonnet-4-5", 200_000));
//! let disclosure_tools = DisclosureTools::new();
//! let assembly = assemble(&registry, &facts, &disclosure_tools);
//! disclosure_tools.state.set_deferred(assembly.deferred.clone());
//! print!("{}", assembly.render_text(true));
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr)]
mod assemble;
mod builtin_disclosure;
mod disclosure;
mod disclosure_tools;
mod facts;
mod mcp_invoke;
mod names;
mod registry;
mod report;
mod search_index;
mod tokenize;
mod tool_search;

pub use assemble::{Assembly, DEFERRED_REASON, Layer, Removal, SUBAGENT_NEVER, assemble};
pub use builtin_disclosure::{DEFERRABLE_BUILTINS, DeferrableBuiltin, deferrable, wanted_by_prompt};
pub use disclosure::{DEFERRED_NOTICE_START, Disclosure, definition_bytes, estimate_tokens};
pub use disclosure_tools::{DisclosureState, DisclosureTools};
pub use facts::{
    AgentFacts, AgentKind, CatalogConfig, DisclosureConfig, FrontEnd, ModelFacts, PlatformFacts, SubagentRole,
    TurnFacts,
};
pub use names::normalize_name;
pub use registry::{Capability, CatalogError, Entry, RESERVED, Registry, ToolMeta};
pub use report::{CatalogReport, PromptRule, ToolReport, source_label};
pub use tokenize::tokenize;
pub use tool_search::{DEFAULT_TOP_K, MAX_TOP_K};
