//! What `tern tools [--explain] [--json]` prints: the tool list with the
//! bytes each definition costs, and with `--explain` every removal and the
//! disclosure decision with its numbers.

use serde::Serialize;
use tern_protocol::ToolSource;

use crate::assemble::{Assembly, Removal};
use crate::disclosure::{Disclosure, definition_bytes, estimate_tokens};

/// The serialisable form of an [`Assembly`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogReport {
    /// The tools of the request, in order.
    pub tools: Vec<ToolReport>,
    /// Sum of the tools' bytes.
    pub total_bytes: usize,
    /// Sum of the tools' estimated tokens.
    pub total_estimated_tokens: u64,
    /// Every tool left out, with layer and reason.
    pub removed: Vec<Removal>,
    /// The disclosure decision.
    pub disclosure: Disclosure,
    /// Names of the deferred tools (searchable with `tool_search`).
    pub deferred: Vec<String>,
    /// For each waiting built-in the first prompt can load up front: when.
    pub loaded_by_first_prompt: Vec<PromptRule>,
}

/// When the person's first prompt loads a waiting built-in up front.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptRule {
    /// The built-in.
    pub name: String,
    /// What in the prompt loads it.
    pub when: String,
}

/// One tool of the request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolReport {
    /// Its name.
    pub name: String,
    /// Where it came from.
    pub source: ToolSource,
    /// Compact JSON bytes of name + description + input_schema.
    pub bytes: usize,
    /// `bytes / 4`, rounded up.
    pub estimated_tokens: u64,
}

impl Assembly {
    /// The data behind `tern tools --json`.
    pub fn report(&self) -> CatalogReport {
        let tools: Vec<ToolReport> = self
            .tools
            .iter()
            .map(|t| ToolReport {
                name: t.name().to_string(),
                source: t.source.clone(),
                bytes: definition_bytes(&t.definition),
                estimated_tokens: estimate_tokens(&t.definition),
            })
            .collect();
        CatalogReport {
            total_bytes: tools.iter().map(|t| t.bytes).sum(),
            total_estimated_tokens: tools.iter().map(|t| t.estimated_tokens).sum(),
            tools,
            removed: self.removed.clone(),
            disclosure: self.disclosure.clone(),
            deferred: self.deferred.iter().map(|t| t.name().to_string()).collect(),
            loaded_by_first_prompt: self
                .disclosure
                .builtins_deferred
                .iter()
                .filter_map(|n| crate::deferrable(n))
                .filter_map(|b| b.loaded_when.map(|when| PromptRule { name: b.name.to_string(), when: when.into() }))
                .collect(),
        }
    }

    /// The table `tern tools` prints; `explain` adds removals and the
    /// disclosure decision.
    pub fn render_text(&self, explain: bool) -> String {
        let report = self.report();
        let rows: Vec<[String; 4]> = report
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| [(i + 1).to_string(), t.name.clone(), source_label(&t.source), t.bytes.to_string()])
            .collect();
        let header = ["#".to_string(), "name".to_string(), "source".to_string(), "bytes".to_string()];
        let width = |col: usize| rows.iter().chain([&header]).map(|r| r[col].chars().count()).max().unwrap_or(0);
        let widths = [width(0), width(1), width(2), width(3)];
        let line = |r: &[String; 4]| {
            format!(
                "{:>w0$}  {:<w1$}  {:<w2$}  {:>w3$}\n",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3]
            )
        };
        let mut out = line(&header);
        for row in &rows {
            out.push_str(&line(row));
        }
        out.push_str(&format!(
            "Total: {} tool{}, {} bytes (~{} tokens)\n",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" },
            report.total_bytes,
            report.total_estimated_tokens
        ));
        let d = &report.disclosure;
        if d.deferred {
            let per_server: Vec<String> = d.deferred_by_server.iter().map(|(s, n)| format!("{s}: {n}")).collect();
            let count: usize = d.deferred_by_server.values().sum();
            out.push_str(&format!(
                "Deferred behind tool_search: {count} tool{} ({})\n",
                if count == 1 { "" } else { "s" },
                per_server.join(", ")
            ));
        }
        if !d.builtins_deferred.is_empty() {
            out.push_str(&format!(
                "Built-ins waiting behind tool_search: {} (load with select:NAME)\n",
                d.builtins_deferred.join(", ")
            ));
        }
        if explain {
            if !report.removed.is_empty() {
                let name_width = report.removed.iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
                let layer_width = report.removed.iter().map(|r| r.layer.as_str().len() + 2).max().unwrap_or(0);
                out.push_str("\nRemoved:\n");
                for r in &report.removed {
                    let layer = format!("[{}]", r.layer);
                    out.push_str(&format!("  {:<name_width$}  {layer:<layer_width$}  {}\n", r.name, r.reason));
                }
            }
            out.push_str(&format!(
                "\nDisclosure: {} — {}\n  {} candidate{}, estimated {} tokens, threshold {} tokens\n",
                if d.deferred { "deferred" } else { "inline" },
                d.reason,
                d.candidates,
                if d.candidates == 1 { "" } else { "s" },
                d.estimated_tokens,
                d.threshold_tokens
            ));
            out.push_str(&format!(
                "Built-ins: {} — {}\n",
                if d.builtins_deferred.is_empty() { "inline" } else { "deferred" },
                d.builtins_reason
            ));
            for rule in &report.loaded_by_first_prompt {
                out.push_str(&format!("  {} is loaded up front when {}\n", rule.name, rule.when));
            }
        }
        out
    }
}

/// `builtin`, `sdk`, `extension:id`, `mcp:server`, `builtin-mcp:server`.
pub fn source_label(source: &ToolSource) -> String {
    match source {
        ToolSource::Builtin => "builtin".to_string(),
        ToolSource::BuiltinMcp { server } => format!("builtin-mcp:{server}"),
        ToolSource::ConfiguredMcp { server } => format!("mcp:{server}"),
        ToolSource::Extension { id } => format!("extension:{id}"),
        ToolSource::Sdk => "sdk".to_string(),
    }
}
