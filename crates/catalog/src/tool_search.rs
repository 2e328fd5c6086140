//! `tool_search {query?, regex?, top_k?}`: find deferred tools (MCP tools and
//! rarely used built-ins), show
//! their schemas and activate them so the next request carries them.
//!
//! `query` is words (ranked by BM25) or `select:name1,name2` (exact names;
//! a tool's own name without `mcp__server__` works when unique). `regex`
//! filters names and descriptions, case-insensitively, alone or before the
//! ranking. `top_k` defaults to 5 and is clamped to 1..=20.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_agent_loop::{RuntimeTool, Tool, ToolContext, ToolError, ToolOutput, UpdateSink};
use tern_protocol::{ExecutionMode, ToolDefinition};
use tokio_util::sync::CancellationToken;

use crate::disclosure_tools::{DisclosureState, Lookup, Snapshot, server_of};

/// Results when `top_k` is not given.
pub const DEFAULT_TOP_K: usize = 5;
/// Most results one search returns.
pub const MAX_TOP_K: usize = 20;

/// The tool's definition.
pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "tool_search".into(),
        description: "Load tools not yet in your list. `query`: words, or `select:name1,name2`; `regex`: filters \
             names and descriptions. Matches come back with their schemas, callable from your next step."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "regex": {"type": "string"},
                "top_k": {"type": "integer", "description": "default 5, max 20"}
            },
            "additionalProperties": false
        }),
        snippet: Some("tool_search: find and load tools that are not loaded yet (words, or select:name1,name2)".into()),
        execution_mode: ExecutionMode::Sequential,
    }
}

#[derive(Debug, Default, Deserialize)]
struct Args {
    query: Option<String>,
    regex: Option<String>,
    top_k: Option<i64>,
}

/// What a search found, before rendering.
#[derive(Debug, Default, PartialEq)]
struct Found {
    /// Positions in the snapshot, best first.
    matches: Vec<usize>,
    /// How many matched before `top_k` cut the list.
    total: usize,
    /// `select:` names that matched nothing, with close names.
    missing: Vec<(String, Vec<String>)>,
    /// `select:` names that matched several tools.
    ambiguous: Vec<(String, Vec<String>)>,
}

/// The search tool; it shares the deferred set with `mcp_invoke`.
pub(crate) struct ToolSearch {
    state: Arc<DisclosureState>,
}

impl ToolSearch {
    pub fn new(state: Arc<DisclosureState>) -> Self {
        Self { state }
    }
}

impl Tool for ToolSearch {
    fn prepare_arguments(&self, mut input: Value) -> Value {
        let top_k = match input.get("top_k") {
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            Some(Value::Number(n)) if !n.is_i64() => n.as_f64(),
            _ => None,
        };
        if let Some(k) = top_k.filter(|k| k.is_finite()) {
            input["top_k"] = json!(k.round() as i64);
        }
        input
    }

    fn execute<'a>(
        &'a self,
        _ctx: ToolContext,
        input: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = serde_json::from_value(input).map_err(|e| ToolError::new(format!("tool_search: {e}")))?;
            let query = args.query.as_deref().map(str::trim).filter(|q| !q.is_empty());
            let regex = args.regex.as_deref().map(str::trim).filter(|r| !r.is_empty());
            if query.is_none() && regex.is_none() {
                return Err(ToolError::new(
                    "tool_search needs `query` (words, or select:name1,name2) or `regex`; it got neither.",
                ));
            }
            let snapshot = self.state.snapshot();
            if snapshot.tools.is_empty() {
                return Ok(ToolOutput::text(
                    "No tools are deferred right now: every tool you can use is already in your tool list.",
                ));
            }
            let top_k = args.top_k.unwrap_or(DEFAULT_TOP_K as i64).clamp(1, MAX_TOP_K as i64) as usize;
            let found = search(&snapshot, query, regex, top_k)?;
            let names: Vec<String> = found.matches.iter().map(|&i| snapshot.tools[i].name().to_string()).collect();
            let newly = self.state.activate(&names);
            let text = render(&snapshot, &found, query.or(regex).unwrap_or_default());
            let details = tern_protocol::ToolSearchDetails { matches: names, activated: newly };
            Ok(ToolOutput::text(text).with_details(tern_protocol::ToolDetails::ToolSearch(details)))
        })
    }
}

fn search(snapshot: &Snapshot, query: Option<&str>, regex: Option<&str>, top_k: usize) -> Result<Found, ToolError> {
    if let Some(names) = query.and_then(select_list) {
        return Ok(select(snapshot, &names));
    }
    let filter =
        match regex {
            Some(re) => {
                Some(regex::RegexBuilder::new(re).case_insensitive(true).size_limit(1 << 20).build().map_err(|e| {
                    ToolError::new(format!("tool_search: `regex` is not a valid regular expression: {e}"))
                })?)
            }
            None => None,
        };
    let allowed = |i: usize| {
        let def = &snapshot.tools[i].definition;
        filter.as_ref().is_none_or(|re| re.is_match(&def.name) || re.is_match(&def.description))
    };
    let ranked: Vec<usize> = match query {
        Some(q) => snapshot.index.search(q, allowed).into_iter().map(|(i, _)| i).collect(),
        None => (0..snapshot.tools.len()).filter(|&i| allowed(i)).collect(),
    };
    Ok(Found { total: ranked.len(), matches: ranked.into_iter().take(top_k).collect(), ..Found::default() })
}

/// `select:a, b` → `["a", "b"]`.
fn select_list(query: &str) -> Option<Vec<String>> {
    let (head, rest) = query.split_at_checked(7)?;
    head.eq_ignore_ascii_case("select:")
        .then(|| rest.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect())
}

fn select(snapshot: &Snapshot, names: &[String]) -> Found {
    let mut found = Found::default();
    for name in names {
        match snapshot.lookup(name, None) {
            Lookup::Found(i) if !found.matches.contains(&i) => found.matches.push(i),
            Lookup::Found(_) => {}
            Lookup::Ambiguous(all) => found.ambiguous.push((name.clone(), all)),
            Lookup::Missing => found.missing.push((name.clone(), snapshot.close_names(name, 3))),
        }
    }
    found.total = found.matches.len();
    found
}

fn render(snapshot: &Snapshot, found: &Found, asked: &str) -> String {
    let mut out = String::new();
    for (name, all) in &found.ambiguous {
        out.push_str(&format!("`{name}` matches several tools: {}; use the full name.\n", all.join(", ")));
    }
    for (name, close) in &found.missing {
        out.push_str(&format!("No deferred tool is named `{name}`"));
        if !close.is_empty() {
            out.push_str(&format!(" (close: {})", close.join(", ")));
        }
        out.push_str(".\n");
    }
    if found.matches.is_empty() {
        if found.missing.is_empty() && found.ambiguous.is_empty() {
            out.push_str(&format!("No deferred tool matches \"{asked}\". "));
        }
        out.push_str(&format!(
            "Try other words for what the tool does, a `regex` over names and descriptions, or select:<exact name>. \
             Deferred tools by source: {}.",
            snapshot.servers_line()
        ));
        return out;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let shown = found.matches.len();
    out.push_str(&match found.total {
        t if t > shown => {
            format!("Showing the best {shown} of {t} matching tools (raise top_k or narrow the query):\n")
        }
        _ => format!("Found {shown} tool{}:\n", if shown == 1 { "" } else { "s" }),
    });
    for &i in &found.matches {
        out.push('\n');
        out.push_str(&describe(&snapshot.tools[i]));
    }
    out.push_str("\nThese tools are now available: call them directly by name from your next step");
    // mcp_invoke is offered only while MCP tools are deferred.
    if found.matches.iter().any(|&i| server_of(&snapshot.tools[i]).is_some()) {
        out.push_str(", or through mcp_invoke {\"tool\": \"<name>\", \"arguments\": {...}}");
    }
    out.push('.');
    out
}

/// Name, server, description and compact schema of one tool.
fn describe(tool: &RuntimeTool) -> String {
    let def = &tool.definition;
    let server = server_of(tool).map(|s| format!(" (server {s})")).unwrap_or_default();
    let schema = serde_json::to_string(&def.input_schema).unwrap_or_else(|_| "{}".to_string());
    format!("### {}{server}\n{}\nInput schema: {schema}\n", def.name, def.description.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_prefix_is_case_insensitive_and_trims() {
        assert_eq!(select_list("select: a ,b,,"), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(select_list("SELECT:a"), Some(vec!["a".to_string()]));
        assert_eq!(select_list("selection of tools"), None);
        assert_eq!(select_list("选择选择选择"), None);
    }

    #[test]
    fn numbers_arrive_as_strings_or_floats() {
        let search = ToolSearch::new(Arc::new(DisclosureState::new()));
        assert_eq!(search.prepare_arguments(json!({"top_k": "7"})), json!({"top_k": 7}));
        assert_eq!(search.prepare_arguments(json!({"top_k": 3.0})), json!({"top_k": 3}));
        assert_eq!(search.prepare_arguments(json!({"top_k": "many"})), json!({"top_k": "many"}));
        assert_eq!(search.prepare_arguments(json!({"query": "x"})), json!({"query": "x"}));
    }
}
