//! Layer 9: whether configured MCP tools go into the request inline or wait
//! behind `tool_search`, decided from plain numbers.
//!
//! Candidates are the surviving tools of configured MCP servers not listed in
//! `always_load_servers` (tern's own MCP servers are always inline). Their
//! cost is estimated as the compact JSON length of `{name, description,
//! input_schema}` divided by 4, rounded up, per tool. They are deferred when
//! disclosure is enabled, the model is eligible, there are at least
//! `min_defer_count` of them, and the estimate exceeds `threshold_pct` of the
//! context window.

use std::collections::BTreeMap;

use serde::Serialize;
use tern_protocol::{ToolDefinition, ToolSource};

use crate::assemble::Assembly;
use crate::facts::TurnFacts;
use crate::names::normalize_name;
use crate::registry::Entry;

/// The disclosure decision and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disclosure {
    /// Whether the candidates were deferred.
    pub deferred: bool,
    /// Why, with the numbers (`estimated 1234 tokens ≤ 15% of 200000 = 30000`).
    pub reason: String,
    /// How many tools could have been deferred.
    pub candidates: usize,
    /// Their estimated tokens.
    pub estimated_tokens: u64,
    /// The estimate above which they are deferred.
    pub threshold_tokens: u64,
    /// Deferred tools per server (empty when not deferring).
    pub deferred_by_server: BTreeMap<String, usize>,
    /// Built-ins waiting behind `tool_search`, in table order.
    pub builtins_deferred: Vec<String>,
    /// Why built-ins wait or are all inline.
    pub builtins_reason: String,
}

/// Bytes of the compact JSON of `{name, description, input_schema}`: what a
/// tool costs in every request.
pub fn definition_bytes(definition: &ToolDefinition) -> usize {
    #[derive(Serialize)]
    struct Sent<'a> {
        name: &'a str,
        description: &'a str,
        input_schema: &'a serde_json::Value,
    }
    let sent =
        Sent { name: &definition.name, description: &definition.description, input_schema: &definition.input_schema };
    serde_json::to_string(&sent).map(|s| s.len()).unwrap_or(0)
}

/// Estimated tokens of a definition: its bytes / 4, rounded up.
pub fn estimate_tokens(definition: &ToolDefinition) -> u64 {
    (definition_bytes(definition) as u64).div_ceil(4)
}

/// The decision for one turn.
pub(crate) struct Plan {
    pub disclosure: Disclosure,
    /// `always_load_servers`, normalised.
    always_load: Vec<String>,
}

impl Plan {
    /// Whether this surviving MCP entry is deferred.
    pub fn defers(&self, entry: &Entry) -> bool {
        self.disclosure.deferred && self.candidate_server(entry).is_some()
    }

    fn candidate_server<'e>(&self, entry: &'e Entry) -> Option<&'e str> {
        candidate_server(entry, &self.always_load)
    }
}

/// Decide for the MCP tools that survived layers 1-8.
pub(crate) fn plan(mcp: &[&Entry], facts: &TurnFacts) -> Plan {
    let config = &facts.config.disclosure;
    let model = &facts.model;
    let always_load: Vec<String> = facts.config.always_load_servers.iter().map(|s| normalize_name(s)).collect();
    let candidates: Vec<(&str, &Entry)> =
        mcp.iter().filter_map(|e| candidate_server(e, &always_load).map(|s| (s, *e))).collect();
    let estimated_tokens: u64 = candidates.iter().map(|(_, e)| estimate_tokens(&e.tool.definition)).sum();
    let pct = if config.threshold_pct.is_finite() { config.threshold_pct.clamp(0.0, 1.0) } else { 0.15 };
    // The epsilon keeps 0.15 * 200000 at 30000 rather than 29999.
    let threshold_tokens = (pct * model.context_window as f64 + 1e-9).floor() as u64;
    let numbers = format!("{} of {} = {threshold_tokens}", format_pct(pct), model.context_window);

    let refusal = if !config.enabled {
        Some("disabled in config".to_string())
    } else if !model.supports_tools {
        Some(format!("model {} does not support tools", model.name))
    } else if !config.model_eligible(model) {
        Some(format!("model {} not eligible (tool_disclosure.eligible_models)", model.name))
    } else if candidates.is_empty() {
        Some("no candidates (only tools of configured MCP servers without always_load are deferred)".into())
    } else if candidates.len() < config.min_defer_count {
        Some(format!("{} candidates, fewer than min_defer_count {}", candidates.len(), config.min_defer_count))
    } else if estimated_tokens <= threshold_tokens {
        Some(format!("estimated {estimated_tokens} tokens ≤ {numbers}"))
    } else {
        None
    };
    let deferred = refusal.is_none();
    let mut deferred_by_server = BTreeMap::new();
    if deferred {
        for (server, _) in &candidates {
            *deferred_by_server.entry(server.to_string()).or_insert(0) += 1;
        }
    }
    Plan {
        disclosure: Disclosure {
            deferred,
            reason: refusal.unwrap_or_else(|| format!("estimated {estimated_tokens} tokens > {numbers}")),
            candidates: candidates.len(),
            estimated_tokens,
            threshold_tokens,
            deferred_by_server,
            builtins_deferred: Vec::new(),
            builtins_reason: String::new(),
        },
        always_load,
    }
}

/// The server of a deferrable tool: configured MCP, not always loaded.
fn candidate_server<'e>(entry: &'e Entry, always_load: &[String]) -> Option<&'e str> {
    match &entry.tool.source {
        ToolSource::ConfiguredMcp { server } if !always_load.contains(&normalize_name(server)) => Some(server),
        _ => None,
    }
}

/// `0.15` → `15%`, `0.125` → `12.5%`.
fn format_pct(pct: f64) -> String {
    let s = format!("{:.2}", pct * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// How the deferred-MCP notice starts (a resume tells it from the prompt by this).
pub const DEFERRED_NOTICE_START: &str = "Deferred MCP tools, not in your tool list until loaded:";

impl Assembly {
    /// The short block for the start of the conversation when tools are
    /// deferred: which servers wait behind `tool_search`, and how to use it.
    pub fn deferred_notice(&self) -> Option<String> {
        if !self.disclosure.deferred || self.disclosure.deferred_by_server.is_empty() {
            return None;
        }
        let servers: Vec<String> = self
            .disclosure
            .deferred_by_server
            .iter()
            .map(|(server, n)| format!("{server} ({n} tool{})", if *n == 1 { "" } else { "s" }))
            .collect();
        Some(format!(
            "{DEFERRED_NOTICE_START} {}. \
             Load them with tool_search (words, or select:name1,name2), then call them by name.",
            servers.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_read_naturally() {
        assert_eq!(format_pct(0.15), "15%");
        assert_eq!(format_pct(0.125), "12.5%");
        assert_eq!(format_pct(1.0), "100%");
        assert_eq!(format_pct(0.0), "0%");
    }

    #[test]
    fn estimate_is_compact_json_over_four_rounded_up() {
        let def = ToolDefinition {
            name: "a".into(),
            description: "b".into(),
            input_schema: serde_json::json!({}),
            snippet: Some("ignored".into()),
            execution_mode: Default::default(),
        };
        // {"name":"a","description":"b","input_schema":{}}
        assert_eq!(definition_bytes(&def), 48);
        assert_eq!(estimate_tokens(&def), 12);
        let def = ToolDefinition { name: "ab".into(), ..def };
        assert_eq!(estimate_tokens(&def), 13);
    }
}
