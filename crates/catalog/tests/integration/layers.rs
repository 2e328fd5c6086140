//! The registry's rules and each of layers 1-8, in order.

use crate::support;

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;
use tern_catalog::{
    AgentKind, Capability, CatalogError, DisclosureTools, FrontEnd, Layer, Registry, Removal, SubagentRole, ToolMeta,
    TurnFacts, assemble,
};
use tern_protocol::ToolSource;

fn registry() -> Registry {
    let mut r = Registry::new(builtins()).unwrap();
    r.set_mcp_tools(vec![
        (mcp("github", "list_issues"), true),
        (mcp("github", "create_issue"), false),
        (mcp("slack", "post"), false),
        (builtin_mcp("tern_docs", "search"), true),
    ]);
    r
}

fn removal(assembly: &tern_catalog::Assembly, name: &str) -> Option<(Layer, String)> {
    assembly.removed.iter().find(|r| r.name == name).map(|r| (r.layer, r.reason.clone()))
}

fn run(facts: &TurnFacts) -> tern_catalog::Assembly {
    assemble(&registry(), facts, &DisclosureTools::new())
}

#[test]
fn everything_passes_for_the_main_agent_by_default() {
    let a = run(&facts());
    assert_eq!(
        names(&a),
        [
            "read",
            "write",
            "edit",
            "bash",
            "grep",
            "glob",
            "todo_write",
            "task",
            "ask_user",
            "mcp__github__create_issue",
            "mcp__github__list_issues",
            "mcp__slack__post",
            "mcp__tern_docs__search"
        ]
    );
    assert!(a.removed.is_empty(), "{:?}", a.removed);
}

#[test]
fn duplicate_builtin_is_an_error() {
    let err = Registry::new(vec![builtin("read"), builtin("bash"), builtin("read")]).unwrap_err();
    assert_eq!(err, CatalogError::DuplicateBuiltin("read".into()));
    assert!(err.to_string().contains("`read`"));
    let mut r = Registry::new(vec![builtin("read")]).unwrap();
    assert_eq!(
        r.builtin_with_meta(builtin("read"), ToolMeta::READ_ONLY),
        Err(CatalogError::DuplicateBuiltin("read".into()))
    );
}

#[test]
fn builtin_meta_comes_from_the_fixed_table() {
    let r = Registry::new(builtins()).unwrap();
    let meta = |n: &str| r.get(n).unwrap().meta;
    assert!(meta("write").writes && meta("edit").writes);
    assert_eq!(ToolMeta::for_builtin("notebook_edit"), ToolMeta::WRITES);
    assert!(meta("task").delegation && !meta("task").writes);
    assert_eq!(meta("read"), ToolMeta::READ_ONLY);
    assert_eq!(meta("bash"), ToolMeta::READ_ONLY);
}

#[test]
fn extension_first_registration_wins_and_builtin_names_are_refused() {
    let mut r = Registry::new(builtins()).unwrap();
    let ext = |id: &str, name: &str| tool_with(name, id, empty_schema(), ToolSource::Extension { id: id.into() });
    assert_eq!(r.add_extension_tool(ext("a", "lint"), ToolMeta::READ_ONLY), None);
    let warning = r.add_extension_tool(ext("b", "lint"), ToolMeta::WRITES).unwrap();
    assert_eq!(warning, "extension `b` registers tool `lint`, already registered by extension `a`; keeping the first");
    let warning = r.add_extension_tool(ext("b", "bash"), ToolMeta::READ_ONLY).unwrap();
    assert!(warning.contains("the name of a built-in tool"), "{warning}");
    assert!(r.add_extension_tool(ext("b", "tool_search"), ToolMeta::READ_ONLY).is_some());
    assert_eq!(r.warnings().len(), 3);
    let kept = r.get("lint").unwrap();
    assert_eq!(kept.tool.source, ToolSource::Extension { id: "a".into() });
    assert_eq!(kept.meta, ToolMeta::READ_ONLY);
    assert_eq!(r.get("bash").unwrap().tool.source, ToolSource::Builtin);
}

#[test]
fn sdk_tool_replaces_a_builtin_in_place_and_extras_follow_builtins() {
    let mut r = Registry::new(builtins()).unwrap();
    r.add_extension_tool(
        tool_with("lint", "", empty_schema(), ToolSource::Extension { id: "x".into() }),
        ToolMeta::READ_ONLY,
    );
    r.set_mcp_tools(vec![(mcp("github", "list_issues"), true)]);
    r.add_sdk_tool(tool_with("bash", "sandboxed bash", empty_schema(), ToolSource::Sdk), ToolMeta::WRITES);
    r.add_sdk_tool(tool_with("deploy", "", empty_schema(), ToolSource::Sdk), ToolMeta::WRITES);
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    let a = assemble(&r, &facts(), &DisclosureTools::new());
    assert_eq!(
        names(&a),
        [
            "read",
            "write",
            "edit",
            "bash",
            "grep",
            "glob",
            "todo_write",
            "task",
            "ask_user",
            "deploy",
            "lint",
            "mcp__github__list_issues"
        ]
    );
    assert_eq!(a.tools[3].source, ToolSource::Sdk);
    assert_eq!(a.tools[3].definition.description, "sandboxed bash");
    assert_eq!(r.get("bash").unwrap().meta, ToolMeta::WRITES);
}

#[test]
fn sdk_tool_displaces_an_extension_of_the_same_name_with_a_warning() {
    let mut r = Registry::new(builtins()).unwrap();
    r.add_extension_tool(
        tool_with("lint", "", empty_schema(), ToolSource::Extension { id: "x".into() }),
        ToolMeta::READ_ONLY,
    );
    r.add_sdk_tool(tool_with("lint", "", empty_schema(), ToolSource::Sdk), ToolMeta::READ_ONLY);
    assert_eq!(r.get("lint").unwrap().tool.source, ToolSource::Sdk);
    assert_eq!(r.warnings(), ["SDK tool `lint` replaces the tool of the same name from extension `x`"]);
}

#[test]
fn mcp_name_clashes_keep_one_tool_and_warn() {
    let mut r = Registry::new(builtins()).unwrap();
    let clash = tool_with("mcp__a__x", "second", empty_schema(), ToolSource::ConfiguredMcp { server: "b".into() });
    r.set_mcp_tools(vec![
        (mcp("a", "x"), true),
        (clash, true),
        (tool_with("read", "", empty_schema(), ToolSource::ConfiguredMcp { server: "c".into() }), true),
    ]);
    assert_eq!(r.len(), builtins().len() + 1);
    assert_eq!(r.warnings().len(), 2, "{:?}", r.warnings());
    assert_eq!(r.get("mcp__a__x").unwrap().tool.definition.description, "x on a");
    assert_eq!(r.get("read").unwrap().tool.source, ToolSource::Builtin);
    r.set_mcp_tools(Vec::new());
    assert!(r.warnings().is_empty());
}

#[test]
fn layer_1_excluded_names_are_normalised() {
    let mut f = facts();
    f.config.excluded = vec![" BASH ".into(), "ｇｒｅｐ".into(), "mcp__slack__*".into(), "Write(src/**)".into()];
    let a = run(&f);
    let why = "excluded by --disallowed-tools / config `exclude_tools`".to_string();
    assert_eq!(removal(&a, "bash"), Some((Layer::Excluded, why.clone())));
    assert_eq!(removal(&a, "grep"), Some((Layer::Excluded, why.clone())));
    assert_eq!(removal(&a, "mcp__slack__post"), Some((Layer::Excluded, why)));
    // A permission rule restricts use; it does not remove the tool.
    assert!(names(&a).contains(&"write".to_string()));
}

#[test]
fn layer_2_availability() {
    let mut f = facts();
    f.platform.unavailable = BTreeMap::from([("grep".to_string(), "ripgrep libraries not built in".to_string())]);
    let a = run(&f);
    assert_eq!(
        removal(&a, "grep"),
        Some((Layer::Availability, "backend missing: ripgrep libraries not built in".into()))
    );
    assert!(names(&a).contains(&"ask_user".to_string()));

    f.front_end = FrontEnd::Headless;
    let a = run(&f);
    assert_eq!(removal(&a, "ask_user").map(|r| r.0), Some(Layer::Availability));
}

#[test]
fn layer_3_agent_selector_compares_nfkc_trimmed_lowercase() {
    let mut f = facts();
    f.agent.name = Some("reviewer".into());
    f.agent.tools =
        vec!["ＲＥＡＤ".into(), " Grep ".into(), "gLoB".into(), "mcp__github__*".into(), "bash(git:*)".into()];
    f.agent.disallowed_tools = vec!["MCP__GITHUB__CREATE_ISSUE".into()];
    let a = run(&f);
    assert_eq!(names(&a), ["read", "bash", "grep", "glob", "mcp__github__list_issues"]);
    assert_eq!(removal(&a, "write"), Some((Layer::AgentSelector, "not in agent `reviewer`'s tools list".into())));
    assert_eq!(
        removal(&a, "mcp__github__create_issue"),
        Some((Layer::AgentSelector, "agent `reviewer` disallows it".into()))
    );

    let mut f = facts();
    f.agent.disallowed_tools = vec!["Edit".into()];
    assert_eq!(removal(&run(&f), "edit"), Some((Layer::AgentSelector, "the agent disallows it".into())));
}

#[test]
fn layer_4_mcp_server_allow_and_deny() {
    let mut f = facts();
    f.config.mcp_deny = vec!["slack".into()];
    let a = run(&f);
    assert_eq!(removal(&a, "mcp__slack__post"), Some((Layer::McpServer, "MCP server `slack` denied".into())));
    assert!(names(&a).contains(&"mcp__github__list_issues".to_string()));

    f.config.mcp_allow = Some(vec!["GitHub".into()]);
    let a = run(&f);
    assert_eq!(
        removal(&a, "mcp__tern_docs__search"),
        Some((Layer::McpServer, "MCP server `tern_docs` is not in the allowed servers".into()))
    );
    assert_eq!(removal(&a, "mcp__slack__post").map(|r| r.0), Some(Layer::McpServer));
    assert!(names(&a).contains(&"mcp__github__create_issue".to_string()));
    // Built-ins are not MCP tools: never touched by this layer.
    assert!(names(&a).contains(&"read".to_string()));
}

#[test]
fn layer_5_delegation_only_for_the_authoritative_main_agent() {
    let mut f = facts();
    f.agent.kind = AgentKind::Main { authoritative: false };
    let a = run(&f);
    assert_eq!(
        removal(&a, "task"),
        Some((Layer::Delegation, "delegation is only for the authoritative main agent".into()))
    );
    assert!(names(&a).contains(&"todo_write".to_string()));
}

#[test]
fn layer_6_subagents_never_get_task_todo_write_ask_user() {
    let mut f = facts();
    f.agent.kind = AgentKind::Subagent;
    // Even when the agent's own list asks for them.
    f.agent.tools = vec!["read".into(), "todo_write".into(), "ask_user".into(), "task".into()];
    let a = run(&f);
    assert_eq!(names(&a), ["read"]);
    let cap = "subagents never get todo_write/task/ask_user or the plan-mode tools".to_string();
    assert_eq!(removal(&a, "todo_write"), Some((Layer::ProfileCap, cap.clone())));
    assert_eq!(removal(&a, "ask_user"), Some((Layer::ProfileCap, cap)));
    // `task` is a delegation tool: layer 5 removes it first.
    assert_eq!(removal(&a, "task").map(|r| r.0), Some(Layer::Delegation));
}

#[test]
fn layer_7_role_caps() {
    let mut f = facts();
    f.agent.kind = AgentKind::Subagent;
    f.agent.role = Some(SubagentRole::Explore);
    let a = run(&f);
    assert_eq!(names(&a), ["read", "bash", "grep", "glob", "mcp__github__list_issues", "mcp__tern_docs__search"]);
    assert_eq!(removal(&a, "write"), Some((Layer::RoleCap, "role `explore` is read-only".into())));
    assert_eq!(removal(&a, "mcp__slack__post"), Some((Layer::RoleCap, "role `explore` is read-only".into())));

    f.agent.role = Some(SubagentRole::Verifier);
    assert_eq!(removal(&run(&f), "edit"), Some((Layer::RoleCap, "role `verifier` is read-only".into())));

    // A worker keeps writing tools; its delegation is capped (seen here on a
    // main agent, since for a subagent layer 5 already removed it).
    f.agent.kind = AgentKind::Main { authoritative: true };
    f.agent.role = Some(SubagentRole::Worker);
    let a = run(&f);
    assert_eq!(removal(&a, "task"), Some((Layer::RoleCap, "worker may not delegate".into())));
    assert!(names(&a).contains(&"write".to_string()));
}

#[test]
fn plan_mode_removes_every_writing_tool() {
    let mut f = facts();
    f.agent.plan_mode = true;
    let a = run(&f);
    let reason = "plan mode is read-only: no changes until the plan is approved".to_string();
    assert_eq!(removal(&a, "write"), Some((Layer::RoleCap, reason.clone())));
    assert_eq!(removal(&a, "edit"), Some((Layer::RoleCap, reason.clone())));
    assert_eq!(removal(&a, "mcp__slack__post"), Some((Layer::RoleCap, reason)));
    assert!(names(&a).contains(&"read".to_string()) && names(&a).contains(&"bash".to_string()));
    assert!(names(&a).contains(&"mcp__github__list_issues".to_string()), "read-only MCP tools stay");
}

#[test]
fn layer_8_model_capability() {
    let mut r = Registry::new(builtins()).unwrap();
    let helper = ToolMeta { helper_for: Some(Capability::ImageInput), ..ToolMeta::READ_ONLY };
    r.builtin_with_meta(builtin("describe_image"), helper).unwrap();
    let mut f = facts();
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert!(names(&a).contains(&"describe_image".to_string()));

    f.model.image_input = true;
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert_eq!(removal(&a, "describe_image"), Some((Layer::ModelCapability, "model sees images itself".into())));

    f.model.supports_tools = false;
    let a = assemble(&r, &f, &DisclosureTools::new());
    assert!(a.tools.is_empty());
    assert_eq!(a.removed.len(), r.len());
    assert!(a.removed.iter().all(|r| r.layer == Layer::ModelCapability));
    assert_eq!(removal(&a, "read").unwrap().1, "model `test-model` does not support tools");
}

#[test]
fn the_first_layer_that_removes_a_tool_is_recorded() {
    let mut f = facts();
    f.config.excluded = vec!["grep".into(), "write".into()];
    f.platform.unavailable = BTreeMap::from([("grep".to_string(), "absent".to_string())]);
    f.agent.disallowed_tools = vec!["grep".into(), "mcp__slack__post".into()];
    f.config.mcp_deny = vec!["slack".into()];
    f.agent.kind = AgentKind::Subagent;
    f.agent.role = Some(SubagentRole::Explore);
    f.model.supports_tools = false;
    let a = run(&f);
    let layer = |n: &str| removal(&a, n).unwrap().0;
    assert_eq!(layer("grep"), Layer::Excluded);
    assert_eq!(layer("write"), Layer::Excluded);
    assert_eq!(layer("mcp__slack__post"), Layer::AgentSelector);
    assert_eq!(layer("task"), Layer::Delegation);
    assert_eq!(layer("todo_write"), Layer::ProfileCap);
    assert_eq!(layer("edit"), Layer::RoleCap);
    assert_eq!(layer("read"), Layer::ModelCapability);
    // Each tool is recorded once, in registry order.
    assert_eq!(a.removed.len(), registry().len());
    assert_eq!(a.removed[0].name, "read");
}

#[test]
fn removals_serialise_with_snake_case_layers() {
    let r = Removal {
        name: "mcp__slack__post".into(),
        source: ToolSource::ConfiguredMcp { server: "slack".into() },
        layer: Layer::McpServer,
        reason: "MCP server `slack` denied".into(),
    };
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"name": "mcp__slack__post", "source": {"kind": "configured_mcp", "server": "slack"}, "layer": "mcp_server", "reason": "MCP server `slack` denied"})
    );
    assert_eq!(Layer::ModelCapability.to_string(), "model_capability");
    assert_eq!(Layer::AgentSelector.to_string(), "agent_selector");
}
