//! The tool list: deterministic generated tools and the fixed misbehaving ones.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// Actions; with [`SUBJECTS`] they give every generated tool its own words.
const ACTIONS: [&str; 16] = [
    "convert",
    "validate",
    "summarise",
    "archive",
    "translate",
    "schedule",
    "index",
    "compress",
    "encrypt",
    "render",
    "forecast",
    "reconcile",
    "deploy",
    "monitor",
    "classify",
    "export",
];

/// Things the actions apply to.
const SUBJECTS: [&str; 32] = [
    "invoices",
    "weather",
    "genomes",
    "playlists",
    "shipments",
    "telescopes",
    "recipes",
    "glaciers",
    "payroll",
    "satellites",
    "vineyards",
    "tickets",
    "volcanoes",
    "libraries",
    "orchestras",
    "pipelines",
    "harbours",
    "bicycles",
    "elections",
    "fossils",
    "greenhouses",
    "lighthouses",
    "marathons",
    "museums",
    "observatories",
    "pharmacies",
    "quarries",
    "railways",
    "sawmills",
    "tapestries",
    "universities",
    "warehouses",
];

/// Names of the fixed tools, always listed after the generated ones.
#[cfg(test)]
pub const FIXED_TOOLS: [&str; 6] = ["echo", "crash", "hang", "image", "add_tool", "fail"];

/// A 1x1 red PNG.
pub const TINY_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// The action and subject words of generated tool `k`.
pub fn topic_words(k: usize) -> (&'static str, &'static str) {
    (ACTIONS[k % ACTIONS.len()], SUBJECTS[(k / ACTIONS.len()) % SUBJECTS.len()])
}

/// Description of generated tool `k`, e.g. `Tool 137: index payroll …`.
pub fn generated_description(k: usize) -> String {
    let (action, subject) = topic_words(k);
    format!(
        "Tool {k}: {action} {subject}. Use it to {action} records about {subject} in the test catalogue \
         (generated tool number {k})."
    )
}

/// Generated tool `k`.
pub fn generated_tool(k: usize) -> Tool {
    let (action, subject) = topic_words(k);
    let schema = json!({
        "type": "object",
        "properties": {
            "value": {"type": "string", "description": format!("Which {subject} to {action}")},
            "count": {"type": "integer", "description": "How many times to do it"}
        },
        "required": ["value"]
    });
    Tool::new(format!("tool_{k}"), generated_description(k), object(schema))
}

/// A tool added at runtime through `add_tool`; same schema as generated tools.
pub fn added_tool(name: &str) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {"value": {"type": "string", "description": "Any text"}},
        "required": ["value"]
    });
    Tool::new(name.to_string(), format!("Added at runtime: {name}"), object(schema))
}

/// The fixed tools.
pub fn fixed_tools() -> Vec<Tool> {
    let empty = || object(json!({"type": "object", "properties": {}}));
    vec![
        Tool::new(
            "echo",
            "Echo the given text back unchanged.",
            object(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Text to echo"}},
                "required": ["text"]
            })),
        )
        .annotate(ToolAnnotations::new().read_only(true)),
        Tool::new("crash", "Exit the server process immediately with code 1, without replying.", empty()),
        Tool::new("hang", "Never reply (sleeps until cancelled).", empty()),
        Tool::new("image", "Return a 1x1 PNG image and a text block.", empty()),
        Tool::new(
            "add_tool",
            "Add a tool at runtime and send notifications/tools/list_changed.",
            object(json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Name of the new tool"}},
                "required": ["name"]
            })),
        ),
        Tool::new("fail", "Always answer with isError: true.", empty()),
    ]
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn generated_descriptions_are_distinct_and_deterministic() {
        let all: HashSet<String> = (0..600).map(generated_description).collect();
        assert_eq!(all.len(), 600);
        assert_eq!(generated_description(137), generated_description(137));
        assert!(generated_description(137).starts_with("Tool 137: "));
        // Topic pairs themselves repeat only after 16 * 32 tools.
        let pairs: HashSet<_> = (0..512).map(topic_words).collect();
        assert_eq!(pairs.len(), 512);
    }
}
