//! BM25 over deferred tools (k1 = 1.2, b = 0.75). A tool's document is its
//! name (counted twice: names are the densest signal), its description and
//! its flattened schema: property names, their titles and descriptions, and
//! enum values, at every depth.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;
use tern_protocol::ToolDefinition;

use crate::tokenize::tokenize;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Term statistics of a fixed list of tools.
#[derive(Debug, Default)]
pub struct SearchIndex {
    docs: Vec<Doc>,
    /// In how many documents each term occurs.
    doc_freq: HashMap<String, usize>,
    avg_len: f64,
}

#[derive(Debug)]
struct Doc {
    term_freq: HashMap<String, u32>,
    len: usize,
}

impl SearchIndex {
    /// Index `definitions`; search results refer to them by position.
    pub fn build<'a>(definitions: impl IntoIterator<Item = &'a ToolDefinition>) -> Self {
        let mut doc_freq: HashMap<String, usize> = HashMap::new();
        let docs: Vec<Doc> = definitions
            .into_iter()
            .map(|def| {
                let tokens = tokenize(&document_text(def));
                let mut term_freq: HashMap<String, u32> = HashMap::new();
                for t in &tokens {
                    *term_freq.entry(t.clone()).or_insert(0) += 1;
                }
                for term in term_freq.keys() {
                    *doc_freq.entry(term.clone()).or_insert(0) += 1;
                }
                Doc { term_freq, len: tokens.len() }
            })
            .collect();
        let total: usize = docs.iter().map(|d| d.len).sum();
        let avg_len = if docs.is_empty() { 0.0 } else { total as f64 / docs.len() as f64 };
        Self { docs, doc_freq, avg_len }
    }

    /// Positions of the documents matching `query` among those `allowed`,
    /// best first (ties in index order), with their scores; only positive
    /// scores.
    pub fn search(&self, query: &str, allowed: impl Fn(usize) -> bool) -> Vec<(usize, f64)> {
        let terms: BTreeSet<String> = tokenize(query).into_iter().collect();
        let n = self.docs.len() as f64;
        let mut hits: Vec<(usize, f64)> = self
            .docs
            .iter()
            .enumerate()
            .filter(|(i, _)| allowed(*i))
            .map(|(i, doc)| {
                let norm = K1 * (1.0 - B + B * doc.len as f64 / self.avg_len.max(1.0));
                let score = terms
                    .iter()
                    .filter_map(|t| {
                        let tf = f64::from(*doc.term_freq.get(t)?);
                        let df = *self.doc_freq.get(t)? as f64;
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        Some(idf * tf * (K1 + 1.0) / (tf + norm))
                    })
                    .sum::<f64>();
                (i, score)
            })
            .filter(|(_, score)| *score > 0.0)
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits
    }
}

/// The text a tool is found by.
fn document_text(def: &ToolDefinition) -> String {
    let mut parts = vec![def.name.clone(), def.name.clone(), def.description.clone()];
    schema_words(&def.input_schema, &mut parts);
    parts.join("\n")
}

/// Property names, titles, descriptions and enum values, recursively.
pub fn schema_words(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("properties", Value::Object(props)) => {
                        for (name, sub) in props {
                            out.push(name.clone());
                            schema_words(sub, out);
                        }
                    }
                    ("description" | "title", Value::String(s)) => out.push(s.clone()),
                    ("enum", Value::Array(values)) => {
                        out.extend(values.iter().filter_map(Value::as_str).map(str::to_string));
                    }
                    ("const", Value::String(s)) => out.push(s.clone()),
                    _ => schema_words(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| schema_words(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn def(name: &str, description: &str, schema: Value) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
            snippet: None,
            execution_mode: Default::default(),
        }
    }

    #[test]
    fn flattens_nested_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {
                "state": {"type": "string", "enum": ["open", "closed"], "description": "Issue state"},
                "labels": {"type": "array", "items": {"type": "object", "properties": {"colour": {"type": "string"}}}},
                "filter": {"anyOf": [{"const": "mine"}, {"type": "null"}]}
            }
        });
        let mut words = Vec::new();
        schema_words(&schema, &mut words);
        words.sort();
        assert_eq!(words, ["Issue state", "closed", "colour", "filter", "labels", "mine", "open", "state"]);
    }

    #[test]
    fn ranks_by_rare_terms_and_finds_schema_words() {
        let defs = [
            def("mcp__gh__create_issue", "Create an issue in a repository", json!({})),
            def("mcp__gh__list_repos", "List repositories of a user", json!({})),
            def(
                "mcp__gh__search",
                "Search code",
                json!({"properties": {"visibility": {"enum": ["public", "private"]}}}),
            ),
        ];
        let index = SearchIndex::build(&defs);
        assert_eq!(index.search("new issue", |_| true)[0].0, 0);
        assert_eq!(index.search("user repositories", |_| true)[0].0, 1);
        assert_eq!(index.search("private", |_| true).iter().map(|h| h.0).collect::<Vec<_>>(), [2]);
        assert!(index.search("private", |i| i != 2).is_empty());
        assert!(index.search("zebra", |_| true).is_empty());
    }
}
