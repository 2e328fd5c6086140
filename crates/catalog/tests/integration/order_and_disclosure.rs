//! Stable order, activation, and the disclosure decision (layer 9).

use crate::support;

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use support::*;
use tern_agent_loop::RuntimeTool;
use tern_catalog::{
    Assembly, DEFERRED_REASON, DisclosureTools, Layer, ModelFacts, Registry, TurnFacts, assemble, estimate_tokens,
};
use tern_protocol::ToolDefinition;

fn with_mcp(tools: Vec<(RuntimeTool, bool)>) -> Registry {
    let mut r = Registry::new(builtins()).unwrap();
    r.set_mcp_tools(tools);
    r
}

/// Facts whose context window is small enough that any configured MCP tool is deferred.
fn tiny_window() -> TurnFacts {
    let mut f = facts();
    f.model = ModelFacts::new("test-model", 100);
    f
}

fn prefix_bytes(a: &Assembly, n: usize) -> String {
    let defs: Vec<&ToolDefinition> = a.tools.iter().take(n).map(|t| &t.definition).collect();
    serde_json::to_string(&defs).unwrap()
}

#[test]
fn mcp_tools_follow_builtins_sorted_by_name() {
    let r = with_mcp(vec![
        (mcp("zeta", "a"), true),
        (mcp("alpha", "zz"), true),
        (builtin_mcp("tern", "m"), true),
        (mcp("alpha", "b"), true),
    ]);
    let a = assemble(&r, &facts(), &DisclosureTools::new());
    assert_eq!(names(&a)[builtins().len()..], ["mcp__alpha__b", "mcp__alpha__zz", "mcp__tern__m", "mcp__zeta__a"]);
    assert_eq!(names(&a)[..builtins().len()], builtins().iter().map(|t| t.name().to_string()).collect::<Vec<_>>());
}

#[test]
fn adding_mcp_servers_never_changes_the_builtin_prefix() {
    let n = builtins().len();
    let dt = DisclosureTools::new();
    let none = assemble(&with_mcp(Vec::new()), &facts(), &dt);
    let one = assemble(&with_mcp(server("aaa", 2)), &facts(), &dt);
    let three = {
        let mut tools = server("aaa", 2);
        tools.extend(server("mmm", 3));
        tools.extend(server("zzz", 1));
        assemble(&with_mcp(tools.clone()), &facts(), &dt)
    };
    let deferring = {
        let mut tools = server("aaa", 2);
        tools.extend(server("zzz", 1));
        assemble(&with_mcp(tools), &tiny_window(), &dt)
    };
    assert!(!three.disclosure.deferred && deferring.disclosure.deferred);
    let expected = prefix_bytes(&none, n);
    assert_eq!(none.tools.len(), n);
    for a in [&one, &three, &deferring] {
        assert_eq!(prefix_bytes(a, n), expected);
    }
    assert_eq!(three.tools.len(), n + 6);
    assert_eq!(names(&deferring)[n..], ["tool_search", "mcp_invoke"]);
}

#[test]
fn activated_tools_are_appended_in_activation_order() {
    let mut tools = server("github", 3);
    tools.extend(server("docs", 1));
    tools.push((builtin_mcp("tern", "help"), true));
    let r = with_mcp(tools);
    let mut f = tiny_window();
    f.config.always_load_servers = ["docs".to_string()].into();
    f.activated =
        vec!["mcp__github__t2".into(), "mcp__gone__x".into(), "mcp__github__t0".into(), "mcp__github__t2".into()];
    let a = assemble(&r, &f, &DisclosureTools::new());
    let n = builtins().len();
    assert_eq!(
        names(&a)[n..],
        ["tool_search", "mcp_invoke", "mcp__docs__t0", "mcp__tern__help", "mcp__github__t2", "mcp__github__t0"]
    );
    let deferred: Vec<&str> = a.deferred.iter().map(|t| t.name()).collect();
    assert_eq!(deferred, ["mcp__github__t0", "mcp__github__t1", "mcp__github__t2"]);
    let removed: Vec<(&str, Layer, &str)> =
        a.removed.iter().map(|r| (r.name.as_str(), r.layer, r.reason.as_str())).collect();
    assert_eq!(removed, [("mcp__github__t1", Layer::Disclosure, DEFERRED_REASON)]);
    assert_eq!(a.disclosure.deferred_by_server, BTreeMap::from([("github".to_string(), 3)]));
}

#[test]
fn activation_of_an_inline_tool_adds_nothing() {
    let r = with_mcp(server("github", 2));
    let mut f = facts();
    f.activated = vec!["mcp__github__t1".into()];
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert_eq!(names(&a)[builtins().len()..], ["mcp__github__t0", "mcp__github__t1"]);
}

/// Facts whose threshold sits exactly at `tokens` (or one below with `above`).
fn facts_at_threshold(tokens: u64, above: bool) -> TurnFacts {
    let window = if above { 2 * tokens - 2 } else { 2 * tokens };
    let mut f = facts();
    f.model = ModelFacts::new("test-model", window);
    f.config.disclosure.threshold_pct = 0.5;
    f
}

#[test]
fn defers_only_when_the_estimate_exceeds_the_threshold() {
    let tools = server("github", 4);
    let estimate: u64 = tools.iter().map(|(t, _)| estimate_tokens(&t.definition)).sum();
    let r = with_mcp(tools);

    let at = assemble(&r, &facts_at_threshold(estimate, false), &DisclosureTools::new());
    assert!(!at.disclosure.deferred);
    assert_eq!(at.disclosure.reason, format!("estimated {estimate} tokens ≤ 50% of {} = {estimate}", 2 * estimate));
    assert_eq!((at.disclosure.candidates, at.disclosure.estimated_tokens), (4, estimate));
    assert!(at.deferred.is_empty() && at.deferred_notice().is_none());

    let above = assemble(&r, &facts_at_threshold(estimate, true), &DisclosureTools::new());
    assert!(above.disclosure.deferred);
    assert_eq!(
        above.disclosure.reason,
        format!("estimated {estimate} tokens > 50% of {} = {}", 2 * estimate - 2, estimate - 1)
    );
    assert_eq!(above.disclosure.threshold_tokens, estimate - 1);
    assert_eq!(above.deferred.len(), 4);
}

#[test]
fn default_threshold_is_15_percent_of_the_window() {
    let r = with_mcp(server("github", 1));
    let a = assemble(&r, &facts(), &DisclosureTools::new());
    assert_eq!(a.disclosure.threshold_tokens, 30_000);
    let e = a.disclosure.estimated_tokens;
    assert_eq!(a.disclosure.reason, format!("estimated {e} tokens ≤ 15% of 200000 = 30000"));
}

#[test]
fn min_defer_count_disabled_and_eligibility_keep_tools_inline() {
    let r = with_mcp(server("github", 3));
    let mut f = tiny_window();
    f.config.disclosure.min_defer_count = 4;
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert_eq!(a.disclosure.reason, "3 candidates, fewer than min_defer_count 4");
    assert_eq!(names(&a).len(), builtins().len() + 3);

    f.config.disclosure.min_defer_count = 3;
    assert!(assemble(&r, &f, &DisclosureTools::new()).disclosure.deferred);

    f.config.disclosure.enabled = false;
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert_eq!((a.disclosure.deferred, a.disclosure.reason.as_str()), (false, "disabled in config"));

    f.config.disclosure.enabled = true;
    f.config.disclosure.eligible_models = Some(vec!["claude-*".into()]);
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert!(!a.disclosure.deferred);
    assert!(a.disclosure.reason.starts_with("model test-model not eligible"), "{}", a.disclosure.reason);
    f.model.name = "claude-haiku-4-5".into();
    assert!(assemble(&r, &f, &DisclosureTools::new()).disclosure.deferred);
}

#[test]
fn always_load_servers_and_builtin_mcp_stay_inline() {
    let mut tools = server("github", 2);
    tools.extend(server("docs", 2));
    tools.push((builtin_mcp("tern", "help"), true));
    let r = with_mcp(tools);
    let mut f = tiny_window();
    f.config.always_load_servers = ["Docs".to_string()].into();
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert!(a.disclosure.deferred);
    assert_eq!(a.disclosure.candidates, 2);
    assert_eq!(
        names(&a)[builtins().len()..],
        ["tool_search", "mcp_invoke", "mcp__docs__t0", "mcp__docs__t1", "mcp__tern__help"]
    );

    let only_builtin_mcp = with_mcp(vec![(builtin_mcp("tern", "help"), true)]);
    let a = assemble(&only_builtin_mcp, &tiny_window(), &DisclosureTools::new());
    assert!(!a.disclosure.deferred);
    assert!(a.disclosure.reason.starts_with("no candidates"), "{}", a.disclosure.reason);
    assert!(names(&a).contains(&"mcp__tern__help".to_string()));
}

#[test]
fn removed_mcp_tools_are_not_candidates() {
    let r = with_mcp(server("github", 3));
    let mut f = tiny_window();
    f.config.mcp_deny = vec!["github".into()];
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert_eq!(a.disclosure.candidates, 0);
    assert!(a.removed.iter().all(|r| r.layer == Layer::McpServer));
}

#[test]
fn deferred_notice_names_servers_and_explains_search() {
    let mut tools = server("github", 3);
    tools.extend(server("linear", 1));
    let a = assemble(&with_mcp(tools), &tiny_window(), &DisclosureTools::new());
    assert_eq!(
        a.deferred_notice().unwrap(),
        "Deferred MCP tools, not in your tool list until loaded: github (3 tools), linear (1 tool). \
         Load them with tool_search (words, or select:name1,name2), then call them by name."
    );
}

#[test]
fn report_counts_bytes_and_explains_removals() {
    let mut tools = server("github", 2);
    tools.push((builtin_mcp("tern", "help"), true));
    let mut f = tiny_window();
    f.config.excluded = vec!["bash".into()];
    let a = assemble(&with_mcp(tools), &f, &DisclosureTools::new());
    let report = a.report();
    assert_eq!(report.tools.len(), a.tools.len());
    assert_eq!(report.total_bytes, report.tools.iter().map(|t| t.bytes).sum::<usize>());
    assert_eq!(report.deferred, ["mcp__github__t0", "mcp__github__t1"]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["removed"][0]["layer"], "excluded");
    assert_eq!(json["tools"][0]["source"]["kind"], "builtin");
    assert_eq!(json["disclosure"]["deferred"], true);

    let plain = a.render_text(false);
    assert!(plain.starts_with(" #  name"), "{plain}");
    assert!(plain.contains(" 1  read "), "{plain}");
    assert!(plain.contains("mcp__tern__help  builtin-mcp:tern"), "{plain}");
    assert!(plain.contains(&format!("Total: {} tools, {} bytes", a.tools.len(), report.total_bytes)), "{plain}");
    assert!(plain.contains("Deferred behind tool_search: 2 tools (github: 2)"), "{plain}");
    assert!(!plain.contains("Removed:"));

    let explained = a.render_text(true);
    let e = a.disclosure.estimated_tokens;
    assert_eq!(
        explained.strip_prefix(&plain).unwrap(),
        format!(
            "\nRemoved:\n\
             \x20 bash             [excluded]    excluded by --disallowed-tools / config `exclude_tools`\n\
             \x20 mcp__github__t0  [disclosure]  deferred: find it with tool_search\n\
             \x20 mcp__github__t1  [disclosure]  deferred: find it with tool_search\n\
             \nDisclosure: deferred — estimated {e} tokens > 15% of 100 = 15\n\
             \x20 2 candidates, estimated {e} tokens, threshold 15 tokens\n\
             Built-ins: inline — kept inline by config ([tool_disclosure] defer_builtins = false)\n"
        )
    );
}
