//! Rarely used built-ins waiting behind `tool_search` (layer 9 for built-ins).

use crate::support;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;
use tern_agent_loop::RuntimeTool;
use tern_catalog::{AgentKind, DisclosureTools, Layer, ModelFacts, Registry, ToolMeta, TurnFacts, assemble};
use tern_protocol::{ToolDefinition, ToolSource};

/// The usual built-ins plus the deferrable ones tern registers.
fn registry() -> Registry {
    let mut tools = builtins();
    tools.extend(["task_output", "task_stop", "task_append", "enter_plan_mode", "web_fetch", "skill"].map(builtin));
    Registry::new(tools).unwrap()
}

fn tool_bytes(tools: &[RuntimeTool]) -> String {
    let defs: Vec<&ToolDefinition> = tools.iter().map(|t| &t.definition).collect();
    serde_json::to_string(&defs).unwrap()
}

const WAITING: [&str; 7] = ["task", "task_output", "task_stop", "task_append", "enter_plan_mode", "web_fetch", "skill"];

#[test]
fn rarely_used_builtins_wait_behind_tool_search_by_default() {
    let a = assemble(&registry(), &deferring_facts(), &DisclosureTools::new());
    assert_eq!(names(&a), ["read", "write", "edit", "bash", "grep", "glob", "todo_write", "ask_user", "tool_search"]);
    let deferred: Vec<&str> = a.deferred.iter().map(|t| t.name()).collect();
    assert_eq!(deferred, WAITING);
    assert_eq!(a.disclosure.builtins_deferred, WAITING);
    assert!(!a.disclosure.deferred, "the MCP decision is apart: {}", a.disclosure.reason);
    let removed: Vec<(&str, Layer)> = a.removed.iter().map(|r| (r.name.as_str(), r.layer)).collect();
    assert_eq!(removed, WAITING.map(|n| (n, Layer::Disclosure)));
    let web = a.removed.iter().find(|r| r.name == "web_fetch").unwrap();
    assert_eq!(
        web.reason,
        "deferred built-in (only when a URL is involved): load it with tool_search select:web_fetch"
    );
}

#[test]
fn the_notice_has_one_line_per_waiting_builtin_and_one_per_group() {
    let a = assemble(&registry(), &deferring_facts(), &DisclosureTools::new());
    assert_eq!(
        a.deferred_builtins_notice().unwrap(),
        "# More tools\nTools may be added during the conversation.\n\
         Not loaded: get one with tool_search (select:NAME).\n\
         - task: hand a self-contained task to a subagent\n\
         - task_output, task_stop, task_append: read, stop or add work to a background task\n\
         - enter_plan_mode: read-only planning before a large change\n\
         - web_fetch: fetch a web page as Markdown\n\
         - skill: load a skill listed under Skills\n"
    );
    assert_eq!(assemble(&registry(), &facts(), &DisclosureTools::new()).deferred_builtins_notice(), None);
}

#[test]
fn mcp_tools_inline_or_deferred_add_the_line_that_more_tools_may_come() {
    let only = "# More tools\nTools may be added during the conversation.\n";
    let registry = |f: &TurnFacts| {
        let mut r = Registry::new(builtins()).unwrap();
        r.set_mcp_tools(server("calc", 2));
        assemble(&r, f, &DisclosureTools::new())
    };
    let inline = registry(&facts());
    assert!(!inline.disclosure.deferred && names(&inline).contains(&"mcp__calc__t0".to_string()));
    assert_eq!(inline.deferred_builtins_notice().as_deref(), Some(only));
    // Deferred behind tool_search (a tiny context window): the same line.
    let mut tiny = facts();
    tiny.model.context_window = 100;
    let deferred = registry(&tiny);
    assert!(deferred.disclosure.deferred, "{}", deferred.disclosure.reason);
    assert_eq!(deferred.deferred_builtins_notice().as_deref(), Some(only));
}

#[test]
fn config_and_named_tools_keep_builtins_inline() {
    let all_inline = ["read", "write", "edit", "bash", "grep", "glob", "todo_write", "task", "ask_user"]
        .into_iter()
        .chain(["task_output", "task_stop", "task_append", "enter_plan_mode", "web_fetch", "skill"])
        .collect::<Vec<_>>();
    let mut off = deferring_facts();
    off.config.disclosure.defer_builtins = false;
    let a = assemble(&registry(), &off, &DisclosureTools::new());
    assert_eq!(names(&a), all_inline);
    assert_eq!(a.disclosure.builtins_reason, "kept inline by config ([tool_disclosure] defer_builtins = false)");

    let mut master = deferring_facts();
    master.config.disclosure.enabled = false;
    let a = assemble(&registry(), &master, &DisclosureTools::new());
    assert_eq!(names(&a), all_inline);
    assert_eq!(a.disclosure.builtins_reason, "disabled in config ([tool_disclosure] enabled = false)");

    let mut named = deferring_facts();
    named.config.inline_builtins = ["web_fetch".to_string(), "Task".to_string()].into();
    let a = assemble(&registry(), &named, &DisclosureTools::new());
    let deferred: Vec<&str> = a.deferred.iter().map(|t| t.name()).collect();
    assert_eq!(deferred, ["task_output", "task_stop", "task_append", "enter_plan_mode", "skill"]);
    assert!(names(&a).contains(&"web_fetch".to_string()) && names(&a).contains(&"task".to_string()));
}

#[test]
fn a_loaded_builtin_is_appended_and_the_prefix_stays_byte_identical() {
    let r = registry();
    let dt = DisclosureTools::new();
    let mut f = deferring_facts();
    let first = assemble(&r, &f, &dt);
    let again = assemble(&r, &f, &dt);
    assert_eq!(tool_bytes(&first.tools), tool_bytes(&again.tools), "two turns, nothing loaded");
    f.activated = vec!["web_fetch".into(), "task".into()];
    let second = assemble(&r, &f, &dt);
    let n = first.tools.len();
    assert_eq!(tool_bytes(&second.tools[..n]), tool_bytes(&first.tools));
    assert_eq!(names(&second)[n..], ["web_fetch", "task"]);
    assert_eq!(second.deferred_builtins_notice(), first.deferred_builtins_notice(), "the system prompt stays");
    assert!(second.removed.iter().all(|r| r.name != "web_fetch" && r.name != "task"));
}

#[tokio::test]
async fn tool_search_loads_a_builtin_by_its_exact_name() {
    let r = registry();
    let dt = DisclosureTools::new();
    let mut f = deferring_facts();
    let first = assemble(&r, &f, &dt);
    dt.state.set_deferred(first.deferred.clone());
    let out = text(&call(&dt.tool_search, json!({"query": "select:web_fetch"})).await.unwrap());
    assert!(out.contains("### web_fetch\nThe web_fetch tool."), "{out}");
    assert!(!out.contains("mcp_invoke"), "no MCP tool is deferred, so mcp_invoke is not offered: {out}");
    f.activated = dt.state.activated();
    assert_eq!(f.activated, ["web_fetch"]);
    assert_eq!(names(&assemble(&r, &f, &dt)).last().unwrap(), "web_fetch");
}

#[test]
fn sdk_replacements_subagents_and_tool_less_models_follow_their_own_rules() {
    // An embedder's replacement is its own tool: never deferred.
    let mut r = registry();
    r.add_sdk_tool(tool_with("web_fetch", "the SDK's fetch", empty_schema(), ToolSource::Sdk), ToolMeta::READ_ONLY);
    let a = assemble(&r, &deferring_facts(), &DisclosureTools::new());
    assert!(names(&a).contains(&"web_fetch".to_string()));

    // A subagent never gets `task`: an earlier layer records it, not disclosure.
    let mut child = deferring_facts();
    child.agent.kind = AgentKind::Subagent;
    let a = assemble(&registry(), &child, &DisclosureTools::new());
    for delegating in ["task", "task_append"] {
        let removed = a.removed.iter().find(|r| r.name == delegating).unwrap();
        assert_eq!(removed.layer, Layer::Delegation, "{delegating}");
    }
    assert_eq!(a.disclosure.builtins_deferred, ["task_output", "task_stop", "web_fetch", "skill"]);

    // A model without tools gets nothing, and no tool_search.
    let mut none = TurnFacts { model: ModelFacts::new("plain", 8000), ..deferring_facts() };
    none.model.supports_tools = false;
    let a = assemble(&registry(), &none, &DisclosureTools::new());
    assert!(a.tools.is_empty() && a.deferred.is_empty());
}

#[test]
fn waiting_builtins_and_deferred_mcp_tools_share_one_tool_search() {
    let mut r = registry();
    r.set_mcp_tools(server("github", 3));
    let mut f = deferring_facts();
    f.model = ModelFacts::new("test-model", 100);
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert_eq!(names(&a)[8..], ["tool_search", "mcp_invoke"]);
    let deferred: Vec<&str> = a.deferred.iter().map(|t| t.name()).collect();
    assert_eq!(deferred[..7], WAITING);
    assert_eq!(deferred[7..], ["mcp__github__t0", "mcp__github__t1", "mcp__github__t2"]);
}

#[test]
fn tools_explain_names_what_waits_why_and_what_loads_it_up_front() {
    let a = assemble(&registry(), &deferring_facts(), &DisclosureTools::new());
    let plain = a.render_text(false);
    assert!(
        plain.contains(
            "Built-ins waiting behind tool_search: task, task_output, task_stop, task_append, enter_plan_mode, web_fetch, \
             skill \
             (load with select:NAME)\n"
        ),
        "{plain}"
    );
    let explained = a.render_text(true);
    assert!(
        explained.contains(
            "  task_stop        [disclosure]  deferred built-in (only after bash or task started a background task)"
        ),
        "{explained}"
    );
    assert!(
        explained.ends_with(
            "Built-ins: deferred — rarely used built-ins wait behind tool_search ([tool_disclosure] defer_builtins)\n\
             \x20 task is loaded up front when the prompt says subagent, delegate or in parallel\n\
             \x20 enter_plan_mode is loaded up front when the prompt asks for plan mode\n\
             \x20 web_fetch is loaded up front when the prompt has an http(s) URL\n\
             \x20 skill is loaded up front when the prompt names a skill or starts with /skill\n"
        ),
        "{explained}"
    );
    let json = serde_json::to_value(a.report()).unwrap();
    assert_eq!(json["disclosure"]["builtins_deferred"][5], "web_fetch");
    assert_eq!(
        json["loaded_by_first_prompt"][2],
        json!({"name": "web_fetch", "when": "the prompt has an http(s) URL"})
    );
}
