//! `tool_search` and `mcp_invoke` over stand-in deferred tools.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;
use tern_agent_loop::RuntimeTool;
use tern_catalog::{DisclosureTools, ModelFacts, Registry, TurnFacts, assemble};
use tern_protocol::ToolSource;

fn configured(server: &str, tool: &str, description: &str, schema: Value) -> RuntimeTool {
    tool_with(
        &format!("mcp__{server}__{tool}"),
        description,
        schema,
        ToolSource::ConfiguredMcp { server: server.into() },
    )
}

fn catalog_tools() -> Vec<RuntimeTool> {
    vec![
        configured(
            "github",
            "create_issue",
            "Create a new issue in a repository.",
            json!({
                "type": "object",
                "properties": {"title": {"type": "string"}, "body": {"type": "string", "description": "Markdown text"}},
                "required": ["title"]
            }),
        ),
        configured(
            "github",
            "list_issues",
            "List issues of a repository.",
            json!({
                "type": "object",
                "properties": {"state": {"type": "string", "enum": ["open", "closed"]}}
            }),
        ),
        configured("api", "getUserId2", "Look up an account.", empty_schema()),
        configured("tracker", "new_ticket", "创建新的问题单", empty_schema()),
        configured("tracker", "close_ticket", "关闭问题单", empty_schema()),
        configured("linear", "search", "Search Linear.", empty_schema()),
        configured("jira", "search", "Search Jira.", empty_schema()),
    ]
}

fn disclosure(tools: Vec<RuntimeTool>) -> DisclosureTools {
    let dt = DisclosureTools::new();
    dt.state.set_deferred(tools);
    dt
}

async fn search(dt: &DisclosureTools, input: Value) -> String {
    text(&call(&dt.tool_search, input).await.unwrap())
}

/// The `### name` headers of a search result, in order.
fn hits(out: &str) -> Vec<String> {
    out.lines().filter_map(|l| l.strip_prefix("### ")).map(|l| l.split(' ').next().unwrap().to_string()).collect()
}

#[tokio::test]
async fn finds_code_style_names_by_their_words() {
    let dt = disclosure(catalog_tools());
    let out = search(&dt, json!({"query": "user id"})).await;
    assert_eq!(hits(&out)[0], "mcp__api__getUserId2");
    let out = search(&dt, json!({"query": "get user ID 2", "top_k": 1})).await;
    assert_eq!(hits(&out), ["mcp__api__getUserId2"]);
}

#[tokio::test]
async fn finds_by_schema_words_and_shows_the_schema() {
    let dt = disclosure(catalog_tools());
    let out = search(&dt, json!({"query": "closed", "top_k": 5})).await;
    assert_eq!(hits(&out), ["mcp__github__list_issues"]);
    assert!(
        out.contains("### mcp__github__list_issues (server github)\nList issues of a repository.\nInput schema: {"),
        "{out}"
    );
    assert!(out.contains(r#""enum":["open","closed"]"#), "{out}");
    assert!(out.contains(
        "These tools are now available: call them directly by name from your next step, or through mcp_invoke"
    ));
}

#[tokio::test]
async fn cjk_queries_match_by_characters_and_pairs() {
    let dt = disclosure(catalog_tools());
    let out = search(&dt, json!({"query": "创建问题"})).await;
    assert_eq!(hits(&out)[0], "mcp__tracker__new_ticket");
    let out = search(&dt, json!({"query": "关闭"})).await;
    assert_eq!(hits(&out), ["mcp__tracker__close_ticket"]);
}

#[tokio::test]
async fn select_takes_exact_and_unique_bare_names_and_activates_in_order() {
    let dt = disclosure(catalog_tools());
    let out = search(&dt, json!({"query": "select:list_issues, mcp__github__create_issue,list_issues"})).await;
    assert_eq!(hits(&out), ["mcp__github__list_issues", "mcp__github__create_issue"]);
    assert_eq!(dt.state.activated(), ["mcp__github__list_issues", "mcp__github__create_issue"]);

    let out = search(&dt, json!({"query": "select:search,nope_tool,getUserId2"})).await;
    assert!(
        out.contains("`search` matches several tools: mcp__jira__search, mcp__linear__search; use the full name."),
        "{out}"
    );
    assert!(out.contains("No deferred tool is named `nope_tool`"), "{out}");
    assert_eq!(hits(&out), ["mcp__api__getUserId2"]);
    // Activation appends once, in order.
    search(&dt, json!({"query": "select:mcp__github__create_issue"})).await;
    assert_eq!(dt.state.activated(), ["mcp__github__list_issues", "mcp__github__create_issue", "mcp__api__getUserId2"]);
}

#[tokio::test]
async fn regex_filters_names_and_descriptions() {
    let dt = disclosure(catalog_tools());
    let out = search(&dt, json!({"regex": "^mcp__GITHUB__"})).await;
    assert_eq!(hits(&out), ["mcp__github__create_issue", "mcp__github__list_issues"]);
    let out = search(&dt, json!({"regex": "linear|jira", "query": "search jira"})).await;
    assert_eq!(hits(&out), ["mcp__jira__search", "mcp__linear__search"]);
    let err = call(&dt.tool_search, json!({"regex": "("})).await.unwrap_err();
    assert!(err.message.starts_with("tool_search: `regex` is not a valid regular expression"), "{}", err.message);
}

#[tokio::test]
async fn top_k_defaults_to_5_and_is_clamped_to_20() {
    let many: Vec<RuntimeTool> =
        (0..30).map(|i| configured("bulk", &format!("op{i:02}"), "Bulk operation.", empty_schema())).collect();
    let dt = disclosure(many);
    assert_eq!(hits(&search(&dt, json!({"query": "bulk operation"})).await).len(), 5);
    let out = search(&dt, json!({"query": "bulk operation", "top_k": 100})).await;
    assert_eq!(hits(&out).len(), 20);
    assert!(out.starts_with("Showing the best 20 of 30 matching tools"), "{out}");
    assert_eq!(hits(&search(&dt, json!({"query": "bulk", "top_k": "3"})).await).len(), 3);
    assert_eq!(hits(&search(&dt, json!({"query": "bulk", "top_k": 0})).await).len(), 1);
    assert_eq!(dt.state.activated().len(), 20);
}

#[tokio::test]
async fn needs_query_or_regex_and_says_when_nothing_matches() {
    let dt = disclosure(catalog_tools());
    let err = call(&dt.tool_search, json!({"top_k": 3})).await.unwrap_err();
    assert_eq!(err.message, "tool_search needs `query` (words, or select:name1,name2) or `regex`; it got neither.");
    let out = search(&dt, json!({"query": "kubernetes"})).await;
    assert!(out.starts_with("No deferred tool matches \"kubernetes\". Try other words"), "{out}");
    assert!(out.contains("Deferred tools by source: api (1), github (2), jira (1), linear (1), tracker (2)."), "{out}");
    assert!(dt.state.activated().is_empty());

    let nothing = disclosure(Vec::new());
    assert!(search(&nothing, json!({"query": "x"})).await.starts_with("No tools are deferred right now"));
}

#[tokio::test]
async fn bm25_ranks_the_described_tool_first_among_200() {
    let verbs = ["create", "delete", "list", "update", "archive", "merge", "sync", "export", "import", "clone"];
    let nouns = ["issue", "branch", "invoice", "contact", "ticket", "bucket", "album", "channel", "pipeline", "widget"];
    let adjectives =
        ["shared", "private", "stale", "pinned", "remote", "draft", "public", "nested", "frozen", "hidden"];
    let domains = ["warehouse", "calendar"];
    let description = |i: usize| {
        format!(
            "Tool that can {} a {} {} in the {}.",
            verbs[i % 10],
            adjectives[(i * 7) % 10],
            nouns[(i / 10) % 10],
            domains[i / 100]
        )
    };
    let tools: Vec<RuntimeTool> =
        (0..200).map(|i| configured("gen", &format!("tool_{i}"), &description(i), empty_schema())).collect();
    let dt = disclosure(tools);
    let out = search(&dt, json!({"query": description(137)})).await;
    assert_eq!(hits(&out)[0], "mcp__gen__tool_137", "{out}");
    assert_eq!(dt.state.activated()[0], "mcp__gen__tool_137");
}

fn calculator() -> (RuntimeTool, Arc<Echo>) {
    let echo = Arc::new(Echo::default());
    let tool = RuntimeTool::new(
        definition(
            "mcp__calc__double",
            "Double a number.",
            json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
                "additionalProperties": false
            }),
        ),
        echo.clone(),
        ToolSource::ConfiguredMcp { server: "calc".into() },
    );
    (tool, echo)
}

#[tokio::test]
async fn mcp_invoke_validates_then_calls_the_deferred_tool() {
    let (double, echo) = calculator();
    let dt = disclosure(vec![double, configured("calc", "triple", "Triple a number.", empty_schema())]);

    let out = call(&dt.mcp_invoke, json!({"tool": "mcp__calc__double", "arguments": {"n": 2}})).await.unwrap();
    assert_eq!(text(&out), r#"mcp__calc__double got {"n":2}"#);
    assert_eq!(echo.calls.load(Ordering::SeqCst), 1);

    // The bare name works when unique; arguments sent as a JSON string are accepted.
    let out = call(&dt.mcp_invoke, json!({"tool": "double", "arguments": "{\"n\": 5}"})).await.unwrap();
    assert_eq!(text(&out), r#"mcp__calc__double got {"n":5}"#);

    let err = call(&dt.mcp_invoke, json!({"tool": "mcp__calc__double", "arguments": {"n": "two"}})).await.unwrap_err();
    assert!(
        err.message
            .starts_with("mcp_invoke: the arguments for `mcp__calc__double` do not match its input schema:\n- at `/n`"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains(r#"Input schema: {"type":"object","properties":{"n":{"type":"integer"}}"#),
        "{}",
        err.message
    );
    let err = call(&dt.mcp_invoke, json!({"tool": "double"})).await.unwrap_err();
    assert!(err.message.contains("\"n\" is a required property"), "{}", err.message);
    assert_eq!(echo.calls.load(Ordering::SeqCst), 2);

    // A number sent as a string is conformed to the tool's schema, and the result says so.
    let out = call(&dt.mcp_invoke, json!({"tool": "double", "arguments": {"n": "7"}})).await.unwrap();
    assert_eq!(text(&out), "mcp__calc__double got {\"n\":7}[Note: understood `n: \"7\"` as 7.]");
    assert_eq!(echo.calls.load(Ordering::SeqCst), 3);

    // Understood before it is judged: the permission hooks and rules see the
    // arguments that run, not the ones as sent.
    let (judged, notes) = dt.mcp_invoke.understand(json!({"tool": "double", "arguments": {"n": "7"}}));
    assert_eq!(judged, json!({"tool": "mcp__calc__double", "arguments": {"n": 7}}));
    assert_eq!(notes.len(), 1, "{notes:?}");
}

#[tokio::test]
async fn mcp_invoke_unknown_or_ambiguous_tools_get_pointers() {
    let (double, echo) = calculator();
    let mut tools = catalog_tools();
    tools.push(double);
    let dt = disclosure(tools);
    let err = call(&dt.mcp_invoke, json!({"tool": "mcp__calc__dbl_number", "arguments": {}})).await.unwrap_err();
    assert!(
        err.message.starts_with(
            "mcp_invoke: no deferred tool is named `mcp__calc__dbl_number`. Close names: mcp__calc__double"
        ),
        "{}",
        err.message
    );
    assert!(err.message.contains("Find the right one with tool_search"));
    // No shared word: spelling decides.
    let err = call(&dt.mcp_invoke, json!({"tool": "dubble", "arguments": {}})).await.unwrap_err();
    assert!(err.message.contains("Close names: mcp__calc__double."), "{}", err.message);

    let err = call(&dt.mcp_invoke, json!({"tool": "search", "arguments": {}})).await.unwrap_err();
    assert_eq!(
        err.message,
        "mcp_invoke: `search` matches several tools: mcp__jira__search, mcp__linear__search. Use the full name."
    );
    let out = call(&dt.mcp_invoke, json!({"tool": "search", "server": "jira", "arguments": {}})).await.unwrap();
    assert_eq!(text(&out), "mcp__jira__search got {}");

    let err = call(&dt.mcp_invoke, json!({"tool": "double", "arguments": [1]})).await.unwrap_err();
    assert!(err.message.contains(r#"[1] is not of type "object""#), "{}", err.message);
    assert_eq!(echo.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn search_activation_flows_into_the_next_assembly() {
    let mut r = Registry::new(builtins()).unwrap();
    r.set_mcp_tools(catalog_tools().into_iter().map(|t| (t, true)).collect());
    let dt = DisclosureTools::new();
    let mut facts = TurnFacts::new(ModelFacts::new("test-model", 1000));
    let first = assemble(&r, &facts, &dt);
    assert!(first.disclosure.deferred);
    dt.state.set_deferred(first.deferred.clone());

    search(&dt, json!({"query": "select:getUserId2,create_issue"})).await;
    facts.activated = dt.state.activated();
    let second = assemble(&r, &facts, &dt);
    let list = names(&second);
    assert_eq!(list[list.len() - 2..], ["mcp__api__getUserId2", "mcp__github__create_issue"]);
    assert_eq!(names(&first), list[..list.len() - 2]);
    assert_eq!(second.deferred.len(), first.deferred.len());
}
