//! The user docs list the tools the real binary has: README.md's tool table
//! and docs/tools.md name every built-in tool of the default catalog
//! (`tern tools --json`: the tools offered and the built-ins removed for this
//! run, such as `ask_user` headless), and README.md's table names no other.

use crate::common;

use std::collections::BTreeSet;

use common::{Harness, Wire};
use serde_json::Value;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
const TOOLS_DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tools.md");

/// Every built-in tool of the default catalog: those offered, and the
/// built-ins a layer removed for this run (their reason is not the docs').
async fn catalog_names() -> BTreeSet<String> {
    let h = Harness::new(Wire::Anthropic, r#"{"turns":[]}"#).await;
    let out = h.run(&["tools", "--json"]).await;
    assert_eq!(out.code, Some(0), "`tern tools --json` failed: {}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("`tern tools --json` prints JSON");
    let mut names = BTreeSet::new();
    for tool in report["tools"].as_array().expect("`tools` is a list") {
        names.insert(tool["name"].as_str().expect("a tool has a name").to_string());
    }
    for tool in report["removed"].as_array().expect("`removed` is a list") {
        if tool["source"]["kind"] == "builtin" {
            names.insert(tool["name"].as_str().expect("a removed tool has a name").to_string());
        }
    }
    assert!(names.contains("read") && names.contains("bash"), "an implausible catalog: {names:?}");
    names
}

/// The name a table row starts with: `| `edit {path, …}` | …` gives `edit`.
fn row_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("| `")?;
    let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

/// The tool names of README.md's tool table: the rows under its
/// `| tool | what it does |` header, up to the first line that is not a row.
fn readme_rows(readme: &str) -> Vec<String> {
    let mut lines = readme.lines().skip_while(|l| !l.starts_with("| tool | what it does |"));
    assert!(lines.next().is_some(), "README.md has no `| tool | what it does |` table");
    lines.take_while(|l| l.starts_with('|')).filter_map(row_name).collect()
}

/// Whether `text` holds `name` as a whole word (`task` is not in `task_stop`).
fn names_word(text: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

#[tokio::test]
async fn readme_tool_table_lists_exactly_the_default_catalog() {
    let catalog = catalog_names().await;
    let readme = std::fs::read_to_string(README).expect("README.md");
    let rows = readme_rows(&readme);
    for name in &catalog {
        assert!(
            rows.contains(name),
            "README.md's tool table (\"What the model can do\") has no row for `{name}`, a tool of the default catalog; rows: {rows:?}"
        );
    }
    for name in &rows {
        assert!(
            catalog.contains(name),
            "README.md's tool table has a row for `{name}`, which is not in the default catalog: {catalog:?}"
        );
    }
}

#[tokio::test]
async fn tools_doc_has_a_section_for_every_tool_of_the_default_catalog() {
    let catalog = catalog_names().await;
    let doc = std::fs::read_to_string(TOOLS_DOC).expect("docs/tools.md");
    let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with("## ")).collect();
    for name in &catalog {
        assert!(
            headings.iter().any(|h| names_word(h, name)),
            "docs/tools.md has no `## ` heading naming `{name}`, a tool of the default catalog; headings: {headings:?}"
        );
    }
}
